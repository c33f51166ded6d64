// SPDX-License-Identifier: BSD-3-Clause
package tslock;

import java.util.ArrayList;
import java.util.List;

/** The servers tests/test_java.sh started, from system properties. */
final class Servers {
    private Servers() {}

    /** The private redis-server (7.x). */
    static String url() {
        return need("tslock.url");
    }

    /** Three independent masters, for a Redlock. */
    static String[] masters() {
        return need("tslock.masters").split(",");
    }

    static String socket() {
        return need("tslock.socket");
    }

    /** "7" for the real server, then the proxies' versions that run. */
    static List<String> versions() {
        List<String> v = new ArrayList<>();
        v.add("7");
        for (String old : new String[] {"2.0", "2.2", "2.6.0"})
            if (System.getProperty("tslock.url." + old) != null)
                v.add(old);
        return v;
    }

    static String url(String version) {
        return version.equals("7") ? url() : need("tslock.url." + version);
    }

    static String socket(String version) {
        return version.equals("7") ? socket()
                                   : need("tslock.socket." + version);
    }

    private static String need(String prop) {
        String v = System.getProperty(prop);
        if (v == null)
            throw new IllegalStateException(
                prop + " is not set: run the tests with tests/test_java.sh");
        return v;
    }
}

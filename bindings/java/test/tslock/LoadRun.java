// SPDX-License-Identifier: BSD-3-Clause
package tslock;

import java.nio.file.Files;
import java.nio.file.Path;

/**
 * make java-load: 100k acquire/release cycles through the binding (with
 * fencing and a watchdog on every tenth, so their global references are
 * exercised too), the process's resident set read from /proc at 10k and
 * at the end. A leak of a global reference or a native object shows as
 * growth; the numbers are printed for the record, and growth beyond
 * 8 MiB after the first 10k fails the run.
 */
public final class LoadRun {
    private LoadRun() {}

    static long rssKiB() throws Exception {
        for (String l : Files.readAllLines(Path.of("/proc/self/status")))
            if (l.startsWith("VmRSS:"))
                return Long.parseLong(l.replaceAll("[^0-9]", ""));
        return -1;
    }

    public static void main(String[] args) throws Exception {
        int cycles = args.length > 0 ? Integer.parseInt(args[0]) : 100_000;
        long warm = 0, t0 = System.nanoTime();
        StringBuilder trend = new StringBuilder();
        try (Client client = Client.fromUrl(Servers.url())) {
            TsLock plain = client.lock("load:plain");
            TsLock renewed = client.builder("load:renewed").fencing(true)
                                 .onLost((l, e) -> {}).build();
            for (int i = 1; i <= cycles; i++) {
                TsLock lock = i % 10 == 0 ? renewed : plain;
                lock.lock();
                lock.unlock();
                if (i % 10_000 == 0) {
                    System.gc();
                    long rss = rssKiB();
                    if (i == 10_000)
                        warm = rss;
                    trend.append(' ').append(rss);
                }
            }
        }
        System.gc();
        long end = rssKiB();
        System.out.printf("java-load: %d cycles in %.1f s; RSS %d KiB after "
                              + "10k, %d KiB after %d (%+d KiB)%n",
                          cycles, (System.nanoTime() - t0) / 1e9, warm, end,
                          cycles, end - warm);
        System.out.println("java-load: RSS KiB every 10k:" + trend);
        if (end - warm > 8 * 1024) {
            System.out.println("java-load: FAIL, the resident set grew");
            System.exit(1);
        }
    }
}

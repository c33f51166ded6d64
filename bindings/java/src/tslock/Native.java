// SPDX-License-Identifier: BSD-3-Clause
package tslock;

/**
 * The JNI calls into libtslock (libtslock-jni.so). Pointers are longs;
 * every call returns the library's code, which {@link LockException#of}
 * turns into an exception. None blocks while holding a Java monitor.
 */
final class Native {
    static {
        String path = System.getProperty("tslock.jni");
        if (path != null && !path.isEmpty())
            System.load(path);
        else
            loadFound();
    }

    /*
     * java.library.path first (Debian's package puts the library in the
     * JNI directory, which is on it); else where make install put it, as
     * the build recorded in jni.properties: relative to this jar (so a
     * DESTDIR or relocated install works too), then the absolute path.
     * A from-source install under /usr/local has lib/jni on no default
     * path, and needs neither -Dtslock.jni nor java.library.path.
     */
    private static void loadFound() {
        UnsatisfiedLinkError first;
        try {
            System.loadLibrary("tslock-jni");
            return;
        } catch (UnsatisfiedLinkError e) {
            first = e;
        }
        java.util.Properties recorded = new java.util.Properties();
        try (java.io.InputStream in =
                 Native.class.getResourceAsStream("jni.properties")) {
            if (in != null)
                recorded.load(in);
        } catch (java.io.IOException e) {
            // nothing recorded: only java.library.path was tried
        }
        java.util.List<String> tried = new java.util.ArrayList<>();
        String relative = recorded.getProperty("relative");
        if (relative != null) {
            try {
                java.nio.file.Path jar = java.nio.file.Paths.get(
                    Native.class.getProtectionDomain().getCodeSource()
                        .getLocation().toURI());
                java.nio.file.Path lib =
                    jar.getParent().resolve(relative).normalize();
                tried.add(lib.toString());
                if (java.nio.file.Files.isRegularFile(lib)) {
                    System.load(lib.toString());
                    return;
                }
            } catch (java.net.URISyntaxException | SecurityException
                     | NullPointerException e) {
                // no jar location to start from
            }
        }
        String absolute = recorded.getProperty("path");
        if (absolute != null) {
            tried.add(absolute);
            if (new java.io.File(absolute).isFile()) {
                System.load(absolute);
                return;
            }
        }
        UnsatisfiedLinkError e = new UnsatisfiedLinkError(
            "libtslock-jni.so: expected on java.library.path ("
            + System.getProperty("java.library.path")
            + ") or where make install put it ("
            + (tried.isEmpty() ? "not recorded" : String.join(", ", tried))
            + "); name it with -Dtslock.jni=/path/to/libtslock-jni.so");
        e.initCause(first);
        throw e;
    }

    private Native() {}

    static final int OK = 0;
    static final int EBUSY = -1;
    static final int ELOST = -2;
    static final int EINVAL = -3;
    static final int ENOMEM = -4;
    static final int EWRONGTYPE = -9;
    static final int EUNREADABLE = -10;
    static final int ECANCELED = -11;
    static final int EUNSUPPORTED = -13;
    static final int ESTATE = -14;
    static final int ENOQUORUM = -18;
    static final long WAIT_FOREVER = -1;

    /* A connection: one library client, or one per Redlock master. */
    static native long connNew(int n, int connectMs, int commandMs,
                               Client.Pool pool);
    /* Whether conn calls pool.event() (an observer is set). */
    static native void connObserve(long conn, boolean on);
    static native int connectUrl(long conn, int i, String url);
    static native void connFree(long conn);
    static native boolean connIsBroken(long conn);
    static native int connSetPubsub(long conn, int mode);
    static native int connGetPubsub(long conn);
    static native String connErrstr(long conn, int i);
    static native String errname(int code);
    /* Add what conn's clients counted into out (Stats.LEN longs). */
    static native int connStats(long conn, long[] out);
    static native String strerror(int code);

    static native long lockNew(long client, String key);
    static native int lockConfigure(long lock, int scheme, long ttlMs, int unit,
                                    boolean fair, boolean fencing, int rw,
                                    long permits);
    static native int lockSetDialect(long lock, String dialect);
    /** null when valid, else why not. */
    static native String dialectCheck(String dialect);
    /** Each preset as "name\tformat\tlibrary". */
    static native String[] dialects();
    static native void lockFree(long lock);
    static native String lockErrstr(long lock);
    static native int acquire(long lock, long waitMs);
    static native int release(long lock);
    static native int extend(long lock, long ttlMs);
    static native int cancel(long lock);
    static native boolean isHeld(long lock);
    static native long fence(long lock);
    static native String handle(long lock);
    static native int adopt(long lock, String handle);

    static native long watchdogStart(long lock, long renewClient,
                                     long intervalMs, WatchdogSink sink);
    static native int watchdogStop(long watchdog);
}

// SPDX-License-Identifier: BSD-3-Clause
package tslock;

/** One event of a {@link LockObserver}. */
public final class LockEvent {
    /** What happened. */
    public enum Type { ACQUIRE, RELEASE, LOST, TAKEOVER }

    public final Type type;
    /** The lock's key. */
    public final String key;
    /** The library's code of the call (0 OK, -1 EBUSY, ...). */
    public final int code;
    /** ACQUIRE: the wait; RELEASE, LOST: the hold; -1 if not known. */
    public final long durationMs;
    /** The scheme the lock used. */
    public final Scheme scheme;
    /** LOST: a legacy client took the key (bridge scheme). */
    public final boolean legacy;
    /** Told on a watchdog's thread. */
    public final boolean fromWatchdog;

    LockEvent(Type type, String key, int code, long durationMs, Scheme scheme,
              boolean legacy, boolean fromWatchdog) {
        this.type = type;
        this.key = key;
        this.code = code;
        this.durationMs = durationMs;
        this.scheme = scheme;
        this.legacy = legacy;
        this.fromWatchdog = fromWatchdog;
    }

    /** The code's name, as tslock_errname(3): "TSLOCK_OK", ... */
    public String result() {
        return Native.errname(code);
    }

    @Override
    public String toString() {
        return type + " " + key + " " + result() + " " + durationMs + " ms "
            + scheme + (legacy ? " legacy" : "")
            + (fromWatchdog ? " (watchdog)" : "");
    }
}

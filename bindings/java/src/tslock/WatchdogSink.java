// SPDX-License-Identifier: BSD-3-Clause
package tslock;

/** Where the native watchdog reports its failure (called from C). */
final class WatchdogSink {
    private final TsLock lock;
    private final LockLossListener listener;

    WatchdogSink(TsLock lock, LockLossListener listener) {
        this.lock = lock;
        this.listener = listener;
    }

    /* Called by the watchdog's thread; a listener's exception stays here. */
    void failed(int code, String detail) {
        if (listener == null)
            return;
        try {
            listener.lost(lock, LockException.of(code, detail));
        } catch (Throwable t) {
            Thread cur = Thread.currentThread();
            cur.getUncaughtExceptionHandler().uncaughtException(cur, t);
        }
    }
}

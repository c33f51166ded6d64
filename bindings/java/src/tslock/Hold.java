// SPDX-License-Identifier: BSD-3-Clause
package tslock;

import java.lang.ref.Cleaner;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * One hold of a {@link TsLock}: its native lock object, the connection it
 * was taken on, and the watchdog renewing it. {@code try (var h =
 * lock.hold(Duration.ofSeconds(2))) { ... }} releases at the end; so do
 * {@link TsLock#unlock()} by the holding thread and {@link #close()}.
 *
 * <p>A hold is used by one thread at a time (its holder, or the one it is
 * passed to). No method takes a monitor: the native calls may wait on the
 * network, and nothing else ever waits for them. A hold collected without
 * being released frees its native side through a {@link Cleaner}; the
 * key stays taken until its lease runs out.
 */
public final class Hold implements AutoCloseable {
    final TsLock lock;
    final boolean recorded; /* in the lock's table of holding threads */
    final Res res;
    private final Cleaner.Cleanable cleanable;
    private final AtomicBoolean ended = new AtomicBoolean();
    private final long fence;
    volatile Thread owner;
    int count = 1;

    /** The native side, freed by the Cleaner if the Hold is dropped. */
    static final class Res implements Runnable {
        final Client.Pool pool;
        final TsLock.Idle idle;
        volatile long conn, lock, watchdog, renewConn;
        volatile boolean reusable; /* the lock object may serve again */

        Res(TsLock.Idle idle, Client.Pool pool, long conn, long lock,
            boolean reusable) {
            this.idle = idle;
            this.pool = pool;
            this.conn = conn;
            this.lock = lock;
            this.reusable = reusable;
        }

        int stopWatchdog() {
            if (watchdog == 0)
                return Native.OK;
            int rc = Native.watchdogStop(watchdog);
            watchdog = 0;
            pool.give(renewConn);
            renewConn = 0;
            return rc;
        }

        @Override
        public void run() {
            if (lock == 0)
                return;
            stopWatchdog();
            /* A hold passed on or not released stays held: freed. */
            idle.offer(conn, lock, reusable);
            lock = 0;
            conn = 0;
        }
    }

    Hold(TsLock lock, long conn, long nativeLock, boolean recorded,
         boolean reusable) {
        this.lock = lock;
        this.res = new Res(lock.idle, lock.client.pool, conn, nativeLock,
                           reusable);
        this.owner = Thread.currentThread();
        this.recorded = recorded;
        this.fence = Native.fence(nativeLock);
        this.cleanable = Client.CLEANER.register(this, res);
    }

    /** The lock this is a hold of. */
    public TsLock lock() {
        return lock;
    }

    /**
     * The fencing number of this hold (a builder's {@code fencing(true)}):
     * it grows with every acquisition of the key, so a store that
     * remembers the highest it saw can refuse a late writer; 0 without.
     */
    public long fence() {
        return fence;
    }

    /**
     * Pass the hold on: returns the text {@link Client#adopt} takes in
     * another thread or process, and lets go of it here without releasing
     * it (no unlock, no watchdog any more; the lease runs on).
     */
    public String handle() {
        if (res.lock == 0 || !ended.compareAndSet(false, true))
            throw new IllegalStateException("the hold was released or "
                                            + "passed on");
        int wd = res.stopWatchdog();
        String h = Native.handle(res.lock);
        lock.forget(this);
        cleanable.clean();
        if (h == null)
            throw LockException.of(wd != Native.OK ? wd : Native.ELOST,
                                   "the hold was lost before it was passed on");
        return h;
    }

    /** Extend the lease to this long from now (not while renewed). */
    public void extend(Duration lease) {
        if (res.lock == 0 || ended.get())
            throw new IllegalStateException("the hold was released or "
                                            + "passed on");
        if (res.watchdog != 0)
            throw new IllegalStateException(
                "extend: the watchdog renews this hold already");
        int rc = Native.extend(res.lock, lease.toMillis());
        if (rc != Native.OK)
            throw LockException.of(rc, Native.lockErrstr(res.lock));
    }

    /** Whether this hold is ours as far as its own operations know. */
    public boolean isHeld() {
        return !ended.get() && res.lock != 0
            && (res.watchdog != 0 || Native.isHeld(res.lock));
    }

    /** Release (all reentrant counts); LockLostException if it was lost. */
    @Override
    public void close() {
        if (ended.get())
            return;
        count = 1;
        lock.let(this);
    }

    void startWatchdog(long intervalMs, LockLossListener listener) {
        res.renewConn = res.pool.take();
        long w = Native.watchdogStart(res.lock, res.renewConn, intervalMs,
                                      new WatchdogSink(lock, listener));
        if (w < 0) {
            res.pool.give(res.renewConn);
            res.renewConn = 0;
            throw LockException.of((int) w, "the watchdog did not start");
        }
        res.watchdog = w;
    }

    /**
     * Release on the server and free the native side: OK, or the code of
     * the first thing that failed with its detail in *detail[0].
     */
    int release(String[] detail) {
        if (res.lock == 0 || !ended.compareAndSet(false, true))
            return Native.ESTATE;
        int wd = res.stopWatchdog();
        int rc = Native.isHeld(res.lock) ? Native.release(res.lock)
                                         : Native.ELOST;
        if (rc != Native.OK)
            detail[0] = Native.lockErrstr(res.lock);
        if (wd != Native.OK) {
            rc = wd;
            detail[0] = "the watchdog found the hold lost";
        }
        cleanable.clean();
        return rc;
    }

    /** Free the native side without a release (a failed start). */
    void discard() {
        ended.set(true);
        cleanable.clean();
    }
}

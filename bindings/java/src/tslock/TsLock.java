// SPDX-License-Identifier: BSD-3-Clause
package tslock;

import java.time.Duration;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.Lock;

/**
 * A lock over Redis that is a {@link java.util.concurrent.locks.Lock}.
 *
 * <p>Held by a thread, as a {@code ReentrantLock} is: {@link #unlock()}
 * by a thread that does not hold it throws
 * {@link IllegalMonitorStateException}, and the holder may lock again
 * (counted here, one hold on the server). To move a hold to another
 * thread or process use {@link Hold#handle()} and {@link Client#adopt}.
 *
 * <p>{@link #lockInterruptibly()} and {@link #tryLock(long, TimeUnit)}
 * return at once with {@link InterruptedException} when the waiting thread
 * is interrupted (the native wait is cancelled), holding nothing.
 *
 * <p>Failures are {@link LockException}s (unchecked); an unlock whose hold
 * was lost (the lease ran out, or a legacy client took the key) throws
 * {@link LockLostException} after letting go of it.
 */
public class TsLock implements Lock {
    final Client client;
    final String name;
    final Settings s;
    private final ConcurrentHashMap<Thread, Hold> holds =
        new ConcurrentHashMap<>();
    final Idle idle;

    /**
     * Configured native lock objects with their connections, kept between
     * holds so a cycle costs the two commands and no setup: at most 8 per
     * TsLock and 16 per Client (so TsLocks made per call and dropped keep
     * few connections from the pool until they are collected); freed by
     * the Cleaner when the TsLock goes, or on the next use after the
     * Client closed.
     */
    static final class Idle implements Runnable {
        static final int PER_LOCK = 8, PER_CLIENT = 16;
        private final Client.Pool pool;
        private final java.util.concurrent.ConcurrentLinkedDeque<long[]> pairs =
            new java.util.concurrent.ConcurrentLinkedDeque<>();
        private final java.util.concurrent.atomic.AtomicInteger size =
            new java.util.concurrent.atomic.AtomicInteger();
        private volatile boolean closed;

        Idle(Client.Pool pool) {
            this.pool = pool;
        }

        /* A kept pair, counted out of both limits; null when none. */
        private long[] next() {
            long[] p = pairs.pollFirst();
            if (p != null) {
                size.decrementAndGet();
                pool.cachedPairs.decrementAndGet();
            }
            return p;
        }

        long[] poll() {
            long[] p = next();
            if (p != null && pool.isClosed()) {
                free(p);
                return null;
            }
            return p;
        }

        /* Keep (conn, lock) for the next hold, or free the lock object. */
        void offer(long conn, long lock, boolean reusable) {
            long[] p = {conn, lock};
            boolean keep = reusable && !closed && !pool.isClosed()
                           && !Native.isHeld(lock)
                           && !Native.connIsBroken(conn);
            if (keep && size.incrementAndGet() > PER_LOCK) {
                size.decrementAndGet();
                keep = false;
            } else if (keep
                       && pool.cachedPairs.incrementAndGet() > PER_CLIENT) {
                pool.cachedPairs.decrementAndGet();
                size.decrementAndGet();
                keep = false;
            }
            if (!keep) {
                free(p);
                return;
            }
            pairs.addFirst(p);
            if (closed)
                run();
        }

        /* The lock object freed, its connection back to the pool. */
        private void free(long[] p) {
            Native.lockFree(p[1]);
            pool.give(p[0]);
        }

        @Override
        public void run() {
            closed = true;
            long[] p;
            while ((p = next()) != null)
                free(p);
        }
    }

    /** What a lock is made with; the builder's fields. */
    static final class Settings {
        Scheme scheme = Scheme.AUTO;
        long leaseMs = Client.DEFAULT_LEASE.toMillis();
        StampUnit unit = StampUnit.MS;
        String dialect; /* a preset or format; null: the plain unit */
        boolean fair, fencing, watchdog;
        long renewMs; /* 0: a third of the lease */
        int rw;       /* tslock_rw */
        long permits; /* > 0: a semaphore */
        LockLossListener listener;
    }

    /** Choose the scheme, lease, unit, fair mode, fencing and renewal. */
    public static final class Builder {
        private final Client client;
        private final String name;
        private final Settings s = new Settings();

        Builder(Client client, String name) {
            if (name == null || name.isEmpty())
                throw new IllegalArgumentException(
                    "name: expected a non-empty key, got "
                    + (name == null ? "null" : "\"\""));
            this.client = client;
            this.name = name;
        }

        public Builder scheme(Scheme scheme) {
            s.scheme = java.util.Objects.requireNonNull(scheme, "scheme");
            return this;
        }

        /** The lease each hold gets (and each renewal restores). */
        public Builder lease(Duration lease) {
            long ms = lease.toMillis();
            if (ms < 1)
                throw new IllegalArgumentException(
                    "lease: expected at least 1 ms, got " + lease);
            s.leaseMs = ms;
            return this;
        }

        public Builder unit(StampUnit unit) {
            s.unit = java.util.Objects.requireNonNull(unit, "unit");
            return this;
        }

        /**
         * Stamps as a legacy lock library writes them: a preset of
         * {@link Client#dialects()} or a format such as "{s+1}:{pid}"
         * (tslock-dialects(7)); it takes the place of the unit.
         *
         * @throws IllegalArgumentException when it is neither, saying why
         */
        public Builder dialect(String dialect) {
            java.util.Objects.requireNonNull(dialect, "dialect");
            String why = Native.dialectCheck(dialect);
            if (why != null)
                throw new IllegalArgumentException("dialect: " + why);
            s.dialect = dialect;
            return this;
        }

        /** Waiters take the lock in the order they asked (token scheme). */
        public Builder fair(boolean fair) {
            s.fair = fair;
            return this;
        }

        /** Each hold gets a fencing number, {@link TsLock#fence()}. */
        public Builder fencing(boolean fencing) {
            s.fencing = fencing;
            return this;
        }

        /** Renew the lease from the library's watchdog while held. */
        public Builder watchdog(boolean renew) {
            s.watchdog = renew;
            return this;
        }

        /** Renew this often (default a third of the lease). */
        public Builder renewEvery(Duration interval) {
            s.watchdog = true;
            s.renewMs = interval.toMillis();
            return this;
        }

        /** Told when the watchdog finds a hold lost (turns renewal on). */
        public Builder onLost(LockLossListener listener) {
            s.watchdog = true;
            s.listener = listener;
            return this;
        }

        public TsLock build() {
            if (client.isRedlock()
                && (s.fair || s.fencing || s.watchdog || s.rw != 0
                    || s.permits != 0
                    || (s.scheme != Scheme.AUTO && s.scheme != Scheme.TOKEN)))
                throw LockException.of(
                    Native.EUNSUPPORTED,
                    "a Redlock takes the token scheme alone: no fair mode, "
                    + "fencing, watchdog, read-write lock or semaphore, got "
                    + describe());
            return new TsLock(client, name, s);
        }

        private String describe() {
            return "scheme " + s.scheme + (s.fair ? ", fair" : "")
                + (s.fencing ? ", fencing" : "")
                + (s.watchdog ? ", watchdog" : "")
                + (s.rw != 0 ? ", read-write" : "")
                + (s.permits != 0 ? ", semaphore" : "");
        }
    }

    TsLock(Client client, String name, Settings s) {
        this.client = client;
        this.name = name;
        this.s = s;
        this.idle = new Idle(client.pool);
        Client.CLEANER.register(this, idle);
    }

    /** The key. */
    public String name() {
        return name;
    }

    /** Wait as long as it takes; an interrupt is not noticed. */
    @Override
    public void lock() {
        try {
            take(Native.WAIT_FOREVER, false, true);
        } catch (InterruptedException e) {
            throw new AssertionError(e); /* an uninterruptible wait */
        }
    }

    @Override
    public void lockInterruptibly() throws InterruptedException {
        take(Native.WAIT_FOREVER, true, true);
    }

    /** One try, no wait. */
    @Override
    public boolean tryLock() {
        try {
            return take(0, false, true) != null;
        } catch (InterruptedException e) {
            throw new AssertionError(e);
        }
    }

    @Override
    public boolean tryLock(long time, TimeUnit unit)
        throws InterruptedException {
        return take(Math.max(0, unit.toMillis(time)), true, true) != null;
    }

    /**
     * Release a hold of the calling thread (the last of its counts asks
     * the server). IllegalMonitorStateException when it holds none;
     * LockLostException when the hold was lost meanwhile.
     */
    @Override
    public void unlock() {
        Hold h = holds.get(Thread.currentThread());
        if (h == null)
            throw new IllegalMonitorStateException(
                "tslock: unlock of '" + name + "' by thread '"
                + Thread.currentThread().getName()
                + "', which does not hold it");
        let(h);
    }

    /**
     * Not supported: a condition would need the holder to give up and
     * retake the Redis key atomically with a wait, which Redis does not
     * offer. Throws {@link UnsupportedOperationException}.
     */
    @Override
    public Condition newCondition() {
        throw new UnsupportedOperationException(
            "tslock.TsLock has no conditions: Redis offers no atomic "
            + "release-and-wait");
    }

    /**
     * Wait up to {@code wait} for the lock and return the hold, to use in
     * try-with-resources; LockException with code TSLOCK_EBUSY when the
     * wait ran out.
     */
    public Hold hold(Duration wait) throws InterruptedException {
        Hold h = take(Math.max(0, wait.toMillis()), true, true);
        if (h == null)
            throw LockException.of(Native.EBUSY, "'" + name + "' not taken "
                                                 + "within " + wait);
        return h;
    }

    /** Whether the calling thread holds this lock. */
    public boolean isHeldByCurrentThread() {
        return holds.containsKey(Thread.currentThread());
    }

    /** The calling thread's hold, or IllegalMonitorStateException. */
    public Hold currentHold() {
        Hold h = holds.get(Thread.currentThread());
        if (h == null)
            throw new IllegalMonitorStateException(
                "tslock: '" + name + "' is not held by this thread");
        return h;
    }

    /** The fencing number of the calling thread's hold. */
    public long fence() {
        return currentHold().fence();
    }

    /* ------------------------------------------------------- the work */

    /**
     * Take the lock: the new hold, the calling thread's own (counted once
     * more) when recorded and it holds already, or null when the wait ran
     * out.
     */
    Hold take(long waitMs, boolean interruptible, boolean record)
        throws InterruptedException {
        Thread me = Thread.currentThread();
        if (record) {
            Hold mine = holds.get(me);
            if (mine != null) {
                mine.count++;
                return mine;
            }
        }
        if (interruptible && Thread.interrupted())
            throw new InterruptedException();
        long[] pair = idle.poll();
        long conn, l;
        int rc = Native.OK;
        if (pair != null) {
            conn = pair[0];
            l = pair[1];
        } else {
            conn = client.pool.take();
            l = Native.lockNew(conn, name);
            if (l == 0) {
                client.pool.give(conn);
                throw new OutOfMemoryError("tslock: no memory for a lock");
            }
            rc = Native.lockConfigure(l, s.scheme.code, s.leaseMs, s.unit.code,
                                      s.fair, s.fencing, s.rw, s.permits);
            if (rc == Native.OK && s.dialect != null)
                rc = Native.lockSetDialect(l, s.dialect);
        }
        Hold h = null;
        boolean reusable = rc == Native.OK;
        try {
            /*
             * One try first: a free key is taken without the wait's
             * subscription; fair waiters go straight to the line.
             */
            boolean wait = rc == Native.OK;
            if (wait && (waitMs == 0 || !s.fair)) {
                rc = Native.acquire(l, 0);
                wait = rc == Native.EBUSY && waitMs != 0;
            }
            if (wait && interruptible) {
                Waiter w = new Waiter(l);
                rc = w.await(waitMs);
                reusable = rc == Native.ECANCELED || !w.cancelled;
            } else if (wait) {
                rc = Native.acquire(l, waitMs);
            }
            if (rc == Native.ECANCELED && interruptible) {
                Thread.interrupted();
                throw new InterruptedException(
                    "tslock: the wait for '" + name + "' was interrupted");
            }
            if ((rc == Native.EBUSY || rc == Native.EUNREADABLE)
                && waitMs != Native.WAIT_FOREVER)
                return null;
            if (rc != Native.OK)
                throw LockException.of(rc, Native.lockErrstr(l));
            h = new Hold(this, conn, l, record, reusable);
            if (s.watchdog)
                h.startWatchdog(s.renewMs, s.listener);
        } catch (RuntimeException | Error e) {
            if (h != null) {
                h.release(new String[1]);
            }
            throw e;
        } finally {
            if (h == null)
                idle.offer(conn, l, reusable);
        }
        if (record)
            holds.put(me, h);
        return h;
    }

    /** Take what handle describes as the calling thread's hold. */
    Hold adopt(String handle) {
        long conn = client.pool.take();
        long l = Native.lockNew(conn, name);
        if (l == 0) {
            client.pool.give(conn);
            throw new OutOfMemoryError("tslock: no memory for a lock");
        }
        int rc = Native.lockConfigure(l, Scheme.AUTO.code, s.leaseMs,
                                      s.unit.code, false, false, s.rw,
                                      s.permits);
        if (rc == Native.OK && s.dialect != null)
            rc = Native.lockSetDialect(l, s.dialect);
        if (rc == Native.OK)
            rc = Native.adopt(l, handle);
        if (rc != Native.OK) {
            LockException e = LockException.of(rc, Native.lockErrstr(l));
            Native.lockFree(l);
            client.pool.give(conn);
            throw e;
        }
        Hold h = new Hold(this, conn, l, true, false);
        Hold old = holds.putIfAbsent(Thread.currentThread(), h);
        if (old != null) {
            h.discard();
            throw new IllegalStateException(
                "adopt: this thread holds '" + name + "' already");
        }
        return h;
    }

    /** One count of h let go; the last releases it on the server. */
    void let(Hold h) {
        if (--h.count > 0)
            return;
        forget(h);
        String[] detail = new String[1];
        int rc = h.release(detail);
        if (rc != Native.OK && rc != Native.ESTATE)
            throw LockException.of(rc, detail[0]);
    }

    /** h is no longer a hold of its thread here. */
    void forget(Hold h) {
        if (h.recorded)
            holds.remove(h.owner, h);
    }
}

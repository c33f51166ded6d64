// SPDX-License-Identifier: BSD-3-Clause
package tslock;

import java.lang.ref.Cleaner;
import java.time.Duration;
import java.util.concurrent.ConcurrentLinkedDeque;

/**
 * Where locks live: a Redis server named by a URL, as the tslock command
 * reads them (libtslock's own parser, tslock_url_parse(3)):
 * {@code redis://[[user]:password@]host[:port][/db]},
 * {@code unix://[[user]:password@]/path/to/socket[?db=N]},
 * {@code redis+sentinel://[[user]:password@]host[:port][,host[:port]...]/MASTER[/db][?sentinel_password=P]}.
 *
 * <p>Thread-safe: a library client serves one thread at a time, so a
 * Client keeps a pool of them, and every hold and every waiting thread
 * has a connection of its own while it needs one. Close it when done;
 * one collected without {@link #close()} frees its connections through
 * a {@link Cleaner}.
 */
public final class Client implements AutoCloseable {
    static final Cleaner CLEANER = Cleaner.create();
    static final Duration DEFAULT_LEASE = Duration.ofSeconds(30);

    final Pool pool;
    private final Cleaner.Cleanable cleanable;

    private Client(String[] urls, int timeoutMs) {
        pool = new Pool(urls, timeoutMs);
        pool.give(pool.take()); /* connect now: a bad URL fails here */
        cleanable = CLEANER.register(this, pool);
    }

    /**
     * A client for url (5 s connect and command timeouts): redis://,
     * unix://, redis+sentinel://, or rediss:// and rediss+sentinel://
     * for TLS, with redis-py's query parameters (ssl_ca_certs,
     * ssl_certfile, ssl_keyfile, ssl_password, ssl_cert_reqs=none|
     * optional|required, ssl_check_hostname, ssl_server_hostname); a
     * failed TLS check throws LockException with errname TSLOCK_ETLS.
     */
    public static Client fromUrl(String url) {
        return fromUrl(Duration.ofSeconds(5), url);
    }

    /**
     * A Redlock over independent masters, one URL each (an odd number, 3
     * to 63; tslock_redlock_new(3)): a lock is held while a majority
     * holds it. Its locks take the token scheme alone (no fair mode,
     * fencing, watchdog, read-write or semaphore: UnsupportedException).
     * One URL gives a plain client.
     */
    public static Client fromUrl(String... urls) {
        return fromUrl(Duration.ofSeconds(5), urls);
    }

    /** As {@link #fromUrl(String...)}, with these connect and command
     *  timeouts. */
    public static Client fromUrl(Duration timeout, String... urls) {
        if (urls == null || urls.length == 0)
            throw new IllegalArgumentException("fromUrl: expected a URL");
        for (String u : urls)
            if (u == null)
                throw new NullPointerException("url");
        if (urls.length > 1 && (urls.length % 2 == 0 || urls.length > 63))
            throw new IllegalArgumentException(
                "fromUrl: a Redlock takes an odd number of masters, 3 to 63, "
                + "got " + urls.length + " URLs");
        long ms = timeout.toMillis();
        if (ms < 0 || ms > Integer.MAX_VALUE)
            throw new IllegalArgumentException(
                "timeout: expected 0 .. " + Integer.MAX_VALUE + " ms, got "
                + ms);
        return new Client(urls.clone(), (int) ms);
    }

    /** Whether this client's locks are Redlocks (several URLs). */
    /**
     * The legacy stamp dialects the library knows: preset name to format
     * string, in the library's order (TsLock.Builder#dialect).
     */
    public static java.util.Map<String, String> dialects() {
        java.util.Map<String, String> m = new java.util.LinkedHashMap<>();
        for (String row : Native.dialects()) {
            String[] f = row.split("\t", 3);
            m.put(f[0], f[1]);
        }
        return java.util.Collections.unmodifiableMap(m);
    }

    public boolean isRedlock() {
        return pool.urls.length > 1;
    }

    /** A lock on name: scheme AUTO, a 30 s lease, stamps in ms. */
    public TsLock lock(String name) {
        return builder(name).build();
    }

    /** A lock on name with this scheme and lease. */
    public TsLock lock(String name, Scheme scheme, Duration lease) {
        return builder(name).scheme(scheme).lease(lease).build();
    }

    /** A lock on name with this scheme, lease and stamp unit. */
    public TsLock lock(String name, Scheme scheme, Duration lease,
                       StampUnit unit) {
        return builder(name).scheme(scheme).lease(lease).unit(unit).build();
    }

    /** A builder for a lock on name: fair, fencing, watchdog, listener. */
    public TsLock.Builder builder(String name) {
        return new TsLock.Builder(this, name);
    }

    /** The read-write lock name (token scheme, Redis 2.2 and later). */
    public TsReadWriteLock readWriteLock(String name) {
        return new TsReadWriteLock(this, name, DEFAULT_LEASE);
    }

    /** A counting semaphore of permits holders on name (Redis 2.2+). */
    public TsSemaphore semaphore(String name, long permits) {
        return new TsSemaphore(this, name, permits, DEFAULT_LEASE);
    }

    /**
     * Take over a hold another thread or process passed on with
     * {@link Hold#handle()}: the calling thread holds name from now on,
     * with a 30 s lease for extensions. Nothing is sent; a hold that is
     * gone shows at unlock as a {@link LockLostException}.
     */
    public Hold adopt(String handle, String name) {
        return lock(name).adopt(handle);
    }

    /**
     * What this client's connections have counted (tslock_client_stats(3)),
     * summed: those in use, idle, and already closed. No round trip.
     */
    public Stats stats() {
        return pool.stats();
    }

    /**
     * Call observer on every acquire, release, loss and takeover of this
     * client's locks; null to stop. Holds are timed in Java whether or
     * not one is set. See {@link LockObserver} for its threads.
     */
    public void setObserver(LockObserver observer) {
        pool.setObserver(observer);
    }

    /**
     * How this client's waiters are woken (tslock_client_set_pubsub(3)):
     * {@link Pubsub#AUTO} (the default), {@link Pubsub#CLASSIC} or
     * {@link Pubsub#SHARDED}. Every connection takes it when a thread
     * next takes it from the pool (one a thread holds now, at its next
     * lock call); no round trip.
     */
    public void setPubsub(Pubsub mode) {
        if (mode == null)
            throw new NullPointerException("mode");
        pool.setPubsub(mode);
    }

    /**
     * The pub/sub waiters use now (tslock_client_get_pubsub(3)):
     * {@link Pubsub#SHARDED} or {@link Pubsub#CLASSIC}, as the mode, the
     * server (sharded needs Redis 7.0) and any refusal of SSUBSCRIBE
     * decide; asked of a pooled connection (of the first master, for a
     * Redlock).
     */
    public Pubsub getPubsub() {
        long c = pool.take();
        try {
            return Native.connGetPubsub(c) == Pubsub.SHARDED.code
                       ? Pubsub.SHARDED
                       : Pubsub.CLASSIC;
        } finally {
            pool.give(c);
        }
    }

    /** Free the idle connections; those in use are freed when let go. */
    @Override
    public void close() {
        cleanable.clean();
    }

    /** The library clients of one Client; the Cleaner's action. */
    static final class Pool implements Runnable {
        final String[] urls;
        private final int timeoutMs;
        private final ConcurrentLinkedDeque<Long> idle =
            new ConcurrentLinkedDeque<>();
        private volatile boolean closed;
        /*
         * Every open connection, and what closed ones counted: stats()
         * reads a connection in use by another thread (the library's
         * counters are atomic), never one being freed (statsLock).
         */
        private final java.util.Set<Long> live =
            java.util.concurrent.ConcurrentHashMap.newKeySet();
        private final long[] retired = new long[Stats.LEN];
        private final Object statsLock = new Object();
        /* Lock objects kept by TsLocks with a connection each. */
        final java.util.concurrent.atomic.AtomicInteger cachedPairs =
            new java.util.concurrent.atomic.AtomicInteger();

        Pool(String[] urls, int timeoutMs) {
            this.urls = urls;
            this.timeoutMs = timeoutMs;
        }

        /** A connected library client for this thread's use alone. */
        long take() {
            if (closed)
                throw new IllegalStateException("tslock.Client is closed");
            Long c = idle.pollFirst();
            long conn = c != null ? c : connect();
            /* Only once a mode was set: nothing more on the default path. */
            if (pubsubSet)
                Native.connSetPubsub(conn, pubsub.code);
            return conn;
        }

        private volatile Pubsub pubsub = Pubsub.AUTO;
        private volatile boolean pubsubSet;

        void setPubsub(Pubsub mode) {
            pubsub = mode;
            pubsubSet = true;
        }

        /*
         * A connection: one client, or one per master of a Redlock, of
         * which a majority must connect (the rest reconnect later).
         */
        private long connect() {
            int n = urls.length, ok = 0;
            long c = Native.connNew(n, timeoutMs, timeoutMs, this);
            if (c == 0)
                throw new OutOfMemoryError("tslock: no memory for a client");
            LockException first = null;
            for (int i = 0; i < n; i++) {
                int rc = Native.connectUrl(c, i, urls[i]);
                if (rc == Native.OK) {
                    ok++;
                    continue;
                }
                LockException e = LockException.of(
                    rc, (n > 1 ? "master " + (i + 1) + " of " + n + ": " : "")
                            + Native.connErrstr(c, i));
                if (rc == Native.EINVAL || rc == Native.ENOMEM || n == 1) {
                    Native.connFree(c);
                    throw e;
                }
                if (first == null)
                    first = e;
            }
            if (ok <= n / 2) {
                Native.connFree(c);
                throw LockException.of(Native.ENOQUORUM,
                                       ok + " of " + n + " masters reached; "
                                       + first.getMessage());
            }
            synchronized (statsLock) {
                live.add(c);
                Native.connObserve(c, observer != null);
            }
            return c;
        }

        private volatile LockObserver observer;

        void setObserver(LockObserver o) {
            synchronized (statsLock) {
                observer = o;
                for (long c : live)
                    Native.connObserve(c, o != null);
            }
        }

        /* From the JNI observer of a connection (tslock_jni.c). */
        void event(int type, String key, int code, long ms, int scheme,
                   boolean legacy, boolean fromWatchdog) {
            LockObserver o = observer;
            if (o == null || type < 1 || type > 4)
                return;
            try {
                o.onEvent(new LockEvent(
                    LockEvent.Type.values()[type - 1], key, code, ms,
                    Scheme.values()[scheme & 3], legacy, fromWatchdog));
            } catch (RuntimeException e) {
                /* an observer's failure is not the lock call's */
            }
        }

        /* Free a connection this pool opened, keeping what it counted. */
        private void free(long c) {
            synchronized (statsLock) {
                if (live.remove(c))
                    Native.connStats(c, retired);
                Native.connFree(c);
            }
        }

        Stats stats() {
            synchronized (statsLock) {
                long[] v = retired.clone();
                for (long c : live)
                    Native.connStats(c, v);
                return new Stats(v);
            }
        }

        /** Back to the pool; a broken one (or after close) is freed. */
        void give(long c) {
            if (c == 0)
                return;
            if (closed || Native.connIsBroken(c)) {
                free(c);
                return;
            }
            idle.addFirst(c);
            if (closed)
                drain();
        }

        boolean isClosed() {
            return closed;
        }

        private void drain() {
            Long c;
            while ((c = idle.pollFirst()) != null)
                free(c);
        }

        @Override
        public void run() {
            closed = true;
            drain();
        }
    }
}

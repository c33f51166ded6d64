// SPDX-License-Identifier: BSD-3-Clause
package tslock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.Lock;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;

/** The binding on the private redis-server: Lock, ownership, the rest. */
class BindingTest {
    static Client client;
    static Resp raw;

    @BeforeAll
    static void open() {
        client = Client.fromUrl(Servers.url());
        raw = new Resp(Servers.socket());
    }

    @AfterAll
    static void close() {
        client.close();
        raw.close();
    }

    static String key(TestInfo t) {
        return "jt:" + t.getDisplayName() + ":" + System.nanoTime();
    }

    /** Run body in a new thread and wait for it; its failure is ours. */
    static <T> T inThread(java.util.concurrent.Callable<T> body)
        throws Exception {
        ExecutorService ex = Executors.newSingleThreadExecutor();
        try {
            return ex.submit(body).get(30, TimeUnit.SECONDS);
        } finally {
            ex.shutdownNow();
        }
    }

    @Test
    void lockAndUnlock(TestInfo t) throws Exception {
        TsLock lock = client.lock(key(t));
        lock.lock();
        assertTrue(lock.isHeldByCurrentThread());
        assertNotNull(raw.get(lock.name()));
        assertFalse(inThread(() -> client.lock(lock.name()).tryLock()));
        lock.unlock();
        assertNull(raw.get(lock.name()));
        assertTrue(inThread(() -> {
            TsLock other = client.lock(lock.name());
            boolean got = other.tryLock(1, TimeUnit.SECONDS);
            other.unlock();
            return got;
        }));
    }

    /* A dialect: the value is the library's, a crashed holder is taken over. */
    @Test
    void dialectWritesAndTakesOver(TestInfo t) throws Exception {
        assertEquals("{s+1}:{pid}", Client.dialects().get("predislock"));
        assertThrows(IllegalArgumentException.class,
                     () -> client.builder("k").dialect("{x}"));
        String k = key(t);
        long past = System.currentTimeMillis() / 1000 - 3;
        raw.call("SET", k, past + ":4242"); /* PredisLock's, crashed */
        assertFalse(inThread(() -> client.builder(k).scheme(Scheme.TIMESTAMP)
                                       .build().tryLock()));
        TsLock lock = client.builder(k).scheme(Scheme.TIMESTAMP)
                          .dialect("predislock").build();
        assertTrue(lock.tryLock());
        assertTrue(raw.get(k).matches("\\d{10}:" + ProcessHandle.current().pid()),
                   raw.get(k));
        lock.unlock();
        assertNull(raw.get(k));
    }

    /* Client.stats(): what the library counted, summed over the pool. */
    @Test
    void statsCountWhatWasDone(TestInfo t) throws Exception {
        try (Client c = Client.fromUrl(Servers.url())) {
            String k = key(t), stamp = key(t) + ":stamp";
            Duration lease = Duration.ofSeconds(5);
            TsLock lock = c.lock(k, Scheme.TOKEN, lease);
            lock.lock();
            assertFalse(inThread(() -> c.lock(k, Scheme.TOKEN, lease)
                                           .tryLock()));
            raw.del(k); /* the lease is lost */
            assertThrows(LockLostException.class, lock::unlock);
            raw.setnx(stamp, "1600000000000"); /* expired in 2020 */
            TsLock old = c.lock(stamp, Scheme.TIMESTAMP, lease);
            assertTrue(old.tryLock());
            old.unlock();
            Stats s = c.stats();
            assertEquals(2, s.acquired);
            assertEquals(1, s.busy);
            assertEquals(0, s.timedOut + s.canceled + s.errors);
            assertEquals(1, s.byToken);
            assertEquals(1, s.byTimestamp);
            assertEquals(0, s.byBridge);
            assertEquals(1, s.released);
            assertEquals(1, s.lost);
            assertEquals(1, s.takeovers);
            assertEquals(0, s.legacyTakeovers + s.renewals + s.wakes
                                + s.retries);
            assertEquals(2, s.waitCount);
            assertEquals(2, s.waitBuckets[0]); /* no wait: le 0.001 */
            assertEquals(2, s.waitBuckets[Stats.BUCKETS - 1]);
            assertEquals(0, s.waitSumMs);
            assertEquals(2, s.holdCount); /* holds are timed in Java */
            assertEquals(Double.POSITIVE_INFINITY,
                         Stats.BUCKET_LE_SECONDS[Stats.BUCKETS - 1]);
        }
    }

    /* The observer: events on the caller's thread and a watchdog's. */
    @Test
    void observerIsToldOfEveryEvent(TestInfo t) throws Exception {
        try (Client c = Client.fromUrl(Servers.url())) {
            String k = key(t);
            List<String> seen =
                java.util.Collections.synchronizedList(new ArrayList<>());
            CountDownLatch lost = new CountDownLatch(1);
            c.setObserver(e -> {
                seen.add(e.type + " " + e.key + " " + e.result() + " "
                         + e.scheme + " " + e.fromWatchdog);
                if (e.type == LockEvent.Type.LOST)
                    lost.countDown();
            });
            TsLock lock = c.lock(k, Scheme.TOKEN, Duration.ofSeconds(5));
            lock.lock();
            lock.unlock();
            TsLock dog = c.builder(k).scheme(Scheme.TOKEN)
                             .lease(Duration.ofMillis(600))
                             .renewEvery(Duration.ofMillis(20))
                             .onLost((l, why) -> {})
                             .build();
            dog.lock();
            raw.call("SET", k, "someone-else");
            assertTrue(lost.await(5, TimeUnit.SECONDS), "the loss was told");
            assertThrows(LockLostException.class, dog::unlock);
            raw.del(k);
            assertEquals(List.of("ACQUIRE " + k + " TSLOCK_OK TOKEN false",
                                 "RELEASE " + k + " TSLOCK_OK TOKEN false",
                                 "ACQUIRE " + k + " TSLOCK_OK TOKEN false",
                                 "LOST " + k + " TSLOCK_ELOST TOKEN true"),
                         seen);
            Stats s = c.stats();
            assertEquals(1, s.lost);
            assertEquals(2, s.holdCount); /* timed: one clock read each */
        }
    }

    @Test
    void unlockByAnotherThreadIsIllegalMonitorState(TestInfo t)
        throws Exception {
        TsLock lock = client.lock(key(t));
        assertThrows(IllegalMonitorStateException.class, lock::unlock);
        lock.lock();
        Throwable e = inThread(() -> {
            try {
                lock.unlock();
                return null;
            } catch (IllegalMonitorStateException x) {
                return x;
            }
        });
        assertNotNull(e, "unlock by a thread that does not hold it");
        assertTrue(lock.isHeldByCurrentThread());
        assertNotNull(raw.get(lock.name()), "still held on the server");
        lock.unlock();
    }

    @Test
    void reentrantCountsOneServerHold(TestInfo t) {
        TsLock lock = client.lock(key(t));
        lock.lock();
        assertTrue(lock.tryLock());
        lock.unlock();
        assertNotNull(raw.get(lock.name()));
        lock.unlock();
        assertNull(raw.get(lock.name()));
        assertThrows(IllegalMonitorStateException.class, lock::unlock);
    }

    @Test
    void newConditionIsUnsupported(TestInfo t) {
        assertThrows(UnsupportedOperationException.class,
                     () -> client.lock(key(t)).newCondition());
    }

    @Test
    void schemesAndUnits(TestInfo t) {
        String k = key(t);
        Lock ts = client.lock(k, Scheme.TIMESTAMP, Duration.ofSeconds(5),
                              StampUnit.S);
        ts.lock();
        String v = raw.get(k);
        long now = System.currentTimeMillis() / 1000;
        long stamp = Long.parseLong(v);
        assertTrue(stamp >= now + 5 && stamp <= now + 7, v);
        ts.unlock();
        Lock tok = client.lock(k, Scheme.TOKEN, Duration.ofSeconds(5));
        tok.lock();
        assertTrue(raw.get(k).matches("[0-9a-f]{32}"), raw.get(k));
        Long pttl = (Long) raw.call("PTTL", k);
        assertTrue(pttl > 4000 && pttl <= 5000, "PTTL " + pttl);
        tok.unlock();
    }

    @Test
    void badUrlsNameTheFault() {
        LockException e = assertThrows(
            LockException.class,
            () -> Client.fromUrl("redis://:s3cret@localhost:99999"));
        assertEquals("TSLOCK_EINVAL", e.errname());
        assertEquals(-3, e.code());
        assertTrue(e.getMessage().contains("port"), e.getMessage());
        assertFalse(e.getMessage().contains("s3cret"), e.getMessage());
        e = assertThrows(LockException.class,
                         () -> Client.fromUrl("http://localhost"));
        assertTrue(e.getMessage().contains("redis://"), e.getMessage());
        e = assertThrows(LockException.class,
                         () -> Client.fromUrl("unix:///nonexistent/r.sock"));
        assertEquals("TSLOCK_EIO", e.errname());
        assertThrows(IllegalArgumentException.class, () -> client.lock(""));
    }

    @Test
    void holdIsAutoCloseableWithAFence(TestInfo t) throws Exception {
        TsLock lock = client.builder(key(t)).fencing(true).build();
        long first;
        try (Hold h = lock.hold(Duration.ofSeconds(1))) {
            first = h.fence();
            assertTrue(first >= 1);
            assertEquals(first, lock.fence());
        }
        assertNull(raw.get(lock.name()));
        try (Hold h = lock.hold(Duration.ofSeconds(1))) {
            assertTrue(h.fence() > first);
        }
        lock.lock();
        LockException busy = inThread(() -> {
            try {
                client.lock(lock.name()).hold(Duration.ofMillis(50));
                return null;
            } catch (LockException x) {
                return x;
            }
        });
        assertEquals("TSLOCK_EBUSY", busy.errname());
        lock.unlock();
    }

    @Test
    void handleMovesAHoldToAnotherThread(TestInfo t) throws Exception {
        String k = key(t);
        TsLock lock = client.lock(k);
        lock.lock();
        String handle = lock.currentHold().handle();
        assertFalse(lock.isHeldByCurrentThread());
        assertNotNull(raw.get(k), "passed on, not released");
        assertThrows(IllegalMonitorStateException.class, lock::unlock);
        boolean released = inThread(() -> {
            Hold h = client.adopt(handle, k);
            TsLock adopted = h.lock();
            assertTrue(adopted.isHeldByCurrentThread());
            adopted.unlock();
            return raw.get(k) == null;
        });
        assertTrue(released);
    }

    /** Interrupt a waiter: InterruptedException within 100 ms, no hold. */
    @Test
    void interruptEndsTheWaitWithin100ms(TestInfo t) throws Exception {
        String k = key(t);
        TsLock held = client.lock(k);
        held.lock();
        for (int timed = 0; timed < 2; timed++) {
            final boolean useTimed = timed == 1;
            TsLock waiter = client.lock(k);
            AtomicReference<Object> outcome = new AtomicReference<>();
            java.util.concurrent.atomic.AtomicLong caught =
                new java.util.concurrent.atomic.AtomicLong();
            CountDownLatch started = new CountDownLatch(1);
            Thread th = new Thread(() -> {
                started.countDown();
                try {
                    if (useTimed)
                        waiter.tryLock(60, TimeUnit.SECONDS);
                    else
                        waiter.lockInterruptibly();
                    outcome.set("acquired");
                } catch (InterruptedException e) {
                    caught.set(System.nanoTime());
                    outcome.set(e);
                } catch (Throwable e) {
                    outcome.set(e);
                }
            });
            th.start();
            started.await();
            Thread.sleep(300); /* well into the native wait */
            long t0 = System.nanoTime();
            th.interrupt();
            th.join(5000);
            /* From the interrupt to the waiter holding its exception. */
            long ms = (caught.get() - t0) / 1_000_000;
            System.out.printf("interrupt of %s: InterruptedException %d ms "
                                  + "after the interrupt%n",
                              useTimed ? "tryLock(60 s)" : "lockInterruptibly",
                              ms);
            assertTrue(outcome.get() instanceof InterruptedException,
                       String.valueOf(outcome.get()));
            assertTrue(ms < 100, "returned " + ms + " ms after interrupt");
            assertFalse(waiter.isHeldByCurrentThread());
        }
        held.unlock();
        assertNull(raw.get(k), "nothing left held");
        assertTrue(inThread(() -> {
            TsLock again = client.lock(k);
            boolean got = again.tryLock();
            again.unlock();
            return got;
        }));
    }

    @Test
    void alreadyInterruptedThrowsAtOnce(TestInfo t) {
        TsLock lock = client.lock(key(t));
        Thread.currentThread().interrupt();
        assertThrows(InterruptedException.class, lock::lockInterruptibly);
        assertFalse(Thread.interrupted());
        assertFalse(lock.isHeldByCurrentThread());
    }

    /** One Client, 16 threads, one key: never two inside at once. */
    @Test
    void sixteenThreadsShareOneClient(TestInfo t) throws Exception {
        String k = key(t);
        TsLock lock = client.lock(k);
        AtomicInteger inside = new AtomicInteger(), overlaps = new AtomicInteger(),
                      entries = new AtomicInteger();
        ExecutorService ex = Executors.newFixedThreadPool(16);
        List<Future<?>> fs = new ArrayList<>();
        for (int i = 0; i < 16; i++)
            fs.add(ex.submit(() -> {
                for (int j = 0; j < 25; j++) {
                    lock.lock();
                    try {
                        if (inside.incrementAndGet() != 1)
                            overlaps.incrementAndGet();
                        entries.incrementAndGet();
                        Thread.onSpinWait();
                        inside.decrementAndGet();
                    } finally {
                        lock.unlock();
                    }
                }
                return null;
            }));
        for (Future<?> f : fs)
            f.get(120, TimeUnit.SECONDS);
        ex.shutdown();
        assertEquals(0, overlaps.get());
        assertEquals(16 * 25, entries.get());
    }

    /** The checker above is shown failing on a lock that excludes nothing. */
    @Test
    void theOverlapCheckerSeesABrokenLock() throws Exception {
        AtomicInteger inside = new AtomicInteger(), overlaps = new AtomicInteger();
        CountDownLatch all = new CountDownLatch(4);
        ExecutorService ex = Executors.newFixedThreadPool(4);
        List<Future<?>> fs = new ArrayList<>();
        for (int i = 0; i < 4; i++)
            fs.add(ex.submit(() -> {
                /* "Locked" with no lock: all four are inside together. */
                if (inside.incrementAndGet() != 1)
                    overlaps.incrementAndGet();
                all.countDown();
                all.await();
                inside.decrementAndGet();
                return null;
            }));
        for (Future<?> f : fs)
            f.get(10, TimeUnit.SECONDS);
        ex.shutdown();
        assertEquals(3, overlaps.get());
    }

    @Test
    void readWriteLock(TestInfo t) throws Exception {
        String k = key(t);
        TsReadWriteLock rw = client.readWriteLock(k);
        rw.readLock().lock();
        assertTrue(inThread(() -> {
            boolean r = rw.readLock().tryLock();
            boolean w = rw.writeLock().tryLock();
            rw.readLock().unlock();
            return r && !w;
        }));
        rw.readLock().unlock();
        rw.writeLock().lock();
        assertFalse(inThread(() -> rw.readLock().tryLock()));
        rw.writeLock().unlock();
    }

    @Test
    void semaphore(TestInfo t) throws Exception {
        TsSemaphore sem = client.semaphore(key(t), 2);
        Hold a = sem.tryAcquire(), b = sem.tryAcquire();
        assertNotNull(a);
        assertNotNull(b);
        assertNull(sem.tryAcquire());
        a.close();
        try (Hold c = sem.tryAcquire(1, TimeUnit.SECONDS)) {
            assertNotNull(c);
        }
        b.close();
    }

    @Test
    void fairWaitersKeepTheirOrder(TestInfo t) throws Exception {
        String k = key(t);
        TsLock head = client.builder(k).fair(true).build();
        head.lock();
        List<Integer> order = java.util.Collections.synchronizedList(
            new ArrayList<>());
        List<Thread> ts = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            final int n = i;
            Thread th = new Thread(() -> {
                TsLock l = client.builder(k).fair(true).build();
                l.lock();
                order.add(n);
                l.unlock();
            });
            th.start();
            ts.add(th);
            /* Each joins the line before the next asks. */
            long deadline = System.currentTimeMillis() + 5000;
            while ((Long) raw.call("ZCARD", "{" + k + "}:queue") < i + 1
                   && System.currentTimeMillis() < deadline)
                Thread.sleep(5);
        }
        head.unlock();
        for (Thread th : ts)
            th.join(10000);
        assertEquals(List.of(0, 1, 2), order);
    }

    /** The watchdog renews past the lease; a loss reaches the listener. */
    @Test
    void watchdogRenewsAndReportsTheLoss(TestInfo t) throws Exception {
        String k = key(t);
        AtomicReference<LockException> told = new AtomicReference<>();
        CountDownLatch lost = new CountDownLatch(1);
        TsLock lock = client.builder(k).scheme(Scheme.TOKEN)
                          .lease(Duration.ofMillis(1000))
                          .onLost((l, why) -> {
                              told.set(why);
                              lost.countDown();
                          })
                          .build();
        lock.lock();
        Thread.sleep(2500); /* two and a half leases, renewed each third */
        assertNotNull(raw.get(k), "renewed past its lease");
        raw.call("SET", k, "someone-else");
        assertTrue(lost.await(5, TimeUnit.SECONDS), "the listener was told");
        assertTrue(told.get() instanceof LockLostException,
                   String.valueOf(told.get()));
        assertThrows(LockLostException.class, lock::unlock);
        assertFalse(lock.isHeldByCurrentThread());
        assertEquals("someone-else", raw.get(k), "not deleted");
        raw.del(k);
    }

    @Test
    void errorsAreTyped(TestInfo t) {
        String k = key(t);
        raw.call("LPUSH", k, "x");
        WrongTypeException e = assertThrows(WrongTypeException.class,
                                            () -> client.lock(k).tryLock());
        assertEquals("TSLOCK_EWRONGTYPE", e.errname());
        raw.del(k);
    }

    /** A lease that ran out is reported by unlock, and nothing deleted. */
    @Test
    void unlockAfterTheLeaseRanOutIsALoss(TestInfo t) throws Exception {
        String k = key(t);
        TsLock lock = client.lock(k, Scheme.TIMESTAMP, Duration.ofMillis(50));
        lock.lock();
        Thread.sleep(120);
        raw.call("SET", k, "1");
        LockLostException e = assertThrows(LockLostException.class,
                                           lock::unlock);
        assertEquals(-2, e.code());
        assertEquals("1", raw.get(k));
        raw.del(k);
    }

    /** Several URLs make a Redlock: a majority of masters holds it. */
    @Test
    void severalUrlsMakeARedlock(TestInfo t) throws Exception {
        String k = key(t);
        String[] m = Servers.masters();
        try (Client red = Client.fromUrl(m)) {
            assertTrue(red.isRedlock());
            TsLock lock = red.lock(k, Scheme.TOKEN, Duration.ofSeconds(5));
            lock.lock();
            String token = raw.get(k);
            assertTrue(token != null && token.matches("[0-9a-f]{32}"), token);
            assertFalse(inThread(() -> red.lock(k).tryLock()));
            String handle = lock.currentHold().handle();
            assertTrue(inThread(() -> {
                Hold h = red.adopt(handle, k);
                h.close();
                return raw.get(k) == null;
            }));
            assertThrows(UnsupportedException.class,
                         () -> red.builder(k).fair(true).build());
            assertThrows(UnsupportedException.class,
                         () -> red.semaphore(k, 2));
        }
        assertThrows(IllegalArgumentException.class,
                     () -> Client.fromUrl(m[0], m[1]));
        /* A majority down: the client says how many it reached. */
        LockException e = assertThrows(
            LockException.class,
            () -> Client.fromUrl(m[0], "unix:///nonexistent/a.sock",
                                 "unix:///nonexistent/b.sock"));
        assertEquals("TSLOCK_ENOQUORUM", e.errname());
        assertTrue(e.getMessage().contains("1 of 3"), e.getMessage());
    }

    /**
     * A TsLock made per call, as the articles make their RedisLock, keeps
     * few connections: the kept lock objects are capped per Client.
     */
    @Test
    void aLockPerCallKeepsFewConnections(TestInfo t) {
        String k = key(t);
        try (Client c = Client.fromUrl(Servers.url())) {
            long before = connections();
            List<TsLock> made = new ArrayList<>();
            for (int i = 0; i < 60; i++) {
                TsLock l = c.lock(k + ":" + i);
                l.lock();
                l.unlock();
                made.add(l); /* reachable: no Cleaner gives them back */
            }
            long grew = connections() - before;
            assertTrue(grew <= TsLock.Idle.PER_CLIENT,
                       "60 locks, " + grew + " more connections");
        }
    }

    /** A Client dropped without close() gives its connections back. */
    @Test
    void aDroppedClientIsCleaned() throws Exception {
        long before = connections();
        for (int i = 0; i < 5; i++)
            Client.fromUrl(Servers.url()).lock("jt:dropped").tryLock();
        assertTrue(connections() >= before + 5);
        long deadline = System.currentTimeMillis() + 10000;
        while (connections() > before && System.currentTimeMillis() < deadline) {
            System.gc();
            Thread.sleep(50);
        }
        assertTrue(connections() <= before, "connections left: "
                                                 + connections() + " > "
                                                 + before);
        raw.del("jt:dropped");
    }

    static long connections() {
        String info = (String) raw.call("INFO", "clients");
        for (String line : info.split("\r\n"))
            if (line.startsWith("connected_clients:"))
                return Long.parseLong(line.substring(18));
        throw new AssertionError(info);
    }
}

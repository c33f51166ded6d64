// SPDX-License-Identifier: BSD-3-Clause
package tslock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

import tslock.legacy.RedisLock;

/**
 * The migration: the articles' RedisLock and the binding's bridge mode on
 * one key, under load, on the real server and through the proxy as Redis
 * 2.0, 2.2 and 2.6.0. Some bridge holds overrun their lease on purpose,
 * so the old lock takes the key from them; each of those must end in
 * LockLostException, and tslock must never take a key whose holder's
 * lease still runs.
 */
class MigrationTest {
    static Stream<String> versions() {
        return Servers.versions().stream();
    }

    /** Who is inside the critical section, and what their entry broke. */
    static final class Book {
        static final class Entry {
            final boolean tslock;
            final long deadline; /* before the acquire + lease: a bound */
            boolean takenFrom;   /* someone entered while it was inside */

            Entry(boolean tslock, long deadline) {
                this.tslock = tslock;
                this.deadline = deadline;
            }
        }

        final List<Entry> inside = new ArrayList<>();
        int tslockCaused, legacyCaused, legacyOnLegacy, expiredTakeovers;
        int legacyTookExpiredBridge;
        int bridgeHolds, legacyHolds, lostReported, lostExpected;

        synchronized void enter(Entry e) {
            long now = System.currentTimeMillis();
            for (Entry o : inside) {
                o.takenFrom = true;
                if (o.deadline <= now) {
                    expiredTakeovers++; /* its lease ran out: allowed */
                    if (o.tslock && !e.tslock)
                        legacyTookExpiredBridge++;
                }
                else if (e.tslock)
                    tslockCaused++;
                else if (o.tslock)
                    legacyCaused++;
                else
                    legacyOnLegacy++;
            }
            inside.add(e);
            if (e.tslock)
                bridgeHolds++;
            else
                legacyHolds++;
        }

        synchronized boolean leave(Entry e) {
            inside.remove(e);
            return e.takenFrom;
        }
    }

    @ParameterizedTest(name = "Redis {0}")
    @MethodSource("versions")
    void bridgeBesideTheArticlesRedisLock(String version) throws Exception {
        String key = "mig:bridge:" + version + ":" + System.nanoTime();
        long lease = 300;
        Book book = new Book();
        ExecutorService ex = Executors.newFixedThreadPool(6);
        List<Future<?>> fs = new ArrayList<>();
        try (Client client = Client.fromUrl(Servers.url(version))) {
            for (int i = 0; i < 3; i++) {
                final int worker = i;
                fs.add(ex.submit(() -> legacyWorker(version, key, lease, book)));
                fs.add(ex.submit(() -> bridgeWorker(client, key, lease, book,
                                                    worker)));
            }
            for (Future<?> f : fs)
                f.get(180, TimeUnit.SECONDS);
        } finally {
            ex.shutdownNow();
        }
        System.out.printf("Redis %s: %d bridge holds, %d legacy holds; "
                              + "taken by legacy from bridge %d, by legacy "
                              + "from legacy %d, after expiry %d (by legacy "
                              + "from bridge %d); "
                              + "losses expected %d, reported %d; "
                              + "tslock-caused overlaps %d%n",
                          version, book.bridgeHolds, book.legacyHolds,
                          book.legacyCaused, book.legacyOnLegacy,
                          book.expiredTakeovers, book.legacyTookExpiredBridge,
                          book.lostExpected,
                          book.lostReported, book.tslockCaused);
        assertEquals(0, book.tslockCaused, "overlaps tslock caused");
        assertTrue(book.lostExpected > 0, "the overruns lost some holds");
        assertTrue(book.lostReported >= book.lostExpected,
                   "every hold taken away was reported");
        assertTrue(book.bridgeHolds > 0 && book.legacyHolds > 0);
    }

    static Void legacyWorker(String version, String key, long lease, Book book)
        throws Exception {
        try (Resp cache = new Resp(Servers.socket(version))) {
            for (int round = 0; round < 12; round++) {
                RedisLock lock = new RedisLock(cache, key, lease);
                long before = System.currentTimeMillis();
                if (!lock.tryLock(3000, TimeUnit.MILLISECONDS))
                    continue;
                Book.Entry e = new Book.Entry(false, before + lease);
                book.enter(e);
                Thread.sleep(5);
                book.leave(e);
                lock.unlock();
            }
        }
        return null;
    }

    static Void bridgeWorker(Client client, String key, long lease, Book book,
                             int worker) throws Exception {
        TsLock lock = client.lock(key, Scheme.BRIDGE, Duration.ofMillis(lease));
        for (int round = 0; round < 12; round++) {
            long before = System.currentTimeMillis();
            if (!lock.tryLock(3, TimeUnit.SECONDS))
                continue;
            Book.Entry e = new Book.Entry(true, before + lease);
            book.enter(e);
            /* Every fourth hold overruns its lease: the old lock may take it. */
            Thread.sleep(round % 4 == worker % 4 ? lease + 200 : 5);
            boolean taken = book.leave(e);
            boolean reported = false;
            try {
                lock.unlock();
            } catch (LockLostException lost) {
                reported = true;
            }
            synchronized (book) {
                if (taken)
                    book.lostExpected++;
                if (reported)
                    book.lostReported++;
            }
            assertTrue(!taken || reported,
                       "a hold taken away was not reported");
        }
        return null;
    }

    /** Token mode on its own key beside RedisLock on another: never meet. */
    @ParameterizedTest(name = "Redis {0}")
    @MethodSource("versions")
    void tokenBesideRedisLockOnKeysOfTheirOwn(String version) throws Exception {
        if (version.equals("2.0")) {
            /* No WATCH, no Lua: the token scheme is refused, by type. */
            try (Client client = Client.fromUrl(Servers.url(version))) {
                org.junit.jupiter.api.Assertions.assertThrows(
                    UnsupportedException.class,
                    () -> client.lock("mig:token:2.0", Scheme.TOKEN,
                                      Duration.ofSeconds(2)).tryLock());
            }
            return;
        }
        String tokenKey = "mig:token:" + version + ":" + System.nanoTime();
        String legacyKey = tokenKey + ":legacy";
        Book tokens = new Book(), legacy = new Book();
        ExecutorService ex = Executors.newFixedThreadPool(4);
        List<Future<?>> fs = new ArrayList<>();
        try (Client client = Client.fromUrl(Servers.url(version));
             Resp raw = new Resp(Servers.socket(version))) {
            for (int i = 0; i < 2; i++) {
                fs.add(ex.submit(() -> legacyWorker(version, legacyKey, 2000,
                                                    legacy)));
                fs.add(ex.submit(() -> {
                    TsLock lock = client.lock(tokenKey, Scheme.TOKEN,
                                              Duration.ofSeconds(2));
                    for (int r = 0; r < 10; r++) {
                        lock.lock();
                        Book.Entry e = new Book.Entry(true, Long.MAX_VALUE);
                        tokens.enter(e);
                        String v = raw.get(tokenKey);
                        assertTrue(v != null && !v.matches("[0-9]{13,}"),
                                   "the token key holds a token: " + v);
                        Thread.sleep(3);
                        tokens.leave(e);
                        lock.unlock();
                    }
                    return null;
                }));
            }
            for (Future<?> f : fs)
                f.get(120, TimeUnit.SECONDS);
        } finally {
            ex.shutdownNow();
        }
        assertEquals(0, tokens.tslockCaused, "token holds overlapped");
        assertEquals(20, tokens.bridgeHolds);
        assertEquals(0, legacy.legacyOnLegacy + legacy.expiredTakeovers,
                     "the legacy key, long leases: never overlapped");
        assertTrue(legacy.legacyHolds > 0);
    }
}

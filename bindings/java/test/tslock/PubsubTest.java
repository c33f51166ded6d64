// SPDX-License-Identifier: BSD-3-Clause
package tslock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;

/**
 * Client.setPubsub / getPubsub (tslock_client_set_pubsub(3),
 * tslock_client_get_pubsub(3)) on the private single server (Redis 7.0):
 * the mode set is the mode read (AUTO reads CLASSIC there: sharded
 * pub/sub is for a cluster unless asked), and under each mode a waiter
 * still takes the lock when it is released, woken by the release (the
 * client's wakes counter), not by a retry.
 */
class PubsubTest {
    static String key(TestInfo t) {
        return "jp:" + t.getDisplayName() + ":" + System.nanoTime();
    }

    @Test
    void defaultIsClassicOnASingleServer() {
        try (Client c = Client.fromUrl(Servers.url())) {
            assertEquals(Pubsub.CLASSIC, c.getPubsub());
        }
    }

    @Test
    void modeSetIsModeRead() {
        try (Client c = Client.fromUrl(Servers.url())) {
            c.setPubsub(Pubsub.SHARDED);
            assertEquals(Pubsub.SHARDED, c.getPubsub());
            c.setPubsub(Pubsub.CLASSIC);
            assertEquals(Pubsub.CLASSIC, c.getPubsub());
            c.setPubsub(Pubsub.AUTO);
            assertEquals(Pubsub.CLASSIC, c.getPubsub());
            assertThrows(NullPointerException.class, () -> c.setPubsub(null));
        }
    }

    /* A waiter in line behind a holder is woken by the unlock. */
    private static void lockAndWake(Pubsub mode, TestInfo t) throws Exception {
        String name = key(t) + ":" + mode;
        try (Client c = Client.fromUrl(Servers.url());
             Resp raw = new Resp(Servers.socket())) {
            c.setPubsub(mode);
            TsLock holder = c.lock(name, Scheme.TOKEN, Duration.ofSeconds(60));
            holder.lock();
            long wakes = c.stats().wakes;
            ExecutorService ex = Executors.newSingleThreadExecutor();
            try {
                Future<Boolean> waiter = ex.submit(() -> {
                    TsLock l = c.lock(name, Scheme.TOKEN,
                                      Duration.ofSeconds(60));
                    boolean got = l.tryLock(30, TimeUnit.SECONDS);
                    if (got)
                        l.unlock();
                    return got;
                });
                /* In line (and so listening) before the holder lets go. */
                long deadline = System.nanoTime() + 20_000_000_000L;
                while ((Long) raw.call("ZCARD", "{" + name + "}:queue") < 1) {
                    assertTrue(System.nanoTime() < deadline && !waiter.isDone(),
                               "the waiter never joined the line");
                    Thread.sleep(10);
                }
                holder.unlock();
                assertTrue(waiter.get(40, TimeUnit.SECONDS));
            } finally {
                ex.shutdownNow();
            }
            assertTrue(c.stats().wakes > wakes,
                       mode + ": the waiter was not woken by the release");
        }
    }

    @Test
    void classicLocksAndWakes(TestInfo t) throws Exception {
        lockAndWake(Pubsub.CLASSIC, t);
    }

    @Test
    void autoLocksAndWakes(TestInfo t) throws Exception {
        lockAndWake(Pubsub.AUTO, t);
    }

    @Test
    void shardedLocksAndWakes(TestInfo t) throws Exception {
        lockAndWake(Pubsub.SHARDED, t);
    }
}

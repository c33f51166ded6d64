// SPDX-License-Identifier: BSD-3-Clause
package tslock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.time.Duration;

import org.junit.jupiter.api.Test;

/**
 * Client.fromUrl over rediss://, against the TLS-only redis-server that
 * test_java.sh starts (client certificates required).
 */
class TlsTest {
    static String url(String which) {
        String u = System.getProperty(which);
        assumeTrue(u != null, "no TLS server (openssl missing)");
        return u;
    }

    @Test
    void redissUrlLocksAndUnlocks() {
        try (Client c = Client.fromUrl(url("tslock.tlsurl"))) {
            TsLock lock = c.lock("jt:tls:" + System.nanoTime());
            assertTrue(lock.tryLock());
            assertTrue(lock.isHeldByCurrentThread());
            lock.unlock();
            assertFalse(lock.isHeldByCurrentThread());
        }
    }

    @Test
    void everySchemeOverTls() {
        try (Client c = Client.fromUrl(url("tslock.tlsurl"))) {
            for (Scheme s : new Scheme[] {Scheme.TOKEN, Scheme.TIMESTAMP,
                                          Scheme.BRIDGE}) {
                TsLock lock = c.lock("jt:tls:" + s + System.nanoTime(), s,
                                     Duration.ofSeconds(5));
                assertTrue(lock.tryLock(), s.toString());
                lock.unlock();
            }
        }
    }

    @Test
    void wrongCaIsTslockEtls() {
        LockException e = assertThrows(
            LockException.class,
            () -> Client.fromUrl(url("tslock.tlsurl.wrongca")));
        assertEquals("TSLOCK_ETLS", e.errname());
        assertTrue(e.getMessage().contains("certificate verify failed"),
                   e.getMessage());
    }
}

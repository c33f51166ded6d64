// SPDX-License-Identifier: BSD-3-Clause
package tslock;

import java.time.Duration;
import java.util.concurrent.TimeUnit;

/**
 * A counting semaphore over Redis (tslock_lock_set_permits(3)): at most
 * {@code permits} holds at once across every process, each with its own
 * lease. Redis 2.2 and later. Permits are not owned by threads: each
 * acquire returns the {@link Hold} that gives it back.
 */
public final class TsSemaphore {
    private final TsLock lock;

    TsSemaphore(Client client, String name, long permits, Duration lease) {
        if (permits < 1)
            throw new IllegalArgumentException(
                "permits: expected 1 or more, got " + permits);
        if (client.isRedlock())
            throw LockException.of(Native.EUNSUPPORTED,
                                   "a Redlock has no semaphore");
        lock = client.builder(name).scheme(Scheme.TOKEN).lease(lease).build();
        lock.s.permits = permits;
    }

    /** Wait for a permit as long as it takes (interruptibly). */
    public Hold acquire() throws InterruptedException {
        return lock.take(Native.WAIT_FOREVER, true, false);
    }

    /** A permit if one is free now, else null. */
    public Hold tryAcquire() {
        try {
            return lock.take(0, false, false);
        } catch (InterruptedException e) {
            throw new AssertionError(e);
        }
    }

    /** A permit within the wait, else null. */
    public Hold tryAcquire(long time, TimeUnit unit)
        throws InterruptedException {
        return lock.take(Math.max(0, unit.toMillis(time)), true, false);
    }
}

// SPDX-License-Identifier: BSD-3-Clause
package tslock;

import java.time.Duration;
import java.util.concurrent.locks.ReadWriteLock;

/**
 * A read-write lock over Redis (tslock_lock_set_rw(3)): any number of
 * readers at once, or one writer; a waiting writer keeps new readers out
 * (writer preference). Token scheme; Redis 2.2 and later
 * ({@link UnsupportedException} on 2.0). Each side is a {@link TsLock},
 * held by threads as a {@code ReentrantReadWriteLock}'s are.
 */
public final class TsReadWriteLock implements ReadWriteLock {
    private final TsLock read, write;

    TsReadWriteLock(Client client, String name, Duration lease) {
        if (client.isRedlock())
            throw LockException.of(Native.EUNSUPPORTED,
                                   "a Redlock has no read-write lock");
        TsLock.Builder r = client.builder(name).scheme(Scheme.TOKEN).lease(lease);
        TsLock.Builder w = client.builder(name).scheme(Scheme.TOKEN).lease(lease);
        read = r.build();
        read.s.rw = 2;  /* TSLOCK_RW_SHARED */
        write = w.build();
        write.s.rw = 1; /* TSLOCK_RW_EXCLUSIVE */
    }

    @Override
    public TsLock readLock() {
        return read;
    }

    @Override
    public TsLock writeLock() {
        return write;
    }
}

// SPDX-License-Identifier: BSD-3-Clause
package tslock;

/**
 * Told when the watchdog finds a hold lost (a renewal found the key taken,
 * or the lease ran out before a renewal reached the server). Called once,
 * from the watchdog's thread; it should return quickly and must not use
 * the lock. {@code unlock()} reports the same loss again.
 */
@FunctionalInterface
public interface LockLossListener {
    void lost(TsLock lock, LockException why);
}

// SPDX-License-Identifier: BSD-3-Clause
package tslock;

/**
 * Told of every acquire, release, loss and takeover of a {@link Client}'s
 * locks (tslock_client_set_observer(3)): what a trace span or a log line
 * needs. Called on the thread of the lock call, or, for a lease lost
 * behind a watchdog, on the watchdog's native thread (attached to the JVM
 * for the call; {@link LockEvent#fromWatchdog}). It must return quickly
 * and must not use the lock the event is about; what it throws is
 * dropped.
 */
@FunctionalInterface
public interface LockObserver {
    void onEvent(LockEvent event);
}

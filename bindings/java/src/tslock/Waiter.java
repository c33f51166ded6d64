// SPDX-License-Identifier: BSD-3-Clause
package tslock;

import java.nio.channels.ClosedByInterruptException;
import java.nio.channels.spi.AbstractInterruptibleChannel;

/**
 * One interruptible wait in tslock_acquire(). Thread.interrupt() of the
 * waiting thread closes this channel, which cancels the wait
 * (tslock_lock_cancel(), async-signal-safe), so the wait returns within a
 * poll of the cancel pipe; the JDK keeps the interrupter from reaching a
 * wait that has ended (begin/end run under the thread's blocker lock).
 */
final class Waiter extends AbstractInterruptibleChannel {
    private final long lock;
    /* An interrupt cancelled: a cancel not consumed by the wait is
       pending on the lock object, which must not wait again. */
    volatile boolean cancelled;

    Waiter(long lock) {
        this.lock = lock;
    }

    /** The acquire's code; ECANCELED when interrupted before it took it. */
    int await(long waitMs) {
        boolean done = false;
        int rc = Native.ECANCELED;
        try {
            begin();
            rc = Native.acquire(lock, waitMs);
            done = true;
        } finally {
            try {
                end(done);
            } catch (ClosedByInterruptException e) {
                /* rc says whether the lock was taken all the same. */
            } catch (java.io.IOException e) {
                /* Closed only by an interrupt; nothing else closes it. */
            }
        }
        return rc;
    }

    @Override
    protected void implCloseChannel() {
        cancelled = true;
        Native.cancel(lock);
    }
}

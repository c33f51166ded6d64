// SPDX-License-Identifier: BSD-3-Clause
package tslock.legacy;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.Lock;

/**
 * The articles' AbstractLock, copied as written (the comments translated).
 * Only newCondition() is added: the articles declare their own Lock
 * interface with the five methods; java.util.concurrent.locks.Lock also
 * has newCondition(), and the copy implements that one.
 */
public abstract class AbstractLock implements Lock {
    protected volatile boolean locked;
    private Thread exclusiveOwnerThread;

    @Override
    public void lock() {
        try {
            // If not acquired, keep trying.
            while (!lock(0, null, false)) {
                Thread.sleep(500L);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    @Override
    public void lockInterruptibly() throws InterruptedException {
        lock(0, null, true);
    }

    @Override
    public boolean tryLock(long time, TimeUnit unit) {
        try {
            return lock(time, unit, false);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        return false;
    }

    @Override
    public boolean tryLock() {
        try {
            return lock(0, null, false);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        return false;
    }

    public boolean tryLockInterruptibly(long time, TimeUnit unit)
        throws InterruptedException {
        return lock(time, unit, true);
    }

    @Override
    public void unlock() {
        // Check that the current thread holds the lock.
        if (Thread.currentThread() == getExclusiveOwnerThread()) {
            unlock0();
            setExclusiveOwnerThread(null);
        }
    }

    @Override
    public Condition newCondition() {
        throw new UnsupportedOperationException();
    }

    protected void setExclusiveOwnerThread(Thread thread) {
        exclusiveOwnerThread = thread;
    }

    protected final Thread getExclusiveOwnerThread() {
        return exclusiveOwnerThread;
    }

    protected abstract void unlock0();

    /**
     * The blocking acquisition, implemented by subclasses.
     *
     * @param timeout
     * @param unit
     * @param interrupt whether to respond to interruption
     * @return
     * @throws InterruptedException
     */
    protected abstract boolean lock(long timeout, TimeUnit unit,
                                    boolean interrupt)
        throws InterruptedException;
}

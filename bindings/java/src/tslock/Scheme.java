// SPDX-License-Identifier: BSD-3-Clause
package tslock;

/** How a lock is represented and taken (tslock_lock_set_scheme(3)). */
public enum Scheme {
    /** The best scheme the server allows: token where SET NX PX exists. */
    AUTO(0),
    /** The classic SETNX/GETSET expiry stamp of the articles' RedisLock. */
    TIMESTAMP(1),
    /** A random token with a server TTL, released by compare-and-delete. */
    TOKEN(2),
    /** A stamp legacy timestamp clients read, with a safety TTL and an
     *  owner key: shares a key with unmodified RedisLock instances. */
    BRIDGE(3);

    final int code;

    Scheme(int code) {
        this.code = code;
    }
}

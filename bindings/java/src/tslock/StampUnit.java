// SPDX-License-Identifier: BSD-3-Clause
package tslock;

/** The unit a timestamp or bridge stamp is written in. */
public enum StampUnit {
    /** Milliseconds, expiry + 1: the articles' Java RedisLock. */
    MS(0),
    /** Whole seconds, now + timeout + 1: the Redis SETNX page. */
    S(1),
    /** Float seconds: the redis-py 2.x Lock. */
    FLOAT(2);

    final int code;

    StampUnit(int code) {
        this.code = code;
    }
}

// SPDX-License-Identifier: BSD-3-Clause
package tslock.legacy;

/**
 * The articles' cache interface. There it extends Jedis's JedisCommands;
 * Jedis is not packaged, so this declares the four JedisCommands methods
 * RedisLock calls, with Jedis's signatures, and the tests' minimal RESP
 * client (tslock.Resp) implements them.
 */
public interface Cache {
    String get(String key);

    Long setnx(String key, String value);

    String getSet(String key, String value);

    Long del(String key);
}

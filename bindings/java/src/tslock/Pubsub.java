// SPDX-License-Identifier: BSD-3-Clause
package tslock;

/**
 * How a client's waiters are woken by a release
 * (tslock_client_set_pubsub(3); doc/topologies.md, "Sharded wake-ups").
 * Waiters of either kind are woken by releases of either kind.
 */
public enum Pubsub {
    /** The default: sharded pub/sub on a Redis 7.0+ Cluster, classic
     *  elsewhere. */
    AUTO(0),
    /** SUBSCRIBE and PUBLISH everywhere. */
    CLASSIC(1),
    /** SSUBSCRIBE and SPUBLISH wherever the server has them (Redis 7.0),
     *  a single server too. */
    SHARDED(2);

    final int code;

    Pubsub(int code) {
        this.code = code;
    }
}

// SPDX-License-Identifier: BSD-3-Clause
package tslock;

/**
 * What a {@link Client}'s connections counted, summed, without a round
 * trip (tslock_client_stats(3)): acquisitions by result and by scheme,
 * ends of holds, watchdog renewals, takeovers, wakes and retries, and
 * the wait-time and hold-time histograms with the library's fixed
 * bounds ({@link #BUCKET_LE_SECONDS}; the last bucket is +Inf).
 * Buckets are cumulative, as Prometheus's {@code le} buckets. A
 * snapshot: counts only grow between two.
 */
public final class Stats {
    static final int BUCKETS = 16;
    static final int LEN = 16 + 2 * (BUCKETS + 2);

    /** The upper bound of each histogram bucket, in seconds. */
    public static final double[] BUCKET_LE_SECONDS = {
        0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30,
        60, 300, Double.POSITIVE_INFINITY};

    public final long acquired, busy, timedOut, canceled, errors;
    public final long byTimestamp, byToken, byBridge;
    public final long released, lost, renewals, renewalFailures;
    public final long takeovers, legacyTakeovers, wakes, retries;
    /** Cumulative counts per bucket of BUCKET_LE_SECONDS. */
    public final long[] waitBuckets, holdBuckets;
    public final long waitSumMs, waitCount, holdSumMs, holdCount;

    Stats(long[] v) {
        acquired = v[0];
        busy = v[1];
        timedOut = v[2];
        canceled = v[3];
        errors = v[4];
        byTimestamp = v[5];
        byToken = v[6];
        byBridge = v[7];
        released = v[8];
        lost = v[9];
        renewals = v[10];
        renewalFailures = v[11];
        takeovers = v[12];
        legacyTakeovers = v[13];
        wakes = v[14];
        retries = v[15];
        waitBuckets = java.util.Arrays.copyOfRange(v, 16, 16 + BUCKETS);
        waitSumMs = v[16 + BUCKETS];
        waitCount = v[17 + BUCKETS];
        int h = 18 + BUCKETS;
        holdBuckets = java.util.Arrays.copyOfRange(v, h, h + BUCKETS);
        holdSumMs = v[h + BUCKETS];
        holdCount = v[h + BUCKETS + 1];
    }
}

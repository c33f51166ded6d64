/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * stats.c - what a client counts about its locks without a round trip
 * (tslock_client_stats()), its histograms with fixed bounds, and the
 * observer told of each acquire, release, loss and takeover.
 */
#include <string.h>

#include "net.h"

static const int64_t bucket_ms[TSLOCK_STATS_BUCKETS - 1] =
    TSLOCK_STATS_BUCKETS_MS;

void tslock__hist_observe(struct tslock__hist *h, int64_t ms)
{
    int i = 0;

    if (ms < 0)
        ms = 0;
    /* Most waits and holds are short: the walk ends early. */
    while (i < TSLOCK_STATS_BUCKETS - 1 && ms > bucket_ms[i])
        i++;
    tslock__count_add(&h->bucket[i], 1);
    tslock__count_add(&h->sum_ms, (unsigned long long)ms);
}

void tslock__notify(tslock_client *c, tslock_event_type type, const char *key,
                    int result, int64_t duration_ms, tslock_scheme scheme,
                    int legacy, int from_watchdog)
{
    tslock_event e;

    if (c->observer == NULL)
        return;
    memset(&e, 0, sizeof(e));
    e.size = sizeof(e);
    e.type = type;
    e.result = result;
    e.key = key;
    e.duration_ms = duration_ms;
    e.scheme = scheme;
    e.legacy = legacy;
    e.from_watchdog = from_watchdog;
    c->observer(&e, c->observer_ud);
}

static void hist_read(const struct tslock__hist *h, tslock_histogram *out)
{
    uint64_t total = 0;
    int i;

    for (i = 0; i < TSLOCK_STATS_BUCKETS; i++) {
        total += tslock__count_load(&((struct tslock__hist *)h)->bucket[i]);
        out->bucket[i] = total;
    }
    out->count = total;
    out->sum_ms = tslock__count_load(&((struct tslock__hist *)h)->sum_ms);
}

#define READ(field) tslock__count_load(&s->field)

int tslock_client_stats(const tslock_client *client, tslock_stats *out,
                        size_t size)
{
    struct tslock__stats *s;
    tslock_stats all;
    int i;

    if (client == NULL || out == NULL
        || size < offsetof(tslock_stats, acquired) + sizeof(out->acquired))
        return TSLOCK_EINVAL;
    s = &((tslock_client *)client)->stats;
    memset(&all, 0, sizeof(all));
    all.acquired = READ(acquired);
    all.busy = READ(busy);
    all.timed_out = READ(timed_out);
    all.canceled = READ(canceled);
    all.errors = READ(errors);
    for (i = 0; i < 4; i++)
        all.by_scheme[i] = READ(by_scheme[i]);
    all.last_scheme = READ(last_scheme);
    all.released = READ(released);
    all.lost = READ(lost);
    all.renewals = READ(renewals);
    all.renewal_failures = READ(renewal_failures);
    all.takeovers = READ(takeovers);
    all.legacy_takeovers = READ(legacy_takeovers);
    all.wakes = READ(wakes);
    all.retries = READ(retries);
    hist_read(&s->wait, &all.wait);
    hist_read(&s->hold, &all.hold);
    all.size = size < sizeof(all) ? size : sizeof(all);
    memcpy(out, &all, all.size);
    return TSLOCK_OK;
}

int tslock_client_stats_reset(tslock_client *client)
{
    struct tslock__stats *s;
    int i;

    if (client == NULL)
        return TSLOCK_EINVAL;
    s = &client->stats;
    tslock__count_store(&s->acquired, 0);
    tslock__count_store(&s->busy, 0);
    tslock__count_store(&s->timed_out, 0);
    tslock__count_store(&s->canceled, 0);
    tslock__count_store(&s->errors, 0);
    for (i = 0; i < 4; i++)
        tslock__count_store(&s->by_scheme[i], 0);
    tslock__count_store(&s->last_scheme, 0);
    tslock__count_store(&s->released, 0);
    tslock__count_store(&s->lost, 0);
    tslock__count_store(&s->renewals, 0);
    tslock__count_store(&s->renewal_failures, 0);
    tslock__count_store(&s->takeovers, 0);
    tslock__count_store(&s->legacy_takeovers, 0);
    tslock__count_store(&s->wakes, 0);
    tslock__count_store(&s->retries, 0);
    for (i = 0; i < TSLOCK_STATS_BUCKETS; i++) {
        tslock__count_store(&s->wait.bucket[i], 0);
        tslock__count_store(&s->hold.bucket[i], 0);
    }
    tslock__count_store(&s->wait.sum_ms, 0);
    tslock__count_store(&s->hold.sum_ms, 0);
    return TSLOCK_OK;
}

int tslock_client_set_stats_options(tslock_client *client, unsigned flags)
{
    if (client == NULL || (flags & ~TSLOCK_STATS_HOLD_TIMES) != 0)
        return TSLOCK_EINVAL;
    client->stats_flags = flags;
    return TSLOCK_OK;
}

int tslock_client_set_observer(tslock_client *client, tslock_observer_fn fn,
                               void *userdata)
{
    if (client == NULL)
        return TSLOCK_EINVAL;
    client->observer = fn;
    client->observer_ud = userdata;
    return TSLOCK_OK;
}

void tslock__count_takeover(tslock_client *c, const char *key,
                            tslock_scheme scheme)
{
    TSLOCK__COUNT(c, takeovers);
    tslock__notify(c, TSLOCK_EVENT_TAKEOVER, key, TSLOCK_OK, 0, scheme, 0, 0);
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * stats.c - what a client counted, printed in the Prometheus text format
 * (doc/observability.md), with an observer logging each event.  Usage:
 * stats SOCKET-PATH [KEY]
 */
#include <inttypes.h>
#include <stdio.h>

#include <tslock.h>

static void log_event(const tslock_event *e, void *userdata)
{
    static const char *const names[] = {"", "acquire", "release", "lost",
                                        "takeover"};

    (void)userdata;
    fprintf(stderr, "event %s %s: %s, %lld ms\n", names[e->type & 7], e->key,
            tslock_errname(e->result), (long long)e->duration_ms);
}

static void print_histogram(const char *name, const tslock_histogram *h)
{
    static const int64_t le_ms[] = TSLOCK_STATS_BUCKETS_MS;
    int i;

    printf("# TYPE %s histogram\n", name);
    for (i = 0; i < TSLOCK_STATS_BUCKETS - 1; i++)
        printf("%s_bucket{le=\"%g\"} %" PRIu64 "\n", name, le_ms[i] / 1000.0,
               h->bucket[i]);
    printf("%s_bucket{le=\"+Inf\"} %" PRIu64 "\n", name, h->count);
    printf("%s_sum %g\n%s_count %" PRIu64 "\n", name, h->sum_ms / 1000.0, name,
           h->count);
}

static void print_stats(const tslock_stats *s)
{
    printf("# TYPE tslock_acquisitions_total counter\n");
    printf("tslock_acquisitions_total{result=\"acquired\"} %" PRIu64 "\n",
           s->acquired);
    printf("tslock_acquisitions_total{result=\"busy\"} %" PRIu64 "\n", s->busy);
    printf("tslock_acquisitions_total{result=\"timed_out\"} %" PRIu64 "\n",
           s->timed_out);
    printf("tslock_acquisitions_total{result=\"canceled\"} %" PRIu64 "\n",
           s->canceled);
    printf("tslock_acquisitions_total{result=\"error\"} %" PRIu64 "\n",
           s->errors);
    printf("# TYPE tslock_leases_lost_total counter\n");
    printf("tslock_leases_lost_total %" PRIu64 "\n", s->lost);
    print_histogram("tslock_acquire_wait_seconds", &s->wait);
    print_histogram("tslock_hold_seconds", &s->hold);
}

int main(int argc, char **argv)
{
    tslock_client *c = NULL;
    tslock_lock *l = NULL;
    tslock_stats s;
    int rc;

    if (argc < 2) {
        fprintf(stderr, "usage: stats SOCKET-PATH [KEY]\n");
        return 2;
    }
    rc = tslock_client_new(&c);
    if (rc == TSLOCK_OK)
        rc = tslock_client_connect_unix(c, argv[1]);
    if (rc == TSLOCK_OK)
        rc = tslock_client_set_observer(c, log_event, NULL);
    if (rc == TSLOCK_OK)
        rc = tslock_lock_new(&l, c, argc > 2 ? argv[2] : "example-stats");
    if (rc == TSLOCK_OK)
        rc = tslock_acquire(l, 2000);
    if (rc == TSLOCK_OK)
        rc = tslock_release(l);
    if (rc == TSLOCK_OK)
        rc = tslock_client_stats(c, &s, sizeof(s));
    if (rc == TSLOCK_OK)
        print_stats(&s);
    else
        fprintf(stderr, "%s: %s\n", tslock_strerror(rc),
                c != NULL ? tslock_client_errstr(c) : "");
    tslock_lock_free(l);
    tslock_client_free(c);
    return rc == TSLOCK_OK ? 0 : 1;
}

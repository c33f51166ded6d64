/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_cluster.c - `make bench-cluster`: what locks cost at cluster
 * scale, on clusters of real redis-server processes on this machine.
 * Cluster bus messages per release with PUBLISH and SPUBLISH at 3, 5 and
 * 7 masters; handoffs and acquisitions per second on a 3-master cluster
 * beside a single server in the same run; bytes per held lock, per
 * waiter in line and per fencing counter; and what the line's keys
 * leave behind when 10,000 waiters are killed mid-wait.
 *
 * Environment: TSLOCK_BENCH_MASTERS ("3 5 7"), TSLOCK_BENCH_RELEASES
 * (2000), TSLOCK_BENCH_CLUSTER_SECONDS (4 a row), TSLOCK_BENCH_LOCKS
 * (100000), TSLOCK_BENCH_CRASH_WAITERS (10000), TSLOCK_BENCH_PARTS
 * ("bus rate memory crash"; a subset runs those parts only).
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench_util.h"
#include "harness_cluster.h"

#define MAX_MASTERS 7
#define MAX_THREADS 512
#define CRASH_BATCH 500

/* Where a client connects: a single server or a cluster's seed node. */
struct target {
    const char *name;
    th_server *srv;  /* the single server, or NULL */
    th_cluster *cl;  /* the cluster, or NULL */
    int pubsub;      /* a TSLOCK_PUBSUB_* mode where the build has them */
    const char *how; /* "classic", "sharded", or "" */
};

static double row_seconds = 4;
static long n_releases = 2000, n_locks = 100000, n_crash = 10000;
static const char *parts = "bus rate memory crash";
static int bus_first; /* the first cluster size: its row names the channel */

/* The machine's load averages: the shared machine's noise, on record. */
static void print_load(void)
{
    double l[3];

    if (getloadavg(l, 3) == 3)
        printf("(load average %.2f %.2f %.2f)\n", l[0], l[1], l[2]);
}

static double now_ms(void)
{
    return bench_now_ns() / 1e6;
}

static int part(const char *name)
{
    return strstr(parts, name) != NULL;
}

/* ------------------------------------------------------------ clients */

/* A tslock client connected to t (node i of a cluster); NULL on failure. */
static tslock_client *client_to(const struct target *t, int i)
{
    tslock_client *c = NULL;
    int port = t->cl != NULL ? t->cl->node[i % t->cl->n].port : t->srv->port;

    if (tslock_client_new(&c) != TSLOCK_OK)
        return NULL;
#ifdef TSLOCK_PUBSUB_SHARDED
    if (t->pubsub >= 0)
        tslock_client_set_pubsub(c, t->pubsub);
#endif
    if (tslock_client_connect_tcp(c, "127.0.0.1", port) != TSLOCK_OK) {
        fprintf(stderr, "bench_cluster: connect: %s\n",
                tslock_client_errstr(c));
        tslock_client_free(c);
        return NULL;
    }
    return c;
}

/* A raw connection to the master that owns key's slot (or the server). */
static redisContext *raw_owner(const struct target *t, const char *key)
{
    if (t->cl == NULL)
        return th_redis(t->srv);
    return th_redis(&t->cl->node[th_cluster_owner(t->cl, key)]);
}

/* CPU seconds a server has used, user and system (INFO cpu). */
static double server_cpu(const th_server *s)
{
    redisContext *c = th_redis(s);
    redisReply *r = redisCommand(c, "INFO cpu");
    const char *u = NULL, *y = NULL;
    double v = 0;

    if (r != NULL && r->type == REDIS_REPLY_STRING) {
        u = strstr(r->str, "used_cpu_user:");
        y = strstr(r->str, "used_cpu_sys:");
    }
    if (u != NULL && y != NULL)
        v = atof(u + 14) + atof(y + 13);
    freeReplyObject(r);
    redisFree(c);
    return v;
}

/* ------------------------------------------------------------ the bus */

/* A CLUSTER INFO field summed over every node. */
static long bus_sum(const th_cluster *cl, const char *field)
{
    long sum = 0;
    int i;

    for (i = 0; i < cl->n; i++) {
        redisContext *c = th_redis(&cl->node[i]);
        redisReply *r = redisCommand(c, "CLUSTER INFO");
        const char *p = r != NULL && r->type == REDIS_REPLY_STRING
                            ? strstr(r->str, field)
                            : NULL;
        if (p != NULL)
            sum += strtol(p + strlen(field) + 1, NULL, 10);
        freeReplyObject(r);
        redisFree(c);
    }
    return sum;
}

struct bus {
    long publish, shard;
    long long wchar;            /* bytes every node wrote (/proc/PID/io) */
    double cpu[TH_CLUSTER_MAX]; /* each node's CPU seconds */
};

/* What process pid has written, sockets included: wchar of its io. */
static long long written(pid_t pid)
{
    char path[64], line[128];
    long long v = 0;
    FILE *f;

    snprintf(path, sizeof(path), "/proc/%d/io", (int)pid);
    if ((f = fopen(path, "r")) == NULL)
        return 0;
    while (fgets(line, sizeof(line), f) != NULL)
        if (strncmp(line, "wchar:", 6) == 0)
            v = strtoll(line + 6, NULL, 10);
    fclose(f);
    return v;
}

static void bus_read(const th_cluster *cl, struct bus *b)
{
    int i;

    b->wchar = 0;
    for (i = 0; i < cl->n; i++) {
        b->wchar += written(cl->node[i].pid);
        b->cpu[i] = server_cpu(&cl->node[i]);
    }
    b->publish = bus_sum(cl, "cluster_stats_messages_publish_sent");
    b->shard = bus_sum(cl, "cluster_stats_messages_publishshard_sent");
}

/* Messages per operation between two readings, both kinds together. */
static double bus_per(const struct bus *a, const struct bus *b, long ops)
{
    return ops > 0
               ? (double)(b->publish - a->publish + b->shard - a->shard) / ops
               : 0;
}

/* Bytes every node wrote per operation between two readings. */
static double bytes_per(const struct bus *a, const struct bus *b, long ops)
{
    return ops > 0 ? (double)(b->wchar - a->wchar) / ops : 0;
}

/* CPU us per operation of node owner, or (others) of all the rest. */
static double cpu_per(const th_cluster *cl, const struct bus *a,
                      const struct bus *b, int owner, int others, long ops)
{
    double sum = 0;
    int i;

    for (i = 0; i < cl->n; i++)
        if ((i == owner) != (others != 0))
            sum += b->cpu[i] - a->cpu[i];
    return ops > 0 ? sum * 1e6 / ops : 0;
}

/* n raw commands "VERB channel key", pipelined, on the slot's owner. */
static int raw_publish(redisContext *c, const char *verb, const char *channel,
                       const char *key, long n)
{
    long i;
    void *r;

    for (i = 0; i < n; i++)
        redisAppendCommand(c, "%s %s %s", verb, channel, key);
    for (i = 0; i < n; i++) {
        if (redisGetReply(c, &r) != REDIS_OK)
            return -1;
        if (((redisReply *)r)->type == REDIS_REPLY_ERROR) {
            fprintf(stderr, "bench_cluster: %s: %s\n", verb,
                    ((redisReply *)r)->str);
            freeReplyObject(r);
            return -1;
        }
        freeReplyObject(r);
    }
    return 0;
}

/* A thread that waits for a lock until cancelled, and releases it. */
struct waiter {
    const struct target *t;
    int index;
    const char *key;
    tslock_client *client;
    tslock_lock *lock;
    pthread_t thread;
    atomic_int *joined;
    int rc;
};

static void *waiter_main(void *arg)
{
    struct waiter *w = arg;

    w->rc = -1;
    if ((w->client = client_to(w->t, w->index)) == NULL
        || tslock_lock_new(&w->lock, w->client, w->key) != TSLOCK_OK)
        return NULL;
    tslock_lock_set_ttl(w->lock, 600000);
    if (w->joined != NULL)
        atomic_fetch_add(w->joined, 1);
    w->rc = tslock_acquire(w->lock, 600000);
    if (w->rc == TSLOCK_OK)
        tslock_release(w->lock);
    return NULL;
}

static void waiter_end(struct waiter *w)
{
    if (w->lock != NULL)
        tslock_lock_cancel(w->lock);
    pthread_join(w->thread, NULL);
    tslock_lock_free(w->lock);
    tslock_client_free(w->client);
    w->lock = NULL;
    w->client = NULL;
}

/* A held lock on key, by its own client; NULL on failure. */
static tslock_lock *hold(const struct target *t, const char *key,
                         tslock_client **c)
{
    tslock_lock *l = NULL;

    if ((*c = client_to(t, 0)) == NULL)
        return NULL;
    if (tslock_lock_new(&l, *c, key) != TSLOCK_OK
        || tslock_lock_set_ttl(l, 600000) != TSLOCK_OK
        || tslock_acquire(l, 0) != TSLOCK_OK) {
        fprintf(stderr, "bench_cluster: hold %s: %s\n", key,
                tslock_client_errstr(*c));
        tslock_lock_free(l);
        return NULL;
    }
    return l;
}

/* The first channel matching pattern that node i's subscribers hear. */
static int find_channel(const th_server *node, const char *pattern, char *out,
                        size_t size)
{
    redisContext *c = th_redis(node);
    int64_t give_up = th_mono_ms() + 10000;
    int found = 0;

    while (!found && th_mono_ms() < give_up) {
        redisReply *r = redisCommand(c, "PUBSUB CHANNELS %s", pattern);
        if (r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements > 0) {
            snprintf(out, size, "%s", r->element[0]->str);
            found = 1;
        }
        freeReplyObject(r);
        if (!found)
            th_sleep_us(10000);
    }
    redisFree(c);
    return found ? 0 : -1;
}

/*
 * Releases through the library: one client takes and releases a free key
 * n times (nobody in line: the release announces on the key's channel),
 * or two clients take it in turn (each release wakes the other, in line,
 * on its own channel).  Bus messages per release.
 */
static void *turns_main(void *arg)
{
    struct waiter *w = arg;
    long i;

    for (i = 0; i < n_releases / 2; i++) {
        if (tslock_acquire(w->lock, 10000) != TSLOCK_OK
            || tslock_release(w->lock) != TSLOCK_OK) {
            w->rc = -1;
            return NULL;
        }
    }
    w->rc = 0;
    return NULL;
}

struct bus_row {
    double msgs, bytes, owner_us, others_us;
    int ok;
};

/* What happened between readings a and b over ops operations on key. */
static void bus_fill(const th_cluster *cl, const char *key, const struct bus *a,
                     const struct bus *b, long ops, struct bus_row *r)
{
    int owner = th_cluster_owner(cl, key);

    r->msgs = bus_per(a, b, ops);
    r->bytes = bytes_per(a, b, ops);
    r->owner_us = cpu_per(cl, a, b, owner, 0, ops);
    r->others_us = cpu_per(cl, a, b, owner, 1, ops);
}

static void library_releases(const struct target *t, int turns,
                             struct bus_row *r)
{
    struct waiter w[2];
    struct bus a, b;
    int i, k = turns ? 2 : 1, ok = 1;

    memset(w, 0, sizeof(w));
    for (i = 0; i < k; i++) {
        w[i].t = t;
        w[i].index = i;
        if ((w[i].client = client_to(t, i)) == NULL
            || tslock_lock_new(&w[i].lock, w[i].client, "bench:bus:lib")
                   != TSLOCK_OK)
            ok = 0;
        else
            tslock_lock_set_ttl(w[i].lock, 10000);
    }
    /* Warm up: scripts loaded, subscribers open. */
    for (i = 0; ok && i < k; i++)
        ok = tslock_acquire(w[i].lock, 1000) == TSLOCK_OK
             && tslock_release(w[i].lock) == TSLOCK_OK;
    bus_read(t->cl, &a);
    for (i = 0; ok && i < k; i++)
        ok = pthread_create(&w[i].thread, NULL, turns_main, &w[i]) == 0;
    for (i = 0; i < k; i++) {
        if (w[i].thread != 0)
            pthread_join(w[i].thread, NULL);
        ok = ok && w[i].rc == 0;
    }
    bus_read(t->cl, &b);
    for (i = 0; i < k; i++) {
        tslock_lock_free(w[i].lock);
        tslock_client_free(w[i].client);
    }
    bus_fill(t->cl, "bench:bus:lib", &a, &b, k * (n_releases / 2), r);
    r->ok = ok;
}

/*
 * Whether every node sees every replica attached to its master: until
 * then a master may know no replica, and SPUBLISH would reach nobody.
 */
static int replicas_known(const th_cluster *cl, int want)
{
    int i, ok = 1;

    for (i = 0; ok && i < cl->n; i++) {
        redisContext *c = th_redis(&cl->node[i]);
        redisReply *r = redisCommand(c, "CLUSTER NODES");
        const char *p =
            r != NULL && r->type == REDIS_REPLY_STRING ? r->str : NULL;
        int n = 0;

        /* "<id> <addr> <flags> <master id or -> ...", one line a node. */
        while (p != NULL && *p != '\0') {
            char flags[128], master[64];
            if (sscanf(p, "%*s %*s %127s %63s", flags, master) == 2
                && strstr(flags, "slave") != NULL && strcmp(master, "-") != 0)
                n++;
            p = strchr(p, '\n');
            p = p != NULL ? p + 1 : NULL;
        }
        ok = n == want;
        freeReplyObject(r);
        redisFree(c);
    }
    return ok;
}

/*
 * One cluster size: the wake channel the library names (heard by a real
 * waiter's subscriber), then n PUBLISH and n SPUBLISH of it on the
 * slot's owner, then releases through the library.
 */
static void bus_print(int masters, int nodes, const char *what,
                      const struct bus_row *r)
{
    if (!r->ok)
        printf("%7d %5d  %-24s   (did not run cleanly)\n", masters, nodes,
               what);
    else
        printf("%7d %5d  %-24s %8.2f %9.0f %9.1f %9.1f\n", masters, nodes, what,
               r->msgs, r->bytes, r->owner_us, r->others_us);
    fflush(stdout);
}

static void bus_row(int masters)
{
    th_cluster cl;
    struct target t = {"cluster", NULL, &cl, -1, ""};
    struct waiter w;
    tslock_client *hc = NULL;
    tslock_lock *h;
    char channel[256];
    redisContext *raw;
    struct bus a, b, c;
    struct bus_row pub, spub, lib;
    long n_raw = 10 * n_releases;
    int64_t give_up;

    if (th_cluster_start_opts(&cl, masters, 1, NULL, 5000) != 0) {
        printf("%7d   (the cluster did not start)\n", masters);
        return;
    }
    for (give_up = th_mono_ms() + 20000;
         !replicas_known(&cl, masters) && th_mono_ms() < give_up;)
        th_sleep_us(50000);
#ifdef TSLOCK_PUBSUB_SHARDED
    t.pubsub = TSLOCK_PUBSUB_CLASSIC; /* the channel's name, by PUBSUB */
#endif
    memset(&w, 0, sizeof(w));
    w.t = &t;
    w.key = "bench:bus";
    h = hold(&t, "bench:bus", &hc);
    if (h == NULL || pthread_create(&w.thread, NULL, waiter_main, &w) != 0
        || find_channel(&cl.node[0], "*:wake:*", channel, sizeof(channel))
               != 0) {
        printf("%7d   (no waiter's wake channel heard)\n", masters);
        th_cluster_stop(&cl);
        return;
    }
    raw = raw_owner(&t, "bench:bus");
    bus_read(&cl, &a);
    pub.ok = raw_publish(raw, "PUBLISH", channel, "bench:bus", n_raw) == 0;
    bus_read(&cl, &b);
    spub.ok = raw_publish(raw, "SPUBLISH", channel, "bench:bus", n_raw) == 0;
    bus_read(&cl, &c);
    redisFree(raw);
    tslock_release(h);
    waiter_end(&w);
    tslock_lock_free(h);
    tslock_client_free(hc);
    bus_fill(&cl, "bench:bus", &a, &b, n_raw, &pub);
    bus_fill(&cl, "bench:bus", &b, &c, n_raw, &spub);
    if (masters == bus_first)
        printf("wake channel: %s\n", channel);
    bus_print(masters, cl.n, "PUBLISH (raw)", &pub);
    bus_print(masters, cl.n, "SPUBLISH (raw)", &spub);
    library_releases(&t, 0, &lib);
    bus_print(masters, cl.n, "release, nobody in line", &lib);
    library_releases(&t, 1, &lib);
    bus_print(masters, cl.n, "release, two in turn", &lib);
#ifdef TSLOCK_PUBSUB_SHARDED
    t.pubsub = TSLOCK_PUBSUB_SHARDED;
    library_releases(&t, 0, &lib);
    bus_print(masters, cl.n, "sharded, nobody in line", &lib);
    library_releases(&t, 1, &lib);
    bus_print(masters, cl.n, "sharded, two in turn", &lib);
#endif
    th_cluster_stop(&cl);
}

static void bus_table(const int *masters, int n)
{
#ifdef TSLOCK_PUBSUB_SHARDED
    const char *sharded_note = "";
#else
    const char *sharded_note = " sharded rows: none, this build has no "
                               "tslock_client_set_pubsub;";
#endif
    int i;

    printf("\n");
    print_load();
    printf("cluster bus cost per release: each master has one replica; "
           "%ld raw publishes, %ld releases through the library a row\n",
           10 * n_releases, n_releases);
    printf("masters nodes  what                         msgs     bytes  "
           "owner us others us\n");
    if (n > 0)
        bus_first = masters[0];
    for (i = 0; i < n; i++)
        bus_row(masters[i]);
    printf("raw: the wake channel a real waiter's subscriber listens on "
           "(PUBSUB CHANNELS), published on the slot's owner; release, "
           "nobody in line: one client takes and releases a free key (the "
           "release announces on the key's channel); two in turn: each "
           "release wakes the other client, waiting in line, on its own "
           "channel;%s"
           " msgs = cluster bus messages sent (CLUSTER INFO "
           "cluster_stats_messages_publish_sent + ..._publishshard_sent, "
           "summed over the nodes); bytes = what every node process wrote "
           "(/proc/PID/io wchar: the bus messages, the replies, and the "
           "bus's own heartbeats meanwhile); owner us, others us = CPU "
           "(INFO cpu) of the slot's master, and of every other node "
           "summed\n",
           sharded_note);
}

/* ------------------------------------------------------------ rates */

struct rate_shared {
    atomic_long holds;
    atomic_int failures, ready;
    volatile int go;
    double end;
    int n_keys;
    int wait_ms; /* 0: one try */
};

struct rate_worker {
    const struct target *t;
    struct rate_shared *rs;
    int index;
    pthread_t thread;
};

/*
 * One client: take a key and release it until the end, counting holds.
 * On one key the lock is kept; over many keys each acquisition makes its
 * lock and frees it after (a lock holds a cancel pipe: 64 clients could
 * not keep 1000 each), with a wait (wait_ms > 0) or one try.
 */
static tslock_lock *rate_lock(tslock_client *c, int n, unsigned *seed)
{
    tslock_lock *l = NULL;
    char key[32];

    if (n == 1)
        snprintf(key, sizeof(key), "bench:one");
    else
        snprintf(key, sizeof(key), "bench:k:%d", (int)(rand_r(seed) % n));
    if (tslock_lock_new(&l, c, key) != TSLOCK_OK)
        return NULL;
    tslock_lock_set_ttl(l, 10000);
    return l;
}

static void *rate_main(void *arg)
{
    struct rate_worker *rw = arg;
    struct rate_shared *rs = rw->rs;
    struct timespec pause = {0, 500000};
    tslock_client *c = client_to(rw->t, rw->index);
    unsigned seed = (unsigned)rw->index * 2654435761u;
    int n = rs->n_keys;
    tslock_lock *one = c != NULL && n == 1 ? rate_lock(c, 1, &seed) : NULL;

    if (c == NULL || (n == 1 && one == NULL))
        atomic_fetch_add(&rs->failures, 1);
    atomic_fetch_add(&rs->ready, 1);
    while (!rs->go)
        nanosleep(&pause, NULL);
    while (c != NULL && (n > 1 || one != NULL) && now_ms() < rs->end) {
        tslock_lock *l = n == 1 ? one : rate_lock(c, n, &seed);
        int64_t wait = rs->wait_ms != 0 ? (int64_t)(rs->end - now_ms()) + 1 : 0;
        int rc = l != NULL ? tslock_acquire(l, wait) : TSLOCK_ENOMEM;

        if (rc == TSLOCK_OK) {
            if (tslock_release(l) != TSLOCK_OK)
                atomic_fetch_add(&rs->failures, 1);
            atomic_fetch_add(&rs->holds, 1);
            if (n == 1)
                nanosleep(&pause, NULL);
        } else if (rc != TSLOCK_EBUSY) {
            atomic_fetch_add(&rs->failures, 1);
            if (l != one)
                tslock_lock_free(l);
            break;
        }
        if (l != one)
            tslock_lock_free(l);
    }
    tslock_lock_free(one);
    tslock_client_free(c);
    return NULL;
}

/* Holds per second of `clients` clients over n_keys keys on t. */
/*
 * The CPU of the node that owns the row's key (every node when the row
 * spreads over many keys) and of the others, per hold, in us: set by
 * rate_row(), printed by rate_print().
 */
static double cpu_owner_us, cpu_others_us;

static void cpu_read(const struct target *t, int owner, double *own,
                     double *others)
{
    int i;

    *own = *others = 0;
    if (t->cl == NULL) {
        *own = server_cpu(t->srv);
        return;
    }
    for (i = 0; i < t->cl->n; i++) {
        if (owner < 0 || i == owner)
            *own += server_cpu(&t->cl->node[i]);
        else
            *others += server_cpu(&t->cl->node[i]);
    }
}

static double rate_row(const struct target *t, int clients, int n_keys,
                       int wait)
{
    static struct rate_worker rw[MAX_THREADS];
    struct rate_shared rs;
    int i, started = 0;
    int owner = t->cl != NULL && n_keys == 1
                    ? th_cluster_owner(t->cl, "bench:one")
                    : -1;
    double own0, others0, own1, others1;
    long holds;

    memset(&rs, 0, sizeof(rs));
    rs.n_keys = n_keys;
    rs.wait_ms = wait;
    for (i = 0; i < clients && i < MAX_THREADS; i++) {
        rw[i].t = t;
        rw[i].rs = &rs;
        rw[i].index = i;
        if (pthread_create(&rw[i].thread, NULL, rate_main, &rw[i]) != 0)
            break;
        started++;
    }
    while (atomic_load(&rs.ready) < started)
        th_sleep_us(2000);
    cpu_read(t, owner, &own0, &others0);
    rs.end = now_ms() + row_seconds * 1000;
    rs.go = 1;
    for (i = 0; i < started; i++)
        pthread_join(rw[i].thread, NULL);
    cpu_read(t, owner, &own1, &others1);
    holds = atomic_load(&rs.holds);
    cpu_owner_us = holds > 0 ? (own1 - own0) * 1e6 / holds : 0;
    cpu_others_us =
        holds > 0 && owner >= 0 ? (others1 - others0) * 1e6 / holds : -1;
    if (started < clients || atomic_load(&rs.failures) > 0)
        return -1;
    return holds / row_seconds;
}

static void rate_print(const char *what, const struct target *t, double r,
                       double base)
{
    char label[64];

    snprintf(label, sizeof(label), "%s%s%s", t->name, t->how[0] ? " " : "",
             t->how);
    if (r < 0)
        printf("%-34s %-20s   (did not run cleanly)\n", what, label);
    else
        printf("%-34s %-20s %10.0f %7.2fx %9.1f", what, label, r,
               base > 0 ? r / base : 0, cpu_owner_us);
    if (r >= 0 && cpu_others_us >= 0)
        printf(" %9.1f\n", cpu_others_us);
    else if (r >= 0)
        printf(" %9s\n", "-");
    fflush(stdout);
}

static void rate_table(void)
{
    th_server srv;
    th_cluster cl;
    struct target single = {"single", &srv, NULL, -1, ""};
    struct target cls[2] = {{"cluster(3)", NULL, &cl, -1, ""},
                            {"cluster(3)", NULL, &cl, -1, ""}};
    int n_cls = 1, i;
    double base;

    if (th_server_start(&srv, NULL) != 0)
        return;
    if (th_cluster_start(&cl, 3) != 0) {
        th_server_stop(&srv);
        return;
    }
#ifdef TSLOCK_PUBSUB_SHARDED
    cls[0].pubsub = TSLOCK_PUBSUB_CLASSIC;
    cls[0].how = "classic";
    cls[1].pubsub = TSLOCK_PUBSUB_SHARDED;
    cls[1].how = "sharded";
    n_cls = 2;
#endif
    printf("\n");
    print_load();
    printf("rates: %g s a row, every client its own tslock client and "
           "thread, all over loopback TCP; the cluster has 3 masters and "
           "no replicas\n",
           row_seconds);
    printf("%-34s %-20s %10s %8s %9s %9s\n", "workload", "server", "per s",
           "ratio", "cpu us/op", "others");
    base = rate_row(&single, 64, 1, 1);
    rate_print("64 waiters, one key: handoffs", &single, base, base);
    for (i = 0; i < n_cls; i++)
        rate_print("64 waiters, one key: handoffs", &cls[i],
                   rate_row(&cls[i], 64, 1, 1), base);
    base = rate_row(&single, 64, 1000, 1);
    rate_print("64 clients, 1000 keys: acquires", &single, base, base);
    for (i = 0; i < n_cls; i++)
        rate_print("64 clients, 1000 keys: acquires", &cls[i],
                   rate_row(&cls[i], 64, 1000, 1), base);
    base = rate_row(&single, 64, 1000, 0);
    rate_print("  the same, one try each", &single, base, base);
    for (i = 0; i < n_cls; i++)
        rate_print("  the same, one try each", &cls[i],
                   rate_row(&cls[i], 64, 1000, 0), base);
    printf(
        "ratio = the row's rate over the single server's, in the same "
        "run; a handoff is release, wake, acquire, then 0.5 ms before "
        "asking again; an acquire takes a random key of the 1000 (spread "
        "over the slots by their names) and releases it at once, waiting "
        "for it "
        "(a wait listens: on a key other than the client's last one it "
        "moves its subscriber connection to the key's channels in one "
        "round trip where that connection serves them - a single server, "
        "classic pub/sub, the same master - and opens a new one "
        "elsewhere) or, one try each, passing on to "
        "another key when it is busy; cpu us/op = server CPU (INFO cpu, user + "
        "system) per hold: of the key's master on one key, of every "
        "master over 1000 keys; others = the other masters' CPU per "
        "hold on one key (what the bus costs them)\n");
    th_cluster_stop(&cl);
    th_server_stop(&srv);
}

/* ------------------------------------------------------------ memory */

static long long used_memory(const th_server *s)
{
    redisContext *c = th_redis(s);
    redisReply *r = redisCommand(c, "INFO memory");
    const char *p = r != NULL && r->type == REDIS_REPLY_STRING
                        ? strstr(r->str, "used_memory:")
                        : NULL;
    long long v = p != NULL ? strtoll(p + 12, NULL, 10) : -1;

    freeReplyObject(r);
    redisFree(c);
    return v;
}

static long long used_memory_all(const struct target *t)
{
    long long sum = 0;
    int i;

    if (t->cl == NULL)
        return used_memory(t->srv);
    for (i = 0; i < t->cl->n; i++)
        sum += used_memory(&t->cl->node[i]);
    return sum;
}

static long long memory_usage(const struct target *t, const char *key)
{
    redisContext *c = raw_owner(t, key);
    redisReply *r = redisCommand(c, "MEMORY USAGE %s SAMPLES 0", key);
    long long v = r != NULL && r->type == REDIS_REPLY_INTEGER ? r->integer : 0;

    freeReplyObject(r);
    redisFree(c);
    return v;
}

enum kind { K_TOKEN, K_TIMESTAMP, K_BRIDGE, K_FENCE, N_KINDS };
static const char *const kind_names[N_KINDS] = {
    "token", "timestamp (ms)", "bridge", "token + fencing counter"};

/* n held locks of kind on t, through the library; 0 or -1. */
static int fill_locks(const struct target *t, enum kind k, const char *prefix,
                      long n)
{
    tslock_client *c = client_to(t, 0);
    static const tslock_scheme schemes[N_KINDS] = {
        TSLOCK_SCHEME_TOKEN, TSLOCK_SCHEME_TIMESTAMP, TSLOCK_SCHEME_BRIDGE,
        TSLOCK_SCHEME_TOKEN};
    char key[64];
    long i;
    int rc = TSLOCK_OK;

    for (i = 0; c != NULL && rc == TSLOCK_OK && i < n; i++) {
        tslock_lock *l = NULL;
        snprintf(key, sizeof(key), "%s:%ld", prefix, i);
        rc = tslock_lock_new(&l, c, key);
        if (rc == TSLOCK_OK) {
            tslock_lock_set_scheme(l, schemes[k]);
            tslock_lock_set_ttl(l, 3600000);
            tslock_lock_set_fencing(l, k == K_FENCE);
            rc = tslock_acquire(l, 0);
        }
        if (rc != TSLOCK_OK)
            fprintf(stderr, "bench_cluster: %s: %s\n", key,
                    tslock_client_errstr(c));
        tslock_lock_free(l); /* the key stays, held */
    }
    tslock_client_free(c);
    return c != NULL && rc == TSLOCK_OK ? 0 : -1;
}

/* The keys a held lock of kind k on key leaves, by MEMORY USAGE. */
static long long sample_bytes(const struct target *t, enum kind k,
                              const char *key)
{
    char other[96];
    long long v = memory_usage(t, key);

    if (k == K_BRIDGE) {
        snprintf(other, sizeof(other), "{%s}:owner", key);
        v += memory_usage(t, other);
    } else if (k == K_FENCE) {
        snprintf(other, sizeof(other),
                 t->cl != NULL ? "{%s}:fence" : "%s:fence", key);
        v += memory_usage(t, other);
    }
    return v;
}

static void flush_all(const struct target *t)
{
    int i;

    for (i = 0; i < (t->cl != NULL ? t->cl->n : 1); i++) {
        redisContext *c = th_redis(t->cl != NULL ? &t->cl->node[i] : t->srv);
        freeReplyObject(redisCommand(c, "FLUSHALL"));
        redisFree(c);
    }
}

static void memory_kinds(const struct target *t)
{
    enum kind k;

    for (k = 0; k < N_KINDS; k++) {
        char prefix[32], first[48];
        long long before, after;
        double t0 = now_ms();

        flush_all(t);
        snprintf(prefix, sizeof(prefix), "mem:%d", (int)k);
        snprintf(first, sizeof(first), "%s:0", prefix);
        before = used_memory_all(t);
        if (fill_locks(t, k, prefix, n_locks) != 0) {
            printf("%-8s %-24s   (did not run cleanly)\n", t->name,
                   kind_names[k]);
            continue;
        }
        after = used_memory_all(t);
        printf("%-8s %-24s %10.1f %10lld %8.1f\n", t->name, kind_names[k],
               (double)(after - before) / n_locks, sample_bytes(t, k, first),
               n_locks / ((now_ms() - t0) / 1000));
        fflush(stdout);
    }
    flush_all(t);
}

/* The line's three keys beside key: their MEMORY USAGE summed. */
static long long line_bytes(const struct target *t, const char *key,
                            long *entries)
{
    static const char *const suffix[3] = {"queue", "alive", "queue-seq"};
    char name[96];
    long long sum = 0;
    int i;

    for (i = 0; i < 3; i++) {
        snprintf(name, sizeof(name), "{%s}:%s", key, suffix[i]);
        sum += memory_usage(t, name);
    }
    if (entries != NULL) {
        redisContext *c = raw_owner(t, key);
        redisReply *r = redisCommand(c, "ZCARD {%s}:queue", key);
        *entries =
            r != NULL && r->type == REDIS_REPLY_INTEGER ? r->integer : -1;
        freeReplyObject(r);
        redisFree(c);
    }
    return sum;
}

static long queue_card(const struct target *t, const char *key);
static int line_exists(const struct target *t, const char *key);

/* w real waiters in line behind a held key: the line's bytes. */
static long long line_of(const struct target *t, const char *key, int w)
{
    static struct waiter ws[MAX_THREADS];
    tslock_client *hc = NULL;
    tslock_lock *h = hold(t, key, &hc);
    int64_t give_up = th_mono_ms() + 30000;
    long entries = 0;
    long long bytes = -1;
    int i;

    for (i = 0; h != NULL && i < w; i++) {
        memset(&ws[i], 0, sizeof(ws[i]));
        ws[i].t = t;
        ws[i].index = i;
        ws[i].key = key;
        pthread_create(&ws[i].thread, NULL, waiter_main, &ws[i]);
    }
    while (h != NULL && th_mono_ms() < give_up
           && (queue_card(t, key) < w || line_exists(t, key) < 3))
        th_sleep_us(20000);
    if (h != NULL && queue_card(t, key) >= w)
        bytes = line_bytes(t, key, &entries);
    for (i = 0; h != NULL && i < w; i++)
        waiter_end(&ws[i]);
    if (h != NULL)
        tslock_release(h);
    tslock_lock_free(h);
    tslock_client_free(hc);
    return bytes;
}

static void memory_line(const struct target *t)
{
    static const int sizes[] = {1, 64, 128, 256};
    long long first = 0;
    size_t i;

    for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        char key[32];
        long long b;

        snprintf(key, sizeof(key), "mem:line:%d", sizes[i]);
        b = line_of(t, key, sizes[i]);
        if (i == 0)
            first = b;
        if (b < 0)
            printf("%-8s line of %-16d   (did not run cleanly)\n", t->name,
                   sizes[i]);
        else if (i == 0)
            printf("%-8s line of %-16d %10s %10lld  (the line's three keys)\n",
                   t->name, sizes[i], "", b);
        else
            printf("%-8s line of %-16d %10.1f %10lld  (per waiter past the "
                   "first)\n",
                   t->name, sizes[i], (double)(b - first) / (sizes[i] - 1), b);
        fflush(stdout);
    }
}

static void memory_table(void)
{
    th_server srv;
    th_cluster cl;
    struct target single = {"single", &srv, NULL, -1, ""};
    struct target cluster = {"cluster", NULL, &cl, -1, ""};

    printf("\n");
    print_load();
    printf("bytes per lock: %ld held locks of each kind through the "
           "library, 1 h lease; INFO memory used_memory delta / locks "
           "(summed over the masters on the cluster), and MEMORY USAGE "
           "(SAMPLES 0) of one lock's keys\n",
           n_locks);
    printf("%-8s %-24s %10s %10s %8s\n", "server", "kind", "B/lock",
           "MEM USAGE", "locks/s");
    if (th_server_start(&srv, NULL) != 0)
        return;
    memory_kinds(&single);
    if (th_cluster_start(&cl, 3) == 0) {
        memory_kinds(&cluster);
    }
    printf("a line of real waiters behind one held key (the queue, the "
           "liveness set, the arrival counter): MEMORY USAGE of the three "
           "keys, and per waiter past the first\n");
    memory_line(&single);
    if (cl.n > 0)
        memory_line(&cluster);
    if (cl.n > 0)
        th_cluster_stop(&cl);
    th_server_stop(&srv);
}

/* ------------------------------------------------------------ crashes */

/*
 * A process of k waiters on key, each a thread with its own client, that
 * the parent kills (SIGKILL) once their entries are in line.
 */
static void crash_process(const struct target *t, const char *key, int k)
{
    static struct waiter ws[CRASH_BATCH];
    int i;

    for (i = 0; i < k; i++) {
        ws[i].t = t;
        ws[i].index = i;
        ws[i].key = key;
        pthread_create(&ws[i].thread, NULL, waiter_main, &ws[i]);
    }
    for (;;)
        pause();
}

static long queue_card(const struct target *t, const char *key)
{
    long entries = -1;

    (void)line_bytes(t, key, &entries);
    return entries;
}

/* n waiters joined and killed, CRASH_BATCH at a time; 0 or -1. */
static int crash_waiters(const struct target *t, const char *key, long n)
{
    long done = 0, base = queue_card(t, key);

    while (done < n) {
        int k = n - done < CRASH_BATCH ? (int)(n - done) : CRASH_BATCH;
        int64_t give_up = th_mono_ms() + 60000;
        pid_t pid;

        fflush(stdout);
        if ((pid = fork()) == 0)
            crash_process(t, key, k);
        if (pid < 0)
            return -1;
        while (queue_card(t, key) < base + done + k && th_mono_ms() < give_up)
            th_sleep_us(20000);
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        if (th_mono_ms() >= give_up) {
            fprintf(stderr, "bench_cluster: waiters did not join in 60 s\n");
            return -1;
        }
        done += k;
    }
    return 0;
}

static int line_exists(const struct target *t, const char *key)
{
    redisContext *c = raw_owner(t, key);
    redisReply *r = redisCommand(c,
                                 "EXISTS {%s}:queue {%s}:alive "
                                 "{%s}:queue-seq",
                                 key, key, key);
    int n = r != NULL && r->type == REDIS_REPLY_INTEGER ? (int)r->integer : -1;

    freeReplyObject(r);
    redisFree(c);
    return n;
}

/* Two clients take key in turn until the line is down to them. */
static void *pair_main(void *arg)
{
    struct waiter *w = arg;

    while (w->rc == 0) {
        if (tslock_acquire(w->lock, 10000) != TSLOCK_OK
            || tslock_release(w->lock) != TSLOCK_OK)
            w->rc = -1;
        else
            w->index++;
    }
    return NULL;
}

/*
 * After the crash, either nobody comes back (the line's keys expire by
 * their TTL), or two live clients keep taking the key in turn (their
 * releases drop the dead): the time until the line is gone, or down to
 * the two, and the releases it took.
 */
static void crash_cleanup(const struct target *t, const char *key, int busy,
                          tslock_lock *h)
{
    struct waiter w[2];
    double t0 = now_ms(), end = t0 + 120000;
    long releases = 0;
    int i, gone = 0;

    memset(w, 0, sizeof(w));
    tslock_release(h);
    for (i = 0; busy && i < 2; i++) {
        w[i].t = t;
        if ((w[i].client = client_to(t, i)) != NULL
            && tslock_lock_new(&w[i].lock, w[i].client, key) == TSLOCK_OK) {
            tslock_lock_set_ttl(w[i].lock, 10000);
            pthread_create(&w[i].thread, NULL, pair_main, &w[i]);
        }
    }
    while (!gone && now_ms() < end) {
        gone = busy ? queue_card(t, key) <= 2 : line_exists(t, key) == 0;
        if (!gone)
            th_sleep_us(10000);
    }
    for (i = 0; busy && i < 2; i++) {
        if (w[i].rc == 0)
            w[i].rc = 1;
        pthread_join(w[i].thread, NULL);
        releases += w[i].index;
        tslock_lock_free(w[i].lock);
        tslock_client_free(w[i].client);
    }
    if (gone)
        printf("  %s: gone in %.2f s%s",
               busy ? "two live clients in turn" : "nobody comes back",
               (now_ms() - t0) / 1000, busy ? "" : "\n");
    else
        printf("  %s: NOT gone in 120 s\n", busy ? "busy" : "idle");
    if (gone && busy)
        printf(", %ld releases (%.1f dead entries dropped a release)\n",
               releases, releases > 0 ? (double)n_crash / releases : 0);
    fflush(stdout);
}

static void crash_on(const struct target *t, int busy)
{
    const char *key = busy ? "crash:busy" : "crash:idle";
    tslock_client *hc = NULL;
    tslock_lock *h = hold(t, key, &hc);
    redisContext *c;
    redisReply *r;
    long entries = 0;
    long long bytes, ttl = -1;
    double t0 = now_ms();

    if (h == NULL || crash_waiters(t, key, n_crash) != 0) {
        printf("%-8s (the crash did not run)\n", t->name);
        tslock_lock_free(h);
        tslock_client_free(hc);
        return;
    }
    bytes = line_bytes(t, key, &entries);
    c = raw_owner(t, key);
    r = redisCommand(c, "PTTL {%s}:queue", key);
    if (r != NULL && r->type == REDIS_REPLY_INTEGER)
        ttl = r->integer;
    freeReplyObject(r);
    redisFree(c);
    printf("%-8s %ld waiters killed mid-wait in %.1f s: %ld entries left, "
           "3 keys, %lld bytes (%.1f a dead waiter), PTTL %lld ms\n",
           t->name, n_crash, (now_ms() - t0) / 1000, entries, bytes,
           entries > 0 ? (double)bytes / entries : 0, ttl);
    crash_cleanup(t, key, busy, h);
    tslock_lock_free(h);
    tslock_client_free(hc);
}

static void crash_table(void)
{
    th_server srv;
    th_cluster cl;
    struct target single = {"single", &srv, NULL, -1, ""};
    struct target cluster = {"cluster", NULL, &cl, -1, ""};

    printf("\n");
    print_load();
    printf("crashes: %ld waiters join the line of one held key, in "
           "processes of %d threads (one tslock client each), each process "
           "SIGKILLed once its waiters are in line; then the holder "
           "releases, and either nobody comes back or two live clients take "
           "the key in turn\n",
           n_crash, CRASH_BATCH);
    if (th_server_start(&srv, "maxclients 20000\n") != 0)
        return;
    crash_on(&single, 0);
    crash_on(&single, 1);
    th_server_stop(&srv);
    if (th_cluster_start(&cl, 3) != 0)
        return;
    crash_on(&cluster, 0);
    crash_on(&cluster, 1);
    th_cluster_stop(&cl);
}

/* ------------------------------------------------------------ main */

static void raise_fd_limit(void)
{
    struct rlimit rl;

    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
}

static int parse_list(const char *text, int *out, int max)
{
    int n = 0;
    char *end;

    while (n < max && *text != '\0') {
        long v = strtol(text, &end, 10);
        if (end == text) {
            text++;
            continue;
        }
        if (v >= 3 && v <= MAX_MASTERS)
            out[n++] = (int)v;
        text = end;
    }
    return n;
}

static long env_long(const char *name, long dflt)
{
    const char *v = getenv(name);

    return v != NULL && atol(v) > 0 ? atol(v) : dflt;
}

int main(void)
{
    int masters[8], n_masters;
    const char *env;

    n_masters = parse_list(
        (env = getenv("TSLOCK_BENCH_MASTERS")) != NULL ? env : "3 5 7", masters,
        8);
    n_releases = env_long("TSLOCK_BENCH_RELEASES", n_releases);
    n_locks = env_long("TSLOCK_BENCH_LOCKS", n_locks);
    n_crash = env_long("TSLOCK_BENCH_CRASH_WAITERS", n_crash);
    if ((env = getenv("TSLOCK_BENCH_CLUSTER_SECONDS")) != NULL && atof(env) > 0)
        row_seconds = atof(env);
    if ((env = getenv("TSLOCK_BENCH_PARTS")) != NULL && *env != '\0')
        parts = env;
    raise_fd_limit();
    signal(SIGPIPE, SIG_IGN);
    if (part("bus"))
        bus_table(masters, n_masters);
    if (part("rate"))
        rate_table();
    if (part("memory"))
        memory_table();
    if (part("crash"))
        crash_table();
    return 0;
}

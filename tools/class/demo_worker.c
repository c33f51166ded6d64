/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * demo_worker.c - one worker of the race demonstration: take the lock
 * with one of six schemes, run a critical section that checks for a
 * second holder, sometimes pause past the lease there, and release.
 *
 * The first two schemes are broken, from the articles, and written here
 * as the articles write them over plain hiredis.  The next two are
 * libtslock's.  The fifth is a fleet mid-migration: even workers run
 * the Java RedisLock, odd ones libtslock's bridge scheme, on one key.
 * The sixth is the token scheme with fencing numbers, guarding a
 * resource in shared memory that refuses a write with an older fence.
 * Every count goes to shared memory as it happens.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "hiredis_compat.h"

#include "cli.h"
#include "demo.h"

enum { BUSY = 0, HELD = 1, FAILED = -1, EXPIRED = 2 };

struct worker {
    const struct demo_config *cfg;
    struct demo_shared *sh;
    enum demo_scheme scheme;       /* DEMO_MIGRATION: this worker is tslock's */
    enum demo_scheme round_scheme; /* the row this worker counts in */
    int index;
    uint64_t rng;
    redisContext *redis;   /* the broken schemes */
    tslock_client *client; /* the libtslock schemes */
    tslock_lock *lock;
    char value[32];     /* the broken schemes: the stamp we wrote */
    int64_t expires_ms; /* our lease end, wall-clock Unix ms */
};

/* Spread, not secrecy: xorshift64* seeded per process. */
static uint64_t next_random(struct worker *w)
{
    w->rng ^= w->rng >> 12;
    w->rng ^= w->rng << 25;
    w->rng ^= w->rng >> 27;
    return w->rng * UINT64_C(2685821657736338717);
}

static void sleep_ms(int64_t ms)
{
    struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000};

    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* ------------------------------------ the broken schemes, over hiredis */

static redisReply *command(struct worker *w, const char *fmt, const char *arg)
{
    redisReply *r = redisCommand(w->redis, fmt, DEMO_KEY, arg);

    if (r == NULL || r->type == REDIS_REPLY_ERROR) {
        fprintf(stderr, "tslock demo: worker %d: %s\n", w->index,
                r == NULL ? w->redis->errstr : r->str);
        freeReplyObject(r);
        return NULL;
    }
    return r;
}

/* Java: Long.parseLong(value) < System.currentTimeMillis(). */
static int stamp_expired(const char *value)
{
    return strtoll(value, NULL, 10) < cli_wall_ms();
}

/* A new stamp, "now + ttl + 1" in ms, as the articles write it. */
static void new_stamp(struct worker *w)
{
    w->expires_ms = cli_wall_ms() + w->cfg->ttl_ms + 1;
    snprintf(w->value, sizeof(w->value), "%" PRId64, w->expires_ms);
}

static int setnx_stamp(struct worker *w)
{
    redisReply *r;
    int won;

    new_stamp(w);
    r = command(w, "SETNX %s %s", w->value);
    if (r == NULL)
        return FAILED;
    won = r->type == REDIS_REPLY_INTEGER && r->integer == 1;
    freeReplyObject(r);
    return won ? HELD : BUSY;
}

/* GET into buf; 0 when the key is absent. */
static int get_value(struct worker *w, char *buf, size_t size)
{
    redisReply *r = command(w, "GET %s", NULL);
    int found;

    if (r == NULL)
        return FAILED;
    found = r->type == REDIS_REPLY_STRING;
    if (found)
        snprintf(buf, size, "%s", r->str);
    freeReplyObject(r);
    return found;
}

/*
 * The scheme's DEL, sent inside MULTI with a GET so the demo learns what
 * it removed.  To the lock this is the same single DEL.  A value other
 * than `meant` (our stamp, or the expired one we read) belonged to
 * another holder.
 */
static int del_counting(struct worker *w, const char *meant)
{
    redisReply *r;
    int rc = FAILED;

    redisAppendCommand(w->redis, "MULTI");
    redisAppendCommand(w->redis, "GET %s", DEMO_KEY);
    redisAppendCommand(w->redis, "DEL %s", DEMO_KEY);
    redisAppendCommand(w->redis, "EXEC");
    for (int i = 0; i < 4; i++) {
        void *reply = NULL;
        if (redisGetReply(w->redis, &reply) != REDIS_OK)
            return FAILED;
        r = reply;
        if (i == 3 && r->type == REDIS_REPLY_ARRAY && r->elements == 2) {
            redisReply *got = r->element[0];
            if (got->type == REDIS_REPLY_STRING && strcmp(got->str, meant))
                atomic_fetch_add(&w->sh->foreign_deletes, 1);
            rc = HELD;
        }
        freeReplyObject(r);
    }
    return rc;
}

/*
 * The opening both broken schemes share: SETNX our stamp; on a busy lock
 * GET it.  HELD, BUSY (held, or gone meanwhile), FAILED, or EXPIRED with
 * the expired stamp in seen.
 */
static int setnx_or_see_expired(struct worker *w, char *seen, size_t size)
{
    int rc = setnx_stamp(w);

    if (rc != BUSY)
        return rc;
    rc = get_value(w, seen, size);
    if (rc != 1)
        return rc == FAILED ? FAILED : BUSY;
    return stamp_expired(seen) ? EXPIRED : BUSY;
}

/*
 * (1) The recovery the SETNX article shows and rejects: on a busy lock,
 * GET; if the stamp is expired, DEL it and SETNX again.  Two clients
 * that both saw it expired both DEL, and the second deletes the lock
 * the first has just taken.
 */
static int naive_try(struct worker *w)
{
    char seen[64];
    int rc = setnx_or_see_expired(w, seen, sizeof(seen));

    if (rc != EXPIRED)
        return rc;
    if (del_counting(w, seen) == FAILED)
        return FAILED;
    return setnx_stamp(w);
}

/* (1) release: DEL, whatever the key holds by now. */
static int naive_release(struct worker *w)
{
    return del_counting(w, w->value);
}

/*
 * (2) The articles' Java RedisLock: SETNX "now + ttl + 1"; on a busy
 * lock GET, and if expired GETSET a new stamp, holding it when GETSET
 * returned the value read.  The loser of a GETSET race has overwritten
 * the winner's stamp all the same.
 */
static int java_try(struct worker *w)
{
    char seen[64];
    redisReply *r;
    int rc = setnx_or_see_expired(w, seen, sizeof(seen));

    if (rc != EXPIRED)
        return rc;
    new_stamp(w);
    r = command(w, "GETSET %s %s", w->value);
    if (r == NULL)
        return FAILED;
    rc = r->type == REDIS_REPLY_STRING && strcmp(r->str, seen) == 0 ? HELD
                                                                    : BUSY;
    freeReplyObject(r);
    return rc;
}

/*
 * (2) release (unlock0): GET, and DEL if the current value is not
 * expired, without asking whose it is.  A holder paused past its lease
 * deletes the lock of the one who took over.
 */
static int java_release(struct worker *w)
{
    char seen[64];
    int rc = get_value(w, seen, sizeof(seen));

    if (rc != 1 || stamp_expired(seen))
        return rc == FAILED ? FAILED : HELD;
    return del_counting(w, w->value);
}

/* ------------------------------------------- the libtslock schemes */

static int tslock_try(struct worker *w, int64_t wait_ms)
{
    int rc = tslock_acquire(w->lock, wait_ms);

    if (rc == TSLOCK_OK) {
        w->expires_ms = tslock_lock_expires_ms(w->lock);
        return HELD;
    }
    if (rc == TSLOCK_EBUSY)
        return BUSY;
    fprintf(stderr, "tslock demo: worker %d: acquire: %s (%s)\n", w->index,
            tslock_errname(rc), tslock_client_errstr(w->client));
    return FAILED;
}

/* Release deletes only our own value; TSLOCK_ELOST deletes nothing. */
static int tslock_give_back(struct worker *w)
{
    int rc = tslock_release(w->lock);

    if (rc == TSLOCK_ELOST)
        atomic_fetch_add(&w->sh->lost, 1);
    else if (rc != TSLOCK_OK) {
        fprintf(stderr, "tslock demo: worker %d: release: %s (%s)\n", w->index,
                tslock_errname(rc), tslock_client_errstr(w->client));
        return FAILED;
    }
    return HELD;
}

/* ------------------------------------------ the fenced resource */

#define FENCE_OF(word) ((int64_t)((word) >> 32))
#define VALUE_OF(word) ((uint32_t)(word))
#define PACK(fence, value)                                                     \
    (((unsigned long long)(uint32_t)(fence) << 32) | (uint32_t)(value))

/*
 * Scheme 6's read, at the start of the critical section: the resource
 * learns our fence (so any older holder is refused from now on) and
 * hands back its value.  -1 when a newer fence was seen already.
 */
static int64_t fenced_read(struct worker *w, int64_t fence)
{
    unsigned long long old = atomic_load(&w->sh->resource);

    do {
        if (FENCE_OF(old) > fence)
            return -1;
    } while (!atomic_compare_exchange_weak(&w->sh->resource, &old,
                                           PACK(fence, VALUE_OF(old))));
    return VALUE_OF(old);
}

/*
 * The write of read + 1, accepted only while no newer fence has been
 * seen.  An accepted write that finds another value than it read has
 * lost an update: the damage fencing exists to prevent.  1 accepted,
 * 0 refused.
 */
static int fenced_write(struct worker *w, int64_t fence, int64_t read)
{
    unsigned long long old = atomic_load(&w->sh->resource);

    do {
        if (FENCE_OF(old) > fence) {
            atomic_fetch_add(&w->sh->writes_refused, 1);
            return 0;
        }
    } while (!atomic_compare_exchange_weak(&w->sh->resource, &old,
                                           PACK(fence, read + 1)));
    atomic_fetch_add(&w->sh->writes_accepted, 1);
    if (VALUE_OF(old) != (uint32_t)read)
        atomic_fetch_add(&w->sh->damage, 1);
    return 1;
}

/* Scheme 6: read, work (maybe pausing past the lease), write. */
static int fenced_work(struct worker *w, int64_t work)
{
    int64_t fence = tslock_lock_fence(w->lock);
    int64_t read = fenced_read(w, fence);

    sleep_ms(work);
    if (read < 0) {
        atomic_fetch_add(&w->sh->writes_refused, 1);
        return DEMO_EV_REFUSED;
    }
    return fenced_write(w, fence, read) ? 0 : DEMO_EV_REFUSED;
}

/* ------------------------------------------------------ the worker */

/* Take the lock before end (monotonic ms): HELD, BUSY at the end, FAILED. */
static int take(struct worker *w, int64_t end)
{
    int64_t left;
    int rc;

    while ((left = end - cli_mono_ms()) > 0) {
        if (w->scheme != DEMO_NAIVE && w->scheme != DEMO_JAVA)
            return tslock_try(w, left);
        rc = w->scheme == DEMO_NAIVE ? naive_try(w) : java_try(w);
        if (rc != BUSY)
            return rc;
        sleep_ms(1 + (int64_t)(next_random(w) % 5));
    }
    return BUSY;
}

static int give_back(struct worker *w)
{
    switch (w->scheme) {
    case DEMO_NAIVE:
        return naive_release(w);
    case DEMO_JAVA:
        return java_release(w);
    default:
        return tslock_give_back(w);
    }
}

/* Another worker inside with its lease still running at `now`. */
static int other_holder_in_lease(struct worker *w, int64_t now)
{
    int j;

    for (j = 0; j < w->cfg->workers; j++) {
        struct demo_slot *s = &w->sh->slot[j];
        if (j != w->index && atomic_load(&s->inside)
            && now <= atomic_load(&s->expires_ms))
            return 1;
    }
    return 0;
}

/*
 * The check.  An overlap is two holders inside at once with both leases
 * running; a holder still inside after its own lease ended is counted
 * apart, as work past the lease: no lock can prevent that, only fencing
 * can make the resource refuse it.
 */
static int critical_section(struct worker *w)
{
    struct demo_slot *me = &w->sh->slot[w->index];
    int64_t now, work;
    int flags = 0;

    atomic_store(&me->expires_ms, w->expires_ms);
    atomic_store(&me->inside, 1);
    now = cli_wall_ms();
    if (now <= w->expires_ms && other_holder_in_lease(w, now)) {
        atomic_fetch_add(&w->sh->overlaps, 1);
        flags |= DEMO_EV_OVERLAP;
    }
    if (next_random(w) % (uint64_t)w->cfg->pause_one_in == 0)
        work = w->cfg->ttl_ms * 3 / 2; /* a GC pause, a stopped VM */
    else
        work = 1 + (int64_t)(next_random(w) % 3);
    if (w->scheme == DEMO_FENCING)
        flags |= fenced_work(w, work);
    else
        sleep_ms(work);
    if (cli_wall_ms() > w->expires_ms) {
        atomic_fetch_add(&w->sh->past_lease, 1);
        flags |= DEMO_EV_PAST_LEASE;
    }
    atomic_store(&me->inside, 0);
    return flags;
}

/*
 * Keep one hold for the timeline.  Only this worker writes its lane, and
 * the parent reads it after the worker has exited, so no atomics.
 */
static void record_hold(struct worker *w, int64_t start, int flags)
{
    struct demo_lane *lane;
    struct demo_event *ev;

    if (w->cfg->timeline == NULL)
        return;
    lane = &w->cfg->timeline->lane[w->round_scheme][w->index];
    if (lane->n == DEMO_MAX_EVENTS) {
        lane->dropped++;
        return;
    }
    ev = &lane->ev[lane->n++];
    ev->start_ms = (int32_t)(start - w->sh->start_mono_ms);
    ev->end_ms = (int32_t)(cli_mono_ms() - w->sh->start_mono_ms);
    ev->flags = flags;
}

static int connect_worker(struct worker *w)
{
    int rc;

    if (w->scheme == DEMO_NAIVE || w->scheme == DEMO_JAVA) {
        w->redis = redisConnectUnix(w->cfg->socket);
        return w->redis != NULL && !w->redis->err ? 0 : -1;
    }
    rc = tslock_client_new(&w->client);
    if (rc == TSLOCK_OK)
        rc = tslock_client_connect_unix(w->client, w->cfg->socket);
    if (rc == TSLOCK_OK)
        rc = tslock_lock_new(&w->lock, w->client, DEMO_KEY);
    if (rc == TSLOCK_OK)
        rc = tslock_lock_set_scheme(
            w->lock, w->scheme == DEMO_TOKEN || w->scheme == DEMO_FENCING
                         ? TSLOCK_SCHEME_TOKEN
                     : w->scheme == DEMO_MIGRATION ? TSLOCK_SCHEME_BRIDGE
                                                   : TSLOCK_SCHEME_TIMESTAMP);
    if (rc == TSLOCK_OK && w->scheme == DEMO_FENCING)
        rc = tslock_lock_set_fencing(w->lock, 1);
    if (rc == TSLOCK_OK)
        rc = tslock_lock_set_ttl(w->lock, w->cfg->ttl_ms);
    if (rc == TSLOCK_OK)
        rc = tslock_lock_set_retry(w->lock, 1, 5);
    return rc == TSLOCK_OK ? 0 : -1;
}

int demo_worker(const struct demo_config *cfg, enum demo_scheme scheme,
                int index, struct demo_shared *sh)
{
    struct worker w;
    int64_t end = cli_mono_ms() + cfg->duration_ms;
    int status = 0, rc = BUSY;

    memset(&w, 0, sizeof(w));
    w.cfg = cfg;
    w.sh = sh;
    /* Mid-migration: even workers are the Java clients still running. */
    w.scheme = scheme == DEMO_MIGRATION && index % 2 == 0 ? DEMO_JAVA : scheme;
    w.round_scheme = scheme;
    w.index = index;
    w.rng = ((uint64_t)getpid() << 32) ^ (uint64_t)cli_mono_ms()
            ^ (UINT64_C(0x9e3779b97f4a7c15) * (uint64_t)(index + 1));
    if (connect_worker(&w) != 0) {
        fprintf(stderr, "tslock demo: worker %d cannot connect to %s\n", index,
                cfg->socket);
        status = 2;
    }
    while (status == 0 && (rc = take(&w, end)) == HELD) {
        int64_t start = cli_mono_ms();
        int flags;
        atomic_fetch_add(&sh->holds, 1);
        flags = critical_section(&w);
        if (give_back(&w) == FAILED)
            status = 2;
        record_hold(&w, start, flags);
    }
    if (status == 0 && rc == FAILED)
        status = 2;
    if (status != 0)
        atomic_fetch_add(&sh->errors, 1);
    tslock_lock_free(w.lock);
    tslock_client_free(w.client);
    if (w.redis != NULL)
        redisFree(w.redis);
    return status;
}

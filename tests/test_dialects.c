/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_dialects.c - tslock beside a peer of every dialect preset on one
 * key: the lock libraries fleets run (redis-objects, redis-mutex, the
 * redis-lock gem, resque-lock-timeout, ninja-mutex, PredisLock, npm
 * redis-lock) and the articles' three.  Each peer is written here, in C
 * over hiredis, from its library's documented algorithm: how it writes
 * its value, how it reads another's (Ruby's to_i and to_f, PHP's
 * unserialize, JavaScript's Number), whether it reads an empty GET as
 * expired, and how it releases.  Their flaws are kept.
 *
 * For every preset, on Redis 7.0 and through the proxy as 2.0, 2.2 and
 * 2.6.0, in the bridge and timestamp schemes:
 *   - tslock takes over a crashed peer's value, not before the peer's
 *     lease ends and within it plus a bound (the dialect's +1 and whole
 *     second), and the peer takes over a crashed tslock's value in the
 *     same bound; ordered by a test clock both sides read;
 *   - the value each side writes is named by tslock_dialect_match() as
 *     the preset's (what survey, top and the exporter show);
 *   - one tslock process and one peer process contend for the key in
 *     real time: no two are ever inside at once.
 * A broken control, a redis-lock gem peer that reads the owner suffix as
 * part of the number, goes through the same takeover check and fails it.
 */
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "harness.h"

static th_server srv;

/* ------------------------------------------------------------ peers */

enum peer_unit { P_MS, P_S, P_FLOAT };
enum peer_form { F_PLAIN, F_GEM, F_PREDIS, F_NINJA };

struct peer_kind {
    const char *preset;
    enum peer_unit unit;
    int plus_one;        /* writes its expiry one unit late, by convention */
    enum peer_form form; /* what surrounds the number */
    int blind_empty;     /* reads an empty GET as 0, that is expired */
    int compare_release; /* deletes only its own exact string */
    int stale_stamp;     /* computes its stamp once, before it retries */
    int float_digits;    /* repr()'s and Float#to_s's digits */
};

static const struct peer_kind kinds[] = {
    /* Java RedisLock of the articles: Long.parseLong, ms +1. */
    {"java-redislock", P_MS, 1, F_PLAIN, 0, 0, 0, 0},
    /* The Redis docs' SETNX pattern: whole seconds +1. */
    {"redis-docs", P_S, 1, F_PLAIN, 0, 0, 0, 0},
    /* redis-py 2.x: float(time.time() + timeout), repr()'s digits. */
    {"redis-py2", P_FLOAT, 0, F_PLAIN, 0, 0, 0, 6},
    /*
     * redis-objects Redis::Lock <= 1.4.1: (Time.now + expiration + 1)
     * .to_f, redis.get(key).to_f (nil.to_f is 0.0), GETSET takeover.
     */
    {"redis-objects", P_FLOAT, 1, F_PLAIN, 1, 0, 0, 7},
    /* redis-mutex: Time.now.to_f + expire; unlock only its own string. */
    {"redis-mutex", P_FLOAT, 0, F_PLAIN, 0, 1, 0, 7},
    /*
     * The redis-lock gem: "#{Time.now.to_i + timeout + 1}-#{pid}-#{tid}",
     * read back with to_i; its stamp is made once, before the retries.
     */
    {"redis-lock-gem", P_S, 1, F_GEM, 1, 0, 1, 0},
    /* resque-lock-timeout: now.to_i + timeout, no +1; to_i. */
    {"resque-lock-timeout", P_S, 0, F_PLAIN, 0, 0, 0, 0},
    /*
     * ninja-mutex with an expiration: serialize(array(pid, hostname,
     * expires => time() + expiration)); unserialize() fails on anything
     * else, and such a lock is never taken over.
     */
    {"ninja-mutex", P_S, 0, F_NINJA, 0, 0, 0, 0},
    /* PredisLock: (time() + timeout + 1) . ':' . getmypid(); (int) cast. */
    {"predislock", P_S, 1, F_PREDIS, 1, 0, 0, 0},
    /* npm redis-lock 0.0.x: Date.now() + timeout + 1; Number(value). */
    {"node-redis-lock", P_MS, 1, F_PLAIN, 0, 0, 0, 0},
};
#define N_KINDS (sizeof(kinds) / sizeof(kinds[0]))

struct peer {
    const struct peer_kind *k;
    redisContext *c;
    const th_clock *clk; /* NULL: the real clock */
    const char *key;
    int64_t timeout_ms;
    int broken; /* the control: reads "S-P-T" as the number SPT */
    char value[256];
    int64_t lease_end_us;
};

static int64_t peer_now_us(const struct peer *p)
{
    return p->clk != NULL ? p->clk->wall_ms * 1000 : th_wall_us();
}

/* The value the library writes for a lease of timeout from now. */
static void peer_write(const struct peer *p, int64_t now_us, char *buf,
                       size_t size)
{
    int64_t s = now_us / 1000000 + (p->timeout_ms + 999) / 1000
                + (p->k->plus_one ? 1 : 0);
    int pid = (int)getpid();

    switch (p->k->unit) {
    case P_MS:
        snprintf(buf, size, "%" PRId64,
                 now_us / 1000 + p->timeout_ms + (p->k->plus_one ? 1 : 0));
        return;
    case P_FLOAT:
        snprintf(buf, size, "%.*f", p->k->float_digits,
                 (double)now_us / 1e6 + (double)p->timeout_ms / 1e3
                     + (p->k->plus_one ? 1.0 : 0.0));
        return;
    default:
        break;
    }
    switch (p->k->form) {
    case F_GEM:
        snprintf(buf, size, "%" PRId64 "-%d-%d", s, pid, 47040 + pid % 100);
        break;
    case F_PREDIS:
        snprintf(buf, size, "%" PRId64 ":%d", s, pid);
        break;
    case F_NINJA:
        snprintf(buf, size,
                 "a:3:{s:3:\"pid\";i:%d;s:8:\"hostname\";s:4:\"peer\";"
                 "s:7:\"expires\";i:%" PRId64 ";}",
                 pid, s);
        break;
    default:
        snprintf(buf, size, "%" PRId64, s);
    }
}

/* Ruby's String#to_i and PHP's (int): the leading digits, else 0. */
static int64_t leading_int(const char *v)
{
    int64_t n = 0;

    for (; *v >= '0' && *v <= '9'; v++)
        n = n * 10 + (*v - '0');
    return n;
}

/*
 * When the library calls value v expired, in Unix us: it is expired once
 * the clock is past that.  0 when it reads v as expired at once (an
 * empty value in the blind libraries), -1 when it cannot read it (never
 * taken over).
 */
static int64_t peer_expiry_us(const struct peer *p, const char *v)
{
    const char *e;
    char *end;
    double f;

    if (v == NULL)
        return p->k->blind_empty ? 0 : -1;
    if (p->broken) { /* "S-P-T" read as the one number SPT */
        int64_t n = 0;
        for (; *v != '\0'; v++)
            if (*v >= '0' && *v <= '9')
                n = n < INT64_MAX / 100 ? n * 10 + (*v - '0') : n;
        return n < INT64_MAX / 1000000 ? n * 1000000 + 999999 : INT64_MAX;
    }
    switch (p->k->unit) {
    case P_MS: /* Number(v) and Long.parseLong(v): all of it, or nothing */
        f = strtod(v, &end);
        if (*v == '\0' || *end != '\0')
            return -1;
        return (int64_t)f * 1000 + 999;
    case P_FLOAT: /* to_f: the leading number, else 0.0 */
        return (int64_t)(strtod(v, NULL) * 1e6);
    default:
        break;
    }
    if (p->k->form == F_NINJA) { /* unserialize(): an array or nothing */
        if (strncmp(v, "a:", 2) != 0
            || (e = strstr(v, "s:7:\"expires\";i:")) == NULL)
            return -1;
        return (leading_int(e + 16) + 1) * 1000000 - 1;
    }
    /* time() > S and now.to_i > S: a stamp S holds through second S. */
    return (leading_int(v) + 1) * 1000000 - 1;
}

static redisReply *cmd(struct peer *p, const char *fmt, const char *a,
                       const char *b)
{
    redisReply *r =
        b != NULL ? redisCommand(p->c, fmt, a, b) : redisCommand(p->c, fmt, a);
    if (r == NULL || r->type == REDIS_REPLY_ERROR) {
        fprintf(stderr, "peer %s: %s failed: %s\n", p->k->preset, fmt,
                r != NULL ? r->str : p->c->errstr);
        exit(3);
    }
    return r;
}

/* One try of the library's lock(): 1 held, 0 not. */
static int peer_try(struct peer *p, const char *stamp)
{
    int64_t now = peer_now_us(p), exp;
    redisReply *r;
    char mine[256];
    int won;

    if (stamp == NULL) {
        peer_write(p, now, mine, sizeof(mine));
        stamp = mine;
    }
    r = cmd(p, "SETNX %s %s", p->key, stamp);
    won = r->integer == 1;
    freeReplyObject(r);
    if (!won) {
        r = cmd(p, "GET %s", p->key, NULL);
        exp = peer_expiry_us(p, r->type == REDIS_REPLY_STRING ? r->str : NULL);
        freeReplyObject(r);
        if (exp < 0 || now <= exp)
            return 0;
        if (!p->k->stale_stamp) { /* a fresh stamp for the GETSET */
            peer_write(p, now, mine, sizeof(mine));
            stamp = mine;
        }
        r = cmd(p, "GETSET %s %s", p->key, stamp);
        exp = r->type == REDIS_REPLY_STRING ? peer_expiry_us(p, r->str) : 0;
        freeReplyObject(r);
        won = exp >= 0 && now > exp;
    }
    if (won) {
        snprintf(p->value, sizeof(p->value), "%s", stamp);
        p->lease_end_us = now + p->timeout_ms * 1000;
    }
    return won;
}

/* The library's unlock. */
/*
 * The library's unlock.  Returns 1 when its DEL removed a value not its
 * own (another holder's lock): the DEL goes out as MULTI, GET, DEL, EXEC,
 * the same unconditional DEL with an atomic record of what it removed.
 */
static int peer_release(struct peer *p)
{
    redisReply *r;
    int other = 0;

    if (p->k->compare_release) {
        r = cmd(p, "GET %s", p->key, NULL);
        if (r->type == REDIS_REPLY_STRING && strcmp(r->str, p->value) == 0)
            freeReplyObject(cmd(p, "DEL %s", p->key, NULL));
        freeReplyObject(r);
    } else if (peer_now_us(p) < p->lease_end_us) {
        freeReplyObject(cmd(p, "MULTI", NULL, NULL));
        freeReplyObject(cmd(p, "GET %s", p->key, NULL));
        freeReplyObject(cmd(p, "DEL %s", p->key, NULL));
        r = cmd(p, "EXEC", NULL, NULL);
        other = r->type == REDIS_REPLY_ARRAY && r->elements == 2
                && r->element[0]->type == REDIS_REPLY_STRING
                && strcmp(r->element[0]->str, p->value) != 0;
        freeReplyObject(r);
    }
    return other;
}

/* ------------------------------------------------------ the targets */

struct target {
    const char *name;
    const char *version; /* NULL: the real server */
    th_server proxy;
    th_server *s;
};

static struct target targets[] = {
    {"7.0", NULL, {0}, &srv},
    {"2.0.5", "2.0.5", {0}, 0},
    {"2.2.15", "2.2.15", {0}, 0},
    {"2.6.0", "2.6.0", {0}, 0},
};
#define N_TARGETS (sizeof(targets) / sizeof(targets[0]))

static const tslock_scheme schemes[] = {TSLOCK_SCHEME_BRIDGE,
                                        TSLOCK_SCHEME_TIMESTAMP};

static const char *scheme_name(tslock_scheme s)
{
    return s == TSLOCK_SCHEME_BRIDGE ? "bridge" : "timestamp";
}

/* A lease in the dialect's grain: whole seconds need whole seconds. */
static int64_t lease_ms(const struct peer_kind *k)
{
    return k->unit == P_MS ? 2000 : 3000;
}

/*
 * How long past a lease its value may still hold the key, for either
 * side: the +1 of the convention, the whole second a seconds stamp is
 * rounded to, and a bridge stamp's random offset (a tenth of the lease,
 * at most 999 ms, in milliseconds).
 */
static int64_t bound_ms(const struct peer_kind *k)
{
    switch (k->unit) {
    case P_MS:
        return lease_ms(k) / 10 + 2;
    case P_S:
        return 2000 + (k->plus_one ? 1000 : 0);
    default:
        return 2 + (k->plus_one ? 1000 : 0);
    }
}

static tslock_lock *new_lock(tslock_client *c, const char *key,
                             const struct peer_kind *k, tslock_scheme s)
{
    tslock_lock *l = NULL;

    CU_ASSERT_FATAL(tslock_lock_new(&l, c, key) == TSLOCK_OK);
    CU_ASSERT_FATAL(tslock_lock_set_scheme(l, s) == TSLOCK_OK);
    CU_ASSERT_FATAL(tslock_lock_set_dialect(l, k->preset) == TSLOCK_OK);
    CU_ASSERT_FATAL(tslock_lock_set_ttl(l, lease_ms(k)) == TSLOCK_OK);
    return l;
}

/* survey's naming: the preset is among the writers tslock names. */
static int named_as(const char *value, const char *preset)
{
    char names[256];
    const char *p;
    size_t n = strlen(preset);

    if (tslock_dialect_match(value, strlen(value), names, sizeof(names), NULL)
        != TSLOCK_OK)
        return 0;
    for (p = names; (p = strstr(p, preset)) != NULL; p += n)
        if ((p == names || p[-1] == '/') && (p[n] == '\0' || p[n] == '/'))
            return 1;
    return 0;
}

static void raw_get(redisContext *c, const char *key, char *buf, size_t size)
{
    redisReply *r = redisCommand(c, "GET %s", key);

    snprintf(buf, size, "%s",
             r != NULL && r->type == REDIS_REPLY_STRING ? r->str : "");
    freeReplyObject(r);
}

/*
 * tslock takes over a crashed peer: busy until the peer's lease ends,
 * taken within the bound after.  Returns 1 when it held.
 */
static int tslock_takes_over(struct target *t, const struct peer_kind *k,
                             tslock_scheme s, const char *key)
{
    th_clock clk;
    struct peer p = {k, th_redis(t->s), &clk, key, lease_ms(k), 0, "", 0};
    tslock_client *c = th_client(t->s);
    tslock_lock *l;
    char v[256];
    int ok;

    th_clock_init(&clk);
    th_clock_advance(&clk, 600); /* mid-second: whole seconds round */
    tslock_client_set_clock(c, th_clock_fn, &clk);
    l = new_lock(c, key, k, s);
    CU_ASSERT_FATAL(peer_try(&p, NULL) == 1);
    raw_get(p.c, key, v, sizeof(v));
    CU_ASSERT(named_as(v, k->preset));
    /* The peer crashed: it never releases.  Alive until its lease ends. */
    CU_ASSERT_EQUAL(tslock_acquire(l, 0), TSLOCK_EBUSY);
    th_clock_advance(&clk, lease_ms(k) - 1);
    CU_ASSERT_EQUAL(tslock_acquire(l, 0), TSLOCK_EBUSY);
    th_clock_advance(&clk, bound_ms(k) + 1);
    ok = tslock_acquire(l, 0) == TSLOCK_OK;
    if (!ok)
        fprintf(stderr, "%s %s on %s: not taken over: %s\n", k->preset,
                scheme_name(s), t->name, tslock_client_errstr(c));
    if (ok)
        CU_ASSERT_EQUAL(tslock_release(l), TSLOCK_OK);
    tslock_lock_free(l);
    tslock_client_free(c);
    redisFree(p.c);
    return ok;
}

/*
 * The peer takes over a crashed tslock holder by its own rules: busy
 * until tslock's lease ends, taken within the bound after.
 */
static int peer_takes_over(struct target *t, const struct peer_kind *k,
                           tslock_scheme s, const char *key, int broken)
{
    th_clock clk;
    struct peer p = {k, th_redis(t->s), &clk, key, lease_ms(k), broken, "", 0};
    tslock_client *c = th_client(t->s);
    tslock_lock *l;
    char v[256];
    int ok;

    th_clock_init(&clk);
    th_clock_advance(&clk, 600); /* mid-second: whole seconds round */
    tslock_client_set_clock(c, th_clock_fn, &clk);
    l = new_lock(c, key, k, s);
    CU_ASSERT_FATAL(tslock_acquire(l, 0) == TSLOCK_OK);
    /* The lease asked for, never less (float seconds end 1 ms early). */
    CU_ASSERT(tslock_lock_expires_ms(l) >= clk.wall_ms + lease_ms(k) - 1);
    raw_get(p.c, key, v, sizeof(v));
    CU_ASSERT(named_as(v, k->preset));
    if (!broken)
        CU_ASSERT(peer_expiry_us(&p, v) > 0); /* the peer can read it */
    tslock_lock_free(l);                      /* crashed: never released */
    CU_ASSERT_EQUAL(peer_try(&p, NULL), 0);
    th_clock_advance(&clk, lease_ms(k) - 1);
    CU_ASSERT_EQUAL(peer_try(&p, NULL), 0);
    th_clock_advance(&clk, bound_ms(k) + 1);
    ok = peer_try(&p, NULL);
    if (!ok && !broken)
        fprintf(stderr, "%s %s on %s: the peer did not take over \"%s\"\n",
                k->preset, scheme_name(s), t->name, v);
    if (ok)
        peer_release(&p);
    else
        freeReplyObject(redisCommand(p.c, "DEL %s", key));
    tslock_client_free(c);
    redisFree(p.c);
    return ok;
}

/* --------------------------------------------------- the contention */

#define CONTEND_ROUNDS 15

struct shared {
    atomic_int inside;
    atomic_int overlaps;     /* that tslock's side caused */
    atomic_int stale_inside; /* the peer is inside on an expired stamp */
    atomic_int tainted;      /* the peer deleted tslock's lock, held now */
    atomic_int legacy;       /* overlaps the peer's flaws caused */
    atomic_int done[2];
};
static struct shared *sh;

struct contend_job {
    struct target *t;
    const struct peer_kind *k;
    tslock_scheme scheme;
    const char *key;
    int reckless; /* the control: a peer that enters without the lock */
};

/*
 * One critical section, by tslock or by the peer.  stale: the peer
 * entered on a stamp that runs out before the lease it believes it holds
 * (the redis-lock gem's stamp, made before a long wait: race p), so a
 * taker may find it expired while the peer is inside.  An overlap with
 * such a holder, or after the peer's release deleted the lock tslock
 * holds, is the peer's flaw; every other overlap counts against tslock.
 */
static void enter(int tslock, int stale)
{
    if (stale)
        atomic_store(&sh->stale_inside, 1);
    if (tslock) /* a new hold: no DEL of the peer's has touched it yet */
        atomic_store(&sh->tainted, 0);
    if (atomic_fetch_add(&sh->inside, 1) != 0) {
        if (stale || atomic_load(&sh->stale_inside)
            || atomic_load(&sh->tainted))
            atomic_fetch_add(&sh->legacy, 1);
        else
            atomic_fetch_add(&sh->overlaps, 1);
    }
    th_sleep_us(300);
    atomic_fetch_sub(&sh->inside, 1);
    if (stale)
        atomic_store(&sh->stale_inside, 0);
    if (tslock)
        atomic_store(&sh->tainted, 0);
}

static void contend_child(int index, void *userdata)
{
    const struct contend_job *j = userdata;
    int64_t deadline = th_mono_ms() + 60000;
    int i;

    if (index == 0) {
        tslock_client *c = th_client(j->t->s);
        tslock_lock *l = NULL;
        if (c == NULL || tslock_lock_new(&l, c, j->key) != TSLOCK_OK
            || tslock_lock_set_scheme(l, j->scheme) != TSLOCK_OK
            || tslock_lock_set_dialect(l, j->k->preset) != TSLOCK_OK
            || tslock_lock_set_ttl(l, lease_ms(j->k)) != TSLOCK_OK
            || tslock_lock_set_retry(l, 1, 5) != TSLOCK_OK)
            exit(2);
        for (i = 0; i < CONTEND_ROUNDS && th_mono_ms() < deadline; i++) {
            int rc = tslock_acquire(l, 20000);
            if (rc != TSLOCK_OK) {
                fprintf(stderr, "tslock: %s\n", tslock_client_errstr(c));
                exit(4);
            }
            enter(1, 0);
            rc = tslock_release(l);
            /* A blind legacy GETSET may have taken it: a loss, reported. */
            if (rc != TSLOCK_OK && rc != TSLOCK_ELOST)
                exit(5);
            atomic_fetch_add(&sh->done[0], 1);
        }
        tslock_lock_free(l);
        tslock_client_free(c);
        return;
    }
    if (j->reckless) {
        /* Inside without the lock until tslock has been inside once. */
        if (atomic_fetch_add(&sh->inside, 1) != 0)
            atomic_fetch_add(&sh->overlaps, 1);
        while (atomic_load(&sh->done[0]) == 0 && th_mono_ms() < deadline)
            th_sleep_us(1000);
        atomic_fetch_sub(&sh->inside, 1);
        atomic_store(&sh->done[1], CONTEND_ROUNDS);
        return;
    }
    {
        struct peer p = {
            j->k, th_redis(j->t->s), NULL, j->key, lease_ms(j->k), 0, "", 0};
        for (i = 0; i < CONTEND_ROUNDS && th_mono_ms() < deadline; i++) {
            char stamp[256];
            /* The redis-lock gem makes its stamp once per lock call. */
            peer_write(&p, peer_now_us(&p), stamp, sizeof(stamp));
            while (!peer_try(&p, j->k->stale_stamp ? stamp : NULL))
                if (th_mono_ms() > deadline)
                    exit(6);
                else
                    th_sleep_us(2000);
            /*
             * A stamp made before a long wait may run out inside the
             * lease the peer believes it has: the gem's flaw (race p).
             */
            enter(0, peer_expiry_us(&p, p.value)
                         < peer_now_us(&p) + p.timeout_ms * 1000);
            /*
             * A release that deletes the lock tslock took over from its
             * stale stamp lets the peer in again beside tslock: the
             * legacy release's flaw (race c), after the gem's.
             */
            if (peer_release(&p))
                atomic_store(&sh->tainted, 1);
            atomic_fetch_add(&sh->done[1], 1);
        }
        redisFree(p.c);
    }
}

/* Run the pair; the overlaps seen. */
static int contend_run(struct target *t, const struct peer_kind *k,
                       tslock_scheme s, const char *key, int reckless)
{
    struct contend_job j = {t, k, s, key, reckless};

    memset(sh, 0, sizeof(*sh));
    CU_ASSERT(th_workers(2, contend_child, &j));
    return atomic_load(&sh->overlaps);
}

static void contend(struct target *t, const struct peer_kind *k,
                    tslock_scheme s, const char *key)
{
    contend_run(t, k, s, key, 0);
    if (atomic_load(&sh->legacy) != 0)
        fprintf(stderr,
                "%s %s on %s: %d overlaps with a peer inside on a stale "
                "stamp\n",
                k->preset, scheme_name(s), t->name, atomic_load(&sh->legacy));
    /* Only a peer that reuses a stale stamp can enter on an expired one. */
    if (!k->stale_stamp)
        CU_ASSERT_EQUAL(atomic_load(&sh->legacy), 0);
    if (atomic_load(&sh->overlaps) != 0
        || atomic_load(&sh->done[0]) != CONTEND_ROUNDS
        || atomic_load(&sh->done[1]) != CONTEND_ROUNDS)
        fprintf(stderr, "%s %s on %s: %d overlaps, %d+%d rounds\n", k->preset,
                scheme_name(s), t->name, atomic_load(&sh->overlaps),
                atomic_load(&sh->done[0]), atomic_load(&sh->done[1]));
    CU_ASSERT_EQUAL(atomic_load(&sh->overlaps), 0);
    CU_ASSERT_EQUAL(atomic_load(&sh->done[0]), CONTEND_ROUNDS);
    CU_ASSERT_EQUAL(atomic_load(&sh->done[1]), CONTEND_ROUNDS);
}

/* -------------------------------------------------------- the tests */

static size_t current;

static void test_preset(void)
{
    const struct peer_kind *k = &kinds[current++];
    size_t t, s;

    for (t = 0; t < N_TARGETS; t++)
        for (s = 0; s < 2; s++) {
            char key[128];
            snprintf(key, sizeof(key), "dialect:%s:%s:%s", k->preset,
                     targets[t].name, scheme_name(schemes[s]));
            CU_ASSERT(tslock_takes_over(&targets[t], k, schemes[s], key));
            CU_ASSERT(peer_takes_over(&targets[t], k, schemes[s], key, 0));
            contend(&targets[t], k, schemes[s], key);
        }
}

/*
 * The broken control: a redis-lock gem peer that reads tslock's
 * "S-PID-TID" as one number never sees it expire, so the same check
 * that passes for the real peer fails for it.
 */
static void test_broken_control_fails(void)
{
    size_t i;

    for (i = 0; i < N_KINDS; i++)
        if (strcmp(kinds[i].preset, "redis-lock-gem") == 0)
            CU_ASSERT_FALSE(peer_takes_over(&targets[0], &kinds[i],
                                            TSLOCK_SCHEME_BRIDGE,
                                            "dialect:broken", 1));
}

/* The overlap counter's control: a peer that ignores the lock is caught. */
static void test_overlap_control_fails(void)
{
    CU_ASSERT(contend_run(&targets[0], &kinds[0], TSLOCK_SCHEME_BRIDGE,
                          "dialect:reckless", 1)
              > 0);
}

/*
 * Without its dialect, tslock never takes over the values of the
 * libraries that surround the number, however old; with it, it does.
 */
static void test_plain_client_leaves_suffixed_values(void)
{
    static const char *const values[] = {
        "1700000001-27118-520", "1700000001:15131",
        "a:3:{s:3:\"pid\";i:1;s:8:\"hostname\";s:2:\"vm\";s:7:\"expires\";"
        "i:1700000001;}"};
    static const char *const presets[] = {"redis-lock-gem", "predislock",
                                          "ninja-mutex"};
    redisContext *raw = th_redis(&srv);
    tslock_client *c = th_client(&srv);
    th_clock clk;
    size_t i;

    th_clock_init(&clk);
    th_clock_advance(&clk, 3600 * 1000);
    tslock_client_set_clock(c, th_clock_fn, &clk);
    for (i = 0; i < 3; i++) {
        tslock_lock *l = NULL;
        freeReplyObject(redisCommand(raw, "SET dialect:plain %s", values[i]));
        CU_ASSERT_FATAL(tslock_lock_new(&l, c, "dialect:plain") == TSLOCK_OK);
        tslock_lock_set_scheme(l, TSLOCK_SCHEME_TIMESTAMP);
        tslock_lock_set_unit(l, TSLOCK_UNIT_S);
        CU_ASSERT_EQUAL(tslock_acquire(l, 0), TSLOCK_EUNREADABLE);
        /* The error quotes the value in full and names the preset. */
        CU_ASSERT_PTR_NOT_NULL(strstr(tslock_client_errstr(c), values[i]));
        CU_ASSERT_PTR_NOT_NULL(strstr(tslock_client_errstr(c), presets[i]));
        CU_ASSERT_EQUAL(tslock_lock_set_dialect(l, presets[i]), TSLOCK_OK);
        CU_ASSERT_EQUAL(tslock_acquire(l, 0), TSLOCK_OK);
        CU_ASSERT_EQUAL(tslock_release(l), TSLOCK_OK);
        tslock_lock_free(l);
    }
    tslock_client_free(c);
    redisFree(raw);
}

/*
 * A dialect's fixed text must stand where the format has it: the gem's
 * shape with PredisLock's ':' (or the other way round) is neither.
 */
static void test_fixed_text_must_match(void)
{
    int64_t exp;
    char names[128];

    CU_ASSERT_EQUAL(tslock_dialect_parse("redis-lock-gem",
                                         "1700000001:27118:520", 20, &exp),
                    TSLOCK_EUNREADABLE);
    CU_ASSERT_EQUAL(
        tslock_dialect_parse("predislock", "1700000001-4242", 15, &exp),
        TSLOCK_EUNREADABLE);
    CU_ASSERT_EQUAL(
        tslock_dialect_parse("{s}:lock:{pid}", "1700000001:lick:1", 17, &exp),
        TSLOCK_EUNREADABLE);
    CU_ASSERT_EQUAL(
        tslock_dialect_match("1700000001-4242", 15, names, sizeof(names), NULL),
        TSLOCK_EUNREADABLE);
}

/* A "never expires" sentinel is held for good, and said to be. */
static void test_never_expires_sentinel(void)
{
    redisContext *raw = th_redis(&srv);
    tslock_client *c = th_client(&srv);
    tslock_lock *l = NULL;
    th_clock clk;

    th_clock_init(&clk);
    th_clock_advance(&clk, INT64_C(86400000) * 365 * 50);
    tslock_client_set_clock(c, th_clock_fn, &clk);
    freeReplyObject(redisCommand(raw, "SET dialect:never 1"));
    CU_ASSERT_FATAL(tslock_lock_new(&l, c, "dialect:never") == TSLOCK_OK);
    tslock_lock_set_scheme(l, TSLOCK_SCHEME_BRIDGE);
    CU_ASSERT_EQUAL(tslock_lock_set_dialect(l, "redis-objects"), TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_acquire(l, 0), TSLOCK_EBUSY);
    CU_ASSERT_PTR_NOT_NULL(strstr(tslock_client_errstr(c), "never expires"));
    CU_ASSERT_STRING_EQUAL(tslock_lock_get_dialect(l), "redis-objects");
    CU_ASSERT_EQUAL(tslock_lock_set_dialect(l, "{x}"), TSLOCK_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(
        strstr(tslock_client_errstr(c), "presets: java-redislock"));
    CU_ASSERT_STRING_EQUAL(tslock_lock_get_dialect(l), "redis-objects");
    tslock_lock_set_unit(l, TSLOCK_UNIT_S);
    CU_ASSERT_STRING_EQUAL(tslock_lock_get_dialect(l), "{s+1}");
    tslock_lock_free(l);
    tslock_client_free(c);
    redisFree(raw);
}

/*
 * Auto with a dialect shares the lock with the dialect's clients: the
 * bridge scheme where the server has Lua or WATCH, the timestamp scheme
 * on 2.0.  A token is no value of any dialect.
 */
static void test_auto_takes_a_stamp(void)
{
    static const tslock_scheme expect[N_TARGETS] = {
        TSLOCK_SCHEME_BRIDGE, TSLOCK_SCHEME_TIMESTAMP, TSLOCK_SCHEME_BRIDGE,
        TSLOCK_SCHEME_BRIDGE};
    size_t t;

    for (t = 0; t < N_TARGETS; t++) {
        tslock_client *c = th_client(targets[t].s);
        tslock_lock *l = NULL;
        int64_t exp = 0;

        CU_ASSERT_FATAL(tslock_lock_new(&l, c, "dialect:auto") == TSLOCK_OK);
        CU_ASSERT_EQUAL(tslock_lock_set_dialect(l, "redis-lock-gem"),
                        TSLOCK_OK);
        CU_ASSERT_EQUAL(tslock_acquire(l, 0), TSLOCK_OK);
        if (tslock_lock_scheme_used(l) != expect[t])
            fprintf(stderr, "%s: auto with a dialect took scheme %d\n",
                    targets[t].name, (int)tslock_lock_scheme_used(l));
        CU_ASSERT_EQUAL(tslock_lock_scheme_used(l), expect[t]);
        /* What it wrote is the gem's own value. */
        CU_ASSERT_EQUAL(
            tslock_dialect_parse("redis-lock-gem", tslock_lock_value(l),
                                 strlen(tslock_lock_value(l)), &exp),
            TSLOCK_OK);
        CU_ASSERT_EQUAL(tslock_release(l), TSLOCK_OK);
        /* Without the dialect, auto is the token scheme where it can be. */
        CU_ASSERT_EQUAL(tslock_lock_set_unit(l, TSLOCK_UNIT_MS), TSLOCK_OK);
        CU_ASSERT_EQUAL(tslock_acquire(l, 0), TSLOCK_OK);
        CU_ASSERT_EQUAL(tslock_lock_scheme_used(l),
                        t == 1 ? TSLOCK_SCHEME_TIMESTAMP : TSLOCK_SCHEME_TOKEN);
        CU_ASSERT_EQUAL(tslock_release(l), TSLOCK_OK);
        tslock_lock_free(l);
        tslock_client_free(c);
    }
}

/*
 * What writes a random token has no stamp to write in a dialect: the
 * token scheme, fair mode, a read-write lock and a semaphore each refuse
 * a dialect with EINVAL, naming both, and nothing is written.
 */
static void test_token_writers_refuse_a_dialect(void)
{
    static const char *const what[] = {"the token scheme", "fair mode",
                                       "a read-write lock", "a semaphore"};
    redisContext *raw = th_redis(&srv);
    tslock_client *c = th_client(&srv);
    size_t i;

    for (i = 0; i < 4; i++) {
        tslock_lock *l = NULL;
        redisReply *r;

        CU_ASSERT_FATAL(tslock_lock_new(&l, c, "dialect:token") == TSLOCK_OK);
        if (i == 0)
            tslock_lock_set_scheme(l, TSLOCK_SCHEME_TOKEN);
        else if (i == 1)
            tslock_lock_set_fair(l, 1);
        else if (i == 2)
            tslock_lock_set_rw(l, TSLOCK_RW_EXCLUSIVE);
        else
            tslock_lock_set_permits(l, 2);
        CU_ASSERT_EQUAL(tslock_lock_set_dialect(l, "predislock"), TSLOCK_OK);
        CU_ASSERT_EQUAL(tslock_acquire(l, 0), TSLOCK_EINVAL);
        CU_ASSERT_PTR_NOT_NULL(strstr(tslock_client_errstr(c), what[i]));
        CU_ASSERT_PTR_NOT_NULL(strstr(tslock_client_errstr(c), "predislock"));
        CU_ASSERT_FALSE(tslock_lock_is_held(l));
        r = redisCommand(raw, "EXISTS dialect:token");
        CU_ASSERT_EQUAL(r->integer, 0);
        freeReplyObject(r);
        tslock_lock_free(l);
    }
    tslock_client_free(c);
    redisFree(raw);
}

/* Every preset of the library has its peer here, and no peer is extra. */
static void test_a_peer_for_every_preset(void)
{
    size_t i, j, n = 0;

    for (i = 0; tslock_dialect_preset(i) != NULL; i++, n++) {
        for (j = 0; j < N_KINDS; j++)
            if (strcmp(kinds[j].preset, tslock_dialect_preset(i)) == 0)
                break;
        if (j == N_KINDS)
            fprintf(stderr, "no peer for preset %s\n",
                    tslock_dialect_preset(i));
        CU_ASSERT(j < N_KINDS);
    }
    CU_ASSERT_EQUAL(n, N_KINDS);
}

int main(void)
{
    static char names[N_KINDS][80];
    CU_pSuite suite;
    size_t i;

    sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
              MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (sh == MAP_FAILED || th_server_start(&srv, NULL) != 0)
        return 1;
    for (i = 1; i < N_TARGETS; i++) {
        if (th_proxy_start(&targets[i].proxy, &srv, targets[i].version) != 0)
            return 1;
        targets[i].s = &targets[i].proxy;
    }
    if (CU_initialize_registry() != CUE_SUCCESS)
        return 1;
    suite = CU_add_suite("dialects", NULL, NULL);
    CU_add_test(suite, "a peer for every preset", test_a_peer_for_every_preset);
    CU_add_test(suite, "suffixed values need their dialect",
                test_plain_client_leaves_suffixed_values);
    CU_add_test(suite, "a dialect's fixed text must match",
                test_fixed_text_must_match);
    CU_add_test(suite, "a never-expires sentinel is held",
                test_never_expires_sentinel);
    CU_add_test(suite, "auto with a dialect takes a stamp",
                test_auto_takes_a_stamp);
    CU_add_test(suite, "token writers refuse a dialect",
                test_token_writers_refuse_a_dialect);
    for (i = 0; i < N_KINDS; i++) {
        snprintf(names[i], sizeof(names[i]),
                 "%s: takeover both ways, naming, exclusion", kinds[i].preset);
        CU_add_test(suite, names[i], test_preset);
    }
    CU_add_test(suite, "broken control: a parser reading the suffix fails",
                test_broken_control_fails);
    CU_add_test(suite, "broken control: a peer ignoring the lock overlaps",
                test_overlap_control_fails);
    return th_run_all();
}

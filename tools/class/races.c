/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * races.c - the races of doc/races.md as one table of scenarios, run by
 * `tslock replay` to narrate them and by tests/test_races.c to assert on
 * them.  A scenario pauses one actor at a named command and plays the other
 * actor's whole operation there, through step hooks, never through timing.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "naive.h"
#include "rawcmd.h"
#include "races.h"

/*
 * One run of one side of a race: the observer connection that reads the
 * key after every command, the command waiting for its answer, and the
 * trace of commands in the order the server received them.
 */
typedef struct replay {
    race_env *env;
    const char *key;
    redisContext *observer;
    race_result *out;
    char pending[64];
    int64_t start_ms; /* the replay clock when the side began */
} replay;

/*
 * An actor: records every command it is about to send and at its `at`
 * step (once) runs `action`, the other actor's part.
 */
typedef struct actor {
    replay *rp;
    const char *name;
    const char *at;
    void (*action)(struct actor *self);
    const void *spec; /* the race's parameters */
    void *other;      /* the other actor's naive client or lock */
    int inner_rc;
    int fired;
} actor;

/* The key's PTTL; from TTL where the server has no PTTL (before 2.6). */
static long long observe_pttl(replay *rp)
{
    redisReply *t = cli_raw_command(rp->observer, "PTTL %s", rp->key);
    long long ms = -2;

    if (t != NULL && t->type == REDIS_REPLY_INTEGER)
        ms = t->integer;
    else if (t != NULL && t->type == REDIS_REPLY_ERROR) {
        freeReplyObject(t);
        t = cli_raw_command(rp->observer, "TTL %s", rp->key);
        if (t != NULL && t->type == REDIS_REPLY_INTEGER)
            ms = t->integer > 0 ? t->integer * 1000 : t->integer;
    }
    freeReplyObject(t);
    return ms;
}

static void observe(replay *rp, const char *who, const char *command)
{
    redisReply *r = cli_raw_command(rp->observer, "GET %s", rp->key);
    race_step st;

    st.actor = who;
    st.command = command;
    st.value = r != NULL && r->type == REDIS_REPLY_STRING ? r->str : "(nil)";
    st.pttl = observe_pttl(rp);
    st.clock_ms = rp->env->wall_ms - rp->start_ms;
    if (rp->env->narrate != NULL)
        rp->env->narrate(&st, rp->env->ud);
    freeReplyObject(r);
}

/* The command sent before this one has been answered: show its effect. */
static void flush_pending(replay *rp)
{
    char *colon = strchr(rp->pending, ':');

    if (rp->pending[0] == '\0' || colon == NULL)
        return;
    *colon = '\0';
    observe(rp, rp->pending, colon + 1);
    rp->pending[0] = '\0';
}

/* An actor paused with nothing to run dies there: its command never goes. */
static int actor_crash(actor *a, const char *step)
{
    replay *rp = a->rp;
    size_t used = strlen(rp->out->trace);
    char what[64];

    snprintf(what, sizeof(what), "dies before %s", step);
    observe(rp, a->name, what);
    snprintf(rp->out->trace + used, sizeof(rp->out->trace) - used, "%s%s:crash",
             used ? " " : "", a->name);
    return 1;
}

/*
 * A NOSCRIPT fallback to EVAL belongs to the EVALSHA before it and is not
 * recorded again, so traces do not depend on the server's script cache.
 */
static int actor_step(actor *a, const char *step)
{
    replay *rp = a->rp;
    size_t used = strlen(rp->out->trace);

    if (strcmp(step, "EVAL") == 0)
        return 0; /* the EVALSHA is still pending: show the value after EVAL */
    flush_pending(rp);
    if (a->action == NULL && a->at != NULL && strcmp(step, a->at) == 0)
        return actor_crash(a, step);
    if (a->action != NULL && !a->fired && strcmp(step, a->at) == 0) {
        a->fired = 1;
        a->action(a);
        flush_pending(rp); /* the other actor's last command, answered */
        used = strlen(rp->out->trace);
    }
    snprintf(rp->out->trace + used, sizeof(rp->out->trace) - used, "%s%s:%s",
             used ? " " : "", a->name, step);
    snprintf(rp->pending, sizeof(rp->pending), "%s:%s", a->name, step);
    return 0;
}

static int naive_step_hook(const char *step, void *ud)
{
    return actor_step(ud, step);
}

static int lib_hook(tslock_client *c, tslock_step step, const char *key,
                    void *ud)
{
    (void)c;
    (void)key;
    return actor_step(ud, tslock_step_name(step));
}

static int64_t replay_clock(tslock_clock_id which, void *ud)
{
    const race_env *env = ud;

    return which == TSLOCK_CLOCK_WALL ? env->wall_ms : env->mono_ms;
}

/* Open the observer and clear the scratch key; 0, or -1 with out->error. */
static int replay_open(replay *rp, race_env *env, const char *key,
                       race_result *out)
{
    memset(out, 0, sizeof(*out));
    memset(rp, 0, sizeof(*rp));
    rp->env = env;
    rp->key = key;
    rp->out = out;
    rp->start_ms = env->wall_ms;
    rp->observer = env->raw(env->ud);
    if (rp->observer == NULL) {
        snprintf(out->error, sizeof(out->error), "cannot connect");
        return -1;
    }
    freeReplyObject(cli_raw_command(rp->observer, "DEL %s", key));
    return 0;
}

static void replay_close(replay *rp)
{
    flush_pending(rp);
    freeReplyObject(cli_raw_command(rp->observer, "DEL %s", rp->key));
    tslock_conn_free(rp->observer);
}

/* Leave a stamp that expired `ago` ms before now, as if P1 had died. */
static void plant_expired_stamp(replay *rp, int64_t ago)
{
    char stamp[32];

    snprintf(stamp, sizeof(stamp), "%" PRId64, rp->env->wall_ms - ago);
    freeReplyObject(cli_raw_command(rp->observer, "SET %s %s", rp->key, stamp));
    observe(rp, "P1", "SET (then dies)");
}

/* A timestamp lock on a new client on the replay clock, hooked to a. */
static tslock_lock *lock_as(replay *rp, actor *a, int64_t ttl_ms,
                            tslock_client **cp)
{
    tslock_client *c = rp->env->client(rp->env->ud);
    tslock_lock *l = NULL;

    *cp = c;
    if (c == NULL)
        return NULL;
    tslock_client_set_clock(c, replay_clock, rp->env);
    tslock_client_set_step_hook(c, lib_hook, a);
    if (tslock_lock_new(&l, c, rp->key) != TSLOCK_OK
        || tslock_lock_set_ttl(l, ttl_ms) != TSLOCK_OK
        || tslock_lock_set_scheme(l, TSLOCK_SCHEME_TIMESTAMP) != TSLOCK_OK) {
        tslock_lock_free(l);
        return NULL;
    }
    return l;
}

static naive_client naive_as(replay *rp, actor *a)
{
    naive_client n = {rp->env->raw(rp->env->ud), &rp->env->wall_ms,
                      naive_step_hook, a, ""};
    return n;
}

/* -------------------------------- a and b: two takeovers of a dead lock */

/*
 * Races a and b have one shape: P1 died holding the lock, two clients see
 * its stamp expired, and the outer one pauses at a command of its
 * takeover while the inner one runs its whole takeover.
 */
typedef struct takeover {
    const char *inner, *outer;
    const char *naive_pause, *lib_pause;
    int (*naive_acquire)(naive_client *n, const char *key, int64_t ttl_ms);
    int64_t inner_later_ms; /* the inner client comes this much later */
} takeover;

static const takeover race_a = {
    "P2", "P3", "DEL", "GETSET", naive_del_recovery_acquire, 0};
static const takeover race_b = {
    "P5", "P4", "GETSET", "GETSET", naive_blind_getset_acquire, 3};

static void naive_inner(actor *self)
{
    const takeover *t = self->spec;

    self->inner_rc = t->naive_acquire(self->other, self->rp->key, 500);
}

static int takeover_broken(const takeover *t, race_env *env, const char *key,
                           race_result *out)
{
    replay rp;
    actor in = {&rp, t->inner, NULL, NULL, t, NULL, 0, 0},
          outer = {&rp, t->outer, t->naive_pause, naive_inner, t, NULL, 0, 0};
    naive_client n_in, n_out;
    int rc = NAIVE_BUSY;

    if (replay_open(&rp, env, key, out) != 0)
        return -1;
    n_in = naive_as(&rp, &in);
    n_out = naive_as(&rp, &outer);
    outer.other = &n_in;
    if (n_in.redis != NULL && n_out.redis != NULL) {
        plant_expired_stamp(&rp, 1000);
        rc = t->naive_acquire(&n_out, key, 500);
    } else
        snprintf(out->error, sizeof(out->error), "cannot connect");
    out->holds[0] = out->believes[0] = outer.inner_rc == NAIVE_HELD;
    out->holds[1] = out->believes[1] = rc == NAIVE_HELD;
    tslock_conn_free(n_in.redis);
    tslock_conn_free(n_out.redis);
    replay_close(&rp);
    return out->error[0] != '\0' ? -1 : 0;
}

static void lib_inner(actor *self)
{
    const takeover *t = self->spec;

    self->rp->env->wall_ms += t->inner_later_ms;
    self->inner_rc = tslock_acquire(self->other, 0);
}

/* The same interleaving with tslock's GETSET takeover: one holds. */
static int takeover_tslock(const takeover *t, race_env *env, const char *key,
                           race_result *out)
{
    replay rp;
    actor in = {&rp, t->inner, NULL, NULL, t, NULL, 0, 0},
          outer = {&rp, t->outer, t->lib_pause, lib_inner, t, NULL, 0, 0};
    tslock_client *c_in = NULL, *c_out = NULL;
    tslock_lock *l_in, *l_out;

    if (replay_open(&rp, env, key, out) != 0)
        return -1;
    l_in = lock_as(&rp, &in, 500, &c_in);
    l_out = lock_as(&rp, &outer, 500, &c_out);
    outer.other = l_in;
    if (l_in != NULL && l_out != NULL) {
        plant_expired_stamp(&rp, 1000);
        tslock_acquire(l_out, 0);
        out->holds[0] = out->believes[0] = tslock_lock_is_held(l_in);
        out->holds[1] = out->believes[1] = tslock_lock_is_held(l_out);
    } else
        snprintf(out->error, sizeof(out->error), "cannot connect");
    tslock_lock_free(l_in);
    tslock_lock_free(l_out);
    tslock_client_free(c_in);
    tslock_client_free(c_out);
    replay_close(&rp);
    return out->error[0] != '\0' ? -1 : 0;
}

static int race_a_broken(race_env *env, const char *key, race_result *out)
{
    return takeover_broken(&race_a, env, key, out);
}

static int race_a_tslock(race_env *env, const char *key, race_result *out)
{
    return takeover_tslock(&race_a, env, key, out);
}

static int race_b_broken(race_env *env, const char *key, race_result *out)
{
    return takeover_broken(&race_b, env, key, out);
}

static int race_b_tslock(race_env *env, const char *key, race_result *out)
{
    return takeover_tslock(&race_b, env, key, out);
}

/* Whether the key still holds what naive client n wrote. */
static int naive_stands(replay *rp, const naive_client *n)
{
    redisReply *r = cli_raw_command(rp->observer, "GET %s", rp->key);
    int same = r != NULL && r->type == REDIS_REPLY_STRING
               && strcmp(r->str, n->value) == 0;

    freeReplyObject(r);
    return same;
}

/* Whether the key still holds what lock l wrote. */
static int value_stands(replay *rp, tslock_lock *l)
{
    redisReply *r = cli_raw_command(rp->observer, "GET %s", rp->key);
    int same = r != NULL && r->type == REDIS_REPLY_STRING
               && strcmp(r->str, tslock_lock_value(l)) == 0;

    freeReplyObject(r);
    return same;
}

/* A token lock on a new client, hooked to a; its lease is the key's TTL. */
static tslock_lock *token_lock_as(replay *rp, actor *a, tslock_client **cp)
{
    tslock_lock *l = lock_as(rp, a, 10000, cp);

    if (l != NULL
        && tslock_lock_set_scheme(l, TSLOCK_SCHEME_TOKEN) != TSLOCK_OK) {
        tslock_lock_free(l);
        l = NULL;
    }
    return l;
}

/*
 * A token lease ends on the server, not on the replay clock: the key's
 * TTL runs out while A is paused.  PEXPIRE 0 is that moment, made now.
 */
static void lease_runs_out(replay *rp, const char *whose)
{
    char what[64];

    freeReplyObject(cli_raw_command(rp->observer, "PEXPIRE %s 0", rp->key));
    snprintf(what, sizeof(what), "%s's lease runs out (PEXPIRE 0)", whose);
    observe(rp, "server", what);
}

/*
 * The two lock clients of races c to g: A and B, each on its own
 * client hooked to its actor, with timestamp locks of ttl_ms, or token
 * locks (10 s TTL) when token.  0, or -1 when one could not be made.
 */
typedef struct pair {
    tslock_client *ca, *cb;
    tslock_lock *la, *lb;
} pair;

static int pair_open(pair *p, replay *rp, actor *a, actor *b, int64_t ttl_ms,
                     int token)
{
    memset(p, 0, sizeof(*p));
    p->la =
        token ? token_lock_as(rp, a, &p->ca) : lock_as(rp, a, ttl_ms, &p->ca);
    p->lb =
        token ? token_lock_as(rp, b, &p->cb) : lock_as(rp, b, ttl_ms, &p->cb);
    return p->la != NULL && p->lb != NULL ? 0 : -1;
}

/* Free both sides and close the replay; 0, or -1 when it failed. */
static int pair_close(pair *p, replay *rp, race_result *out)
{
    tslock_lock_free(p->la);
    tslock_lock_free(p->lb);
    tslock_client_free(p->ca);
    tslock_client_free(p->cb);
    replay_close(rp);
    return out->error[0] != '\0' ? -1 : 0;
}

/* After A's release: does B believe it holds, and does its value stand? */
static void judge_b(replay *rp, tslock_lock *lb, race_result *out)
{
    flush_pending(rp);
    out->believes[1] = tslock_lock_is_held(lb);
    out->holds[1] = out->believes[1] && value_stands(rp, lb);
}

/* ------------------------------- c and f: release after expiry */

/*
 * c and f: A holds the lock and stalls past its lease (a 1 s stamp and a
 * 2 s stall, or a token whose TTL runs out); B takes it over; then A
 * releases: as the Java RedisLock's unlock0 (stamps) or a plain DEL
 * (tokens) does, or as tslock does.  Does B's lock survive?
 */
static int expiry_race(int token, int broken, race_env *env, const char *key,
                       race_result *out)
{
    replay rp;
    actor a = {&rp, "A", NULL, NULL, NULL, NULL, 0, 0},
          b = {&rp, "B", NULL, NULL, NULL, NULL, 0, 0};
    pair p;

    if (replay_open(&rp, env, key, out) != 0)
        return -1;
    if (pair_open(&p, &rp, &a, &b, 1000, token) == 0
        && tslock_acquire(p.la, 0) == TSLOCK_OK) {
        flush_pending(&rp); /* A's acquire, before its lease ends */
        if (token)
            lease_runs_out(&rp, "A");
        else {
            env->wall_ms += 2000;
            env->mono_ms += 2000;
        }
        tslock_acquire(p.lb, 0);
        flush_pending(&rp);   /* B's takeover, shown before A's release */
        out->trace[0] = '\0'; /* the race is A's release */
        if (broken) {
            naive_client na = naive_as(&rp, &a);

            if (na.redis != NULL && token)
                naive_unconditional_release(&na, key);
            else if (na.redis != NULL)
                naive_java_release(&na, key);
            tslock_conn_free(na.redis);
        } else if (tslock_release(p.la) == TSLOCK_ELOST && !token)
            observe(&rp, "A", "(lease over: sends nothing)");
        judge_b(&rp, p.lb, out);
    } else
        snprintf(out->error, sizeof(out->error), "cannot take the lock");
    return pair_close(&p, &rp, out);
}

static int race_c_broken(race_env *env, const char *key, race_result *out)
{
    return expiry_race(0, 1, env, key, out);
}

static int race_c_tslock(race_env *env, const char *key, race_result *out)
{
    return expiry_race(0, 0, env, key, out);
}

static int race_f_broken(race_env *env, const char *key, race_result *out)
{
    return expiry_race(1, 1, env, key, out);
}

static int race_f_tslock(race_env *env, const char *key, race_result *out)
{
    return expiry_race(1, 0, env, key, out);
}

/* ------------------------------------------ d and g: check, then delete */

/* A has checked its stamp; now its lease runs out and B takes over. */
static void release_takeover(actor *self)
{
    self->rp->env->wall_ms += 2000;
    self->rp->env->mono_ms += 2000;
    self->inner_rc = tslock_acquire(self->other, 0);
}

/* A has seen its own token; now its lease runs out and B acquires. */
static void token_takeover(actor *self)
{
    lease_runs_out(self->rp, "A");
    self->inner_rc = tslock_acquire(self->other, 0);
}

/*
 * d and g: A releases a lock it still holds, pausing at `pause`, after
 * its check; inside the pause its lease runs out and B takes over.  A
 * releases in `form` (stamps), or with a token: tslock's release, or the
 * naive GET, compare, DEL.  Does B's lock survive A's release?
 */
static int release_race(int token, tslock_release_form form, int naive,
                        const char *pause, race_env *env, const char *key,
                        race_result *out)
{
    replay rp;
    actor a = {&rp,  "A",  pause, token ? token_takeover : release_takeover,
               NULL, NULL, 0,     0},
          b = {&rp, "B", NULL, NULL, NULL, NULL, 0, 0};
    pair p;

    if (replay_open(&rp, env, key, out) != 0)
        return -1;
    if (pair_open(&p, &rp, &a, &b, 1000, token) != 0
        || tslock_lock_set_release_form(p.la, form) != TSLOCK_OK
        || tslock_acquire(p.la, 0) != TSLOCK_OK)
        snprintf(out->error, sizeof(out->error), "cannot take the lock");
    else {
        a.other = p.lb;
        out->trace[0] = '\0'; /* the race starts at A's release */
        if (naive) {
            naive_client na = naive_as(&rp, &a);

            if (na.redis != NULL)
                naive_token_get_then_del(&na, key, tslock_lock_value(p.la));
            tslock_conn_free(na.redis);
        } else
            tslock_release(p.la);
        judge_b(&rp, p.lb, out);
    }
    return pair_close(&p, &rp, out);
}

static int race_d_broken(race_env *env, const char *key, race_result *out)
{
    return release_race(0, TSLOCK_RELEASE_CLASSIC, 0, "DEL", env, key, out);
}

static int race_d_tslock(race_env *env, const char *key, race_result *out)
{
    return release_race(0, TSLOCK_RELEASE_LUA, 0, "EVALSHA", env, key, out);
}

static int race_g_broken(race_env *env, const char *key, race_result *out)
{
    return release_race(1, TSLOCK_RELEASE_BEST, 1, "DEL", env, key, out);
}

static int race_g_tslock(race_env *env, const char *key, race_result *out)
{
    return release_race(1, TSLOCK_RELEASE_BEST, 0, "EVALSHA", env, key, out);
}

/* ------------------------------- e. crash between SETNX and EXPIRE */

/* Nobody holds the lock, yet the key is there: whoever wrote it is dead. */
static void note_stuck(replay *rp, race_result *out)
{
    redisReply *r = cli_raw_command(rp->observer, "EXISTS %s", rp->key);

    out->stuck = race_holders(out) == 0 && r != NULL
                 && r->type == REDIS_REPLY_INTEGER && r->integer == 1;
    freeReplyObject(r);
}

/* A dies between SETNX and EXPIRE; a day later B still cannot take it. */
static int race_e_broken(race_env *env, const char *key, race_result *out)
{
    replay rp;
    actor a = {&rp, "A", "EXPIRE", NULL, NULL, NULL, 0, 0},
          b = {&rp, "B", NULL, NULL, NULL, NULL, 0, 0};
    naive_client na, nb;

    if (replay_open(&rp, env, key, out) != 0)
        return -1;
    na = naive_as(&rp, &a);
    nb = naive_as(&rp, &b);
    if (na.redis != NULL && nb.redis != NULL) {
        out->believes[0] =
            naive_setnx_expire_acquire(&na, key, 1) == NAIVE_HELD;
        env->wall_ms += 86400000;
        env->mono_ms += 86400000;
        out->believes[1] = out->holds[1] =
            naive_setnx_expire_acquire(&nb, key, 1) == NAIVE_HELD;
        flush_pending(&rp);
        note_stuck(&rp, out);
    } else
        snprintf(out->error, sizeof(out->error), "cannot connect");
    tslock_conn_free(na.redis);
    tslock_conn_free(nb.redis);
    replay_close(&rp);
    return out->error[0] != '\0' ? -1 : 0;
}

/* A dies holding a stamp lock; once the stamp passes, B takes it over. */
static int race_e_tslock(race_env *env, const char *key, race_result *out)
{
    replay rp;
    actor a = {&rp, "A", NULL, NULL, NULL, NULL, 0, 0},
          b = {&rp, "B", NULL, NULL, NULL, NULL, 0, 0};
    pair p;

    if (replay_open(&rp, env, key, out) != 0)
        return -1;
    if (pair_open(&p, &rp, &a, &b, 1000, 0) == 0
        && tslock_acquire(p.la, 0) == TSLOCK_OK) {
        tslock_lock_free(p.la); /* A dies holding it */
        p.la = NULL;
        flush_pending(&rp);
        observe(&rp, "A", "dies holding it");
        env->wall_ms += 1002;
        env->mono_ms += 1002;
        tslock_acquire(p.lb, 0);
        out->believes[1] = out->holds[1] = tslock_lock_is_held(p.lb);
        flush_pending(&rp);
        note_stuck(&rp, out);
    } else
        snprintf(out->error, sizeof(out->error), "cannot take the lock");
    return pair_close(&p, &rp, out);
}

/* ------------------------------------------ h. an identical stamp */

struct race_h_cast {
    naive_client *j1, *j2;
    tslock_lock *la;
};

/*
 * Inside A's pause before its release: J1, whose lease ran out while it
 * stalled, releases as the Java client does (DEL: A's live lock is gone),
 * and J2 takes the free key with the very stamp A holds.  Java stamps are
 * now + lockExpires + 1, so J2's lockExpires is A's stamp - now - 1.
 */
static void race_h_java(actor *self)
{
    struct race_h_cast *h = self->other;
    int64_t expires = strtoll(tslock_lock_value(h->la), NULL, 10)
                      - self->rp->env->wall_ms - 1;

    naive_java_release(h->j1, self->rp->key);
    self->inner_rc = naive_del_recovery_acquire(h->j2, self->rp->key, expires);
}

/* J1 held and stalled, A took over, then A releases: does J2's lock stand? */
static int race_h(tslock_scheme scheme, race_env *env, const char *key,
                  race_result *out)
{
    replay rp;
    actor a = {&rp, "A", NULL, NULL, NULL, NULL, 0, 0},
          j1 = {&rp, "J1", NULL, NULL, NULL, NULL, 0, 0},
          j2 = {&rp, "J2", NULL, NULL, NULL, NULL, 0, 0};
    naive_client n1, n2;
    struct race_h_cast h = {&n1, &n2, NULL};
    tslock_client *ca = NULL;

    if (replay_open(&rp, env, key, out) != 0)
        return -1;
    n1 = naive_as(&rp, &j1);
    n2 = naive_as(&rp, &j2);
    h.la = lock_as(&rp, &a, 1000, &ca);
    a.other = &h;
    if (h.la != NULL && n1.redis != NULL && n2.redis != NULL
        && tslock_lock_set_scheme(h.la, scheme) == TSLOCK_OK
        && naive_del_recovery_acquire(&n1, key, 1000) == NAIVE_HELD) {
        flush_pending(&rp); /* J1's acquire, before it stalls */
        env->wall_ms += 2000;
        env->mono_ms += 2000;
        if (tslock_acquire(h.la, 0) == TSLOCK_OK) {
            out->trace[0] = '\0'; /* the race is A's release */
            a.at = "EVALSHA";     /* a bridge acquire sends one too */
            a.action = race_h_java;
            tslock_release(h.la);
        }
        flush_pending(&rp);
        out->believes[1] = a.inner_rc == NAIVE_HELD;
        out->holds[1] = out->believes[1] && naive_stands(&rp, &n2);
    } else
        snprintf(out->error, sizeof(out->error), "cannot take the lock");
    tslock_lock_free(h.la);
    tslock_client_free(ca);
    tslock_conn_free(n1.redis);
    tslock_conn_free(n2.redis);
    replay_close(&rp);
    return out->error[0] != '\0' ? -1 : 0;
}

static int race_h_broken(race_env *env, const char *key, race_result *out)
{
    return race_h(TSLOCK_SCHEME_TIMESTAMP, env, key, out);
}

static int race_h_tslock(race_env *env, const char *key, race_result *out)
{
    return race_h(TSLOCK_SCHEME_BRIDGE, env, key, out);
}

/* ------------------------------------------------- n. the repeated run */

/*
 * n: H1 and H2 run the same scheduled job; their timers fire 3 s apart
 * and the job takes 1 s.  H1 takes the token lock, runs the job and ends
 * its hold: with a plain release (broken), or with tslock_release_after()
 * and a minimum of 5 s, which shortens the lease to the 4 s left.  Then
 * H2 fires.  Does the job run twice in one period?
 */
static int repeat_race(int broken, race_env *env, const char *key,
                       race_result *out)
{
    replay rp;
    actor a = {&rp, "H1", NULL, NULL, NULL, NULL, 0, 0},
          b = {&rp, "H2", NULL, NULL, NULL, NULL, 0, 0};
    pair p;

    if (replay_open(&rp, env, key, out) != 0)
        return -1;
    out->runs = 1;
    if (pair_open(&p, &rp, &a, &b, 0, 1) != 0
        || tslock_acquire(p.la, 0) != TSLOCK_OK)
        snprintf(out->error, sizeof(out->error), "cannot take the lock");
    else {
        flush_pending(&rp);
        out->holds[0] = 1;
        env->wall_ms += 1000; /* the job */
        env->mono_ms += 1000;
        observe(&rp, "H1", "(runs the job: 1 s)");
        if (broken)
            tslock_release(p.la);
        else
            tslock_release_after(p.la, 5000);
        flush_pending(&rp);
        env->wall_ms += 2000; /* H2's timer fires 3 s after H1's */
        env->mono_ms += 2000;
        if (tslock_acquire(p.lb, 0) == TSLOCK_OK) {
            flush_pending(&rp);
            out->holds[1] = 1;
            observe(&rp, "H2", "(runs the job again)");
        } else {
            flush_pending(&rp);
            observe(&rp, "H2", "(finds it held: the job ran)");
        }
    }
    return pair_close(&p, &rp, out);
}

static int race_n_broken(race_env *env, const char *key, race_result *out)
{
    return repeat_race(1, env, key, out);
}

static int race_n_tslock(race_env *env, const char *key, race_result *out)
{
    return repeat_race(0, env, key, out);
}

/* ---------------------------------------------------------- the table */

const race races[] = {
    {"a",
     "DEL after seeing expiry (P2/P3, C1/C2)",
     {"P2", "P3"},
     "naive DEL recovery",
     "GETSET takeover",
     race_a_broken,
     race_a_tslock,
     2,
     1,
     "P3:SETNX P3:GET P2:SETNX P2:GET P2:DEL P2:SETNX P3:DEL P3:SETNX",
     "P3:SETNX P3:GET P2:SETNX P2:GET P2:GETSET P3:GETSET P3:EVALSHA",
     "P3:SETNX",
     "P3:GETSET",
     "a-del-after-seeing-expiry-p2p3"},
    {"b",
     "the GETSET loser (P4/P5, C4/C5)",
     {"P5", "P4"},
     "blind GETSET takeover",
     "GETSET takeover reading the old stamp",
     race_b_broken,
     race_b_tslock,
     2,
     1,
     "P4:SETNX P4:GET P5:SETNX P5:GET P5:GETSET P4:GETSET",
     "P4:SETNX P4:GET P5:SETNX P5:GET P5:GETSET P4:GETSET P4:EVALSHA",
     "P4:GETSET",
     "P4:GETSET",
     "b-the-getset-loser-p4p5"},
    {"c",
     "release after expiry (A stalled past its lease)",
     {"A", "B"},
     "Java unlock0 release",
     "release that checks its own lease",
     race_c_broken,
     race_c_tslock,
     0,
     1,
     "A:GET A:DEL",
     "",
     "A:DEL",
     "A:(lease over: sends nothing)",
     "c-release-after-expiry"},
    {"d",
     "check, then delete: A's release after its lease ran out",
     {"A", "B"},
     "classic GET, compare, DEL",
     "Lua compare-and-delete",
     race_d_broken,
     race_d_tslock,
     0,
     1,
     "A:GET B:SETNX B:GET B:GETSET A:DEL A:PUBLISH",
     "B:SETNX B:GET B:GETSET A:EVALSHA",
     "A:DEL",
     "A:EVALSHA",
     "d-check-then-delete"},
    {"e",
     "crash between SETNX and EXPIRE",
     {"A", "B"},
     "SETNX, then EXPIRE",
     "a stamp that expires by itself",
     race_e_broken,
     race_e_tslock,
     0,
     1,
     "A:SETNX A:crash B:SETNX",
     "A:SETNX B:SETNX B:GET B:GETSET",
     "A:dies before EXPIRE",
     "B:GETSET",
     "e-crash-between-setnx-and-expire"},
    {"f",
     "release after expiry, with tokens (A stalled past its TTL)",
     {"A", "B"},
     "unconditional DEL release",
     "Lua compare-and-delete of the token",
     race_f_broken,
     race_f_tslock,
     0,
     1,
     "A:DEL",
     "A:EVALSHA",
     "A:DEL",
     "A:EVALSHA",
     "c-release-after-expiry"},
    {"g",
     "check, then delete, with tokens: GET, compare, DEL",
     {"A", "B"},
     "token GET, compare, DEL",
     "Lua compare-and-delete of the token",
     race_g_broken,
     race_g_tslock,
     0,
     1,
     "A:GET B:SET A:DEL",
     "B:SET A:EVALSHA",
     "A:DEL",
     "A:EVALSHA",
     "d-check-then-delete"},
    {"h",
     "an identical stamp after a legacy DEL (bridge mode)",
     {"A", "J2"},
     "timestamp release",
     "bridge release proving its hold",
     race_h_broken,
     race_h_tslock,
     0,
     1,
     "J1:GET J1:DEL J2:SETNX A:EVALSHA",
     "J1:GET J1:DEL J2:SETNX A:EVALSHA",
     "A:EVALSHA",
     "A:EVALSHA",
     "h-an-identical-stamp"},
    {"n",
     "the repeated run: a scheduled job on two hosts firing 3 s apart",
     {"H1", "H2"},
     "release when the job ends",
     "hold at least 5 s (tslock_release_after)",
     race_n_broken,
     race_n_tslock,
     2,
     1,
     "H1:SET H1:EVALSHA H2:SET",
     "H1:SET H1:EVALSHA H2:SET H2:GET H2:PTTL",
     "H2:(runs the job again)",
     "H2:(finds it held: the job ran)",
     "n-the-repeated-run"},
};
const size_t n_races = sizeof(races) / sizeof(races[0]);

const race *race_find(const char *id)
{
    size_t i;

    for (i = 0; i < n_races; i++)
        if (strcmp(races[i].id, id) == 0)
            return &races[i];
    return NULL;
}

int race_holders(const race_result *r)
{
    return r->holds[0] + r->holds[1];
}

void race_verdict(const race *rc, const race_result *r, char *buf, size_t size)
{
    int i;

    if (r->runs) {
        if (r->holds[0] && r->holds[1])
            snprintf(buf, size,
                     "both %s and %s ran the job in one period - it ran "
                     "twice, each time under a correct lock",
                     rc->actors[0], rc->actors[1]);
        else
            snprintf(buf, size, "only %s ran the job; %s found it held",
                     rc->actors[r->holds[0] ? 0 : 1],
                     rc->actors[r->holds[0] ? 1 : 0]);
        return;
    }
    if (r->holds[0] && r->holds[1]) {
        snprintf(buf, size,
                 "both %s and %s hold the lock - mutual exclusion lost",
                 rc->actors[0], rc->actors[1]);
        return;
    }
    /* A holder whose value was deleted works with no lock at all. */
    for (i = 0; i < 2; i++)
        if (r->believes[i] && !r->holds[i]) {
            snprintf(buf, size,
                     "%s believes it holds the lock, but its value was "
                     "deleted - mutual exclusion lost",
                     rc->actors[i]);
            return;
        }
    if (r->stuck)
        snprintf(buf, size,
                 "nobody holds it, yet the key never expires - "
                 "locked out for good");
    else if (r->holds[0] || r->holds[1])
        snprintf(buf, size, "only %s holds it",
                 rc->actors[r->holds[0] ? 0 : 1]);
    else
        snprintf(buf, size, "nobody holds it");
}

/* ------------------------------------------------ a race, both sides */

/* What race_play() puts between a side and the caller's env. */
struct play_tap {
    race_side *side;
    const race_env *outer;
};

static redisContext *play_raw(void *ud)
{
    const struct play_tap *tap = ud;

    return tap->outer->raw(tap->outer->ud);
}

static tslock_client *play_client(void *ud)
{
    const struct play_tap *tap = ud;

    return tap->outer->client(tap->outer->ud);
}

/* Keep the step, then hand it on to the caller's narration. */
static void play_keep(const race_step *st, void *ud)
{
    struct play_tap *tap = ud;
    race_side *sd = tap->side;

    if (sd->n_steps < RACE_MAX_STEPS) {
        race_step_rec *k = &sd->steps[sd->n_steps++];
        snprintf(k->actor, sizeof(k->actor), "%s", st->actor);
        snprintf(k->command, sizeof(k->command), "%s", st->command);
        snprintf(k->value, sizeof(k->value), "%s", st->value);
        k->pttl = st->pttl;
        k->clock_ms = st->clock_ms;
    }
    if (tap->outer->narrate != NULL)
        tap->outer->narrate(st, tap->outer->ud);
}

/* The last step narrated as "ACTOR:what", or -1. */
static int play_find(const race_side *sd, const char *at)
{
    const char *colon = strchr(at, ':');
    size_t alen = colon != NULL ? (size_t)(colon - at) : 0;
    int i;

    for (i = sd->n_steps - 1; colon != NULL && i >= 0; i--)
        if (strlen(sd->steps[i].actor) == alen
            && strncmp(sd->steps[i].actor, at, alen) == 0
            && strcmp(sd->steps[i].command, colon + 1) == 0)
            return i;
    return -1;
}

/* Compare a side with the table; 1 and why when it differs. */
static int play_judge(const race *r, race_side *sd, int broken)
{
    int want = broken ? r->broken_holders : r->tslock_holders;
    const char *trace = broken ? r->broken_trace : r->tslock_trace;
    const char *at = broken ? r->broken_at : r->tslock_at;

    race_verdict(r, &sd->res, sd->verdict, sizeof(sd->verdict));
    sd->mark = play_find(sd, at);
    if (race_holders(&sd->res) != want)
        snprintf(sd->mismatch, sizeof(sd->mismatch),
                 "%d holder%s at the end, documented %d",
                 race_holders(&sd->res), race_holders(&sd->res) == 1 ? "" : "s",
                 want);
    else if (strcmp(sd->res.trace, trace) != 0)
        snprintf(sd->mismatch, sizeof(sd->mismatch),
                 "trace \"%.100s\", documented \"%.100s\"", sd->res.trace,
                 trace);
    else if (sd->mark < 0)
        snprintf(sd->mismatch, sizeof(sd->mismatch),
                 "no step %s, documented as the one that decides it", at);
    sd->documented = sd->mismatch[0] == '\0';
    return sd->documented ? 0 : 1;
}

int race_play(const race *r, race_env *env, const char *key, race_side out[2])
{
    int64_t wall = env->wall_ms, mono = env->mono_ms;
    int side, rc = 0;

    for (side = 0; side < 2; side++) {
        struct play_tap tap = {&out[side], env};
        race_env e = {play_raw, play_client, play_keep, &tap, wall, mono};
        int (*run)(race_env *, const char *, race_result *) =
            side == 0 ? r->run_broken : r->run_tslock;

        memset(&out[side], 0, sizeof(out[side]));
        out[side].start_ms = wall;
        if (env->narrate != NULL)
            env->narrate(NULL, env->ud); /* a side begins */
        if (run(&e, key, &out[side].res) != 0) {
            snprintf(out[side].mismatch, sizeof(out[side].mismatch),
                     "the replay failed: %.200s", out[side].res.error);
            out[side].mark = -1;
            return -1;
        }
        if (play_judge(r, &out[side], side == 0) != 0)
            rc = 1;
        env->wall_ms = e.wall_ms;
        env->mono_ms = e.mono_ms;
    }
    return rc;
}

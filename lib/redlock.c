/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * redlock.c - one lock over N independent masters, the Redlock algorithm
 * of the Redis documentation: the same random token under the same key on
 * every master, held while a majority took it within the validity time.
 * Each master is driven through an ordinary token lock (token.c and the
 * compat/ paths), so every server from 2.2 on takes part.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tslock_int.h"

#define REDLOCK_MAX_MASTERS 63

/* What this object knows of a master beyond its lock's held flag. */
enum {
    MARK_NONE,
    MARK_MAYBE /* our write's answer was lost */,
    MARK_RELEASED /* released by a call that returned ENOQUORUM */
};

struct tslock_redlock {
    size_t n;
    tslock_client **clients; /* borrowed */
    tslock_lock **locks;     /* one token lock per master */
    unsigned char *mark;     /* MARK_* of each master */
    /* The clients' own timeouts, put back by tslock_redlock_free(). */
    int *own_connect, *own_command;
    int *applied; /* the per-master timeout applied, 0 before */
    char *key;
    int64_t ttl_ms;
    int server_ms; /* 0: derived from the ttl */
    int retry_min_ms, retry_max_ms;
    int held;
    int taken;           /* masters holding our token, as far as we know */
    int64_t valid_until; /* monotonic ms; -1 when unknown (adopted) */
    char token[33];
    char handle[48];
    char errstr[2 * TSLOCK__ERRSTR_SIZE];
};

/* N/2 + 1. */
static int quorum(const tslock_redlock *rl)
{
    return (int)(rl->n / 2 + 1);
}

/* The clock allowance of the algorithm: 1% of the lease plus 2 ms. */
static int64_t drift_ms(int64_t ttl_ms)
{
    return ttl_ms / 100 + 2;
}

/* Time is read from the first master's client (tslock_client_set_clock). */
static int64_t mono_now(const tslock_redlock *rl)
{
    return tslock__now(rl->clients[0], TSLOCK_CLOCK_MONOTONIC);
}

static int fail(tslock_redlock *rl, int code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

static int fail(tslock_redlock *rl, int code, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(rl->errstr, sizeof(rl->errstr), fmt, ap);
    va_end(ap);
    return code;
}

/* Append "; master I (WHERE): WHAT" to the detail. */
static void note(tslock_redlock *rl, size_t i, int rc)
{
    const tslock_client *c = rl->clients[i];
    size_t len = strlen(rl->errstr);
    char where[96];

    if (c->transport == TRANSPORT_TCP)
        snprintf(where, sizeof(where), "%.64s:%d", c->host, c->port);
    else if (c->transport == TRANSPORT_UNIX)
        snprintf(where, sizeof(where), "%.90s", c->host);
    else
        snprintf(where, sizeof(where), "%s",
                 c->transport == TRANSPORT_NONE ? "not connected" : "wrapped");
    /* The one-server advice (take the timestamp scheme) does not apply. */
    const char *why = rc == TSLOCK_EUNSUPPORTED
                          ? "neither WATCH nor Lua (Redis 2.0), so a token "
                            "with a TTL cannot be written atomically"
                          : c->errstr;

    snprintf(rl->errstr + len, sizeof(rl->errstr) - len,
             "; master %zu (%s): %s%s%.160s", i + 1, where,
             rc == TSLOCK_OK ? "ok" : tslock_errname(rc),
             rc != TSLOCK_OK && why[0] != '\0' ? ": " : "",
             rc != TSLOCK_OK ? why : "");
}

/* "HEAD" before the per-master notes already in errstr. */
static void headline(tslock_redlock *rl, const char *head)
{
    size_t size = sizeof(rl->errstr), hl = strlen(head);
    size_t tl = strlen(rl->errstr);

    if (hl >= size)
        hl = size - 1;
    if (hl + tl >= size)
        tl = size - 1 - hl;
    memmove(rl->errstr + hl, rl->errstr, tl);
    memcpy(rl->errstr, head, hl);
    rl->errstr[hl + tl] = '\0';
}

int tslock_redlock_new(tslock_redlock **out, tslock_client *const *clients,
                       size_t n, const char *key)
{
    tslock_redlock *rl;
    size_t i, j;
    int rc = TSLOCK_ENOMEM;

    if (out == NULL)
        return TSLOCK_EINVAL;
    *out = NULL;
    if (clients == NULL || key == NULL || key[0] == '\0' || n < 3 || n % 2 == 0
        || n > REDLOCK_MAX_MASTERS)
        return TSLOCK_EINVAL;
    for (i = 0; i < n; i++) {
        if (clients[i] == NULL)
            return TSLOCK_EINVAL;
        for (j = 0; j < i; j++)
            if (clients[j] == clients[i])
                return TSLOCK_EINVAL;
    }
    rl = calloc(1, sizeof(*rl));
    if (rl == NULL)
        return TSLOCK_ENOMEM;
    rl->n = n;
    rl->clients = calloc(n, sizeof(*rl->clients));
    rl->locks = calloc(n, sizeof(*rl->locks));
    rl->mark = calloc(n, 1);
    rl->own_connect = calloc(n, sizeof(int));
    rl->own_command = calloc(n, sizeof(int));
    rl->applied = calloc(n, sizeof(int));
    rl->key = strdup(key);
    if (rl->clients == NULL || rl->locks == NULL || rl->mark == NULL
        || rl->own_connect == NULL || rl->own_command == NULL
        || rl->applied == NULL || rl->key == NULL)
        goto out;
    for (i = 0; i < n; i++) {
        rl->clients[i] = clients[i];
        rl->own_connect[i] = clients[i]->connect_ms;
        rl->own_command[i] = clients[i]->command_ms;
        rc = tslock_lock_new(&rl->locks[i], clients[i], key);
        if (rc != TSLOCK_OK)
            goto out;
        /* Token scheme; no waiting, no recovery: this file does both. */
        (void)tslock_lock_set_scheme(rl->locks[i], TSLOCK_SCHEME_TOKEN);
        (void)tslock_lock_set_reconnect(rl->locks[i], 0);
        (void)tslock_lock_set_wakeup(rl->locks[i], 0);
    }
    rl->ttl_ms = 30000;
    rl->retry_min_ms = 50;
    rl->retry_max_ms = 100;
    *out = rl;
    return TSLOCK_OK;
out:
    tslock_redlock_free(rl);
    return rc;
}

void tslock_redlock_free(tslock_redlock *rl)
{
    size_t i;

    if (rl == NULL)
        return;
    for (i = 0; rl->locks != NULL && i < rl->n; i++)
        tslock_lock_free(rl->locks[i]);
    for (i = 0; rl->applied != NULL && i < rl->n; i++)
        if (rl->applied[i] != 0)
            (void)tslock_client_set_timeouts(rl->clients[i], rl->own_connect[i],
                                             rl->own_command[i]);
    free(rl->own_connect);
    free(rl->own_command);
    free(rl->applied);
    free(rl->locks);
    free(rl->clients);
    free(rl->mark);
    free(rl->key);
    free(rl);
}

int tslock_redlock_set_ttl(tslock_redlock *rl, int64_t ttl_ms)
{
    if (rl == NULL || ttl_ms <= 0 || ttl_ms > INT64_C(315360000000))
        return TSLOCK_EINVAL;
    rl->ttl_ms = ttl_ms;
    return TSLOCK_OK;
}

int tslock_redlock_set_server_timeout(tslock_redlock *rl, int ms)
{
    if (rl == NULL || ms < 0)
        return TSLOCK_EINVAL;
    rl->server_ms = ms;
    return TSLOCK_OK;
}

int tslock_redlock_set_retry(tslock_redlock *rl, int min_ms, int max_ms)
{
    if (rl == NULL || min_ms < 1 || max_ms < min_ms)
        return TSLOCK_EINVAL;
    rl->retry_min_ms = min_ms;
    rl->retry_max_ms = max_ms;
    return TSLOCK_OK;
}

/* The per-master timeout: as set, or a tenth of the ttl in [5, 1000]. */
static int server_timeout(const tslock_redlock *rl, int own_command_ms)
{
    int64_t ms = rl->server_ms;

    if (ms > 0)
        return (int)ms;
    ms = rl->ttl_ms / 10;
    ms = ms < 5 ? 5 : ms > 1000 ? 1000 : ms;
    if (own_command_ms > 0 && own_command_ms < ms)
        ms = own_command_ms;
    return (int)ms;
}

static int cap_ms(int current, int ms)
{
    return current == 0 || current > ms ? ms : current;
}

enum master_op { OP_ACQUIRE, OP_RELEASE, OP_EXTEND };

/*
 * One operation on master i within the per-master timeout: a client whose
 * connection failed earlier is reconnected first, so a master that comes
 * back takes part again.
 */
static int on_master(tslock_redlock *rl, size_t i, enum master_op op,
                     int64_t ttl_ms)
{
    tslock_client *c = rl->clients[i];
    tslock_lock *l = rl->locks[i];
    int ms = server_timeout(rl, rl->own_command[i]);
    int rc = TSLOCK_OK;

    /*
     * The client keeps the per-master timeout while the Redlock lives
     * (set once, not around every command: each change is two system
     * calls on the socket, which cost as much as a round trip).
     */
    if (rl->applied[i] != ms) {
        (void)tslock_client_set_timeouts(c, cap_ms(rl->own_connect[i], ms),
                                         cap_ms(rl->own_command[i], ms));
        rl->applied[i] = ms;
    }
    if (c->transport != TRANSPORT_NONE && (c->broken || c->ctx == NULL))
        rc = tslock__reconnect_within(c, ms);
    if (rc != TSLOCK_OK)
        return rc;
    switch (op) {
    case OP_ACQUIRE:
        l->orphan[0] = '\0'; /* lost answers are settled here, not there */
        memcpy(l->given, rl->token, sizeof(l->given));
        rc = tslock_lock_set_ttl(l, rl->ttl_ms);
        if (rc == TSLOCK_OK)
            rc = tslock_acquire(l, 0);
        l->given[0] = '\0';
        l->orphan[0] = '\0';
        break;
    case OP_RELEASE:
        rc = tslock_release(l);
        break;
    default:
        rc = tslock_extend(l, ttl_ms);
        break;
    }
    return rc;
}

/* Whether an acquire's outcome leaves our token possibly on the master. */
static int maybe_written(int rc)
{
    return rc != TSLOCK_OK && rc != TSLOCK_EBUSY && rc != TSLOCK_EUNREADABLE
           && rc != TSLOCK_EUNSUPPORTED && rc != TSLOCK_EHOOK
           && rc != TSLOCK_EWRONGTYPE && rc != TSLOCK_EINVAL
           && rc != TSLOCK_ESTATE;
}

/*
 * Delete our token from every master that took it or whose answer was
 * lost.  A master that does not answer keeps it until its TTL: the
 * object forgets it either way, so the next attempt starts clean.
 */
static void release_everywhere(tslock_redlock *rl)
{
    char handle[48];
    size_t i;

    snprintf(handle, sizeof(handle), "token:%s", rl->token);
    for (i = 0; i < rl->n; i++) {
        tslock_lock *l = rl->locks[i];
        if (!l->held && rl->mark[i] == MARK_MAYBE)
            (void)tslock_lock_adopt(l, handle);
        if (l->held)
            (void)on_master(rl, i, OP_RELEASE, 0);
        l->held = 0;
        rl->mark[i] = MARK_NONE;
    }
    rl->held = 0;
    rl->taken = 0;
}

/*
 * A master whose answer was lost may hold our token: its lock object
 * holds it too, so release and extend reach it (finding it there or
 * not, TSLOCK_ELOST).
 */
static void adopt_maybe(tslock_redlock *rl)
{
    char handle[48];
    size_t i;

    snprintf(handle, sizeof(handle), "token:%s", rl->token);
    for (i = 0; i < rl->n; i++)
        if (rl->mark[i] == MARK_MAYBE) {
            (void)tslock_lock_adopt(rl->locks[i], handle);
            rl->mark[i] = MARK_NONE;
        }
}

/* What one attempt's masters answered. */
struct tally {
    int taken, errors, unsupported;
    int64_t start, elapsed;
};

/* The attempt's outcome from its tally, with its headline in head. */
static int verdict(tslock_redlock *rl, const struct tally *t, char *head,
                   size_t size)
{
    int64_t validity = rl->ttl_ms - t->elapsed - drift_ms(rl->ttl_ms);

    if (t->unsupported > 0) {
        /* A master set with one too old is a mistake to hear about. */
        snprintf(head, size,
                 "Redlock needs every master to be Redis 2.2 or later");
        return TSLOCK_EUNSUPPORTED;
    }
    if (t->taken >= quorum(rl) && validity > 0 && t->elapsed >= 0) {
        snprintf(head, size, "'%s' taken on %d of %zu masters", rl->key,
                 t->taken, rl->n);
        return TSLOCK_OK;
    }
    if (t->errors > (int)rl->n - quorum(rl)) {
        snprintf(head, size,
                 "'%s': %d of %zu masters failed, so no majority of %d is "
                 "possible",
                 rl->key, t->errors, rl->n, quorum(rl));
        return TSLOCK_ENOQUORUM;
    }
    if (t->taken >= quorum(rl))
        snprintf(head, size,
                 "'%s' taken on %d of %zu masters but too slowly: %lld ms of "
                 "a %lld ms lease left no validity",
                 rl->key, t->taken, rl->n, (long long)t->elapsed,
                 (long long)rl->ttl_ms);
    else
        snprintf(head, size, "'%s' taken on %d of %zu masters, %d needed",
                 rl->key, t->taken, rl->n, quorum(rl));
    return TSLOCK_EBUSY;
}

/* One attempt over every master, in order, as the algorithm says. */
static int attempt(tslock_redlock *rl)
{
    struct tally t = {0, 0, 0, 0, 0};
    char head[160];
    size_t i;
    int rc = tslock__make_token(rl->clients[0], rl->token);

    if (rc != TSLOCK_OK)
        return fail(rl, rc, "%s", rl->clients[0]->errstr);
    t.start = mono_now(rl);
    if (t.start < 0)
        return fail(rl, TSLOCK_ECLOCK, "monotonic clock failed");
    rl->errstr[0] = '\0';
    for (i = 0; i < rl->n; i++) {
        rc = on_master(rl, i, OP_ACQUIRE, 0);
        rl->mark[i] = maybe_written(rc) ? MARK_MAYBE : MARK_NONE;
        t.taken += rc == TSLOCK_OK;
        t.unsupported += rc == TSLOCK_EUNSUPPORTED;
        t.errors += rc != TSLOCK_OK && rc != TSLOCK_EBUSY
                    && rc != TSLOCK_EUNREADABLE && rc != TSLOCK_EUNSUPPORTED;
        note(rl, i, rc);
    }
    t.elapsed = mono_now(rl) - t.start;
    rl->taken = t.taken;
    rc = verdict(rl, &t, head, sizeof(head));
    headline(rl, head);
    if (rc == TSLOCK_OK) {
        rl->held = 1;
        rl->valid_until = t.start + rl->ttl_ms - drift_ms(rl->ttl_ms);
        adopt_maybe(rl);
    } else {
        release_everywhere(rl);
    }
    return rc;
}

static int drain_cancel(tslock_redlock *rl)
{
    tslock_lock *l = rl->locks[0];
    char buf[64];

    while (read(l->cancel_pipe[0], buf, sizeof(buf)) > 0)
        ;
    l->cancel_flag = 0;
    return fail(rl, TSLOCK_ECANCELED, "wait for Redlock '%s' was canceled",
                rl->key);
}

int tslock_redlock_acquire(tslock_redlock *rl, int64_t wait_ms)
{
    int64_t deadline = 0, delay, left;
    int span, rc;

    if (rl == NULL || wait_ms < TSLOCK_WAIT_FOREVER)
        return TSLOCK_EINVAL;
    if (rl->held)
        return fail(rl, TSLOCK_ESTATE, "Redlock '%s' is already held", rl->key);
    if (wait_ms > 0)
        deadline = mono_now(rl) + wait_ms;
    for (;;) {
        rc = attempt(rl);
        /* Busy and unreachable masters alike may be free later. */
        if (rc != TSLOCK_EBUSY && rc != TSLOCK_ENOQUORUM)
            return rc;
        if (wait_ms == 0)
            return rc;
        span = rl->retry_max_ms - rl->retry_min_ms + 1;
        delay = rl->retry_min_ms
                + (int64_t)(tslock__random64(rl->clients[0]) % (unsigned)span);
        if (wait_ms != TSLOCK_WAIT_FOREVER) {
            left = deadline - mono_now(rl);
            if (left <= 0)
                return rc;
            if (delay > left)
                delay = left;
        }
        if (tslock__wait(rl->locks[0], delay) == TSLOCK_ECANCELED)
            return drain_cancel(rl);
    }
}

/* Forget the hold on every master, whatever is left on them. */
static void forget(tslock_redlock *rl)
{
    size_t i;

    for (i = 0; i < rl->n; i++) {
        rl->locks[i]->held = 0;
        rl->mark[i] = MARK_NONE;
    }
    rl->held = 0;
    rl->taken = 0;
}

/*
 * Release on every master still holding our token.  The lock is free
 * for others once fewer than a majority can still hold it; it was ours
 * to the end only if a majority held it when released.
 */
int tslock_redlock_release(tslock_redlock *rl)
{
    int released = 0, pending = 0, rc;
    size_t i;
    char head[200];

    if (rl == NULL)
        return TSLOCK_EINVAL;
    if (!rl->held)
        return fail(rl, TSLOCK_ESTATE, "Redlock '%s' is not held", rl->key);
    rl->errstr[0] = '\0';
    for (i = 0; i < rl->n; i++) {
        if (rl->mark[i] == MARK_RELEASED) { /* released by an earlier call */
            released++;
            continue;
        }
        if (!rl->locks[i]->held)
            continue;
        rc = on_master(rl, i, OP_RELEASE, 0);
        if (rc == TSLOCK_OK) {
            rl->mark[i] = MARK_RELEASED;
            released++;
        } else if (rl->locks[i]->held) {
            pending++; /* not reached: may still hold our token */
        }
        note(rl, i, rc);
    }
    if (released + pending < quorum(rl)) {
        snprintf(head, sizeof(head),
                 "Redlock '%s' was lost: our token was left on %d of %zu "
                 "masters, %d needed",
                 rl->key, released, rl->n, quorum(rl));
        rc = TSLOCK_ELOST;
    } else if (pending < quorum(rl)) {
        snprintf(head, sizeof(head), "released '%s' on %d of %zu masters%s",
                 rl->key, released, rl->n,
                 pending > 0 ? " (the rest run out by their TTL)" : "");
        rc = TSLOCK_OK;
    } else {
        snprintf(head, sizeof(head),
                 "Redlock '%s' released on only %d of %zu masters; %d could "
                 "not be reached and may still hold it: try again",
                 rl->key, released, rl->n, pending);
        rc = TSLOCK_ENOQUORUM;
    }
    headline(rl, head);
    if (rc != TSLOCK_ENOQUORUM)
        forget(rl);
    return rc;
}

int tslock_redlock_extend(tslock_redlock *rl, int64_t ttl_ms)
{
    int64_t start, validity, now;
    int extended = 0, pending = 0, rc;
    size_t i;
    char head[200];

    if (rl == NULL || ttl_ms < 0 || ttl_ms > INT64_C(315360000000))
        return TSLOCK_EINVAL;
    if (!rl->held)
        return fail(rl, TSLOCK_ESTATE, "Redlock '%s' is not held", rl->key);
    if (ttl_ms == 0)
        ttl_ms = rl->ttl_ms;
    rl->errstr[0] = '\0';
    start = mono_now(rl);
    for (i = 0; i < rl->n; i++) {
        if (!rl->locks[i]->held || rl->mark[i] == MARK_RELEASED)
            continue;
        rc = on_master(rl, i, OP_EXTEND, ttl_ms);
        if (rc == TSLOCK_OK)
            extended++;
        else if (rl->locks[i]->held)
            pending++;
        note(rl, i, rc);
    }
    now = mono_now(rl);
    validity = start + ttl_ms - drift_ms(ttl_ms) - now;
    if (extended >= quorum(rl) && validity > 0) {
        rl->valid_until = start + ttl_ms - drift_ms(ttl_ms);
        rl->taken = extended;
        snprintf(head, sizeof(head), "extended '%s' on %d of %zu masters",
                 rl->key, extended, rl->n);
        headline(rl, head);
        return TSLOCK_OK;
    }
    if (extended + pending >= quorum(rl)
        && (rl->valid_until < 0 || rl->valid_until > now)) {
        snprintf(head, sizeof(head),
                 "Redlock '%s' extended on only %d of %zu masters in time "
                 "(%d not reached); still held with the validity it had",
                 rl->key, extended, rl->n, pending);
        headline(rl, head);
        return TSLOCK_ENOQUORUM;
    }
    snprintf(head, sizeof(head),
             "Redlock '%s' was lost: extended on %d of %zu masters%s, %d "
             "needed; released everywhere",
             rl->key, extended, rl->n, validity > 0 ? "" : " too slowly",
             quorum(rl));
    headline(rl, head);
    release_everywhere(rl);
    return TSLOCK_ELOST;
}

int64_t tslock_redlock_validity_ms(const tslock_redlock *rl)
{
    int64_t left;

    if (rl == NULL || !rl->held)
        return 0;
    if (rl->valid_until < 0)
        return -1;
    left = rl->valid_until - mono_now(rl);
    return left > 0 ? left : 0;
}

int tslock_redlock_cancel(tslock_redlock *rl)
{
    return rl == NULL ? TSLOCK_EINVAL : tslock_lock_cancel(rl->locks[0]);
}

int tslock_redlock_is_held(const tslock_redlock *rl)
{
    return rl != NULL && rl->held;
}

int tslock_redlock_taken(const tslock_redlock *rl)
{
    return rl == NULL ? 0 : rl->taken;
}

const char *tslock_redlock_handle(const tslock_redlock *rl)
{
    tslock_redlock *m = (tslock_redlock *)rl; /* the buffer is a cache */

    if (rl == NULL || !rl->held)
        return NULL;
    snprintf(m->handle, sizeof(m->handle), "redlock:%s", rl->token);
    return m->handle;
}

int tslock_redlock_adopt(tslock_redlock *rl, const char *handle)
{
    const char *value;
    char one[48];
    size_t i;

    if (rl == NULL || handle == NULL)
        return TSLOCK_EINVAL;
    if (rl->held)
        return fail(rl, TSLOCK_ESTATE, "Redlock '%s' is already held", rl->key);
    value = strncmp(handle, "redlock:", 8) == 0 ? handle + 8
            : strncmp(handle, "token:", 6) == 0 ? handle + 6
                                                : NULL;
    if (value == NULL || !tslock__is_token(value, strlen(value)))
        return fail(rl, TSLOCK_EINVAL,
                    "handle \"%.80s\" is not redlock:<32 hex digits> or "
                    "token:<32 hex digits>",
                    handle);
    memcpy(rl->token, value, sizeof(rl->token));
    snprintf(one, sizeof(one), "token:%s", rl->token);
    for (i = 0; i < rl->n; i++) {
        rl->locks[i]->held = 0;
        (void)tslock_lock_adopt(rl->locks[i], one);
        rl->mark[i] = MARK_NONE;
    }
    rl->held = 1;
    rl->taken = (int)rl->n;
    rl->valid_until = -1;
    rl->errstr[0] = '\0';
    return TSLOCK_OK;
}

const char *tslock_redlock_errstr(const tslock_redlock *rl)
{
    return rl == NULL ? "" : rl->errstr;
}

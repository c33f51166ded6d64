/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * legacy.c - the Java RedisLock of the articles, the SETNX pattern of the
 * Redis documentation and the redis-py 2.x Lock, each written as its
 * source writes it, flaws included, over raw hiredis.  Only the clock, the
 * retry delays and the optional observer are ours.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "legacy.h"

/* ------------------------------------------------------------ support */

int64_t legacy_now_us(legacy_client *c)
{
    return c->clock != NULL ? c->clock(c->clock_ud) : th_wall_us();
}

/* Retry jitter needs spread, not secrecy: xorshift64 seeded per client. */
static int64_t retry_delay_ms(legacy_client *c)
{
    uint64_t x = c->rng;
    int span = c->retry_max_ms - c->retry_min_ms + 1;

    if (x == 0)
        x = ((uint64_t)getpid() << 32) ^ (uint64_t)legacy_now_us(c) ^ 1u;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    c->rng = x;
    return c->retry_min_ms + (int64_t)(x % (uint64_t)(span > 0 ? span : 1));
}

static int fail(legacy_client *c, int rc, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

static int fail(legacy_client *c, int rc, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(c->errstr, sizeof(c->errstr), fmt, ap);
    va_end(ap);
    return rc;
}

/*
 * One command.  A missing reply or an error reply is LEGACY_EREDIS: the
 * originals would throw, and the tests treat it as a failure.
 */
static int command(legacy_client *c, redisReply **out, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

static int command(legacy_client *c, redisReply **out, const char *fmt, ...)
{
    va_list ap;
    redisReply *r;

    va_start(ap, fmt);
    r = redisvCommand(c->redis, fmt, ap);
    va_end(ap);
    *out = r;
    if (r == NULL)
        return fail(c, LEGACY_EREDIS, "%s", c->redis->errstr);
    if (r->type == REDIS_REPLY_ERROR) {
        fail(c, LEGACY_EREDIS, "%s", r->str);
        freeReplyObject(r);
        *out = NULL;
        return LEGACY_EREDIS;
    }
    return 0;
}

/* A bulk string reply as a C string, NULL for nil (Java's null). */
static const char *reply_str(const redisReply *r)
{
    return r->type == REDIS_REPLY_STRING ? r->str : NULL;
}

/* A TIME reply as Unix microseconds, 0 when it is not one. */
static int64_t time_reply_us(const redisReply *t)
{
    if (t == NULL || t->type != REDIS_REPLY_ARRAY || t->elements != 2
        || t->element[0]->type != REDIS_REPLY_STRING
        || t->element[1]->type != REDIS_REPLY_STRING)
        return 0;
    return strtoll(t->element[0]->str, NULL, 10) * 1000000
           + strtoll(t->element[1]->str, NULL, 10);
}

/*
 * One write of the algorithm.  Without an observer, the command as
 * published.  With one, MULTI, the command, TIME, EXEC in one round trip:
 * the same command, and the server's clock as it ran, into
 * c->write_server_us.  *out is the command's own reply.
 */
static int write_command(legacy_client *c, redisReply **out, const char *fmt,
                         ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

static int write_command(legacy_client *c, redisReply **out, const char *fmt,
                         ...)
{
    redisReply *r = NULL;
    va_list ap;
    int i;

    c->write_us = legacy_now_us(c);
    va_start(ap, fmt);
    if (c->observer == NULL) {
        r = redisvCommand(c->redis, fmt, ap);
        va_end(ap);
        *out = r;
        if (r == NULL)
            return fail(c, LEGACY_EREDIS, "%s", c->redis->errstr);
        if (r->type == REDIS_REPLY_ERROR) {
            fail(c, LEGACY_EREDIS, "%s", r->str);
            freeReplyObject(r);
            *out = NULL;
            return LEGACY_EREDIS;
        }
        return 0;
    }
    redisAppendCommand(c->redis, "MULTI");
    redisvAppendCommand(c->redis, fmt, ap);
    va_end(ap);
    redisAppendCommand(c->redis, "TIME");
    redisAppendCommand(c->redis, "EXEC");
    *out = NULL;
    for (i = 0; i < 4; i++) {
        if (redisGetReply(c->redis, (void **)&r) != REDIS_OK || r == NULL)
            return fail(c, LEGACY_EREDIS, "%s", c->redis->errstr);
        if (i < 3) {
            freeReplyObject(r);
            r = NULL;
        }
    }
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 2
        || r->element[0]->type == REDIS_REPLY_ERROR) {
        fail(c, LEGACY_EREDIS, "EXEC: unexpected reply");
        freeReplyObject(r);
        return LEGACY_EREDIS;
    }
    c->write_server_us = time_reply_us(r->element[1]);
    /* Keep the command's reply; the array goes. */
    *out = r->element[0];
    r->element[0] = NULL;
    freeReplyObject(r);
    return 0;
}

static int setnx(legacy_client *c, const char *key, const char *value)
{
    redisReply *r;
    int rc;

    rc = write_command(c, &r, "SETNX %s %s", key, value);
    if (rc != 0)
        return rc;
    rc = r->type == REDIS_REPLY_INTEGER && r->integer == 1;
    freeReplyObject(r);
    return rc;
}

static int getset(legacy_client *c, redisReply **r, const char *key,
                  const char *value)
{
    return write_command(c, r, "GETSET %s %s", key, value);
}

static void hold(legacy_client *c, const char *value, int64_t lease_end_us)
{
    snprintf(c->value, sizeof(c->value), "%s", value);
    c->lease_end_us = lease_end_us;
    c->won_us = c->write_us;
    c->won_server_us = c->write_server_us;
    c->held = 1;
}

static void note_lost_getset(legacy_client *c, const char *replaced)
{
    if (c->observer != NULL && c->observer->lost_getset != NULL
        && replaced != NULL)
        c->observer->lost_getset(replaced, c->write_us, c->write_server_us,
                                 c->observer->userdata);
}

/*
 * The DEL of a release.  Without an observer, DEL as published.  With
 * one, MULTI/GET/DEL/TIME/EXEC pipelined: still one unconditional DEL at
 * the same point, and the GET beside it in the transaction says exactly
 * what that DEL removed, so a test can tell whose lock it was, and TIME
 * when, on the server's clock.
 */
static int release_del(legacy_client *c, const char *key)
{
    redisReply *r = NULL, *got, *deleted;
    int64_t sent_us;
    int i, rc = 0;

    if (c->observer == NULL) {
        rc = command(c, &r, "DEL %s", key);
        if (rc == 0)
            freeReplyObject(r);
        return rc == 0 ? 1 : rc;
    }
    sent_us = legacy_now_us(c);
    redisAppendCommand(c->redis, "MULTI");
    redisAppendCommand(c->redis, "GET %s", key);
    redisAppendCommand(c->redis, "DEL %s", key);
    redisAppendCommand(c->redis, "TIME");
    redisAppendCommand(c->redis, "EXEC");
    for (i = 0; i < 5; i++) {
        if (redisGetReply(c->redis, (void **)&r) != REDIS_OK || r == NULL)
            return fail(c, LEGACY_EREDIS, "%s", c->redis->errstr);
        if (i < 4) {
            freeReplyObject(r);
            r = NULL;
        }
    }
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 3) {
        freeReplyObject(r);
        return fail(c, LEGACY_EREDIS, "EXEC: unexpected reply");
    }
    got = r->element[0];
    deleted = r->element[1];
    if (deleted->type == REDIS_REPLY_INTEGER && deleted->integer == 1
        && reply_str(got) != NULL && c->observer->deleted != NULL)
        c->observer->deleted(got->str, strcmp(got->str, c->value) == 0, sent_us,
                             time_reply_us(r->element[2]),
                             c->observer->userdata);
    freeReplyObject(r);
    return 1;
}

/* --------------------------------------------------- java RedisLock */

/*
 * Long.parseLong(s): an optional sign and decimal digits that fit in a
 * long; anything else throws NumberFormatException.
 */
static int java_parse_long(legacy_client *c, const char *s, int64_t *out)
{
    const char *p = s;
    int neg = 0;
    uint64_t v = 0;

    if (*p == '-' || *p == '+')
        neg = *p++ == '-';
    if (*p == '\0')
        goto bad;
    for (; *p != '\0'; p++) {
        if (!isdigit((unsigned char)*p)
            || v > (UINT64_C(9223372036854775807) + neg - (*p - '0')) / 10)
            goto bad;
        v = v * 10 + (uint64_t)(*p - '0');
    }
    *out = neg ? -(int64_t)(v - 1) - 1 : (int64_t)v;
    return 0;
bad:
    return fail(c, LEGACY_EPARSE,
                "java.lang.NumberFormatException: For input string: \"%.64s\"",
                s);
}

/*
 * isTimeExpired(value): value == null ||
 *     Long.parseLong(value) < System.currentTimeMillis()
 */
static int java_is_time_expired(legacy_client *c, const char *value)
{
    int64_t v = 0;
    int rc;

    if (value == NULL)
        return 1;
    rc = java_parse_long(c, value, &v);
    if (rc != 0)
        return rc;
    return v < legacy_now_us(c) / 1000;
}

/*
 * One pass of the while loop in RedisLock.lock() of the early articles:
 *
 *   lockExpireTime = System.currentTimeMillis() + lockExpires + 1;
 *   if (setNX(lockKey, stringOfLockExpireTime)) return true;
 *   value = get(lockKey);
 *   if (value != null && isTimeExpired(value)) {
 *       oldValue = getSet(lockKey, stringOfLockExpireTime);
 *       if (oldValue != null && oldValue.equals(value)) return true;
 *   }
 *
 * A GETSET that finds null (the key deleted after our GET) leaves our
 * stamp on a lock nobody holds until it expires: the original's behaviour.
 */
int legacy_java_try_lock(legacy_client *c, const char *key)
{
    int64_t lock_expire_time = legacy_now_us(c) / 1000 + c->timeout_ms + 1;
    char stamp[32], value[64];
    redisReply *r;
    int rc, expired;

    snprintf(stamp, sizeof(stamp), "%" PRId64, lock_expire_time);
    rc = setnx(c, key, stamp);
    if (rc < 0)
        return rc;
    if (rc == 1) {
        /* Others call it expired once the clock passes the stamp. */
        hold(c, stamp, (lock_expire_time + 1) * 1000);
        return LEGACY_HELD;
    }
    if ((rc = command(c, &r, "GET %s", key)) != 0)
        return rc;
    if (reply_str(r) == NULL) {
        freeReplyObject(r);
        return LEGACY_BUSY;
    }
    snprintf(value, sizeof(value), "%s", r->str);
    freeReplyObject(r);
    expired = java_is_time_expired(c, value);
    if (expired <= 0)
        return expired < 0 ? expired : LEGACY_BUSY;
    if ((rc = getset(c, &r, key, stamp)) != 0)
        return rc;
    if (reply_str(r) != NULL && strcmp(r->str, value) == 0) {
        freeReplyObject(r);
        hold(c, stamp, (lock_expire_time + 1) * 1000);
        return LEGACY_HELD;
    }
    note_lost_getset(c, reply_str(r));
    freeReplyObject(r);
    return LEGACY_BUSY;
}

/*
 * RedisLock.lock(timeout, unit, false), the loop as published:
 *
 *   while (timeoutMillis >= 0) {
 *       ...one pass...
 *       long delayMillis = randomDelay();    // nextInt(50) + 50
 *       long sleepMillis = timeoutMillis < delayMillis ? timeoutMillis
 *                                                      : delayMillis;
 *       Thread.sleep(sleepMillis);
 *       timeoutMillis = timeoutMillis - sleepMillis == 0
 *                           ? -1 : timeoutMillis - sleepMillis;
 *   }
 *
 * The wait counts only the sleeps, not the round trips, as in the source.
 */
int legacy_java_lock(legacy_client *c, const char *key, int64_t wait_ms)
{
    int64_t timeout_millis = wait_ms;

    while (timeout_millis >= 0) {
        int64_t delay, sleep_millis;
        int rc = legacy_java_try_lock(c, key);

        if (rc != LEGACY_BUSY)
            return rc;
        delay = retry_delay_ms(c);
        sleep_millis = timeout_millis < delay ? timeout_millis : delay;
        th_sleep_us(sleep_millis * 1000);
        timeout_millis = timeout_millis - sleep_millis == 0
                             ? -1
                             : timeout_millis - sleep_millis;
    }
    return LEGACY_BUSY;
}

/*
 * RedisLock.unlock0():
 *
 *   String value = cache.get(lockKey);
 *   if (!isTimeExpired(value)) doUnlock();      // cache.del(lockKey)
 *
 * It asks only whether the *current* value is unexpired, not whose it is:
 * a holder whose lease ran out deletes the lock of whoever took over.
 */
int legacy_java_unlock0(legacy_client *c, const char *key)
{
    redisReply *r;
    char value[64];
    int rc, expired;

    c->held = 0;
    if ((rc = command(c, &r, "GET %s", key)) != 0)
        return rc;
    if (reply_str(r) == NULL) {
        freeReplyObject(r);
        return 0;
    }
    snprintf(value, sizeof(value), "%s", r->str);
    freeReplyObject(r);
    expired = java_is_time_expired(c, value);
    if (expired != 0)
        return expired < 0 ? expired : 0;
    return release_del(c, key);
}

/* ------------------------------------------ the Redis docs pattern */

/*
 * A stamp as a whole number of seconds.  The pattern gives no code; a
 * careful client rejects what is not a number, a lenient one reads it as
 * atol() and PHP's (int) cast do: the leading digits, else 0.
 */
static int doc_parse(legacy_client *c, const char *s, int64_t *out)
{
    const char *p = s;

    if (c->lenient_parse) {
        *out = strtoll(s, NULL, 10);
        return 0;
    }
    if (*p == '\0')
        goto bad;
    for (*out = 0; *p != '\0'; p++) {
        if (!isdigit((unsigned char)*p) || p - s >= 18)
            goto bad;
        *out = *out * 10 + (*p - '0');
    }
    return 0;
bad:
    return fail(c, LEGACY_EPARSE, "\"%.64s\" is not a Unix time", s);
}

static int64_t doc_now_s(legacy_client *c)
{
    return legacy_now_us(c) / 1000000;
}

static void doc_stamp(legacy_client *c, char *buf, size_t size, int64_t *s)
{
    *s = doc_now_s(c) + (c->timeout_ms + 999) / 1000 + 1;
    snprintf(buf, size, "%" PRId64, *s);
}

/*
 * One pass of the pattern on the Redis SETNX page ("Handling
 * deadlocks", client C4):
 *
 *   SETNX lock.foo <current Unix time + lock timeout + 1>    1: ours
 *   GET lock.foo; not expired (stamp >= now): busy, retry later
 *   GETSET lock.foo <current Unix timestamp + lock timeout + 1>
 *   ours if the old value returned is still expired, else busy
 *
 * Times are whole seconds, as the page's Unix time is: a stamp counts as
 * expired once it is older than the current second.  A GET that finds the
 * key gone goes back to SETNX (the page does not say; that is the
 * obvious reading).  A GETSET that finds it gone has set our stamp on a
 * free lock, so it is ours.
 */
int legacy_redisdoc_try(legacy_client *c, const char *key)
{
    char stamp[32];
    int64_t s, stored, now;
    redisReply *r;
    int rc, pass;

    for (pass = 0; pass < 3; pass++) {
        doc_stamp(c, stamp, sizeof(stamp), &s);
        if ((rc = setnx(c, key, stamp)) < 0)
            return rc;
        if (rc == 1) {
            hold(c, stamp, (s + 1) * 1000000);
            return LEGACY_HELD;
        }
        if ((rc = command(c, &r, "GET %s", key)) != 0)
            return rc;
        if (reply_str(r) != NULL)
            break;
        freeReplyObject(r);
    }
    if (pass == 3)
        return LEGACY_BUSY;
    rc = doc_parse(c, r->str, &stored);
    freeReplyObject(r);
    if (rc != 0)
        return rc;
    if (stored >= doc_now_s(c))
        return LEGACY_BUSY;
    doc_stamp(c, stamp, sizeof(stamp), &s);
    now = doc_now_s(c);
    if ((rc = getset(c, &r, key, stamp)) != 0)
        return rc;
    if (reply_str(r) == NULL) {
        freeReplyObject(r);
        hold(c, stamp, (s + 1) * 1000000);
        return LEGACY_HELD;
    }
    rc = doc_parse(c, r->str, &stored);
    if (rc == 0 && stored < now) {
        freeReplyObject(r);
        hold(c, stamp, (s + 1) * 1000000);
        return LEGACY_HELD;
    }
    if (rc == 0)
        note_lost_getset(c, r->str);
    freeReplyObject(r);
    return rc != 0 ? rc : LEGACY_BUSY;
}

/*
 * The release the page recommends: "check the timeout didn't expire
 * before DEL" -- our own stamp, from memory, no GET.  Between the check
 * and the DEL the lock can still expire and be taken over.
 */
int legacy_redisdoc_release(legacy_client *c, const char *key)
{
    int64_t own;

    c->held = 0;
    if (doc_parse(c, c->value, &own) != 0 || own < doc_now_s(c))
        return 0;
    return release_del(c, key);
}

/* ------------------------------------------------ redis-py 2.x Lock */

/*
 * Python's repr() of a float: the fewest significant digits that read
 * back as the same double, in positional form for Unix times.  redis-py
 * 2.x encoded float arguments with repr().
 */
void legacy_python_repr(char *buf, size_t size, double x)
{
    int digits, exponent, decimals;
    const char *e;

    for (digits = 1; digits < 17; digits++) {
        snprintf(buf, size, "%.*e", digits - 1, x);
        if (strtod(buf, NULL) == x)
            break;
    }
    snprintf(buf, size, "%.*e", digits - 1, x);
    e = strchr(buf, 'e');
    exponent = e != NULL ? atoi(e + 1) : 0;
    decimals = digits - 1 - exponent;
    snprintf(buf, size, "%.*f", decimals < 1 ? 1 : decimals, x);
}

/*
 * Python's float(value or 1): a missing (or empty) value reads as 1.0;
 * text that is not a float raises ValueError.
 */
static int py_float(legacy_client *c, const char *s, double *out)
{
    char *end;

    if (s == NULL || *s == '\0') {
        *out = 1.0;
        return 0;
    }
    if (strpbrk(s, "xX") != NULL)
        goto bad;
    *out = strtod(s, &end);
    while (end != s && isspace((unsigned char)*end))
        end++;
    if (end != s && *end == '\0')
        return 0;
bad:
    return fail(c, LEGACY_EPARSE,
                "ValueError: could not convert string to float: '%.64s'", s);
}

static int py_hold(legacy_client *c, const char *value, double timeout_at)
{
    c->acquired_until = timeout_at;
    /*
     * Others call it expired once time.time() is past timeout_at.  The
     * stamp is positive, so truncation is floor.
     */
    hold(c, value, (int64_t)(timeout_at * 1e6) + 1);
    return LEGACY_HELD;
}

/*
 * Lock.acquire() of redis-py 2.x (redis/client.py), one pass:
 *
 *   unixtime = mod_time.time()
 *   timeout_at = float(unixtime + timeout)
 *   if self.redis.setnx(self.name, timeout_at): ...return True
 *   existing = float(self.redis.get(self.name) or 1)
 *   if existing < unixtime:
 *       existing = float(self.redis.getset(self.name, timeout_at) or 1)
 *       if existing < unixtime: ...return True
 *   if not blocking: return False
 *   mod_time.sleep(sleep)
 *
 * Blocking, the original loops forever; wait_ms > 0 puts a deadline on
 * it so a test ends.  wait_ms 0 is blocking=False.
 */
static int redispy2_try(legacy_client *c, const char *key)
{
    double unixtime = (double)legacy_now_us(c) / 1e6;
    double timeout_at = unixtime + (double)c->timeout_ms / 1000.0;
    double existing;
    char value[64];
    redisReply *r;
    int rc;

    legacy_python_repr(value, sizeof(value), timeout_at);
    if ((rc = setnx(c, key, value)) < 0)
        return rc;
    if (rc == 1)
        return py_hold(c, value, timeout_at);
    if ((rc = command(c, &r, "GET %s", key)) != 0)
        return rc;
    rc = py_float(c, reply_str(r), &existing);
    freeReplyObject(r);
    if (rc != 0)
        return rc;
    if (!(existing < unixtime))
        return LEGACY_BUSY;
    if ((rc = getset(c, &r, key, value)) != 0)
        return rc;
    rc = py_float(c, reply_str(r), &existing);
    if (rc == 0 && existing < unixtime) {
        freeReplyObject(r);
        return py_hold(c, value, timeout_at);
    }
    if (rc == 0)
        note_lost_getset(c, reply_str(r));
    freeReplyObject(r);
    return rc != 0 ? rc : LEGACY_BUSY;
}

int legacy_redispy2_acquire(legacy_client *c, const char *key, int64_t wait_ms)
{
    int64_t deadline = th_mono_ms() + wait_ms;

    for (;;) {
        int rc = redispy2_try(c, key);
        int64_t left = deadline - th_mono_ms(), delay;

        if (rc != LEGACY_BUSY || wait_ms == 0 || (wait_ms > 0 && left <= 0))
            return rc;
        delay = retry_delay_ms(c);
        th_sleep_us((wait_ms > 0 && left < delay ? left : delay) * 1000);
    }
}

/*
 * Lock.release() of redis-py 2.x:
 *
 *   existing = float(self.redis.get(self.name) or 1)
 *   # if the lock time is in the future, delete the lock
 *   if existing >= self.acquired_until:
 *       self.redis.delete(self.name)
 *   self.acquired_until = None
 *
 * Any stamp at or after ours passes, so a holder whose lease ran out
 * deletes the lock of whoever took it over after it.
 */
int legacy_redispy2_release(legacy_client *c, const char *key)
{
    redisReply *r;
    double existing;
    int rc;

    c->held = 0;
    if ((rc = command(c, &r, "GET %s", key)) != 0)
        return rc;
    rc = py_float(c, reply_str(r), &existing);
    freeReplyObject(r);
    if (rc != 0)
        return rc;
    if (!(existing >= c->acquired_until))
        return 0;
    return release_del(c, key);
}

/* ------------------------------------------------------------ dispatch */

void legacy_init(legacy_client *c, legacy_kind kind, redisContext *redis,
                 int64_t timeout_ms)
{
    memset(c, 0, sizeof(*c));
    c->redis = redis;
    c->kind = kind;
    c->timeout_ms = timeout_ms;
    /* The originals' delays: nextInt(50) + 50, and sleep=0.1. */
    c->retry_min_ms = kind == LEGACY_JAVA ? 50 : 100;
    c->retry_max_ms = kind == LEGACY_JAVA ? 99 : 100;
}

const char *legacy_kind_name(legacy_kind kind)
{
    switch (kind) {
    case LEGACY_JAVA:
        return "java";
    case LEGACY_REDISDOC:
        return "redisdoc";
    case LEGACY_REDISPY2:
        return "redispy2";
    }
    return "?";
}

int legacy_try(legacy_client *c, const char *key)
{
    return legacy_lock(c, key, 0);
}

int legacy_lock(legacy_client *c, const char *key, int64_t wait_ms)
{
    int64_t deadline = th_mono_ms() + wait_ms;

    switch (c->kind) {
    case LEGACY_JAVA:
        return legacy_java_lock(c, key, wait_ms);
    case LEGACY_REDISPY2:
        return legacy_redispy2_acquire(c, key, wait_ms);
    case LEGACY_REDISDOC:
        for (;;) {
            int rc = legacy_redisdoc_try(c, key);
            int64_t left = deadline - th_mono_ms(), delay;

            if (rc != LEGACY_BUSY || left <= 0)
                return rc;
            delay = retry_delay_ms(c);
            th_sleep_us((left < delay ? left : delay) * 1000);
        }
    }
    return fail(c, LEGACY_EREDIS, "unknown legacy client kind");
}

int legacy_unlock(legacy_client *c, const char *key)
{
    switch (c->kind) {
    case LEGACY_JAVA:
        return legacy_java_unlock0(c, key);
    case LEGACY_REDISDOC:
        return legacy_redisdoc_release(c, key);
    case LEGACY_REDISPY2:
        return legacy_redispy2_release(c, key);
    }
    return fail(c, LEGACY_EREDIS, "unknown legacy client kind");
}

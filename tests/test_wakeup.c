/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_wakeup.c - waiters woken by the release: the missed wake-up race
 * replayed (a release between a failed try and the wait), with the
 * broken order beside it; legacy holders that never publish; a
 * subscriber that dies; and every scheme's release heard.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

static th_server srv;

static tslock_lock *new_lock(tslock_client *c, const char *key,
                             tslock_scheme scheme, int64_t ttl)
{
    tslock_lock *l = NULL;

    CU_ASSERT_FATAL(tslock_lock_new(&l, c, key) == TSLOCK_OK);
    tslock_lock_set_scheme(l, scheme);
    tslock_lock_set_ttl(l, ttl);
    /* A retry delay far past the bound: only a wake-up ends the wait. */
    tslock_lock_set_retry(l, 60000, 60000);
    return l;
}

/* ------------------------------------------- the missed wake-up */

static tslock_lock *holder;
static int released_at_step;

/* Release the holder once the waiter's first try has failed. */
static int release_after_failed_try(tslock_client *c, tslock_step step,
                                    const char *key, void *userdata)
{
    tslock_step last = *(tslock_step *)userdata;

    if (step == last && !released_at_step) {
        released_at_step = 1;
        CU_ASSERT_EQUAL(tslock_release(holder), TSLOCK_OK);
    }
    return 0;
}

/*
 * The release lands between the waiter's failed try and its wait: the
 * step hook runs it before the last command of the busy path, after the
 * try's SET NX (or SETNX) has already failed.  The waiter subscribed
 * before its first try, so the announcement is waiting on its socket and
 * wakes it at once, for every scheme.
 */
static void test_missed_wakeup_replay(void)
{
    static const tslock_scheme schemes[] = {
        TSLOCK_SCHEME_TOKEN, TSLOCK_SCHEME_TIMESTAMP, TSLOCK_SCHEME_BRIDGE};
    /*
     * The last command a failed try sends, scheme by scheme: after SET
     * NX PX, the script that joins the line of waiters (and reads the
     * holder's PTTL); after SETNX, GET; the bridge in its WATCH form
     * (its script form is one command, with no step after it).
     */
    static tslock_step last[] = {TSLOCK_STEP_EVALSHA, TSLOCK_STEP_GET,
                                 TSLOCK_STEP_UNWATCH};
    size_t i;

    for (i = 0; i < 3; i++) {
        tslock_client *h = th_client(&srv), *w = th_client(&srv);
        tslock_lock *l = new_lock(w, "wake:missed", schemes[i], 30000);
        th_bound b;

        if (schemes[i] == TSLOCK_SCHEME_BRIDGE) {
            tslock_client_limit_caps(w,
                                     TSLOCK_CAP_WATCH | TSLOCK_CAP_TTL_KEEPS);
            tslock_client_limit_caps(h,
                                     TSLOCK_CAP_WATCH | TSLOCK_CAP_TTL_KEEPS);
        }
        holder = new_lock(h, "wake:missed", schemes[i], 30000);
        released_at_step = 0;
        CU_ASSERT_EQUAL_FATAL(tslock_acquire(holder, 0), TSLOCK_OK);
        tslock_client_set_step_hook(w, release_after_failed_try, &last[i]);
        th_bound_start(&b, l);
        CU_ASSERT_EQUAL(tslock_acquire(l, TSLOCK_WAIT_FOREVER), TSLOCK_OK);
        th_bound_end(&b);
        CU_ASSERT_TRUE(released_at_step);
        tslock_client_set_step_hook(w, NULL, NULL);
        CU_ASSERT_EQUAL(tslock_release(l), TSLOCK_OK);
        tslock_lock_free(l);
        tslock_lock_free(holder);
        tslock_client_free(h);
        tslock_client_free(w);
    }
}

/* Read one message from a subscribed raw connection (5 s bound). */
static redisReply *next_message(redisContext *sub)
{
    struct timeval tv = {5, 0};
    void *r = NULL;

    redisSetTimeout(sub, tv);
    if (redisGetReply(sub, &r) != REDIS_OK)
        return NULL;
    return r;
}

/*
 * The broken order, for contrast: subscribe after the failed try.  The
 * release announced in between is never delivered: the first message
 * the late subscriber reads is a marker published after it subscribed.
 * Subscribed before the try, the same release is the first message.
 */
static void test_subscribing_late_misses_the_release(void)
{
    tslock_client *h = th_client(&srv);
    tslock_lock *l = new_lock(h, "wake:late", TSLOCK_SCHEME_TOKEN, 30000);
    redisContext *raw = th_redis(&srv);
    int early;

    for (early = 1; early >= 0; early--) {
        redisContext *sub = th_redis(&srv);
        redisReply *r;

        CU_ASSERT_EQUAL_FATAL(tslock_acquire(l, 0), TSLOCK_OK);
        if (early)
            freeReplyObject(
                redisCommand(sub, "SUBSCRIBE {wake:late}:released"));
        r = redisCommand(raw, "SET wake:late x NX PX 1000"); /* the try */
        CU_ASSERT_EQUAL(r->type, REDIS_REPLY_NIL);
        freeReplyObject(r);
        CU_ASSERT_EQUAL(tslock_release(l), TSLOCK_OK);
        if (!early)
            freeReplyObject(
                redisCommand(sub, "SUBSCRIBE {wake:late}:released"));
        freeReplyObject(
            redisCommand(raw, "PUBLISH {wake:late}:released marker"));
        r = next_message(sub);
        CU_ASSERT_FATAL(r != NULL && r->type == REDIS_REPLY_ARRAY
                        && r->elements == 3);
        CU_ASSERT_STRING_EQUAL(r->element[2]->str,
                               early ? "wake:late" : "marker");
        printf("\n    subscribed %s the try: first message \"%s\" ",
               early ? "before" : "after", r->element[2]->str);
        freeReplyObject(r);
        redisFree(sub);
    }
    redisFree(raw);
    tslock_lock_free(l);
    tslock_client_free(h);
}

/* ------------------------------------------- holders that never publish */

/*
 * A legacy holder (a plain SETNX of a stamp, or a token SET by another
 * library) never publishes.  The waiter still wakes when the holder's
 * lease ends, read from the stamp or the PTTL, not a retry delay later.
 */
static void test_legacy_holder_taken_at_expiry(void)
{
    static const tslock_scheme schemes[] = {TSLOCK_SCHEME_TIMESTAMP,
                                            TSLOCK_SCHEME_TOKEN};
    redisContext *raw = th_redis(&srv);
    size_t i;

    for (i = 0; i < 2; i++) {
        tslock_client *w = th_client(&srv);
        tslock_lock *l = new_lock(w, "wake:legacy", schemes[i], 30000);
        th_bound b;
        char stamp[32];

        if (schemes[i] == TSLOCK_SCHEME_TIMESTAMP) {
            snprintf(stamp, sizeof(stamp), "%lld",
                     (long long)(th_wall_us() / 1000 + 300 + 1));
            freeReplyObject(redisCommand(raw, "SETNX wake:legacy %s", stamp));
        } else {
            freeReplyObject(redisCommand(
                raw, "SET wake:legacy 0123456789abcdef0123456789abcdef "
                     "NX PX 300"));
        }
        th_bound_start(&b, l);
        CU_ASSERT_EQUAL(tslock_acquire(l, TSLOCK_WAIT_FOREVER), TSLOCK_OK);
        th_bound_end(&b);
        CU_ASSERT_EQUAL(tslock_release(l), TSLOCK_OK);
        tslock_lock_free(l);
        tslock_client_free(w);
    }
    redisFree(raw);
}

/*
 * The holder's lease has already ended by the time the waiter works out
 * how long to sleep (a loaded machine can take that long after its
 * try): the next try comes at once, not a retry delay later.  The step
 * hook moves the waiter's test clock a second on before the busy path's
 * PTTL; the key itself still runs its 300 ms on the server.  Before the
 * fix the waiter slept its whole retry delay (seen under load).
 */
static th_clock late_clock;

/* Where a busy path reads the holder: its own PTTL, or the line's script. */
struct read_step {
    tslock_step step;
    int seen;
};

static int clock_jumps(tslock_client *c, tslock_step step, const char *key,
                       void *userdata)
{
    struct read_step *rs = userdata;
    int *jumped = &rs->seen;

    if (step == rs->step && !*jumped) {
        *jumped = 1;
        th_clock_advance(&late_clock, 1000);
    }
    return 0;
}

/*
 * Both busy paths: a polling wait reads the holder with GET+PTTL, a
 * listening one with the script that joins the line of waiters.
 */
static void expiry_passed_before_the_wait(int listening)
{
    tslock_client *w = th_client(&srv);
    tslock_lock *l =
        new_lock(w, "wake:late-expiry", TSLOCK_SCHEME_TOKEN, 30000);
    redisContext *raw = th_redis(&srv);
    th_bound b;
    struct read_step jumped = {
        listening ? TSLOCK_STEP_EVALSHA : TSLOCK_STEP_PTTL, 0};

    late_clock.wall_ms = th_wall_us() / 1000;
    late_clock.mono_ms = th_mono_ms();
    tslock_client_set_clock(w, th_clock_fn, &late_clock);
    tslock_lock_set_wakeup(l, listening);
    tslock_client_set_step_hook(w, clock_jumps, &jumped);
    freeReplyObject(redisCommand(
        raw, "SET wake:late-expiry 0123456789abcdef0123456789abcdef PX 300"));
    th_bound_start(&b, l);
    CU_ASSERT_EQUAL(tslock_acquire(l, TSLOCK_WAIT_FOREVER), TSLOCK_OK);
    th_bound_end(&b);
    CU_ASSERT_TRUE(jumped.seen);
    tslock_client_set_step_hook(w, NULL, NULL);
    CU_ASSERT_EQUAL(tslock_release(l), TSLOCK_OK);
    redisFree(raw);
    tslock_lock_free(l);
    tslock_client_free(w);
}

/*
 * The holder's key expires between the waiter's failed SET NX and its
 * read of the holder (GET+PTTL): GET finds nothing, and the waiter tries
 * again at once instead of sleeping its retry delay (PTTL alone says -2
 * on Redis 2.8 and later, and -1, "no TTL", before).  The step hook
 * deletes the key there.  Seen under load before the fix.
 */
static int expire_before_read(tslock_client *c, tslock_step step,
                              const char *key, void *userdata)
{
    struct read_step *rs = userdata;
    int *done = &rs->seen;

    if (step == rs->step && !*done) {
        redisContext *raw = th_redis(&srv);
        *done = 1;
        freeReplyObject(redisCommand(raw, "DEL %s", key));
        redisFree(raw);
    }
    return 0;
}

static void expired_between_try_and_read(int listening)
{
    tslock_client *w = th_client(&srv);
    tslock_lock *l = new_lock(w, "wake:gone", TSLOCK_SCHEME_TOKEN, 30000);
    redisContext *raw = th_redis(&srv);
    th_bound b;
    struct read_step done = {listening ? TSLOCK_STEP_EVALSHA : TSLOCK_STEP_GET,
                             0};

    tslock_lock_set_wakeup(l, listening);
    tslock_client_set_step_hook(w, expire_before_read, &done);
    freeReplyObject(redisCommand(
        raw, "SET wake:gone 0123456789abcdef0123456789abcdef PX 60000"));
    th_bound_start(&b, l);
    CU_ASSERT_EQUAL(tslock_acquire(l, TSLOCK_WAIT_FOREVER), TSLOCK_OK);
    th_bound_end(&b);
    CU_ASSERT_TRUE(done.seen);
    tslock_client_set_step_hook(w, NULL, NULL);
    CU_ASSERT_EQUAL(tslock_release(l), TSLOCK_OK);
    redisFree(raw);
    tslock_lock_free(l);
    tslock_client_free(w);
}

static void test_expiry_passed_before_the_wait(void)
{
    expiry_passed_before_the_wait(0);
    expiry_passed_before_the_wait(1);
}

static void test_expired_between_try_and_read(void)
{
    expired_between_try_and_read(0);
    expired_between_try_and_read(1);
}

/*
 * The subscriber connection is killed between two waits: the next wait
 * finds it dead, subscribes again on a new connection, and is woken by
 * the release (ordered by the step hook, as in the missed wake-up).
 */
static void test_subscriber_dies(void)
{
    static tslock_step last = TSLOCK_STEP_EVALSHA; /* joins the line */
    tslock_client *h = th_client(&srv), *w = th_client(&srv);
    tslock_lock *l = new_lock(w, "wake:dies", TSLOCK_SCHEME_TOKEN, 30000);
    redisContext *raw = th_redis(&srv);
    th_bound b;
    redisReply *r;

    holder = new_lock(h, "wake:dies", TSLOCK_SCHEME_TOKEN, 30000);
    released_at_step = 0;
    CU_ASSERT_EQUAL_FATAL(tslock_acquire(holder, 0), TSLOCK_OK);
    tslock_lock_set_retry(l, 1, 2);
    CU_ASSERT_EQUAL(tslock_acquire(l, 5), TSLOCK_EBUSY); /* subscribes */
    r = redisCommand(raw, "CLIENT KILL TYPE pubsub");
    CU_ASSERT_TRUE(r != NULL && r->type == REDIS_REPLY_INTEGER
                   && r->integer == 1);
    freeReplyObject(r);
    tslock_lock_set_retry(l, 60000, 60000);
    tslock_client_set_step_hook(w, release_after_failed_try, &last);
    th_bound_start(&b, l);
    CU_ASSERT_EQUAL(tslock_acquire(l, TSLOCK_WAIT_FOREVER), TSLOCK_OK);
    th_bound_end(&b);
    CU_ASSERT_TRUE(released_at_step);
    tslock_client_set_step_hook(w, NULL, NULL);
    CU_ASSERT_EQUAL(tslock_release(l), TSLOCK_OK);
    redisFree(raw);
    tslock_lock_free(holder);
    tslock_lock_free(l);
    tslock_client_free(h);
    tslock_client_free(w);
}

/* ------------------------------------------- one subscriber, many keys */

/* An INFO field of the server, read on raw; -1 when missing. */
static long long info_field(redisContext *raw, const char *section,
                            const char *field)
{
    redisReply *r = redisCommand(raw, "INFO %s", section);
    long long v = -1;
    const char *p;

    if (r != NULL && r->type == REDIS_REPLY_STRING
        && (p = strstr(r->str, field)) != NULL)
        v = atoll(p + strlen(field) + 1);
    freeReplyObject(r);
    return v;
}

/* How many connections of the server are subscribers. */
static long long pubsub_clients(redisContext *raw)
{
    redisReply *r = redisCommand(raw, "CLIENT LIST TYPE pubsub");
    long long n = -1;
    const char *p;

    if (r != NULL && r->type == REDIS_REPLY_STRING)
        for (n = 0, p = r->str; (p = strstr(p, "id=")) != NULL; p++)
            n++;
    freeReplyObject(r);
    return n;
}

/* How many channels the server knows matching pattern, of kind. */
static long long channels(redisContext *raw, const char *kind,
                          const char *pattern)
{
    redisReply *r = redisCommand(raw, "PUBSUB %s %s", kind, pattern);
    long long n = -1;

    if (r != NULL && r->type == REDIS_REPLY_ARRAY)
        n = (long long)r->elements;
    freeReplyObject(r);
    return n;
}

/*
 * What the step hook does at a failed try of the waiter: publish on the
 * channels of the key it waited for before (messages a correct waiter
 * must not take for a release), note who listens where, and release the
 * holder when told to.
 */
struct swap_probe {
    redisContext *raw;
    redisReply *late; /* the old key's channels, both kinds */
    int sharded;
    int fired;
    long long old_channels, new_channels; /* seen at the failed try */
};

static void publish_late(redisContext *raw, const redisReply *late, int sharded)
{
    size_t i;

    for (i = 0; late != NULL && i < late->elements; i++) {
        /* The classic name by PUBLISH; the sharded ones both ways. */
        freeReplyObject(
            redisCommand(raw, "PUBLISH %s late", late->element[i]->str));
        if (sharded)
            freeReplyObject(
                redisCommand(raw, "SPUBLISH %s late", late->element[i]->str));
    }
}

static int swap_at_failed_try(tslock_client *c, tslock_step step,
                              const char *key, void *userdata)
{
    struct swap_probe *p = userdata;

    (void)c;
    (void)key;
    if (step != TSLOCK_STEP_EVALSHA || p->fired)
        return 0;
    p->fired = 1;
    publish_late(p->raw, p->late, p->sharded);
    p->old_channels =
        channels(p->raw, "CHANNELS", "*swap-a*")
        + (p->sharded ? channels(p->raw, "SHARDCHANNELS", "*swap-a*") : 0);
    p->new_channels =
        channels(p->raw, "CHANNELS", "*swap}b*")
        + (p->sharded ? channels(p->raw, "SHARDCHANNELS", "*swap}b*") : 0);
    return 0;
}

/* The attempts after the first that c's waiting acquires made. */
static uint64_t retries_of(const tslock_client *c)
{
    tslock_stats st;

    CU_ASSERT_FATAL(tslock_client_stats(c, &st, sizeof(st)) == TSLOCK_OK);
    return st.retries;
}

struct waiting {
    tslock_lock *lock;
    int rc;
};

static void *waiting_main(void *arg)
{
    struct waiting *wt = arg;

    wt->rc = tslock_acquire(wt->lock, TSLOCK_WAIT_FOREVER);
    return NULL;
}

/*
 * One waiting acquire of w's lock l while the holder hl holds its key,
 * neither's lease nor the retry delay ending within the test's bound.
 * With release, hl is released once the waiter's failed try has put it
 * in the key's line, and the wait must end acquired: only a release it
 * hears makes it try again.  Without, a 100 ms wait must run out
 * (EBUSY), trying once more at its end.  The probe is filled at the
 * failed try; the attempts after the first come back.
 */
static uint64_t wait_once(tslock_client *w, tslock_lock *l, tslock_lock *hl,
                          int release, struct swap_probe *p)
{
    uint64_t retries = retries_of(w);
    struct waiting wt = {l, -1000};
    pthread_t t;
    th_bound b;

    CU_ASSERT_EQUAL_FATAL(tslock_acquire(hl, 0), TSLOCK_OK);
    p->fired = 0;
    tslock_client_set_step_hook(w, swap_at_failed_try, p);
    th_bound_start(&b, l);
    if (release) {
        int64_t n = 0;
        int k;

        CU_ASSERT_FATAL(pthread_create(&t, NULL, waiting_main, &wt) == 0);
        for (k = 0; k < 2000 && n != 1; k++) {
            CU_ASSERT_FATAL(tslock_lock_queue_length(hl, &n) == TSLOCK_OK);
            if (n != 1)
                th_sleep_us(5000); /* polls for the order, not a timing */
        }
        CU_ASSERT_EQUAL(n, 1);
        CU_ASSERT_EQUAL(tslock_release(hl), TSLOCK_OK);
        pthread_join(t, NULL);
        CU_ASSERT_EQUAL(wt.rc, TSLOCK_OK);
    } else {
        CU_ASSERT_EQUAL(tslock_acquire(l, 100), TSLOCK_EBUSY);
    }
    th_bound_end(&b);
    tslock_client_set_step_hook(w, NULL, NULL);
    CU_ASSERT_TRUE(p->fired);
    CU_ASSERT_EQUAL(tslock_release(release ? l : hl), TSLOCK_OK);
    return retries_of(w) - retries;
}

/*
 * A client of an ACL user, AUTHed on each connection: allowed every
 * command, or refused UNSUBSCRIBE (as doc/acl.md's users, which need
 * only +subscribe, are).
 */
static tslock_client *user_client(int refused)
{
    redisContext *raw = th_redis(&srv);
    redisReply *r =
        redisCommand(raw, refused ? "ACL SETUSER swapper reset on >pw ~* &* "
                                    "+@all -unsubscribe -sunsubscribe"
                                  : "ACL SETUSER swapper reset on >pw ~* &* "
                                    "+@all");
    tslock_client *c = NULL;

    CU_ASSERT_FATAL(r != NULL && r->type == REDIS_REPLY_STATUS);
    freeReplyObject(r);
    redisFree(raw);
    CU_ASSERT_FATAL(tslock_client_new(&c) == TSLOCK_OK);
    CU_ASSERT_FATAL(tslock_client_set_auth(c, "swapper", "pw") == TSLOCK_OK);
    CU_ASSERT_FATAL(tslock_client_connect_unix(c, srv.socket) == TSLOCK_OK);
    return c;
}

/*
 * A client that waits on key A, then on key B, then on A again keeps
 * one subscriber connection: the server accepts one connection for all
 * four waits, and the subscriber is moved from A's channels to B's and
 * back.  While it waits on B, messages on every one of A's channels
 * (published before the move, so in flight on the subscriber's socket,
 * and again at the wait's failed try) never end the wait: a 100 ms wait on B,
 * whose retry delay and holder's lease are 10 minutes, runs out having
 * tried once more, at its end, and no more.  Then B's release is heard
 * (the one attempt after the failed try, long before the retry delay),
 * and A's.  With classic pub/sub and with sharded, where the '}' key B
 * has a classic channel of another form than its sharded one.  A user
 * refused UNSUBSCRIBE waits the same, on a new connection for each
 * change of key: the refused move and the next one, not tried again;
 * one allowed it moves its subscriber, AUTHed once, like the others.
 */
static void test_one_subscriber_for_many_keys(void)
{
    int pass;

    for (pass = 0; pass < 4; pass++) {
        int sharded = pass == 1, refused = pass == 2, user = pass >= 2;
        int mode = sharded ? TSLOCK_PUBSUB_SHARDED : TSLOCK_PUBSUB_CLASSIC;
        tslock_client *h = th_client(&srv),
                      *w = user ? user_client(refused) : th_client(&srv);
        tslock_lock *a =
            new_lock(w, "wake:swap-a", TSLOCK_SCHEME_TOKEN, 600000);
        tslock_lock *b =
            new_lock(w, "wake:swap}b", TSLOCK_SCHEME_TOKEN, 600000);
        tslock_lock *ha =
            new_lock(h, "wake:swap-a", TSLOCK_SCHEME_TOKEN, 600000);
        tslock_lock *hb =
            new_lock(h, "wake:swap}b", TSLOCK_SCHEME_TOKEN, 600000);
        struct swap_probe p = {.raw = th_redis(&srv), .sharded = sharded};
        long long conns;

        tslock_lock_set_retry(a, 600000, 600000);
        tslock_lock_set_retry(b, 600000, 600000);
        CU_ASSERT_EQUAL_FATAL(tslock_client_set_pubsub(w, mode), TSLOCK_OK);
        CU_ASSERT_EQUAL_FATAL(tslock_client_set_pubsub(h, mode), TSLOCK_OK);
        conns = info_field(p.raw, "stats", "total_connections_received");
        CU_ASSERT_FATAL(conns > 0);

        CU_ASSERT_EQUAL(wait_once(w, a, ha, 1, &p), 1);
        CU_ASSERT_EQUAL(
            info_field(p.raw, "stats", "total_connections_received"),
            conns + 1);
        /* A's channels, as the subscriber left them. */
        p.late = redisCommand(p.raw, "PUBSUB %s *swap-a*",
                              sharded ? "SHARDCHANNELS" : "CHANNELS");
        CU_ASSERT_FATAL(p.late != NULL && p.late->type == REDIS_REPLY_ARRAY
                        && p.late->elements == 2);
        if (sharded) { /* and A's classic channel */
            redisReply *more = redisCommand(p.raw, "PUBSUB CHANNELS *swap-a*");
            CU_ASSERT_FATAL(more != NULL && more->type == REDIS_REPLY_ARRAY
                            && more->elements == 1);
            publish_late(p.raw, more, 0);
            freeReplyObject(more);
        }
        publish_late(p.raw, p.late, sharded); /* in flight at the move */

        CU_ASSERT_EQUAL(wait_once(w, b, hb, 0, &p), 1); /* A's not heard */
        CU_ASSERT_EQUAL(p.old_channels, 0);
        CU_ASSERT_EQUAL(p.new_channels, sharded ? 3 : 2);
        CU_ASSERT_EQUAL(wait_once(w, b, hb, 1, &p), 1); /* B's heard */
        freeReplyObject(p.late);
        p.late = NULL;
        CU_ASSERT_EQUAL(wait_once(w, a, ha, 1, &p), 1); /* A's again */
        CU_ASSERT_EQUAL(p.new_channels, 0);

        CU_ASSERT_EQUAL(
            info_field(p.raw, "stats", "total_connections_received"),
            conns + (refused ? 3 : 1));
        CU_ASSERT_EQUAL(pubsub_clients(p.raw), 1);
        printf("\n    %s: 4 waits on 2 keys, %lld subscriber connection(s) ",
               refused   ? "UNSUBSCRIBE refused"
               : user    ? "ACL user (AUTH), classic"
               : sharded ? "sharded"
                         : "classic",
               info_field(p.raw, "stats", "total_connections_received")
                   - conns);
        redisFree(p.raw);
        tslock_lock_free(a);
        tslock_lock_free(b);
        tslock_lock_free(ha);
        tslock_lock_free(hb);
        tslock_client_free(h);
        tslock_client_free(w);
    }
}

/* Polling mode subscribes nothing. */
/*
 * Polling mode: each attempt of a wait finds nobody subscribed to the
 * key's channel.  The holder's lease is long (it cannot end during the
 * test, however slow the machine); the waiter's test clock moves 10 ms at
 * each attempt, so a 25 ms wait makes exactly three attempts and ends
 * EBUSY, whatever the real time between them.
 */
struct poll_probe {
    th_clock clock;
    redisContext *raw;
    int attempts;
    int subscribers; /* the most seen at any attempt */
};

static int probe_attempt(tslock_client *c, tslock_step step, const char *key,
                         void *userdata)
{
    struct poll_probe *p = userdata;
    redisReply *r;

    (void)c;
    (void)key;
    if (step != TSLOCK_STEP_SET)
        return 0;
    p->attempts++;
    r = redisCommand(p->raw, "PUBSUB NUMSUB {wake:poll}:released");
    if (r == NULL || r->type != REDIS_REPLY_ARRAY || r->elements != 2)
        p->subscribers = 1000; /* unknown counts as a failure */
    else if (r->element[1]->integer > p->subscribers)
        p->subscribers = (int)r->element[1]->integer;
    freeReplyObject(r);
    th_clock_advance(&p->clock, 10);
    return 0;
}

static void test_polling_mode(void)
{
    tslock_client *w = th_client(&srv);
    tslock_lock *l = new_lock(w, "wake:poll", TSLOCK_SCHEME_TOKEN, 30000);
    struct poll_probe p = {.raw = th_redis(&srv)};
    redisReply *r;
    th_bound b;

    p.clock.wall_ms = th_wall_us() / 1000;
    p.clock.mono_ms = th_mono_ms();
    tslock_client_set_clock(w, th_clock_fn, &p.clock);
    tslock_client_set_step_hook(w, probe_attempt, &p);
    CU_ASSERT_EQUAL(tslock_lock_set_wakeup(NULL, 1), TSLOCK_EINVAL);
    CU_ASSERT_EQUAL(tslock_lock_set_wakeup(l, 0), TSLOCK_OK);
    freeReplyObject(redisCommand(p.raw, "SET wake:poll x PX 600000"));
    tslock_lock_set_retry(l, 5, 10);
    th_bound_start(&b, l);
    CU_ASSERT_EQUAL(tslock_acquire(l, 25), TSLOCK_EBUSY);
    th_bound_end(&b);
    CU_ASSERT_EQUAL(p.attempts, 3);
    CU_ASSERT_EQUAL(p.subscribers, 0);
    r = redisCommand(p.raw, "PUBSUB NUMSUB {wake:poll}:released");
    CU_ASSERT_FATAL(r != NULL && r->type == REDIS_REPLY_ARRAY);
    CU_ASSERT_EQUAL(r->element[1]->integer, 0);
    freeReplyObject(r);
    freeReplyObject(redisCommand(p.raw, "DEL wake:poll"));
    redisFree(p.raw);
    tslock_lock_free(l);
    tslock_client_free(w);
}

int main(void)
{
    CU_pSuite s;
    int rc = 1;

    if (th_server_start(&srv, NULL) != 0)
        return 1;
    if (CU_initialize_registry() != CUE_SUCCESS)
        goto out;
    s = CU_add_suite("wake-up", NULL, NULL);
    CU_add_test(s, "missed wake-up: release between the try and the wait",
                test_missed_wakeup_replay);
    CU_add_test(s, "subscribing after the try misses the release",
                test_subscribing_late_misses_the_release);
    CU_add_test(s, "a legacy holder is taken at its expiry",
                test_legacy_holder_taken_at_expiry);
    CU_add_test(s, "the holder's lease ended before the wait: at once",
                test_expiry_passed_before_the_wait);
    CU_add_test(s, "the key expired between the try and the read",
                test_expired_between_try_and_read);
    CU_add_test(s, "the subscriber dies: polling, then listening again",
                test_subscriber_dies);
    CU_add_test(s, "one subscriber connection for waits on many keys",
                test_one_subscriber_for_many_keys);
    CU_add_test(s, "polling mode subscribes nothing", test_polling_mode);
    rc = th_run_all();
out:
    th_server_stop(&srv);
    return rc;
}

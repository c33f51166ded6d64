/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_wakeone.c - a release wakes one waiter, not the herd: waiters
 * served in the order they joined the line, the others not even running
 * an attempt; the wake passed on past a waiter that was killed or
 * paused, and past a client that barged in; waiters of the previous
 * wake-all protocol (replayed by a fixture that speaks it) beside new
 * ones on one key; and the line staying bounded through 10,000 waits
 * with crashes.  With scripts, with WATCH only, and on Redis 2.2 played
 * by the proxy.  Waiters' retry delay is a minute wherever only a wake
 * may end their wait, so a wait that ends shows a wake, not a poll.
 */
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

static th_server srv, proxy22;

/* The generations the line runs on, one suite each (th_cur). */
static th_target targets[TH_LINE_TARGETS];

static tslock_client *client(void)
{
    return th_target_client(th_cur);
}

static tslock_lock *token_lock(tslock_client *c, const char *key, int retry)
{
    tslock_lock *l = NULL;

    CU_ASSERT_FATAL(tslock_lock_new(&l, c, key) == TSLOCK_OK);
    tslock_lock_set_scheme(l, TSLOCK_SCHEME_TOKEN);
    tslock_lock_set_ttl(l, 10000);
    tslock_lock_set_retry(l, retry, retry);
    return l;
}

/* ------------------------------------------------ waiters as threads */

struct waiter {
    tslock_client *c;
    tslock_lock *l;
    pthread_t thread;
    atomic_int attempts; /* scripts or transactions it sent */
    int attempts_held;   /* of those, before it held the lock */
    int rc;
    int64_t wait_ms;
    int order; /* when it got the lock: 1, 2, ... */
    int hold;  /* release at once when 0; else wait for go */
    atomic_int go;
};

static atomic_int served;

/* Counts the scripts or transactions a waiter sends to try again. */
static int count_attempts(tslock_client *c, tslock_step step, const char *key,
                          void *userdata)
{
    struct waiter *w = userdata;

    if (step == TSLOCK_STEP_EVALSHA || step == TSLOCK_STEP_EVAL
        || step == TSLOCK_STEP_WATCH)
        atomic_fetch_add(&w->attempts, 1);
    (void)c;
    (void)key;
    return 0;
}

static void *waiter_main(void *arg)
{
    struct waiter *w = arg;

    w->rc = tslock_acquire(w->l, w->wait_ms);
    w->attempts_held = atomic_load(&w->attempts);
    if (w->rc == TSLOCK_OK) {
        w->order = atomic_fetch_add(&served, 1) + 1;
        while (w->hold && !atomic_load(&w->go))
            poll(NULL, 0, 1);
        CU_ASSERT_EQUAL(tslock_release(w->l), TSLOCK_OK);
    }
    return NULL;
}

static void waiter_start_hooked(struct waiter *w, const char *key, int retry,
                                int64_t wait_ms, tslock_step_hook hook)
{
    memset(w, 0, sizeof(*w));
    w->c = client();
    w->l = token_lock(w->c, key, retry);
    w->wait_ms = wait_ms;
    tslock_client_set_step_hook(w->c, hook, w);
    CU_ASSERT_FATAL(pthread_create(&w->thread, NULL, waiter_main, w) == 0);
}

static void waiter_start(struct waiter *w, const char *key, int retry,
                         int64_t wait_ms)
{
    waiter_start_hooked(w, key, retry, wait_ms, count_attempts);
}

static void waiter_join(struct waiter *w)
{
    pthread_join(w->thread, NULL);
    tslock_lock_free(w->l);
    tslock_client_free(w->c);
}

/*
 * Wait until *v is at least n: 1, or 0 after 10 s (th_deadline_ms).  A
 * wake that never comes (a release that woke the wrong waiters, say)
 * then fails the test instead of hanging it.
 */
static int await_at_least(atomic_int *v, int n)
{
    int64_t deadline = th_deadline_ms(10000);

    while (atomic_load(v) < n) {
        if (th_mono_ms() > deadline)
            return 0;
        poll(NULL, 0, 1);
    }
    return 1;
}

/* Let waiters first..n-1 go and join them, after a failure. */
static void waiters_abandon(struct waiter *w, int first, int n)
{
    int i;

    for (i = first; i < n; i++)
        atomic_store(&w[i].go, 1);
    for (i = first; i < n; i++)
        waiter_join(&w[i]);
}

/*
 * Three waiters join the line in turn behind a holder.  Each release
 * wakes exactly the next one: it takes the lock, and the ones behind it
 * have sent nothing since they joined (their retry delay is a minute).
 */
static void test_wakes_one_in_order(void)
{
    tslock_client *hc = client();
    tslock_lock *h = token_lock(hc, "one:order", 50);
    struct waiter w[3];
    int i, before[3];

    atomic_store(&served, 0);
    CU_ASSERT_EQUAL_FATAL(tslock_acquire(h, 0), TSLOCK_OK);
    for (i = 0; i < 3; i++) {
        waiter_start(&w[i], "one:order", 60000, 20000);
        w[i].hold = 1;
        CU_ASSERT_FATAL(th_await_queue(&srv, "one:order", i + 1));
    }
    for (i = 0; i < 3; i++)
        before[i] = atomic_load(&w[i].attempts);
    CU_ASSERT_EQUAL(tslock_release(h), TSLOCK_OK);
    for (i = 0; i < 3; i++) {
        int j;
        if (!await_at_least(&served, i + 1)) {
            CU_FAIL("a release woke no waiter that took the lock");
            waiters_abandon(w, i, 3);
            break;
        }
        CU_ASSERT_EQUAL(w[i].order, i + 1);
        /* Only the one woken tried; those behind it sent nothing. */
        for (j = i + 1; j < 3; j++)
            CU_ASSERT_EQUAL(atomic_load(&w[j].attempts), before[j]);
        atomic_store(&w[i].go, 1);
        waiter_join(&w[i]);
        CU_ASSERT_EQUAL(w[i].rc, TSLOCK_OK);
    }
    CU_ASSERT_EQUAL(th_queue_length(&srv, "one:order"), 0);
    tslock_lock_free(h);
    tslock_client_free(hc);
}

/*
 * The head of the line is killed (SIGKILL) or paused (SIGSTOP) after it
 * joined, before the release.  Killed, its subscription is gone with its
 * socket: the release sees nobody hears the wake and passes it to the
 * next waiter at once, whose one attempt after the release takes the key
 * (with a minute's retry delay, only the wake can have sent it).
 * Paused, it hears the wake and sleeps on, and keeps its place until its
 * entry lapses; the next waiter is not woken but takes the free key at
 * its next retry: its step hook runs the release just before that
 * attempt, so the attempt is the first after the release.
 */
static tslock_lock *holder;

static int release_before_retry(tslock_client *c, tslock_step step,
                                const char *key, void *userdata)
{
    struct waiter *w = userdata;

    if (atomic_load(&w->go) == 1
        && (step == TSLOCK_STEP_EVALSHA || step == TSLOCK_STEP_WATCH)) {
        atomic_store(&w->go, 2);
        CU_ASSERT_EQUAL(tslock_release(holder), TSLOCK_OK);
    }
    return count_attempts(c, step, key, userdata);
}

static void head_stops(int sig)
{
    tslock_client *hc = client();
    struct waiter w;
    pid_t head;
    int before;

    holder = token_lock(hc, "one:stop", 50);
    atomic_store(&served, 0);
    CU_ASSERT_EQUAL_FATAL(tslock_acquire(holder, 0), TSLOCK_OK);
    fflush(stdout);
    head = fork();
    CU_ASSERT_FATAL(head >= 0);
    if (head == 0) {
        tslock_client *d = client();
        tslock_lock *dl = token_lock(d, "one:stop", 60000);
        tslock_acquire(dl, 60000);
        _exit(0);
    }
    CU_ASSERT_FATAL(th_await_queue(&srv, "one:stop", 1));
    kill(head, sig);
    if (sig == SIGKILL) {
        waitpid(head, NULL, 0);
        CU_ASSERT_FATAL(th_await_no_subscriber(&srv, "{one:stop}:wake:*"));
    }
    waiter_start_hooked(&w, "one:stop", sig == SIGKILL ? 60000 : 50, 20000,
                        release_before_retry);
    CU_ASSERT_FATAL(th_await_queue(&srv, "one:stop", 2));
    before = atomic_load(&w.attempts);
    if (sig == SIGKILL) {
        CU_ASSERT_EQUAL(tslock_release(holder), TSLOCK_OK);
    } else {
        atomic_store(&w.go, 1); /* the release, just before its next retry */
    }
    waiter_join(&w);
    CU_ASSERT_EQUAL(w.rc, TSLOCK_OK);
    if (sig == SIGKILL) {
        CU_ASSERT_EQUAL(w.attempts_held - before, 1);
        CU_ASSERT_EQUAL(th_queue_length(&srv, "one:stop"), 0);
    } else {
        CU_ASSERT_EQUAL(atomic_load(&w.go), 2);
        CU_ASSERT_EQUAL(th_queue_length(&srv, "one:stop"),
                        1); /* the paused head */
        kill(head, SIGKILL);
        waitpid(head, NULL, 0);
    }
    printf("\n    head %s: the next waiter held the key, %d attempt%s after "
           "the release ",
           sig == SIGKILL ? "killed" : "paused", w.attempts_held - before,
           w.attempts_held - before == 1 ? "" : "s");
    tslock_lock_free(holder);
    tslock_client_free(hc);
}

static void test_head_killed(void)
{
    head_stops(SIGKILL);
}

static void test_head_paused(void)
{
    head_stops(SIGSTOP);
}

/* --------------------------------- the broken wake-one, for contrast */

/*
 * A wake-one release that publishes to the head and stops there loses
 * the wake when the head is dead: nobody hears it, and the next waiter's
 * channel stays silent (the first thing it reads is a marker published
 * afterwards).  tslock's release sees that its PUBLISH reached nobody,
 * drops the dead entry and wakes the next: the first thing that waiter
 * reads is the release.  Raw connections play the line: a dead entry
 * (no subscriber) ahead of a live one, both alive by their scores.
 */
static void test_naive_wake_one_loses_the_wake(void)
{
    static const char dead[] = "0123456789abcdef0123456789abcdefw";
    static const char next[] = "fedcba9876543210fedcba9876543210w";
    tslock_client *hc;
    tslock_lock *h;
    redisContext *raw;
    int naive;

    if (th_cur != &targets[0])
        return; /* the line and channels are the same on every form */
    hc = client();
    h = token_lock(hc, "one:naive", 50);
    raw = th_redis(&srv);
    for (naive = 1; naive >= 0; naive--) {
        redisContext *sub = th_redis(&srv);
        long long until = th_wall_us() / 1000 + 60000;
        redisReply *r;
        struct timeval tv = {5, 0};
        void *m = NULL;

        freeReplyObject(
            redisCommand(sub, "SUBSCRIBE {one:naive}:wake:%s", next));
        freeReplyObject(
            redisCommand(raw, "ZADD {one:naive}:queue 1 %s 2 %s", dead, next));
        /* each joined: the arrival counter, which the release reads */
        freeReplyObject(redisCommand(raw, "SET {one:naive}:queue-seq 2"));
        freeReplyObject(redisCommand(raw,
                                     "ZADD {one:naive}:alive %lld %s %lld %s",
                                     until, dead, until, next));
        if (naive) { /* hold, delete, wake the head, stop */
            freeReplyObject(redisCommand(raw, "SET one:naive x PX 10000"));
            freeReplyObject(redisCommand(raw, "DEL one:naive"));
            r = redisCommand(raw, "PUBLISH {one:naive}:wake:%s one:naive",
                             dead);
            CU_ASSERT_TRUE(r != NULL && r->type == REDIS_REPLY_INTEGER
                           && r->integer == 0); /* heard by nobody */
            freeReplyObject(r);
        } else {
            CU_ASSERT_EQUAL_FATAL(tslock_acquire(h, 0), TSLOCK_OK);
            CU_ASSERT_EQUAL(tslock_release(h), TSLOCK_OK);
        }
        freeReplyObject(
            redisCommand(raw, "PUBLISH {one:naive}:wake:%s marker", next));
        redisSetTimeout(sub, tv);
        CU_ASSERT_FATAL(redisGetReply(sub, &m) == REDIS_OK && m != NULL);
        r = m;
        CU_ASSERT_STRING_EQUAL(r->element[2]->str,
                               naive ? "marker" : "one:naive");
        printf("\n    %s: the next waiter first reads \"%s\" ",
               naive ? "wake the head and stop" : "tslock's release",
               r->element[2]->str);
        freeReplyObject(r);
        freeReplyObject(redisCommand(raw, "DEL {one:naive}:queue "
                                          "{one:naive}:alive "
                                          "{one:naive}:queue-seq"));
        redisFree(sub);
    }
    redisFree(raw);
    tslock_lock_free(h);
    tslock_client_free(hc);
}

/* ------------------------------------------ the line's arrival counter */

/* The first message sub reads after PUBLISH marker on its channel. */
static void expect_first(redisContext *raw, redisContext *sub, const char *want)
{
    static const char ch[] = "{one:seq}:wake:fedcba9876543210fedcba9876543210w";
    struct timeval tv = {5, 0};
    redisReply *r;
    void *m = NULL;

    freeReplyObject(redisCommand(raw, "PUBLISH %s marker", ch));
    redisSetTimeout(sub, tv);
    CU_ASSERT_FATAL(redisGetReply(sub, &m) == REDIS_OK && m != NULL);
    r = m;
    CU_ASSERT_STRING_EQUAL(r->element[2]->str, want);
    freeReplyObject(r);
    if (strcmp(want, "marker") != 0) { /* the marker, still to read */
        CU_ASSERT_FATAL(redisGetReply(sub, &m) == REDIS_OK && m != NULL);
        freeReplyObject(m);
    }
}

/*
 * Every waiter's joining INCRs the line's arrival counter, and the
 * release deletes it with the key in one DEL: only a release whose DEL
 * found it reads the line, so an uncontended release costs GET, DEL and
 * PUBLISH alone.  That release puts the counter back at the last
 * arrival number with the line's TTL while the line stays, and leaves it
 * gone once the line is empty.  Raw connections play the line: a live
 * listening entry, its counter set or not.
 */
static void test_the_counter_marks_the_line(void)
{
    static const char next[] = "fedcba9876543210fedcba9876543210w";
    tslock_client *hc;
    tslock_lock *h;
    redisContext *raw, *sub;
    redisReply *r;
    long long until = th_wall_us() / 1000 + 60000;

    if (th_cur != &targets[0])
        return; /* the line and its counter are the same on every form */
    hc = client();
    h = token_lock(hc, "one:seq", 50);
    raw = th_redis(&srv);
    sub = th_redis(&srv);
    freeReplyObject(redisCommand(sub, "SUBSCRIBE {one:seq}:wake:%s", next));
    freeReplyObject(redisCommand(raw, "ZADD {one:seq}:queue 7 %s", next));
    freeReplyObject(
        redisCommand(raw, "ZADD {one:seq}:alive %lld %s", until, next));
    freeReplyObject(redisCommand(raw, "PEXPIRE {one:seq}:queue 60000"));

    /* No counter: the line is not read, nobody is woken. */
    CU_ASSERT_EQUAL_FATAL(tslock_acquire(h, 0), TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_release(h), TSLOCK_OK);
    expect_first(raw, sub, "marker");

    /* The counter: the head is woken, the counter put back. */
    freeReplyObject(redisCommand(raw, "SET {one:seq}:queue-seq 9"));
    CU_ASSERT_EQUAL_FATAL(tslock_acquire(h, 0), TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_release(h), TSLOCK_OK);
    expect_first(raw, sub, "one:seq");
    r = redisCommand(raw, "GET {one:seq}:queue-seq");
    CU_ASSERT_TRUE(r != NULL && r->type == REDIS_REPLY_STRING
                   && strcmp(r->str, "7") == 0);
    freeReplyObject(r);
    r = redisCommand(raw, "PTTL {one:seq}:queue-seq");
    CU_ASSERT_TRUE(r != NULL && r->type == REDIS_REPLY_INTEGER && r->integer > 0
                   && r->integer <= 60000);
    freeReplyObject(r);

    /* Still in line (it has not taken the key): woken again. */
    CU_ASSERT_EQUAL_FATAL(tslock_acquire(h, 0), TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_release(h), TSLOCK_OK);
    expect_first(raw, sub, "one:seq");

    /* The line gone: the counter is deleted and stays so. */
    freeReplyObject(redisCommand(raw, "DEL {one:seq}:queue {one:seq}:alive"));
    CU_ASSERT_EQUAL_FATAL(tslock_acquire(h, 0), TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_release(h), TSLOCK_OK);
    r = redisCommand(raw, "EXISTS {one:seq}:queue-seq");
    CU_ASSERT_TRUE(r != NULL && r->type == REDIS_REPLY_INTEGER
                   && r->integer == 0);
    freeReplyObject(r);
    expect_first(raw, sub, "marker");

    redisFree(sub);
    redisFree(raw);
    tslock_lock_free(h);
    tslock_client_free(hc);
}

/* ------------------------------------------------ a client barging in */

static tslock_lock *barger;
static atomic_int barged;

/* Before the woken waiter's attempt, a try-once client takes the key. */
static int barge_before_attempt(tslock_client *c, tslock_step step,
                                const char *key, void *userdata)
{
    struct waiter *w = userdata;

    count_attempts(c, step, key, userdata);
    if (atomic_load(&w->go) && !atomic_load(&barged)
        && (step == TSLOCK_STEP_EVALSHA || step == TSLOCK_STEP_WATCH)) {
        atomic_store(&barged, 1);
        CU_ASSERT_EQUAL(tslock_acquire(barger, 0), TSLOCK_OK);
        atomic_store(&barged, 2); /* held by the barger */
    }
    return 0;
}

/*
 * A client that does not wait (try-once) takes the key between the
 * release and the woken waiter's attempt.  The waiter loses, keeps its
 * place at the head of the line, and the barger's release wakes it
 * again: it holds the lock without a poll (its retry delay is a minute).
 */
static void test_barging_client(void)
{
    tslock_client *hc = client(), *bc = client();
    tslock_lock *h = token_lock(hc, "one:barge", 50);
    struct waiter w;

    atomic_store(&served, 0);
    atomic_store(&barged, 0);
    barger = token_lock(bc, "one:barge", 50);
    CU_ASSERT_EQUAL_FATAL(tslock_acquire(h, 0), TSLOCK_OK);
    waiter_start_hooked(&w, "one:barge", 60000, 20000, barge_before_attempt);
    CU_ASSERT_FATAL(th_await_queue(&srv, "one:barge", 1));
    atomic_store(&w.go, 1); /* from the next attempt on: after the wake */
    CU_ASSERT_EQUAL(tslock_release(h), TSLOCK_OK);
    /* Failed, the rest fails too but ends: the waiter's wait is bounded. */
    if (!await_at_least(&barged, 2))
        CU_FAIL("the release woke no attempt for the barger to beat");
    CU_ASSERT_EQUAL(th_queue_length(&srv, "one:barge"), 1); /* still in line */
    CU_ASSERT_EQUAL(served, 0);
    CU_ASSERT_EQUAL(tslock_release(barger), TSLOCK_OK);
    waiter_join(&w);
    CU_ASSERT_EQUAL(w.rc, TSLOCK_OK);
    CU_ASSERT_EQUAL(th_queue_length(&srv, "one:barge"), 0);
    tslock_lock_free(barger);
    tslock_lock_free(h);
    tslock_client_free(hc);
    tslock_client_free(bc);
}

/* ------------------------------------ the previous wake-all protocol */

/*
 * A waiter and holder of the previous tslock release, kept as a fixture:
 * it SUBSCRIBEs to "{KEY}:released" before its first try, tries SET NX
 * PX on every message and every retry delay, and releases with the
 * compare-and-delete script that announces on that channel.  It knows
 * nothing of the line.
 */
struct old_client {
    redisContext *cmd, *sub;
    char key[64], channel[80], token[40];
};

static void old_open(struct old_client *o, const char *key)
{
    redisReply *r;

    o->cmd = th_redis(&srv);
    o->sub = th_redis(&srv);
    snprintf(o->key, sizeof(o->key), "%s", key);
    snprintf(o->channel, sizeof(o->channel), "{%s}:released", key);
    snprintf(o->token, sizeof(o->token), "0ld0ld0ld0ld0ld0ld0ld0ld%08x",
             (unsigned)getpid());
    r = redisCommand(o->sub, "SUBSCRIBE %s", o->channel);
    freeReplyObject(r);
}

static int old_try(struct old_client *o)
{
    redisReply *r =
        redisCommand(o->cmd, "SET %s %s NX PX 10000", o->key, o->token);
    int ok = r != NULL && r->type == REDIS_REPLY_STATUS;

    freeReplyObject(r);
    return ok;
}

/* Wait up to retry_ms for a message; 1 when one came. */
static int old_wait(struct old_client *o, int retry_ms)
{
    struct timeval tv = {retry_ms / 1000, (retry_ms % 1000) * 1000};
    void *r = NULL;

    redisSetTimeout(o->sub, tv);
    if (redisGetReply(o->sub, &r) != REDIS_OK) {
        /* A timeout leaves the context unusable: subscribe again. */
        redisFree(o->sub);
        o->sub = th_redis(&srv);
        freeReplyObject(redisCommand(o->sub, "SUBSCRIBE %s", o->channel));
        return 0;
    }
    freeReplyObject(r);
    return 1;
}

/* Acquire with wake-ups: how many messages woke it before it held. */
static int old_acquire(struct old_client *o, int retry_ms, int *woken)
{
    int i;

    *woken = 0;
    for (i = 0; i < 200; i++) {
        if (old_try(o))
            return 1;
        *woken += old_wait(o, retry_ms);
    }
    return 0;
}

static void old_release(struct old_client *o)
{
    redisReply *r =
        redisCommand(o->cmd, "EVAL %s 1 %s %s %s",
                     "if redis.call('get', KEYS[1]) == ARGV[1] then "
                     "local n = redis.call('del', KEYS[1]) "
                     "redis.pcall('publish', ARGV[2], KEYS[1]) return n "
                     "else return 0 end",
                     o->key, o->token, o->channel);

    CU_ASSERT_TRUE(r != NULL && r->type == REDIS_REPLY_INTEGER
                   && r->integer == 1);
    freeReplyObject(r);
}

static void old_close(struct old_client *o)
{
    redisFree(o->cmd);
    redisFree(o->sub);
}

/*
 * Mixed versions on one key, with scripts (the previous release needs
 * them): a new holder's release with nobody in line announces on the
 * key's channel, so an old waiter is woken; an old holder's release
 * wakes a new waiter, which hears the key's channel too; and with new
 * waiters in line, an old waiter is not woken but takes its turn at its
 * retry delay, never the whole lease.
 */
static void test_previous_protocol(void)
{
    tslock_client *hc;
    tslock_lock *h;
    struct old_client o;
    struct waiter w;
    int woken;

    if (th_cur->caps != ~0u || th_cur->endpoint != &srv)
        return; /* the previous release's fixture speaks scripts */
    hc = client();
    h = token_lock(hc, "one:mixed", 50);
    old_open(&o, "one:mixed");
    /* An old waiter, woken by a new release (retry: a minute). */
    CU_ASSERT_EQUAL_FATAL(tslock_acquire(h, 0), TSLOCK_OK);
    CU_ASSERT_FALSE(old_try(&o));
    CU_ASSERT_EQUAL(tslock_release(h), TSLOCK_OK);
    CU_ASSERT_TRUE(old_wait(&o, 60000));
    CU_ASSERT_TRUE(old_try(&o));
    /* A new waiter, woken by the old holder's release. */
    waiter_start(&w, "one:mixed", 60000, 20000);
    CU_ASSERT_FATAL(th_await_queue(&srv, "one:mixed", 1));
    old_release(&o);
    waiter_join(&w);
    CU_ASSERT_EQUAL(w.rc, TSLOCK_OK);
    /* New waiters in line: the old one polls at its retry delay. */
    atomic_store(&served, 0);
    CU_ASSERT_EQUAL_FATAL(tslock_acquire(h, 0), TSLOCK_OK);
    waiter_start(&w, "one:mixed", 60000, 20000);
    w.hold = 1;
    CU_ASSERT_FATAL(th_await_queue(&srv, "one:mixed", 1));
    CU_ASSERT_EQUAL(tslock_release(h), TSLOCK_OK);
    CU_ASSERT(await_at_least(&served, 1));
    atomic_store(&w.go, 1);
    CU_ASSERT_TRUE(old_acquire(&o, 50, &woken));
    waiter_join(&w);
    CU_ASSERT_EQUAL(w.rc, TSLOCK_OK);
    printf("\n    old waiter beside a new line: held after %d wake%s ", woken,
           woken == 1 ? "" : "s");
    old_release(&o);
    old_close(&o);
    tslock_lock_free(h);
    tslock_client_free(hc);
}

/* ------------------------------------------------ the line stays small */

/*
 * 10,000 waits on one held key, each giving up after 1 ms (so joining
 * the line and leaving it), with 20 waiters SIGKILLed inside their wait
 * among them.  What stays in Redis: at most the killed waiters' entries,
 * each until it lapses (1 s plus twice the retry delay), and the line's
 * keys carry an idle expiry of twice that, so an abandoned line vanishes.
 */
/* A crashing waiter tells it has joined: at its second attempt. */
static int joined_fd;

static int tell_joined(tslock_client *c, tslock_step step, const char *key,
                       void *userdata)
{
    int *attempts = userdata;

    if ((step == TSLOCK_STEP_EVALSHA || step == TSLOCK_STEP_WATCH)
        && ++*attempts == 2)
        (void)!write(joined_fd, "j", 1);
    (void)c;
    (void)key;
    return 0;
}

static void crash_a_waiter(void)
{
    int fds[2], attempts = 0;
    char b;
    pid_t p;

    CU_ASSERT_FATAL(pipe(fds) == 0);
    fflush(stdout);
    p = fork();
    if (p == 0) {
        tslock_client *d = client();
        tslock_lock *dl = token_lock(d, "one:bounded", 1);
        joined_fd = fds[1];
        tslock_client_set_step_hook(d, tell_joined, &attempts);
        tslock_acquire(dl, 60000);
        _exit(0);
    }
    CU_ASSERT_FATAL(read(fds[0], &b, 1) == 1);
    kill(p, SIGKILL);
    waitpid(p, NULL, 0);
    close(fds[0]);
    close(fds[1]);
}

static void test_line_bounded(void)
{
    tslock_client *hc = client(), *wc = client();
    tslock_lock *h = token_lock(hc, "one:bounded", 50);
    tslock_lock *l = token_lock(wc, "one:bounded", 1);
    redisContext *raw = th_redis(&srv);
    redisReply *r;
    int i, crashed = 0;
    int waits = th_cur == &targets[0] ? th_rounds(10000) : th_rounds(1000);
    int every = waits >= 20 ? waits / 20 : 1;
    /* The line's idle expiry: 2 (1 s + 2 retry); whole seconds by WATCH. */
    long long idle = 2 * (1000 + 2 * 1), bound = idle;

    if (th_cur != &targets[0]) /* whole seconds, and before 2.6 one more */
        bound = ((idle + 999) / 1000 + (th_cur == &targets[2])) * 1000;
    tslock_lock_set_ttl(h, 600000); /* outlasts the 10,000 waits */
    CU_ASSERT_EQUAL_FATAL(tslock_acquire(h, 0), TSLOCK_OK);
    for (i = 0; i < waits; i++) {
        if (i % every == 0) {
            crash_a_waiter();
            crashed++;
        }
        CU_ASSERT_EQUAL(tslock_acquire(l, 1), TSLOCK_EBUSY);
    }
    /* Lapsed entries are dropped by later attempts; the rest, < bound. */
    CU_ASSERT_TRUE(th_queue_length(&srv, "one:bounded") <= crashed);
    r = redisCommand(raw, "PTTL {one:bounded}:queue");
    CU_ASSERT_TRUE(r != NULL && r->type == REDIS_REPLY_INTEGER
                   && (r->integer == -2 /* empty: gone already */
                       || (r->integer > 0 && r->integer <= bound)));
    printf("\n    %d waits, %d killed: %lld entries left, gone in %lld ms ",
           waits, crashed, th_queue_length(&srv, "one:bounded"),
           r != NULL ? r->integer : -1);
    freeReplyObject(r);
    CU_ASSERT_EQUAL(tslock_release(h), TSLOCK_OK);
    redisFree(raw);
    tslock_lock_free(h);
    tslock_lock_free(l);
    tslock_client_free(hc);
    tslock_client_free(wc);
}

int main(void)
{
    CU_pSuite s;
    int i, rc = 1;

    if (th_line_start(targets, &srv, &proxy22) != 0)
        goto out;
    for (i = 0; i < TH_LINE_TARGETS; i++) {
        s = th_target_suite(&targets[i]);
        CU_add_test(s, "a release wakes the next waiter alone, in order",
                    test_wakes_one_in_order);
        CU_add_test(s, "the head killed: the wake passes on at once",
                    test_head_killed);
        CU_add_test(s, "the head paused: the next takes it at its retry",
                    test_head_paused);
        CU_add_test(s, "a wake to a dead head: lost, or passed on",
                    test_naive_wake_one_loses_the_wake);
        CU_add_test(s, "the line's counter: read only when set, put back",
                    test_the_counter_marks_the_line);
        CU_add_test(s, "a barging client: the woken waiter keeps its place",
                    test_barging_client);
        CU_add_test(s, "waiters of the previous wake-all protocol",
                    test_previous_protocol);
        CU_add_test(s, "10,000 waits with crashes: the line stays bounded",
                    test_line_bounded);
    }
    rc = th_run_all();
out:
    th_proxy_stop(&proxy22);
    th_server_stop(&srv);
    return rc;
}

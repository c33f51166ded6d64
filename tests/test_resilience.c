/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_resilience.c - holds that ride out what production Redis does to
 * connections: CLIENT KILL under a release, an extension and the
 * watchdog; a restart without persistence under a hold; a server that
 * stops answering (SIGSTOP); and the bounds on reconnecting.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

static th_server srv;

static const tslock_scheme schemes[] = {
    TSLOCK_SCHEME_TOKEN, TSLOCK_SCHEME_TIMESTAMP, TSLOCK_SCHEME_BRIDGE};
static const char *const scheme_names[] = {"token", "timestamp", "bridge"};
#define N_SCHEMES 3

static redisReply *raw_cmd(const char *fmt, const char *arg)
{
    redisContext *raw = th_redis(&srv);
    redisReply *r = redisCommand(raw, fmt, arg);

    CU_ASSERT_FATAL(r != NULL);
    redisFree(raw);
    return r;
}

/* Whether key holds exactly want (NULL: absent), read on the server. */
static int holds(const char *key, const char *want)
{
    redisReply *r = raw_cmd("GET %s", key);
    int ok = want == NULL
                 ? r->type == REDIS_REPLY_NIL
                 : r->type == REDIS_REPLY_STRING && strcmp(r->str, want) == 0;

    freeReplyObject(r);
    return ok;
}

/*
 * Drop every client connection but the caller's, as an operator (or a
 * proxy, or an idle timeout) would: CLIENT KILL TYPE normal skips the
 * connection that sends it.
 */
static void kill_clients(void)
{
    redisReply *r = raw_cmd("CLIENT KILL TYPE %s", "normal");

    CU_ASSERT_EQUAL(r->type, REDIS_REPLY_INTEGER);
    CU_ASSERT_TRUE(r->integer >= 1);
    freeReplyObject(r);
}

static tslock_lock *new_lock(tslock_client *c, const char *key, int scheme,
                             int64_t ttl_ms)
{
    tslock_lock *l = NULL;

    CU_ASSERT_FATAL(tslock_lock_new(&l, c, key) == TSLOCK_OK);
    CU_ASSERT_FATAL(tslock_lock_set_scheme(l, schemes[scheme]) == TSLOCK_OK);
    CU_ASSERT_FATAL(tslock_lock_set_ttl(l, ttl_ms) == TSLOCK_OK);
    return l;
}

/* Release and extend across a CLIENT KILL: done, nothing lost. */
static void test_client_kill_under_release_and_extend(void)
{
    int i;

    for (i = 0; i < N_SCHEMES; i++) {
        tslock_client *c = th_client(&srv);
        tslock_lock *l = new_lock(c, "res:kill", i, 10000);
        char before[64];

        CU_ASSERT_EQUAL_FATAL(tslock_acquire(l, 0), TSLOCK_OK);
        snprintf(before, sizeof(before), "%s", tslock_lock_value(l));
        kill_clients();
        CU_ASSERT_EQUAL(tslock_extend(l, 20000), TSLOCK_OK);
        CU_ASSERT_TRUE(tslock_lock_is_held(l));
        CU_ASSERT_TRUE(holds("res:kill", tslock_lock_value(l)));
        if (schemes[i] == TSLOCK_SCHEME_TOKEN)
            CU_ASSERT_STRING_EQUAL(tslock_lock_value(l), before);

        kill_clients();
        CU_ASSERT_EQUAL(tslock_release(l), TSLOCK_OK);
        CU_ASSERT_FALSE(tslock_lock_is_held(l));
        CU_ASSERT_TRUE(holds("res:kill", NULL));
        CU_ASSERT_TRUE(holds("{res:kill}:owner", NULL));
        printf("\n    %-9s extend and release through CLIENT KILL: ok ",
               scheme_names[i]);
        tslock_lock_free(l);
        tslock_client_free(c);
    }
}

/*
 * A token handle adopted by another process (tslock extend/release KEY
 * HANDLE) carries no lease end.  A connection dropped under its extend
 * or release is recovered like any other: the key still holds the token,
 * so the hold is ours and the work is done.  Before, the unknown end read
 * as a lease long over: no reconnect, and TSLOCK_ELOST ("our lease ran
 * out") for a key with 30 s left, as tslock extend's exit 75.
 */
static void test_adopted_handle_through_client_kill(void)
{
    tslock_client *c = th_client(&srv), *d = th_client(&srv);
    tslock_lock *l = new_lock(c, "res:adopted", 0, 30000);
    tslock_lock *m = new_lock(d, "res:adopted", 0, 30000);
    char handle[128];

    CU_ASSERT_EQUAL_FATAL(tslock_acquire(l, 0), TSLOCK_OK);
    snprintf(handle, sizeof(handle), "%s", tslock_lock_handle(l));
    CU_ASSERT_EQUAL_FATAL(tslock_lock_adopt(m, handle), TSLOCK_OK);
    kill_clients();
    CU_ASSERT_EQUAL(tslock_extend(m, 30000), TSLOCK_OK);
    CU_ASSERT_TRUE(tslock_lock_is_held(m));
    CU_ASSERT_TRUE(holds("res:adopted", tslock_lock_value(l)));
    kill_clients();
    CU_ASSERT_EQUAL(tslock_release(m), TSLOCK_OK);
    CU_ASSERT_TRUE(holds("res:adopted", NULL));

    /* Gone under an adopted release whose lease end is unknown: the key
     * may have expired before our DEL, so that is no release. */
    tslock_lock_free(m);
    tslock_lock_free(l); /* still held in its own eyes: m released it */
    m = new_lock(d, "res:adopted", 0, 30000);
    CU_ASSERT_EQUAL_FATAL(tslock_client_reconnect(c), TSLOCK_OK);
    l = new_lock(c, "res:adopted", 0, 30000);
    CU_ASSERT_EQUAL_FATAL(tslock_acquire(l, 0), TSLOCK_OK);
    snprintf(handle, sizeof(handle), "%s", tslock_lock_handle(l));
    CU_ASSERT_EQUAL_FATAL(tslock_lock_adopt(m, handle), TSLOCK_OK);
    freeReplyObject(raw_cmd("DEL %s", "res:adopted"));
    kill_clients();
    CU_ASSERT_EQUAL(tslock_release(m), TSLOCK_ELOST);
    CU_ASSERT_PTR_NOT_NULL(strstr(tslock_client_errstr(d), "unknown"));
    CU_ASSERT_FALSE(tslock_lock_is_held(m));
    tslock_lock_free(l);
    tslock_lock_free(m);
    tslock_client_free(c);
    tslock_client_free(d);
}

/*
 * A caller that keeps SIGPIPE's default action (ends the process) and
 * releases after its connection was killed: on a Unix socket the first
 * write fails with EPIPE at once, raising SIGPIPE.  The library holds it
 * back, so the child lives, reconnects and releases.
 */
static void test_sigpipe_is_not_fatal(void)
{
    int ready[2], go[2], status;
    char byte = 0;
    pid_t pid;

    CU_ASSERT_FATAL(pipe(ready) == 0 && pipe(go) == 0);
    fflush(stdout);
    pid = fork();
    CU_ASSERT_FATAL(pid >= 0);
    if (pid == 0) {
        tslock_client *c = th_client(&srv);
        tslock_lock *l = new_lock(c, "res:pipe", 0, 10000);
        signal(SIGPIPE, SIG_DFL);
        if (tslock_acquire(l, 0) != TSLOCK_OK)
            _exit(3);
        (void)!write(ready[1], "r", 1);
        if (read(go[0], &byte, 1) != 1)
            _exit(4);
        _exit(tslock_release(l) == TSLOCK_OK ? 0 : 5);
    }
    CU_ASSERT_EQUAL(read(ready[0], &byte, 1), 1);
    kill_clients();
    (void)!write(go[1], "g", 1);
    CU_ASSERT_EQUAL(waitpid(pid, &status, 0), pid);
    CU_ASSERT_TRUE(WIFEXITED(status));
    if (WIFSIGNALED(status))
        printf("\n    the child died of signal %d ", WTERMSIG(status));
    CU_ASSERT_EQUAL(WIFEXITED(status) ? WEXITSTATUS(status) : -1, 0);
    CU_ASSERT_TRUE(holds("res:pipe", NULL));
    close(ready[0]);
    close(ready[1]);
    close(go[0]);
    close(go[1]);
}

/* ------------------------------------------------ the watchdog */

struct dog_report {
    int pipe[2];
    int code;
    char detail[512];
};

/* Failures and warnings alike: note the last, wake the test. */
static void on_report(int code, const char *detail, void *userdata)
{
    struct dog_report *d = userdata;

    d->code = code;
    snprintf(d->detail, sizeof(d->detail), "%s", detail);
    (void)!write(d->pipe[1], "x", 1);
}

/* Wait (at most 20 s, a bound for a hung test, not an order) for one. */
static int await_report(struct dog_report *d)
{
    struct pollfd p = {.fd = d->pipe[0], .events = POLLIN};
    char byte;

    if (poll(&p, 1, 20000) != 1)
        return 0;
    return read(d->pipe[0], &byte, 1) == 1;
}

/*
 * Every connection killed once while the watchdog renews: the renewal
 * reconnects, renews, warns, and the lock stays ours; another client
 * still finds it busy, and the caller's release (its own connection was
 * killed too) deletes it.
 */
static void test_watchdog_through_client_kill(void)
{
    int i;

    for (i = 0; i < N_SCHEMES; i++) {
        tslock_client *c = th_client(&srv), *renew = th_client(&srv);
        tslock_client *other;
        tslock_lock *l = new_lock(c, "res:dog", i, 1500), *o;
        struct dog_report warn, fail;
        tslock_watchdog *w = NULL;

        memset(&warn, 0, sizeof(warn));
        memset(&fail, 0, sizeof(fail));
        CU_ASSERT_FATAL(pipe(warn.pipe) == 0 && pipe(fail.pipe) == 0);
        CU_ASSERT_EQUAL_FATAL(tslock_acquire(l, 0), TSLOCK_OK);
        CU_ASSERT_EQUAL_FATAL(
            tslock_watchdog_start(&w, l, renew, 100, on_report, &fail),
            TSLOCK_OK);
        CU_ASSERT_EQUAL(tslock_watchdog_set_on_warning(w, on_report, &warn),
                        TSLOCK_OK);
        kill_clients();
        CU_ASSERT_TRUE(await_report(&warn));
        CU_ASSERT_EQUAL(warn.code, TSLOCK_EIO);
        CU_ASSERT_PTR_NOT_NULL(strstr(warn.detail, "reconnected after"));
        CU_ASSERT_EQUAL(tslock_watchdog_status(w), TSLOCK_OK);
        CU_ASSERT_TRUE(tslock_watchdog_recoveries(w) >= 1);
        other = th_client(&srv); /* connected after the kill */
        o = new_lock(other, "res:dog", i, 1500);
        CU_ASSERT_EQUAL(tslock_acquire(o, 0), TSLOCK_EBUSY);
        CU_ASSERT_EQUAL(tslock_watchdog_stop(w), TSLOCK_OK);
        CU_ASSERT_TRUE(tslock_lock_is_held(l));
        CU_ASSERT_TRUE(holds("res:dog", tslock_lock_value(l)));
        CU_ASSERT_EQUAL(tslock_release(l), TSLOCK_OK);
        CU_ASSERT_TRUE(holds("res:dog", NULL));
        printf("\n    %-9s watchdog through CLIENT KILL: %s ", scheme_names[i],
               warn.detail);
        close(warn.pipe[0]);
        close(warn.pipe[1]);
        close(fail.pipe[0]);
        close(fail.pipe[1]);
        tslock_lock_free(l);
        tslock_lock_free(o);
        tslock_client_free(c);
        tslock_client_free(renew);
        tslock_client_free(other);
    }
}

/*
 * A restart without persistence under a hold: the renewal reconnects to
 * a server with a new run_id and no key, and reports the loss, naming
 * the restart.
 */
static void test_watchdog_through_restart(void)
{
    int i;

    for (i = 0; i < N_SCHEMES; i++) {
        tslock_client *c = th_client(&srv), *renew = th_client(&srv);
        tslock_lock *l = new_lock(c, "res:restart", i, 3000);
        struct dog_report fail;
        tslock_watchdog *w = NULL;

        memset(&fail, 0, sizeof(fail));
        CU_ASSERT_FATAL(pipe(fail.pipe) == 0);
        CU_ASSERT_EQUAL_FATAL(tslock_acquire(l, 0), TSLOCK_OK);
        CU_ASSERT_EQUAL_FATAL(
            tslock_watchdog_start(&w, l, renew, 100, on_report, &fail),
            TSLOCK_OK);
        th_server_kill(&srv);
        CU_ASSERT_FATAL(th_server_restart(&srv) == 0);
        CU_ASSERT_TRUE(await_report(&fail));
        CU_ASSERT_EQUAL(fail.code, TSLOCK_ELOST);
        CU_ASSERT_PTR_NOT_NULL(strstr(fail.detail, "server restarted"));
        CU_ASSERT_EQUAL(tslock_watchdog_stop(w), TSLOCK_ELOST);
        CU_ASSERT_FALSE(tslock_lock_is_held(l));
        printf("\n    %-9s restart under the watchdog: %s ", scheme_names[i],
               fail.detail);
        close(fail.pipe[0]);
        close(fail.pipe[1]);
        tslock_lock_free(l);
        tslock_client_free(c);
        tslock_client_free(renew);
    }
}

/*
 * A waiting acquire whose connection is killed between two attempts
 * reconnects and goes on waiting; the holder, killed too, still
 * releases, and the waiter takes the lock.  The step hook orders it.
 */
static tslock_lock *wait_holder;
static int wait_attempts;

/*
 * A waiting token acquire tries with SET NX PX, and once held off, with
 * the script that joins the line of waiters (EVALSHA): both are
 * attempts to take the key.
 */
static int kill_mid_wait(tslock_client *c, tslock_step step, const char *key,
                         void *userdata)
{
    if (step != TSLOCK_STEP_SET && step != TSLOCK_STEP_EVALSHA)
        return 0;
    wait_attempts++;
    if (wait_attempts == 2)
        kill_clients();
    else if (wait_attempts == 4)
        CU_ASSERT_EQUAL(tslock_release(wait_holder), TSLOCK_OK);
    return 0;
}

static void test_waiting_acquire_through_client_kill(void)
{
    tslock_client *h = th_client(&srv), *c = th_client(&srv);
    tslock_lock *l = new_lock(c, "res:wait", 0, 10000);

    wait_holder = new_lock(h, "res:wait", 0, 10000);
    wait_attempts = 0;
    CU_ASSERT_EQUAL_FATAL(tslock_acquire(wait_holder, 0), TSLOCK_OK);
    tslock_lock_set_retry(l, 1, 2);
    tslock_client_set_step_hook(c, kill_mid_wait, NULL);
    CU_ASSERT_EQUAL(tslock_acquire(l, 20000), TSLOCK_OK);
    CU_ASSERT_EQUAL(wait_attempts, 4); /* the fourth attempt takes it */
    tslock_client_set_step_hook(c, NULL, NULL);
    CU_ASSERT_TRUE(holds("res:wait", tslock_lock_value(l)));
    CU_ASSERT_EQUAL(tslock_release(l), TSLOCK_OK);
    tslock_lock_free(wait_holder);
    tslock_lock_free(l);
    tslock_client_free(h);
    tslock_client_free(c);
}

/*
 * A waiting acquire across a server SIGKILLed and restarted about a
 * second later (tslock -w across a crash): the first reconnects fail,
 * and the wait goes on.  The step hook kills the server before the
 * waiter's second attempt and, before the hook returns, puts a stand-in
 * on the server's socket: a listener that accepts each reconnect and
 * drops it at once, counting them.  So the first reconnect fails
 * whatever the machine's load, and the real server comes back (empty:
 * no persistence, the holder's key gone) only after the stand-in has
 * dropped RESTART_AFTER_DROPS reconnects and a second has passed.
 */
#define RESTART_AFTER_DROPS 3

struct stand_in {
    int fd;           /* the listener on srv.socket, -1 once closed */
    int dropped;      /* reconnects accepted and dropped */
    int restarted;    /* 1 once srv runs again, -1 when that failed */
    int64_t since_ms; /* when the server was killed */
    atomic_int stop;  /* set by the test: restart now, whatever the count */
    pthread_t thread;
};

static struct stand_in stand;
static int crash_attempts;

static void *stand_in_run(void *arg)
{
    struct stand_in *si = arg;
    int64_t end = th_deadline_ms(10000);

    while (!atomic_load(&si->stop) && th_mono_ms() < end
           && (si->dropped < RESTART_AFTER_DROPS
               || th_mono_ms() - si->since_ms < 1000)) {
        struct pollfd p = {.fd = si->fd, .events = POLLIN};
        if (poll(&p, 1, 20) == 1) {
            int fd = accept(si->fd, NULL, NULL);
            if (fd >= 0) {
                close(fd);
                si->dropped++;
            }
        }
    }
    close(si->fd);
    si->fd = -1;
    unlink(srv.socket);
    si->restarted = th_server_restart(&srv) == 0 ? 1 : -1;
    return NULL;
}

/* The stand-in on srv.socket, listening before this returns. */
static int stand_in_start(struct stand_in *si)
{
    struct sockaddr_un a;

    memset(si, 0, sizeof(*si));
    memset(&a, 0, sizeof(a));
    a.sun_family = AF_UNIX;
    if (strlen(srv.socket) >= sizeof(a.sun_path))
        return -1;
    memcpy(a.sun_path, srv.socket, strlen(srv.socket) + 1);
    si->since_ms = th_mono_ms();
    si->fd = socket(AF_UNIX, SOCK_STREAM, 0);
    unlink(srv.socket);
    if (si->fd < 0 || bind(si->fd, (struct sockaddr *)&a, sizeof(a)) != 0
        || listen(si->fd, 16) != 0)
        return -1;
    return pthread_create(&si->thread, NULL, stand_in_run, si) == 0 ? 0 : -1;
}

static int crash_mid_wait(tslock_client *c, tslock_step step, const char *key,
                          void *userdata)
{
    (void)c;
    (void)key;
    (void)userdata;
    if (step != TSLOCK_STEP_SET && step != TSLOCK_STEP_EVALSHA)
        return 0;
    if (++crash_attempts == 2) {
        th_server_kill(&srv);
        if (stand_in_start(&stand) != 0) {
            fprintf(stderr, "stand-in on %s: %s\n", srv.socket,
                    strerror(errno));
            exit(2);
        }
    }
    return 0;
}

static void test_waiting_acquire_through_crash(void)
{
    tslock_client *h = th_client(&srv), *c = th_client(&srv);
    tslock_lock *held = new_lock(h, "res:crash", 0, 60000);
    tslock_lock *l = new_lock(c, "res:crash", 0, 10000);
    int64_t t0;
    int rc;

    crash_attempts = 0;
    CU_ASSERT_EQUAL_FATAL(tslock_acquire(held, 0), TSLOCK_OK);
    /* Reconnects go at the retry delay when it is under the backoff. */
    tslock_lock_set_retry(l, 50, 60);
    tslock_client_set_step_hook(c, crash_mid_wait, NULL);
    t0 = th_mono_ms();
    rc = tslock_acquire(l, 8000);
    atomic_store(&stand.stop, 1);
    pthread_join(stand.thread, NULL);
    tslock_client_set_step_hook(c, NULL, NULL);
    printf("\n    acquire %s after %lld ms, %d reconnects dropped before "
           "the restart ",
           tslock_errname(rc), (long long)(th_mono_ms() - t0), stand.dropped);
    CU_ASSERT_EQUAL_FATAL(stand.restarted, 1);
    CU_ASSERT_TRUE(stand.dropped >= RESTART_AFTER_DROPS);
    CU_ASSERT_EQUAL(rc, TSLOCK_OK);
    CU_ASSERT_TRUE(holds("res:crash", tslock_lock_value(l)));
    CU_ASSERT_EQUAL(tslock_release(l), TSLOCK_OK);
    (void)tslock_release(held); /* its key died with the server */
    tslock_lock_free(held);
    tslock_lock_free(l);
    tslock_client_free(h);
    tslock_client_free(c);
}

/*
 * A server that stays down through the whole wait: the waiter goes on
 * reconnecting to its deadline, not one reconnect less, and then gives
 * the connection's code (tslock_acquire(3): TSLOCK_EIO).
 */
static int down_attempts;

static int down_mid_wait(tslock_client *c, tslock_step step, const char *key,
                         void *userdata)
{
    (void)c;
    (void)key;
    (void)userdata;
    if ((step == TSLOCK_STEP_SET || step == TSLOCK_STEP_EVALSHA)
        && ++down_attempts == 2)
        th_server_kill(&srv);
    return 0;
}

static void test_waiting_acquire_gives_up_at_deadline(void)
{
    tslock_client *h = th_client(&srv), *c = th_client(&srv);
    tslock_lock *held = new_lock(h, "res:gone", 0, 60000);
    tslock_lock *l = new_lock(c, "res:gone", 0, 10000);
    int64_t t0, took;
    int rc;

    down_attempts = 0;
    CU_ASSERT_EQUAL_FATAL(tslock_acquire(held, 0), TSLOCK_OK);
    tslock_lock_set_retry(l, 50, 60);
    tslock_client_set_step_hook(c, down_mid_wait, NULL);
    t0 = th_mono_ms();
    rc = tslock_acquire(l, 1500);
    took = th_mono_ms() - t0;
    tslock_client_set_step_hook(c, NULL, NULL);
    printf("\n    server down: acquire %s after %lld ms of a 1500 ms wait ",
           tslock_errname(rc), (long long)took);
    CU_ASSERT_EQUAL(rc, TSLOCK_EIO);
    CU_ASSERT_TRUE(took >= 1500 - 50);
    CU_ASSERT_TRUE(took < 1500 + 2000);
    CU_ASSERT_FALSE(tslock_lock_is_held(l));
    CU_ASSERT_FATAL(th_server_restart(&srv) == 0);
    (void)tslock_release(held);
    tslock_lock_free(held);
    tslock_lock_free(l);
    tslock_client_free(h);
    tslock_client_free(c);
}

/* ------------------------------------------------ bounds */

/*
 * A server that stays down: a release keeps trying while the lease
 * leaves room, then says the lease ran out (nothing was deleted, and a
 * token expires by itself); with a reconnect budget it gives up sooner
 * and keeps the hold, and once the server is back the restart is named.
 */
static void test_server_down_bounds(void)
{
    tslock_client *c = th_client(&srv);
    tslock_lock *l = new_lock(c, "res:down", 0, 300);
    int64_t t0;

    CU_ASSERT_EQUAL_FATAL(tslock_acquire(l, 0), TSLOCK_OK);
    th_server_kill(&srv);
    t0 = th_mono_ms();
    CU_ASSERT_EQUAL(tslock_release(l), TSLOCK_ELOST);
    CU_ASSERT_TRUE(th_mono_ms() - t0 < 300 + 2000);
    CU_ASSERT_PTR_NOT_NULL(strstr(tslock_client_errstr(c), "lease ran out"));
    CU_ASSERT_FALSE(tslock_lock_is_held(l));
    CU_ASSERT_FATAL(th_server_restart(&srv) == 0);
    CU_ASSERT_EQUAL(tslock_client_reconnect(c), TSLOCK_OK);

    CU_ASSERT_EQUAL(tslock_lock_set_ttl(l, 60000), TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_lock_set_reconnect(l, 200), TSLOCK_OK);
    CU_ASSERT_EQUAL_FATAL(tslock_acquire(l, 0), TSLOCK_OK);
    th_server_kill(&srv);
    CU_ASSERT_EQUAL(tslock_release(l), TSLOCK_EIO);
    CU_ASSERT_PTR_NOT_NULL(
        strstr(tslock_client_errstr(c), "gave up reconnecting"));
    CU_ASSERT_TRUE(tslock_lock_is_held(l));
    CU_ASSERT_FATAL(th_server_restart(&srv) == 0);
    CU_ASSERT_EQUAL(tslock_release(l), TSLOCK_ELOST);
    CU_ASSERT_PTR_NOT_NULL(strstr(tslock_client_errstr(c), "restarted"));
    tslock_lock_free(l);
    tslock_client_free(c);
}

/*
 * A server stopped with SIGSTOP accepts connections (the kernel does)
 * but answers nothing.  An acquire gives ETIMEDOUT within the command
 * timeout plus a margin for a loaded machine; a release retries, with
 * every attempt's timeouts cut to the lease's room, and ends when the
 * lease does.
 */
static void test_hung_server(void)
{
    tslock_client *c = th_client(&srv), *d = th_client(&srv);
    tslock_lock *l = new_lock(c, "res:hung", 0, 800);
    tslock_lock *m = new_lock(d, "res:hung2", 0, 800);
    int64_t t0, took;

    CU_ASSERT_EQUAL(tslock_client_set_timeouts(c, 300, 200), TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_client_set_timeouts(d, 300, 200), TSLOCK_OK);
    CU_ASSERT_EQUAL_FATAL(tslock_acquire(m, 0), TSLOCK_OK);
    CU_ASSERT_FATAL(kill(srv.pid, SIGSTOP) == 0);
    t0 = th_mono_ms();
    CU_ASSERT_EQUAL(tslock_acquire(l, 0), TSLOCK_ETIMEDOUT);
    took = th_mono_ms() - t0;
    CU_ASSERT_TRUE(took >= 150 && took < 200 + 1000);
    CU_ASSERT_PTR_NOT_NULL(strstr(tslock_client_errstr(c), "200 ms"));
    CU_ASSERT_FALSE(tslock_lock_is_held(l));

    t0 = th_mono_ms();
    CU_ASSERT_EQUAL(tslock_release(m), TSLOCK_ELOST);
    took = th_mono_ms() - t0;
    CU_ASSERT_TRUE(took < 800 + 200 + 1000);
    CU_ASSERT_PTR_NOT_NULL(strstr(tslock_client_errstr(d), "lease ran out"));
    printf("\n    hung server: acquire ETIMEDOUT, release ELOST after %lld "
           "ms (lease 800 ms) ",
           (long long)took);
    CU_ASSERT_FATAL(kill(srv.pid, SIGCONT) == 0);
    CU_ASSERT_EQUAL(tslock_client_reconnect(c), TSLOCK_OK);
    /*
     * The timed-out SET NX PX was still read and done by the server once
     * it ran again: its token holds the key, though no one was told so.
     * The lock object sends the same token next time and takes it back.
     */
    {
        redisReply *r = raw_cmd("GET %s", "res:hung");
        CU_ASSERT_EQUAL_FATAL(r->type, REDIS_REPLY_STRING);
        CU_ASSERT_EQUAL(tslock_acquire(l, 0), TSLOCK_OK);
        CU_ASSERT_STRING_EQUAL(tslock_lock_value(l), r->str);
        CU_ASSERT_TRUE(tslock_lock_expires_ms(l) > 0);
        freeReplyObject(r);
    }
    CU_ASSERT_EQUAL(tslock_release(l), TSLOCK_OK);
    CU_ASSERT_TRUE(holds("res:hung", NULL));
    tslock_lock_free(l);
    tslock_lock_free(m);
    tslock_client_free(c);
    tslock_client_free(d);
}

int main(void)
{
    CU_pSuite s;
    int rc = 1;

    if (th_server_start(&srv, NULL) != 0)
        return 1;
    if (CU_initialize_registry() != CUE_SUCCESS)
        goto out;
    s = CU_add_suite("resilience", NULL, NULL);
    CU_add_test(s, "extend and release through CLIENT KILL",
                test_client_kill_under_release_and_extend);
    CU_add_test(s,
                "an adopted handle's extend and release through CLIENT "
                "KILL",
                test_adopted_handle_through_client_kill);
    CU_add_test(s, "SIGPIPE from a killed connection is not fatal",
                test_sigpipe_is_not_fatal);
    CU_add_test(s, "the watchdog keeps a hold through CLIENT KILL",
                test_watchdog_through_client_kill);
    CU_add_test(s, "the watchdog reports a restart's loss",
                test_watchdog_through_restart);
    CU_add_test(s, "a waiting acquire through CLIENT KILL",
                test_waiting_acquire_through_client_kill);
    CU_add_test(s, "a waiting acquire through SIGKILL and restart",
                test_waiting_acquire_through_crash);
    CU_add_test(s, "a waiting acquire gives up at its deadline",
                test_waiting_acquire_gives_up_at_deadline);
    CU_add_test(s, "a server that stays down: bounds", test_server_down_bounds);
    CU_add_test(s, "a hung server (SIGSTOP)", test_hung_server);
    rc = th_run_all();
out:
    th_server_stop(&srv);
    return rc;
}

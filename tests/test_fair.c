/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_fair.c - fair mode: five waiters served in the order they asked;
 * a paused waiter leaves the queue within its bound, a dead one at the
 * release that would wake it; a try-once leaves no
 * entry; the refusals (timestamp scheme, Redis 2.0) - with scripts, with
 * WATCH only, and on Redis 2.2 played by the proxy.
 */
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
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

static tslock_lock *fair_lock(tslock_client *c, const char *key)
{
    tslock_lock *l = NULL;

    CU_ASSERT_FATAL(tslock_lock_new(&l, c, key) == TSLOCK_OK);
    CU_ASSERT_FATAL(tslock_lock_set_fair(l, 1) == TSLOCK_OK);
    tslock_lock_set_ttl(l, 10000);
    return l;
}

/* A waiter: take the lock, log our number, give it back. */
static void waiter(int index, int log_fd)
{
    tslock_client *c = client();
    tslock_lock *l = fair_lock(c, "fair:order");
    char byte = (char)('1' + index);

    if (tslock_acquire(l, 20000) != TSLOCK_OK)
        _exit(3);
    (void)!write(log_fd, &byte, 1);
    if (tslock_release(l) != TSLOCK_OK)
        _exit(4);
    _exit(0);
}

/* Five waiters join one after another and are served in that order. */
static void test_fair_order(void)
{
    tslock_client *c = client();
    tslock_lock *h = fair_lock(c, "fair:order");
    pid_t pids[5];
    char order[8] = {0};
    int log[2], i, status, clean = 1;

    CU_ASSERT_FATAL(pipe(log) == 0);
    CU_ASSERT_EQUAL_FATAL(tslock_acquire(h, 0), TSLOCK_OK);
    CU_ASSERT_EQUAL(th_queue_length(th_cur->endpoint, "fair:order"),
                    0); /* try-once left none */
    fflush(stdout);
    for (i = 0; i < 5; i++) {
        pids[i] = fork();
        CU_ASSERT_FATAL(pids[i] >= 0);
        if (pids[i] == 0)
            waiter(i, log[1]);
        CU_ASSERT_FATAL(th_await_queue(th_cur->endpoint, "fair:order", i + 1));
    }
    CU_ASSERT_EQUAL(tslock_release(h), TSLOCK_OK);
    for (i = 0; i < 5; i++)
        if (waitpid(pids[i], &status, 0) != pids[i] || !WIFEXITED(status)
            || WEXITSTATUS(status) != 0)
            clean = 0;
    CU_ASSERT_TRUE(clean);
    CU_ASSERT_EQUAL(read(log[0], order, 5), 5);
    CU_ASSERT_STRING_EQUAL(order, "12345");
    printf("\n    served in the order %s ", order);
    CU_ASSERT_EQUAL(th_queue_length(th_cur->endpoint, "fair:order"), 0);
    close(log[0]);
    close(log[1]);
    tslock_lock_free(h);
    tslock_client_free(c);
}

/*
 * The head of the queue stops while the key is held.  Paused (SIGSTOP),
 * it still hears its wake-up but never acts on it, so on the release the
 * next waiter cannot take the key until the paused entry has lapsed (1 s
 * plus twice the retry delay after its last attempt), and then does,
 * well inside its own wait.  Dead (SIGKILL), its subscription is gone
 * with its socket: the release finds nobody hears its wake-up, drops the
 * entry and passes the wake on, so the next waiter takes the key at once.
 */
static void dead_waiter_leaves(int sig)
{
    tslock_client *c = client(), *w = client();
    tslock_lock *h = fair_lock(c, "fair:dead");
    tslock_lock *l = fair_lock(w, "fair:dead");
    pid_t dead;

    CU_ASSERT_EQUAL_FATAL(tslock_acquire(h, 0), TSLOCK_OK);
    fflush(stdout);
    dead = fork();
    CU_ASSERT_FATAL(dead >= 0);
    if (dead == 0) {
        tslock_client *d = client();
        tslock_lock *dl = fair_lock(d, "fair:dead");
        tslock_acquire(dl, 60000);
        _exit(0);
    }
    CU_ASSERT_FATAL(th_await_queue(th_cur->endpoint, "fair:dead", 1));
    kill(dead, sig);
    if (sig == SIGKILL) {
        waitpid(dead, NULL, 0);
        CU_ASSERT_FATAL(th_await_no_subscriber(&srv, "{fair:dead}:wake:*"));
    }
    CU_ASSERT_EQUAL(tslock_release(h), TSLOCK_OK);
    if (sig == SIGKILL) {
        CU_ASSERT_EQUAL(tslock_acquire(l, 0), TSLOCK_OK); /* passed on */
    } else {
        CU_ASSERT_EQUAL(tslock_acquire(l, 100), TSLOCK_EBUSY); /* queued */
        CU_ASSERT_EQUAL(tslock_acquire(l, 10000), TSLOCK_OK);
    }
    CU_ASSERT_EQUAL(th_queue_length(th_cur->endpoint, "fair:dead"), 0);
    CU_ASSERT_EQUAL(tslock_release(l), TSLOCK_OK);
    if (sig != SIGKILL) {
        kill(dead, SIGKILL);
        waitpid(dead, NULL, 0);
    }
    tslock_lock_free(h);
    tslock_lock_free(l);
    tslock_client_free(c);
    tslock_client_free(w);
}

static void test_dead_waiter_leaves(void)
{
    dead_waiter_leaves(SIGSTOP);
    dead_waiter_leaves(SIGKILL);
}

/* ------------------------------------------------- load */

/* The overlap check, in shared memory: it does not trust the server. */
struct shared {
    atomic_int inside, overlaps, holds, failures;
};
static struct shared *sh;

static void load_worker(int index, void *userdata)
{
    int fair = *(int *)userdata, i, rounds = th_rounds(40);
    tslock_client *c = client();
    tslock_lock *l = NULL;

    if (tslock_lock_new(&l, c, "fair:load") != TSLOCK_OK)
        _exit(3);
    tslock_lock_set_fair(l, fair);
    tslock_lock_set_wakeup(l, fair); /* polling when not fair */
    tslock_lock_set_retry(l, 1, 5);
    for (i = 0; i < rounds; i++) {
        if (tslock_acquire(l, 20000) != TSLOCK_OK) {
            atomic_fetch_add(&sh->failures, 1);
            continue;
        }
        if (atomic_fetch_add(&sh->inside, 1) != 0)
            atomic_fetch_add(&sh->overlaps, 1);
        sched_yield();
        atomic_fetch_sub(&sh->inside, 1);
        atomic_fetch_add(&sh->holds, 1);
        if (tslock_release(l) != TSLOCK_OK)
            atomic_fetch_add(&sh->failures, 1);
    }
    tslock_lock_free(l);
    tslock_client_free(c);
    (void)index;
}

/*
 * Eight processes on one key, in fair mode and in polling mode: zero
 * overlaps, every acquisition and release succeeds.  (test_matrix runs
 * the default, woken waiters, on every scheme and generation.)
 */
static void test_load_modes(void)
{
    int fair;

    for (fair = 1; fair >= 0; fair--) {
        memset(sh, 0, sizeof(*sh));
        CU_ASSERT_TRUE(th_workers(8, load_worker, &fair));
        CU_ASSERT_EQUAL(atomic_load(&sh->overlaps), 0);
        CU_ASSERT_EQUAL(atomic_load(&sh->failures), 0);
        CU_ASSERT_EQUAL(atomic_load(&sh->holds), 8 * th_rounds(40));
        printf("\n    %-7s 8 processes, %d holds, %d overlaps ",
               fair ? "fair" : "polling", atomic_load(&sh->holds),
               atomic_load(&sh->overlaps));
    }
}

/* Fair mode takes the token scheme; servers without Lua refuse it. */
static void test_fair_refusals(void)
{
    tslock_client *c = client();
    tslock_lock *l = fair_lock(c, "fair:no");

    CU_ASSERT_EQUAL(tslock_lock_set_fair(NULL, 1), TSLOCK_EINVAL);
    tslock_lock_set_scheme(l, TSLOCK_SCHEME_TIMESTAMP);
    CU_ASSERT_EQUAL(tslock_acquire(l, 0), TSLOCK_EUNSUPPORTED);
    CU_ASSERT_PTR_NOT_NULL(strstr(tslock_client_errstr(c), "token scheme"));
    tslock_lock_set_scheme(l, TSLOCK_SCHEME_AUTO);
    tslock_client_limit_caps(c, 0); /* as Redis 2.0: no Lua, no WATCH */
    CU_ASSERT_EQUAL(tslock_acquire(l, 0), TSLOCK_EUNSUPPORTED);
    CU_ASSERT_PTR_NOT_NULL(strstr(tslock_client_errstr(c), "WATCH"));
    CU_ASSERT_EQUAL(th_queue_length(th_cur->endpoint, "fair:no"), 0);
    tslock_lock_free(l);
    tslock_client_free(c);
}

int main(void)
{
    CU_pSuite s;
    int i, rc = 1;

    sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
              MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (sh == MAP_FAILED)
        return 1;
    if (th_line_start(targets, &srv, &proxy22) != 0)
        goto out;
    for (i = 0; i < TH_LINE_TARGETS; i++) {
        s = th_target_suite(&targets[i]);
        CU_add_test(s, "five waiters served in order", test_fair_order);
        CU_add_test(s, "a paused or dead waiter leaves the queue",
                    test_dead_waiter_leaves);
        CU_add_test(s, "refusals", test_fair_refusals);
        CU_add_test(s, "load: fair and polling, zero overlaps",
                    test_load_modes);
    }
    rc = th_run_all();
out:
    th_proxy_stop(&proxy22);
    th_server_stop(&srv);
    return rc;
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_quirks.c - managed services' quirks, played by tests/oldredis.c in
 * front of a real redis-server (--emulate modern, TSLOCKQUIRK): a server
 * without WAIT (ElastiCache Serverless) makes --replicas fail clearly and
 * leaves nothing held; a server that refuses PUBLISH, or loses what is
 * published (a script's PUBLISH turned into SPUBLISH), leaves waiters to
 * poll, and the client says so (tslock_client_wakeups, tslock -v once).
 * Order comes from what the server shows (the line of waiters), not sleeps.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

static th_server srv, proxy;
static redisContext *ctl; /* the proxy's control connection */
static char cli_dir[64];

static void quirk(const char *a, const char *b)
{
    redisReply *r = b != NULL ? redisCommand(ctl, "TSLOCKQUIRK %s %s", a, b)
                              : redisCommand(ctl, "TSLOCKQUIRK %s", a);

    CU_ASSERT_FATAL(r != NULL && r->type == REDIS_REPLY_STATUS);
    freeReplyObject(r);
}

/* What the real server holds under key (NULL: absent), into buf. */
static const char *upstream_get(const char *key, char *buf, size_t size)
{
    redisContext *raw = th_redis(&srv);
    redisReply *r = redisCommand(raw, "GET %s", key);
    const char *v = NULL;

    CU_ASSERT_FATAL(r != NULL);
    if (r->type == REDIS_REPLY_STRING) {
        snprintf(buf, size, "%s", r->str);
        v = buf;
    }
    freeReplyObject(r);
    redisFree(raw);
    return v;
}

static long long upstream_pttl(const char *key)
{
    redisContext *raw = th_redis(&srv);
    redisReply *r = redisCommand(raw, "PTTL %s", key);
    long long ms =
        r != NULL && r->type == REDIS_REPLY_INTEGER ? r->integer : -9;

    freeReplyObject(r);
    redisFree(raw);
    return ms;
}

static tslock_lock *new_lock(tslock_client *c, const char *key,
                             tslock_scheme scheme, int64_t ttl_ms)
{
    tslock_lock *l = NULL;

    CU_ASSERT_FATAL(tslock_lock_new(&l, c, key) == TSLOCK_OK);
    CU_ASSERT_FATAL(tslock_lock_set_scheme(l, scheme) == TSLOCK_OK);
    CU_ASSERT_FATAL(tslock_lock_set_ttl(l, ttl_ms) == TSLOCK_OK);
    return l;
}

/* The steps a client sent, by name, comma-separated. */
static char trace[512];

static int trace_hook(tslock_client *c, tslock_step step, const char *key,
                      void *ud)
{
    size_t n = strlen(trace);

    (void)c;
    (void)key;
    (void)ud;
    snprintf(trace + n, sizeof(trace) - n, "%s%s", n ? "," : "",
             tslock_step_name(step));
    return 0;
}

static int count_of(const char *text, const char *what)
{
    int n = 0;

    for (; (text = strstr(text, what)) != NULL; text += strlen(what))
        n++;
    return n;
}

/* ------------------------------------------------------------- WAIT */

/*
 * No WAIT: the acquisition fails with TSLOCK_EUNSUPPORTED naming WAIT,
 * after one WAIT and the release that gives the hold back (no second
 * WAIT, no wait at all), and nothing is held, in either place the WAIT
 * goes: pipelined with SET NX PX (token) or after the write (timestamp).
 */
static void test_wait_refused_acquire(void)
{
    static const tslock_scheme schemes[] = {TSLOCK_SCHEME_TOKEN,
                                            TSLOCK_SCHEME_TIMESTAMP};
    static const char *const want[] = {"SET,WAIT,", "SETNX,WAIT,"};
    size_t i;

    quirk("REFUSE", "WAIT");
    for (i = 0; i < 2; i++) {
        tslock_client *c = th_client(&proxy);
        tslock_lock *l = new_lock(c, "q:wait", schemes[i], 30000);
        const char *detail;
        char buf[64];

        CU_ASSERT_EQUAL(tslock_lock_set_replicas(l, 1, 60000), TSLOCK_OK);
        trace[0] = '\0';
        CU_ASSERT_EQUAL(tslock_client_set_step_hook(c, trace_hook, NULL),
                        TSLOCK_OK);
        CU_ASSERT_EQUAL(tslock_acquire(l, 0), TSLOCK_EUNSUPPORTED);
        detail = tslock_client_errstr(c);
        CU_ASSERT_PTR_NOT_NULL(strstr(detail, "needs WAIT"));
        CU_ASSERT_PTR_NOT_NULL(strstr(detail, "unknown command 'WAIT'"));
        CU_ASSERT_PTR_NOT_NULL(strstr(detail, "nothing is held"));
        /* The write, one WAIT, then the release (EVALSHA, or EVAL). */
        CU_ASSERT_EQUAL(strncmp(trace, want[i], strlen(want[i])), 0);
        CU_ASSERT_EQUAL(count_of(trace, "WAIT"), 1);
        CU_ASSERT_PTR_NOT_NULL(strstr(trace + strlen(want[i]), "EVAL"));
        CU_ASSERT_FALSE(tslock_lock_is_held(l));
        CU_ASSERT_PTR_NULL(upstream_get("q:wait", buf, sizeof(buf)));
        tslock_lock_free(l);
        tslock_client_free(c);
    }
    quirk("CLEAR", NULL);
}

/* An extension: done on the master, still held, and said so. */
static void test_wait_refused_extend(void)
{
    tslock_client *c = th_client(&proxy);
    tslock_lock *l = new_lock(c, "q:wait-extend", TSLOCK_SCHEME_TOKEN, 10000);
    char buf[64];

    CU_ASSERT_EQUAL_FATAL(tslock_acquire(l, 0), TSLOCK_OK);
    quirk("REFUSE", "WAIT");
    CU_ASSERT_EQUAL(tslock_lock_set_replicas(l, 1, 60000), TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_extend(l, 40000), TSLOCK_EUNSUPPORTED);
    CU_ASSERT_PTR_NOT_NULL(strstr(tslock_client_errstr(c), "needs WAIT"));
    CU_ASSERT_PTR_NOT_NULL(
        strstr(tslock_client_errstr(c), "the lock is still held"));
    CU_ASSERT_TRUE(tslock_lock_is_held(l));
    CU_ASSERT_TRUE(upstream_pttl("q:wait-extend") > 30000);
    CU_ASSERT_PTR_NOT_NULL(upstream_get("q:wait-extend", buf, sizeof(buf)));
    CU_ASSERT_STRING_EQUAL(buf, tslock_lock_value(l));
    CU_ASSERT_EQUAL(tslock_lock_set_replicas(l, 0, 0), TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_release(l), TSLOCK_OK);
    quirk("CLEAR", NULL);
    tslock_lock_free(l);
    tslock_client_free(c);
}

/* Start tools/tslock with args, stdout and stderr to cli_dir/tag.*. */
static pid_t spawn_cli(const char *const *args, const char *tag)
{
    const char *top = getenv("top_builddir");
    char prog[512], out[300], err[300];
    const char *argv[32];
    pid_t pid;
    int i;

    snprintf(prog, sizeof(prog), "%s/tools/tslock",
             top != NULL && top[0] != '\0' ? top : ".");
    argv[0] = prog;
    for (i = 0; args[i] != NULL && i < 30; i++)
        argv[i + 1] = args[i];
    argv[i + 1] = NULL;
    snprintf(out, sizeof(out), "%s/%s.out", cli_dir, tag);
    snprintf(err, sizeof(err), "%s/%s.err", cli_dir, tag);
    pid = fork();
    if (pid == 0) {
        int o = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        int e = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (o < 0 || e < 0 || dup2(o, 1) < 0 || dup2(e, 2) < 0)
            _exit(120);
        execv(prog, (char *const *)argv);
        _exit(127);
    }
    return pid;
}

static int wait_cli(pid_t pid)
{
    int st = 0;

    if (pid <= 0 || waitpid(pid, &st, 0) != pid)
        return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* The whole of what the CLI wrote to cli_dir/tag.ext, into buf. */
static const char *cli_text(const char *tag, const char *ext, char *buf,
                            size_t size)
{
    char path[300];
    size_t n = 0;
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s.%s", cli_dir, tag, ext);
    if ((f = fopen(path, "r")) != NULL) {
        n = fread(buf, 1, size - 1, f);
        fclose(f);
    }
    buf[n] = '\0';
    return buf;
}

/* tslock --replicas: EX_SOFTWARE (70), WAIT named, COMMAND not run. */
static void test_wait_refused_cli(void)
{
    char url[400], ran[300], text[4096];
    const char *args[12];

    snprintf(url, sizeof(url), "unix://%s", proxy.socket);
    snprintf(ran, sizeof(ran), "%s/ran", cli_dir);
    args[0] = "-u";
    args[1] = url;
    args[2] = "--replicas";
    args[3] = "1";
    args[4] = "q:wait-cli";
    args[5] = "--";
    args[6] = "touch";
    args[7] = ran;
    args[8] = NULL;
    quirk("REFUSE", "WAIT");
    CU_ASSERT_EQUAL(wait_cli(spawn_cli(args, "wait")), 70);
    quirk("CLEAR", NULL);
    cli_text("wait", "err", text, sizeof(text));
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "TSLOCK_EUNSUPPORTED"));
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "needs WAIT"));
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "nothing is held"));
    CU_ASSERT_NOT_EQUAL(access(ran, F_OK), 0);
    CU_ASSERT_PTR_NULL(upstream_get("q:wait-cli", text, sizeof(text)));
}

/* ------------------------------------------------- PUBLISH, SUBSCRIBE */

struct waiter {
    tslock_client *c;
    tslock_lock *l;
    int rc;
    unsigned fell_back; /* wait_take_release: wake-ups once it held */
};

/* Take the key waiting, note whether wake-ups fell back, release it. */
static void *wait_take_release(void *arg)
{
    struct waiter *w = arg;

    w->rc = tslock_acquire(w->l, th_deadline_ms(20000) - th_mono_ms());
    if (w->rc == TSLOCK_OK) {
        w->fell_back = tslock_client_wakeups(w->c, NULL);
        if (tslock_release(w->l) != TSLOCK_OK)
            w->rc = -2;
    }
    return NULL;
}

static void *wait_for_it(void *arg)
{
    struct waiter *w = arg;

    w->rc = tslock_acquire(w->l, th_deadline_ms(20000) - th_mono_ms());
    return NULL;
}

/*
 * A holder, and a waiter in a thread that joins the line and sleeps (its
 * retry delay 300 ms: what a lost announcement costs); once the server
 * shows it in line, the holder releases with release form `form`.  The
 * waiter must take the key.  Returns the waiter's client (the caller
 * frees it), the holder's through *holder.
 */
static tslock_client *hand_over(const char *key, tslock_release_form form,
                                tslock_client **holder)
{
    tslock_client *a = th_client(&proxy);
    tslock_lock *la = new_lock(a, key, TSLOCK_SCHEME_TOKEN, 30000);
    struct waiter w = {th_client(&proxy), NULL, -1, 0};
    pthread_t t;
    int rc;

    w.l = new_lock(w.c, key, TSLOCK_SCHEME_TOKEN, 30000);
    CU_ASSERT_EQUAL(tslock_lock_set_retry(w.l, 300, 300), TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_lock_set_release_form(la, form), TSLOCK_OK);
    CU_ASSERT_EQUAL_FATAL(tslock_acquire(la, 0), TSLOCK_OK);
    CU_ASSERT_FATAL(pthread_create(&t, NULL, wait_for_it, &w) == 0);
    CU_ASSERT_TRUE(th_await_queue(&srv, key, 1));
    rc = tslock_release(la);
    if (rc != TSLOCK_OK)
        fprintf(stderr, "release: %s: %s\n", tslock_errname(rc),
                tslock_client_errstr(a));
    CU_ASSERT_EQUAL(rc, TSLOCK_OK);
    pthread_join(t, NULL);
    CU_ASSERT_EQUAL(w.rc, TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_release(w.l), TSLOCK_OK);
    tslock_lock_free(la);
    tslock_lock_free(w.l);
    *holder = a;
    return w.c;
}

/* The control: announcements arrive, nothing falls back. */
static void test_wakeups_heard(void)
{
    tslock_client *a, *b = hand_over("q:heard", TSLOCK_RELEASE_BEST, &a);
    const char *why = NULL;

    CU_ASSERT_EQUAL(tslock_client_wakeups(a, &why), 0);
    CU_ASSERT_STRING_EQUAL(why, "");
    CU_ASSERT_EQUAL(tslock_client_wakeups(b, NULL), 0);
    CU_ASSERT_EQUAL(tslock_client_wakeups(NULL, &why), 0);
    tslock_client_free(a);
    tslock_client_free(b);
}

/* Whether the waiter's next wait listens: its entry in line is 'w'. */
static void check_polls_now(tslock_client *b, const char *key)
{
    tslock_client *a = th_client(&proxy);
    tslock_lock *la = new_lock(a, key, TSLOCK_SCHEME_TOKEN, 30000);
    tslock_lock *lb = new_lock(b, key, TSLOCK_SCHEME_TOKEN, 30000);
    redisContext *raw = th_redis(&srv);
    redisReply *r;
    char queue[64];

    CU_ASSERT_EQUAL_FATAL(tslock_acquire(la, 0), TSLOCK_OK);
    /* A wait that gives up at once still joins the line once. */
    CU_ASSERT_EQUAL(tslock_lock_set_retry(lb, 1, 1), TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_acquire(lb, 1), TSLOCK_EBUSY);
    snprintf(queue, sizeof(queue), "%s:released", key);
    r = redisCommand(raw, "PUBSUB NUMSUB %s", queue);
    CU_ASSERT_TRUE(r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements == 2
                   && r->element[1]->integer == 0);
    freeReplyObject(r);
    CU_ASSERT_EQUAL(tslock_release(la), TSLOCK_OK);
    redisFree(raw);
    tslock_lock_free(la);
    tslock_lock_free(lb);
    tslock_client_free(a);
}

/*
 * Published but never heard (the proxy delivers no message): the waiter
 * takes the key at its retry, finds its holder's lease far from over
 * and nobody else in line, and polls from then on.
 */
static void test_wakeups_lost(void)
{
    tslock_client *a, *b;
    const char *why = NULL;

    quirk("DEAF", NULL);
    b = hand_over("q:lost", TSLOCK_RELEASE_BEST, &a);
    CU_ASSERT_EQUAL(tslock_client_wakeups(a, NULL), 0);
    CU_ASSERT_EQUAL(tslock_client_wakeups(b, &why), TSLOCK_WAKEUPS_POLLING);
    CU_ASSERT_PTR_NOT_NULL(strstr(why, "a release was not heard"));
    check_polls_now(b, "q:lost");
    quirk("CLEAR", NULL);
    tslock_client_free(a);
    tslock_client_free(b);
}

/*
 * PUBLISH refused (the WATCH release form sends it as a command): the
 * release still happens, the releaser says its releases go unannounced,
 * and the waiter, hearing nothing, polls.
 */
static void test_publish_refused(void)
{
    tslock_client *a, *b;
    const char *why = NULL;

    quirk("REFUSE", "PUBLISH");
    b = hand_over("q:refused", TSLOCK_RELEASE_WATCH, &a);
    CU_ASSERT_EQUAL(tslock_client_wakeups(a, &why), TSLOCK_WAKEUPS_UNANNOUNCED);
    CU_ASSERT_PTR_NOT_NULL(strstr(why, "PUBLISH was refused"));
    CU_ASSERT_PTR_NOT_NULL(strstr(why, "unknown command 'PUBLISH'"));
    CU_ASSERT_EQUAL(tslock_client_wakeups(b, &why), TSLOCK_WAKEUPS_POLLING);
    quirk("CLEAR", NULL);
    tslock_client_free(a);
    tslock_client_free(b);
}

/*
 * SUBSCRIBE refused: the wait polls from its start, and says why; a
 * wait that ends busy is still a plain EBUSY.
 */
static void test_subscribe_refused(void)
{
    tslock_client *a = th_client(&proxy), *b = th_client(&proxy);
    tslock_lock *la = new_lock(a, "q:nosub", TSLOCK_SCHEME_TOKEN, 30000);
    tslock_lock *lb = new_lock(b, "q:nosub", TSLOCK_SCHEME_TOKEN, 30000);
    const char *why = NULL;

    quirk("REFUSE", "SUBSCRIBE");
    CU_ASSERT_EQUAL_FATAL(tslock_acquire(la, 0), TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_lock_set_retry(lb, 1, 1), TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_acquire(lb, 5), TSLOCK_EBUSY);
    CU_ASSERT_EQUAL(tslock_client_wakeups(b, &why), TSLOCK_WAKEUPS_POLLING);
    CU_ASSERT_PTR_NOT_NULL(strstr(why, "SUBSCRIBE was refused"));
    CU_ASSERT_PTR_NOT_NULL(strstr(why, "unknown command 'SUBSCRIBE'"));
    CU_ASSERT_EQUAL(tslock_client_wakeups(a, NULL), 0);
    CU_ASSERT_EQUAL(tslock_release(la), TSLOCK_OK);
    quirk("CLEAR", NULL);
    tslock_lock_free(la);
    tslock_lock_free(lb);
    tslock_client_free(a);
    tslock_client_free(b);
}

/*
 * A waiter that takes the key unheard while another is still in line may
 * have lost the wake to it (a release wakes the head alone): no verdict.
 * Deaf, two waiters: the first to take finds the other in line.
 */
static void test_unheard_with_others_in_line(void)
{
    tslock_client *a = th_client(&proxy);
    tslock_lock *la = new_lock(a, "q:two", TSLOCK_SCHEME_TOKEN, 30000);
    struct waiter w[2];
    pthread_t t[2];
    int i, polling = 0;

    quirk("DEAF", NULL);
    CU_ASSERT_EQUAL_FATAL(tslock_acquire(la, 0), TSLOCK_OK);
    for (i = 0; i < 2; i++) {
        w[i].c = th_client(&proxy);
        w[i].l = new_lock(w[i].c, "q:two", TSLOCK_SCHEME_TOKEN, 30000);
        w[i].rc = -1;
        w[i].fell_back = 0;
        CU_ASSERT_EQUAL(tslock_lock_set_retry(w[i].l, 100, 300), TSLOCK_OK);
    }
    /* Each waiter releases what it took, deaf too; the other takes it
     * then. */
    for (i = 0; i < 2; i++) {
        CU_ASSERT_FATAL(pthread_create(&t[i], NULL, wait_take_release, &w[i])
                        == 0);
        CU_ASSERT_TRUE(th_await_queue(&srv, "q:two", i + 1));
    }
    CU_ASSERT_EQUAL(tslock_release(la), TSLOCK_OK);
    for (i = 0; i < 2; i++) {
        pthread_join(t[i], NULL);
        polling += w[i].fell_back != 0;
    }
    CU_ASSERT_EQUAL(w[0].rc, TSLOCK_OK);
    CU_ASSERT_EQUAL(w[1].rc, TSLOCK_OK);
    /* The first taker had the other in line; the second was alone. */
    CU_ASSERT_EQUAL(polling, 1);
    quirk("CLEAR", NULL);
    for (i = 0; i < 2; i++) {
        tslock_lock_free(w[i].l);
        tslock_client_free(w[i].c);
    }
    tslock_lock_free(la);
    tslock_client_free(a);
}

/* tslock -v says it once, and takes the lock. */
static void test_wakeups_cli(void)
{
    tslock_client *a = th_client(&proxy);
    tslock_lock *la = new_lock(a, "q:cli", TSLOCK_SCHEME_TOKEN, 30000);
    char url[400], text[4096];
    const char *args[12];
    pid_t pid;

    snprintf(url, sizeof(url), "unix://%s", proxy.socket);
    args[0] = "-v";
    args[1] = "-u";
    args[2] = url;
    args[3] = "-w";
    args[4] = "20000";
    args[5] = "q:cli";
    args[6] = "--";
    args[7] = "true";
    args[8] = NULL;
    quirk("DEAF", NULL);
    CU_ASSERT_EQUAL_FATAL(tslock_acquire(la, 0), TSLOCK_OK);
    pid = spawn_cli(args, "deaf");
    CU_ASSERT_TRUE(th_await_queue(&srv, "q:cli", 1));
    CU_ASSERT_EQUAL(tslock_release(la), TSLOCK_OK);
    CU_ASSERT_EQUAL(wait_cli(pid), 0);
    quirk("CLEAR", NULL);
    cli_text("deaf", "err", text, sizeof(text));
    CU_ASSERT_EQUAL(count_of(text, "wake-ups fell back: a release was not "
                                   "heard"),
                    1);
    CU_ASSERT_EQUAL(count_of(text, "wake-ups fell back"), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "released 'q:cli'"));
    tslock_lock_free(la);
    tslock_client_free(a);
}

static int start(void)
{
    snprintf(cli_dir, sizeof(cli_dir), "/tmp/tslock-quirks.XXXXXX");
    if (mkdtemp(cli_dir) == NULL || th_server_start(&srv, NULL) != 0
        || th_proxy_start(&proxy, &srv, "modern") != 0)
        return -1;
    ctl = th_redis(&proxy);
    return ctl == NULL ? -1 : 0;
}

static void stop(void)
{
    char cmd[128];

    if (ctl != NULL)
        redisFree(ctl);
    th_proxy_stop(&proxy);
    th_server_stop(&srv);
    snprintf(cmd, sizeof(cmd), "rm -rf %s", cli_dir);
    if (cli_dir[0] != '\0' && system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", cli_dir);
}

int main(void)
{
    CU_pSuite s;
    int rc = 1;

    if (start() != 0)
        goto out;
    if (CU_initialize_registry() != CUE_SUCCESS)
        goto out;
    s = CU_add_suite("no WAIT", NULL, NULL);
    CU_add_test(s, "acquire: EUNSUPPORTED naming WAIT, nothing held",
                test_wait_refused_acquire);
    CU_add_test(s, "extend: EUNSUPPORTED, still held, said so",
                test_wait_refused_extend);
    CU_add_test(s, "tslock --replicas: exit 70, COMMAND not run",
                test_wait_refused_cli);
    s = CU_add_suite("PUBLISH refused or lost", NULL, NULL);
    CU_add_test(s, "control: announcements heard, no fallback",
                test_wakeups_heard);
    CU_add_test(s, "published, never heard: the waiter polls",
                test_wakeups_lost);
    CU_add_test(s, "PUBLISH refused: unannounced, the waiter polls",
                test_publish_refused);
    CU_add_test(s, "SUBSCRIBE refused: the waits poll", test_subscribe_refused);
    CU_add_test(s, "unheard with another in line: no verdict",
                test_unheard_with_others_in_line);
    CU_add_test(s, "tslock -v says it once", test_wakeups_cli);
    rc = th_run_all();
out:
    stop();
    return rc;
}

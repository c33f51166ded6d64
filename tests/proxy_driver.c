/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * proxy_driver.c - start and stop tests/oldredis, the proxy that makes a
 * real redis-server answer like Redis 2.0 - 2.6.11, for the test suites.
 * The proxy dies with the test process (PR_SET_PDEATHSIG), so a crashed
 * test leaves no proxy behind.  Also the small helpers the suites share:
 * load-test rounds and a timestamp-scheme lock; and the client side of
 * the proxy's fault mode.
 */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

#define MAX_PROXIES 8

static th_server *live[MAX_PROXIES];
static pid_t owner; /* the process that started them */

/*
 * A forked worker that calls exit() runs this handler too; only the
 * process that started the proxies may stop them.
 */
static void stop_all(void)
{
    int i;

    if (getpid() != owner)
        return;
    for (i = 0; i < MAX_PROXIES; i++)
        if (live[i] != NULL)
            th_proxy_stop(live[i]);
}

static const char *proxy_path(void)
{
    static char path[512];
    const char *env = getenv("OLDREDIS");

    if (env != NULL && env[0] != '\0')
        return env;
    env = getenv("top_builddir");
    snprintf(path, sizeof(path), "%s/tests/oldredis",
             env != NULL && env[0] != '\0' ? env : ".");
    return path;
}

/* "ready\n", or "ready PORT\n" for a TCP listener (into *port). */
static int wait_ready(int fd, int *port)
{
    char buf[32];
    ssize_t n;

    do
        n = read(fd, buf, sizeof(buf) - 1);
    while (n < 0 && errno == EINTR);
    if (n <= 0 || strncmp(buf, "ready", 5) != 0)
        return -1;
    buf[n] = '\0';
    if (port != NULL && (*port = atoi(buf + 5)) <= 0)
        return -1;
    return 0;
}

static int proxy_start(th_server *p, const th_server *upstream,
                       const char *version, int tcp)
{
    static int registered;
    const char *bin = proxy_path();
    char fdarg[16];
    int ready[2], i, rc;
    pid_t parent = getpid();

    memset(p, 0, sizeof(*p));
    snprintf(p->dir, sizeof(p->dir), "%s/tslock-proxy.XXXXXX",
             getenv("TMPDIR") != NULL ? getenv("TMPDIR") : "/tmp");
    if (mkdtemp(p->dir) == NULL || pipe(ready) != 0) {
        fprintf(stderr, "th_proxy_start: %s\n", strerror(errno));
        return -1;
    }
    if (!tcp)
        snprintf(p->socket, sizeof(p->socket), "%s/redis-%s.sock", p->dir,
                 version);
    snprintf(fdarg, sizeof(fdarg), "%d", ready[1]);
    p->pid = fork();
    if (p->pid == 0) {
        close(ready[0]);
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (getppid() != parent)
            _exit(1);
        if (tcp)
            execl(bin, bin, "--emulate", version, "--listen-port", "0",
                  "--upstream", upstream->socket, "--ready-fd", fdarg,
                  (char *)NULL);
        else
            execl(bin, bin, "--emulate", version, "--listen", p->socket,
                  "--upstream", upstream->socket, "--ready-fd", fdarg,
                  (char *)NULL);
        fprintf(stderr, "th_proxy_start: cannot run %s: %s\n", bin,
                strerror(errno));
        _exit(127);
    }
    close(ready[1]);
    rc = p->pid > 0 ? wait_ready(ready[0], tcp ? &p->port : NULL) : -1;
    close(ready[0]);
    if (rc != 0) {
        fprintf(stderr, "th_proxy_start: %s did not become ready\n", bin);
        th_proxy_stop(p);
        return -1;
    }
    if (!registered) {
        registered = 1;
        owner = parent;
        atexit(stop_all);
    }
    for (i = 0; i < MAX_PROXIES; i++)
        if (live[i] == NULL) {
            live[i] = p;
            break;
        }
    return 0;
}

int th_proxy_start(th_server *p, const th_server *upstream, const char *version)
{
    return proxy_start(p, upstream, version, 0);
}

int th_proxy_start_tcp(th_server *p, const th_server *upstream,
                       const char *version)
{
    return proxy_start(p, upstream, version, 1);
}

void th_proxy_stop(th_server *p)
{
    int i;

    for (i = 0; i < MAX_PROXIES; i++)
        if (live[i] == p)
            live[i] = NULL;
    if (p->pid > 0) {
        kill(p->pid, SIGTERM);
        waitpid(p->pid, NULL, 0);
        p->pid = 0;
    }
    if (p->socket[0] != '\0')
        unlink(p->socket);
    if (p->dir[0] != '\0')
        rmdir(p->dir);
    p->dir[0] = p->socket[0] = '\0';
}

/* Not CUnit: the fault walk arms faults from threads of its own. */
static redisReply *fault_command(redisContext *ctl, const char *fmt, ...)
{
    redisReply *r;
    va_list ap;

    va_start(ap, fmt);
    r = redisvCommand(ctl, fmt, ap);
    va_end(ap);
    if (r != NULL && r->type != REDIS_REPLY_ERROR)
        return r;
    fprintf(stderr, "TSLOCKFAULT: %s\n", r != NULL ? r->str : ctl->errstr);
    freeReplyObject(r);
    return NULL;
}

int th_fault_arm(redisContext *ctl, const char *kind, int n, int delay_ms)
{
    redisReply *r;

    if (strcmp(kind, "delay") == 0)
        r = fault_command(ctl, "TSLOCKFAULT ARM delay %d %d", n, delay_ms);
    else
        r = fault_command(ctl, "TSLOCKFAULT ARM %s %d", kind, n);
    freeReplyObject(r);
    return r != NULL ? 0 : -1;
}

int th_fault_clear(redisContext *ctl)
{
    redisReply *r = fault_command(ctl, "TSLOCKFAULT CLEAR");

    freeReplyObject(r);
    return r != NULL ? 0 : -1;
}

static long fault_number(redisContext *ctl, const char *what)
{
    redisReply *r = fault_command(ctl, "TSLOCKFAULT %s", what);
    long n =
        r != NULL && r->type == REDIS_REPLY_INTEGER ? (long)r->integer : -1;

    freeReplyObject(r);
    return n;
}

long th_fault_count(redisContext *ctl)
{
    return fault_number(ctl, "COUNT");
}

int th_fault_fired(redisContext *ctl)
{
    return (int)fault_number(ctl, "FIRED");
}

int th_rounds(int dflt)
{
    const char *env = getenv("TSLOCK_TEST_ROUNDS");
    int n = env != NULL ? atoi(env) : 0;

    return n > 0 ? n : dflt;
}

tslock_lock *th_stamp_lock(tslock_client *c, const char *key, int64_t ttl_ms)
{
    tslock_lock *l = NULL;

    CU_ASSERT_FATAL(tslock_lock_new(&l, c, key) == TSLOCK_OK);
    CU_ASSERT_FATAL(tslock_lock_set_ttl(l, ttl_ms) == TSLOCK_OK);
    CU_ASSERT_FATAL(tslock_lock_set_scheme(l, TSLOCK_SCHEME_TIMESTAMP)
                    == TSLOCK_OK);
    return l;
}

void th_workers_start(int n, void (*child)(int index, void *userdata),
                      void *userdata, pid_t *pids)
{
    int i;

    CU_ASSERT_FATAL(n > 0 && n <= 64);
#ifdef SYS_gettid
    /* The main thread, where CUnit runs the tests (see harness.h). */
    if ((pid_t)syscall(SYS_gettid) != getpid()) {
        fprintf(stderr, "th_workers_start: called from a thread other than "
                        "the main one; fork there only\n");
        CU_FAIL_FATAL("th_workers_start outside the main thread");
    }
#endif
    fflush(stdout); /* no buffered output copied into the children */
    fflush(stderr);
    for (i = 0; i < n; i++) {
        pids[i] = fork();
        CU_ASSERT_FATAL(pids[i] >= 0);
        if (pids[i] == 0) {
            child(i, userdata);
            _exit(0);
        }
    }
}

int th_workers_wait(int n, const pid_t *pids)
{
    int i, status, clean = 1;

    for (i = 0; i < n; i++)
        if (waitpid(pids[i], &status, 0) != pids[i] || !WIFEXITED(status)
            || WEXITSTATUS(status) != 0)
            clean = 0;
    return clean;
}

int th_workers(int n, void (*child)(int index, void *userdata), void *userdata)
{
    pid_t pids[64];

    CU_ASSERT_FATAL(n > 0 && n <= 64);
    th_workers_start(n, child, userdata, pids);
    return th_workers_wait(n, pids);
}

/*
 * selftest_harness.c - a check of harness.c itself, not wired into make
 * check: servers start, answer on both listeners, die, come back and are
 * cleaned up however the test process ends.  Build and run by hand from a
 * build tree:
 *   gcc -std=gnu99 -Wall -Wextra -I$(srcdir)/include -I$(srcdir)/tests \
 *       $(srcdir)/tests/selftest_harness.c $(srcdir)/tests/harness.c \
 *       .libs/libtslock.a -lhiredis -lcunit -o selftest_harness
 */
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

static int failures;

#define CHECK(cond)                                                            \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond);    \
            failures++;                                                        \
        }                                                                      \
    } while (0)

static int dir_exists(const char *dir)
{
    struct stat st;

    return stat(dir, &st) == 0;
}

/*
 * Whether a server of s still runs: its last pid is alive, or pgrep finds
 * a redis-server titled with its port (the bracket keeps pgrep's own
 * shell from matching).
 */
static int still_running(const th_server *s, pid_t last_pid)
{
    char cmd[200];

    if (last_pid > 0 && (kill(last_pid, 0) == 0 || errno != ESRCH))
        return 1;
    snprintf(cmd, sizeof(cmd),
             "pgrep -f 'redis-serve[r] .*:%d( |$)' >/dev/null", s->port);
    return system(cmd) == 0;
}

static int ping(redisContext *c)
{
    redisReply *r = redisCommand(c, "PING");
    int ok = r != NULL && r->type == REDIS_REPLY_STATUS
             && strcmp(r->str, "PONG") == 0;

    if (r != NULL)
        freeReplyObject(r);
    return ok;
}

static int ping_unix(const th_server *s)
{
    redisContext *c = th_redis(s);
    int ok = ping(c);

    redisFree(c);
    return ok;
}

static int ping_tcp(const th_server *s)
{
    redisContext *c = redisConnect("127.0.0.1", s->port);
    int ok = c != NULL && c->err == 0 && ping(c);

    if (c != NULL)
        redisFree(c);
    return ok;
}

static void check_two_servers(void)
{
    th_server a, b, a_copy;
    redisContext *c;
    redisReply *r;
    pid_t pid_a, pid_b;

    CHECK(th_server_start(&a, NULL) == 0);
    CHECK(th_server_start(&b, "requirepass secret") == 0);
    CHECK(a.pid > 0 && b.pid > 0 && a.port != b.port);
    CHECK(ping_unix(&a) && ping_tcp(&a));
    c = th_redis(&b);
    CHECK(!ping(c));
    r = redisCommand(c, "AUTH secret");
    CHECK(r != NULL && r->type == REDIS_REPLY_STATUS);
    freeReplyObject(r);
    CHECK(ping(c));
    redisFree(c);

    c = th_redis(&a);
    pid_a = a.pid;
    th_server_kill(&a);
    CHECK(a.pid == 0 && dir_exists(a.dir) && !still_running(&a, pid_a));
    CHECK(!ping(c));
    redisFree(c);
    CHECK(th_server_restart(&a) == 0 && a.pid > 0 && a.pid != pid_a);
    CHECK(ping_unix(&a) && ping_tcp(&a));

    pid_a = a.pid;
    th_server_stop(&a);
    CHECK(a.pid == 0 && !dir_exists(a.dir) && !still_running(&a, pid_a));
    th_server_stop(&a);
    CHECK(th_server_restart(&a) == 0 && ping_unix(&a) && ping_tcp(&a));
    a_copy = a;
    pid_a = a.pid;
    pid_b = b.pid;
    th_server_stop(&a);
    th_server_stop(&b);
    CHECK(!dir_exists(a_copy.dir) && !dir_exists(b.dir));
    CHECK(!still_running(&a_copy, pid_a) && !still_running(&b, pid_b));
}

/* A restart must fail cleanly when another process holds the port. */
static void check_restart_port_taken(void)
{
    th_server a;
    struct sockaddr_in addr;
    int fd, one = 1;
    pid_t pid;

    CHECK(th_server_start(&a, NULL) == 0);
    th_server_kill(&a);
    fd = socket(AF_INET, SOCK_STREAM, 0);
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    memset(&addr, 0, sizeof(addr));
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(a.port);
    CHECK(bind(fd, (struct sockaddr *)&addr, sizeof(addr)) == 0);
    CHECK(listen(fd, 1) == 0);
    fprintf(stderr, "(expected failure output follows)\n");
    CHECK(th_server_restart(&a) == -1 && a.pid == 0);
    close(fd);
    CHECK(th_server_restart(&a) == 0 && ping_unix(&a));
    pid = a.pid;
    th_server_stop(&a);
    CHECK(!dir_exists(a.dir) && !still_running(&a, pid));
}

static void check_limit(void)
{
    th_server s[9];
    pid_t pid;
    int i;

    for (i = 0; i < 8; i++)
        CHECK(th_server_start(&s[i], NULL) == 0);
    CHECK(th_server_start(&s[8], NULL) == -1);
    for (i = 0; i < 8; i++) {
        pid = s[i].pid;
        th_server_stop(&s[i]);
        CHECK(!dir_exists(s[i].dir) && !still_running(&s[i], pid));
    }
    CHECK(!dir_exists(s[8].dir));
}

/*
 * A child starts a server, tells us about it and ends by `how`: 0 for
 * exit(), else a signal raised (or a real fault).  The server must be
 * gone afterwards.
 */
static void check_child_cleanup(int how, int fault)
{
    int fds[2], status;
    pid_t pid;
    th_server s;

    memset(&s, 0, sizeof(s));
    CHECK(pipe(fds) == 0);
    pid = fork();
    if (pid == 0) {
        close(fds[0]);
        if (th_server_start(&s, NULL) != 0
            || write(fds[1], &s, sizeof(s)) != sizeof(s))
            _exit(3);
        if (fault)
            *(volatile int *)0 = 1;
        if (how == 0)
            exit(0);
        raise(how);
        _exit(4);
    }
    close(fds[1]);
    CHECK(read(fds[0], &s, sizeof(s)) == sizeof(s));
    close(fds[0]);
    CHECK(waitpid(pid, &status, 0) == pid);
    if (how == 0)
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    else
        CHECK((WIFSIGNALED(status) && WTERMSIG(status) == how)
              || (fault && getenv("ASAN_SELFTEST") != NULL));
    CHECK(s.pid > 0 && !dir_exists(s.dir) && !still_running(&s, s.pid));
}

/* A forked child's exit must leave its parent's servers alone. */
static void check_fork_keeps_parent_server(void)
{
    th_server s;
    pid_t pid;
    int status;

    CHECK(th_server_start(&s, NULL) == 0);
    pid = fork();
    if (pid == 0)
        exit(0);
    CHECK(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status) && dir_exists(s.dir) && ping_unix(&s));
    th_server_stop(&s);
}

/* Bad settings fail with a message and leave no dir behind. */
static void check_bad_environment(void)
{
    th_server s;
    char long_dir[200];

    setenv("REDIS_SERVER", "/nonexistent/redis-server", 1);
    fprintf(stderr, "(expected failure output follows)\n");
    CHECK(th_server_start(&s, NULL) == -1 && !dir_exists(s.dir));
    unsetenv("REDIS_SERVER");
    memset(long_dir, 'x', sizeof(long_dir) - 1);
    long_dir[0] = '/';
    long_dir[sizeof(long_dir) - 1] = '\0';
    setenv("TMPDIR", long_dir, 1);
    CHECK(th_server_start(&s, NULL) == -1);
    unsetenv("TMPDIR");
    CHECK(th_server_start(&s, "no-such-directive yes\n") == -1);
    CHECK(!dir_exists(s.dir));
}

/* th_client and th_redis exit(2) on failure, and exit still cleans up. */
static void check_exit_on_connect_failure(int use_redis)
{
    th_server s;
    pid_t pid;
    int status, fds[2];

    CHECK(pipe(fds) == 0);
    pid = fork();
    if (pid == 0) {
        if (th_server_start(&s, NULL) != 0
            || write(fds[1], &s, sizeof(s)) != sizeof(s))
            _exit(3);
        th_server_kill(&s);
        if (use_redis)
            th_redis(&s);
        else
            th_client(&s);
        _exit(4);
    }
    close(fds[1]);
    CHECK(read(fds[0], &s, sizeof(s)) == sizeof(s));
    close(fds[0]);
    CHECK(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 2);
    CHECK(!dir_exists(s.dir) && !still_running(&s, s.pid));
}

/* th_client gives a connected client that sees the server's commands. */
static void check_client(void)
{
    th_server s;
    tslock_client *c;

    CHECK(th_server_start(&s, NULL) == 0);
    c = th_client(&s);
    CHECK(!tslock_client_is_broken(c));
    CHECK((tslock_client_caps(c) & TSLOCK_CAP_SET_NX_PX) != 0);
    tslock_client_free(c);
    th_server_stop(&s);
}

static void passing_test(void)
{
    CU_ASSERT(1);
}
static void failing_test(void)
{
    CU_ASSERT(0);
}
static int failing_init(void)
{
    return 1;
}

/* th_run_all's verdict: 0 for a clean run, non-zero for anything else. */
static int run_suite(CU_TestFunc test, CU_InitializeFunc init)
{
    CU_pSuite suite;

    CU_initialize_registry();
    suite = CU_add_suite("selftest", init, NULL);
    if (test != NULL)
        CU_add_test(suite, "t", test);
    return th_run_all();
}

static void check_run_all(void)
{
    th_clock clk;

    CHECK(run_suite(passing_test, NULL) == 0);
    CHECK(run_suite(failing_test, NULL) != 0);
    CHECK(run_suite(passing_test, failing_init) != 0);
    CHECK(run_suite(NULL, NULL) != 0);
    th_clock_init(&clk);
    th_clock_advance(&clk, 5);
    CHECK(th_clock_fn(TSLOCK_CLOCK_WALL, &clk) == INT64_C(1700000000005));
    CHECK(th_clock_fn(TSLOCK_CLOCK_MONOTONIC, &clk) == 1000005);
}

int main(void)
{
    check_two_servers();
    check_restart_port_taken();
    check_limit();
    check_child_cleanup(0, 0);
    check_child_cleanup(SIGTERM, 0);
    check_child_cleanup(SIGINT, 0);
    check_child_cleanup(SIGABRT, 0);
    check_child_cleanup(SIGSEGV, 1);
    check_fork_keeps_parent_server();
    check_bad_environment();
    check_exit_on_connect_failure(0);
    check_exit_on_connect_failure(1);
    check_client();
    check_run_all();
    printf("%s: %d failures\n", failures ? "FAIL" : "PASS", failures);
    return failures != 0;
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * check_oldredis - checks the oldredis proxy against
 * shared/REDIS-VERSIONS.md, row by row, for every emulated version.
 *
 * It starts its own redis-server pair in a mkdtemp dir (one plain, one with
 * requirepass), starts the proxy for each version and waits for its
 * --ready-fd line, then compares replies word for word.  Every child is
 * stopped by its pid at the end, on failure and on SIGINT/SIGTERM or the
 * watchdog alarm.
 *
 * Usage: check_oldredis [OLDREDIS [REDIS_SERVER]]
 *   or the environment variables OLDREDIS and REDIS_SERVER (default
 *   "redis-server" from PATH).  OLDREDIS_WRAPPER, if set, is a command
 *   prefix for the proxy (e.g. "valgrind --leak-check=full
 *   --error-exitcode=99"); the proxy must still exit with status 0.
 * Exit status: 0 when every check passed.  Last line: "N passed, N failed".
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif
#include <sys/time.h>
#include <sys/types.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "hiredis_compat.h"

#define MAX_CHILDREN 16

static const char *const versions[] = {"2.0.5", "2.2.15", "2.4.18", "2.6.0",
                                       "2.6.11"};

static char dir[256];
static pid_t children[MAX_CHILDREN];
static int passed, failed;
static const char *ver = "-"; /* version under test, for messages */
static int vnum;              /* the same as major*10000+minor*100+patch */
static int slow;              /* proxy runs under a wrapper (valgrind) */

/* ------------------------------------------------------------ processes */

static void stop_pid(pid_t pid)
{
    int i, status;

    if (pid <= 0)
        return;
    kill(pid, SIGTERM);
    for (i = 0; i < 500; i++) {
        if (waitpid(pid, &status, WNOHANG) != 0)
            return;
        usleep(10000);
    }
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
}

static void forget_child(pid_t pid)
{
    int i;

    for (i = 0; i < MAX_CHILDREN; i++)
        if (children[i] == pid)
            children[i] = 0;
}

static void remove_dir(void)
{
    char cmd[300];

    if (dir[0] == '\0')
        return;
    /* The dir holds only our sockets and server logs. */
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "check_oldredis: could not remove %s\n", dir);
    dir[0] = '\0';
}

static void cleanup(void)
{
    int i;

    for (i = 0; i < MAX_CHILDREN; i++) {
        stop_pid(children[i]);
        children[i] = 0;
    }
    remove_dir();
}

static void on_fatal_signal(int sig)
{
    /* Not async-signal-safe in theory; acceptable for a test driver that
     * is about to exit anyway and must not leave servers behind. */
    fprintf(stderr, "check_oldredis: signal %d, stopping\n", sig);
    cleanup();
    _exit(2);
}

static pid_t spawn(char *const argv[])
{
    pid_t pid = fork();
    int i;

    if (pid < 0) {
        perror("fork");
        return -1;
    }
    if (pid == 0) {
        int null = open("/dev/null", O_RDONLY);
#ifdef __linux__
        /* Even a SIGKILLed check must not leave servers behind. */
        prctl(PR_SET_PDEATHSIG, SIGTERM);
#endif
        dup2(null, 0);
        execvp(argv[0], argv);
        fprintf(stderr, "exec %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    for (i = 0; i < MAX_CHILDREN; i++)
        if (children[i] == 0) {
            children[i] = pid;
            break;
        }
    return pid;
}

static redisContext *connect_unix(const char *path)
{
    struct timeval tv = {slow ? 60 : 10, 0};
    redisContext *c = redisConnectUnixWithTimeout(path, tv);

    if (c && !c->err)
        redisSetTimeout(c, tv);
    return c;
}

/* Waits until the server at path answers anything (PING or NOAUTH). */
static int wait_server(const char *path, pid_t pid)
{
    int i, status;

    for (i = 0; i < 1000; i++) {
        redisContext *c = connect_unix(path);
        if (c && !c->err) {
            redisReply *r = redisCommand(c, "PING");
            int ok = r != NULL;
            freeReplyObject(r);
            redisFree(c);
            if (ok)
                return 0;
        } else {
            redisFree(c);
        }
        if (waitpid(pid, &status, WNOHANG) == pid) {
            forget_child(pid);
            return -1;
        }
        usleep(10000);
    }
    return -1;
}

static pid_t start_server(const char *server, const char *name,
                          const char *password, char *sock, size_t socklen)
{
    char log[300];
    char *argv[24];
    int n = 0;
    pid_t pid;

    snprintf(sock, socklen, "%s/%s.sock", dir, name);
    snprintf(log, sizeof log, "%s/%s.log", dir, name);
    argv[n++] = (char *)server;
    argv[n++] = "--port";
    argv[n++] = "0";
    argv[n++] = "--unixsocket";
    argv[n++] = sock;
    argv[n++] = "--save";
    argv[n++] = "";
    argv[n++] = "--appendonly";
    argv[n++] = "no";
    argv[n++] = "--dir";
    argv[n++] = dir;
    argv[n++] = "--logfile";
    argv[n++] = log;
    if (password) {
        argv[n++] = "--requirepass";
        argv[n++] = (char *)password;
    }
    argv[n] = NULL;
    pid = spawn(argv);
    if (pid > 0 && wait_server(sock, pid) < 0) {
        fprintf(stderr, "check_oldredis: %s did not start, see %s\n", server,
                log);
        return -1;
    }
    return pid;
}

/* Reads the proxy's "ready\n" from the pipe; no sleeping for order. */
static int wait_ready(int fd)
{
    char buf[32];
    size_t got = 0;
    struct pollfd p = {fd, POLLIN, 0};

    while (got < 6) {
        ssize_t n;
        if (poll(&p, 1, slow ? 120000 : 10000) <= 0)
            return -1;
        n = read(fd, buf + got, sizeof buf - 1 - got);
        if (n <= 0)
            return -1;
        got += (size_t)n;
    }
    buf[got] = '\0';
    return strcmp(buf, "ready\n") == 0 ? 0 : -1;
}

static pid_t start_proxy(const char *proxy, const char *version,
                         const char *upstream, const char *listen)
{
    char *argv[40], fdstr[16], *wrap = getenv("OLDREDIS_WRAPPER"), *copy;
    int n = 0, p[2];
    pid_t pid;

    if (pipe(p) < 0)
        return -1;
    copy = wrap ? strdup(wrap) : NULL;
    for (char *w = copy ? strtok(copy, " ") : NULL; w && n < 30;
         w = strtok(NULL, " "))
        argv[n++] = w;
    snprintf(fdstr, sizeof fdstr, "%d", p[1]);
    argv[n++] = (char *)proxy;
    argv[n++] = "--emulate";
    argv[n++] = (char *)version;
    argv[n++] = "--listen";
    argv[n++] = (char *)listen;
    argv[n++] = "--upstream";
    argv[n++] = (char *)upstream;
    argv[n++] = "--ready-fd";
    argv[n++] = fdstr;
    argv[n] = NULL;
    fcntl(p[0], F_SETFD, FD_CLOEXEC);
    pid = spawn(argv);
    free(copy);
    close(p[1]);
    if (pid > 0 && wait_ready(p[0]) < 0) {
        fprintf(stderr, "check_oldredis: proxy %s did not get ready\n",
                version);
        close(p[0]);
        return -1;
    }
    close(p[0]);
    return pid;
}

/* SIGTERM must make the proxy exit cleanly (status 0). */
static int stop_proxy(pid_t pid)
{
    int status = 0, i;

    kill(pid, SIGTERM);
    for (i = 0; i < (slow ? 6000 : 1000); i++) {
        if (waitpid(pid, &status, WNOHANG) == pid) {
            forget_child(pid);
            return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
        }
        usleep(10000);
    }
    return -1;
}

/* ------------------------------------------------------------ checks */

__attribute__((format(printf, 3, 4))) static void
result(int ok, const char *what, const char *fmt, ...)
{
    va_list ap;

    if (ok) {
        passed++;
        return;
    }
    failed++;
    printf("FAIL [%s] %s: ", ver, what);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
}

static void describe(const redisReply *r, char *buf, size_t n)
{
    if (r == NULL)
        snprintf(buf, n, "(no reply: connection error)");
    else if (r->type == REDIS_REPLY_ERROR)
        snprintf(buf, n, "error \"%s\"", r->str);
    else if (r->type == REDIS_REPLY_STATUS)
        snprintf(buf, n, "status \"%s\"", r->str);
    else if (r->type == REDIS_REPLY_STRING)
        snprintf(buf, n, "bulk \"%.200s\"", r->str);
    else if (r->type == REDIS_REPLY_INTEGER)
        snprintf(buf, n, "integer %lld", r->integer);
    else if (r->type == REDIS_REPLY_NIL)
        snprintf(buf, n, "nil");
    else
        snprintf(buf, n, "array of %zu", (size_t)r->elements);
}

static int is_type(const redisReply *r, int type, const char *s)
{
    return r && r->type == type && (s == NULL || strcmp(r->str, s) == 0);
}

static void expect(const char *what, redisReply *r, int type, const char *s)
{
    char got[300];

    describe(r, got, sizeof got);
    result(is_type(r, type, s), what, "expected %s \"%s\", got %s",
           type == REDIS_REPLY_ERROR    ? "error"
           : type == REDIS_REPLY_STATUS ? "status"
           : type == REDIS_REPLY_NIL    ? "nil"
                                        : "bulk",
           s ? s : "", got);
    freeReplyObject(r);
}

static void expect_error(const char *what, redisReply *r, const char *s)
{
    expect(what, r, REDIS_REPLY_ERROR, s);
}

static void expect_ok(const char *what, redisReply *r)
{
    expect(what, r, REDIS_REPLY_STATUS, "OK");
}

static void expect_bulk(const char *what, redisReply *r, const char *s)
{
    expect(what, r, REDIS_REPLY_STRING, s);
}

static void expect_error_has(const char *what, redisReply *r, const char *part)
{
    char got[300];

    describe(r, got, sizeof got);
    result(r && r->type == REDIS_REPLY_ERROR && strstr(r->str, part), what,
           "expected an error containing \"%s\", got %s", part, got);
    freeReplyObject(r);
}

static void expect_int_in(const char *what, redisReply *r, long long lo,
                          long long hi)
{
    char got[300];

    describe(r, got, sizeof got);
    result(r && r->type == REDIS_REPLY_INTEGER && r->integer >= lo
               && r->integer <= hi,
           what, "expected integer in [%lld, %lld], got %s", lo, hi, got);
    freeReplyObject(r);
}

static void expect_int(const char *what, redisReply *r, long long v)
{
    expect_int_in(what, r, v, v);
}

/* Raw wire checks, for what hiredis does not show (*-1 versus $-1,
 * inline commands, a close without reply). */
static int raw_open(const char *path)
{
    struct sockaddr_un sa;
    struct timeval tv = {slow ? 60 : 10, 0};
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);

    memset(&sa, 0, sizeof sa);
    sa.sun_family = AF_UNIX;
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path);
    if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    return fd;
}

static void escape(const char *s, size_t n, char *out, size_t cap)
{
    size_t i, o = 0;

    for (i = 0; i < n && o + 5 < cap; i++) {
        if (s[i] == '\r')
            o += (size_t)snprintf(out + o, cap - o, "\\r");
        else if (s[i] == '\n')
            o += (size_t)snprintf(out + o, cap - o, "\\n");
        else
            out[o++] = s[i];
    }
    out[o] = '\0';
}

/* Sends req; expects exactly want back (want_eof: and then a close). */
static void raw_expect(const char *what, int fd, const char *req,
                       const char *want, int want_eof)
{
    char got[4096], e1[1024], e2[1024];
    size_t n = 0, wn = strlen(want);
    ssize_t k = 0;
    int eof = 0;

    if (fd < 0 || write(fd, req, strlen(req)) != (ssize_t)strlen(req)) {
        result(0, what, "could not send");
        return;
    }
    while (n < wn || (want_eof && !eof)) {
        k = read(fd, got + n, (want_eof ? sizeof got - 1 : wn) - n);
        if (k <= 0) {
            eof = k == 0;
            break;
        }
        n += (size_t)k;
    }
    escape(want, wn, e1, sizeof e1);
    escape(got, n, e2, sizeof e2);
    result(n == wn && memcmp(got, want, wn) == 0 && (!want_eof || eof), what,
           "expected \"%s\"%s, got \"%s\"%s", e1, want_eof ? " then close" : "",
           e2, want_eof && !eof ? " and no close" : "");
}

/* ------------------------------------------------------------ the rows */

typedef struct target {
    const char *proxy_sock; /* proxy in front of the plain server */
    const char *auth_sock;  /* proxy in front of the requirepass server */
    redisContext *direct;   /* the plain server itself, for setup */
} target;

#define CMD(c, ...) ((redisReply *)redisCommand((c), __VA_ARGS__))

static void row_basics(redisContext *c)
{
    expect("PING", CMD(c, "PING"), REDIS_REPLY_STATUS, "PONG");
    expect_int("SETNX new key", CMD(c, "SETNX b:k v1"), 1);
    expect_int("SETNX existing key", CMD(c, "SETNX b:k v2"), 0);
    expect_bulk("GET", CMD(c, "GET b:k"), "v1");
    expect_bulk("GETSET", CMD(c, "GETSET b:k v3"), "v1");
    expect_int("DEL", CMD(c, "DEL b:k"), 1);
    expect_ok("SETEX", CMD(c, "SETEX b:e 100 v"));
    expect_int_in("TTL after SETEX 100", CMD(c, "TTL b:e"), 99, 100);
    expect_int("PUBLISH", CMD(c, "PUBLISH b:chan hello"), 0);
    expect_ok("SELECT 1", CMD(c, "SELECT 1"));
    expect_error("SELECT 99", CMD(c, "SELECT 99"), "ERR invalid DB index");
    expect_ok("SELECT 0", CMD(c, "SELECT 0"));
    expect_ok("SET string", CMD(c, "SET b:s v"));
    expect_error("LPUSH on a string", CMD(c, "LPUSH b:s x"),
                 "ERR Operation against a key holding the wrong kind of "
                 "value");
    expect_error("unknown modern command keeps the name as sent",
                 CMD(c, "UNLINK b:s"), "ERR unknown command 'UNLINK'");
    expect_error("HELLO is unknown", CMD(c, "hello 3"),
                 "ERR unknown command 'hello'");
    expect_error("EXISTS with two keys (3.0.3+)", CMD(c, "EXISTS b:s b:k"),
                 "ERR wrong number of arguments for 'exists' command");
}

static void row_pipeline(redisContext *c)
{
    redisReply *r;

    redisAppendCommand(c, "SET p:k 1");
    redisAppendCommand(c, "INCR p:k");
    redisAppendCommand(c, "NOSUCH p:k");
    redisAppendCommand(c, "GET p:k");
    redisGetReply(c, (void **)&r);
    expect_ok("pipelined SET", r);
    redisGetReply(c, (void **)&r);
    expect_int("pipelined INCR", r, 2);
    redisGetReply(c, (void **)&r);
    expect_error("pipelined unknown command", r,
                 "ERR unknown command 'NOSUCH'");
    redisGetReply(c, (void **)&r);
    expect_bulk("pipelined GET", r, "2");
}

static void row_watch(const target *t, redisContext *c)
{
    int fd = raw_open(t->proxy_sock);

    if (vnum < 20200) {
        expect_error("WATCH before 2.2", CMD(c, "WATCH w:k"),
                     "ERR unknown command 'WATCH'");
        expect_error("watch before 2.2 (name as sent)", CMD(c, "watch w:k"),
                     "ERR unknown command 'watch'");
        expect_error("UNWATCH before 2.2", CMD(c, "UNWATCH"),
                     "ERR unknown command 'UNWATCH'");
        /* The lock pattern WATCH/GET/MULTI/EXEC: EXEC runs anyway. */
        raw_expect("WATCH on 2.0 (raw)", fd, "WATCH w:k\r\n",
                   "-ERR unknown command 'WATCH'\r\n", 0);
        freeReplyObject(CMD(t->direct, "SET w:k changed"));
        raw_expect("EXEC runs despite the change", fd,
                   "MULTI\r\nSET w:k mine\r\nEXEC\r\n",
                   "+OK\r\n+QUEUED\r\n*1\r\n+OK\r\n", 0);
    } else {
        raw_expect("WATCH", fd, "WATCH w:k\r\n", "+OK\r\n", 0);
        freeReplyObject(CMD(t->direct, "SET w:k changed"));
        raw_expect("EXEC after the watched key changed is *-1", fd,
                   "MULTI\r\nSET w:k mine\r\nEXEC\r\n",
                   "+OK\r\n+QUEUED\r\n*-1\r\n", 0);
        raw_expect("WATCH unchanged then EXEC", fd,
                   "WATCH w:k\r\nMULTI\r\nSET w:k mine\r\nEXEC\r\n",
                   "+OK\r\n+OK\r\n+QUEUED\r\n*1\r\n+OK\r\n", 0);
        expect_ok("UNWATCH", CMD(c, "UNWATCH"));
    }
    expect_bulk("value after EXEC", CMD(c, "GET w:k"), "mine");
    if (fd >= 0)
        close(fd);
}

static void row_volatile_writes(redisContext *c)
{
    expect_ok("SET lock key", CMD(c, "SET v:lock owner1"));
    expect_int("EXPIRE lock key", CMD(c, "EXPIRE v:lock 100"), 1);
    if (vnum < 20103) {
        expect_int("2.0: SETNX on a key with a TTL deletes it first",
                   CMD(c, "SETNX v:lock owner2"), 1);
        expect_bulk("2.0: the second owner holds it", CMD(c, "GET v:lock"),
                    "owner2");
        expect_int("2.0: and the TTL is gone", CMD(c, "TTL v:lock"), -1);
    } else {
        expect_int("SETNX on a key with a TTL", CMD(c, "SETNX v:lock owner2"),
                   0);
        expect_bulk("the first owner keeps it", CMD(c, "GET v:lock"), "owner1");
        expect_int_in("and its TTL", CMD(c, "TTL v:lock"), 99, 100);
    }
    expect_ok("SET counter", CMD(c, "SET v:ctr 5"));
    expect_int("EXPIRE counter", CMD(c, "EXPIRE v:ctr 100"), 1);
    expect_int("INCR on a key with a TTL", CMD(c, "INCR v:ctr"),
               vnum < 20103 ? 1 : 6);
}

static void row_expire_again(redisContext *c)
{
    expect_ok("SET", CMD(c, "SET x:k v"));
    expect_int("EXPIRE missing key", CMD(c, "EXPIRE x:missing 10"), 0);
    expect_int("first EXPIRE", CMD(c, "EXPIRE x:k 100"), 1);
    if (vnum < 20103) {
        expect_int("2.0: EXPIRE on a key with a TTL", CMD(c, "EXPIRE x:k 5"),
                   0);
        expect_int_in("2.0: the old TTL stays", CMD(c, "TTL x:k"), 99, 100);
    } else {
        expect_int("EXPIRE on a key with a TTL", CMD(c, "EXPIRE x:k 5"), 1);
        expect_int_in("the TTL is updated", CMD(c, "TTL x:k"), 4, 5);
    }
    expect_int("EXPIRE 0 deletes", CMD(c, "EXPIRE x:k 0"), 1);
    expect_int("gone", CMD(c, "EXISTS x:k"), 0);
}

static long long server_ms(redisContext *direct)
{
    redisReply *r = CMD(direct, "TIME");
    long long ms = -1;

    if (r && r->type == REDIS_REPLY_ARRAY && r->elements == 2)
        ms =
            atoll(r->element[0]->str) * 1000 + atoll(r->element[1]->str) / 1000;
    freeReplyObject(r);
    return ms;
}

/* Before 2.6 the expire time was a unix second and a key lived until the
 * second after it had begun: EXPIRE k 1 at second s ends at (s+2)*1000 ms,
 * 1 to 2 s later.  From 2.6 on it ends 1000 ms later.  Checked on the
 * server itself (PEXPIRETIME, Redis 7+; else only the PTTL range). */
static void check_expiry_grain(redisContext *direct, long long before)
{
    redisReply *r = CMD(direct, "PEXPIRETIME t:k");

    if (r == NULL || r->type != REDIS_REPLY_INTEGER) {
        freeReplyObject(r);
        r = CMD(direct, "PTTL t:k");
        if (vnum < 20600)
            expect_int_in("whole-second expiry (upstream PTTL)", r, 900, 2000);
        else
            expect_int_in("millisecond expiry (upstream PTTL)", r, 0, 1000);
        return;
    }
    if (vnum < 20600)
        result(r->integer % 1000 == 0 && r->integer - before > 1000
                   && r->integer - before <= 2000,
               "whole-second expiry (upstream PEXPIRETIME)",
               "expires at %lld, EXPIRE 1 sent at %lld", r->integer, before);
    else
        result(r->integer - before >= 1000 && r->integer - before <= 1100,
               "millisecond expiry (upstream PEXPIRETIME)",
               "expires at %lld, EXPIRE 1 sent at %lld", r->integer, before);
    freeReplyObject(r);
}

static void row_ttl_forms(const target *t, redisContext *c)
{
    long long before;

    expect_int("TTL of a missing key", CMD(c, "TTL t:missing"), -1);
    expect_ok("SET", CMD(c, "SET t:k v"));
    expect_int("TTL of a key without TTL", CMD(c, "TTL t:k"), -1);
    before = server_ms(t->direct);
    expect_int("EXPIRE 1", CMD(c, "EXPIRE t:k 1"), 1);
    check_expiry_grain(t->direct, before);
    expect_int_in("TTL right after EXPIRE 1", CMD(c, "TTL t:k"), 0, 1);
    if (vnum >= 20600) {
        expect_int("PTTL of a missing key", CMD(c, "PTTL t:missing"), -1);
        expect_int("PEXPIRE", CMD(c, "PEXPIRE t:k 1500"), 1);
        expect_int_in("PTTL", CMD(c, "PTTL t:k"), 1, 1500);
    }
}

static void row_getset_set_ttl(redisContext *c)
{
    expect_ok("SET", CMD(c, "SET g:k old"));
    expect_int("EXPIRE", CMD(c, "EXPIRE g:k 100"), 1);
    expect_bulk("GETSET on a key with a TTL returns the old value",
                CMD(c, "GETSET g:k new"), "old");
    expect_bulk("and stores the new one", CMD(c, "GET g:k"), "new");
    expect_int("and the TTL is gone", CMD(c, "TTL g:k"), -1);
    expect_int("EXPIRE again", CMD(c, "EXPIRE g:k 100"), 1);
    expect_ok("SET on a key with a TTL", CMD(c, "SET g:k newer"));
    expect_int("SET drops the TTL", CMD(c, "TTL g:k"), -1);
}

static void row_scripting_unknown(redisContext *c)
{
    /* The name comes back as the client sent it, case and all. */
    static const char *const cmds[][4] = {
        {"EVAL", "return 1", "0", NULL},
        {"eval", "return 1", "0", NULL},
        {"EVALSHA", "ffffffffffffffffffffffffffffffffffffffff", "0", NULL},
        {"Script", "FLUSH", NULL, NULL},
        {"PEXPIRE", "k", "100", NULL},
        {"PTTL", "k", NULL, NULL},
        {"TIME", NULL, NULL, NULL},
        {"PSETEX", "k", "100", "v"},
        {"PEXPIREAT", "k", "100", NULL}};
    char what[64], msg[64];
    size_t i;

    for (i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        int n = 0;
        redisReply *r;
        while (n < 4 && cmds[i][n])
            n++;
        r = redisCommandArgv(c, n, (const char **)cmds[i], NULL);
        snprintf(what, sizeof what, "%s %s 2.6", cmds[i][0],
                 vnum < 20600 ? "before" : "from");
        snprintf(msg, sizeof msg, "ERR unknown command '%s'", cmds[i][0]);
        if (vnum < 20600) {
            expect_error(what, r, msg);
            continue;
        }
        result(r
                   && !(r->type == REDIS_REPLY_ERROR
                        && strncmp(r->str, "ERR unknown command", 19) == 0),
               what, "refused: %s", r && r->str ? r->str : "(no reply)");
        freeReplyObject(r);
    }
}

static void row_noscript(redisContext *c)
{
    if (vnum < 20600)
        return;
    expect("EVALSHA of an unknown script",
           CMD(c, "EVALSHA ffffffffffffffffffffffffffffffffffffffff 0"),
           REDIS_REPLY_ERROR, "NOSCRIPT No matching script. Please use EVAL.");
    expect("evalsha with a short sha", CMD(c, "evalsha abc 0"),
           REDIS_REPLY_ERROR, "NOSCRIPT No matching script. Please use EVAL.");
}

static void row_lua26(const target *t, redisContext *c)
{
    redisReply *want, *r;

    if (vnum < 20600)
        return;
    expect_error_has("SET NX PX inside a 2.6 script",
                     CMD(c, "EVAL %s 1 l:k",
                         "return redis.call('set',KEYS[1],'v','NX','PX',100)"),
                     "Wrong number of args calling Redis command From Lua "
                     "script");
    expect_error_has("a write after TIME inside a 2.6 script",
                     CMD(c, "EVAL %s 1 l:k",
                         "local t = redis.call('TIME') "
                         "return redis.call('SET', KEYS[1], t[1])"),
                     "Write commands not allowed after non deterministic "
                     "commands");
    expect_int("TTL of a missing key inside a script",
               CMD(c, "EVAL %s 0", "return redis.call('ttl','l:none')"), -1);
    expect_error("a command 2.6 did not have, by pcall",
                 CMD(c, "EVAL %s 0", "return redis.pcall('unlink','l:k')"),
                 "Unknown Redis command called from Lua script");
    expect_error_has("error() wording", CMD(c, "EVAL %s 0", "error('boom')"),
                     "ERR Error running script (call to f_");
    want = CMD(t->direct, "SCRIPT LOAD %s", "return 7");
    r = CMD(c, "SCRIPT LOAD %s", "return 7");
    result(want && r && r->type == REDIS_REPLY_STRING
               && strcmp(want->str, r->str) == 0,
           "SCRIPT LOAD answers the SHA-1 of the body", "got %s",
           r && r->str ? r->str : "(none)");
    if (want && want->type == REDIS_REPLY_STRING) {
        expect_int("EVALSHA of a loaded script",
                   CMD(c, "EVALSHA %s 0", want->str), 7);
        freeReplyObject(r);
        r = CMD(c, "SCRIPT EXISTS %s abc", want->str);
        result(r && r->type == REDIS_REPLY_ARRAY && r->elements == 2
                   && r->element[0]->integer == 1
                   && r->element[1]->integer == 0,
               "SCRIPT EXISTS", "unexpected reply");
    }
    freeReplyObject(r);
    freeReplyObject(want);
    r = CMD(c, "TIME");
    result(r && r->type == REDIS_REPLY_ARRAY && r->elements == 2, "TIME",
           "expected two elements");
    freeReplyObject(r);
}

static void row_client(redisContext *c)
{
    redisReply *r = CMD(c, "CLIENT SETNAME tslock");

    if (vnum < 20400)
        expect_error("CLIENT before 2.4", r, "ERR unknown command 'CLIENT'");
    else if (vnum < 20609)
        expect_error("CLIENT SETNAME on 2.4-2.6.8", r,
                     "ERR Syntax error, try CLIENT (LIST | KILL ip:port)");
    else
        expect_ok("CLIENT SETNAME from 2.6.9", r);
    if (vnum >= 20400) {
        r = CMD(c, "CLIENT LIST");
        result(r && r->type == REDIS_REPLY_STRING, "CLIENT LIST",
               "expected a bulk");
        freeReplyObject(r);
    }
}

static void row_set_options(redisContext *c)
{
    expect_error("SET NX PX before 2.6.12", CMD(c, "SET o:k v NX PX 1000"),
                 "ERR wrong number of arguments for 'set' command");
    expect_error("SET EX before 2.6.12", CMD(c, "SET o:k v EX 10"),
                 "ERR wrong number of arguments for 'set' command");
    expect_int("and nothing was set", CMD(c, "EXISTS o:k"), 0);
}

static void row_info(redisContext *c)
{
    redisReply *r = CMD(c, "INFO");
    char line[64];

    snprintf(line, sizeof line, "redis_version:%s\r\n", ver);
    result(r && r->type == REDIS_REPLY_STRING && strstr(r->str, line),
           "INFO carries redis_version", "missing \"%s\"", ver);
    if (vnum < 20600)
        result(r && r->type == REDIS_REPLY_STRING && r->str[0] != '#'
                   && strstr(r->str, "\n#") == NULL,
               "INFO before 2.6 has no sections", "found a section header");
    freeReplyObject(r);
    r = CMD(c, "INFO server");
    if (vnum < 20600) {
        expect_error("INFO with an argument before 2.6", r,
                     "ERR wrong number of arguments for 'info' command");
        return;
    }
    result(r && r->type == REDIS_REPLY_STRING && strstr(r->str, line)
               && strncmp(r->str, "# Server", 8) == 0,
           "INFO server on 2.6", "unexpected reply");
    freeReplyObject(r);
}

static void row_auth_no_password(redisContext *c)
{
    if (vnum < 20400)
        expect_ok("AUTH without a password set (2.0-2.2)",
                  CMD(c, "AUTH whatever"));
    else
        expect_error("AUTH without a password set (2.4+)",
                     CMD(c, "AUTH whatever"),
                     "ERR Client sent AUTH, but no password is set");
    expect_error("AUTH user password before 6.0", CMD(c, "AUTH user pass"),
                 "ERR wrong number of arguments for 'auth' command");
}

static void row_auth_required(const target *t)
{
    redisContext *c = connect_unix(t->auth_sock);

    if (c == NULL || c->err) {
        result(0, "connect to the auth proxy", "failed");
        redisFree(c);
        return;
    }
    expect_error("a command before AUTH", CMD(c, "GET a:k"),
                 "ERR operation not permitted");
    expect_error("unknown command before AUTH", CMD(c, "UNLINK a:k"),
                 "ERR unknown command 'UNLINK'");
    expect_error("wrong password", CMD(c, "AUTH nope"), "ERR invalid password");
    expect_ok("right password", CMD(c, "AUTH secret"));
    expect("GET after AUTH", CMD(c, "GET a:k"), REDIS_REPLY_NIL, NULL);
    redisFree(c);
}

static void row_multi_refusals(const target *t)
{
    int fd = raw_open(t->proxy_sock);

    if (vnum >= 20605)
        raw_expect("2.6.5+: a refused command aborts EXEC", fd,
                   "MULTI\r\nNOSUCH\r\nSET m:k v\r\nEXEC\r\n",
                   "+OK\r\n-ERR unknown command 'NOSUCH'\r\n+QUEUED\r\n"
                   "-EXECABORT Transaction discarded because of previous "
                   "errors.\r\n",
                   0);
    else
        raw_expect("before 2.6.5: EXEC runs what was queued", fd,
                   "MULTI\r\nNOSUCH\r\nSET m:k v\r\nEXEC\r\n",
                   "+OK\r\n-ERR unknown command 'NOSUCH'\r\n+QUEUED\r\n"
                   "*1\r\n+OK\r\n",
                   0);
    if (vnum >= 20400 && vnum < 20609)
        raw_expect("CLIENT SETNAME fails inside EXEC", fd,
                   "MULTI\r\nCLIENT SETNAME x\r\nEXEC\r\n",
                   "+OK\r\n+QUEUED\r\n*1\r\n-ERR Syntax error, try CLIENT "
                   "(LIST | KILL ip:port)\r\n",
                   0);
    raw_expect("TTL -1 inside EXEC", fd, "MULTI\r\nTTL m:none\r\nEXEC\r\n",
               "+OK\r\n+QUEUED\r\n*1\r\n:-1\r\n", 0);
    if (fd >= 0)
        close(fd);
}

static void row_pubsub(const target *t)
{
    int fd = raw_open(t->proxy_sock);
    redisContext *pub = connect_unix(t->proxy_sock);

    raw_expect("SUBSCRIBE", fd, "SUBSCRIBE ps:chan\r\n",
               "*3\r\n$9\r\nsubscribe\r\n$7\r\nps:chan\r\n:1\r\n", 0);
    expect_int("PUBLISH to one subscriber", CMD(pub, "PUBLISH ps:chan hello"),
               1);
    raw_expect("the message arrives", fd, "",
               "*3\r\n$7\r\nmessage\r\n$7\r\nps:chan\r\n$5\r\nhello\r\n", 0);
    raw_expect("other commands while subscribed", fd, "PING\r\n",
               "-ERR only (P)SUBSCRIBE / (P)UNSUBSCRIBE / QUIT allowed in "
               "this context\r\n",
               0);
    raw_expect("UNSUBSCRIBE", fd, "UNSUBSCRIBE\r\n",
               "*3\r\n$11\r\nunsubscribe\r\n$7\r\nps:chan\r\n:0\r\n", 0);
    raw_expect("PING after unsubscribing", fd, "PING\r\n", "+PONG\r\n", 0);
    redisFree(pub);
    if (fd >= 0)
        close(fd);
}

static void row_quit(const target *t)
{
    int fd = raw_open(t->proxy_sock);

    /* Inline commands too; 2.0 closed on QUIT without a reply. */
    if (vnum < 20200)
        raw_expect("QUIT on 2.0 closes without a reply", fd,
                   "PING\r\nQUIT\r\nPING\r\n", "+PONG\r\n", 1);
    else
        raw_expect("QUIT replies +OK and closes", fd,
                   "PING\r\nQUIT\r\nPING\r\n", "+PONG\r\n+OK\r\n", 1);
    if (fd >= 0)
        close(fd);
}

/* ------------------------------------------------------------ faults */

static long long now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Nothing more arrives on fd within ms, and it is not closed either. */
static void raw_silent(const char *what, int fd, int ms)
{
    struct pollfd p = {fd, POLLIN, 0};
    int n = fd >= 0 ? poll(&p, 1, ms) : -1;

    result(n == 0, what, "expected silence for %d ms, got %s", ms,
           n < 0 ? "an error" : "data or a close");
}

/* One raw connection: send req under fault, expect want (then a close). */
static void fault_case(const target *t, const char *what, const char *req,
                       const char *want, int want_eof)
{
    int fd = raw_open(t->proxy_sock);

    raw_expect(what, fd, req, want, want_eof);
    if (!want_eof)
        raw_silent(what, fd, 100);
    if (fd >= 0)
        close(fd);
}

static void row_fault_drops(const target *t, redisContext *ctl)
{
    redisContext *d = t->direct;

    expect_ok("ARM drop-before 2", CMD(ctl, "TSLOCKFAULT ARM drop-before 2"));
    fault_case(t, "drop-before closes instead of forwarding",
               "PING\r\nSET f:b 1\r\nPING\r\n", "+PONG\r\n", 1);
    expect("drop-before: command 2 never ran", CMD(d, "GET f:b"),
           REDIS_REPLY_NIL, NULL);
    expect_int("FIRED after drop-before", CMD(ctl, "TSLOCKFAULT FIRED"), 1);
    expect_ok("ARM drop-after 2", CMD(ctl, "TSLOCKFAULT ARM drop-after 2"));
    fault_case(t, "drop-after closes without the reply",
               "PING\r\nSET f:a 1\r\nPING\r\n", "+PONG\r\n", 1);
    expect_bulk("drop-after: command 2 ran", CMD(d, "GET f:a"), "1");
    expect_ok("SET f:h", CMD(d, "SET f:h hello"));
    expect_ok("ARM half-close 1", CMD(ctl, "TSLOCKFAULT ARM half-close 1"));
    fault_case(t, "half-close sends half the reply and closes", "GET f:h\r\n",
               "$5\r\nh", 1);
    expect_ok("ARM half 2", CMD(ctl, "TSLOCKFAULT ARM half 2"));
    fault_case(t, "half sends half the reply and stays open",
               "PING\r\nGET f:h\r\n", "+PONG\r\n$5\r\nh", 0);
    freeReplyObject(CMD(d, "DEL f:a f:h"));
}

static void row_fault_count_delay(const target *t, redisContext *ctl)
{
    long long t0;
    int fd;

    expect_ok("CLEAR", CMD(ctl, "TSLOCKFAULT CLEAR"));
    fault_case(t, "a pipeline of three",
               "*1\r\n$4\r\nPING\r\nPING\r\n*1\r\n$4\r\nPING\r\n",
               "+PONG\r\n+PONG\r\n+PONG\r\n", 0);
    expect_int("COUNT counts pipelined commands one by one",
               CMD(ctl, "TSLOCKFAULT COUNT"), 3);
    expect_int("FIRED with nothing armed", CMD(ctl, "TSLOCKFAULT FIRED"), 0);
    expect_ok("ARM delay 2 300", CMD(ctl, "TSLOCKFAULT ARM delay 2 300"));
    fd = raw_open(t->proxy_sock);
    t0 = now_ms();
    raw_expect("delay holds the reply", fd, "PING\r\nPING\r\n",
               "+PONG\r\n+PONG\r\n", 0);
    t0 = now_ms() - t0;
    result(t0 >= 300, "delay lasts its milliseconds",
           "replies came after %lld ms", t0);
    if (fd >= 0)
        close(fd);
    expect_error_has("ARM of an unknown fault",
                     CMD(ctl, "TSLOCKFAULT ARM nosuch 1"), "ERR usage");
    expect_error_has("ARM delay without MS",
                     CMD(ctl, "TSLOCKFAULT ARM delay 1"), "ERR usage");
}

static void check_faults(const target *t)
{
    redisContext *ctl = connect_unix(t->proxy_sock);

    if (ctl == NULL || ctl->err) {
        result(0, "connect to the proxy", "%s", ctl ? ctl->errstr : "failed");
        redisFree(ctl);
        return;
    }
    row_fault_drops(t, ctl);
    row_fault_count_delay(t, ctl);
    redisFree(ctl);
}

/* --emulate modern: the real server's replies, word for word. */
static void check_modern(const target *t)
{
    redisContext *c = connect_unix(t->proxy_sock);
    redisReply *r;

    if (c == NULL || c->err) {
        result(0, "connect to the proxy", "%s", c ? c->errstr : "failed");
        redisFree(c);
        return;
    }
    expect_ok("SET NX PX", CMD(c, "SET m:k v NX PX 10000"));
    expect_int("TTL of a missing key is -2", CMD(c, "TTL m:none"), -2);
    expect_error_has("WRONGTYPE as sent", CMD(c, "LPUSH m:k x"), "WRONGTYPE ");
    expect_int("EXISTS with two keys", CMD(c, "EXISTS m:k m:none"), 1);
    r = CMD(c, "INFO server");
    result(r && r->type == REDIS_REPLY_STRING
               && strstr(r->str, "redis_version:2.") == NULL
               && strstr(r->str, "redis_version:") != NULL,
           "INFO keeps the real redis_version", "it did not");
    freeReplyObject(r);
    freeReplyObject(CMD(c, "DEL m:k"));
    redisFree(c);
    check_faults(t);
}

static void check_version(const target *t)
{
    redisContext *c = connect_unix(t->proxy_sock);

    if (c == NULL || c->err) {
        result(0, "connect to the proxy", "%s", c ? c->errstr : "failed");
        redisFree(c);
        return;
    }
    row_basics(c);
    row_pipeline(c);
    row_watch(t, c);
    row_volatile_writes(c);
    row_expire_again(c);
    row_ttl_forms(t, c);
    row_getset_set_ttl(c);
    row_scripting_unknown(c);
    row_noscript(c);
    row_lua26(t, c);
    row_client(c);
    row_set_options(c);
    row_info(c);
    row_auth_no_password(c);
    row_auth_required(t);
    row_multi_refusals(t);
    row_pubsub(t);
    row_quit(t);
    redisFree(c);
    check_faults(t);
}

/* ------------------------------------------------------------ main */

static int version_number(const char *s)
{
    int a = 0, b = 0, c = 0;

    sscanf(s, "%d.%d.%d", &a, &b, &c);
    return a * 10000 + b * 100 + c;
}

static void setup_signals(void)
{
    struct sigaction sa;

    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_fatal_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGALRM, &sa, NULL);
    sigaction(SIGSEGV, &sa, NULL);
    sigaction(SIGBUS, &sa, NULL);
    sigaction(SIGABRT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
}

static void check_modern_proxy(const char *proxy, const char *plain_sock,
                               redisContext *direct)
{
    char psock[300];
    pid_t p;
    target t;

    ver = "modern";
    vnum = 999999;
    freeReplyObject(CMD(direct, "FLUSHALL"));
    snprintf(psock, sizeof psock, "%s/proxy-modern.sock", dir);
    p = start_proxy(proxy, ver, plain_sock, psock);
    if (p <= 0) {
        result(0, "start the proxy", "failed");
        return;
    }
    t.proxy_sock = psock;
    t.auth_sock = NULL;
    t.direct = direct;
    check_modern(&t);
    result(stop_proxy(p) == 0, "exit 0 on SIGTERM", "it did not");
    printf("[%s] checked\n", ver);
}

int main(int argc, char **argv)
{
    const char *proxy = argc > 1 ? argv[1] : getenv("OLDREDIS");
    const char *server = argc > 2 ? argv[2] : getenv("REDIS_SERVER");
    const char *tmp = getenv("TMPDIR");
    char plain_sock[300], auth_sock[300];
    redisContext *direct = NULL;
    size_t i;

    if (proxy == NULL || *proxy == '\0') {
        fprintf(stderr, "usage: check_oldredis OLDREDIS [REDIS_SERVER]\n");
        return 2;
    }
    if (server == NULL || *server == '\0')
        server = "redis-server";
    slow = getenv("OLDREDIS_WRAPPER") != NULL;
    setup_signals();
    alarm(slow ? 1800 : 300);
    atexit(cleanup);
    snprintf(dir, sizeof dir, "%s/oldredis-check.XXXXXX",
             tmp && *tmp ? tmp : "/tmp");
    if (mkdtemp(dir) == NULL) {
        perror("mkdtemp");
        dir[0] = '\0';
        return 2;
    }
    if (start_server(server, "plain", NULL, plain_sock, sizeof plain_sock) < 0
        || start_server(server, "auth", "secret", auth_sock, sizeof auth_sock)
               < 0)
        return 2;
    direct = connect_unix(plain_sock);
    for (i = 0; i < sizeof versions / sizeof versions[0]; i++) {
        char psock[300], asock[300];
        pid_t p1, p2;
        target t;

        ver = versions[i];
        vnum = version_number(ver);
        freeReplyObject(CMD(direct, "FLUSHALL"));
        snprintf(psock, sizeof psock, "%s/proxy-%s.sock", dir, ver);
        snprintf(asock, sizeof asock, "%s/proxy-auth-%s.sock", dir, ver);
        p1 = start_proxy(proxy, ver, plain_sock, psock);
        p2 = start_proxy(proxy, ver, auth_sock, asock);
        if (p1 <= 0 || p2 <= 0) {
            result(0, "start the proxy", "failed");
            continue;
        }
        t.proxy_sock = psock;
        t.auth_sock = asock;
        t.direct = direct;
        check_version(&t);
        result(stop_proxy(p1) == 0, "exit 0 on SIGTERM", "it did not");
        result(stop_proxy(p2) == 0, "exit 0 on SIGTERM (auth)", "it did not");
        printf("[%s] checked\n", ver);
    }
    check_modern_proxy(proxy, plain_sock, direct);
    redisFree(direct);
    cleanup();
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}

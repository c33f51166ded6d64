/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * harness.c - the redis-server driver, connections, test clock and CUnit
 * runner shared by the test programs.  Servers are tracked in a small
 * registry of our own so they can be stopped by pid from exit handlers and
 * signal handlers, whatever state the tests' own th_server structs are in.
 */
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <CUnit/Basic.h>

#include "harness.h"

extern char **environ;

#define MAX_SERVERS    16
#define START_ATTEMPTS 5    /* fresh ports tried when the server cannot bind */
#define WAIT_MS        5000 /* for startup and for a graceful stop */
#define POLL_MS        10
#define PATH_SIZE      320
#define LOG_TAIL       2048

enum slot_state {
    SLOT_FREE = 0,
    SLOT_LIVE,   /* the dir exists; the server may be running or killed */
    SLOT_STOPPED /* the dir was removed; kept so restart knows the config */
};

/*
 * What cleanup needs, copied out of the caller's th_server: that struct
 * may sit on a stack that is gone when exit handlers run.  The paths are
 * built ahead of time because a signal handler cannot format strings.
 */
struct slot {
    volatile sig_atomic_t state;
    volatile sig_atomic_t pid; /* 0 when not running */
    pid_t owner;               /* forked children must not stop it */
    int port;
    char dir[PATH_SIZE];
    char conf[PATH_SIZE];
    char log[PATH_SIZE];
    char socket[PATH_SIZE];
    char dump[PATH_SIZE];
    char *extra_conf; /* heap copy, or NULL */
    int sentinel;     /* run with --sentinel */
};

static struct slot slots[MAX_SERVERS];

static const int cleanup_signals[] = {SIGINT,  SIGTERM, SIGHUP,
                                      SIGSEGV, SIGABRT, SIGBUS};
#define N_CLEANUP_SIGNALS (sizeof(cleanup_signals) / sizeof(cleanup_signals[0]))
static struct sigaction previous_actions[N_CLEANUP_SIGNALS];

/* ---------------------------------------------------------- processes */

int64_t th_wall_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int64_t th_mono_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void th_sleep_us(int64_t us)
{
    struct timespec ts = {(time_t)(us / 1000000), (long)(us % 1000000) * 1000};

    if (us > 0)
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
            ;
}

static void sleep_ms(int ms)
{
    th_sleep_us((int64_t)ms * 1000);
}

/* Whether pid has exited (reaping it), or was reaped by someone else. */
static int has_exited(pid_t pid)
{
    pid_t r;

    do
        r = waitpid(pid, NULL, WNOHANG);
    while (r < 0 && errno == EINTR);
    return r == pid || r < 0;
}

static void reap(pid_t pid)
{
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
        ;
}

/* SIGTERM, wait up to WAIT_MS, then SIGKILL. */
static void terminate(pid_t pid)
{
    int waited;

    if (pid <= 0)
        return;
    if (kill(pid, SIGTERM) != 0) {
        has_exited(pid);
        return;
    }
    kill(pid, SIGCONT); /* a paused server could not act on SIGTERM */
    for (waited = 0; waited < WAIT_MS; waited += POLL_MS) {
        if (has_exited(pid))
            return;
        sleep_ms(POLL_MS);
    }
    fprintf(stderr, "harness: redis-server %d ignored SIGTERM; killing\n",
            (int)pid);
    kill(pid, SIGKILL);
    reap(pid);
}

/* Remove a directory and everything in it; missing is not an error. */
static void remove_tree(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    struct stat st;
    char path[PATH_SIZE + 256];

    if (d == NULL)
        return;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode))
            remove_tree(path);
        else
            unlink(path);
    }
    closedir(d);
    if (rmdir(dir) != 0 && errno != ENOENT)
        fprintf(stderr, "harness: cannot remove %s: %s\n", dir,
                strerror(errno));
}

/* ----------------------------------------------------------- registry */

/*
 * Stop every server this process started, at once, with only
 * async-signal-safe calls.  Redis writes no files but the ones named in
 * the slot unless a test asks it to, so unlinking those empties the dir.
 */
static void stop_all_from_signal(void)
{
    pid_t me = getpid();
    size_t i;

    for (i = 0; i < MAX_SERVERS; i++) {
        struct slot *sl = &slots[i];

        if (sl->state != SLOT_LIVE || sl->owner != me)
            continue;
        if (sl->pid > 0) {
            kill(sl->pid, SIGKILL);
            waitpid(sl->pid, NULL, 0);
        }
        unlink(sl->conf);
        unlink(sl->log);
        unlink(sl->socket);
        unlink(sl->dump);
        rmdir(sl->dir);
    }
}

/*
 * Clean up, then hand the signal to whoever had it before.  A memory fault
 * is not raised again: returning runs the faulting instruction again under
 * the previous action, so a sanitizer's report or the core dump is about
 * the real fault.  Any other signal is raised again.
 */
static void on_cleanup_signal(int sig, siginfo_t *info, void *context)
{
    int saved_errno = errno;
    int fault =
        (sig == SIGSEGV || sig == SIGBUS) && info != NULL && info->si_code > 0;
    size_t i;

    (void)context;
    stop_all_from_signal();
    for (i = 0; i < N_CLEANUP_SIGNALS; i++)
        if (cleanup_signals[i] == sig)
            sigaction(sig, &previous_actions[i], NULL);
    if (!fault)
        raise(sig);
    errno = saved_errno;
}

static void stop_all_at_exit(void)
{
    pid_t me = getpid();
    size_t i;

    for (i = 0; i < MAX_SERVERS; i++) {
        struct slot *sl = &slots[i];

        if (sl->state != SLOT_LIVE || sl->owner != me)
            continue;
        terminate(sl->pid);
        sl->pid = 0;
        remove_tree(sl->dir);
        sl->state = SLOT_STOPPED;
    }
}

/*
 * Install the exit and signal cleanup once.  A signal the process ignores
 * stays ignored.  SIGPIPE is ignored when nobody chose otherwise, so a
 * test that kills a server sees EPIPE from its connections rather than
 * dying.
 */
static void install_cleanup(void)
{
    static int installed;
    struct sigaction sa;
    size_t i;

    if (installed)
        return;
    installed = 1;
    atexit(stop_all_at_exit);
    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = on_cleanup_signal;
    sa.sa_flags = SA_SIGINFO;
    sigfillset(&sa.sa_mask);
    for (i = 0; i < N_CLEANUP_SIGNALS; i++) {
        sigaction(cleanup_signals[i], NULL, &previous_actions[i]);
        if (previous_actions[i].sa_handler != SIG_IGN)
            sigaction(cleanup_signals[i], &sa, NULL);
    }
    sigaction(SIGPIPE, NULL, &sa);
    if (sa.sa_handler == SIG_DFL)
        signal(SIGPIPE, SIG_IGN);
}

static struct slot *find_slot(const th_server *s)
{
    size_t i;

    for (i = 0; i < MAX_SERVERS; i++)
        if (slots[i].state != SLOT_FREE && slots[i].port == s->port
            && strcmp(slots[i].dir, s->dir) == 0)
            return &slots[i];
    return NULL;
}

static void release_slot(struct slot *sl)
{
    sl->state = SLOT_FREE;
    free(sl->extra_conf);
    sl->extra_conf = NULL;
}

/* A free slot, else one kept only for a restart that may never come. */
static struct slot *claim_slot(void)
{
    size_t i;

    for (i = 0; i < MAX_SERVERS; i++)
        if (slots[i].state == SLOT_FREE)
            return &slots[i];
    for (i = 0; i < MAX_SERVERS; i++)
        if (slots[i].state == SLOT_STOPPED) {
            release_slot(&slots[i]);
            return &slots[i];
        }
    fprintf(stderr, "harness: more than %d servers at once\n", MAX_SERVERS);
    return NULL;
}

/* Fill the slot's paths, then mark it live, so a signal sees it whole. */
static struct slot *register_server(const th_server *s, const char *extra_conf)
{
    struct slot *sl = claim_slot();

    if (sl == NULL)
        return NULL;
    sl->extra_conf = extra_conf != NULL ? strdup(extra_conf) : NULL;
    if (extra_conf != NULL && sl->extra_conf == NULL)
        return NULL;
    sl->owner = getpid();
    sl->pid = 0;
    sl->port = s->port;
    snprintf(sl->dir, PATH_SIZE, "%s", s->dir);
    snprintf(sl->conf, PATH_SIZE, "%s/redis.conf", s->dir);
    snprintf(sl->log, PATH_SIZE, "%s/redis.log", s->dir);
    snprintf(sl->socket, PATH_SIZE, "%s", s->socket);
    snprintf(sl->dump, PATH_SIZE, "%s/dump.rdb", s->dir);
    sl->state = SLOT_LIVE;
    return sl;
}

/* ------------------------------------------------------------ startup */

/*
 * Make the private dir.  Its path goes into the config file in double
 * quotes and the socket path must fit a sockaddr_un, so odd or long
 * $TMPDIR values are refused here with a clear message.
 */
static int make_dir(th_server *s)
{
    const char *tmp = getenv("TMPDIR");
    struct sockaddr_un addr;
    int n;

    if (tmp == NULL || *tmp == '\0')
        tmp = "/tmp";
    if (strpbrk(tmp, "\"\\\n") != NULL) {
        fprintf(stderr,
                "harness: TMPDIR has a quote, backslash or "
                "newline: %s\n",
                tmp);
        return -1;
    }
    n = snprintf(s->dir, sizeof(s->dir), "%s/tslock-test.XXXXXX", tmp);
    if (n < 0 || (size_t)n >= sizeof(s->dir)
        || (size_t)n + sizeof("/redis.sock") > sizeof(addr.sun_path)) {
        fprintf(stderr, "harness: TMPDIR too long for a socket path: %s\n",
                tmp);
        return -1;
    }
    if (mkdtemp(s->dir) == NULL) {
        fprintf(stderr, "harness: mkdtemp %s: %s\n", s->dir, strerror(errno));
        return -1;
    }
    snprintf(s->socket, sizeof(s->socket), "%s/redis.sock", s->dir);
    return 0;
}

/* A loopback port free right now; the server may still lose it. */
static int pick_free_port(void)
{
    struct sockaddr_in a;
    socklen_t len = sizeof(a);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    int port = -1;

    if (fd < 0)
        return -1;
    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0
        && getsockname(fd, (struct sockaddr *)&a, &len) == 0)
        port = ntohs(a.sin_port);
    close(fd);
    return port;
}

static int write_conf(const struct slot *sl)
{
    FILE *f = fopen(sl->conf, "w");
    const char *extra = sl->extra_conf;
    int bad;

    if (f == NULL) {
        fprintf(stderr, "harness: %s: %s\n", sl->conf, strerror(errno));
        return -1;
    }
    fprintf(f,
            "port %d\nbind 127.0.0.1\n"
            "unixsocket \"%s\"\nunixsocketperm 700\n"
            "dir \"%s\"\nlogfile \"%s\"\n"
            "save \"\"\nappendonly no\ndaemonize no\n",
            sl->port, sl->socket, sl->dir, sl->log);
    if (extra != NULL && *extra != '\0') {
        fputs(extra, f);
        if (extra[strlen(extra) - 1] != '\n')
            fputc('\n', f);
    }
    bad = ferror(f);
    if (fclose(f) != 0 || bad) {
        fprintf(stderr, "harness: cannot write %s\n", sl->conf);
        return -1;
    }
    return 0;
}

/*
 * Spawn the server with a clean signal state: a blocked or ignored
 * SIGTERM inherited from a test would make every stop wait for SIGKILL.
 */
static pid_t spawn_server(const struct slot *sl)
{
    const char *prog = getenv("REDIS_SERVER");
    char *argv[4];
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t attr;
    sigset_t none, defaults;
    pid_t pid = -1;
    int rc;

    if (prog == NULL || *prog == '\0')
        prog = "redis-server";
    argv[0] = (char *)prog;
    argv[1] = (char *)sl->conf;
    argv[2] = sl->sentinel ? (char *)"--sentinel" : NULL;
    argv[3] = NULL;
    sigemptyset(&none);
    sigemptyset(&defaults);
    sigaddset(&defaults, SIGTERM);
    sigaddset(&defaults, SIGINT);
    sigaddset(&defaults, SIGHUP);
    sigaddset(&defaults, SIGPIPE);
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, sl->log,
                                     O_WRONLY | O_CREAT | O_APPEND, 0600);
    posix_spawnattr_init(&attr);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &defaults);
    posix_spawnattr_setflags(&attr,
                             POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    rc = posix_spawnp(&pid, prog, &fa, &attr, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    if (rc != 0) {
        fprintf(stderr, "harness: cannot run %s: %s\n", prog, strerror(rc));
        return -1;
    }
    return pid;
}

/*
 * Whether the server answers PING.  An error reply counts (a server with
 * requirepass says NOAUTH) except LOADING, which means not ready yet.
 */
static int answers_ping(const char *socket_path)
{
    struct timeval tv = {0, 200000};
    redisContext *c = redisConnectUnixWithTimeout(socket_path, tv);
    redisReply *r = NULL;
    int ok = 0;

    if (c != NULL && c->err == 0 && redisSetTimeout(c, tv) == REDIS_OK)
        r = redisCommand(c, "PING");
    if (r != NULL)
        ok = r->type == REDIS_REPLY_STATUS
             || (r->type == REDIS_REPLY_ERROR
                 && strncmp(r->str, "LOADING", 7) != 0);
    if (r != NULL)
        freeReplyObject(r);
    if (c != NULL)
        redisFree(c);
    return ok;
}

/* 0 ready, 1 exited early (perhaps lost its port), -1 never answered. */
static int wait_ready(struct slot *sl)
{
    int waited;

    for (waited = 0; waited < WAIT_MS; waited += POLL_MS) {
        if (has_exited(sl->pid)) {
            sl->pid = 0;
            return 1;
        }
        if (answers_ping(sl->socket))
            return 0;
        sleep_ms(POLL_MS);
    }
    fprintf(stderr, "harness: redis-server %d did not answer PING in %d ms\n",
            (int)sl->pid, WAIT_MS);
    terminate(sl->pid);
    sl->pid = 0;
    return -1;
}

/* Whether the server's log says it lost its port to another process. */
static int lost_port(const struct slot *sl)
{
    char line[512];
    FILE *f = fopen(sl->log, "r");
    int lost = 0;

    if (f == NULL)
        return 0;
    while (!lost && fgets(line, sizeof(line), f) != NULL)
        lost = strstr(line, "Address already in use") != NULL;
    fclose(f);
    return lost;
}

/*
 * Write the config, spawn, wait.  Returns 0 running, 1 exited because the
 * port was taken (worth another port), -1 failed.
 */
static int launch(th_server *s, struct slot *sl)
{
    pid_t pid;
    int rc;

    if (write_conf(sl) != 0 || (pid = spawn_server(sl)) < 0)
        return -1;
    sl->pid = pid;
    rc = wait_ready(sl);
    s->pid = sl->pid;
    if (rc == 1 && !lost_port(sl))
        rc = -1;
    return rc;
}

static void print_log_tail(const struct slot *sl)
{
    char buf[LOG_TAIL];
    FILE *f = fopen(sl->log, "r");
    size_t n;

    if (f == NULL)
        return;
    if (fseek(f, -(long)sizeof(buf), SEEK_END) != 0)
        rewind(f);
    n = fread(buf, 1, sizeof(buf), f);
    fclose(f);
    fprintf(stderr, "harness: end of %s:\n", sl->log);
    fwrite(buf, 1, n, stderr);
}

/* ------------------------------------------------------------- public */

static int start_server(th_server *s, const char *extra_conf, int sentinel)
{
    struct slot *sl;
    int attempt, rc = -1;

    memset(s, 0, sizeof(*s));
    install_cleanup();
    if (make_dir(s) != 0)
        return -1;
    if ((sl = register_server(s, extra_conf)) == NULL) {
        remove_tree(s->dir);
        return -1;
    }
    sl->sentinel = sentinel;
    for (attempt = 0; attempt < START_ATTEMPTS; attempt++) {
        s->port = sl->port = pick_free_port();
        if (s->port > 0 && (rc = launch(s, sl)) != 1)
            break;
    }
    if (rc == 0)
        return 0;
    fprintf(stderr, "harness: redis-server did not start\n");
    print_log_tail(sl);
    remove_tree(s->dir);
    release_slot(sl);
    return -1;
}

int th_server_start(th_server *s, const char *extra_conf)
{
    return start_server(s, extra_conf, 0);
}

int th_sentinel_start(th_server *s, const char *extra_conf)
{
    return start_server(s, extra_conf, 1);
}

void th_server_stop(th_server *s)
{
    struct slot *sl = find_slot(s);

    s->pid = 0;
    if (sl == NULL || sl->state != SLOT_LIVE)
        return;
    terminate(sl->pid);
    sl->pid = 0;
    remove_tree(sl->dir);
    sl->state = SLOT_STOPPED;
}

void th_server_kill(th_server *s)
{
    struct slot *sl = find_slot(s);

    s->pid = 0;
    if (sl == NULL || sl->pid <= 0)
        return;
    kill(sl->pid, SIGKILL);
    reap(sl->pid);
    sl->pid = 0;
}

void th_server_pause(th_server *s)
{
    struct slot *sl = find_slot(s);
    int status;

    if (sl == NULL || sl->pid <= 0)
        return;
    kill(sl->pid, SIGSTOP);
    /* Return only once it has stopped: no later command gets through. */
    while (waitpid(sl->pid, &status, WUNTRACED) < 0 && errno == EINTR)
        ;
}

void th_server_resume(th_server *s)
{
    struct slot *sl = find_slot(s);

    if (sl != NULL && sl->pid > 0)
        kill(sl->pid, SIGCONT);
}

int th_server_restart(th_server *s)
{
    struct slot *sl = find_slot(s);

    if (sl == NULL) {
        fprintf(stderr,
                "harness: restart of a server th_server_start did "
                "not start (or forgot): %s\n",
                s->dir);
        return -1;
    }
    terminate(sl->pid);
    sl->pid = 0;
    if (sl->state == SLOT_STOPPED) {
        if (mkdir(sl->dir, 0700) != 0) {
            fprintf(stderr, "harness: mkdir %s: %s\n", sl->dir,
                    strerror(errno));
            return -1;
        }
        sl->state = SLOT_LIVE;
    }
    if (launch(s, sl) == 0)
        return 0;
    fprintf(stderr, "harness: redis-server did not restart on port %d\n",
            sl->port);
    print_log_tail(sl);
    return -1;
}

redisContext *th_redis(const th_server *s)
{
    struct timeval tv = {5, 0};
    redisContext *c = redisConnectUnixWithTimeout(s->socket, tv);

    if (c == NULL || c->err != 0) {
        fprintf(stderr, "th_redis: cannot connect to %s: %s\n", s->socket,
                c != NULL ? c->errstr : "out of memory");
        exit(2);
    }
    return c;
}

tslock_client *th_client(const th_server *s)
{
    tslock_client *c = NULL;
    int rc = tslock_client_new(&c);

    if (rc == TSLOCK_OK)
        rc = tslock_client_connect_unix(c, s->socket);
    if (rc != TSLOCK_OK) {
        fprintf(stderr, "th_client: cannot connect to %s: %s: %s\n", s->socket,
                tslock_errname(rc), tslock_client_errstr(c));
        tslock_client_free(c);
        exit(2);
    }
    return c;
}

/* -------------------------------------------------------------- clock */

int64_t th_clock_fn(tslock_clock_id which, void *userdata)
{
    const th_clock *c = userdata;

    if (c == NULL)
        return -1;
    switch (which) {
    case TSLOCK_CLOCK_WALL:
        return c->wall_ms;
    case TSLOCK_CLOCK_MONOTONIC:
        return c->mono_ms;
    }
    return -1;
}

void th_clock_init(th_clock *c)
{
    c->wall_ms = INT64_C(1700000000000);
    c->mono_ms = INT64_C(1000000);
}

void th_clock_advance(th_clock *c, int64_t ms)
{
    c->wall_ms += ms;
    c->mono_ms += ms;
}

/* ----------------------------------------------------------- watchdog */

int th_hang_bound_s(void)
{
    const char *v = getenv("TSLOCK_TEST_TIMEOUT");
    const char *f = getenv("TSLOCK_TEST_TIMEOUT_SCALE");
    long bound = v != NULL && *v != '\0' ? strtol(v, NULL, 10) : 0;
    long scale = f != NULL && *f != '\0' ? strtol(f, NULL, 10) : 1;

    if (bound <= 0)
        bound = TH_HANG_DEFAULT_S;
    if (scale <= 0)
        scale = 1;
    return bound * scale > 86400 ? 86400 : (int)(bound * scale);
}

int64_t th_deadline_ms(int64_t ms)
{
    const char *f = getenv("TSLOCK_TEST_TIMEOUT_SCALE");
    long scale = f != NULL && *f != '\0' ? strtol(f, NULL, 10) : 1;

    return th_mono_ms() + ms * (scale > 0 ? scale : 1);
}

/* The parent of the process /proc/NAME, or -1. */
static long parent_of(const char *name)
{
    char path[PATH_SIZE], buf[512], *close_paren;
    FILE *f;
    size_t n = 0;
    long ppid = -1;

    snprintf(path, sizeof(path), "/proc/%s/stat", name);
    if ((f = fopen(path, "r")) != NULL) {
        n = fread(buf, 1, sizeof(buf) - 1, f);
        fclose(f);
    }
    buf[n] = '\0';
    /* The command name may hold spaces; the fields after it do not. */
    close_paren = strrchr(buf, ')');
    if (close_paren == NULL || sscanf(close_paren, ") %*c %ld", &ppid) != 1)
        ppid = -1;
    return ppid;
}

/*
 * Kill every process whose parent is this one: the proxies, forked
 * workers and spawned tools a hung test leaves.  Read from /proc, so on
 * systems without it only the registered servers are stopped.
 */
static void kill_children(void)
{
    DIR *d = opendir("/proc");
    struct dirent *e;
    long me = (long)getpid();

    if (d == NULL)
        return;
    while ((e = readdir(d)) != NULL)
        if (e->d_name[0] >= '1' && e->d_name[0] <= '9'
            && parent_of(e->d_name) == me)
            kill((pid_t)atol(e->d_name), SIGKILL);
    closedir(d);
}

/* ------------------------------------------------- nothing outlives */

#define MAX_TRACKED 64
static pid_t tracked[MAX_TRACKED];
static int n_tracked;
static pid_t outlived_owner; /* forked children run the handler too */

void th_track(pid_t pid)
{
    if (pid > 0 && n_tracked < MAX_TRACKED)
        tracked[n_tracked++] = pid;
}

/* Running, and not a zombie waiting to be reaped (by us or by init). */
static int alive(const char *name)
{
    char path[PATH_SIZE], buf[512], *close_paren, state = '?';
    FILE *f;
    size_t n = 0;

    snprintf(path, sizeof(path), "/proc/%s/stat", name);
    if ((f = fopen(path, "r")) == NULL)
        return 0;
    n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    close_paren = strrchr(buf, ')');
    if (close_paren == NULL || sscanf(close_paren, ") %c", &state) != 1)
        return 0;
    return state != 'Z' && state != 'X';
}

/* Name the process, kill it and reap it when it is ours. */
static void outlived(const char *name)
{
    char path[PATH_SIZE], cmd[256];
    FILE *f;
    size_t n = 0, i;
    pid_t pid = (pid_t)atol(name);

    snprintf(path, sizeof(path), "/proc/%s/cmdline", name);
    if ((f = fopen(path, "r")) != NULL) {
        n = fread(cmd, 1, sizeof(cmd) - 1, f);
        fclose(f);
    }
    while (n > 0 && cmd[n - 1] == '\0')
        n--;
    for (i = 0; i < n; i++)
        if (cmd[i] == '\0')
            cmd[i] = ' ';
    cmd[n] = '\0';
    fprintf(stderr,
            "FAIL - process %ld (%s) outlived %s: not stopped by its pid\n",
            (long)pid, cmd, program_invocation_short_name);
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
}

/*
 * The last exit handler (registered before main, so run after every
 * other): the servers, proxies and sentinels have been stopped by their
 * own handlers, so whatever this program started and is still running
 * was forgotten.  It fails the program, as a hang does.
 */
static void outlived_check(void)
{
    char name[32];
    DIR *d;
    struct dirent *e;
    long me = (long)getpid();
    int found = 0, i;

    if (outlived_owner != getpid() || (d = opendir("/proc")) == NULL)
        return;
    while ((e = readdir(d)) != NULL)
        if (e->d_name[0] >= '1' && e->d_name[0] <= '9'
            && parent_of(e->d_name) == me && alive(e->d_name)) {
            outlived(e->d_name);
            found = 1;
        }
    closedir(d);
    for (i = 0; i < n_tracked; i++) {
        snprintf(name, sizeof(name), "%ld", (long)tracked[i]);
        if (alive(name)) {
            outlived(name);
            found = 1;
        }
    }
    if (found) {
        fflush(NULL);
        _exit(1);
    }
}

__attribute__((constructor)) static void outlived_install(void)
{
    outlived_owner = getpid();
    atexit(outlived_check);
}

/*
 * The watchdog: a thread that looks at CUnit's current test every 100 ms
 * (CU_basic_run_tests installs its own test start handler, so the thread
 * notes each new test itself) and ends the program when one test has run
 * longer than the bound.  A test that hangs then fails in bounded time,
 * named, instead of stalling make check; the servers it started are
 * stopped and its child processes killed on the way out.
 */
static void *watchdog_main(void *arg)
{
    int bound_s = th_hang_bound_s();
    CU_pTest last = NULL;
    int64_t started = th_mono_ms();

    (void)arg;
    for (;;) {
        CU_pTest t = CU_get_current_test();
        CU_pSuite s = CU_get_current_suite();

        if (t != last) {
            last = t;
            started = th_mono_ms();
        } else if (t != NULL && th_mono_ms() - started > bound_s * 1000LL) {
            fprintf(stderr, "\nHANG: %s/%s exceeded %d s\n",
                    s != NULL && s->pName != NULL ? s->pName : "?",
                    t->pName != NULL ? t->pName : "?", bound_s);
            fflush(stderr);
            stop_all_from_signal();
            kill_children();
            _exit(124);
        }
        poll(NULL, 0, 100);
    }
    return NULL;
}

static void watchdog_start(void)
{
    pthread_t thread;
    sigset_t all, old;

    /* The thread takes no signal meant for the tests' main thread. */
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    if (pthread_create(&thread, NULL, watchdog_main, NULL) == 0)
        pthread_detach(thread);
    else
        fprintf(stderr, "th_run_all: no watchdog; a hang will not end\n");
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* ------------------------------------------------------------- runner */

/*
 * CU_basic_run_tests() returns success even when assertions failed, so
 * every count that can reveal a failure is checked.  A run of no tests is
 * a failure too: it means registration went wrong.
 */
/*
 * $TSLOCK_TEST_ONLY: run only the tests whose name contains it (make
 * check-mutants names the test that must catch a mutant, and a program
 * of several minutes need not run whole for it).  The others are made
 * inactive, which is no failure.
 */
static void only_named_tests(void)
{
    const char *only = getenv("TSLOCK_TEST_ONLY");
    CU_pSuite s;
    CU_pTest t;

    if (only == NULL || *only == '\0')
        return;
    CU_set_fail_on_inactive(CU_FALSE);
    for (s = CU_get_registry()->pSuite; s != NULL; s = s->pNext)
        for (t = s->pTest; t != NULL; t = t->pNext)
            if (strstr(t->pName, only) == NULL)
                CU_set_test_active(t, CU_FALSE);
}

int th_run_all(void)
{
    CU_ErrorCode err;
    unsigned run, failed;

    if (CU_get_registry() == NULL) {
        fprintf(stderr, "th_run_all: CUnit registry not initialized\n");
        return 1;
    }
    CU_basic_set_mode(CU_BRM_VERBOSE);
    only_named_tests();
    install_cleanup();
    watchdog_start();
    err = CU_basic_run_tests();
    if (err == CUE_SUCCESS)
        err = CU_get_error();
    if (err != CUE_SUCCESS)
        fprintf(stderr, "CUnit error: %s\n", CU_get_error_msg());
    run = CU_get_number_of_tests_run();
    failed = CU_get_number_of_failures() + CU_get_number_of_tests_failed()
             + CU_get_number_of_suites_failed()
             + CU_get_number_of_failure_records();
    CU_cleanup_registry();
    if (run == 0)
        fprintf(stderr, "th_run_all: no tests ran\n");
    return err != CUE_SUCCESS || failed != 0 || run == 0;
}

static void *cancel_later(void *arg)
{
    th_bound *b = arg;
    struct pollfd p = {.fd = b->stop[0], .events = POLLIN};

    if (poll(&p, 1, 10000) == 0)
        tslock_lock_cancel(b->lock);
    return NULL;
}

void th_bound_start(th_bound *b, tslock_lock *lock)
{
    b->lock = lock;
    CU_ASSERT_FATAL(pipe(b->stop) == 0);
    CU_ASSERT_FATAL(pthread_create(&b->thread, NULL, cancel_later, b) == 0);
}

void th_bound_end(th_bound *b)
{
    (void)!write(b->stop[1], "x", 1);
    pthread_join(b->thread, NULL);
    close(b->stop[0]);
    close(b->stop[1]);
}

long long th_queue_length(const th_server *s, const char *key)
{
    tslock_client *c = th_client(s);
    tslock_lock *l = NULL;
    int64_t n = -1;

    if (tslock_lock_new(&l, c, key) != TSLOCK_OK
        || tslock_lock_queue_length(l, &n) != TSLOCK_OK)
        n = -1;
    tslock_lock_free(l);
    tslock_client_free(c);
    return (long long)n;
}

int th_await_queue(const th_server *s, const char *key, long long n)
{
    int i;

    for (i = 0; i < 2000; i++) {
        if (th_queue_length(s, key) == n)
            return 1;
        poll(NULL, 0, 5);
    }
    return 0;
}

int th_await_no_subscriber(const th_server *s, const char *pattern)
{
    redisContext *raw = th_redis(s);
    int i, gone = 0;

    for (i = 0; i < 2000 && !gone; i++) {
        redisReply *r = redisCommand(raw, "PUBSUB CHANNELS %s", pattern);
        gone = r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements == 0;
        freeReplyObject(r);
        if (!gone)
            poll(NULL, 0, 5);
    }
    redisFree(raw);
    return gone;
}

const th_target *th_cur;
/* The targets of the suites added, in the order CUnit runs them. */
static const th_target *target_suites[16];
static int n_target_suites, next_target_suite;

int th_line_start(th_target t[TH_LINE_TARGETS], th_server *srv,
                  th_server *proxy22)
{
    if (th_server_start(srv, NULL) != 0
        || th_proxy_start(proxy22, srv, "2.2.15") != 0
        || CU_initialize_registry() != CUE_SUCCESS)
        return -1;
    t[0] = (th_target){"modern (script)", srv, ~0u};
    t[1] = (th_target){"modern, WATCH only", srv,
                       TSLOCK_CAP_WATCH | TSLOCK_CAP_TTL_KEEPS};
    t[2] = (th_target){"2.2.15 (WATCH)", proxy22, ~0u};
    return 0;
}

static int target_suite_init(void)
{
    th_cur = target_suites[next_target_suite++];
    return 0;
}

CU_pSuite th_target_suite(const th_target *t)
{
    if (n_target_suites
        == (int)(sizeof(target_suites) / sizeof(target_suites[0])))
        return NULL;
    target_suites[n_target_suites++] = t;
    return CU_add_suite(t->name, target_suite_init, NULL);
}

tslock_client *th_target_client(const th_target *t)
{
    tslock_client *c = th_client(t->endpoint);

    tslock_client_limit_caps(c, t->caps);
    return c;
}

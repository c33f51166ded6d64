/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * demo.c - tslock demo: start a private redis-server on a Unix socket in
 * a temporary directory, run the workers of demo_worker.c through each
 * scheme in turn, print what they counted, and stop the server by its
 * pid (also on SIGINT and on errors).  Every number printed comes from
 * this run.
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "hiredis_compat.h"

#include "cli.h"
#include "demo.h"

#define DEFAULT_DEMO_TTL_MS 60
#define SERVER_START_MS     5000

struct demo_server {
    char dir[128];
    char socket[160];
    pid_t pid;
};

static const char *const scheme_labels[DEMO_N_SCHEMES] = {
    "1 SETNX + DEL on expiry (broken)", "2 Java RedisLock (broken)",
    "3 tslock timestamp (GETSET)",      "4 tslock token (SET NX PX)",
    "5 Java + tslock bridge, one key",  "6 tslock token + fencing"};

static volatile sig_atomic_t stop_signal;

static void on_stop(int sig)
{
    stop_signal = sig;
}

/* No SA_RESTART: a signal must wake the parent out of waitpid(). */
static void catch_stop_signals(void)
{
    struct sigaction sa;

    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_stop;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

    nanosleep(&ts, NULL);
}

/* ------------------------------------------------ the private server */

static void exec_server(const struct demo_server *s, const char *exe)
{
    char log[200];

    snprintf(log, sizeof(log), "%s/redis.log", s->dir);
    setpgid(0, 0); /* ^C stops us, and we stop the server by its pid */
    signal(SIGPIPE, SIG_DFL);
    execlp(exe, exe, "--port", "0", "--unixsocket", s->socket, "--save", "",
           "--appendonly", "no", "--dir", s->dir, "--logfile", log,
           (char *)NULL);
    _exit(CLI_EXIT_NOTFOUND);
}

/* The server answers PING: 1; it exited: -1; not yet: 0. */
static int server_ready(struct demo_server *s)
{
    redisContext *c;
    redisReply *r = NULL;
    int st, ok;

    if (waitpid(s->pid, &st, WNOHANG) == s->pid) {
        s->pid = 0;
        return -1;
    }
    c = redisConnectUnix(s->socket);
    ok = c != NULL && !c->err && (r = redisCommand(c, "PING")) != NULL
         && r->type == REDIS_REPLY_STATUS;
    freeReplyObject(r);
    if (c != NULL)
        redisFree(c);
    return ok;
}

static void remove_dir(const char *dir)
{
    char path[400];
    DIR *d = opendir(dir);
    struct dirent *e;

    while (d != NULL && (e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        unlink(path);
    }
    if (d != NULL)
        closedir(d);
    rmdir(dir);
}

static void server_stop(struct demo_server *s)
{
    int i, st;

    if (s->pid > 0) {
        kill(s->pid, SIGTERM);
        for (i = 0; i < 500 && waitpid(s->pid, &st, WNOHANG) == 0; i++)
            sleep_ms(10);
        if (i == 500) {
            kill(s->pid, SIGKILL);
            waitpid(s->pid, &st, 0);
        }
        s->pid = 0;
    }
    if (s->dir[0] != '\0')
        remove_dir(s->dir);
    s->dir[0] = '\0';
}

static int server_start(struct demo_server *s)
{
    const char *exe = getenv("REDIS_SERVER");
    int i, ready = 0;

    if (exe == NULL || exe[0] == '\0')
        exe = "redis-server";
    /* /tmp, not $TMPDIR: a socket path must stay under ~100 bytes. */
    snprintf(s->dir, sizeof(s->dir), "/tmp/tslock-demo.XXXXXX");
    if (mkdtemp(s->dir) == NULL) {
        cli_error("cannot make a temporary directory: %s", strerror(errno));
        s->dir[0] = '\0';
        return CLI_EXIT_OSERR;
    }
    snprintf(s->socket, sizeof(s->socket), "%s/redis.sock", s->dir);
    s->pid = fork();
    if (s->pid == 0)
        exec_server(s, exe);
    if (s->pid < 0) {
        cli_error("cannot fork: %s", strerror(errno));
        return CLI_EXIT_OSERR;
    }
    for (i = 0; i < SERVER_START_MS / 20 && !stop_signal; i++) {
        if ((ready = server_ready(s)) != 0)
            break;
        sleep_ms(20);
    }
    if (ready == 1)
        return CLI_EXIT_OK;
    cli_error("cannot start %s (%s): install redis-server or set "
              "$REDIS_SERVER",
              exe, ready < 0 ? "it exited at once" : "no answer within 5 s");
    return CLI_EXIT_UNAVAILABLE;
}

/* ------------------------------------------------------------ rounds */

static pid_t start_worker(const struct demo_config *cfg, enum demo_scheme s,
                          int index, struct demo_shared *sh)
{
    pid_t pid = fork();

    if (pid == 0) {
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        signal(SIGHUP, SIG_DFL);
        fflush(stdout);
        _exit(demo_worker(cfg, s, index, sh));
    }
    return pid;
}

static void stop_workers(const pid_t *pids, int n)
{
    int i;

    for (i = 0; i < n; i++)
        if (pids[i] > 0)
            kill(pids[i], SIGTERM);
}

/* Wait for every worker; on a stop signal, stop them first. */
static void wait_workers(pid_t *pids, int n)
{
    int i, left = n, st;
    pid_t pid;

    while (left > 0) {
        if (stop_signal)
            stop_workers(pids, n);
        pid = waitpid(-1, &st, 0);
        if (pid < 0 && errno != EINTR)
            break;
        for (i = 0; pid > 0 && i < n; i++)
            if (pids[i] == pid) {
                pids[i] = 0;
                left--;
            }
    }
}

static int delete_key(const char *socket)
{
    redisContext *c = redisConnectUnix(socket);
    redisReply *r = NULL;
    int ok = c != NULL && !c->err
             && (r = redisCommand(c, "DEL %s", DEMO_KEY)) != NULL;

    freeReplyObject(r);
    if (c != NULL)
        redisFree(c);
    return ok ? 0 : -1;
}

static int run_round(const struct demo_config *cfg, enum demo_scheme s,
                     struct demo_shared *sh, struct demo_row *row)
{
    pid_t pids[DEMO_MAX_WORKERS];
    int i, started = 0;

    memset(sh, 0, sizeof(*sh));
    sh->start_mono_ms = cli_mono_ms();
    if (delete_key(cfg->socket) != 0) {
        cli_error("lost the demo server at %s", cfg->socket);
        return CLI_EXIT_UNAVAILABLE;
    }
    fflush(stdout);
    for (i = 0; i < cfg->workers; i++) {
        pids[i] = start_worker(cfg, s, i, sh);
        started += pids[i] > 0;
    }
    wait_workers(pids, cfg->workers);
    row->holds = atomic_load(&sh->holds);
    row->overlaps = atomic_load(&sh->overlaps);
    row->past_lease = atomic_load(&sh->past_lease);
    row->foreign_deletes = atomic_load(&sh->foreign_deletes);
    row->lost = atomic_load(&sh->lost);
    row->errors = atomic_load(&sh->errors) + (cfg->workers - started);
    row->accepted = atomic_load(&sh->writes_accepted);
    row->refused = atomic_load(&sh->writes_refused);
    row->damage = atomic_load(&sh->damage);
    return CLI_EXIT_OK;
}

/* ------------------------------------------------------------ output */

static void print_header(const struct demo_config *cfg)
{
    tslock_client *c = NULL;
    int major = 0, minor = 0, patch = 0;

    if (tslock_client_new(&c) == TSLOCK_OK
        && tslock_client_connect_unix(c, cfg->socket) == TSLOCK_OK)
        tslock_client_server_version(c, &major, &minor, &patch);
    tslock_client_free(c);
    printf("tslock demo: %d worker processes take one key, %" PRId64
           " ms per scheme.\n"
           "Lease %" PRId64 " ms; 1 hold in %d pauses %" PRId64
           " ms (1.5 x the lease) inside\n"
           "the critical section, as a GC pause or a stopped VM would.\n"
           "Private redis-server %d.%d.%d on %s\n\n",
           cfg->workers, cfg->duration_ms, cfg->ttl_ms, cfg->pause_one_in,
           cfg->ttl_ms * 3 / 2, major, minor, patch, cfg->socket);
    printf("%-34s %6s %8s %10s %11s %5s\n", "scheme", "holds", "overlaps",
           "past lease", "foreign DEL", "lost");
}

static void print_row(enum demo_scheme s, const struct demo_row *row)
{
    char lost[24] = "-";

    if (s != DEMO_NAIVE && s != DEMO_JAVA)
        snprintf(lost, sizeof(lost), "%ld", row->lost);
    printf("%-34s %6ld %8ld %10ld %11ld %5s\n", scheme_labels[s], row->holds,
           row->overlaps, row->past_lease, row->foreign_deletes, lost);
    if (s == DEMO_FENCING)
        printf("  fenced writes: %ld accepted, %ld refused as stale, "
               "damage %ld\n",
               row->accepted, row->refused, row->damage);
    if (row->errors > 0)
        printf("  (%ld worker%s failed; see the messages above)\n", row->errors,
               row->errors == 1 ? "" : "s");
    fflush(stdout);
}

static const char legend[] =
    "\n"
    "holds        locks taken in this run\n"
    "overlaps     a worker entered the critical section while another was\n"
    "             inside and both leases were still running: mutual\n"
    "             exclusion broken\n"
    "past lease   a holder still inside after its own lease ran out (the\n"
    "             pauses): the lease caveat, not a lock bug; no lock can\n"
    "             stop it, fencing lets the resource refuse such a writer\n"
    "foreign DEL  a DEL removed a value the deleting worker had not written\n"
    "             (or, in scheme 1's recovery, not the expired one it read);\n"
    "             libtslock deletes only where the server finds its value\n"
    "lost         releases libtslock reported as TSLOCK_ELOST: the lease\n"
    "             had run out and nothing was deleted (\"-\": the broken\n"
    "             schemes cannot tell)\n"
    "(broken)     broken, from the articles; written in this tool over\n"
    "             plain hiredis\n"
    "scheme 5     a fleet mid-migration (doc/migration.md): half the\n"
    "             workers run the Java RedisLock of scheme 2, half\n"
    "             libtslock's bridge scheme, on one key, in ms stamps\n"
    "scheme 6     the token scheme with fencing numbers: each holder reads\n"
    "             a counter with its fence and writes it + 1; the counter\n"
    "             refuses a fence older than one it has seen (refused as\n"
    "             stale); damage counts accepted writes that lost an\n"
    "             update\n";

static void print_safe_summary(const struct demo_row *rows)
{
    const struct demo_row *ts = &rows[DEMO_TIMESTAMP], *tok = &rows[DEMO_TOKEN];
    const struct demo_row *mig = &rows[DEMO_MIGRATION];

    printf("Schemes 3 and 4: 0 overlaps and 0 foreign DELs in %ld holds.  "
           "%ld holds ran\npast their lease; %ld releases reported "
           "TSLOCK_ELOST and deleted nothing.\n",
           ts->holds + tok->holds, ts->past_lease + tok->past_lease,
           ts->lost + tok->lost);
    printf("\nScheme 5: Java and tslock bridge clients took one key %ld "
           "times.  The %ld\nforeign DELs were all sent by Java releases: "
           "only they send a plain DEL,\nand a bridge release deletes only "
           "where the server finds its stamp, its TTL\nand its owner token "
           "(%ld found them gone and deleted nothing).  Each of the\n%ld "
           "overlaps needs a lock deleted or overwritten under its holder; "
           "the Java\nclients do both, and tests/test_interop.c attributes "
           "every overlap.  Such a\nfleet is only as safe as its oldest "
           "client until the last one is retired.\n",
           mig->holds, mig->foreign_deletes, mig->lost, mig->overlaps);
    printf("\nScheme 6: %ld holds ran past their lease; the resource "
           "refused %ld stale\nwrites by their fencing numbers and took "
           "%ld, with no update lost.\n",
           rows[DEMO_FENCING].past_lease, rows[DEMO_FENCING].refused,
           rows[DEMO_FENCING].accepted);
}

/* The verdict, from the numbers: 0 when the safe schemes held. */
static int print_verdict(const struct demo_row *rows, int64_t duration_ms)
{
    int s, status = CLI_EXIT_OK;

    fputs(legend, stdout);
    putchar('\n');
    for (s = 0; s < DEMO_N_SCHEMES; s++) {
        const struct demo_row *r = &rows[s];
        int safe = s == DEMO_TIMESTAMP || s == DEMO_TOKEN || s == DEMO_FENCING;
        if (r->errors > 0)
            status = CLI_EXIT_SOFTWARE;
        if (safe
            && (r->overlaps != 0 || r->foreign_deletes != 0 || r->damage)) {
            printf("UNEXPECTED: scheme %d broke mutual exclusion; please "
                   "report this\n",
                   s + 1);
            status = CLI_EXIT_SOFTWARE;
        } else if (s == DEMO_MIGRATION) {
            continue; /* explained below the table */
        } else if (!safe && r->overlaps == 0 && r->foreign_deletes == 0) {
            printf("scheme %d: no race caught in %" PRId64
                   " ms this time; try a longer --duration\n",
                   s + 1, duration_ms);
        }
    }
    if (status == CLI_EXIT_OK)
        print_safe_summary(rows);
    return status;
}

/* ------------------------------------------------------------ main */

static int run_all(const struct demo_config *cfg, struct demo_shared *sh,
                   FILE *svg)
{
    struct demo_row rows[DEMO_N_SCHEMES];
    int s, status = CLI_EXIT_OK;

    memset(rows, 0, sizeof(rows));
    print_header(cfg);
    for (s = 0; s < DEMO_N_SCHEMES && status == CLI_EXIT_OK; s++) {
        status = run_round(cfg, (enum demo_scheme)s, sh, &rows[s]);
        if (stop_signal)
            return CLI_EXIT_SIGNAL_BASE + stop_signal;
        if (status == CLI_EXIT_OK)
            print_row((enum demo_scheme)s, &rows[s]);
    }
    if (status == CLI_EXIT_OK)
        status = print_verdict(rows, cfg->duration_ms);
    if (svg != NULL && status == CLI_EXIT_OK
        && demo_write_svg(svg, cfg, scheme_labels, rows) != 0) {
        cli_error("cannot write the --svg file: %s", strerror(errno));
        status = CLI_EXIT_OSERR;
    }
    return status;
}

/*
 * --svg: open the file before the first round, so a bad path fails at
 * once rather than after every scheme has run, and map the workers'
 * lanes.  0, or an exit status with nothing left open.
 */
static int svg_open(const struct cli_options *o, struct demo_config *cfg,
                    FILE **svg)
{
    void *map;

    if (o->svg_path == NULL)
        return CLI_EXIT_OK;
    *svg = fopen(o->svg_path, "w");
    if (*svg == NULL) {
        cli_error("cannot write %s: %s", o->svg_path, strerror(errno));
        return CLI_EXIT_OSERR;
    }
    map = mmap(NULL, sizeof(*cfg->timeline), PROT_READ | PROT_WRITE,
               MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (map == MAP_FAILED) {
        cli_error("cannot map shared memory: %s", strerror(errno));
        fclose(*svg);
        *svg = NULL;
        return CLI_EXIT_OSERR;
    }
    cfg->timeline = map;
    return CLI_EXIT_OK;
}

/* A demo that failed leaves no half-drawn timeline behind. */
static void svg_close(const struct cli_options *o, struct demo_config *cfg,
                      FILE *svg, int status)
{
    if (svg == NULL)
        return;
    if (fclose(svg) != 0 && status == CLI_EXIT_OK) {
        cli_error("cannot write %s: %s", o->svg_path, strerror(errno));
        status = CLI_EXIT_OSERR;
    }
    if (status != CLI_EXIT_OK)
        unlink(o->svg_path);
    munmap(cfg->timeline, sizeof(*cfg->timeline));
}

int cli_demo(const struct cli_options *o)
{
    struct demo_server srv;
    struct demo_config cfg;
    struct demo_shared *sh;
    FILE *svg = NULL;
    int status;

    memset(&srv, 0, sizeof(srv));
    memset(&cfg, 0, sizeof(cfg));
    cfg.workers = o->workers;
    cfg.ttl_ms = o->ttl_given ? o->ttl_ms : DEFAULT_DEMO_TTL_MS;
    cfg.duration_ms = o->duration_ms;
    cfg.pause_one_in = 5;
    if (cfg.ttl_ms < 10 || cfg.ttl_ms > 10000) {
        cli_error("demo: --ttl expects 10 to 10000 ms, got %" PRId64,
                  cfg.ttl_ms);
        return CLI_EXIT_USAGE;
    }
    sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
              MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (sh == MAP_FAILED) {
        cli_error("cannot map shared memory: %s", strerror(errno));
        return CLI_EXIT_OSERR;
    }
    status = svg_open(o, &cfg, &svg);
    catch_stop_signals();
    if (status == CLI_EXIT_OK)
        status = server_start(&srv);
    cfg.socket = srv.socket;
    if (status == CLI_EXIT_OK)
        status = run_all(&cfg, sh, svg);
    server_stop(&srv);
    munmap(sh, sizeof(*sh));
    if (stop_signal)
        status = CLI_EXIT_SIGNAL_BASE + stop_signal;
    svg_close(o, &cfg, svg, status);
    return status;
}

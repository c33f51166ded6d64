/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * harness.h - shared support for the CUnit test programs: a real
 * redis-server per test in a private temp dir, stopped by its pid however
 * the test ends; connections to it; a clock the tests drive; and a runner
 * whose exit status reflects every failure.
 *
 * Threads: call the server functions from one thread at a time (normally
 * the test's main thread); the clock functions are as safe as the
 * th_clock they are given.
 */
#ifndef TSLOCK_TEST_HARNESS_H
#define TSLOCK_TEST_HARNESS_H

#include <pthread.h>
#include <sys/types.h>
#include <stdint.h>
#include "hiredis_compat.h"
#include <CUnit/CUnit.h>
#include "tslock.h"

typedef struct th_server {
    pid_t pid;        /* 0 when not running */
    char dir[256];    /* private temp dir (mkdtemp), removed on stop */
    char socket[300]; /* Unix socket path inside dir */
    int port;         /* loopback TCP port it also listens on */
} th_server;

/*
 * Start Debian's redis-server ($REDIS_SERVER if set, else from PATH) in a
 * fresh temp dir named tslock-test.XXXXXX under $TMPDIR (or /tmp),
 * listening on a Unix socket in that dir and on a free 127.0.0.1 port,
 * with no persistence and its log in the dir.
 *
 * extra_conf: config lines appended verbatim (e.g. "requirepass secret\n"),
 * or NULL.  Waits until the server answers PING (at most about 5 s).
 * The server is stopped at exit() and when the test process gets SIGINT,
 * SIGTERM, SIGHUP, SIGSEGV, SIGABRT or SIGBUS; a SIGKILL of the test
 * process cannot be caught and leaves it running.  Up to 16 servers at once.
 * Returns 0, or -1 with a message on stderr.
 */
int th_server_start(th_server *s, const char *extra_conf);

/*
 * The same, run as a sentinel (redis-server CONF --sentinel): extra_conf
 * holds the "sentinel monitor ..." lines.  The config file is in the
 * server's dir, where Sentinel may rewrite it.
 */
int th_sentinel_start(th_server *s, const char *extra_conf);

/*
 * Stop by pid: SIGTERM, wait up to 5 s, then SIGKILL; remove the dir.
 * Idempotent.  s->dir, s->socket and s->port are kept so that
 * th_server_restart() can bring the server back.
 */
void th_server_stop(th_server *s);

/*
 * Stop the server with SIGKILL at once, to test dropped connections.  The
 * dir stays until th_server_stop().
 */
void th_server_kill(th_server *s);

/*
 * Freeze the server with SIGSTOP, returning once it has stopped, so it
 * accepts connections but answers nothing: a hung server.  Resume it with
 * th_server_resume() (SIGCONT); th_server_stop() resumes it too.
 */
void th_server_pause(th_server *s);
void th_server_resume(th_server *s);

/*
 * Restart a killed or stopped server on the same socket path and port.
 * Returns 0, or -1 with a message on stderr (for example when another
 * process took the port meanwhile).
 */
int th_server_restart(th_server *s);

/* A raw hiredis connection over the Unix socket; prints and exit(2)s on
 * failure.  Free it with redisFree(). */
redisContext *th_redis(const th_server *s);

/*
 * A tslock client connected over the Unix socket with
 * tslock_client_connect_unix() and no AUTH; prints tslock_client_errstr()
 * and exit(2)s on failure.  Free it with tslock_client_free().
 */
tslock_client *th_client(const th_server *s);

/*
 * A test clock: tests set and advance it; install it with
 * tslock_client_set_clock(c, th_clock_fn, &clk).
 */
typedef struct th_clock {
    int64_t wall_ms;
    int64_t mono_ms;
} th_clock;

/* The tslock_clock_fn reading a th_clock; -1 for an unknown clock. */
int64_t th_clock_fn(tslock_clock_id which, void *userdata);

/* The real clocks: wall in Unix microseconds, monotonic in ms. */
int64_t th_wall_us(void);
int64_t th_mono_ms(void);
/* Sleep us microseconds (nothing for us <= 0), through EINTR. */
void th_sleep_us(int64_t us);

/* wall = 1700000000000 (2023-11-14), mono = 1000000. */
void th_clock_init(th_clock *c);

/* Move both clocks forward by ms. */
void th_clock_advance(th_clock *c, int64_t ms);

/*
 * Run every registered CUnit suite in basic verbose mode and clean up the
 * registry.  Returns 0 only when at least one test ran, no assertion or
 * test failed, no suite failed to initialize or clean up and CUnit
 * reported no error; 1 otherwise.
 *
 * With $TSLOCK_TEST_ONLY set, only the tests whose name contains it
 * run; the others are inactive, which is no failure.
 *
 * A hang is a failure: a watchdog thread ends the program when one test
 * runs longer than th_hang_bound_s(), printing "HANG: SUITE/TEST exceeded
 * N s" on stderr, stopping the servers started here, killing this
 * process's children and exiting 124.
 *
 * Nothing a test program starts outlives it: at exit, after the servers
 * and proxies are stopped by their exit handlers, any child of the
 * program still running (a redis-server, proxy or sentinel started by
 * hand, a forked worker, a spawned tool) and any process handed to
 * th_track() is named on stderr ("FAIL - process PID (COMMAND) outlived
 * PROGRAM: not stopped by its pid"), killed, and the exit status turns
 * to 1.  tests/harness.sh checks its scripts the same way.
 */
int th_run_all(void);

/* Note a process the program started that is not its child (a daemon, a
 * grandchild), for the exit check above. */
void th_track(pid_t pid);

/*
 * The bound on one test, in seconds: $TSLOCK_TEST_TIMEOUT (default
 * TH_HANG_DEFAULT_S) times $TSLOCK_TEST_TIMEOUT_SCALE (default 1; make
 * check-valgrind and sanitizer builds set it, as their programs run many
 * times slower).  tests/harness.sh bounds each shell check the same way.
 */
#define TH_HANG_DEFAULT_S 120
int th_hang_bound_s(void);

/*
 * The monotonic time (th_mono_ms) ms from now, ms scaled by
 * $TSLOCK_TEST_TIMEOUT_SCALE: the deadline of a test's wait for a state
 * that should come at once, so a state that never comes fails the test
 * (with an assertion) instead of hanging it.
 */
int64_t th_deadline_ms(int64_t ms);

/*
 * Start tests/oldredis ($OLDREDIS, else $top_builddir/tests/oldredis) in
 * front of upstream, answering as Redis `version` ("2.0.5", "2.2.15",
 * "2.4.18", "2.6.0", "2.6.11"), or passing everything through ("modern"). Fills
 * p like a server: p->socket is the proxy's, so th_client() and th_redis() work
 * on it; p->port is 0. Returns 0, or -1 with a message on stderr.
 */
int th_proxy_start(th_server *p, const th_server *upstream,
                   const char *version);
/*
 * The same, listening on a free 127.0.0.1 TCP port (p->port) instead of a
 * Unix socket (p->socket is ""), for a sentinel to name.
 */
int th_proxy_start_tcp(th_server *p, const th_server *upstream,
                       const char *version);
/* Stop a proxy by pid (SIGTERM) and remove its dir.  Idempotent. */
void th_proxy_stop(th_server *p);

/*
 * The proxy's fault mode (see the header of tests/oldredis.c).  ctl is a
 * connection to the proxy used for nothing else (th_redis(proxy)): its
 * commands are never counted.  th_fault_arm() arms kind ("drop-before",
 * "drop-after", "delay", "half", "half-close") for the n-th command from
 * now over every other connection; delay_ms is for "delay" only.  Arm
 * and clear reset the count.  Return 0, or -1 with a message on stderr.
 * No CUnit calls, so threads may use them, each with its own ctl.
 */
int th_fault_arm(redisContext *ctl, const char *kind, int n, int delay_ms);
int th_fault_clear(redisContext *ctl);
/* Commands counted since the last arm or clear; -1 on failure. */
long th_fault_count(redisContext *ctl);
/* 1 once the armed fault has struck, 0 before; -1 on failure. */
int th_fault_fired(redisContext *ctl);

/*
 * Rounds per load-test worker: $TSLOCK_TEST_ROUNDS when set (make
 * check-valgrind sets a few), else dflt.
 */
int th_rounds(int dflt);

/*
 * Fork n worker processes, each running child(index, userdata) and then
 * exiting 0 (a child may exit itself, non-zero on failure), and wait for
 * all of them.  Returns 1 when every one exited 0.
 */
int th_workers(int n, void (*child)(int index, void *userdata), void *userdata);

/*
 * th_workers in two halves, for a test that works while its workers run:
 * th_workers_start forks them (pids[n] receives their ids) and returns at
 * once; th_workers_wait waits for them all, 1 when every one exited 0.
 *
 * Fork from the main thread only (th_workers_start fails a test that
 * calls it from another), while no other thread of the test is busy: the
 * child is a copy of the forking thread alone, and a lock another thread
 * held at the fork (the allocator's, under AddressSanitizer, which has no
 * fork handler in GCC 12's libasan) stays held in the child for good.
 */
void th_workers_start(int n, void (*child)(int index, void *userdata),
                      void *userdata, pid_t *pids);
int th_workers_wait(int n, const pid_t *pids);

/*
 * A timestamp-scheme lock on key with a ttl_ms lease; a CUnit fatal
 * failure if it cannot be made.
 */
tslock_lock *th_stamp_lock(tslock_client *c, const char *key, int64_t ttl_ms);

/*
 * A bound on a wait that should end at once: a thread cancels lock's
 * wait after 10 s, so a missed wake-up fails the test instead of passing
 * slowly.  It is a bound for a broken build, not an order.
 */
typedef struct th_bound {
    tslock_lock *lock;
    int stop[2];
    pthread_t thread;
} th_bound;
void th_bound_start(th_bound *b, tslock_lock *lock);
void th_bound_end(th_bound *b);

/*
 * Wait (10 s at most) until no channel matching pattern (PUBSUB CHANNELS)
 * has a subscriber on s: the server has seen a killed subscriber's
 * socket close, as it would on a real network once the kernel reports
 * it.  Returns 1, or 0 when some remain.
 */
int th_await_no_subscriber(const th_server *s, const char *pattern);

/*
 * The length of key's line of waiters on s, read with
 * tslock_lock_queue_length() (-1 when it fails), and a wait (10 s at
 * most, a bound for a broken build) until it is n: tests order their
 * waiters by the line the server shows, not by sleeps.
 */
long long th_queue_length(const th_server *s, const char *key);
int th_await_queue(const th_server *s, const char *key, long long n);

/*
 * The generations a token lock's line of waiters runs on (test_fair,
 * test_wakeone), one CUnit suite each: scripts on a modern server, WATCH
 * alone on it, and Redis 2.2.15 through the proxy in front of it.
 * th_line_start() starts srv and proxy22 (2.2.15 in front of srv),
 * initializes the CUnit registry and fills t: 0, or -1 (stop both with
 * th_server_stop and th_proxy_stop either way).  th_target_suite() adds
 * t's suite, whose init makes t th_cur, the target its tests run on;
 * th_target_client() is a client of t's endpoint limited to t's caps.
 */
typedef struct th_target {
    const char *name;
    const th_server *endpoint;
    unsigned caps;
} th_target;
#define TH_LINE_TARGETS 3
extern const th_target *th_cur;
int th_line_start(th_target t[TH_LINE_TARGETS], th_server *srv,
                  th_server *proxy22);
CU_pSuite th_target_suite(const th_target *t);
tslock_client *th_target_client(const th_target *t);

#endif /* TSLOCK_TEST_HARNESS_H */

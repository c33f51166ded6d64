/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * run.c - the run form, tslock KEY [KEY...] -- COMMAND: take every KEY
 * (several as one set, all or nothing), run COMMAND as a child (each
 * lease renewed from a thread of the library with --renew), pass signals
 * on to it, release the KEYs once it has exited, and choose the exit
 * status by the rule in tslock(1): a lost lease, then COMMAND's own
 * status, then a failed release.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include "tslock_atomic.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"

/* File descriptors below this are checked for "inherited by tslock". */
#define FD_SCAN_LIMIT 1024

struct run_state;

/* One KEY: its lock, and its renewal with --renew. */
struct run_key {
    struct run_state *s;
    const char *key;
    tslock_lock *lock;
    tslock_client *renew_client;
    tslock_watchdog *watchdog;
};

struct run_state {
    const struct cli_options *o;
    struct run_key *keys;
    int n_keys;
    tslock_client *client;
    /* A Redlock (-u given N times, one KEY) instead of client and locks. */
    tslock_client **masters;
    tslock_redlock *redlock;
    struct cli_renewer *renewer;
    atomic_int child_pid;
    atomic_int renew_failed; /* the failing code, 0 while renewals work */
    atomic_int term_sent;    /* --kill-on-loss sends SIGTERM once */
    int lost;                /* the lease was lost before COMMAND ended */
    char lost_why[512];
    int release_status;    /* non-zero when releasing failed */
    int64_t at_least_ms;   /* --at-least, once COMMAND has run */
    struct cli_once *once; /* --once-per: this period's run, while it runs */
    unsigned char inherited[FD_SCAN_LIMIT / 8];
};

/*
 * COMMAND (or a daemon it starts) must not keep our Redis connections
 * open.  The library opens its own close-on-exec; this also covers any
 * other descriptor tslock opened (hiredis contexts of the demo, pipes).
 * Descriptors open when tslock started are the caller's and are passed
 * on; every other one is ours and closed on exec.
 */
static void note_inherited_fds(struct run_state *s)
{
    int fd;

    for (fd = 0; fd < FD_SCAN_LIMIT; fd++)
        if (fcntl(fd, F_GETFD) != -1)
            s->inherited[fd / 8] |= (unsigned char)(1u << (fd % 8));
}

static void close_own_fds_on_exec(const struct run_state *s)
{
    int fd, flags;

    for (fd = 3; fd < FD_SCAN_LIMIT; fd++) {
        if (s->inherited[fd / 8] & (1u << (fd % 8)))
            continue;
        flags = fcntl(fd, F_GETFD);
        if (flags != -1)
            fcntl(fd, F_SETFD, flags | FD_CLOEXEC);
    }
}

static void send_term_once(struct run_state *s)
{
    int pid = atomic_load(&s->child_pid);

    if (pid > 0 && s->o->kill_on_loss && !atomic_exchange(&s->term_sent, 1))
        kill((pid_t)pid, SIGTERM);
}

/* From the watchdog's thread: say so at once, the status comes later. */
static void on_renew_failure(int code, const char *detail, void *userdata)
{
    struct run_key *k = userdata;
    struct run_state *s = k->s;

    atomic_store(&s->renew_failed, code);
    cli_error("WARNING: renewing the lease on '%s' failed: %s: %s; %s; %s",
              k->key, tslock_errname(code), detail,
              code == TSLOCK_ELOST
                  ? "the lock is no longer ours, so mutual exclusion may "
                    "be broken already"
                  : "mutual exclusion may be broken once the lease runs out",
              s->o->kill_on_loss ? "sending SIGTERM to COMMAND (--kill-on-loss)"
                                 : "COMMAND keeps running");
    send_term_once(s);
}

/*
 * From the watchdog's thread: a renewal met a dropped connection or a
 * timeout, reconnected and renewed in time.  The lock is still ours, so
 * this is a warning, and COMMAND's status stays the exit status.
 */
static void on_renew_warning(int code, const char *detail, void *userdata)
{
    struct run_key *k = userdata;

    if (code == TSLOCK_EREPLICAS)
        cli_error("warning: renewed the lease on '%s' on the master, but too "
                  "few replicas acknowledged it (%s); the lock is still ours",
                  k->key, detail);
    else
        cli_error("warning: renewing the lease on '%s' hit %s and recovered "
                  "(%s); the lock is still ours",
                  k->key, tslock_errname(code), detail);
}

/* From the Redlock renewal thread: a renewal reached too few masters. */
static void on_quorum_warning(int code, const char *detail, void *userdata)
{
    struct run_key *k = userdata;

    cli_error("warning: renewing the lease on '%s' reached too few masters "
              "(%s: %s); the hold stays valid as long as it was, and the next "
              "renewal tries again",
              k->key, tslock_errname(code), detail);
}

/* A Redlock is renewed on its own connections: the main thread waits. */
static int start_quorum_renewal(struct run_state *s)
{
    sigset_t old;
    int rc;

    cli_signals_block(&old);
    rc = cli_quorum_renew_start(s->redlock, s->o->ttl_ms, on_renew_failure,
                                on_quorum_warning, &s->keys[0], &s->renewer);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != TSLOCK_OK) {
        cli_error("cannot start renewing the lease: %s", tslock_strerror(rc));
        return cli_status_for(rc);
    }
    cli_verbose("renewing the lease every %" PRId64 " ms on every master",
                s->o->ttl_ms / 3 > 0 ? s->o->ttl_ms / 3 : 1);
    return CLI_EXIT_OK;
}

/*
 * Each KEY's lease is renewed on a connection of its own, opened before
 * the KEYs are taken: a lease runs from its taking, and the renewal's
 * first comes a third of it after its watchdog starts, so connections
 * opened in between (each a connect and the server's probe, one after
 * another) ate into the last KEY's lease, and on a loaded machine a
 * 300 ms lease ran out before its first renewal.
 */
static int connect_renewal(struct run_state *s)
{
    int i, status = CLI_EXIT_OK;

    for (i = 0; s->o->renew && i < s->n_keys && status == CLI_EXIT_OK; i++)
        status = cli_connect(s->o, &s->keys[i].renew_client);
    return status;
}

/* The renewals start at once after the taking, on their connections. */
static int start_renewal(struct run_state *s)
{
    sigset_t old;
    int i, rc;

    if (s->redlock != NULL)
        return s->o->renew ? start_quorum_renewal(s) : CLI_EXIT_OK;
    for (i = 0; s->o->renew && i < s->n_keys; i++) {
        struct run_key *k = &s->keys[i];
        /* The renewing thread must never be the one a signal lands in. */
        cli_signals_block(&old);
        rc = tslock_watchdog_start(&k->watchdog, k->lock, k->renew_client, 0,
                                   on_renew_failure, k);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        if (rc != TSLOCK_OK)
            return cli_fail(s->client, rc, "cannot start renewing the lease");
        (void)tslock_watchdog_set_on_warning(k->watchdog, on_renew_warning, k);
        cli_verbose("renewing the lease on '%s' every %" PRId64
                    " ms on a connection of its own",
                    k->key, s->o->ttl_ms / 3 > 0 ? s->o->ttl_ms / 3 : 1);
    }
    return CLI_EXIT_OK;
}

/* In the child: COMMAND with the signal setup tslock started with. */
static void exec_child(char **command, const sigset_t *mask, int report_fd)
{
    int err;

    cli_signals_restore();
    pthread_sigmask(SIG_SETMASK, mask, NULL);
    execvp(command[0], command);
    err = errno;
    (void)!write(report_fd, &err, sizeof(err));
    _exit(err == ENOENT ? CLI_EXIT_NOTFOUND : CLI_EXIT_NOEXEC);
}

/* Read the child's exec errno from the pipe; nothing means exec worked. */
static void report_exec_failure(int fd, const char *name)
{
    int err = 0;
    ssize_t n;

    while ((n = read(fd, &err, sizeof(err))) < 0 && errno == EINTR)
        ;
    if (n == (ssize_t)sizeof(err))
        cli_error("cannot run '%s': %s", name, strerror(err));
}

/*
 * Fork and exec.  Signals are blocked across fork so one that arrives
 * then is forwarded once the child's pid is known, never lost.  An exec
 * failure comes back through a close-on-exec pipe, so the message is
 * printed here and not from the forked copy of a threaded process.
 */
static int spawn(struct run_state *s, char **command, pid_t *pid)
{
    sigset_t old;
    int fds[2], fork_errno, sig;

    if (pipe(fds) != 0) {
        cli_error("cannot make a pipe: %s", strerror(errno));
        return CLI_EXIT_OSERR;
    }
    fcntl(fds[0], F_SETFD, FD_CLOEXEC);
    fcntl(fds[1], F_SETFD, FD_CLOEXEC);
    cli_signals_block(&old);
    sig = cli_signals_received();
    *pid = sig != 0 ? -1 : fork();
    fork_errno = errno;
    if (*pid == 0)
        exec_child(command, &old, fds[1]);
    if (*pid > 0) {
        cli_signals_forward_to((int)*pid);
        atomic_store(&s->child_pid, (int)*pid);
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    close(fds[1]);
    if (*pid > 0)
        report_exec_failure(fds[0], command[0]);
    close(fds[0]);
    if (sig != 0) {
        cli_info("stopped by signal %d before running COMMAND", sig);
        return CLI_EXIT_SIGNAL_BASE + sig;
    }
    if (*pid < 0) {
        cli_error("cannot fork: %s", strerror(fork_errno));
        return CLI_EXIT_OSERR;
    }
    return CLI_EXIT_OK;
}

/* Wait for COMMAND; its status as a shell reports it. */
static int wait_child(pid_t pid)
{
    int st;

    while (waitpid(pid, &st, 0) < 0) {
        if (errno != EINTR) {
            cli_error("cannot wait for COMMAND: %s", strerror(errno));
            return CLI_EXIT_OSERR;
        }
    }
    cli_signals_forward_to(0);
    if (WIFSIGNALED(st)) {
        cli_verbose("COMMAND was killed by signal %d", WTERMSIG(st));
        return CLI_EXIT_SIGNAL_BASE + WTERMSIG(st);
    }
    cli_verbose("COMMAND exited with status %d", WEXITSTATUS(st));
    return WEXITSTATUS(st);
}

static int run_child(struct run_state *s, char **command, int *child_status)
{
    pid_t pid;
    int status;

    close_own_fds_on_exec(s);
    cli_verbose("running %s", command[0]);
    status = spawn(s, command, &pid);
    if (status != CLI_EXIT_OK)
        return status;
    if (atomic_load(&s->renew_failed) != 0)
        send_term_once(s); /* failed before the pid was known */
    *child_status = wait_child(pid);
    return CLI_EXIT_OK;
}

static void note_lost(struct run_state *s, const struct run_key *k,
                      const char *what)
{
    if (!s->lost)
        snprintf(s->lost_why, sizeof(s->lost_why), "'%s': %s: %s", k->key, what,
                 s->redlock != NULL ? tslock_redlock_errstr(s->redlock)
                                    : tslock_client_errstr(s->client));
    s->lost = 1;
}

/* end_hold of a Redlock: stop renewing, release on every master. */
static void end_quorum_hold(struct run_state *s, struct run_key *k)
{
    int rc = cli_quorum_renew_stop(s->renewer);

    s->renewer = NULL;
    if (rc != TSLOCK_OK)
        note_lost(s, k, "renewal failed");
    if (!tslock_redlock_is_held(s->redlock))
        return;
    rc = tslock_redlock_release(s->redlock);
    if (rc == TSLOCK_OK)
        cli_verbose("%s", tslock_redlock_errstr(s->redlock));
    else if (rc == TSLOCK_ELOST)
        note_lost(s, k, "release found it gone");
    else {
        cli_error("cannot release the lock (it stays held until its lease "
                  "runs out): %s: %s",
                  tslock_errname(rc), tslock_redlock_errstr(s->redlock));
        s->release_status = cli_status_for(rc);
    }
}

/* Stop renewing, then release: both can find the lease lost. */
static void end_hold(struct run_state *s, struct run_key *k)
{
    int rc;

    if (s->redlock != NULL) {
        end_quorum_hold(s, k);
        return;
    }
    if (k->watchdog != NULL) {
        rc = tslock_watchdog_stop(k->watchdog);
        k->watchdog = NULL;
        if (rc != TSLOCK_OK)
            note_lost(s, k, "renewal failed");
    }
    if (!tslock_lock_is_held(k->lock))
        return;
    /*
     * The library reconnects and retries while the lease leaves room.
     * --at-least: the key stays held until that long after it was taken.
     */
    rc = s->at_least_ms > 0 ? tslock_release_after(k->lock, s->at_least_ms)
                            : tslock_release(k->lock);
    cli_note_wakeups(s->client);
    if (rc == TSLOCK_OK)
        cli_verbose("released '%s'%s%s", k->key,
                    tslock_client_errstr(s->client)[0] != '\0' ? ": " : "",
                    tslock_client_errstr(s->client));
    else if (rc == TSLOCK_ELOST)
        note_lost(s, k, "release found it gone");
    else if (s->release_status == 0)
        s->release_status = cli_fail(s->client, rc,
                                     "cannot release the lock (it stays "
                                     "held until its lease runs out)");
    else
        (void)cli_fail(s->client, rc,
                       "cannot release the lock (it stays held until its "
                       "lease runs out)");
}

/*
 * --fence: COMMAND finds the hold's fencing number in $TSLOCK_FENCE (with
 * several KEYs, their numbers in the order of the KEYs, separated by
 * spaces).  It is set here, before the renewal threads start and before
 * fork, because setenv is safe neither beside other threads nor in a
 * forked child.
 */
static int export_fence(const struct run_state *s)
{
    char text[1024];
    size_t used = 0;
    int i;

    if (!s->o->fence)
        return CLI_EXIT_OK;
    text[0] = '\0';
    for (i = 0; i < s->n_keys && used < sizeof(text); i++)
        used += (size_t)snprintf(text + used, sizeof(text) - used, "%s%" PRId64,
                                 i > 0 ? " " : "",
                                 tslock_lock_fence(s->keys[i].lock));
    if (used >= sizeof(text)) {
        cli_error("cannot set TSLOCK_FENCE: %d numbers do not fit", i);
        return CLI_EXIT_OSERR;
    }
    if (setenv("TSLOCK_FENCE", text, 1) != 0) {
        cli_error("cannot set TSLOCK_FENCE: %s", strerror(errno));
        return CLI_EXIT_OSERR;
    }
    cli_verbose("fencing number %s in $TSLOCK_FENCE", text);
    return CLI_EXIT_OK;
}

/* The rule of tslock(1): lost, then COMMAND's status, then release. */
static int choose_status(struct run_state *s, int status, int child_status)
{
    if (s->lost) {
        cli_error("WARNING: a lease was lost before COMMAND finished (%s); "
                  "another holder may have run at the same time: mutual "
                  "exclusion may have been broken",
                  s->lost_why);
        return CLI_EXIT_LOST;
    }
    if (status != CLI_EXIT_OK)
        return status;
    if (child_status != 0)
        return child_status;
    return s->release_status;
}

int cli_run(const struct cli_options *o, char **keys, int n_keys,
            char **command)
{
    struct run_state s;
    tslock_lock **locks = NULL;
    int i, status, child_status = 0;

    memset(&s, 0, sizeof(s));
    s.o = o;
    s.n_keys = n_keys;
    s.keys = calloc((size_t)n_keys, sizeof(*s.keys));
    locks = calloc((size_t)n_keys, sizeof(*locks));
    if (s.keys == NULL || locks == NULL) {
        free(s.keys);
        free(locks);
        cli_error("out of memory");
        return CLI_EXIT_OSERR;
    }
    note_inherited_fds(&s);
    cli_signals_install();
    if (o->n_masters > 0) { /* one KEY: tslock.c refuses more */
        s.keys[0].s = &s;
        s.keys[0].key = keys[0];
        status = cli_quorum_open(o, keys[0], &s.masters, &s.redlock);
        if (status == CLI_EXIT_OK)
            status = cli_quorum_take(o, s.redlock, keys[0]);
    } else {
        status = cli_connect(o, &s.client);
        for (i = 0; status == CLI_EXIT_OK && i < n_keys; i++) {
            s.keys[i].s = &s;
            s.keys[i].key = keys[i];
            status = cli_lock_new(o, s.client, keys[i], &s.keys[i].lock);
            locks[i] = s.keys[i].lock;
        }
        if (status == CLI_EXIT_OK)
            status = connect_renewal(&s);
        if (status == CLI_EXIT_OK)
            status = cli_take_set(o, s.client, locks, keys, n_keys);
    }
    if (status != CLI_EXIT_OK)
        goto out;
    if (o->once_per_ms > 0)
        status = cli_once_begin(o, keys[0], &s.once);
    if (status == CLI_EXIT_OK)
        status = export_fence(&s);
    if (status == CLI_EXIT_OK)
        status = start_renewal(&s);
    if (status == CLI_EXIT_OK) {
        status = run_child(&s, command, &child_status);
        s.at_least_ms = o->at_least_ms;
    }
    /* How the run ended is recorded while the lock is still held. */
    cli_once_end(s.once, status != CLI_EXIT_OK ? status : child_status,
                 atomic_load(&s.renew_failed) != 0);
    for (i = n_keys; i-- > 0;)
        end_hold(&s, &s.keys[i]);
    status = choose_status(&s, status, child_status);
out:
    if (o->n_masters > 0)
        cli_quorum_close(o, s.masters, s.redlock);
    for (i = 0; i < n_keys; i++) {
        tslock_lock_free(s.keys[i].lock);
        tslock_client_free(s.keys[i].renew_client);
    }
    tslock_client_free(s.client);
    free(s.keys);
    free(locks);
    return status;
}

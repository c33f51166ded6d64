/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * explore.c - every interleaving of a small lock scenario, run against a
 * real redis-server (or the old-server proxy in front of it), with the
 * lock's properties checked after every step.
 *
 * Stateless model checking by re-execution, as CHESS and DPOR tools do:
 * every client runs in a thread of its own, connected through a relay in
 * this process that holds each command it sends until the scheduler lets
 * it go.  A schedule is the sequence of those choices (plus the events:
 * the test clock passing every lease, a client crashing); each one is
 * replayed from a flushed server and a reset clock, and the schedules are
 * enumerated depth first.  The relay, not the step hook, decides when a
 * command reaches the server, so the broken schemes of tools/class/naive.c and
 * the legacy clients of tests/legacy.c, which have no hooks, are explored
 * in exactly the same way; tslock's step hook only counts how many
 * commands a pipeline holds, so that a pipeline goes out as one step, as
 * it does on the wire.
 *
 * Reduction (sound): sleep sets over an independence relation that holds
 * only where two steps commute on the server and in the clients: two
 * steps of different clients that only read (GET, PTTL, TTL, WATCH ...),
 * and a client leaving its critical section, which sends nothing, with
 * any step of another (beside a legacy client, with a read only).  Sleep
 * sets alone still visit every reachable state (Godefroid, 1996), so a
 * property checked after every step is checked in every state.
 *
 * See doc/races.md, "Every interleaving".
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "explore.h"
#include "harness.h"
/*
 * For one field: each client's jitter generator (tslock_client.rng),
 * seeded at the start of every schedule so that a bridge stamp's random
 * part, and so every branch that depends on it, is the same in every
 * replay of a schedule.
 */
#include "tslock_int.h"
#include "legacy.h"
#include "naive.h"

#define MAX_SLOTS     4
#define MAX_DEPTH     64
#define MAX_STEP_CMDS 12

/* ------------------------------------------------------------- kinds */

const char *const explore_kind_names[] = {
    "timestamp",    "token",           "bridge",         "naive-del",
    "blind-getset", "get-then-del",    "setnx-expire",   "java-redislock",
    "legacy-java",  "legacy-redisdoc", "legacy-redispy2"};

static int kind_is_legacy(explore_kind k)
{
    return k == EXPLORE_LEGACY_JAVA || k == EXPLORE_LEGACY_REDISDOC
           || k == EXPLORE_LEGACY_REDISPY2 || k == EXPLORE_JAVA;
}

static int kind_is_tslock(explore_kind k)
{
    return k == EXPLORE_TIMESTAMP || k == EXPLORE_TOKEN || k == EXPLORE_BRIDGE;
}

/* ------------------------------------------------------------- slots */

enum slot_state { S_IDLE, S_RUNNING, S_HOLD, S_DONE };
enum op_kind { OP_ACQUIRE, OP_RELEASE };
enum op_result { R_HELD, R_BUSY, R_RELEASED, R_LOST, R_ERROR };

typedef struct op_event {
    enum op_kind op;
    enum op_result result;
    char detail[96];
} op_event;

/*
 * One client: its thread, its two sockets (the client's end of a socket
 * pair is wrapped by hiredis; the other end is read by the relay, which
 * writes to the upstream connection), and what it did in this schedule.
 */
typedef struct slot {
    int idx;
    char name[4];
    explore_kind kind;
    struct explorer *ex;
    int cfd, ufd;      /* relay side of the pair; upstream connection */
    redisContext *rc;  /* client side, for naive and legacy clients */
    tslock_client *tc; /* tslock clients */
    tslock_lock *lock;
    naive_client nv;
    legacy_client lg;
    int64_t tok_seq;
    /* relay */
    char *in;
    size_t in_len, in_cap;
    int n_cmds;
    char cmds[MAX_STEP_CMDS][16];
    char last_cmd[16];
    atomic_int hooks;
    /* thread */
    pthread_t th;
    int notify[2];
    int state, go, hold_go, setup, quit;
    /* schedule */
    int believes, crashed, in_release;
    int after_pass; /* this attempt was begun after the clock's pass */
    int prepass;    /* its first command was already waiting at the pass */
    int64_t wall;   /* this client's wall clock: the test clock + skew */
    char own[64];
    int64_t lease_end; /* wall ms through which its lease runs */
    op_event ev[8];
    int n_ev, seen_ev;
    int at;    /* where the scheduler last found it (S_RUNNING: pending) */
    int fresh; /* its next command starts an acquisition attempt */
    int wrote; /* the step forwarded a command that may write */
} slot;

/* One step of the schedule as printed in a counterexample. */
typedef struct step_rec {
    char actor[8];
    char what[64];
    char value[64];
    char note[96];
    long long pttl;     /* the key's PTTL after it */
    long long clock_ms; /* the test clock, since the schedule began */
} step_rec;

/* A choice: 0..n-1 run a client's pending step; the events follow. */
#define CH_CLOCK    (MAX_SLOTS)
#define CH_CRASH(i) (MAX_SLOTS + 1 + (i))
#define N_CHOICES   (2 * MAX_SLOTS + 1)

typedef struct frame {
    unsigned enabled, sleep, done, readonly, hold;
    unsigned full; /* enabled before the preemption bound cut it */
    int cur;
    int last;    /* the client that took the step before, or -1 */
    int preempt; /* preemptions before this step */
} frame;

typedef struct explorer {
    const explore_config *cfg;
    th_clock clk;
    redisContext *ctl; /* direct to the real server: reads and resets */
    const char *upstream;
    int n;
    slot slots[MAX_SLOTS];
    pthread_mutex_t mu;
    pthread_cond_t cv;
    /* the schedule being run */
    frame fr[MAX_DEPTH];
    int prefix;
    int clock_used, crash_used, pass_at; /* pass_at: step of the pass */
    char value[64];     /* the key's value after the last step */
    long long pttl;     /* and its PTTL, read with it */
    int64_t t0;         /* the test clock when the schedule began */
    int writer;         /* who wrote it: a slot, -1 nobody, -2 setup */
    char hist_v[8][64]; /* earlier values and writers, for restores */
    int hist_w[8], n_hist;
    int mixed;         /* tslock beside a legacy client */
    int legacy_damage; /* a legacy step destroyed a live foreign hold */
    int violated;      /* this schedule broke a property */
    int violated_at;   /* after this many steps */
    int violation_legacy;
    char why[160];
    step_rec steps[MAX_DEPTH + 8];
    int n_steps;
    /* results: the shortest counterexample of each attribution, and the
     * shortest schedule that left an orphan */
    explore_result *res;
    step_rec best[3][MAX_DEPTH + 8];
    int best_n[3];
    char best_why[3][160];
    int best_ch[3][MAX_DEPTH + 8]; /* the choices of each, to the end */
    int best_nch[3];
} explorer;

static void die(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    fprintf(stderr, "explore: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    exit(2);
}

/* ------------------------------------------------------------- relay */

/*
 * The length of the first complete command (a RESP multibulk, which is
 * all hiredis sends) in buf, or 0 when it is not all there yet; its name
 * in name.
 */
static size_t resp_command(const char *buf, size_t len, char *name, size_t size)
{
    size_t pos = 0;
    long n, i;
    char *end;

    if (len < 4 || buf[0] != '*')
        return 0;
    if (memchr(buf, '\n', len) == NULL)
        return 0;
    n = strtol(buf + 1, &end, 10);
    pos = (size_t)(end - buf) + 2;
    for (i = 0; i < n; i++) {
        long blen;
        if (pos >= len || memchr(buf + pos, '\n', len - pos) == NULL)
            return 0;
        blen = strtol(buf + pos + 1, &end, 10);
        pos = (size_t)(end - buf) + 2;
        if (pos + (size_t)blen + 2 > len)
            return 0;
        if (i == 0) {
            size_t k, c = (size_t)blen < size - 1 ? (size_t)blen : size - 1;
            for (k = 0; k < c; k++)
                name[k] = (char)(buf[pos + k] >= 'a' && buf[pos + k] <= 'z'
                                     ? buf[pos + k] - 32
                                     : buf[pos + k]);
            name[c] = '\0';
        }
        pos += (size_t)blen + 2;
    }
    return pos;
}

/* Count the complete commands waiting in the slot's buffer. */
static void relay_count(slot *s)
{
    size_t pos = 0, len;
    char name[16];

    s->n_cmds = 0;
    while (
        (len = resp_command(s->in + pos, s->in_len - pos, name, sizeof(name)))
        > 0) {
        if (s->n_cmds < MAX_STEP_CMDS)
            snprintf(s->cmds[s->n_cmds], sizeof(s->cmds[0]), "%s", name);
        s->n_cmds++;
        pos += len;
    }
}

static void write_all(int fd, const char *buf, size_t len)
{
    while (len > 0) {
        ssize_t w = write(fd, buf, len);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            die("relay write: %s", strerror(errno));
        buf += w;
        len -= (size_t)w;
    }
}

static int slot_state(slot *s)
{
    int st;

    pthread_mutex_lock(&s->ex->mu);
    st = s->state;
    pthread_mutex_unlock(&s->ex->mu);
    return st;
}

/*
 * Pump the slot's traffic until it is quiet: it has sent every command
 * its step hook announced and waits for their replies (pending), or it
 * holds the lock, or its script is done.  Only this slot runs meanwhile,
 * so nothing else reaches the server.
 */
static int relay_settle(slot *s)
{
    char buf[16384];

    for (;;) {
        struct pollfd p[3];
        int st = slot_state(s), hooks = atomic_load(&s->hooks);

        if (st == S_HOLD || st == S_DONE || st == S_IDLE)
            return st;
        if (s->n_cmds > 0 && s->n_cmds >= (hooks > 0 ? hooks : 1))
            return S_RUNNING; /* pending */
        p[0].fd = s->cfd;
        p[1].fd = s->ufd;
        p[2].fd = s->notify[0];
        p[0].events = p[1].events = p[2].events = POLLIN;
        if (poll(p, 3, 20000) == 0)
            die("client %s stuck (state %d, %d commands, %d hooks)", s->name,
                st, s->n_cmds, hooks);
        if (p[0].revents) {
            ssize_t r = read(s->cfd, buf, sizeof(buf));
            if (r <= 0)
                die("client %s closed its connection", s->name);
            if (s->in_len + (size_t)r > s->in_cap) {
                s->in_cap = (s->in_len + (size_t)r) * 2;
                s->in = realloc(s->in, s->in_cap);
                if (s->in == NULL)
                    die("out of memory");
            }
            memcpy(s->in + s->in_len, buf, (size_t)r);
            s->in_len += (size_t)r;
            relay_count(s);
        }
        if (p[1].revents) {
            ssize_t r = read(s->ufd, buf, sizeof(buf));
            if (r <= 0)
                die("server closed %s's connection", s->name);
            write_all(s->cfd, buf, (size_t)r);
        }
        if (p[2].revents) {
            char c[16];
            if (read(s->notify[0], c, sizeof(c)) < 0)
                die("notify: %s", strerror(errno));
        }
    }
}

/* Let the slot's pending commands go to the server, as one write. */
static int pending_read_only(const slot *s);

static void relay_forward(slot *s)
{
    if (!pending_read_only(s))
        s->wrote = 1;
    if (s->n_cmds > 0)
        snprintf(s->last_cmd, sizeof(s->last_cmd), "%s",
                 s->cmds[s->n_cmds > MAX_STEP_CMDS ? MAX_STEP_CMDS - 1
                                                   : s->n_cmds - 1]);
    atomic_store(&s->hooks, 0);
    write_all(s->ufd, s->in, s->in_len);
    s->in_len = 0;
    s->n_cmds = 0;
}

static int is_read_only(const char *cmd)
{
    static const char *const reads[] = {"GET",   "PTTL",    "TTL",     "EXISTS",
                                        "WATCH", "UNWATCH", "PUBLISH", NULL};
    int i;

    for (i = 0; reads[i] != NULL; i++)
        if (strcmp(cmd, reads[i]) == 0)
            return 1;
    return 0;
}

static int pending_read_only(const slot *s)
{
    int i;

    for (i = 0; i < s->n_cmds && i < MAX_STEP_CMDS; i++)
        if (!is_read_only(s->cmds[i]))
            return 0;
    return s->n_cmds <= MAX_STEP_CMDS;
}

/* ------------------------------------------------------ the clients */

static int tslock_hook(tslock_client *c, tslock_step step, const char *key,
                       void *ud)
{
    slot *s = ud;

    (void)c;
    (void)step;
    (void)key;
    atomic_fetch_add(&s->hooks, 1);
    return 0;
}

/*
 * Every client has its own wall clock, the test clock plus SKEW_MS per
 * client index, as no two hosts agree to the millisecond: so two clients
 * acting at one instant write different stamps, as they would in life.
 */
#define SKEW_MS 7

static int64_t slot_clock(tslock_clock_id which, void *ud)
{
    const slot *s = ud;

    if (which == TSLOCK_CLOCK_WALL)
        return s->wall;
    return which == TSLOCK_CLOCK_MONOTONIC ? s->ex->clk.mono_ms : -1;
}

static int64_t legacy_clock(void *ud)
{
    const slot *s = ud;

    return s->wall * 1000;
}

static void sync_clocks(struct explorer *ex);

static void record(slot *s, enum op_kind op, enum op_result r, const char *fmt,
                   ...)
{
    va_list ap;
    op_event *e;

    pthread_mutex_lock(&s->ex->mu);
    if (s->n_ev < (int)(sizeof(s->ev) / sizeof(s->ev[0]))) {
        e = &s->ev[s->n_ev];
        e->op = op;
        e->result = r;
        va_start(ap, fmt);
        vsnprintf(e->detail, sizeof(e->detail), fmt, ap);
        va_end(ap);
        s->n_ev++;
    }
    pthread_mutex_unlock(&s->ex->mu);
}

static void make_lock(slot *s)
{
    const explore_config *cfg = s->ex->cfg;
    tslock_scheme scheme = s->kind == EXPLORE_TOKEN ? TSLOCK_SCHEME_TOKEN
                           : s->kind == EXPLORE_BRIDGE
                               ? TSLOCK_SCHEME_BRIDGE
                               : TSLOCK_SCHEME_TIMESTAMP;

    tslock_lock_free(s->lock);
    s->lock = NULL;
    if (tslock_lock_new(&s->lock, s->tc, cfg->key) != TSLOCK_OK
        || tslock_lock_set_scheme(s->lock, scheme) != TSLOCK_OK
        || tslock_lock_set_ttl(s->lock, cfg->ttl_ms) != TSLOCK_OK
        || tslock_lock_set_unit(s->lock, cfg->unit) != TSLOCK_OK
        || tslock_lock_set_wakeup(s->lock, 0) != TSLOCK_OK
        || (s->kind == EXPLORE_TIMESTAMP
            && tslock_lock_set_release_form(s->lock, cfg->form) != TSLOCK_OK))
        die("cannot make a lock");
}

static const char safe_del[] =
    "if redis.call('get', KEYS[1]) == ARGV[1] then "
    "return redis.call('del', KEYS[1]) else return 0 end";

/* The raw token acquire the GET-then-DEL control pairs with. */
static int raw_token_acquire(slot *s)
{
    char ms[24];
    redisReply *r;
    int won;

    snprintf(s->nv.value, sizeof(s->nv.value), "tok-%s-%" PRId64, s->name,
             ++s->tok_seq);
    snprintf(ms, sizeof(ms), "%" PRId64, s->ex->cfg->ttl_ms);
    r = redisCommand(s->rc, "SET %s %s NX PX %s", s->ex->cfg->key, s->nv.value,
                     ms);
    if (r == NULL)
        die("%s: %s", s->name, s->rc->errstr);
    won = r->type == REDIS_REPLY_STATUS;
    freeReplyObject(r);
    return won ? NAIVE_HELD : NAIVE_BUSY;
}

static int64_t stamp_ms(const char *v)
{
    return strtoll(v, NULL, 10);
}

/* One acquisition attempt: R_HELD (own value and lease set), R_BUSY. */
static enum op_result do_acquire(slot *s, char *detail, size_t size)
{
    const explore_config *cfg = s->ex->cfg;
    int64_t now = s->ex->clk.wall_ms;
    int rc;

    detail[0] = '\0';
    if (kind_is_tslock(s->kind)) {
        make_lock(s);
        rc = tslock_acquire(s->lock, 0);
        snprintf(detail, size, "%s", tslock_errname(rc));
        if (rc == TSLOCK_OK) {
            snprintf(s->own, sizeof(s->own), "%s", tslock_lock_value(s->lock));
            s->lease_end = tslock_lock_expires_ms(s->lock);
            return R_HELD;
        }
        if (rc != TSLOCK_EBUSY)
            snprintf(detail, size, "%s: %s", tslock_errname(rc),
                     tslock_client_errstr(s->tc));
        return rc == TSLOCK_EBUSY ? R_BUSY : R_ERROR;
    }
    if (kind_is_legacy(s->kind)) {
        rc = s->kind == EXPLORE_LEGACY_REDISDOC
                 ? legacy_redisdoc_try(&s->lg, cfg->key)
             : s->kind == EXPLORE_LEGACY_REDISPY2
                 ? legacy_redispy2_acquire(&s->lg, cfg->key, 0)
                 : legacy_java_try_lock(&s->lg, cfg->key);
        if (rc == LEGACY_HELD) {
            snprintf(s->own, sizeof(s->own), "%s", s->lg.value);
            s->lease_end = s->lg.lease_end_us / 1000 - 1;
            return R_HELD;
        }
        snprintf(detail, size, "%.80s", rc == LEGACY_BUSY ? "" : s->lg.errstr);
        return rc == LEGACY_BUSY ? R_BUSY : R_ERROR;
    }
    switch (s->kind) {
    case EXPLORE_NAIVE_DEL:
        rc = naive_del_recovery_acquire(&s->nv, cfg->key, cfg->ttl_ms);
        break;
    case EXPLORE_BLIND_GETSET:
        rc = naive_blind_getset_acquire(&s->nv, cfg->key, cfg->ttl_ms);
        break;
    case EXPLORE_GET_THEN_DEL:
        rc = raw_token_acquire(s);
        break;
    default:
        rc = naive_setnx_expire_acquire(&s->nv, cfg->key,
                                        (int)(cfg->ttl_ms / 1000));
        break;
    }
    if (rc != NAIVE_HELD)
        return R_BUSY;
    snprintf(s->own, sizeof(s->own), "%s", s->nv.value);
    s->lease_end =
        s->kind == EXPLORE_NAIVE_DEL || s->kind == EXPLORE_BLIND_GETSET
            ? stamp_ms(s->nv.value)
            : now + cfg->ttl_ms - 1;
    return R_HELD;
}

static enum op_result do_release(slot *s, char *detail, size_t size)
{
    const char *key = s->ex->cfg->key;
    redisReply *r;
    int rc;

    detail[0] = '\0';
    if (kind_is_tslock(s->kind)) {
        rc = tslock_release(s->lock);
        snprintf(detail, size, "%s", tslock_errname(rc));
        if (rc != TSLOCK_OK && rc != TSLOCK_ELOST)
            snprintf(detail, size, "%s: %s", tslock_errname(rc),
                     tslock_client_errstr(s->tc));
        return rc == TSLOCK_OK      ? R_RELEASED
               : rc == TSLOCK_ELOST ? R_LOST
                                    : R_ERROR;
    }
    if (kind_is_legacy(s->kind)) {
        rc = legacy_unlock(&s->lg, key);
        return rc == 1 ? R_RELEASED : rc == 0 ? R_LOST : R_ERROR;
    }
    if (s->kind == EXPLORE_GET_THEN_DEL)
        return naive_token_get_then_del(&s->nv, key, s->own) == 1 ? R_RELEASED
                                                                  : R_LOST;
    /* The controls whose flaw is in acquiring release safely. */
    r = redisCommand(s->rc, "EVAL %s 1 %s %s", safe_del, key, s->own);
    if (r == NULL)
        die("%s: %s", s->name, s->rc->errstr);
    rc = r->type == REDIS_REPLY_INTEGER && r->integer == 1;
    freeReplyObject(r);
    return rc ? R_RELEASED : R_LOST;
}

static void set_state(slot *s, int st)
{
    pthread_mutex_lock(&s->ex->mu);
    s->state = st;
    pthread_mutex_unlock(&s->ex->mu);
    if (write(s->notify[1], "x", 1) != 1)
        die("notify: %s", strerror(errno));
}

/* acquire (up to tries times), hold, release. */
static void run_script(slot *s)
{
    char detail[96];
    enum op_result r = R_BUSY;
    int t;

    for (t = 0; t < s->ex->cfg->tries && r != R_HELD; t++) {
        r = do_acquire(s, detail, sizeof(detail));
        record(s, OP_ACQUIRE, r, "%s", detail);
    }
    if (r != R_HELD)
        return;
    pthread_mutex_lock(&s->ex->mu);
    s->state = S_HOLD;
    pthread_mutex_unlock(&s->ex->mu);
    if (write(s->notify[1], "h", 1) != 1)
        die("notify: %s", strerror(errno));
    pthread_mutex_lock(&s->ex->mu);
    while (!s->hold_go)
        pthread_cond_wait(&s->ex->cv, &s->ex->mu);
    s->hold_go = 0;
    s->state = S_RUNNING;
    pthread_mutex_unlock(&s->ex->mu);
    r = do_release(s, detail, sizeof(detail));
    record(s, OP_RELEASE, r, "%s", detail);
}

static void connect_slot(slot *s)
{
    if (kind_is_tslock(s->kind)) {
        if (tslock_client_new(&s->tc) != TSLOCK_OK
            || tslock_client_wrap(s->tc, s->rc) != TSLOCK_OK)
            die("%s: cannot wrap: %s", s->name, tslock_client_errstr(s->tc));
        tslock_client_set_clock(s->tc, slot_clock, s);
        tslock_client_set_step_hook(s->tc, tslock_hook, s);
    }
}

static void *slot_main(void *arg)
{
    slot *s = arg;
    int seen = 0;

    for (;;) {
        pthread_mutex_lock(&s->ex->mu);
        while (s->go == seen && !s->quit)
            pthread_cond_wait(&s->ex->cv, &s->ex->mu);
        seen = s->go;
        if (s->quit) {
            pthread_mutex_unlock(&s->ex->mu);
            break;
        }
        s->state = S_RUNNING;
        pthread_mutex_unlock(&s->ex->mu);
        if (s->setup)
            connect_slot(s);
        else
            run_script(s);
        set_state(s, S_DONE);
    }
    return NULL;
}

static int unix_connect(const char *path)
{
    struct sockaddr_un a;
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);

    memset(&a, 0, sizeof(a));
    a.sun_family = AF_UNIX;
    snprintf(a.sun_path, sizeof(a.sun_path), "%s", path);
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0)
        die("cannot connect to %s: %s", path, strerror(errno));
    return fd;
}

static void kick(slot *s, int setup)
{
    pthread_mutex_lock(&s->ex->mu);
    s->setup = setup;
    s->state = S_RUNNING;
    s->go++;
    pthread_cond_broadcast(&s->ex->cv);
    pthread_mutex_unlock(&s->ex->mu);
}

/* Run the slot to the end of its script, every command passed through. */
static void passthrough(slot *s)
{
    int st;

    while ((st = relay_settle(s)) != S_DONE) {
        if (st == S_HOLD) {
            pthread_mutex_lock(&s->ex->mu);
            s->hold_go = 1;
            s->state = S_RUNNING;
            pthread_cond_broadcast(&s->ex->cv);
            pthread_mutex_unlock(&s->ex->mu);
        } else
            relay_forward(s);
    }
}

static void slot_open(explorer *ex, int i, explore_kind kind)
{
    slot *s = &ex->slots[i];
    int sv[2];

    memset(s, 0, sizeof(*s));
    s->idx = i;
    s->ex = ex;
    s->kind = kind;
    if (ex->mixed && kind_is_legacy(kind))
        snprintf(s->name, sizeof(s->name), "L");
    else
        snprintf(s->name, sizeof(s->name), "%c", 'A' + i);
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0 || pipe(s->notify) != 0)
        die("socketpair: %s", strerror(errno));
    s->cfd = sv[0];
    s->ufd = unix_connect(ex->upstream);
    s->rc = tslock__redis_connect_fd(sv[1]);
    if (s->rc == NULL || s->rc->err)
        die("cannot make a context over a socketpair");
    s->nv.redis = s->rc;
    s->nv.wall_ms = &s->wall;
    if (kind_is_legacy(kind)) {
        legacy_kind lk = kind == EXPLORE_LEGACY_REDISDOC   ? LEGACY_REDISDOC
                         : kind == EXPLORE_LEGACY_REDISPY2 ? LEGACY_REDISPY2
                                                           : LEGACY_JAVA;
        legacy_init(&s->lg, lk, s->rc, ex->cfg->ttl_ms);
        s->lg.clock = legacy_clock;
        s->lg.clock_ud = s;
    }
    if (pthread_create(&s->th, NULL, slot_main, s) != 0)
        die("pthread_create");
    kick(s, 1);
    passthrough(s);
}

static void slot_close(slot *s)
{
    pthread_mutex_lock(&s->ex->mu);
    s->quit = 1;
    pthread_cond_broadcast(&s->ex->cv);
    pthread_mutex_unlock(&s->ex->mu);
    pthread_join(s->th, NULL);
    tslock_lock_free(s->lock);
    tslock_client_free(s->tc);
    redisFree(s->rc);
    close(s->cfd);
    close(s->ufd);
    close(s->notify[0]);
    close(s->notify[1]);
    free(s->in);
}

/* ------------------------------------------------------- the checks */

static void ctl_ok(redisReply *r, explorer *ex)
{
    if (r == NULL)
        die("control connection: %s", ex->ctl->errstr);
    freeReplyObject(r);
}

/* The key's value, and its PTTL into ex->pttl, in one round trip. */
static void read_key(explorer *ex, char *buf, size_t size)
{
    redisReply *r = NULL, *t = NULL;

    if (redisAppendCommand(ex->ctl, "GET %s", ex->cfg->key) != REDIS_OK
        || redisAppendCommand(ex->ctl, "PTTL %s", ex->cfg->key) != REDIS_OK
        || redisGetReply(ex->ctl, (void **)&r) != REDIS_OK
        || redisGetReply(ex->ctl, (void **)&t) != REDIS_OK)
        die("control connection: %s", ex->ctl->errstr);
    snprintf(buf, size, "%s", r->type == REDIS_REPLY_STRING ? r->str : "");
    ex->pttl = t->type == REDIS_REPLY_INTEGER ? t->integer : -2;
    freeReplyObject(r);
    freeReplyObject(t);
}

static int lease_runs(const explorer *ex, const slot *s)
{
    return ex->clk.wall_ms <= s->lease_end;
}

static void violation(explorer *ex, int legacy, const char *fmt, ...)
{
    va_list ap;

    if (ex->violated)
        return; /* the first one names the schedule */
    ex->violated = 1;
    ex->violated_at = ex->n_steps;
    ex->violation_legacy = ex->mixed && (legacy || ex->legacy_damage);
    va_start(ap, fmt);
    vsnprintf(ex->why, sizeof(ex->why), fmt, ap);
    va_end(ap);
}

static step_rec *new_step(explorer *ex, const char *actor)
{
    step_rec *st =
        &ex->steps[ex->n_steps < MAX_DEPTH + 7 ? ex->n_steps++ : ex->n_steps];
    size_t len = strlen(actor);

    memset(st, 0, sizeof(*st));
    memcpy(st->actor, actor, len < sizeof(st->actor) ? len : 7);
    return st;
}

/*
 * Note the key's new value and who wrote it.  A client that puts back a
 * value it had just replaced (tslock's GETSET loser) restores its writer.
 */
static void note_value(explorer *ex, int actor)
{
    char now[64];
    int i, writer = actor;

    read_key(ex, now, sizeof(now));
    if (strcmp(now, ex->value) == 0)
        return;
    if (now[0] != '\0' && ex->writer == actor && actor >= 0)
        for (i = ex->n_hist - 1; i >= 0; i--)
            if (strcmp(ex->hist_v[i], now) == 0) {
                writer = ex->hist_w[i];
                break;
            }
    if (ex->value[0] != '\0') {
        if (ex->n_hist == 8) {
            memmove(ex->hist_v, ex->hist_v + 1, sizeof(ex->hist_v[0]) * 7);
            memmove(ex->hist_w, ex->hist_w + 1, sizeof(ex->hist_w[0]) * 7);
            ex->n_hist--;
        }
        memcpy(ex->hist_v[ex->n_hist], ex->value, sizeof(ex->value));
        ex->hist_w[ex->n_hist++] = ex->writer;
    }
    /* A legacy step that destroyed a live hold of someone else. */
    if (actor >= 0 && ex->mixed && kind_is_legacy(ex->slots[actor].kind)
        && ex->writer >= 0 && ex->writer != actor
        && ex->slots[ex->writer].believes
        && lease_runs(ex, &ex->slots[ex->writer]))
        ex->legacy_damage = 1;
    /* No foreign delete: a release changes only a value it wrote. */
    if (actor >= 0 && ex->slots[actor].in_release && ex->value[0] != '\0'
        && ex->writer != actor)
        violation(ex, kind_is_legacy(ex->slots[actor].kind),
                  "foreign delete: %s's release removed %s, written by %s",
                  ex->slots[actor].name, ex->value,
                  ex->writer >= 0 ? ex->slots[ex->writer].name
                                  : "a dead holder");
    snprintf(ex->value, sizeof(ex->value), "%s", now);
    ex->writer = now[0] != '\0' ? writer : -1;
}

static const char *result_name(enum op_result r)
{
    static const char *const names[] = {"held", "busy", "released", "lost",
                                        "error"};
    return names[r];
}

static long long server_ttl(explorer *ex)
{
    redisReply *r = redisCommand(ex->ctl, "PTTL %s", ex->cfg->key);
    long long t;

    if (r == NULL)
        die("control connection: %s", ex->ctl->errstr);
    t = r->type == REDIS_REPLY_INTEGER ? r->integer : -2;
    freeReplyObject(r);
    return t;
}

/*
 * Liveness: an attempt begun after the clock passed every lease must not
 * be refused for a value whose lease has ended (a dead holder's, or one
 * that never expires): that key would lock everyone out.
 */
static void check_lockout(explorer *ex, const slot *s)
{
    int w = ex->writer;
    const slot *h = w >= 0 ? &ex->slots[w] : NULL;

    if (ex->value[0] == '\0' || w == s->idx)
        return;
    if (h != NULL && !h->crashed && !h->believes && h->at != S_DONE)
        return; /* written by an attempt still under way */
    if (h != NULL && ex->clk.wall_ms <= h->lease_end)
        return; /* a live hold */
    if (server_ttl(ex) > 0)
        return; /* set since the pass: it ends by itself */
    violation(ex, 0,
              "liveness: %s refused after every lease passed; the key "
              "holds %s, whose lease has ended",
              s->name, ex->value);
}

/* What a client was told must match the server. */
static void check_event(explorer *ex, slot *s, const op_event *e, step_rec *st)
{
    int own_there = s->own[0] != '\0' && strcmp(ex->value, s->own) == 0;
    size_t used = strlen(st->note);

    snprintf(st->note + used, sizeof(st->note) - used, "%s%s %s",
             used ? "; " : "", e->op == OP_ACQUIRE ? "acquire" : "release",
             result_name(e->result));
    if (e->result == R_ERROR) {
        violation(ex, kind_is_legacy(s->kind), "%s's %s failed: %s", s->name,
                  e->op == OP_ACQUIRE ? "acquire" : "release", e->detail);
        return;
    }
    if (e->op == OP_ACQUIRE) {
        if (e->result == R_HELD) {
            if (!own_there)
                violation(ex, kind_is_legacy(s->kind),
                          "untruthful: %s told held, key holds %s", s->name,
                          ex->value[0] ? ex->value : "(nil)");
            s->believes = 1;
        } else if (e->result == R_BUSY && s->after_pass)
            check_lockout(ex, s);
        s->after_pass = 0;
        return;
    }
    s->in_release = 0;
    if (e->result == R_RELEASED && own_there)
        violation(ex, kind_is_legacy(s->kind),
                  "untruthful: %s told released, its value %s stands", s->name,
                  s->own);
    if (e->result == R_LOST && own_there && lease_runs(ex, s)
        && kind_is_tslock(s->kind))
        violation(ex, 0,
                  "untruthful: %s told lost, its lease runs and %s "
                  "stands",
                  s->name, s->own);
}

/* Mutual exclusion: never two live believers whose leases both run. */
static void check_exclusion(explorer *ex)
{
    int i, j;

    for (i = 0; i < ex->n; i++)
        for (j = i + 1; j < ex->n; j++) {
            slot *a = &ex->slots[i], *b = &ex->slots[j];
            if (a->believes && b->believes && !a->crashed && !b->crashed
                && lease_runs(ex, a) && lease_runs(ex, b))
                violation(ex,
                          kind_is_legacy(a->kind) && kind_is_legacy(b->kind),
                          "mutual exclusion: %s and %s both hold, both "
                          "leases run",
                          a->name, b->name);
        }
}

static void take_events(explorer *ex, slot *s, step_rec *st)
{
    while (s->seen_ev < s->n_ev) {
        const op_event *e = &s->ev[s->seen_ev++];
        check_event(ex, s, e, st);
        if (e->op == OP_ACQUIRE)
            s->fresh = 1;
    }
}

/* ---------------------------------------------------------- schedule */

static void sync_clocks(explorer *ex)
{
    int i;

    for (i = 0; i < ex->n; i++)
        ex->slots[i].wall = ex->clk.wall_ms + SKEW_MS * i;
}

/* Pending-step description for the counterexample. */
static void describe_pending(const slot *s, char *buf, size_t size)
{
    size_t used = 0;
    int i;

    buf[0] = '\0';
    for (i = 0; i < s->n_cmds && i < MAX_STEP_CMDS && used + 1 < size; i++)
        used += (size_t)snprintf(buf + used, size - used, "%s%s", i ? "+" : "",
                                 s->cmds[i]);
}

/* The test clock passes every lease; the server's TTLs pass with it. */
static void clock_pass(explorer *ex)
{
    int64_t d = ex->cfg->ttl_ms + 3000;
    redisReply *keys;
    size_t i;

    th_clock_advance(&ex->clk, d);
    keys = redisCommand(ex->ctl, "KEYS *");
    if (keys == NULL)
        die("control connection: %s", ex->ctl->errstr);
    for (i = 0; keys->type == REDIS_REPLY_ARRAY && i < keys->elements; i++) {
        redisReply *t = redisCommand(ex->ctl, "PTTL %s", keys->element[i]->str);
        if (t == NULL)
            die("control connection: %s", ex->ctl->errstr);
        if (t->type == REDIS_REPLY_INTEGER && t->integer > 0) {
            if (t->integer <= d)
                ctl_ok(redisCommand(ex->ctl, "DEL %s", keys->element[i]->str),
                       ex);
            else
                ctl_ok(redisCommand(ex->ctl, "PEXPIRE %s %lld",
                                    keys->element[i]->str,
                                    (long long)(t->integer - d)),
                       ex);
        }
        freeReplyObject(t);
    }
    freeReplyObject(keys);
}

/*
 * Plant what a holder that died left: a stamp a second past its lease,
 * or for the token kinds a value whose server TTL still runs (the clock's
 * pass ends it).
 */
static void plant_dead(explorer *ex)
{
    char v[64];
    int64_t end = ex->clk.wall_ms - 1000;
    explore_kind k = ex->cfg->kinds[0];

    if (k == EXPLORE_TOKEN || k == EXPLORE_GET_THEN_DEL
        || k == EXPLORE_SETNX_EXPIRE) {
        snprintf(v, sizeof(v), "%s", "dead-holder");
        ctl_ok(redisCommand(ex->ctl, "SET %s %s PX %lld", ex->cfg->key, v,
                            (long long)ex->cfg->ttl_ms),
               ex);
    } else if (ex->cfg->unit == TSLOCK_UNIT_S)
        snprintf(v, sizeof(v), "%" PRId64, end / 1000 - 1);
    else if (ex->cfg->unit == TSLOCK_UNIT_FLOAT)
        snprintf(v, sizeof(v), "%" PRId64 ".5", end / 1000 - 1);
    else
        snprintf(v, sizeof(v), "%" PRId64, end);
    if (v[0] != 'd')
        ctl_ok(redisCommand(ex->ctl, "SET %s %s", ex->cfg->key, v), ex);
    snprintf(ex->value, sizeof(ex->value), "%s", v);
    ex->pttl = v[0] == 'd' ? ex->cfg->ttl_ms : -1;
    ex->writer = -2;
}

static unsigned enabled_set(explorer *ex, unsigned *readonly, unsigned *hold)
{
    unsigned e = 0, ro = 0, h = 0;
    int i, any_live = 0;

    for (i = 0; i < ex->n; i++) {
        slot *s = &ex->slots[i];
        if (s->crashed || s->at == S_DONE)
            continue;
        any_live = 1;
        e |= 1u << i;
        if (s->at == S_HOLD)
            h |= 1u << i;
        else if (pending_read_only(s))
            ro |= 1u << i;
        if (ex->cfg->crash && !ex->crash_used)
            e |= 1u << CH_CRASH(i);
    }
    if (any_live && ex->cfg->clock && !ex->clock_used)
        e |= 1u << CH_CLOCK;
    *readonly = ro;
    *hold = h;
    return e;
}

/*
 * Two choices are independent when they commute: steps of two clients
 * that both only read, or a client leaving its critical section (which
 * sends nothing) and any step of another client.
 */
static int independent(const explorer *ex, const frame *f, int a, int b)
{
    int ra, rb;

    if (a >= MAX_SLOTS || b >= MAX_SLOTS || a == b)
        return 0;
    ra = f->readonly >> a & 1;
    rb = f->readonly >> b & 1;
    /*
     * Beside a legacy client, whether its write destroyed a live hold
     * (and so who is blamed) depends on whether the holder had left its
     * critical section: there, leaving commutes only with reads.
     */
    if ((f->hold >> a & 1) || (f->hold >> b & 1))
        return !ex->mixed || ra || rb;
    return ra && rb;
}

static void settle_all(explorer *ex)
{
    int i;

    for (i = 0; i < ex->n; i++)
        if (!ex->slots[i].crashed)
            ex->slots[i].at = relay_settle(&ex->slots[i]);
}

/* Run choice c; record it as a step. */
static void apply(explorer *ex, int c)
{
    step_rec *st;
    int i;

    if (c == CH_CLOCK) {
        st = new_step(ex, "--");
        snprintf(st->what, sizeof(st->what), "clock +%" PRId64 " ms",
                 ex->cfg->ttl_ms + 3000);
        ex->clock_used = 1;
        ex->pass_at = ex->n_steps;
        clock_pass(ex);
        sync_clocks(ex);
        for (i = 0; i < ex->n; i++)
            ex->slots[i].prepass =
                ex->slots[i].fresh && ex->slots[i].at == S_RUNNING;
        note_value(ex, -1);
    } else if (c >= CH_CRASH(0)) {
        slot *s = &ex->slots[c - CH_CRASH(0)];
        char pend[64];
        st = new_step(ex, s->name);
        describe_pending(s, pend, sizeof(pend));
        snprintf(st->what, sizeof(st->what), "dies%s%.40s",
                 s->at == S_HOLD ? " holding" : " before ",
                 s->at == S_HOLD ? "" : pend);
        s->crashed = 1;
        ex->crash_used = 1;
    } else {
        slot *s = &ex->slots[c];
        st = new_step(ex, s->name);
        if (s->at == S_HOLD) {
            snprintf(st->what, sizeof(st->what), "(leaves critical section)");
            s->believes = 0;
            s->in_release = 1;
            pthread_mutex_lock(&ex->mu);
            s->hold_go = 1;
            s->state = S_RUNNING;
            pthread_cond_broadcast(&ex->cv);
            pthread_mutex_unlock(&ex->mu);
        } else {
            describe_pending(s, st->what, sizeof(st->what));
            if (s->fresh && !s->in_release && ex->pass_at >= 0 && !s->prepass)
                s->after_pass = 1;
            s->fresh = s->prepass = 0;
            relay_forward(s);
        }
        s->at = relay_settle(s);
        /* A NOSCRIPT fallback belongs to the EVALSHA before it. */
        while (s->at == S_RUNNING && s->n_cmds == 1
               && strcmp(s->cmds[0], "EVAL") == 0
               && strcmp(s->last_cmd, "EVALSHA") == 0) {
            relay_forward(s);
            s->at = relay_settle(s);
        }
        /* Only a step that may write can change the key. */
        if (s->wrote)
            note_value(ex, c);
        s->wrote = 0;
        take_events(ex, s, st);
    }
    snprintf(st->value, sizeof(st->value), "%s",
             ex->value[0] ? ex->value : "(nil)");
    st->pttl = ex->value[0] ? ex->pttl : -2;
    st->clock_ms = ex->clk.wall_ms - ex->t0;
    check_exclusion(ex);
}

/* Start a schedule: flushed server, reset clock, every client at its
 * first command. */
static void reset(explorer *ex)
{
    int i;

    ctl_ok(redisCommand(ex->ctl, "FLUSHALL"), ex);
    th_clock_init(&ex->clk);
    sync_clocks(ex);
    ex->t0 = ex->clk.wall_ms;
    ex->pttl = -2;
    ex->clock_used = ex->crash_used = 0;
    ex->pass_at = -1;
    ex->value[0] = '\0';
    ex->writer = -1;
    ex->n_hist = 0;
    ex->legacy_damage = ex->violated = ex->violation_legacy = 0;
    ex->why[0] = '\0';
    ex->n_steps = 0;
    if (ex->cfg->dead)
        plant_dead(ex);
    for (i = 0; i < ex->n; i++) {
        slot *s = &ex->slots[i];
        s->believes = s->crashed = s->in_release = 0;
        s->after_pass = s->prepass = s->wrote = 0;
        s->own[0] = '\0';
        s->lease_end = 0;
        s->n_ev = s->seen_ev = 0;
        s->fresh = 1;
        s->nv.value[0] = '\0';
        if (s->tc != NULL)
            s->tc->rng = UINT64_C(0x9e3779b97f4a7c15) * (uint64_t)(i + 1);
        s->lg.rng = UINT64_C(0x2545f4914f6cdd1d) * (uint64_t)(i + 1);
        atomic_store(&s->hooks, 0);
        kick(s, 0);
    }
    settle_all(ex);
}

/* Let every client finish, unscheduled, so the next schedule starts
 * clean; crashed ones too (their commands no longer matter). */
static void finish(explorer *ex)
{
    int i;

    for (i = 0; i < ex->n; i++)
        passthrough(&ex->slots[i]);
}

/* Whether choosing c at f switches away from a client that could go on. */
static int is_preemption(const frame *f, int c)
{
    return c < MAX_SLOTS && f->last >= 0 && c != f->last
           && (f->full >> f->last & 1);
}

/* The property a violation's description names. */
static int violation_kind(const char *why)
{
    if (strncmp(why, "mutual", 6) == 0)
        return EXPLORE_V_EXCLUSION;
    if (strncmp(why, "foreign", 7) == 0)
        return EXPLORE_V_FOREIGN;
    if (strncmp(why, "untruthful", 10) == 0)
        return strstr(why, "told lost") != NULL ? EXPLORE_V_TOLD_LOST
                                                : EXPLORE_V_UNTRUTHFUL;
    if (strncmp(why, "liveness", 8) == 0)
        return EXPLORE_V_LIVENESS;
    return EXPLORE_V_ERROR;
}

/*
 * Everyone is done and nobody crashed, yet the key still holds a value
 * whose lease runs: nobody holds the lock until that lease ends.  Not a
 * violation (exclusion holds, and the lease bounds the wait), but worth
 * naming.
 */
static int is_orphan(explorer *ex)
{
    const slot *w;

    if (ex->crash_used || ex->value[0] == '\0' || ex->writer < 0)
        return 0;
    w = &ex->slots[ex->writer];
    return ex->clk.wall_ms <= w->lease_end;
}

static int lowest(unsigned m)
{
    int i;

    for (i = 0; i < N_CHOICES; i++)
        if (m >> i & 1)
            return i;
    return -1;
}

/* ---------------------------------------------------------- explore */

static void explore_run(explorer *ex)
{
    explore_result *res = ex->res;
    int d, complete;

    ex->prefix = 0;
    for (;;) {
        reset(ex);
        complete = 0;
        for (d = 0;; d++) {
            unsigned ro, hold, e = enabled_set(ex, &ro, &hold), full = e;
            frame *f = &ex->fr[d];
            int c, last = -1, used = 0;

            if (d >= MAX_DEPTH || d >= ex->cfg->max_depth) {
                res->bounded = 1;
                d--; /* backtrack from the last frame this run set */
                break;
            }
            /*
             * The preemption bound (CHESS): past it, the client that took
             * the last step keeps going while it can; events may still
             * come.
             */
            if (d > 0) {
                const frame *p = &ex->fr[d - 1];
                last = p->cur < MAX_SLOTS ? p->cur : p->last;
                used = p->preempt + is_preemption(p, p->cur);
            }
            if (ex->cfg->preemptions >= 0 && used >= ex->cfg->preemptions
                && last >= 0 && (e >> last & 1))
                e &= 1u << last | ~((1u << MAX_SLOTS) - 1);
            if (d < ex->prefix) {
                if (e != f->enabled)
                    die("schedule did not replay: depth %d enabled %x, "
                        "was %x",
                        d, e, f->enabled);
                c = f->cur;
            } else {
                f->enabled = e;
                f->full = full;
                f->last = last;
                f->preempt = used;
                f->readonly = ro;
                f->hold = hold;
                f->done = 0;
                f->sleep = 0;
                /* Sleep sets and a preemption bound do not mix soundly;
                 * a bounded search goes without them. */
                if (d > 0 && ex->cfg->preemptions < 0) {
                    const frame *p = &ex->fr[d - 1];
                    unsigned cand = p->sleep | (p->done & ~(1u << p->cur));
                    int t;
                    for (t = 0; t < N_CHOICES; t++)
                        if ((cand >> t & 1) && independent(ex, p, t, p->cur))
                            f->sleep |= 1u << t;
                    f->sleep &= e;
                }
                if (e == 0) {
                    complete = 1;
                    break;
                }
                c = lowest(e & ~f->sleep);
                if (c < 0) {
                    res->pruned++;
                    break; /* every way on was explored elsewhere */
                }
                f->cur = c;
                f->done |= 1u << c;
            }
            apply(ex, c);
        }
        if (complete) {
            int which = -1, all = ex->n_steps, k;
            res->schedules++;
            if (ex->violated) {
                which = ex->violation_legacy ? 1 : 0;
                if (ex->violation_legacy)
                    res->legacy_violations++;
                else {
                    res->violations++;
                    res->by_kind[violation_kind(ex->why)]++;
                }
            } else if (is_orphan(ex)) {
                which = 2;
                res->orphans++;
                snprintf(ex->why, sizeof(ex->why),
                         "orphan: everyone is done, yet the key holds %s "
                         "until its lease ends",
                         ex->value);
            }
            /* A counterexample ends at the step that broke the property. */
            if (which >= 0 && which < 2)
                ex->n_steps = ex->violated_at;
            if (which >= 0
                && (ex->best_n[which] == 0
                    || ex->n_steps < ex->best_n[which])) {
                ex->best_n[which] = ex->n_steps;
                for (k = 0; k < all && k < d && k < MAX_DEPTH; k++)
                    ex->best_ch[which][k] = ex->fr[k].cur;
                ex->best_nch[which] = k;
                memcpy(ex->best[which], ex->steps,
                       sizeof(step_rec) * (size_t)ex->n_steps);
                snprintf(ex->best_why[which], sizeof(ex->best_why[0]), "%s",
                         ex->why);
            }
        }
        finish(ex);
        if (ex->cfg->max_schedules > 0
            && res->schedules + res->pruned >= ex->cfg->max_schedules) {
            res->bounded = 1;
            break;
        }
        /* Backtrack to the deepest frame with a way not yet taken. */
        for (d = (d < MAX_DEPTH ? d : MAX_DEPTH - 1); d >= 0; d--) {
            frame *f = &ex->fr[d];
            unsigned left = f->enabled & ~f->sleep & ~f->done;
            if (left != 0) {
                f->cur = lowest(left);
                f->done |= 1u << f->cur;
                ex->prefix = d + 1;
                break;
            }
        }
        if (d < 0)
            break;
    }
}

static void print_steps(const explorer *ex, int which, int *n, char *why,
                        size_t why_size, char *buf, size_t size)
{
    size_t used = 0;
    int k;

    *n = ex->best_n[which];
    snprintf(why, why_size, "%s", ex->best_why[which]);
    buf[0] = '\0';
    for (k = 0; k < *n && used + 1 < size; k++) {
        const step_rec *st = &ex->best[which][k];
        used += (size_t)snprintf(
            buf + used, size - used, "  %2d. %-3s %-26s -> %s%s%s%s\n", k + 1,
            st->actor, st->what, st->value, st->note[0] ? "  (" : "", st->note,
            st->note[0] ? ")" : "");
    }
}

/* The steps and choices of counterexample which, for the page. */
static void keep_example(const explorer *ex, int which, explore_result *res)
{
    int k;

    for (k = 0; k < ex->best_n[which] && k < EXPLORE_MAX_STEPS; k++) {
        const step_rec *st = &ex->best[which][k];
        explore_step *o = &res->example[which][k];
        memcpy(o->actor, st->actor, sizeof(o->actor));
        memcpy(o->what, st->what, sizeof(o->what));
        memcpy(o->value, st->value, sizeof(o->value));
        memcpy(o->note, st->note, sizeof(o->note));
        o->pttl = st->pttl;
        o->clock_ms = st->clock_ms;
    }
    for (k = 0; k < ex->best_nch[which] && k < EXPLORE_MAX_STEPS; k++)
        res->choices[which][k] = ex->best_ch[which][k];
    res->n_choices[which] = k;
}

/* An explorer for cfg, its clients connected and waiting; never NULL. */
static explorer *explorer_open(const explore_config *cfg, const char *upstream,
                               const char *ctl_socket, explore_result *res)
{
    explorer *ex = calloc(1, sizeof(*ex));
    int i;

    if (ex == NULL)
        die("out of memory");
    memset(res, 0, sizeof(*res));
    res->diverged = -1;
    ex->cfg = cfg;
    ex->res = res;
    ex->upstream = upstream;
    ex->n = cfg->n_clients;
    pthread_mutex_init(&ex->mu, NULL);
    pthread_cond_init(&ex->cv, NULL);
    ex->ctl = redisConnectUnix(ctl_socket);
    if (ex->ctl == NULL || ex->ctl->err)
        die("cannot connect to %s", ctl_socket);
    th_clock_init(&ex->clk);
    res->start_ms = ex->clk.wall_ms;
    for (i = 0; i < ex->n; i++) {
        if (kind_is_tslock(cfg->kinds[i]))
            ex->mixed |= 1;
        else if (kind_is_legacy(cfg->kinds[i]))
            ex->mixed |= 2;
    }
    ex->mixed = ex->mixed == 3;
    for (i = 0; i < ex->n; i++)
        slot_open(ex, i, cfg->kinds[i]);
    return ex;
}

/* Close the clients and hand the examples over to res. */
static void explorer_close(explorer *ex, explore_result *res)
{
    int i, k;

    for (i = 0; i < ex->n; i++)
        slot_close(&ex->slots[i]);
    for (k = 0; k < 3; k++)
        print_steps(ex, k, res->n_steps + k, res->why[k], sizeof(res->why[k]),
                    res->steps[k], sizeof(res->steps[k]));
    keep_example(ex, 0, res);
    keep_example(ex, 1, res);
    redisFree(ex->ctl);
    pthread_mutex_destroy(&ex->mu);
    pthread_cond_destroy(&ex->cv);
    free(ex);
}

int explore(const explore_config *cfg, const char *upstream,
            const char *ctl_socket, explore_result *res)
{
    struct timespec t0, t1;
    explorer *ex;

    clock_gettime(CLOCK_MONOTONIC, &t0);
    ex = explorer_open(cfg, upstream, ctl_socket, res);
    explore_run(ex);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    res->seconds = (double)(t1.tv_sec - t0.tv_sec)
                   + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    res->exhausted = !res->bounded;
    explorer_close(ex, res);
    return 0;
}

/*
 * One schedule: the choices given while each is enabled, then the first
 * enabled choice, to the end.  The whole schedule is kept as example 0,
 * broken or not, so that the page shows where it ends.
 */
int explore_follow(const explore_config *cfg, const char *upstream,
                   const char *ctl_socket, const int *choices, int n,
                   explore_result *res)
{
    explorer *ex = explorer_open(cfg, upstream, ctl_socket, res);
    unsigned ro, hold, e;
    int d, c;

    reset(ex);
    for (d = 0; d < MAX_DEPTH && d < cfg->max_depth; d++) {
        e = enabled_set(ex, &ro, &hold);
        if (e == 0)
            break;
        if (d < n && (e >> choices[d] & 1))
            c = choices[d];
        else {
            if (d < n && res->diverged < 0)
                res->diverged = d;
            c = lowest(e);
        }
        ex->fr[d].cur = c;
        apply(ex, c);
    }
    res->schedules = 1;
    res->exhausted = d < MAX_DEPTH && d < cfg->max_depth;
    if (ex->violated) {
        res->violations = 1;
        res->by_kind[violation_kind(ex->why)]++;
        res->broke_at = ex->violated_at;
    }
    ex->best_n[0] = ex->n_steps;
    memcpy(ex->best[0], ex->steps, sizeof(step_rec) * (size_t)ex->n_steps);
    snprintf(ex->best_why[0], sizeof(ex->best_why[0]), "%s", ex->why);
    for (c = 0; c < d; c++)
        ex->best_ch[0][c] = ex->fr[c].cur;
    ex->best_nch[0] = d;
    finish(ex);
    explorer_close(ex, res);
    return 0;
}

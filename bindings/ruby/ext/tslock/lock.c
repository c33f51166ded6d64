/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lock.c - Tslock::Lock: one tslock_lock on a connection of its own.
 * Waits run without the GVL and end at once on Thread#raise, Thread#kill,
 * Timeout.timeout or Ctrl-C (the unblocking function calls
 * tslock_lock_cancel()), leaving nothing held; a fork child forgets its
 * parent's connection and hold and connects again when first used.
 */
#include "rbtslock.h"

#include <errno.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* A marker for "the call did not run" (library codes are <= 0). */
#define NOT_RUN 1

static void lock_mark(void *p)
{
    rb_gc_mark(((rbt_lock *)p)->client);
}

static void lock_free(void *p)
{
    rbt_lock *l = p;

    if (l->pid == getpid()) {
        if (l->wd != NULL)
            (void)rbt_watchdog_stop(l);
    } else {
        rbt_watchdog_forget(l);
    }
    tslock_client_free(l->wd_conn);
    /* Not released: a hold left to the GC runs out with its lease. */
    tslock_lock_free(l->lock);
    tslock_client_free(l->conn);
    if (l->loss_pipe[0] >= 0) {
        close(l->loss_pipe[0]);
        close(l->loss_pipe[1]);
    }
    xfree(l->name);
    xfree(l->opts.dialect);
    xfree(l);
}

static size_t lock_size(const void *p)
{
    (void)p;
    return sizeof(rbt_lock);
}

static const rb_data_type_t lock_type = {
    "Tslock::Lock",
    {lock_mark, lock_free, lock_size, NULL, {NULL}},
    NULL,
    NULL,
    0,
};

static VALUE lock_alloc(VALUE klass)
{
    rbt_lock *l;
    VALUE obj = TypedData_Make_Struct(klass, rbt_lock, &lock_type, l);

    l->client = Qnil;
    l->loss_pipe[0] = l->loss_pipe[1] = -1;
    return obj;
}

static rbt_lock *lock_get(VALUE self)
{
    rbt_lock *l = rb_check_typeddata(self, &lock_type);

    if (l->name == NULL)
        rb_raise(rb_eRuntimeError, "Tslock::Lock not initialized");
    return l;
}

static int64_t mono_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Apply the stored options to a fresh tslock_lock. */
static int apply_opts(rbt_lock *l)
{
    const rbt_opts *o = &l->opts;
    tslock_lock *k = l->lock;
    int rc = tslock_lock_set_scheme(k, (tslock_scheme)o->scheme);

    if (rc == TSLOCK_OK)
        rc = tslock_lock_set_ttl(k, o->ttl_ms);
    if (rc == TSLOCK_OK && o->unit >= 0)
        rc = tslock_lock_set_unit(k, (tslock_unit)o->unit);
    if (rc == TSLOCK_OK && o->dialect != NULL)
        rc = tslock_lock_set_dialect(k, o->dialect);
    if (rc == TSLOCK_OK && o->fencing)
        rc = tslock_lock_set_fencing(k, 1);
    if (rc == TSLOCK_OK && o->reentrant)
        rc = tslock_lock_set_reentrant(k, 1);
    if (rc == TSLOCK_OK && o->wakeup >= 0)
        rc = tslock_lock_set_wakeup(k, o->wakeup);
    if (rc == TSLOCK_OK && o->rw != TSLOCK_RW_OFF)
        rc = tslock_lock_set_rw(k, (tslock_rw)o->rw);
    if (rc == TSLOCK_OK && o->permits > 0)
        rc = tslock_lock_set_permits(k, o->permits);
    if (rc == TSLOCK_OK && o->fair)
        rc = tslock_lock_set_fair(k, 1);
    if (rc == TSLOCK_OK && o->retry_min > 0)
        rc = tslock_lock_set_retry(k, o->retry_min, o->retry_max);
    if (rc == TSLOCK_OK && o->grace_ms >= 0)
        rc = tslock_lock_set_takeover_grace(k, o->grace_ms);
    if (rc == TSLOCK_OK && o->margin_ms >= 0)
        rc = tslock_lock_set_release_margin(k, o->margin_ms);
    return rc;
}

/* A new unconnected client and lock with the options; raises on error. */
static void make_lock(rbt_lock *l)
{
    char detail[512];
    int rc;

    tslock_lock_free(l->lock);
    tslock_client_free(l->conn);
    l->lock = NULL;
    l->connected = 0;
    if ((rc = tslock_client_new(&l->conn)) != TSLOCK_OK)
        rbt_raise(rc, "new client");
    if ((rc = tslock_lock_new(&l->lock, l->conn, l->name)) != TSLOCK_OK)
        rbt_raise(rc, "new lock");
    if ((rc = apply_opts(l)) != TSLOCK_OK) {
        snprintf(detail, sizeof(detail), "%s", tslock_client_errstr(l->conn));
        rbt_raise(rc, detail);
    }
    l->pid = getpid();
}

/*
 * In a fork child the connection, the hold and the watchdog are the
 * parent's: forget them without sending anything (closing our copy of a
 * socket leaves the parent's open) and start again unconnected.
 */
static void check_fork(rbt_lock *l)
{
    if (l->pid == getpid())
        return;
    rbt_watchdog_forget(l);
    if (l->loss_pipe[0] >= 0) {
        close(l->loss_pipe[0]);
        close(l->loss_pipe[1]);
        l->loss_pipe[0] = l->loss_pipe[1] = -1;
    }
    l->busy = 0;
    make_lock(l);
}

struct connect_call {
    rbt_lock *l;
    int reconnect;
    int rc;
};

static void *connect_nogvl(void *p)
{
    struct connect_call *c = p;

    c->rc = c->reconnect ? tslock_client_reconnect(c->l->conn)
                         : rbt_client_connect(c->l->target, c->l->conn);
    return NULL;
}

static void raise_client(rbt_lock *l, int rc)
{
    char detail[512];

    snprintf(detail, sizeof(detail), "%s", tslock_client_errstr(l->conn));
    rbt_raise(rc, detail);
}

/* Check the fork, the other threads, and the connection before a call. */
static void enter(rbt_lock *l, int need_conn)
{
    struct connect_call c = {l, 0, TSLOCK_OK};

    check_fork(l);
    if (l->busy)
        rbt_raise(TSLOCK_ESTATE, "this Tslock::Lock is in use by another "
                                 "thread; give each thread its own");
    if (!need_conn)
        return;
    if (l->connected) {
        /* A broken connection is mended here unless a hold rides on it
         * (release and extend reconnect by themselves). */
        if (!tslock_client_is_broken(l->conn) || tslock_lock_is_held(l->lock))
            return;
        c.reconnect = 1;
    }
    l->busy = 1;
    rbt_nogvl(connect_nogvl, &c);
    l->busy = 0;
    if (c.rc == TSLOCK_OK) {
        l->connected = 1;
        return;
    }
    if (!c.reconnect) {
        char detail[512];

        snprintf(detail, sizeof(detail), "%s", tslock_client_errstr(l->conn));
        make_lock(l); /* a fresh client for the next try */
        rbt_raise(c.rc, detail);
    }
    raise_client(l, c.rc);
}

/* _setup(client, name, opts...) with the options in rbt_opts order. */
static VALUE lock_setup(int argc, VALUE *argv, VALUE self)
{
    rbt_lock *l = rb_check_typeddata(self, &lock_type);
    rbt_opts *o = &l->opts;

    if (argc != 15)
        rb_raise(rb_eArgError, "_setup: 15 arguments expected");
    if (l->name != NULL)
        rb_raise(rb_eRuntimeError, "Tslock::Lock already set up");
    l->target = rbt_client_get(argv[0]);
    l->client = argv[0];
    o->scheme = NUM2INT(argv[2]);
    o->ttl_ms = NUM2LL(argv[3]);
    o->unit = NUM2INT(argv[4]);
    if (!NIL_P(argv[5]))
        o->dialect = ruby_strdup(StringValueCStr(argv[5]));
    o->fencing = RTEST(argv[6]);
    o->fair = RTEST(argv[7]);
    o->reentrant = RTEST(argv[8]);
    o->wakeup = NIL_P(argv[9]) ? -1 : RTEST(argv[9]);
    o->rw = NUM2INT(argv[10]);
    o->permits = NUM2LL(argv[11]);
    o->retry_min = NIL_P(argv[12]) ? 0 : NUM2INT(rb_ary_entry(argv[12], 0));
    o->retry_max = NIL_P(argv[12]) ? 0 : NUM2INT(rb_ary_entry(argv[12], 1));
    o->grace_ms = NUM2LL(argv[13]);
    o->margin_ms = NUM2LL(argv[14]);
    l->name = ruby_strdup(StringValueCStr(argv[1]));
    make_lock(l);
    return self;
}

/* ------------------------------------------------------------ acquire */

struct acquire_call {
    tslock_lock *lock;
    int64_t wait_ms;
    int rc;
    volatile int ubf_fired;
};

static void *acquire_nogvl(void *p)
{
    struct acquire_call *a = p;

    a->rc = tslock_acquire(a->lock, a->wait_ms);
    return NULL;
}

/* Ruby's unblocking function: async-signal-safe, as the library's cancel. */
static void acquire_ubf(void *p)
{
    struct acquire_call *a = p;

    a->ubf_fired = 1;
    (void)tslock_lock_cancel(a->lock);
}

struct release_call {
    tslock_lock *lock;
    int rc;
};

static void *release_nogvl(void *p)
{
    struct release_call *r = p;

    r->rc = tslock_release(r->lock);
    return NULL;
}

static VALUE check_ints(VALUE unused)
{
    (void)unused;
    rb_thread_check_ints();
    return Qnil;
}

/*
 * Wait for the lock without the GVL.  An interrupt (Thread#raise, kill,
 * a signal) cancels the wait and is raised here; a lock taken just as it
 * came is released first, so the exception leaves nothing held.  A wait
 * canceled by nothing we raise (a stale cancel, Thread#wakeup, a trap
 * handler that returned) goes on for the time that is left.
 */
static int acquire_interruptibly(rbt_lock *l, int64_t wait_ms)
{
    int64_t deadline = wait_ms > 0 ? mono_ms() + wait_ms : 0;

    for (;;) {
        struct acquire_call a = {l->lock, wait_ms, NOT_RUN, 0};
        int state = 0;

        l->busy = 1;
        (void)rb_nogvl(acquire_nogvl, &a, acquire_ubf, &a,
                       RB_NOGVL_INTR_FAIL | RB_NOGVL_UBF_ASYNC_SAFE);
        l->busy = 0;
        (void)rb_protect(check_ints, Qnil, &state);
        if (state != 0) {
            if (a.rc == TSLOCK_OK) {
                struct release_call r = {l->lock, TSLOCK_OK};

                rbt_nogvl(release_nogvl, &r);
            }
            rb_jump_tag(state);
        }
        if (a.rc != NOT_RUN && a.rc != TSLOCK_ECANCELED)
            return a.rc;
        if (wait_ms > 0 && (wait_ms = deadline - mono_ms()) <= 0)
            wait_ms = 0;
    }
}

/* _acquire(wait_ms): true when held, false when busy; raises otherwise. */
static VALUE lock_acquire(VALUE self, VALUE wait)
{
    rbt_lock *l = lock_get(self);
    int rc;

    enter(l, 1);
    rc = acquire_interruptibly(l, NUM2LL(wait));
    if (rc == TSLOCK_OK)
        return Qtrue;
    if (rc == TSLOCK_EBUSY || rc == TSLOCK_EUNREADABLE)
        return Qfalse;
    raise_client(l, rc);
    return Qnil;
}

/* ------------------------------------------------------------ release */

static int release_code(rbt_lock *l)
{
    struct release_call r = {l->lock, TSLOCK_OK};
    int wd_rc = TSLOCK_OK;

    if (l->wd != NULL)
        wd_rc = rbt_watchdog_stop(l);
    if (!tslock_lock_is_held(l->lock))
        return wd_rc == TSLOCK_OK ? TSLOCK_ESTATE : wd_rc;
    l->busy = 1;
    rbt_nogvl(release_nogvl, &r);
    l->busy = 0;
    return r.rc;
}

static void raise_release(rbt_lock *l, int rc)
{
    char detail[512];

    if (rc == TSLOCK_ESTATE)
        snprintf(detail, sizeof(detail), "lock '%s' is not held", l->name);
    else if (l->wd_lost && l->wd_code == rc)
        snprintf(detail, sizeof(detail), "%s", l->wd_detail);
    else
        snprintf(detail, sizeof(detail), "%s", tslock_client_errstr(l->conn));
    rbt_raise(rc, detail);
}

/* unlock: release; LostError when the lease ran out or was taken over. */
static VALUE lock_unlock(VALUE self)
{
    rbt_lock *l = lock_get(self);
    int rc;

    enter(l, 0);
    if ((rc = release_code(l)) != TSLOCK_OK)
        raise_release(l, rc);
    return self;
}

static VALUE yield_self(VALUE self)
{
    return rb_yield(self);
}

/*
 * _synchronize(wait_ms): take the lock, yield, release.  The release
 * after a block that raised (or broke out) is quiet, so the block's own
 * exception goes on; after a block that ended normally a lost lock
 * raises LostError, since the block ran without mutual exclusion.
 */
static VALUE lock_synchronize(VALUE self, VALUE wait)
{
    rbt_lock *l;
    VALUE result;
    int state = 0, rc;

    if (lock_acquire(self, wait) != Qtrue) {
        l = lock_get(self);
        rbt_raise(TSLOCK_EBUSY, tslock_client_errstr(l->conn));
    }
    result = rb_protect(yield_self, self, &state);
    l = lock_get(self);
    check_fork(l);
    if (l->wd == NULL && !tslock_lock_is_held(l->lock)) {
        if (state != 0)
            rb_jump_tag(state);
        return result; /* the block unlocked it itself */
    }
    rc = release_code(l);
    if (state != 0)
        rb_jump_tag(state);
    if (rc != TSLOCK_OK)
        raise_release(l, rc);
    return result;
}

/* -------------------------------------------------------------- state */

struct time_left_call {
    tslock_lock *lock;
    int64_t ms;
    int rc;
};

static void *time_left_nogvl(void *p)
{
    struct time_left_call *t = p;

    t->rc = tslock_lock_time_left(t->lock, &t->ms);
    return NULL;
}

static void refuse_while_renewing(rbt_lock *l)
{
    if (l->wd != NULL)
        rbt_raise(TSLOCK_ESTATE, "the watchdog (renew:) keeps this lock "
                                 "renewed; unlock it first");
}

/* _time_left: ms left of our lease, nil when not ours any more. */
static VALUE lock_time_left(VALUE self)
{
    rbt_lock *l = lock_get(self);
    struct time_left_call t = {NULL, 0, TSLOCK_OK};

    enter(l, 0);
    refuse_while_renewing(l);
    if (!tslock_lock_is_held(l->lock))
        return Qnil;
    t.lock = l->lock;
    l->busy = 1;
    rbt_nogvl(time_left_nogvl, &t);
    l->busy = 0;
    if (t.rc == TSLOCK_ELOST)
        return Qnil;
    if (t.rc != TSLOCK_OK)
        raise_client(l, t.rc);
    return LL2NUM(t.ms);
}

/* owned?: held by this object and, by the server, still ours. */
static VALUE lock_owned_p(VALUE self)
{
    rbt_lock *l = lock_get(self);

    enter(l, 0);
    if (l->wd != NULL)
        return tslock_watchdog_status(l->wd) == TSLOCK_OK ? Qtrue : Qfalse;
    return NIL_P(lock_time_left(self)) ? Qfalse : Qtrue;
}

struct peek_call {
    tslock_lock *lock;
    char value[512];
    int64_t ttl;
    int rc;
};

static void *peek_nogvl(void *p)
{
    struct peek_call *k = p;

    k->rc = tslock_lock_peek(k->lock, k->value, sizeof(k->value), &k->ttl);
    return NULL;
}

/* peek: [value, ttl_ms] of the key now, whoever holds it. */
static VALUE lock_peek(VALUE self)
{
    rbt_lock *l = lock_get(self);
    struct peek_call k;

    enter(l, 1);
    memset(&k, 0, sizeof(k));
    k.lock = l->lock;
    if (l->wd != NULL) {
        /* The watchdog has the lock's connection: peek through a copy. */
        rbt_raise(TSLOCK_ESTATE, "peek while renewing: unlock first");
    }
    l->busy = 1;
    rbt_nogvl(peek_nogvl, &k);
    l->busy = 0;
    if (k.rc != TSLOCK_OK)
        raise_client(l, k.rc);
    return rb_ary_new_from_args(2, rb_str_new_cstr(k.value), LL2NUM(k.ttl));
}

struct extend_call {
    tslock_lock *lock;
    int64_t ms;
    int rc;
};

static void *extend_nogvl(void *p)
{
    struct extend_call *e = p;

    e->rc = tslock_extend(e->lock, e->ms);
    return NULL;
}

/* _extend(ms): the lease becomes ms from now; LostError when not ours. */
static VALUE lock_extend(VALUE self, VALUE ms)
{
    rbt_lock *l = lock_get(self);
    struct extend_call e = {NULL, NUM2LL(ms), TSLOCK_OK};

    enter(l, 0);
    refuse_while_renewing(l);
    if (!tslock_lock_is_held(l->lock))
        raise_release(l, TSLOCK_ESTATE);
    e.lock = l->lock;
    l->busy = 1;
    rbt_nogvl(extend_nogvl, &e);
    l->busy = 0;
    if (e.rc != TSLOCK_OK)
        raise_client(l, e.rc);
    return self;
}

struct count_call {
    tslock_lock *lock;
    int queue;
    int64_t n;
    int rc;
};

static void *count_nogvl(void *p)
{
    struct count_call *c = p;

    c->rc = c->queue ? tslock_lock_queue_length(c->lock, &c->n)
                     : tslock_lock_holders(c->lock, &c->n);
    return NULL;
}

static VALUE count(VALUE self, int queue)
{
    rbt_lock *l = lock_get(self);
    struct count_call c = {NULL, queue, 0, TSLOCK_OK};

    enter(l, 1);
    refuse_while_renewing(l);
    c.lock = l->lock;
    l->busy = 1;
    rbt_nogvl(count_nogvl, &c);
    l->busy = 0;
    if (c.rc != TSLOCK_OK)
        raise_client(l, c.rc);
    return LL2NUM(c.n);
}

static VALUE lock_holders(VALUE self)
{
    return count(self, 0);
}

static VALUE lock_queue_length(VALUE self)
{
    return count(self, 1);
}

/* held?: held by this object as far as its own operations know. */
static VALUE lock_held_p(VALUE self)
{
    rbt_lock *l = lock_get(self);

    check_fork(l);
    if (l->wd != NULL && tslock_watchdog_status(l->wd) != TSLOCK_OK)
        return Qfalse;
    return tslock_lock_is_held(l->lock) ? Qtrue : Qfalse;
}

/* fence: the fencing number of the hold, nil without one. */
static VALUE lock_fence(VALUE self)
{
    rbt_lock *l = lock_get(self);
    int64_t f;

    check_fork(l);
    f = tslock_lock_fence(l->lock);
    return f > 0 ? LL2NUM(f) : Qnil;
}

static VALUE lock_value(VALUE self)
{
    rbt_lock *l = lock_get(self);
    const char *v;

    check_fork(l);
    v = tslock_lock_value(l->lock);
    return v != NULL ? rb_str_new_cstr(v) : Qnil;
}

static VALUE lock_scheme_used(VALUE self)
{
    static const char *const names[] = {"auto", "timestamp", "token", "bridge"};
    rbt_lock *l = lock_get(self);
    unsigned s;

    check_fork(l);
    s = (unsigned)tslock_lock_scheme_used(l->lock);
    return s < 4 ? ID2SYM(rb_intern(names[s])) : Qnil;
}

static VALUE lock_dialect(VALUE self)
{
    rbt_lock *l = lock_get(self);
    const char *d;

    check_fork(l);
    d = tslock_lock_get_dialect(l->lock);
    return d != NULL ? rb_str_new_cstr(d) : Qnil;
}

static VALUE lock_expires_ms(VALUE self)
{
    rbt_lock *l = lock_get(self);

    check_fork(l);
    return LL2NUM(tslock_lock_expires_ms(l->lock));
}

static VALUE lock_name(VALUE self)
{
    return rb_str_new_cstr(lock_get(self)->name);
}

/* _renew(interval_ms): start the watchdog on a connection of its own. */
static VALUE lock_renew(VALUE self, VALUE interval)
{
    rbt_lock *l = lock_get(self);
    char detail[512] = "";
    int rc;

    enter(l, 0);
    if (l->wd != NULL)
        return self;
    rc = rbt_watchdog_start(l, NUM2LL(interval), detail, sizeof(detail));
    if (rc != TSLOCK_OK)
        rbt_raise(rc, detail);
    return self;
}

void rbt_init_lock(void)
{
    rbt_cLock = rb_define_class_under(rbt_mTslock, "Lock", rb_cObject);
    rb_define_alloc_func(rbt_cLock, lock_alloc);
    rb_define_private_method(rbt_cLock, "_setup", lock_setup, -1);
    rb_define_private_method(rbt_cLock, "_acquire", lock_acquire, 1);
    rb_define_private_method(rbt_cLock, "_synchronize", lock_synchronize, 1);
    rb_define_private_method(rbt_cLock, "_time_left", lock_time_left, 0);
    rb_define_private_method(rbt_cLock, "_extend", lock_extend, 1);
    rb_define_private_method(rbt_cLock, "_expires_ms", lock_expires_ms, 0);
    rb_define_private_method(rbt_cLock, "_renew", lock_renew, 1);
    rb_define_method(rbt_cLock, "unlock", lock_unlock, 0);
    rb_define_method(rbt_cLock, "owned?", lock_owned_p, 0);
    rb_define_method(rbt_cLock, "held?", lock_held_p, 0);
    rb_define_method(rbt_cLock, "peek", lock_peek, 0);
    rb_define_method(rbt_cLock, "holders", lock_holders, 0);
    rb_define_method(rbt_cLock, "queue_length", lock_queue_length, 0);
    rb_define_method(rbt_cLock, "fence", lock_fence, 0);
    rb_define_method(rbt_cLock, "value", lock_value, 0);
    rb_define_method(rbt_cLock, "scheme_used", lock_scheme_used, 0);
    rb_define_method(rbt_cLock, "dialect", lock_dialect, 0);
    rb_define_method(rbt_cLock, "name", lock_name, 0);
}

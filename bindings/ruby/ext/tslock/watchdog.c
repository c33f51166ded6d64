/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * watchdog.c - renew: for Tslock::Lock.  The library's watchdog renews
 * the hold from its own thread on a second connection; its loss callback
 * cannot run Ruby, so it writes one byte to a pipe that a Ruby thread
 * (Lock#_wait_loss, without the GVL) reads and turns into the user's
 * on_lost call.  Each renewal writes exactly one byte: 'L' when lost,
 * 'S' when stopped without a loss.
 */
#include "rbtslock.h"

#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static void on_failure(int code, const char *detail, void *userdata)
{
    rbt_lock *l = userdata;

    l->wd_code = code;
    snprintf(l->wd_detail, sizeof(l->wd_detail), "%s",
             detail != NULL ? detail : "");
    l->wd_lost = 1;
    (void)!write(l->loss_pipe[1], "L", 1);
}

struct wd_connect_call {
    rbt_lock *l;
    int rc;
};

static void *wd_connect_nogvl(void *p)
{
    struct wd_connect_call *c = p;

    if (tslock_client_is_broken(c->l->wd_conn))
        c->rc = tslock_client_reconnect(c->l->wd_conn);
    else
        c->rc = rbt_client_connect(c->l->target, c->l->wd_conn);
    return NULL;
}

int rbt_watchdog_start(rbt_lock *l, int64_t interval_ms, char *detail,
                       size_t size)
{
    int rc;

    if (!tslock_lock_is_held(l->lock)) {
        snprintf(detail, size, "renew: lock '%s' is not held", l->name);
        return TSLOCK_ESTATE;
    }
    if (l->loss_pipe[0] < 0 && pipe2(l->loss_pipe, O_CLOEXEC) != 0) {
        snprintf(detail, size, "renew: no pipe for the loss report");
        return TSLOCK_EIO;
    }
    if (l->wd_conn == NULL || tslock_client_is_broken(l->wd_conn)) {
        struct wd_connect_call c = {l, TSLOCK_OK};

        if (l->wd_conn == NULL
            && (rc = tslock_client_new(&l->wd_conn)) != TSLOCK_OK)
            return rc;
        rbt_nogvl(wd_connect_nogvl, &c);
        if (c.rc != TSLOCK_OK) {
            snprintf(detail, size, "renew: %s",
                     tslock_client_errstr(l->wd_conn));
            tslock_client_free(l->wd_conn);
            l->wd_conn = NULL;
            return c.rc;
        }
    }
    l->wd_lost = 0;
    l->wd_code = TSLOCK_OK;
    l->wd_detail[0] = '\0';
    rc = tslock_watchdog_start(&l->wd, l->lock, l->wd_conn, interval_ms,
                               on_failure, l);
    if (rc != TSLOCK_OK)
        snprintf(detail, size, "renew: %s", tslock_client_errstr(l->conn));
    return rc;
}

struct stop_call {
    tslock_watchdog *wd;
    int rc;
};

static void *stop_nogvl(void *p)
{
    struct stop_call *s = p;

    s->rc = tslock_watchdog_stop(s->wd);
    return NULL;
}

int rbt_watchdog_stop(rbt_lock *l)
{
    struct stop_call s = {l->wd, TSLOCK_OK};

    if (l->wd == NULL)
        return TSLOCK_OK;
    rbt_nogvl(stop_nogvl, &s);
    l->wd = NULL;
    /* Joined: no callback can come now, so one byte ends the renewal. */
    if (!l->wd_lost)
        (void)!write(l->loss_pipe[1], "S", 1);
    return s.rc;
}

void rbt_watchdog_forget(rbt_lock *l)
{
    /* The parent's thread does not exist here; its memory is left. */
    l->wd = NULL;
    tslock_client_free(l->wd_conn);
    l->wd_conn = NULL;
}

struct loss_wait {
    int fd;
    char byte;
    volatile int interrupted;
};

static void *loss_wait_nogvl(void *p)
{
    struct loss_wait *w = p;
    struct pollfd pfd = {w->fd, POLLIN, 0};

    while (!w->interrupted) {
        if (poll(&pfd, 1, 100) > 0) {
            if (read(w->fd, &w->byte, 1) == 1)
                break;
        }
    }
    return NULL;
}

static void loss_wait_ubf(void *p)
{
    ((struct loss_wait *)p)->interrupted = 1;
}

/* _wait_loss: nil when the renewal stopped, [code, detail] when lost. */
static VALUE lock_wait_loss(VALUE self)
{
    rbt_lock *l = rb_check_typeddata(self, RTYPEDDATA_TYPE(self));
    struct loss_wait w;

    if (l->loss_pipe[0] < 0)
        return Qnil;
    for (;;) {
        memset(&w, 0, sizeof(w));
        w.fd = l->loss_pipe[0];
        rb_thread_call_without_gvl(loss_wait_nogvl, &w, loss_wait_ubf, &w);
        if (w.byte == 'L')
            return rb_ary_new_from_args(2, INT2NUM(l->wd_code),
                                        rb_str_new_cstr(l->wd_detail));
        if (w.byte == 'S')
            return Qnil;
    }
}

void rbt_init_watchdog(void)
{
    rb_define_private_method(rbt_cLock, "_wait_loss", lock_wait_loss, 0);
}

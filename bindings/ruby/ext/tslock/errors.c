/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * errors.c - what every file of the extension shares, at the bottom: the
 * module and class handles, the exception hierarchy under Tslock::Error
 * (one class per family of library codes, each carrying the code and its
 * name, from libtslock's own table), and running a call without the GVL.
 * It calls no other file of the extension.
 */
#include "rbtslock.h"

#include <string.h>

VALUE rbt_mTslock, rbt_cClient, rbt_cLock, rbt_eError;

/* Codes run from 0 down to this; the table below is indexed by -code. */
#define MAX_CODES 64
static VALUE code_class[MAX_CODES];
static ID id_code, id_errname;

VALUE rbt_error_new(int code, const char *detail)
{
    VALUE klass = rbt_eError, exc, msg;

    if (code < 0 && -code < MAX_CODES && code_class[-code] != 0)
        klass = code_class[-code];
    if (detail != NULL && detail[0] != '\0')
        msg = rb_sprintf("%s (%s)", detail, tslock_errname(code));
    else
        msg =
            rb_sprintf("%s (%s)", tslock_strerror(code), tslock_errname(code));
    exc = rb_exc_new_str(klass, msg);
    rb_ivar_set(exc, id_code, INT2NUM(code));
    rb_ivar_set(exc, id_errname, rb_str_new_cstr(tslock_errname(code)));
    return exc;
}

void rbt_raise(int code, const char *detail)
{
    rb_exc_raise(rbt_error_new(code, detail));
}

/* Tslock.error_for(code, detail): the exception rbt_raise() would raise. */
static VALUE m_error_for(VALUE self, VALUE code, VALUE detail)
{
    (void)self;
    return rbt_error_new(NUM2INT(code),
                         NIL_P(detail) ? NULL : StringValueCStr(detail));
}

struct nogvl_call {
    void *(*fn)(void *);
    void *arg;
    int ran;
};

static void *nogvl_trampoline(void *p)
{
    struct nogvl_call *c = p;

    c->ran = 1;
    return c->fn(c->arg);
}

void rbt_nogvl(void *(*fn)(void *), void *arg)
{
    struct nogvl_call c = {fn, arg, 0};

    /*
     * With RB_NOGVL_INTR_FAIL a pending interrupt skips fn; it then runs
     * with the GVL held (one bounded round trip) rather than leave an
     * operation the caller has started half done.  No interrupt is
     * checked afterwards: the caller's state is updated first.
     */
    (void)rb_nogvl(nogvl_trampoline, &c, NULL, NULL, RB_NOGVL_INTR_FAIL);
    if (!c.ran)
        (void)fn(arg);
}

static VALUE define_error(const char *name, VALUE super)
{
    return rb_define_class_under(rbt_mTslock, name, super);
}

static void map_code(int code, VALUE klass)
{
    code_class[-code] = klass;
}

void rbt_init_errors(void)
{
    VALUE busy, conn, server;

    id_code = rb_intern("@code");
    id_errname = rb_intern("@errname");
    rbt_eError = define_error("Error", rb_eStandardError);
    rb_define_attr(rbt_eError, "code", 1, 0);
    rb_define_attr(rbt_eError, "errname", 1, 0);
    busy = define_error("BusyError", rbt_eError);
    map_code(TSLOCK_EBUSY, busy);
    map_code(TSLOCK_EUNREADABLE, define_error("UnreadableError", busy));
    map_code(TSLOCK_ELOST, define_error("LostError", rbt_eError));
    map_code(TSLOCK_EINVAL, define_error("InvalidError", rbt_eError));
    map_code(TSLOCK_ENOMEM, rb_eNoMemError);
    conn = define_error("ConnectionError", rbt_eError);
    map_code(TSLOCK_EIO, conn);
    map_code(TSLOCK_ETIMEDOUT, define_error("TimeoutError", conn));
    map_code(TSLOCK_EPROTO, define_error("ProtocolError", conn));
    map_code(TSLOCK_EAUTH, define_error("AuthError", conn));
    map_code(TSLOCK_ETLS, define_error("TLSError", conn));
    server = define_error("ServerError", rbt_eError);
    map_code(TSLOCK_ESERVER, server);
    map_code(TSLOCK_EWRONGTYPE, define_error("WrongTypeError", server));
    map_code(TSLOCK_ENOPERM, define_error("PermissionError", server));
    map_code(TSLOCK_ECLUSTER, define_error("ClusterError", server));
    map_code(TSLOCK_EREPLICAS, define_error("ReplicasError", server));
    map_code(TSLOCK_ENOQUORUM, define_error("QuorumError", server));
    map_code(TSLOCK_ECANCELED, define_error("CanceledError", rbt_eError));
    map_code(TSLOCK_EUNSUPPORTED, define_error("UnsupportedError", rbt_eError));
    map_code(TSLOCK_ESTATE, define_error("StateError", rbt_eError));
    map_code(TSLOCK_EHOOK, define_error("HookError", rbt_eError));
    map_code(TSLOCK_ECLOCK, define_error("ClockError", rbt_eError));
    rb_gc_register_address(&rbt_eError);
    rb_define_module_function(rbt_mTslock, "error_for", m_error_for, 2);
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * module.c - the Tslock module of the extension, at the top: it sets up
 * the exceptions (errors.c), the code constants, the dialect presets and
 * the library version, all from libtslock's own tables, then the client,
 * lock and watchdog classes.
 */
#include "rbtslock.h"

#include <string.h>

/* Tslock::CODES: {"EBUSY" => -1, ...} from the library's X-macro. */
static void init_codes(void)
{
    VALUE codes = rb_hash_new();

#define RBT_CODE(name, num, msg)                                               \
    rb_define_const(rbt_mTslock, #name, INT2NUM(num));                         \
    rb_hash_aset(codes, rb_str_new_cstr(#name), INT2NUM(num));
    TSLOCK_ERRNO_MAP(RBT_CODE)
#undef RBT_CODE
    rb_define_const(rbt_mTslock, "CODES", rb_obj_freeze(codes));
}

/* Tslock::DIALECTS: preset name => [format, library]. */
static void init_dialects(void)
{
    VALUE d = rb_hash_new();
    const char *name;
    size_t i;

    for (i = 0; (name = tslock_dialect_preset(i)) != NULL; i++) {
        const char *fmt = tslock_dialect_format(name);
        const char *lib = tslock_dialect_library(name);
        VALUE pair = rb_ary_new_from_args(
            2, rb_obj_freeze(rb_str_new_cstr(fmt ? fmt : "")),
            rb_obj_freeze(rb_str_new_cstr(lib ? lib : "")));

        rb_hash_aset(d, rb_obj_freeze(rb_str_new_cstr(name)),
                     rb_obj_freeze(pair));
    }
    rb_define_const(rbt_mTslock, "DIALECTS", rb_obj_freeze(d));
}

static VALUE m_library_version(VALUE self)
{
    (void)self;
    return rb_str_new_cstr(tslock_version());
}

/* Tslock.check_dialect(str): nil when valid, else the reason. */
static VALUE m_dialect_error(VALUE self, VALUE dialect)
{
    char err[256] = "";

    (void)self;
    if (tslock_dialect_check(StringValueCStr(dialect), err, sizeof(err))
        == TSLOCK_OK)
        return Qnil;
    return rb_str_new_cstr(err);
}

void Init_tslock_ext(void)
{
    rbt_mTslock = rb_define_module("Tslock");
    rbt_init_errors();
    init_codes();
    init_dialects();
    rb_define_module_function(rbt_mTslock, "library_version", m_library_version,
                              0);
    rb_define_module_function(rbt_mTslock, "dialect_error", m_dialect_error, 1);
    rbt_init_client();
    rbt_init_lock();
    rbt_init_watchdog();
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * errors.c - the error table, step names and the per-client detail
 * message.  Codes and messages come from one X-macro in tslock.h so they
 * cannot drift apart.
 */
#include <stdio.h>
#include <string.h>

#include "net.h"

const char *tslock_version(void)
{
    return TSLOCK_VERSION_STRING;
}

const char *tslock_strerror(int code)
{
    switch (code) {
#define ERRNO_MESSAGE(name, num, msg)                                          \
    case TSLOCK_##name:                                                        \
        return msg;
        TSLOCK_ERRNO_MAP(ERRNO_MESSAGE)
#undef ERRNO_MESSAGE
    }
    return "unknown tslock error";
}

const char *tslock_errname(int code)
{
    switch (code) {
#define ERRNO_NAME(name, num, msg)                                             \
    case TSLOCK_##name:                                                        \
        return "TSLOCK_" #name;
        TSLOCK_ERRNO_MAP(ERRNO_NAME)
#undef ERRNO_NAME
    }
    return "TSLOCK_UNKNOWN";
}

const char *tslock_step_name(tslock_step step)
{
    static const char *const names[] = {
#define STEP_NAME(name) #name,
        TSLOCK_STEP_MAP(STEP_NAME)
#undef STEP_NAME
    };
    if ((unsigned)step >= sizeof(names) / sizeof(names[0]))
        return "?";
    return names[step];
}

/*
 * Record the detail of a failure and return its code, so call sites read
 * `return tslock__fail(c, TSLOCK_EPROTO, "...", ...);`.
 */
int tslock__fail(tslock_client *c, int code, const char *fmt, ...)
{
    va_list ap;

    if (c == NULL)
        return code;
    va_start(ap, fmt);
    vsnprintf(c->errstr, sizeof(c->errstr), fmt, ap);
    va_end(ap);
    return code;
}

/*
 * Start a call with an empty detail, except on a broken client: every
 * call then returns TSLOCK_EIO, and the detail keeps saying why.
 */
void tslock__clear_error(tslock_client *c)
{
    if (c != NULL && !c->broken)
        c->errstr[0] = '\0';
}

int tslock__is_transient(const tslock_client *c, int rc)
{
    return (rc == TSLOCK_EIO || rc == TSLOCK_ETIMEDOUT)
           && c->transport != TRANSPORT_NONE && (c->broken || c->ctx == NULL);
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * push.c - what a reply read on the subscriber connection is: a release
 * message on a channel the waiter listens to, a (s)subscribe
 * confirmation, or the server ending a subscription.  Whatever comes
 * from the server (or a proxy before it) is judged on a redisReply
 * alone, so tests/fuzz/fuzz_push.c drives it without a connection.
 */
#include <string.h>

#include "proto.h"

/* Whether e is a bulk string equal to name, byte for byte. */
static int is_string(const redisReply *e, const char *name)
{
    size_t n = strlen(name);

    return e != NULL && e->type == REDIS_REPLY_STRING && e->str != NULL
           && e->len == n && memcmp(e->str, name, n) == 0;
}

static const struct {
    const char *name;
    enum tslock__push kind;
} kinds[] = {
    {"message", TSLOCK__PUSH_MESSAGE},
    {"smessage", TSLOCK__PUSH_MESSAGE},
    {"subscribe", TSLOCK__PUSH_SUBSCRIBE},
    {"ssubscribe", TSLOCK__PUSH_SSUBSCRIBE},
    {"unsubscribe", TSLOCK__PUSH_UNSUBSCRIBE},
    {"sunsubscribe", TSLOCK__PUSH_SUNSUBSCRIBE},
};

enum tslock__push tslock__push_kind(const redisReply *r,
                                    const char *const *channels, size_t n)
{
    size_t i;

    /* Every push tslock reads is [kind, channel, payload or count]. */
    if (r == NULL || r->type != REDIS_REPLY_ARRAY || r->elements != 3
        || r->element == NULL)
        return TSLOCK__PUSH_OTHER;
    for (i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
        if (is_string(r->element[0], kinds[i].name))
            break;
    if (i == sizeof(kinds) / sizeof(kinds[0]))
        return TSLOCK__PUSH_OTHER;
    if (kinds[i].kind != TSLOCK__PUSH_MESSAGE)
        return kinds[i].kind;
    /* A message counts only on a channel this waiter listens to. */
    for (; n > 0; n--)
        if (channels[n - 1] != NULL
            && is_string(r->element[1], channels[n - 1]))
            return TSLOCK__PUSH_MESSAGE;
    return TSLOCK__PUSH_OTHER;
}

int tslock__push_is(const redisReply *r, const char *kind, const char *channel)
{
    return r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements == 3
           && r->element != NULL && is_string(r->element[0], kind)
           && (channel == NULL || is_string(r->element[1], channel));
}

int tslock__push_on(const redisReply *r, const char *const *channels, size_t n)
{
    if (r == NULL || r->type != REDIS_REPLY_ARRAY || r->elements != 3
        || r->element == NULL)
        return 0;
    for (; n > 0; n--)
        if (channels[n - 1] != NULL
            && is_string(r->element[1], channels[n - 1]))
            return 1;
    return 0;
}

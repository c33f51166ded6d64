/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fuzz_push.c - what a waiter's subscriber connection reads: the
 * pub/sub pushes (message, smessage, subscribe, ssubscribe, unsubscribe,
 * sunsubscribe) and anything else a server or a proxy may send there,
 * malformed included, parsed by hiredis's reader and judged by
 * tslock__push_kind (proto/push.c), as the wait's drain and the
 * subscription's confirmations do (proto/wakeup.c).
 *
 * Input: byte 0 chooses which of the waiter's channels it listens to
 * (bit 0 its own wake channel, bit 1 the classic name: the key's
 * channel always), the rest is the stream the subscriber reads.
 * Properties: a kind other than OTHER comes only from a three-element
 * array whose first element is the kind's name, byte for byte; a
 * message only on a channel listened to, byte for byte (a channel with
 * a NUL inside is not the one before the NUL); the answer depends on
 * the reply alone (asked twice, the same); nothing crashes or leaks.
 */
#include <string.h>

#include "fuzz.h"
#include "proto.h"

#define MAX_STREAM (64 * 1024)

static const char *const listened[3] = {
    "{fuzz}:released", "{fuzz}:wake:0123456789abcdef0123456789abcdefs",
    "fuzz:released"};

/* Whether e is a string equal to name, byte for byte. */
static int names(const redisReply *e, const char *name)
{
    return e->type == REDIS_REPLY_STRING && e->len == strlen(name)
           && memcmp(e->str, name, e->len) == 0;
}

static void check(const redisReply *r, const char *const *ch, size_t n)
{
    enum tslock__push kind = tslock__push_kind(r, ch, n);
    static const char *const expect[] = {NULL,          "message",
                                         "subscribe",   "ssubscribe",
                                         "unsubscribe", "sunsubscribe"};
    size_t i;
    int ours = 0;

    FUZZ_CHECK(kind >= TSLOCK__PUSH_OTHER && kind <= TSLOCK__PUSH_SUNSUBSCRIBE);
    FUZZ_CHECK(tslock__push_kind(r, ch, n) == kind);
    /* The subscriber swap's questions (push_is, push_on) agree. */
    for (i = 1; i < sizeof(expect) / sizeof(expect[0]); i++)
        FUZZ_CHECK(!tslock__push_is(r, expect[i], NULL)
                   || (r->type == REDIS_REPLY_ARRAY && r->elements == 3
                       && names(r->element[0], expect[i])));
    FUZZ_CHECK(kind != TSLOCK__PUSH_MESSAGE || tslock__push_on(r, ch, n));
    for (i = 0; i < n; i++)
        FUZZ_CHECK(ch[i] == NULL || !tslock__push_is(r, "message", ch[i])
                   || kind == TSLOCK__PUSH_MESSAGE);
    i = 0;
    if (kind == TSLOCK__PUSH_OTHER)
        return;
    FUZZ_CHECK(r->type == REDIS_REPLY_ARRAY && r->elements == 3);
    if (kind != TSLOCK__PUSH_MESSAGE) {
        FUZZ_CHECK(names(r->element[0], expect[kind]));
        return;
    }
    FUZZ_CHECK(names(r->element[0], "message")
               || names(r->element[0], "smessage"));
    for (i = 0; i < n; i++)
        ours |= ch[i] != NULL && names(r->element[1], ch[i]);
    FUZZ_CHECK(ours);
    /* Listening to nothing, no message is ours. */
    FUZZ_CHECK(tslock__push_kind(r, NULL, 0) == TSLOCK__PUSH_OTHER);
}

/* Every reply and, one level down, every element as a reply of its own. */
static void check_all(const redisReply *r, const char *const *ch, size_t n)
{
    size_t i;

    check(r, ch, n);
    if (r->type == REDIS_REPLY_ARRAY)
        for (i = 0; i < r->elements; i++)
            check(r->element[i], ch, n);
}

/*
 * hiredis 0.14 allocates an array's element pointers as soon as it reads
 * "*N" (fuzz_reply.c says more): such inputs are skipped, not fuzzed.
 */
static int declares_huge_array(const uint8_t *p, size_t n)
{
    size_t i, j;
    long count;

    for (i = 0; i < n; i++) {
        if (p[i] != '*')
            continue;
        for (j = i + 1, count = 0; j < n && p[j] >= '0' && p[j] <= '9'; j++)
            if ((count = count * 10 + (p[j] - '0')) > 4096)
                return 1;
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *ch[3];
    redisReader *reader;
    void *r = NULL;
    int replies = 0;

    if (size < 1 || size > MAX_STREAM + 1
        || declares_huge_array(data + 1, size - 1))
        return 0;
    ch[0] = listened[0];
    ch[1] = (data[0] & 1) ? listened[1] : NULL;
    ch[2] = (data[0] & 2) ? listened[2] : NULL;
    reader = redisReaderCreate();
    FUZZ_CHECK(reader != NULL);
    redisReaderFeed(reader, (const char *)data + 1, size - 1);
    while (replies < 4096 && redisReaderGetReply(reader, &r) == REDIS_OK
           && r != NULL) {
        check_all(r, ch, 3);
        freeReplyObject(r);
        r = NULL;
        replies++;
    }
    redisReaderFree(reader);
    return 0;
}

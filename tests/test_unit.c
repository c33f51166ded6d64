/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_unit.c - tests that need no server: the error table, step names,
 * stamp parsing and formatting, and the reply shapes hiredis's reader
 * hands tslock from old servers, fed as raw RESP bytes; and the URL
 * parser (lib/url.c, as the tool calls it) on redis+sentinel:// URLs.
 */
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "cli.h"

#define N_ELEMS(a) (sizeof(a) / sizeof((a)[0]))

/* A string literal and its length, embedded NULs included. */
#define LIT(s) (s), (sizeof(s) - 1)

/*
 * Record one assertion with a message naming the case: table-driven tests
 * would otherwise report only the line of their loop.
 */
static void check_case(int ok, unsigned line, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

static void check_case(int ok, unsigned line, const char *fmt, ...)
{
    char msg[256];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    CU_assertImplementation(ok ? CU_TRUE : CU_FALSE, line, msg, __FILE__, "",
                            CU_FALSE);
}

#define CHECK_CASE(ok, ...) check_case((ok), __LINE__, __VA_ARGS__)

static const char *unit_name(tslock_unit unit)
{
    switch (unit) {
    case TSLOCK_UNIT_MS:
        return "ms";
    case TSLOCK_UNIT_S:
        return "s";
    case TSLOCK_UNIT_FLOAT:
        return "float";
    }
    return "bad unit";
}

/* ========================================================= error table */

struct errno_row {
    int code;
    const char *name;
    const char *msg;
};

/* The table as the header states it, so new codes are tested unasked. */
static const struct errno_row errno_rows[] = {
#define ERRNO_ROW(name, num, msg) {TSLOCK_##name, "TSLOCK_" #name, msg},
    TSLOCK_ERRNO_MAP(ERRNO_ROW)
#undef ERRNO_ROW
};

static void test_errno_strings(void)
{
    size_t i;

    for (i = 0; i < N_ELEMS(errno_rows); i++) {
        const struct errno_row *row = &errno_rows[i];
        const char *msg = tslock_strerror(row->code);
        const char *name = tslock_errname(row->code);

        CHECK_CASE(msg != NULL && strcmp(msg, row->msg) == 0,
                   "tslock_strerror(%s) is the table's message", row->name);
        CHECK_CASE(name != NULL && strcmp(name, row->name) == 0,
                   "tslock_errname(%d) is %s", row->code, row->name);
        CHECK_CASE(row->msg[0] != '\0', "%s has a message", row->name);
    }
}

static void test_errno_numbers(void)
{
    size_t i, j;

    CU_ASSERT_EQUAL(TSLOCK_OK, 0);
    CU_ASSERT_STRING_EQUAL(errno_rows[0].name, "TSLOCK_OK");
    for (i = 1; i < N_ELEMS(errno_rows); i++)
        CHECK_CASE(errno_rows[i].code < 0, "%s is negative",
                   errno_rows[i].name);
    for (i = 0; i < N_ELEMS(errno_rows); i++)
        for (j = i + 1; j < N_ELEMS(errno_rows); j++) {
            CHECK_CASE(errno_rows[i].code != errno_rows[j].code,
                       "%s and %s have distinct numbers", errno_rows[i].name,
                       errno_rows[j].name);
            CHECK_CASE(strcmp(errno_rows[i].msg, errno_rows[j].msg) != 0,
                       "%s and %s have distinct messages", errno_rows[i].name,
                       errno_rows[j].name);
        }
}

static void test_errno_unknown(void)
{
    int lowest = 0;
    int unknown[] = {1, 42, INT_MAX, INT_MIN, 0};
    size_t i;

    for (i = 0; i < N_ELEMS(errno_rows); i++)
        if (errno_rows[i].code < lowest)
            lowest = errno_rows[i].code;
    unknown[N_ELEMS(unknown) - 1] = lowest - 1;
    for (i = 0; i < N_ELEMS(unknown); i++) {
        CHECK_CASE(strcmp(tslock_strerror(unknown[i]), "unknown tslock error")
                       == 0,
                   "tslock_strerror(%d) is unknown", unknown[i]);
        CHECK_CASE(strcmp(tslock_errname(unknown[i]), "TSLOCK_UNKNOWN") == 0,
                   "tslock_errname(%d) is TSLOCK_UNKNOWN", unknown[i]);
    }
    for (i = 0; i < N_ELEMS(errno_rows); i++)
        CHECK_CASE(strcmp(errno_rows[i].msg, "unknown tslock error") != 0,
                   "%s is told apart from an unknown code", errno_rows[i].name);
}

/* ========================================================== step names */

struct step_row {
    tslock_step step;
    const char *name;
};

static const struct step_row step_rows[] = {
#define STEP_ROW(name) {TSLOCK_STEP_##name, #name},
    TSLOCK_STEP_MAP(STEP_ROW)
#undef STEP_ROW
};

static void test_step_names(void)
{
    size_t i;

    for (i = 0; i < N_ELEMS(step_rows); i++) {
        const char *name = tslock_step_name(step_rows[i].step);

        CHECK_CASE((size_t)step_rows[i].step == i, "TSLOCK_STEP_%s is %u",
                   step_rows[i].name, (unsigned)i);
        CHECK_CASE(name != NULL && strcmp(name, step_rows[i].name) == 0,
                   "tslock_step_name(TSLOCK_STEP_%s) is \"%s\"",
                   step_rows[i].name, step_rows[i].name);
    }
}

static void test_step_name_out_of_range(void)
{
    CU_ASSERT_STRING_EQUAL(tslock_step_name((tslock_step)N_ELEMS(step_rows)),
                           "?");
    CU_ASSERT_STRING_EQUAL(tslock_step_name((tslock_step)1000), "?");
    CU_ASSERT_STRING_EQUAL(tslock_step_name((tslock_step)-1), "?");
}

/* ========================================================= stamp_parse */

struct parse_case {
    const char *what;
    const char *text;
    size_t len;
    tslock_unit unit;
    int64_t want; /* for accepted cases */
};

static const struct parse_case parse_accepted[] = {
    {"ms stamp", LIT("1700000000001"), TSLOCK_UNIT_MS, 1700000000001},
    {"s stamp", LIT("1700000011"), TSLOCK_UNIT_S, 1700000011999},
    {"float stamp", LIT("1700000000.25"), TSLOCK_UNIT_FLOAT, 1700000000250},
    {"float, one decimal", LIT("1700000000.2"), TSLOCK_UNIT_FLOAT,
     1700000000200},
    {"float, three decimals", LIT("1700000000.250"), TSLOCK_UNIT_FLOAT,
     1700000000250},
    {"float written as an integer", LIT("1700000000"), TSLOCK_UNIT_FLOAT,
     1700000000000},
    {"float, long fraction truncated", LIT("1700000000.123456789"),
     TSLOCK_UNIT_FLOAT, 1700000000123},
    {"float, truncated not rounded", LIT("1700000000.9999"), TSLOCK_UNIT_FLOAT,
     1700000000999},
    /* A reply's bytes need not end where the value does. */
    {"len stops before later digits", "1700000000001999", 13, TSLOCK_UNIT_MS,
     1700000000001},
    /* The plausible range, 2000-01-01 and 2100-01-01 included. */
    {"ms, 2000-01-01", LIT("946684800000"), TSLOCK_UNIT_MS, 946684800000},
    {"ms, 2100-01-01", LIT("4102444800000"), TSLOCK_UNIT_MS, 4102444800000},
    {"s, 2000-01-01", LIT("946684800"), TSLOCK_UNIT_S, 946684800999},
    {"s, 2100-01-01", LIT("4102444800"), TSLOCK_UNIT_S, 4102444800999},
    {"float, 2000-01-01", LIT("946684800.000"), TSLOCK_UNIT_FLOAT,
     946684800000},
    {"float, 2100-01-01", LIT("4102444800.000"), TSLOCK_UNIT_FLOAT,
     4102444800000},
};

static void test_stamp_parse_accepts(void)
{
    size_t i;

    for (i = 0; i < N_ELEMS(parse_accepted); i++) {
        const struct parse_case *c = &parse_accepted[i];
        int64_t got = -1;
        int rc = tslock_stamp_parse(c->text, c->len, c->unit, &got);

        CHECK_CASE(rc == TSLOCK_OK, "%s (%s): accepted, got %s", c->what,
                   unit_name(c->unit), tslock_errname(rc));
        CHECK_CASE(rc != TSLOCK_OK || got == c->want,
                   "%s (%s): %lld, want %lld", c->what, unit_name(c->unit),
                   (long long)got, (long long)c->want);
    }
}

static const struct parse_case parse_rejected[] = {
    {"empty", LIT(""), TSLOCK_UNIT_MS, 0},
    {"empty", LIT(""), TSLOCK_UNIT_S, 0},
    {"empty", LIT(""), TSLOCK_UNIT_FLOAT, 0},
    {"leading space", LIT(" 1700000000001"), TSLOCK_UNIT_MS, 0},
    {"trailing space", LIT("1700000000001 "), TSLOCK_UNIT_MS, 0},
    {"trailing newline", LIT("1700000000001\n"), TSLOCK_UNIT_MS, 0},
    {"plus sign", LIT("+1700000000001"), TSLOCK_UNIT_MS, 0},
    {"minus one", LIT("-1"), TSLOCK_UNIT_MS, 0},
    {"negative stamp", LIT("-1700000000001"), TSLOCK_UNIT_MS, 0},
    {"negative float", LIT("-1700000000.5"), TSLOCK_UNIT_FLOAT, 0},
    {"exponent", LIT("1e3"), TSLOCK_UNIT_MS, 0},
    {"exponent", LIT("1.7e12"), TSLOCK_UNIT_MS, 0},
    {"exponent", LIT("1.7e9"), TSLOCK_UNIT_FLOAT, 0},
    {"hex", LIT("0x10"), TSLOCK_UNIT_MS, 0},
    {"trailing garbage", LIT("1700000000001abc"), TSLOCK_UNIT_MS, 0},
    {"20 digits", LIT("99999999999999999999"), TSLOCK_UNIT_MS, 0},
    {"20 digits", LIT("99999999999999999999"), TSLOCK_UNIT_S, 0},
    {"20 digits", LIT("99999999999999999999"), TSLOCK_UNIT_FLOAT, 0},
    {"INT64_MAX + 1", LIT("9223372036854775808"), TSLOCK_UNIT_MS, 0},
    /* Each wraps to a plausible time if overflow goes unchecked. */
    {"wraps mod 2^64", LIT("18446745773709551617"), TSLOCK_UNIT_MS, 0},
    {"seconds * 1000 wraps", LIT("18446745773709552"), TSLOCK_UNIT_S, 0},
    /* 16 digits, within int64, but not once multiplied by 1000. */
    {"seconds * 1000 overflows", LIT("9223372036854776"), TSLOCK_UNIT_S, 0},
    {"seconds * 1000 overflows", LIT("9999999999999999"), TSLOCK_UNIT_FLOAT, 0},
    {"seconds * 1000 wraps", LIT("18446745773709552.5"), TSLOCK_UNIT_FLOAT, 0},
    /* "\000" is one NUL byte: an octal escape takes at most 3 digits. */
    {"embedded NUL", LIT("1700000\000000001"), TSLOCK_UNIT_MS, 0},
    {"trailing NUL", LIT("1700000000001\000"), TSLOCK_UNIT_MS, 0},
    {"leading NUL", LIT("\0001700000000001"), TSLOCK_UNIT_MS, 0},
    {"dot alone", LIT("."), TSLOCK_UNIT_MS, 0},
    {"dot alone", LIT("."), TSLOCK_UNIT_S, 0},
    {"dot alone", LIT("."), TSLOCK_UNIT_FLOAT, 0},
    {"no fraction after dot", LIT("1700000000."), TSLOCK_UNIT_FLOAT, 0},
    {"no integer before dot", LIT(".5"), TSLOCK_UNIT_FLOAT, 0},
    {"two dots", LIT("1700000000.1.2"), TSLOCK_UNIT_FLOAT, 0},
    {"float in ms unit", LIT("1700000000001.5"), TSLOCK_UNIT_MS, 0},
    {"float in s unit", LIT("1700000000001.5"), TSLOCK_UNIT_S, 0},
    {"float in s unit", LIT("1700000000.5"), TSLOCK_UNIT_S, 0},
    {"s stamp read as ms (1970)", LIT("1700000011"), TSLOCK_UNIT_MS, 0},
    {"ms stamp read as s", LIT("1700000000001"), TSLOCK_UNIT_S, 0},
    {"ms stamp read as float", LIT("1700000000001"), TSLOCK_UNIT_FLOAT, 0},
    {"epoch", LIT("0"), TSLOCK_UNIT_MS, 0},
    {"epoch", LIT("0"), TSLOCK_UNIT_S, 0},
    {"epoch", LIT("0"), TSLOCK_UNIT_FLOAT, 0},
    {"ms, just before 2000", LIT("946684799999"), TSLOCK_UNIT_MS, 0},
    {"ms, just after 2100", LIT("4102444800001"), TSLOCK_UNIT_MS, 0},
    {"s, just before 2000", LIT("946684799"), TSLOCK_UNIT_S, 0},
    {"s, just after 2100", LIT("4102444801"), TSLOCK_UNIT_S, 0},
    {"float, just before 2000", LIT("946684799.999"), TSLOCK_UNIT_FLOAT, 0},
    {"float, just after 2100", LIT("4102444800.001"), TSLOCK_UNIT_FLOAT, 0},
};

static void test_stamp_parse_rejects(void)
{
    size_t i;

    for (i = 0; i < N_ELEMS(parse_rejected); i++) {
        const struct parse_case *c = &parse_rejected[i];
        int64_t got = -1;
        int rc = tslock_stamp_parse(c->text, c->len, c->unit, &got);

        CHECK_CASE(rc == TSLOCK_EUNREADABLE,
                   "%s (%s): TSLOCK_EUNREADABLE, got %s (%lld)", c->what,
                   unit_name(c->unit), tslock_errname(rc), (long long)got);
    }
}

static void test_stamp_parse_bad_arguments(void)
{
    int64_t got;

    CU_ASSERT_EQUAL(tslock_stamp_parse(NULL, 0, TSLOCK_UNIT_MS, &got),
                    TSLOCK_EINVAL);
    CU_ASSERT_EQUAL(tslock_stamp_parse(NULL, 13, TSLOCK_UNIT_MS, &got),
                    TSLOCK_EINVAL);
    CU_ASSERT_EQUAL(
        tslock_stamp_parse(LIT("1700000000001"), TSLOCK_UNIT_MS, NULL),
        TSLOCK_EINVAL);
    /* Plausible in one known unit or another, but the unit is unknown. */
    CU_ASSERT_NOT_EQUAL(
        tslock_stamp_parse(LIT("1700000000001"), (tslock_unit)3, &got),
        TSLOCK_OK);
    CU_ASSERT_NOT_EQUAL(
        tslock_stamp_parse(LIT("1700000000"), (tslock_unit)3, &got), TSLOCK_OK);
}

/* ======================================================== stamp_format */

struct format_case {
    tslock_unit unit;
    int64_t now_ms;
    int64_t ttl_ms;
    const char *want;
};

static const struct format_case format_cases[] = {
    /* Milliseconds: expiry + 1. */
    {TSLOCK_UNIT_MS, 1700000000000, 30000, "1700000030001"},
    {TSLOCK_UNIT_MS, 1700000000999, 1, "1700000001001"},
    /* Seconds: floor(now) + ceil(ttl) + 1. */
    {TSLOCK_UNIT_S, 1700000000500, 1500, "1700000003"},
    {TSLOCK_UNIT_S, 1700000000000, 30000, "1700000031"},
    {TSLOCK_UNIT_S, 1700000000999, 1, "1700000002"},
    /* Float seconds: now + ttl, three decimals, no + 1. */
    {TSLOCK_UNIT_FLOAT, 1700000000000, 250, "1700000000.250"},
    {TSLOCK_UNIT_FLOAT, 1700000000123, 1000, "1700000001.123"},
    {TSLOCK_UNIT_FLOAT, 1700000000999, 1, "1700000001.000"},
};

static int all_bytes_are(const char *p, char byte, size_t len)
{
    while (len > 0 && *p == byte) {
        p++;
        len--;
    }
    return len == 0;
}

static void test_stamp_format_conventions(void)
{
    size_t i;

    for (i = 0; i < N_ELEMS(format_cases); i++) {
        const struct format_case *c = &format_cases[i];
        char buf[64];
        int rc;

        memset(buf, 'Z', sizeof(buf));
        rc = tslock_stamp_format(buf, 32, c->unit, c->now_ms, c->ttl_ms);
        CHECK_CASE(rc == (int)strlen(c->want) && strcmp(buf, c->want) == 0,
                   "format(%s, %lld, %lld) is \"%s\", got %d \"%.31s\"",
                   unit_name(c->unit), (long long)c->now_ms,
                   (long long)c->ttl_ms, c->want, rc, rc > 0 ? buf : "");
        CHECK_CASE(all_bytes_are(buf + 32, 'Z', sizeof(buf) - 32),
                   "format(%s) writes nothing past size", unit_name(c->unit));
    }
}

/*
 * How far past now + ttl a unit's stamp may lie: the +1 of the ms and s
 * conventions; in seconds also the rounding of now and ttl, and a stamp
 * S counting as valid through S.999.
 */
static int64_t format_slack_ms(tslock_unit unit)
{
    return unit == TSLOCK_UNIT_MS ? 1 : unit == TSLOCK_UNIT_S ? 2998 : 0;
}

static void check_round_trip(tslock_unit unit, int64_t now, int64_t ttl)
{
    char buf[32];
    int64_t got = -1;
    int n = tslock_stamp_format(buf, sizeof(buf), unit, now, ttl);
    int rc =
        n > 0 ? tslock_stamp_parse(buf, (size_t)n, unit, &got) : TSLOCK_EINVAL;

    CHECK_CASE(rc == TSLOCK_OK && got >= now + ttl
                   && got - (now + ttl) <= format_slack_ms(unit),
               "round trip %s now %lld ttl %lld: %.31s parses to %lld",
               unit_name(unit), (long long)now, (long long)ttl,
               n > 0 ? buf : "(none)", (long long)got);
    if (unit == TSLOCK_UNIT_MS)
        CHECK_CASE(got == now + ttl + 1, "ms round trip is expiry + 1");
}

static void test_stamp_format_round_trip(void)
{
    static const int64_t nows[] = {1700000000000, 1700000000001, 1700000000500,
                                   1700000000999};
    static const int64_t ttls[] = {1, 999, 1000, 1001, 30000, 86400000};
    static const tslock_unit units[] = {TSLOCK_UNIT_MS, TSLOCK_UNIT_S,
                                        TSLOCK_UNIT_FLOAT};
    size_t u, n, t;

    for (u = 0; u < N_ELEMS(units); u++)
        for (n = 0; n < N_ELEMS(nows); n++)
            for (t = 0; t < N_ELEMS(ttls); t++)
                check_round_trip(units[u], nows[n], ttls[t]);
}

static void test_stamp_format_bad_arguments(void)
{
    static const tslock_unit units[] = {TSLOCK_UNIT_MS, TSLOCK_UNIT_S,
                                        TSLOCK_UNIT_FLOAT};
    const int64_t now = 1700000000000;
    char buf[64];
    size_t u;

    for (u = 0; u < N_ELEMS(units); u++) {
        CHECK_CASE(tslock_stamp_format(buf, sizeof(buf), units[u], now, 0)
                       == TSLOCK_EINVAL,
                   "%s: ttl 0 is invalid", unit_name(units[u]));
        CHECK_CASE(tslock_stamp_format(buf, sizeof(buf), units[u], now, -1)
                       == TSLOCK_EINVAL,
                   "%s: negative ttl is invalid", unit_name(units[u]));
        CHECK_CASE(tslock_stamp_format(buf, 8, units[u], now, 30000)
                       == TSLOCK_EINVAL,
                   "%s: an 8-byte buffer is invalid", unit_name(units[u]));
        CHECK_CASE(tslock_stamp_format(buf, 0, units[u], now, 30000)
                       == TSLOCK_EINVAL,
                   "%s: a 0-byte buffer is invalid", unit_name(units[u]));
        CHECK_CASE(tslock_stamp_format(NULL, 32, units[u], now, 30000)
                       == TSLOCK_EINVAL,
                   "%s: a NULL buffer is invalid", unit_name(units[u]));
    }
    CU_ASSERT(tslock_stamp_format(buf, sizeof(buf), (tslock_unit)3, now, 30000)
              < 0);
}

/* ===================================================== reply handling */

/*
 * The reply hiredis's reader makes of bytes as a server sends them.  These
 * tests pin down the shapes tslock dispatches on, from servers of every
 * age, without one running.
 */
static redisReply *read_reply(const char *bytes, size_t len)
{
    redisReader *reader = redisReaderCreate();
    void *reply = NULL;

    CU_ASSERT_FATAL(reader != NULL);
    CU_ASSERT_EQUAL(redisReaderFeed(reader, bytes, len), REDIS_OK);
    CU_ASSERT_EQUAL(redisReaderGetReply(reader, &reply), REDIS_OK);
    redisReaderFree(reader);
    CU_ASSERT_FATAL(reply != NULL);
    return reply;
}

/* GET of a missing key: the lock is free. */
static void test_reply_nil_bulk(void)
{
    redisReply *r = read_reply(LIT("$-1\r\n"));

    CU_ASSERT_EQUAL(r->type, REDIS_REPLY_NIL);
    freeReplyObject(r);
}

/* EXEC after a WATCHed key changed: the transaction was aborted. */
static void test_reply_nil_array(void)
{
    redisReply *r = read_reply(LIT("*-1\r\n"));

    CU_ASSERT_EQUAL(r->type, REDIS_REPLY_NIL);
    freeReplyObject(r);
}

/* SETNX lost (0) or won (1); DEL removed nothing or the key. */
static void test_reply_integers(void)
{
    redisReply *r = read_reply(LIT(":0\r\n"));

    CU_ASSERT_EQUAL(r->type, REDIS_REPLY_INTEGER);
    CU_ASSERT_EQUAL(r->integer, 0);
    freeReplyObject(r);
    r = read_reply(LIT(":1\r\n"));
    CU_ASSERT_EQUAL(r->type, REDIS_REPLY_INTEGER);
    CU_ASSERT_EQUAL(r->integer, 1);
    freeReplyObject(r);
}

/* An EXEC that committed: one reply per queued command. */
static void test_reply_exec_committed(void)
{
    redisReply *r = read_reply(LIT("+QUEUED\r\n"));

    CU_ASSERT_EQUAL(r->type, REDIS_REPLY_STATUS);
    CU_ASSERT_STRING_EQUAL(r->str, "QUEUED");
    freeReplyObject(r);
    r = read_reply(LIT("*1\r\n:1\r\n"));
    CU_ASSERT_EQUAL_FATAL(r->type, REDIS_REPLY_ARRAY);
    CU_ASSERT_EQUAL_FATAL(r->elements, 1);
    CU_ASSERT_EQUAL(r->element[0]->type, REDIS_REPLY_INTEGER);
    CU_ASSERT_EQUAL(r->element[0]->integer, 1);
    freeReplyObject(r);
}

/*
 * Error replies arrive as replies whose text is the line without '-' and
 * CRLF; the first word tells a server without WATCH (< 2.2), a script
 * cache that lost our script, and a key of another type apart.
 */
static void test_reply_errors(void)
{
    static const struct {
        const char *bytes;
        const char *text;
        const char *first_word;
    } cases[] = {
        {"-ERR unknown command 'WATCH'\r\n", "ERR unknown command 'WATCH'",
         "ERR "},
        {"-NOSCRIPT No matching script. Please use EVAL.\r\n",
         "NOSCRIPT No matching script. Please use EVAL.", "NOSCRIPT "},
        {"-WRONGTYPE Operation against a key holding the wrong kind of "
         "value\r\n",
         "WRONGTYPE Operation against a key holding the wrong kind of value",
         "WRONGTYPE "},
    };
    size_t i;

    for (i = 0; i < N_ELEMS(cases); i++) {
        redisReply *r = read_reply(cases[i].bytes, strlen(cases[i].bytes));

        CHECK_CASE(r->type == REDIS_REPLY_ERROR, "%s is an error reply",
                   cases[i].text);
        CHECK_CASE((size_t)r->len == strlen(cases[i].text)
                       && strcmp(r->str, cases[i].text) == 0,
                   "error text is \"%s\"", cases[i].text);
        CHECK_CASE(
            strncmp(r->str, cases[i].first_word, strlen(cases[i].first_word))
                == 0,
            "error starts with \"%s\"", cases[i].first_word);
        freeReplyObject(r);
    }
}

/* A stored stamp is a bulk string whose length, not a NUL, ends it. */
static void test_reply_bulk_stamp(void)
{
    redisReply *r = read_reply(LIT("$13\r\n1700000000001\r\n"));
    int64_t got = 0;

    CU_ASSERT_EQUAL_FATAL(r->type, REDIS_REPLY_STRING);
    CU_ASSERT_EQUAL(r->len, 13);
    CU_ASSERT_EQUAL(tslock_stamp_parse(r->str, r->len, TSLOCK_UNIT_MS, &got),
                    TSLOCK_OK);
    CU_ASSERT_EQUAL(got, 1700000000001);
    freeReplyObject(r);

    r = read_reply(LIT("$14\r\n1700000000001\000\r\n"));
    CU_ASSERT_EQUAL_FATAL(r->type, REDIS_REPLY_STRING);
    CU_ASSERT_EQUAL(r->len, 14);
    CU_ASSERT_EQUAL(tslock_stamp_parse(r->str, r->len, TSLOCK_UNIT_MS, &got),
                    TSLOCK_EUNREADABLE);
    freeReplyObject(r);
}

/* A reply split across reads is not a reply until its last byte. */
static void test_reply_split(void)
{
    redisReader *reader = redisReaderCreate();
    void *reply = NULL;

    CU_ASSERT_FATAL(reader != NULL);
    CU_ASSERT_EQUAL(redisReaderFeed(reader, LIT("$13\r\n17000")), REDIS_OK);
    CU_ASSERT_EQUAL(redisReaderGetReply(reader, &reply), REDIS_OK);
    CU_ASSERT_PTR_NULL(reply);
    CU_ASSERT_EQUAL(redisReaderFeed(reader, LIT("00000001\r\n")), REDIS_OK);
    CU_ASSERT_EQUAL(redisReaderGetReply(reader, &reply), REDIS_OK);
    CU_ASSERT_PTR_NOT_NULL(reply);
    if (reply != NULL) {
        CU_ASSERT_EQUAL(((redisReply *)reply)->type, REDIS_REPLY_STRING);
        CU_ASSERT_STRING_EQUAL(((redisReply *)reply)->str, "1700000000001");
        freeReplyObject(reply);
    }
    redisReaderFree(reader);
}

/* Bytes that are not RESP at all are a protocol error, not a reply. */
static void test_reply_protocol_error(void)
{
    redisReader *reader = redisReaderCreate();
    void *reply = NULL;

    CU_ASSERT_FATAL(reader != NULL);
    CU_ASSERT_EQUAL(redisReaderFeed(reader, LIT("@oops\r\n")), REDIS_OK);
    CU_ASSERT_EQUAL(redisReaderGetReply(reader, &reply), REDIS_ERR);
    CU_ASSERT_PTR_NULL(reply);
    CU_ASSERT_EQUAL(reader->err, REDIS_ERR_PROTOCOL);
    redisReaderFree(reader);
}

/* =============================================================== main */

/* ------------------------------------------------ redis+sentinel:// URLs */

static void test_url_sentinel_accepted(void)
{
    struct tslock_url u;
    char err[256] = "";

    unsetenv("REDISCLI_AUTH");
    CU_ASSERT_EQUAL_FATAL(
        cli_url_parse("redis+sentinel://al%40ice:pw@h1,h2:26380,[::1]:7/"
                      "my%2Fmaster/3?sentinel_password=s%26p",
                      &u, err, sizeof(err)),
        0);
    CU_ASSERT_EQUAL(u.nsentinels, 3);
    CU_ASSERT_STRING_EQUAL(u.sentinel_hosts[0], "h1");
    CU_ASSERT_EQUAL(u.sentinel_ports[0], 26379);
    CU_ASSERT_STRING_EQUAL(u.sentinel_hosts[1], "h2");
    CU_ASSERT_EQUAL(u.sentinel_ports[1], 26380);
    CU_ASSERT_STRING_EQUAL(u.sentinel_hosts[2], "::1");
    CU_ASSERT_EQUAL(u.sentinel_ports[2], 7);
    CU_ASSERT_STRING_EQUAL(u.master_name, "my/master");
    CU_ASSERT_EQUAL(u.db, 3);
    CU_ASSERT_STRING_EQUAL(u.user, "al@ice");
    CU_ASSERT_STRING_EQUAL(u.password, "pw");
    CU_ASSERT_STRING_EQUAL(u.sentinel_password, "s&p");
    tslock_url_free(&u);

    /* The data nodes' password may come from $REDISCLI_AUTH. */
    setenv("REDISCLI_AUTH", "envpw", 1);
    CU_ASSERT_EQUAL_FATAL(
        cli_url_parse("REDIS+SENTINEL://s/m", &u, err, sizeof(err)), 0);
    CU_ASSERT_EQUAL(u.nsentinels, 1);
    CU_ASSERT_EQUAL(u.sentinel_ports[0], 26379);
    CU_ASSERT_STRING_EQUAL(u.master_name, "m");
    CU_ASSERT_EQUAL(u.db, 0);
    CU_ASSERT_STRING_EQUAL(u.password, "envpw");
    CU_ASSERT_PTR_NULL(u.sentinel_password);
    tslock_url_free(&u);
    unsetenv("REDISCLI_AUTH");
}

static void test_url_sentinel_rejected(void)
{
    static const struct {
        const char *url, *names;
    } cases[] = {
        {"redis+sentinel://:s3cret@h1,h2:99999/m", "port"},
        {"redis+sentinel://:s3cret@h1,,h2/m", "empty sentinel address"},
        {"redis+sentinel://:s3cret@h1,h2", "names no master"},
        {"redis+sentinel://:s3cret@h1/", "names no master"},
        {"redis+sentinel://:s3cret@h1/m/x", "database"},
        {"redis+sentinel://:s3cret@h1/m/-1", "database"},
        {"redis+sentinel://h1/m?sentinel_password=s3cret&x=s3cret",
         "unknown URL parameter 'x'"},
        {"redis+sentinel://h1/m?sentinel_password=a&sentinel_password=s3cret",
         "twice"},
        {"redis+sentinel://h1/m?sentinel_password=s3cret%zz", "percent"},
        {"redis+sentinel://alice@h1/m", "no password"},
        {"redis+sentinel://:s3cret@h1:1:2/m", "brackets"},
        {"redis+sentinel://h1/m?db=1&db=2", "twice"},
    };
    size_t i;

    unsetenv("REDISCLI_AUTH");
    for (i = 0; i < N_ELEMS(cases); i++) {
        struct tslock_url u;
        char err[256] = "";
        int rc = cli_url_parse(cases[i].url, &u, err, sizeof(err));

        CHECK_CASE(rc == TSLOCK_EINVAL, "%s is refused", cases[i].url);
        CHECK_CASE(strstr(err, cases[i].names) != NULL,
                   "%s: the message names '%s' (got '%s')", cases[i].url,
                   cases[i].names, err);
        CHECK_CASE(strstr(err, "s3cret") == NULL,
                   "%s: the message shows no password", cases[i].url);
    }
}

/*
 * tslock_client_connect_url refuses a bad URL before any connection, with
 * the parser's line in the client's error and without $REDISCLI_AUTH
 * (only the tool asks for it).
 */
/*
 * A database number of several digits, in the path and in ?db=: each
 * digit counts (a parser that kept one would select another database).
 */
static void test_url_db_digits(void)
{
    static const struct {
        const char *url;
        int db;
    } cases[] = {{"redis://h/12", 12},
                 {"redis://h:6380/105", 105},
                 {"unix:///tmp/r.sock?db=15", 15},
                 {"rediss://h/2147483647", 2147483647}};
    struct tslock_url u;
    char err[256] = "";
    size_t i;

    unsetenv("REDISCLI_AUTH");
    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        CU_ASSERT_EQUAL_FATAL(cli_url_parse(cases[i].url, &u, err, sizeof(err)),
                              0);
        if (u.db != cases[i].db)
            fprintf(stderr, "  %s: db %d, expected %d\n", cases[i].url, u.db,
                    cases[i].db);
        CU_ASSERT_EQUAL(u.db, cases[i].db);
        tslock_url_free(&u);
    }
}

static void test_url_connect_refused(void)
{
    tslock_client *c = NULL;

    setenv("REDISCLI_AUTH", "envpw", 1);
    CU_ASSERT_EQUAL_FATAL(tslock_client_new(&c), TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_client_connect_url(c, "redis://:s3cret@h:0"),
                    TSLOCK_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(tslock_client_errstr(c), "port"));
    CU_ASSERT_PTR_NULL(strstr(tslock_client_errstr(c), "s3cret"));
    CU_ASSERT_EQUAL(tslock_client_connect_url(c, "redis://alice@h"),
                    TSLOCK_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(tslock_client_errstr(c), "no password"));
    CU_ASSERT_EQUAL(tslock_client_connect_url(c, NULL), TSLOCK_EINVAL);
    CU_ASSERT_EQUAL(tslock_client_connect_parsed_url(c, NULL), TSLOCK_EINVAL);
    CU_ASSERT_EQUAL(tslock_client_connect_url(NULL, "redis://h"),
                    TSLOCK_EINVAL);
    tslock_client_free(c);
    unsetenv("REDISCLI_AUTH");
}

static void test_url_sentinel_scrub(void)
{
    static const struct {
        const char *in, *out;
    } cases[] = {
        {"redis+sentinel://:pw@h1,h2/m", "redis+sentinel://***@h1,h2/m"},
        {"redis+sentinel://u:pw@h1/m?sentinel_password=secret",
         "redis+sentinel://u:**@h1/m?sentinel_password=***"},
        {"redis+sentinel://h1/m?db=2&sentinel_password=ab&x=1",
         "redis+sentinel://h1/m?db=2&sentinel_password=**&x=1"},
        {"redis+sentinel://h1/m", "redis+sentinel://h1/m"},
    };
    size_t i;

    for (i = 0; i < N_ELEMS(cases); i++) {
        char buf[128];
        snprintf(buf, sizeof(buf), "%s", cases[i].in);
        CHECK_CASE(tslock_url_scrub(buf)
                       == (strcmp(cases[i].in, cases[i].out) != 0),
                   "%s: scrub says whether it hid anything", cases[i].in);
        CHECK_CASE(strcmp(buf, cases[i].out) == 0, "%s scrubbed to %s, got %s",
                   cases[i].in, cases[i].out, buf);
    }
}

static void test_url_sentinel_describe(void)
{
    struct tslock_url u;
    char err[256] = "", where[512];

    unsetenv("REDISCLI_AUTH");
    CU_ASSERT_EQUAL_FATAL(
        cli_url_parse("redis+sentinel://:pw@a,b:2/m/4?sentinel_password=sp", &u,
                      err, sizeof(err)),
        0);
    tslock_url_describe(&u, where, sizeof(where));
    CU_ASSERT_STRING_EQUAL(where, "the master 'm' named by sentinels "
                                  "a:26379, b:2 (with their password), db 4, "
                                  "with a password");
    CU_ASSERT_PTR_NULL(strstr(where, "pw"));
    CU_ASSERT_PTR_NULL(strstr(where, "sp"));
    tslock_url_free(&u);
}

static const struct {
    const char *name;
    CU_TestFunc fn;
} tests[] = {
    {"error strings and names", test_errno_strings},
    {"error numbers", test_errno_numbers},
    {"unknown error codes", test_errno_unknown},
    {"step names", test_step_names},
    {"step name out of range", test_step_name_out_of_range},
    {"stamp_parse accepts", test_stamp_parse_accepts},
    {"stamp_parse rejects", test_stamp_parse_rejects},
    {"stamp_parse bad arguments", test_stamp_parse_bad_arguments},
    {"stamp_format conventions", test_stamp_format_conventions},
    {"stamp_format round trip", test_stamp_format_round_trip},
    {"stamp_format bad arguments", test_stamp_format_bad_arguments},
    {"reply nil bulk", test_reply_nil_bulk},
    {"reply nil array", test_reply_nil_array},
    {"reply integers", test_reply_integers},
    {"reply exec committed", test_reply_exec_committed},
    {"reply errors", test_reply_errors},
    {"reply bulk stamp", test_reply_bulk_stamp},
    {"reply split", test_reply_split},
    {"reply protocol error", test_reply_protocol_error},
    {"redis+sentinel:// URLs accepted", test_url_sentinel_accepted},
    {"redis+sentinel:// URLs refused", test_url_sentinel_rejected},
    {"redis+sentinel:// passwords scrubbed", test_url_sentinel_scrub},
    {"connect_url refuses a bad URL", test_url_connect_refused},
    {"URL database numbers of several digits", test_url_db_digits},
    {"redis+sentinel:// described", test_url_sentinel_describe},
};

int main(void)
{
    CU_pSuite suite;
    size_t i;

    if (CU_initialize_registry() != CUE_SUCCESS)
        return 1;
    suite = CU_add_suite("unit", NULL, NULL);
    if (suite == NULL)
        return 1;
    for (i = 0; i < N_ELEMS(tests); i++)
        if (CU_add_test(suite, tests[i].name, tests[i].fn) == NULL)
            return 1;
    return th_run_all();
}

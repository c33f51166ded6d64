/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fuzz_stamp.c - tslock_stamp_parse() on any bytes in each unit, and the
 * round trip through tslock_stamp_format(): a stamp the library writes
 * must read back as the lease it stands for, never shorter.
 * Input: one byte choosing the unit, then the stored value.
 */
#include <string.h>

#include <tslock.h>

#include "fuzz.h"

#define YEAR_2000_MS INT64_C(946684800000)
#define YEAR_2100_MS INT64_C(4102444800000)

static int has_byte(const uint8_t *p, size_t n, int c)
{
    return memchr(p, c, n) != NULL;
}

/* Whatever the bytes, only OK or EUNREADABLE, and a plausible time. */
static void check_parse(tslock_unit unit, const uint8_t *text, size_t len)
{
    char *copy =
        malloc(len > 0 ? len : 1); /* exact size: ASan sees overreads */
    int64_t exp = -1;
    int rc;

    FUZZ_CHECK(copy != NULL);
    memcpy(copy, text, len);
    rc = tslock_stamp_parse(copy, len, unit, &exp);
    FUZZ_CHECK(rc == TSLOCK_OK || rc == TSLOCK_EUNREADABLE);
    if (rc == TSLOCK_OK) {
        FUZZ_CHECK(exp >= YEAR_2000_MS && exp <= YEAR_2100_MS + 999);
        FUZZ_CHECK(len > 0 && copy[0] >= '0' && copy[0] <= '9');
        /* Only float seconds may carry a fraction. */
        FUZZ_CHECK(unit == TSLOCK_UNIT_FLOAT || !has_byte(text, len, '.'));
        FUZZ_CHECK(!has_byte(text, len, ' ') && !has_byte(text, len, '-'));
        FUZZ_CHECK(unit != TSLOCK_UNIT_S || exp % 1000 == 999);
    }
    free(copy);
}

/* What a lease of ttl taken at now must read back as, per unit. */
static int64_t expected_expiry(tslock_unit unit, int64_t now, int64_t ttl)
{
    switch (unit) {
    case TSLOCK_UNIT_MS:
        return now + ttl + 1;
    case TSLOCK_UNIT_S:
        return (now / 1000 + (ttl + 999) / 1000 + 1) * 1000 + 999;
    default:
        return now + ttl;
    }
}

static void check_round_trip(tslock_unit unit, const uint8_t *data, size_t size)
{
    uint64_t a = 0, b = 0;
    int64_t now, ttl, exp = 0;
    char buf[32];
    int n, rc;

    if (size < 16)
        return;
    memcpy(&a, data, 8);
    memcpy(&b, data + 8, 8);
    /* Times the library can meet: 2000 .. 2100, leases up to ten years. */
    now = YEAR_2000_MS + (int64_t)(a % (uint64_t)(YEAR_2100_MS - YEAR_2000_MS));
    ttl = 1 + (int64_t)(b % INT64_C(315360000000));
    n = tslock_stamp_format(buf, sizeof(buf), unit, now, ttl);
    FUZZ_CHECK(n > 0 && (size_t)n < sizeof(buf) && buf[n] == '\0');
    FUZZ_CHECK(strlen(buf) == (size_t)n);
    rc = tslock_stamp_parse(buf, (size_t)n, unit, &exp);
    if (expected_expiry(unit, now, ttl) > YEAR_2100_MS + 999) {
        /* Past 2100 nobody can read it back; the parser must say so. */
        FUZZ_CHECK(rc == TSLOCK_EUNREADABLE);
        return;
    }
    FUZZ_CHECK(rc == TSLOCK_OK);
    FUZZ_CHECK(exp == expected_expiry(unit, now, ttl));
    FUZZ_CHECK(exp >= now + ttl); /* never a shorter lease than asked */
    /* The formatter's arguments are checked too. */
    FUZZ_CHECK(tslock_stamp_format(buf, 31, unit, now, ttl) == TSLOCK_EINVAL);
    FUZZ_CHECK(tslock_stamp_format(buf, 32, unit, 0, ttl) == TSLOCK_EINVAL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tslock_unit unit;
    int64_t exp;

    if (size < 1)
        return 0;
    unit = (tslock_unit)(data[0] % 3);
    check_parse(unit, data + 1, size - 1);
    check_round_trip(unit, data + 1, size - 1);
    FUZZ_CHECK(tslock_stamp_parse(NULL, 0, unit, &exp) == TSLOCK_EINVAL);
    FUZZ_CHECK(tslock_stamp_parse("1", 1, (tslock_unit)(3 + data[0] % 5), &exp)
               == TSLOCK_EINVAL);
    return 0;
}

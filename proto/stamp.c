/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * stamp.c - the expiry stamps of the classic timestamp lock: writing them
 * in each legacy unit with its "+1" convention, and reading all three
 * forms strictly, so a value this client cannot read is never mistaken
 * for an expired lock.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "proto.h"

/* Plausible lock times: 2000-01-01 .. 2100-01-01, in Unix milliseconds. */
#define STAMP_MAX_MS INT64_C(4102444800000)
/* More digits than any plausible stamp in any unit, fewer than overflow. */
#define STAMP_MAX_DIGITS 16

const char *tslock__unit_name(tslock_unit unit)
{
    switch (unit) {
    case TSLOCK_UNIT_MS:
        return "milliseconds";
    case TSLOCK_UNIT_S:
        return "seconds";
    case TSLOCK_UNIT_FLOAT:
        return "float seconds";
    }
    return "?";
}

/* Read a run of digits at *p; returns the count, or -1 past the limit. */
static int read_digits(const char **p, const char *end, int64_t *value)
{
    int n = 0;

    *value = 0;
    while (*p < end && **p >= '0' && **p <= '9') {
        if (++n > STAMP_MAX_DIGITS)
            return -1;
        *value = *value * 10 + (**p - '0');
        (*p)++;
    }
    return n;
}

int tslock__stamp_parse(const char *text, size_t len, tslock_unit unit,
                        int64_t *expires_ms, const char **why)
{
    const char *p = text, *end = text + len;
    int64_t whole, ms, frac = 0;
    int n;

    if (len == 0) {
        *why = "empty value";
        return TSLOCK_EUNREADABLE;
    }
    n = read_digits(&p, end, &whole);
    if (n < 0) {
        *why = "too many digits for a time";
        return TSLOCK_EUNREADABLE;
    }
    if (n == 0) {
        *why = "does not start with a decimal digit";
        return TSLOCK_EUNREADABLE;
    }
    if (p < end && *p == '.' && unit == TSLOCK_UNIT_FLOAT) {
        int scale = 100;
        p++;
        if (p == end) {
            *why = "a '.' with no fraction after it";
            return TSLOCK_EUNREADABLE;
        }
        for (n = 0; p < end && *p >= '0' && *p <= '9'; p++, n++)
            if (scale > 0) {
                frac += (*p - '0') * scale;
                scale /= 10;
            }
    } else if (p < end && *p == '.') {
        *why = "has a fraction, but whole numbers were expected";
        return TSLOCK_EUNREADABLE;
    }
    if (p != end) {
        *why = "has characters after the number";
        return TSLOCK_EUNREADABLE;
    }
    if (unit != TSLOCK_UNIT_MS && whole > STAMP_MAX_MS / 1000) {
        *why = "is after the year 2100 in this unit (a stamp written in "
               "a larger unit?)";
        return TSLOCK_EUNREADABLE;
    }
    ms = unit == TSLOCK_UNIT_MS ? whole : whole * 1000 + frac;
    if (ms < TSLOCK__STAMP_MIN_MS) {
        *why = "is before the year 2000 in this unit (a stamp written in "
               "a smaller unit?)";
        return TSLOCK_EUNREADABLE;
    }
    if (ms > STAMP_MAX_MS) {
        *why = "is after the year 2100 in this unit (a stamp written in "
               "a larger unit?)";
        return TSLOCK_EUNREADABLE;
    }
    /*
     * A whole-seconds stamp S stays valid through second S for the
     * clients that write it (the Redis docs compare whole seconds), so
     * it runs out at S.999, not at S.000.
     */
    *expires_ms = unit == TSLOCK_UNIT_S ? ms + 999 : ms;
    return TSLOCK_OK;
}

int tslock_stamp_parse(const char *text, size_t len, tslock_unit unit,
                       int64_t *expires_ms)
{
    const char *why;

    if (text == NULL || expires_ms == NULL || unit > TSLOCK_UNIT_FLOAT)
        return TSLOCK_EINVAL;
    return tslock__stamp_parse(text, len, unit, expires_ms, &why);
}

int tslock_stamp_format(char *buf, size_t size, tslock_unit unit,
                        int64_t now_ms, int64_t ttl_ms)
{
    int n;

    if (buf == NULL || size < 32 || now_ms <= 0 || ttl_ms <= 0
        || ttl_ms > STAMP_MAX_MS || now_ms > STAMP_MAX_MS)
        return TSLOCK_EINVAL;
    switch (unit) {
    case TSLOCK_UNIT_MS:
        n = snprintf(buf, size, "%" PRId64, now_ms + ttl_ms + 1);
        break;
    case TSLOCK_UNIT_S:
        n = snprintf(buf, size, "%" PRId64,
                     now_ms / 1000 + (ttl_ms + 999) / 1000 + 1);
        break;
    case TSLOCK_UNIT_FLOAT:
        n = snprintf(buf, size, "%" PRId64 ".%03" PRId64,
                     (now_ms + ttl_ms) / 1000, (now_ms + ttl_ms) % 1000);
        break;
    default:
        return TSLOCK_EINVAL;
    }
    return n;
}

int64_t tslock__bridge_bound_ms(tslock_unit unit, int64_t ttl_ms)
{
    switch (unit) {
    case TSLOCK_UNIT_MS:
        return ttl_ms / 10 < 999 ? ttl_ms / 10 : 999;
    case TSLOCK_UNIT_S:
        return (ttl_ms / 10000 < 9 ? ttl_ms / 10000 : 9) * 1000;
    default:
        return 0; /* the randomness goes into extra fraction digits */
    }
}

/*
 * A bridge stamp: the classic stamp of the unit, made unique to its
 * holder.  Whole-number units add a random amount of at most
 * tslock__bridge_bound_ms(); float seconds carry six random digits after
 * the millisecond ones, which float() reads as the same time.
 */
int tslock__bridge_stamp(char *buf, size_t size, tslock_unit unit,
                         int64_t now_ms, int64_t ttl_ms, uint64_t random)
{
    int64_t bound = tslock__bridge_bound_ms(unit, ttl_ms), base;
    int n = tslock_stamp_format(buf, size, unit, now_ms, ttl_ms);

    if (n < 0)
        return n;
    if (unit == TSLOCK_UNIT_FLOAT) {
        if ((size_t)n + 7 > size)
            return TSLOCK_EINVAL;
        return n
               + snprintf(buf + n, size - (size_t)n, "%06u",
                          (unsigned)(random % 1000000));
    }
    base = strtoll(buf, NULL, 10);
    if (unit == TSLOCK_UNIT_MS)
        base += (int64_t)(random % (uint64_t)(bound + 1));
    else
        base += (int64_t)(random % (uint64_t)(bound / 1000 + 1));
    return snprintf(buf, size, "%" PRId64, base);
}

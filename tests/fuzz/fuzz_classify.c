/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fuzz_classify.c - tslock_value_classify() on any stored value: the
 * verdict must be one tslock_stamp_parse() agrees with, a token must be
 * 32 lowercase hex digits, and the out-pointers must not change it.
 * Input: the stored value.
 */
#include <string.h>

#include <tslock.h>

#include "fuzz.h"

static int is_token(const uint8_t *v, size_t len)
{
    size_t i;

    if (len != 32)
        return 0;
    for (i = 0; i < len; i++)
        if (!((v[i] >= '0' && v[i] <= '9') || (v[i] >= 'a' && v[i] <= 'f')))
            return 0;
    return 1;
}

static void check_verdict(const char *v, size_t len, tslock_scheme scheme,
                          tslock_unit unit, int64_t exp)
{
    int64_t again = 0;

    if (scheme == TSLOCK_SCHEME_TOKEN) {
        FUZZ_CHECK(is_token((const uint8_t *)v, len));
        FUZZ_CHECK(exp == 0);
        return;
    }
    FUZZ_CHECK(scheme == TSLOCK_SCHEME_TIMESTAMP);
    FUZZ_CHECK(!is_token((const uint8_t *)v, len));
    FUZZ_CHECK(unit <= TSLOCK_UNIT_FLOAT);
    FUZZ_CHECK(tslock_stamp_parse(v, len, unit, &again) == TSLOCK_OK);
    FUZZ_CHECK(again == exp);
    /* A '.' means float seconds; without one, ms are preferred to s. */
    FUZZ_CHECK((unit == TSLOCK_UNIT_FLOAT) == (memchr(v, '.', len) != NULL));
    if (unit == TSLOCK_UNIT_S)
        FUZZ_CHECK(tslock_stamp_parse(v, len, TSLOCK_UNIT_MS, &again)
                   == TSLOCK_EUNREADABLE);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *v = malloc(size > 0 ? size : 1); /* exact size for ASan */
    tslock_scheme scheme = (tslock_scheme)99;
    tslock_unit unit = (tslock_unit)99;
    int64_t exp = -1;
    int rc;

    FUZZ_CHECK(v != NULL);
    memcpy(v, data, size);
    rc = tslock_value_classify(v, size, &scheme, &unit, &exp);
    FUZZ_CHECK(rc == TSLOCK_OK || rc == TSLOCK_EUNREADABLE);
    if (rc == TSLOCK_OK)
        check_verdict(v, size, scheme, unit, exp);
    FUZZ_CHECK(tslock_value_classify(v, size, NULL, NULL, NULL) == rc);
    free(v);
    return 0;
}

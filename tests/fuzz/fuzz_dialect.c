/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fuzz_dialect.c - the one parser of dialects on any bytes: format
 * strings (tslock_dialect_check), stored values in a dialect
 * (tslock_dialect_parse) and the naming of a value's writer
 * (tslock_dialect_match).  Input: a byte that picks a preset (below 16)
 * or says a format follows, up to a newline; then the stored value.
 */
#include <string.h>

#include <tslock.h>

#include "fuzz.h"

#define YEAR_2000_MS INT64_C(946684800000)
#define YEAR_2100_MS INT64_C(4102444800000)

static void check_value(const char *dialect, const uint8_t *v, size_t len)
{
    char *copy =
        malloc(len > 0 ? len : 1); /* exact size: ASan sees overreads */
    char names[64];
    int64_t exp = -1;
    int rc;

    FUZZ_CHECK(copy != NULL);
    memcpy(copy, v, len);
    rc = tslock_dialect_parse(dialect, copy, len, &exp);
    FUZZ_CHECK(rc == TSLOCK_OK || rc == TSLOCK_EUNREADABLE);
    if (rc == TSLOCK_OK)
        FUZZ_CHECK(exp == INT64_MAX
                   || (exp >= YEAR_2000_MS && exp <= YEAR_2100_MS + 999));
    /* A short buffer cuts the list at a name; it always ends in a NUL. */
    rc = tslock_dialect_match(copy, len, names, sizeof(names), &exp);
    FUZZ_CHECK(rc == TSLOCK_OK || rc == TSLOCK_EUNREADABLE);
    FUZZ_CHECK(memchr(names, '\0', sizeof(names)) != NULL);
    FUZZ_CHECK(rc == TSLOCK_OK ? names[0] != '\0' : names[0] == '\0');
    free(copy);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *nl;
    char *spec, err[256];
    size_t n;
    int rc;

    if (size < 1)
        return 0;
    if (data[0] < 16) {
        const char *name = tslock_dialect_preset(data[0]);
        if (name != NULL) {
            FUZZ_CHECK(tslock_dialect_check(name, err, sizeof(err))
                       == TSLOCK_OK);
            FUZZ_CHECK(tslock_dialect_format(name) != NULL);
            FUZZ_CHECK(tslock_dialect_library(name) != NULL);
            check_value(name, data + 1, size - 1);
        }
        return 0;
    }
    nl = memchr(data + 1, '\n', size - 1);
    n = nl != NULL ? (size_t)(nl - data - 1) : size - 1;
    spec = malloc(n + 1);
    FUZZ_CHECK(spec != NULL);
    memcpy(spec, data + 1, n);
    spec[n] = '\0';
    memset(err, 'x', sizeof(err));
    rc = tslock_dialect_check(spec, err, sizeof(err));
    FUZZ_CHECK(rc == TSLOCK_OK || rc == TSLOCK_EINVAL);
    if (rc == TSLOCK_EINVAL) /* a reason, NUL-terminated within err */
        FUZZ_CHECK(memchr(err, '\0', sizeof(err)) != NULL && err[0] != '\0');
    FUZZ_CHECK(tslock_dialect_check(spec, NULL, 0) == rc);
    if (rc == TSLOCK_OK && nl != NULL)
        check_value(spec, nl + 1, size - (size_t)(nl + 1 - data));
    free(spec);
    FUZZ_CHECK(tslock_dialect_parse(NULL, "1", 1, &(int64_t){0})
               == TSLOCK_EINVAL);
    return 0;
}

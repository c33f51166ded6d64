/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * valuename.c - what a stored value is, as the operator's views name it
 * (tslock_value_name()): a token, a stamp of a plain unit or of the
 * presets whose clients could have written it, an unknown stamp, or no
 * lock.  One verdict for the tool's survey, top, watch and exporter and
 * for every binding's survey.
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "tslock_int.h"

/* The unit of a preset's time field, from its format string. */
static tslock_unit preset_unit(const char *name, size_t len)
{
    char first[64];
    const char *f, *p;

    snprintf(first, sizeof(first), "%.*s", (int)len, name);
    f = tslock_dialect_format(first);
    for (p = f != NULL ? f : ""; *p != '\0'; p++) {
        if (*p != '{' && *p != '=')
            continue;
        if (strncmp(p + 1, "ms", 2) == 0)
            return TSLOCK_UNIT_MS;
        if (strncmp(p + 1, "float", 5) == 0)
            return TSLOCK_UNIT_FLOAT;
        if (p[1] == 's'
            && (p[2] == '}' || p[2] == '+' || p[2] == ',' || p[2] == ')'))
            return TSLOCK_UNIT_S;
    }
    return TSLOCK_UNIT_MS;
}

/* Whether a key's name says it is a lock: "lock" in any case. */
static int lock_named(const char *key, size_t len)
{
    size_t i;

    for (i = 0; i + 4 <= len; i++)
        if (strncasecmp(key + i, "lock", 4) == 0)
            return 1;
    return 0;
}

/*
 * Whether a value no dialect reads still looks like a lock: it begins
 * with a plausible stamp (digits, and a fraction, that
 * tslock_value_classify() reads as a time), or it is a PHP-serialized
 * array ("a:N:{").
 */
static int looks_like_lock(const char *v, size_t len)
{
    size_t n = 0;

    if (len >= 4 && v[0] == 'a' && v[1] == ':') {
        for (n = 2; n < len && v[n] >= '0' && v[n] <= '9'; n++)
            ;
        return n > 2 && n + 1 < len && v[n] == ':' && v[n + 1] == '{';
    }
    while (n < len && ((v[n] >= '0' && v[n] <= '9') || v[n] == '.'))
        n++;
    return n > 0 && n < len
           && tslock_value_classify(v, n, NULL, NULL, NULL) == TSLOCK_OK;
}

static void put(char *dst, size_t size, const char *s)
{
    if (dst != NULL)
        snprintf(dst, size, "%s", s);
}

int tslock_value_name(const char *key, size_t key_len, const char *value,
                      size_t len, tslock_value_kind *kind, tslock_unit *unit,
                      int64_t *expires_ms, char *dialects, size_t size)
{
    char local[256];
    char *names = dialects != NULL ? dialects : local;
    size_t names_size = dialects != NULL ? size : sizeof(local);
    tslock_scheme scheme;
    tslock_unit u = TSLOCK_UNIT_MS;
    int64_t expires = 0;

    if (value == NULL || kind == NULL || (dialects != NULL && size == 0))
        return TSLOCK_EINVAL;
    *kind = TSLOCK_VALUE_NOT_A_LOCK;
    put(dialects, size, "");
    if (tslock_value_classify(value, len, &scheme, &u, &expires) == TSLOCK_OK) {
        if (scheme == TSLOCK_SCHEME_TOKEN) {
            *kind = TSLOCK_VALUE_TOKEN;
            return TSLOCK_OK;
        }
        *kind = TSLOCK_VALUE_STAMP;
        if (tslock_dialect_match(value, len, names, names_size, NULL)
            != TSLOCK_OK)
            put(dialects, size, "unknown-stamp");
    } else if (tslock_dialect_match(value, len, names, names_size, &expires)
               == TSLOCK_OK) {
        /*
         * A bare sentinel is a lock only on a key named as one
         * (redis-objects names its keys "..._lock", resque-lock-timeout
         * "lock:..."), or on a key the caller knows is a lock.
         */
        if (expires == INT64_MAX && key != NULL && !lock_named(key, key_len)) {
            put(dialects, size, "");
            return TSLOCK_OK;
        }
        *kind = TSLOCK_VALUE_STAMP;
        u = preset_unit(names, strcspn(names, "/"));
    } else {
        if (looks_like_lock(value, len)) {
            *kind = TSLOCK_VALUE_UNKNOWN_STAMP;
            put(dialects, size, "unknown-stamp");
        }
        return TSLOCK_OK;
    }
    if (unit != NULL)
        *unit = u;
    if (expires_ms != NULL)
        *expires_ms = expires;
    return TSLOCK_OK;
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * stampname.c - what a stored value is, as the operator's tools (survey,
 * top, watch, the exporter) name it: a token, a stamp of the dialects
 * whose clients could have written it (the library's presets, matched by
 * tslock_dialect_match()), an unknown stamp, or no lock at all.
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "cli.h"

/* The unit of a preset's time field, from its format string. */
static tslock_unit preset_unit(const char *name)
{
    const char *f = tslock_dialect_format(name);
    const char *p;

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

int cli_stamp_name(const char *key, size_t key_len, const char *v, size_t len,
                   struct cli_stamp *out)
{
    tslock_scheme scheme;
    tslock_unit unit = TSLOCK_UNIT_MS;
    int64_t expires = 0;
    char first[64];
    const char *slash;

    memset(out, 0, sizeof(*out));
    if (v == NULL)
        return out->kind;
    if (tslock_value_classify(v, len, &scheme, &unit, &expires) == TSLOCK_OK) {
        out->kind =
            scheme == TSLOCK_SCHEME_TOKEN ? CLI_STAMP_TOKEN : CLI_STAMP_STAMP;
        out->unit = unit;
        out->expires_ms = expires;
        if (out->kind == CLI_STAMP_STAMP
            && tslock_dialect_match(v, len, out->dialect, sizeof(out->dialect),
                                    NULL)
                   != TSLOCK_OK)
            snprintf(out->dialect, sizeof(out->dialect), "unknown-stamp");
        return out->kind;
    }
    if (tslock_dialect_match(v, len, out->dialect, sizeof(out->dialect),
                             &expires)
        == TSLOCK_OK) {
        /*
         * A bare "never expires" sentinel ("1", "true") is also what a
         * counter or a flag holds: it is a lock only on a key whose name
         * says so (redis-objects names its keys "..._lock",
         * resque-lock-timeout "lock:..."), or on a key the caller knows
         * is a lock (key NULL: watch's keys).
         */
        if (expires == INT64_MAX && key != NULL && !lock_named(key, key_len)) {
            out->dialect[0] = '\0';
            return out->kind;
        }
        slash = strchr(out->dialect, '/');
        snprintf(first, sizeof(first), "%.*s",
                 (int)(slash != NULL ? (size_t)(slash - out->dialect)
                                     : strlen(out->dialect)),
                 out->dialect);
        out->kind = CLI_STAMP_STAMP;
        out->unit = preset_unit(first);
        out->expires_ms = expires;
        return out->kind;
    }
    if (looks_like_lock(v, len)) {
        out->kind = CLI_STAMP_UNKNOWN;
        snprintf(out->dialect, sizeof(out->dialect), "unknown-stamp");
    }
    return out->kind;
}

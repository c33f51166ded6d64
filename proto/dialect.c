/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dialect.c - legacy stamp dialects as data: the presets that name each
 * lock library's variant of the articles' stamp, the one parser of their
 * format strings, and reading and writing a value in a dialect.  The
 * time inside a value is read and written by stamp.c's rules for its
 * unit; what surrounds it (an owner suffix, a PHP-serialized array) and
 * the "never expires" sentinels are read here.
 */
#include <pthread.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proto.h"

/* Plausible lock times end at 2100-01-01, as in stamp.c. */
#define DIALECT_MAX_MS INT64_C(4102444800000)
/* A pid or thread id: at most 20 digits. */
#define ID_MAX_DIGITS 20
/* The longest host name a value may carry. */
#define HOST_MAX 255
/* The longest host name this client writes (values stay short). */
#define HOST_WRITE_MAX 48

static const struct preset {
    const char *name, *format, *library;
} presets[] = {
    {"java-redislock", "{ms+1}",
     "RedisLock of the early Java articles (milliseconds, +1)"},
    {"redis-docs", "{s+1}",
     "the SETNX page of the Redis documentation (whole seconds, +1)"},
    {"redis-py2", "{float}", "redis-py 2.x Lock (float seconds, no +1)"},
    {"redis-objects", "{float+1};never=1",
     "redis-objects Redis::Lock up to 1.4.1, Ruby (float seconds, +1; "
     "1 without an expiration)"},
    {"redis-mutex", "{float};release=compare",
     "redis-mutex 4.0, Ruby (float seconds, no +1; released only when "
     "the value is its own)"},
    {"redis-lock-gem", "{s+1}-{pid}-{tid}",
     "the redis-lock gem 0.2, Ruby (seconds +1, pid, thread id)"},
    {"resque-lock-timeout", "{s};never=true",
     "resque-lock-timeout, Ruby (whole seconds, no +1; true for a "
     "timeout of 0)"},
    {"ninja-mutex", "php-array(pid=pid,hostname=host,expires=s)",
     "ninja-mutex with an expiration, PHP (a serialized array; expires "
     "in whole seconds, no +1)"},
    {"predislock", "{s+1}:{pid}", "PredisLock, PHP (seconds +1, pid)"},
    {"node-redis-lock", "{ms+1}",
     "npm redis-lock 0.0.x, Node.js (milliseconds, +1)"},
};
#define PRESET_COUNT (sizeof(presets) / sizeof(presets[0]))

const char *tslock__plain_format(tslock_unit unit)
{
    static const char *const plain[] = {"{ms+1}", "{s+1}", "{float}"};

    return unit <= TSLOCK_UNIT_FLOAT ? plain[unit] : "{ms+1}";
}

static const struct preset *preset_named(const char *name)
{
    size_t i;

    for (i = 0; i < PRESET_COUNT; i++)
        if (strcmp(presets[i].name, name) == 0)
            return &presets[i];
    return NULL;
}

const char *tslock_dialect_preset(size_t i)
{
    return i < PRESET_COUNT ? presets[i].name : NULL;
}

const char *tslock_dialect_format(const char *name)
{
    const struct preset *p = name != NULL ? preset_named(name) : NULL;

    return p != NULL ? p->format : NULL;
}

const char *tslock_dialect_library(const char *name)
{
    const struct preset *p = name != NULL ? preset_named(name) : NULL;

    return p != NULL ? p->library : NULL;
}

/* ----------------------------------------------------- the grammar */

#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static int
fail(char *err, size_t size, const char *fmt, ...)
{
    va_list ap;

    if (err != NULL && size > 0) {
        va_start(ap, fmt);
        vsnprintf(err, size, fmt, ap);
        va_end(ap);
    }
    return TSLOCK_EINVAL;
}

/* One field name: its kind, unit and +1; -1 when unknown. */
static int field_kind(const char *s, size_t n, tslock_unit *unit, int *plus)
{
    static const struct {
        const char *name;
        int kind;
        tslock_unit unit;
        int plus;
    } fields[] = {
        {"ms", TSLOCK__PART_TIME, TSLOCK_UNIT_MS, 0},
        {"ms+1", TSLOCK__PART_TIME, TSLOCK_UNIT_MS, 1},
        {"s", TSLOCK__PART_TIME, TSLOCK_UNIT_S, 0},
        {"s+1", TSLOCK__PART_TIME, TSLOCK_UNIT_S, 1},
        {"float", TSLOCK__PART_TIME, TSLOCK_UNIT_FLOAT, 0},
        {"float+1", TSLOCK__PART_TIME, TSLOCK_UNIT_FLOAT, 1},
        {"pid", TSLOCK__PART_PID, TSLOCK_UNIT_MS, 0},
        {"tid", TSLOCK__PART_TID, TSLOCK_UNIT_MS, 0},
        {"host", TSLOCK__PART_HOST, TSLOCK_UNIT_MS, 0},
    };
    size_t i;

    for (i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
        if (strlen(fields[i].name) == n && memcmp(fields[i].name, s, n) == 0) {
            if (fields[i].kind == TSLOCK__PART_TIME) {
                *unit = fields[i].unit;
                *plus = fields[i].plus;
            }
            return fields[i].kind;
        }
    return -1;
}

static int add_part(struct tslock__dialect *d, int kind, const char *text,
                    size_t n, char *err, size_t size)
{
    struct tslock__part *p;

    if (d->nparts == TSLOCK__DIALECT_PARTS)
        return fail(err, size, "more than 8 parts in \"%s\"", d->spec);
    if (n >= sizeof(p->text))
        return fail(err, size,
                    "a literal or name longer than 23 bytes in "
                    "\"%s\"",
                    d->spec);
    p = &d->part[d->nparts++];
    p->kind = kind;
    memcpy(p->text, text, n);
    p->text[n] = '\0';
    return TSLOCK_OK;
}

/* TEMPLATE := (LITERAL | "{" FIELD "}")* */
static int compile_template(struct tslock__dialect *d, const char *s,
                            const char *end, char *err, size_t size)
{
    int times = 0, prev_field = 0, rc;

    while (s < end) {
        const char *close;
        int kind;

        if (*s != '{') {
            const char *lit = s;
            while (s < end && *s != '{' && *s != '}')
                s++;
            if (s < end && *s == '}')
                return fail(err, size,
                            "a '}' with no '{' before it at "
                            "\"%s\"",
                            s);
            if ((rc = add_part(d, TSLOCK__PART_LITERAL, lit, (size_t)(s - lit),
                               err, size))
                != TSLOCK_OK)
                return rc;
            prev_field = 0;
            continue;
        }
        close = memchr(s, '}', (size_t)(end - s));
        if (close == NULL)
            return fail(err, size, "a '{' with no '}' after it at \"%s\"", s);
        kind =
            field_kind(s + 1, (size_t)(close - s - 1), &d->unit, &d->plus_one);
        if (kind < 0)
            return fail(err, size,
                        "unknown field at \"%s\" (fields: ms, ms+1, s, s+1, "
                        "float, float+1, pid, tid, host)",
                        s);
        if (prev_field)
            return fail(err, size,
                        "two fields with nothing between them at \"%s\"", s);
        if (kind == TSLOCK__PART_TIME && ++times > 1)
            return fail(err, size, "a second time field at \"%s\"", s);
        if ((rc = add_part(d, kind, "", 0, err, size)) != TSLOCK_OK)
            return rc;
        prev_field = 1;
        s = close + 1;
    }
    if (times == 0)
        return fail(err, size,
                    "no time field ({ms}, {ms+1}, {s}, {s+1}, {float} or "
                    "{float+1}) in \"%s\"",
                    d->spec);
    return TSLOCK_OK;
}

/* "php-array(" NAME "=" FIELD ("," NAME "=" FIELD)* ")" */
static int compile_php(struct tslock__dialect *d, const char *s,
                       const char *end, char *err, size_t size)
{
    int times = 0, rc;

    if (end == s || end[-1] != ')')
        return fail(err, size, "php-array( has no closing ')' in \"%s\"",
                    d->spec);
    end--;
    d->php = 1;
    while (s < end) {
        const char *eq = memchr(s, '=', (size_t)(end - s)), *comma;
        int kind;

        if (eq == NULL || eq == s)
            return fail(err, size, "expected NAME=FIELD at \"%s\"", s);
        comma = memchr(eq, ',', (size_t)(end - eq));
        if (comma == NULL)
            comma = end;
        kind = field_kind(eq + 1, (size_t)(comma - eq - 1), &d->unit,
                          &d->plus_one);
        if (kind < 0 || kind == TSLOCK__PART_LITERAL)
            return fail(err, size,
                        "unknown field at \"%s\" (fields: ms, ms+1, s, s+1, "
                        "float, float+1, pid, tid, host)",
                        eq + 1);
        if (kind == TSLOCK__PART_TIME && ++times > 1)
            return fail(err, size, "a second time field at \"%s\"", eq + 1);
        if ((rc = add_part(d, kind, s, (size_t)(eq - s), err, size))
            != TSLOCK_OK)
            return rc;
        s = comma < end ? comma + 1 : end;
        if (comma < end && s == end)
            return fail(err, size, "a ',' with no field after it in \"%s\"",
                        d->spec);
    }
    if (times == 0)
        return fail(err, size, "no time field in \"%s\"", d->spec);
    return TSLOCK_OK;
}

/* ";never=" VALUE ("," VALUE)* */
static int compile_never(struct tslock__dialect *d, const char *s,
                         const char *end, char *err, size_t size)
{
    while (s <= end) {
        const char *comma = memchr(s, ',', (size_t)(end - s));
        size_t n;

        if (comma == NULL)
            comma = end;
        n = (size_t)(comma - s);
        if (n == 0 || n >= sizeof(d->never[0]))
            return fail(err, size,
                        "a never= value must be 1 to 15 bytes, in \"%s\"",
                        d->spec);
        if (d->nnever == TSLOCK__DIALECT_NEVER)
            return fail(err, size, "more than 4 never= values in \"%s\"",
                        d->spec);
        memcpy(d->never[d->nnever], s, n);
        d->never[d->nnever++][n] = '\0';
        s = comma + 1;
    }
    return TSLOCK_OK;
}

int tslock__dialect_compile(struct tslock__dialect *d, const char *spec,
                            char *err, size_t size)
{
    const struct preset *p;
    const char *format, *end, *opt;
    int rc;

    if (spec == NULL)
        return fail(err, size, "%s", "no dialect given");
    memset(d, 0, sizeof(*d));
    if (strlen(spec) >= sizeof(d->spec))
        return fail(err, size, "a dialect of more than %zu bytes",
                    sizeof(d->spec) - 1);
    strcpy(d->spec, spec);
    p = preset_named(spec);
    if (p != NULL)
        snprintf(d->name, sizeof(d->name), "%s", p->name);
    format = p != NULL ? p->format : spec;
    if (*format == '\0')
        return fail(err, size, "%s",
                    "an empty dialect (a preset name or a format such as "
                    "\"{s+1}:{pid}\")");
    end = strchr(format, ';');
    if (end == NULL)
        end = format + strlen(format);
    if (strncmp(format, "php-array(", 10) == 0)
        rc = compile_php(d, format + 10, end, err, size);
    else
        rc = compile_template(d, format, end, err, size);
    for (opt = end; rc == TSLOCK_OK && *opt == ';';) {
        const char *next = strchr(opt + 1, ';');
        if (next == NULL)
            next = opt + strlen(opt);
        if (strncmp(opt, ";never=", 7) == 0)
            rc = compile_never(d, opt + 7, next, err, size);
        else if ((size_t)(next - opt) == 12
                 && strncmp(opt, ";release=del", 12) == 0)
            d->compare_release = 0;
        else if ((size_t)(next - opt) == 16
                 && strncmp(opt, ";release=compare", 16) == 0)
            d->compare_release = 1;
        else
            rc = fail(err, size,
                      "unknown option at \"%s\" (options: ;never=V,V... "
                      "and ;release=del or ;release=compare)",
                      opt);
        opt = next;
    }
    if (rc != TSLOCK_OK && p == NULL && err != NULL && size > 0) {
        size_t i, n = strlen(err);
        for (i = 0; i < PRESET_COUNT && n + 1 < size; i++) {
            snprintf(err + n, size - n, "%s%s",
                     i == 0 ? "; not a preset either (presets: " : ", ",
                     presets[i].name);
            n += strlen(err + n);
        }
        if (n + 1 < size)
            snprintf(err + n, size - n, ")");
    }
    return rc;
}

void tslock__dialect_plain(struct tslock__dialect *d, tslock_unit unit)
{
    char err[8];

    (void)tslock__dialect_compile(d, tslock__plain_format(unit), err,
                                  sizeof(err));
}

int tslock__dialect_is_plain(const struct tslock__dialect *d)
{
    return d->nparts == 1 && !d->php && d->nnever == 0
           && strcmp(d->spec, tslock__plain_format(d->unit)) == 0;
}

/* ------------------------------------------------------- reading */

static int read_id(const char **p, const char *end)
{
    int n = 0;

    while (*p < end && **p >= '0' && **p <= '9' && n <= ID_MAX_DIGITS) {
        (*p)++;
        n++;
    }
    return n > 0 && n <= ID_MAX_DIGITS;
}

/* The time field's text: digits, and one fraction in float seconds. */
static int time_span(const char *p, const char *end, tslock_unit unit)
{
    const char *s = p;

    while (p < end && *p >= '0' && *p <= '9')
        p++;
    if (unit == TSLOCK_UNIT_FLOAT && p < end && *p == '.') {
        p++;
        while (p < end && *p >= '0' && *p <= '9')
            p++;
    }
    return (int)(p - s);
}

static int read_time(const struct tslock__dialect *d, const char *p, size_t n,
                     int64_t *exp, const char **why)
{
    return tslock__stamp_parse(p, n, d->unit, exp, why);
}

static int unreadable(const char **why, const char *reason, size_t *at,
                      size_t pos)
{
    *why = reason;
    if (at != NULL)
        *at = pos;
    return TSLOCK_EUNREADABLE;
}

static int parse_template(const struct tslock__dialect *d, const char *v,
                          size_t len, int64_t *exp, const char **why,
                          size_t *at)
{
    const char *p = v, *end = v + len;
    int i, rc;

    for (i = 0; i < d->nparts; i++) {
        const struct tslock__part *part = &d->part[i];
        size_t n;

        switch (part->kind) {
        case TSLOCK__PART_LITERAL:
            n = strlen(part->text);
            if ((size_t)(end - p) < n || memcmp(p, part->text, n) != 0)
                return unreadable(why,
                                  p == end ? "ends early"
                                           : "has other characters where "
                                             "the dialect has fixed text",
                                  at, (size_t)(p - v));
            p += n;
            break;
        case TSLOCK__PART_TIME:
            n = (size_t)time_span(p, end, d->unit);
            /* A time must end where the next literal, or the value, does. */
            if (i + 1 == d->nparts && p + n != end) {
                rc = read_time(d, p, (size_t)(end - p), exp, why);
                if (rc != TSLOCK_OK && at != NULL)
                    *at = (size_t)(p - v) + n;
                return rc != TSLOCK_OK
                           ? rc
                           : unreadable(why, "has characters after the number",
                                        at, (size_t)(p - v) + n);
            }
            if (n == 0)
                return unreadable(why,
                                  "has no number where the dialect has "
                                  "its time",
                                  at, (size_t)(p - v));
            rc = read_time(d, p, n, exp, why);
            if (rc != TSLOCK_OK) {
                if (at != NULL)
                    *at = (size_t)(p - v);
                return rc;
            }
            p += n;
            break;
        case TSLOCK__PART_PID:
        case TSLOCK__PART_TID:
            if (!read_id(&p, end))
                return unreadable(why,
                                  "has no id of 1 to 20 digits where "
                                  "the dialect has one",
                                  at, (size_t)(p - v));
            break;
        default: { /* host: up to the next literal's first byte */
            const char *s = p;
            char stop = i + 1 < d->nparts ? d->part[i + 1].text[0] : '\0';
            while (p < end && (stop == '\0' || *p != stop) && p - s < HOST_MAX)
                p++;
            if (p == s)
                return unreadable(why,
                                  "has no host name where the dialect "
                                  "has one",
                                  at, (size_t)(p - v));
        }
        }
    }
    if (p != end)
        return unreadable(why, "has characters after the dialect's last part",
                          at, (size_t)(p - v));
    return TSLOCK_OK;
}

/* PHP's serialize(): i:N; d:N; s:LEN:"..."; inside a:K:{...}. */
static int php_expect(const char **p, const char *end, const char *text)
{
    size_t n = strlen(text);

    if ((size_t)(end - *p) < n || memcmp(*p, text, n) != 0)
        return 0;
    *p += n;
    return 1;
}

static int php_string(const char **p, const char *end, const char **s,
                      size_t *n)
{
    size_t len = 0;
    int digits = 0;

    if (!php_expect(p, end, "s:"))
        return 0;
    while (*p < end && **p >= '0' && **p <= '9' && digits < 4) {
        len = len * 10 + (size_t)(**p - '0');
        (*p)++;
        digits++;
    }
    if (digits == 0 || !php_expect(p, end, ":\"")
        || (size_t)(end - *p) < len + 2)
        return 0;
    *s = *p;
    *n = len;
    *p += len;
    return php_expect(p, end, "\";");
}

static int parse_php(const struct tslock__dialect *d, const char *v, size_t len,
                     int64_t *exp, const char **why, size_t *at)
{
    const char *p = v, *end = v + len, *s;
    char head[24];
    size_t n;
    int i, rc;

    snprintf(head, sizeof(head), "a:%d:{", d->nparts);
    if (!php_expect(&p, end, head))
        return unreadable(why,
                          "is not a PHP-serialized array of the "
                          "dialect's size",
                          at, 0);
    for (i = 0; i < d->nparts; i++) {
        const struct tslock__part *part = &d->part[i];
        size_t pos = (size_t)(p - v);

        if (!php_string(&p, end, &s, &n) || n != strlen(part->text)
            || memcmp(s, part->text, n) != 0)
            return unreadable(why,
                              "has another array key where the "
                              "dialect has one",
                              at, pos);
        pos = (size_t)(p - v);
        if (part->kind == TSLOCK__PART_HOST) {
            if (!php_string(&p, end, &s, &n) || n == 0 || n > HOST_MAX)
                return unreadable(why,
                                  "has no host name string where the "
                                  "dialect has one",
                                  at, pos);
            continue;
        }
        if (part->kind == TSLOCK__PART_TIME && d->unit == TSLOCK_UNIT_FLOAT) {
            if (!php_expect(&p, end, "d:") && !php_expect(&p, end, "i:"))
                return unreadable(why,
                                  "has no number where the dialect has "
                                  "its time",
                                  at, pos);
        } else if (!php_expect(&p, end, "i:")) {
            return unreadable(why, "has no integer where the dialect has one",
                              at, pos);
        }
        s = p;
        if (part->kind == TSLOCK__PART_TIME) {
            n = (size_t)time_span(p, end, d->unit);
            rc = read_time(d, s, n, exp, why);
            if (rc != TSLOCK_OK) {
                if (at != NULL)
                    *at = (size_t)(s - v);
                return rc;
            }
            p += n;
        } else if (!read_id(&p, end)) {
            return unreadable(why,
                              "has no id of 1 to 20 digits where the "
                              "dialect has one",
                              at, (size_t)(p - v));
        }
        if (!php_expect(&p, end, ";"))
            return unreadable(why, "has no ';' after a number", at,
                              (size_t)(p - v));
    }
    if (!php_expect(&p, end, "}") || p != end)
        return unreadable(why, "does not end where the array does", at,
                          (size_t)(p - v));
    return TSLOCK_OK;
}

int tslock__dialect_parse(const struct tslock__dialect *d, const char *v,
                          size_t len, int64_t *exp, const char **why,
                          size_t *at)
{
    int i;

    if (at != NULL)
        *at = 0;
    for (i = 0; i < d->nnever; i++)
        if (strlen(d->never[i]) == len && memcmp(d->never[i], v, len) == 0) {
            *exp = INT64_MAX;
            return TSLOCK_OK;
        }
    if (len == 0)
        return unreadable(why, "empty value", at, 0);
    if (d->php)
        return parse_php(d, v, len, exp, why, at);
    return parse_template(d, v, len, exp, why, at);
}

/* ------------------------------------------------------- writing */

/* The time as the dialect writes it; *lease_end is when it ends for us. */
static int format_time(const struct tslock__dialect *d, char *buf, size_t size,
                       int64_t now, int64_t ttl, int bridge, uint64_t random,
                       int64_t *lease_end)
{
    int64_t end = now + ttl, n, bound;
    int len;

    if (now <= 0 || ttl <= 0 || end > DIALECT_MAX_MS || size < 32)
        return TSLOCK_EINVAL;
    bound = bridge ? tslock__bridge_bound_ms(d->unit, ttl) : 0;
    switch (d->unit) {
    case TSLOCK_UNIT_MS:
        n = end + (d->plus_one ? 1 : 0);
        if (bridge)
            n += (int64_t)(random % (uint64_t)(bound + 1));
        len = snprintf(buf, size, "%" PRId64, n);
        *lease_end = bridge ? end : n;
        return len;
    case TSLOCK_UNIT_S:
        if (d->plus_one)
            n = now / 1000 + (ttl + 999) / 1000 + 1;
        else
            n = (end + 999) / 1000;
        /* A reader of whole seconds with no +1 may call S expired at S. */
        *lease_end = d->plus_one ? n * 1000 + 999 : n * 1000 - 1;
        if (bridge) {
            n += (int64_t)(random % (uint64_t)(bound / 1000 + 1));
            *lease_end = end;
        }
        return snprintf(buf, size, "%" PRId64, n);
    default:
        n = end + (d->plus_one ? 1000 : 0);
        len = snprintf(buf, size, "%" PRId64 ".%03" PRId64, n / 1000, n % 1000);
        /* redis-py calls S.000 expired once time() passes it: 1 ms less. */
        *lease_end = (bridge ? end : n) - 1;
        if (bridge && (size_t)len + 7 <= size)
            len += snprintf(buf + len, size - (size_t)len, "%06u",
                            (unsigned)(random % 1000000));
        return len;
    }
}

/* This host's name as values carry it: letters, digits, '.', '_', '-'. */
static void host_name(char *buf, size_t size)
{
    char raw[HOST_MAX + 1];
    size_t i, n = 0;

    if (gethostname(raw, sizeof(raw)) != 0)
        raw[0] = '\0';
    raw[HOST_MAX] = '\0';
    for (i = 0; raw[i] != '\0' && n + 1 < size && n < HOST_WRITE_MAX; i++) {
        char ch = raw[i];
        if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z')
            || (ch >= '0' && ch <= '9') || ch == '.' || ch == '_' || ch == '-')
            buf[n++] = ch;
    }
    if (n == 0)
        buf[n++] = 'h';
    buf[n] = '\0';
}

/* Append pre, n bytes of s, then post; 0 when it does not fit. */
static int put(char *buf, size_t size, size_t *off, const char *pre,
               const char *s, size_t n, const char *post)
{
    size_t a = strlen(pre), b = strlen(post);

    if (*off + a + n + b >= size)
        return 0;
    memcpy(buf + *off, pre, a);
    memcpy(buf + *off + a, s, n);
    memcpy(buf + *off + a + n, post, b);
    *off += a + n + b;
    buf[*off] = '\0';
    return 1;
}

int tslock__dialect_format(const struct tslock__dialect *d, char *buf,
                           size_t size, int64_t now_ms, int64_t ttl_ms,
                           int bridge, uint64_t random, int64_t *lease_end)
{
    char time[48], host[HOST_WRITE_MAX + 1], num[24];
    size_t off = 0;
    int i, n;

    n = format_time(d, time, sizeof(time), now_ms, ttl_ms, bridge, random >> 20,
                    lease_end);
    if (n < 0 || buf == NULL || size == 0)
        return TSLOCK_EINVAL;
    host[0] = '\0'; /* asked of the kernel only by a dialect with {host} */
    buf[0] = '\0';
    if (d->php) {
        snprintf(num, sizeof(num), "a:%d:{", d->nparts);
        if (!put(buf, size, &off, "", num, strlen(num), ""))
            return TSLOCK_EINVAL;
    }
    for (i = 0; i < d->nparts; i++) {
        const struct tslock__part *part = &d->part[i];
        const char *s = part->text;
        int ok = 1;

        if (d->php) {
            snprintf(num, sizeof(num), "s:%zu:", strlen(s));
            ok = put(buf, size, &off, "", num, strlen(num), "")
                 && put(buf, size, &off, "\"", s, strlen(s), "\";");
        }
        switch (part->kind) {
        case TSLOCK__PART_LITERAL:
            ok = ok && put(buf, size, &off, "", s, strlen(s), "");
            break;
        case TSLOCK__PART_TIME:
            if (d->php)
                ok = ok
                     && put(buf, size, &off,
                            d->unit == TSLOCK_UNIT_FLOAT ? "d:" : "i:", time,
                            (size_t)n, ";");
            else
                ok = ok && put(buf, size, &off, "", time, (size_t)n, "");
            break;
        case TSLOCK__PART_PID:
        case TSLOCK__PART_TID:
            /*
             * A thread id is made unique per hold (the low random bits),
             * so two holders that write the same time still differ.
             */
            snprintf(num, sizeof(num), "%" PRIu64,
                     part->kind == TSLOCK__PART_PID
                         ? (uint64_t)getpid()
                         : 1000 + (random & 0xfffff));
            ok = ok
                 && put(buf, size, &off, d->php ? "i:" : "", num, strlen(num),
                        d->php ? ";" : "");
            break;
        default:
            if (host[0] == '\0')
                host_name(host, sizeof(host));
            if (d->php) {
                snprintf(num, sizeof(num), "s:%zu:", strlen(host));
                ok = ok && put(buf, size, &off, "", num, strlen(num), "")
                     && put(buf, size, &off, "\"", host, strlen(host), "\";");
            } else {
                ok = ok && put(buf, size, &off, "", host, strlen(host), "");
            }
        }
        if (!ok)
            return TSLOCK_EINVAL;
    }
    if (d->php && !put(buf, size, &off, "", "}", 1, ""))
        return TSLOCK_EINVAL;
    return (int)off;
}

int tslock__dialect_wants_random(const struct tslock__dialect *d, int bridge)
{
    int i;

    for (i = 0; !bridge && i < d->nparts; i++)
        if (d->part[i].kind == TSLOCK__PART_TID)
            return 1;
    return bridge;
}

/* ------------------------------------------------- public readers */

int tslock_dialect_check(const char *dialect, char *err, size_t size)
{
    struct tslock__dialect d;

    if (err != NULL && size > 0)
        err[0] = '\0';
    return tslock__dialect_compile(&d, dialect, err, size);
}

int tslock_dialect_parse(const char *dialect, const char *value, size_t len,
                         int64_t *expires_ms)
{
    struct tslock__dialect d;
    const char *why;

    if (value == NULL || expires_ms == NULL
        || tslock__dialect_compile(&d, dialect, NULL, 0) != TSLOCK_OK)
        return TSLOCK_EINVAL;
    return tslock__dialect_parse(&d, value, len, expires_ms, &why, NULL);
}

const char *tslock__dialect_closest(const char *v, size_t len)
{
    size_t i, best_at = 0, at;
    const char *best = NULL, *why;
    struct tslock__dialect d;
    int64_t exp;

    for (i = 0; i < PRESET_COUNT; i++) {
        if (tslock__dialect_compile(&d, presets[i].name, NULL, 0) != TSLOCK_OK)
            continue;
        if (tslock__dialect_parse(&d, v, len, &exp, &why, &at) == TSLOCK_OK)
            return presets[i].name;
        if (best == NULL || at > best_at) {
            best = presets[i].name;
            best_at = at;
        }
    }
    return best;
}

/*
 * The presets compiled once: survey names every key of a server with
 * them, and compiling ten formats per key cost more than reading it.
 */
static struct tslock__dialect compiled[PRESET_COUNT];
static int compiled_ok[PRESET_COUNT];
static pthread_once_t compiled_once = PTHREAD_ONCE_INIT;

static void compile_presets(void)
{
    size_t i;

    for (i = 0; i < PRESET_COUNT; i++)
        compiled_ok[i] =
            tslock__dialect_compile(&compiled[i], presets[i].name, NULL, 0)
            == TSLOCK_OK;
}

int tslock_dialect_match(const char *value, size_t len, char *names,
                         size_t size, int64_t *expires_ms)
{
    const struct tslock__dialect *d;
    char all[PRESET_COUNT * 32];
    size_t i, off = 0, n, cut;
    int found = 0;
    const char *why;
    int64_t exp;

    if (value == NULL || names == NULL || size == 0)
        return TSLOCK_EINVAL;
    all[0] = '\0';
    pthread_once(&compiled_once, compile_presets);
    for (i = 0; i < PRESET_COUNT; i++) {
        d = &compiled[i];
        if (!compiled_ok[i]
            || tslock__dialect_parse(d, value, len, &exp, &why, NULL)
                   != TSLOCK_OK)
            continue;
        /*
         * Their readers take a whole number as float seconds too, but
         * Ruby's and Python's floats are written with a '.', so a whole
         * number was not written by a float dialect's own clients.
         */
        if (d->unit == TSLOCK_UNIT_FLOAT && exp != INT64_MAX
            && memchr(value, '.', len) == NULL)
            continue;
        if (!found && expires_ms != NULL)
            *expires_ms = exp;
        off += (size_t)snprintf(all + off, sizeof(all) - off, "%s%s",
                                found ? "/" : "", presets[i].name);
        found = 1;
    }
    n = strlen(all);
    if (n < size) {
        memcpy(names, all, n + 1);
    } else {
        /* Cut at a name, with "/..." after it; else the first name cut. */
        for (cut = size > 4 ? size - 4 : 0; cut > 0 && all[cut] != '/'; cut--)
            ;
        if (cut > 0) {
            memcpy(names, all, cut);
            memcpy(names + cut, "/...", 5);
        } else { /* the first name, as much of it as fits */
            cut = strcspn(all, "/");
            cut = cut < size - 1 ? cut : size - 1;
            memcpy(names, all, cut);
            names[cut] = '\0';
        }
    }
    return found ? TSLOCK_OK : TSLOCK_EUNREADABLE;
}

/* A quoted value for a message: in full, or cut with how much was cut. */
void tslock__quote_value(char *buf, size_t size, const char *v, size_t len)
{
    size_t keep = size > 48 ? size - 48 : 0;

    if (len <= keep)
        snprintf(buf, size, "\"%.*s\"", (int)len, v);
    else
        snprintf(buf, size, "\"%.*s\"... (%zu of %zu bytes shown)", (int)keep,
                 v, keep, len);
}

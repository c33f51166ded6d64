/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * url.c - reading where to connect from a URL: redis://[[user]:password@]
 * host[:port][/db], unix://[[user]:password@]/path/to/socket[?db=N] and
 * redis+sentinel://[[user]:password@]host[:port][,host[:port]...]/NAME
 * [/db][?sentinel_password=P], and connecting a client to one.
 * The one parser of the tool and the bindings, so a URL means the same
 * everywhere.  A bad URL gets one line naming the part that is wrong; the
 * line never repeats the password, since URLs end up in logs.
 */
#include <ctype.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "tslock_int.h"

#define DEFAULT_PORT          6379
#define DEFAULT_SENTINEL_PORT 26379
#define SENTINEL_FORM                                                          \
    "redis+sentinel://[[user]:password@]host[:port][,host[:port]...]/"         \
    "MASTERNAME[/db]"

struct parse_error {
    char *buf;
    size_t size;
    int nomem; /* the failure was memory, not the URL */
};

static int url_fail(struct parse_error *e, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

static int url_fail(struct parse_error *e, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(e->buf, e->size, fmt, ap);
    va_end(ap);
    return -1;
}

static int hex_value(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    c = tolower(c);
    return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Percent-decode s[0..len) into a new string at *out. */
static int decode(const char *s, size_t len, const char *what, char **out,
                  struct parse_error *e)
{
    char *d = malloc(len + 1);
    size_t i, n = 0;

    if (d == NULL) {
        e->nomem = 1;
        return url_fail(e, "out of memory");
    }
    for (i = 0; i < len; i++) {
        int hi, lo;
        if (s[i] != '%') {
            d[n++] = s[i];
            continue;
        }
        hi = i + 2 < len ? hex_value(s[i + 1]) : -1;
        lo = i + 2 < len ? hex_value(s[i + 2]) : -1;
        if (hi < 0 || lo < 0 || (hi == 0 && lo == 0)) {
            free(d);
            return url_fail(e,
                            "the %s in the URL has a bad percent-escape "
                            "(expected %%XX with two hex digits, not %%00)",
                            what);
        }
        d[n++] = (char)(hi * 16 + lo);
        i += 2;
    }
    d[n] = '\0';
    *out = d;
    return 0;
}

/* A database number: decimal digits only, within an int. */
static int parse_db(const char *s, size_t len, int *db, struct parse_error *e)
{
    long v = 0;
    size_t i;

    for (i = 0; i < len && i < 10; i++) {
        if (!isdigit((unsigned char)s[i]))
            break;
        v = v * 10 + (s[i] - '0');
    }
    if (len == 0 || i != len || v > INT_MAX)
        return url_fail(e,
                        "expected a database number from 0 up in the URL, "
                        "got '%.*s'",
                        (int)(len > 40 ? 40 : len), s);
    *db = (int)v;
    return 0;
}

/*
 * The query: db=N, and with Sentinel sentinel_password=P; *have_db says
 * a database was seen.  An unknown parameter is named without its value,
 * which may be a secret.
 */
/*
 * A TLS parameter of the query, as redis-py spells it (ssl_ca_certs=,
 * ssl_cert_reqs=none|optional|required, ...): 1 when q is one (handled,
 * or -1 on error), 0 when it is not.
 */
static int parse_tls_param(const char *q, size_t len, size_t name,
                           struct tslock_url *u, struct parse_error *e)
{
    static const char *const names[] = {
        "ssl_ca_certs",       "ssl_ca_path",         "ssl_certfile",
        "ssl_keyfile",        "ssl_password",        "ssl_cert_reqs",
        "ssl_check_hostname", "ssl_server_hostname", NULL};
    char key[24], *value = NULL, err[200];
    size_t i;
    int rc;

    for (i = 0; names[i] != NULL; i++)
        if (strlen(names[i]) == name && strncmp(q, names[i], name) == 0)
            break;
    if (names[i] == NULL)
        return 0;
    if (u->tls == NULL)
        return url_fail(e, "the URL parameter '%s' needs rediss:// (TLS)",
                        names[i]),
               -1;
    if (name == len || name + 1 == len)
        return url_fail(e, "the URL parameter '%s' has no value", names[i]), -1;
    snprintf(key, sizeof(key), "%s", names[i]);
    if (decode(q + name + 1, len - name - 1, key, &value, e) != 0)
        return -1;
    rc = tslock_tls_set(u->tls, key, value, err, sizeof(err));
    memset(value, 0, strlen(value)); /* ssl_password= is a secret */
    free(value);
    if (rc == TSLOCK_ENOMEM)
        e->nomem = 1;
    if (rc != TSLOCK_OK)
        return url_fail(e, "in the URL: %s", err), -1;
    return 1;
}

static int parse_query(const char *q, struct tslock_url *u, int *have_db,
                       struct parse_error *e)
{
    static const char sp[] = "sentinel_password=";

    while (*q != '\0') {
        size_t len = strcspn(q, "&");
        size_t name = strcspn(q, "=&");
        int tls = parse_tls_param(q, len, name, u, e);
        if (tls < 0)
            return -1;
        if (tls > 0) {
            /* taken */
        } else if (len > 3 && strncmp(q, "db=", 3) == 0) {
            if (*have_db)
                return url_fail(e, "the URL names the database twice");
            if (parse_db(q + 3, len - 3, &u->db, e) != 0)
                return -1;
            *have_db = 1;
        } else if (u->nsentinels > 0 && len >= sizeof(sp) - 1
                   && strncmp(q, sp, sizeof(sp) - 1) == 0) {
            if (u->sentinel_password != NULL)
                return url_fail(e, "the URL gives sentinel_password twice");
            if (decode(q + sizeof(sp) - 1, len - (sizeof(sp) - 1),
                       "sentinel password", &u->sentinel_password, e)
                != 0)
                return -1;
        } else if (len > 0) {
            return url_fail(e,
                            "unknown URL parameter '%.*s' (only db=N%s%s is "
                            "understood)",
                            (int)(name > 40 ? 40 : name), q,
                            u->nsentinels > 0 ? ", sentinel_password=P" : "",
                            u->tls != NULL ? " and redis-py's ssl_* "
                                             "parameters"
                                           : "");
        }
        q += len + (q[len] == '&');
    }
    return 0;
}

/* "user:password", ":password" or "user", already cut from the '@'. */
static int parse_userinfo(const char *s, size_t len, struct tslock_url *u,
                          struct parse_error *e)
{
    const char *colon = memchr(s, ':', len);
    size_t user_len = colon != NULL ? (size_t)(colon - s) : len;

    if (user_len > 0 && decode(s, user_len, "user", &u->user, e) != 0)
        return -1;
    if (colon != NULL
        && decode(colon + 1, len - user_len - 1, "password", &u->password, e)
               != 0)
        return -1;
    return 0;
}

static int parse_port(const char *s, size_t len, int *port,
                      struct parse_error *e)
{
    long v = 0;
    size_t i;

    for (i = 0; i < len && i < 6 && isdigit((unsigned char)s[i]); i++)
        v = v * 10 + (s[i] - '0');
    if (len == 0 || i != len || v < 1 || v > 65535)
        return url_fail(e,
                        "the port in the URL must be a number from 1 to "
                        "65535, got '%.*s'",
                        (int)(len > 40 ? 40 : len), s);
    *port = (int)v;
    return 0;
}

/* "host", "host:port", "[v6]" or "[v6]:port". */
static int parse_hostport(const char *s, size_t len, struct tslock_url *u,
                          struct parse_error *e)
{
    const char *host = s, *port = NULL;
    size_t host_len = len;

    if (len > 0 && s[0] == '[') {
        const char *close = memchr(s, ']', len);
        if (close == NULL)
            return url_fail(e, "the URL has '[' with no ']' around the host");
        host = s + 1;
        host_len = (size_t)(close - host);
        if (close + 1 < s + len && close[1] != ':')
            return url_fail(e, "expected ':port' after ']' in the URL");
        if (close + 1 < s + len)
            port = close + 2;
    } else {
        const char *colon = memchr(s, ':', len);
        if (colon != NULL && memchr(colon + 1, ':', len - (colon - s) - 1))
            return url_fail(e, "an IPv6 host in a URL must be in brackets, "
                               "as in redis://[::1]:6379");
        if (colon != NULL) {
            host_len = (size_t)(colon - s);
            port = colon + 1;
        }
    }
    if (host_len == 0)
        return url_fail(e, "the URL has no host (expected "
                           "redis://host[:port][/db])");
    if (port != NULL && parse_port(port, (size_t)(s + len - port), &u->port, e))
        return -1;
    return decode(host, host_len, "host", &u->host, e);
}

static int parse_redis(const char *rest, struct tslock_url *u,
                       struct parse_error *e)
{
    size_t auth_len = strcspn(rest, "/?");
    const char *path = rest + auth_len, *at = NULL, *p;
    size_t path_len = strcspn(path, "?");
    int have_db = 0;

    for (p = rest; p < rest + auth_len; p++)
        if (*p == '@')
            at = p; /* the last '@': an unescaped one in a password */
    if (at != NULL) {
        if (parse_userinfo(rest, (size_t)(at - rest), u, e) != 0)
            return -1;
        auth_len -= (size_t)(at + 1 - rest);
        rest = at + 1;
    }
    if (parse_hostport(rest, auth_len, u, e) != 0)
        return -1;
    if (path_len > 1) {
        if (parse_db(path + 1, path_len - 1, &u->db, e) != 0)
            return -1;
        have_db = 1;
    }
    if (path[path_len] == '?')
        return parse_query(path + path_len + 1, u, &have_db, e);
    return 0;
}

/* One "host[:port]" of the sentinel list, at index i. */
static int parse_sentinel(const char *s, size_t len, struct tslock_url *u,
                          struct parse_error *e)
{
    int i = u->nsentinels;

    if (len == 0)
        return url_fail(e,
                        "the URL has an empty sentinel address (expected "
                        "%s)",
                        SENTINEL_FORM);
    if (i == TSLOCK_URL_MAX_SENTINELS)
        return url_fail(e, "the URL lists more than %d sentinels",
                        TSLOCK_URL_MAX_SENTINELS);
    u->port = DEFAULT_SENTINEL_PORT;
    if (parse_hostport(s, len, u, e) != 0)
        return -1;
    u->sentinel_hosts[i] = u->host;
    u->sentinel_ports[i] = u->port;
    u->host = NULL;
    u->nsentinels = i + 1;
    return 0;
}

/* "/MASTERNAME" or "/MASTERNAME/db", already cut from the query. */
static int parse_master(const char *path, size_t len, struct tslock_url *u,
                        int *have_db, struct parse_error *e)
{
    const char *slash;
    size_t name_len;

    if (len < 2 || path[0] != '/' || path[1] == '/')
        return url_fail(e, "the URL names no master (expected %s)",
                        SENTINEL_FORM);
    path++;
    len--;
    slash = memchr(path, '/', len);
    name_len = slash != NULL ? (size_t)(slash - path) : len;
    if (decode(path, name_len, "master name", &u->master_name, e) != 0)
        return -1;
    if (slash != NULL && slash + 1 < path + len) {
        if (parse_db(slash + 1, (size_t)(path + len - slash - 1), &u->db, e)
            != 0)
            return -1;
        *have_db = 1;
    }
    return 0;
}

static int parse_sentinel_url(const char *rest, struct tslock_url *u,
                              struct parse_error *e)
{
    size_t auth_len = strcspn(rest, "/?");
    const char *path = rest + auth_len, *at = NULL, *p, *end;
    size_t path_len = strcspn(path, "?");
    int have_db = 0;

    for (p = rest; p < rest + auth_len; p++)
        if (*p == '@')
            at = p; /* the last '@', as with redis:// */
    if (at != NULL) {
        if (parse_userinfo(rest, (size_t)(at - rest), u, e) != 0)
            return -1;
        auth_len -= (size_t)(at + 1 - rest);
        rest = at + 1;
    }
    end = rest + auth_len;
    for (p = rest;; p++) {
        if (p == end || *p == ',') {
            if (parse_sentinel(rest, (size_t)(p - rest), u, e) != 0)
                return -1;
            rest = p + 1;
        }
        if (p == end)
            break;
    }
    u->host = NULL;
    u->port = 0;
    if (parse_master(path, path_len, u, &have_db, e) != 0)
        return -1;
    if (path[path_len] == '?')
        return parse_query(path + path_len + 1, u, &have_db, e);
    return 0;
}

static int parse_unix(const char *rest, struct tslock_url *u,
                      struct parse_error *e)
{
    const char *at = strstr(rest, "@/");
    size_t path_len;
    int have_db = 0;

    if (rest[0] != '/' && at != NULL) {
        if (parse_userinfo(rest, (size_t)(at - rest), u, e) != 0)
            return -1;
        rest = at + 1;
    }
    path_len = strcspn(rest, "?");
    if (rest[0] != '/' || path_len < 2)
        return url_fail(e, "expected unix:///path/to/socket[?db=N] (an "
                           "absolute socket path after unix://)");
    u->is_unix = 1;
    if (decode(rest, path_len, "socket path", &u->host, e) != 0)
        return -1;
    if (rest[path_len] == '?')
        return parse_query(rest + path_len + 1, u, &have_db, e);
    return 0;
}

static int is_scheme(const char *text, size_t len, const char *scheme)
{
    return strlen(scheme) == len && strncasecmp(text, scheme, len) == 0;
}

/* rediss://: TLS settings to fill from the query. */
static int start_tls(struct tslock_url *u, struct parse_error *e)
{
    int rc = tslock_tls_new(&u->tls);

    if (rc == TSLOCK_ENOMEM) {
        e->nomem = 1;
        return url_fail(e, "out of memory");
    }
    if (rc != TSLOCK_OK)
        return url_fail(e, "rediss:// (TLS): this libtslock was built "
                           "without TLS (configure --with-tls, OpenSSL)");
    return 0;
}

/*
 * With TSLOCK_URL_ENV_AUTH, a URL without a password takes the one in
 * $REDISCLI_AUTH, as redis-cli does; a user needs a password either way.
 */
static int complete_auth(struct tslock_url *u, unsigned flags,
                         struct parse_error *e)
{
    const char *env = getenv("REDISCLI_AUTH");

    if (!(flags & TSLOCK_URL_ENV_AUTH))
        env = NULL;
    if (u->password == NULL && env != NULL && env[0] != '\0') {
        u->password = strdup(env);
        if (u->password == NULL) {
            e->nomem = 1;
            return url_fail(e, "out of memory");
        }
    }
    if (u->user != NULL && u->password == NULL)
        return url_fail(e,
                        "the URL names user '%s' but no password (give it "
                        "in the URL%s)",
                        u->user,
                        (flags & TSLOCK_URL_ENV_AUTH) ? " or in $REDISCLI_AUTH"
                                                      : "");
    return 0;
}

int tslock_url_parse(const char *text, unsigned flags, struct tslock_url *u,
                     char *err, size_t errsize)
{
    struct parse_error e = {err, errsize, 0};
    const char *sep;
    size_t scheme_len;
    int rc;

    if (u == NULL)
        return TSLOCK_EINVAL;
    memset(u, 0, sizeof(*u));
    if (err != NULL && errsize > 0)
        err[0] = '\0';
    else
        e.size = 0;
    if (text == NULL)
        return url_fail(&e, "expected a URL, got NULL"), TSLOCK_EINVAL;
    sep = strstr(text, "://");
    scheme_len = sep != NULL ? (size_t)(sep - text) : 0;
    u->port = DEFAULT_PORT;
    if (sep == NULL || scheme_len == 0 || strcspn(text, ":@/") < scheme_len)
        rc = url_fail(&e, "expected redis://, unix:// or redis+sentinel:// "
                          "(rediss:// for TLS) at the start of the URL");
    else if (is_scheme(text, scheme_len, "rediss")
             || is_scheme(text, scheme_len, "rediss+sentinel"))
        rc = start_tls(u, &e);
    else
        rc = 0;
    if (rc != 0)
        ; /* no TLS in this libtslock, or no memory */
    else if (is_scheme(text, scheme_len, "redis+sentinel")
             || is_scheme(text, scheme_len, "rediss+sentinel"))
        rc = parse_sentinel_url(sep + 3, u, &e);
    else if (is_scheme(text, scheme_len, "redis")
             || is_scheme(text, scheme_len, "rediss"))
        rc = parse_redis(sep + 3, u, &e);
    else if (is_scheme(text, scheme_len, "unix"))
        rc = parse_unix(sep + 3, u, &e);
    else
        rc = url_fail(&e,
                      "expected redis://, unix:// or redis+sentinel:// "
                      "(rediss:// for TLS) at the start of the URL, got "
                      "'%.*s://'",
                      (int)(scheme_len > 20 ? 20 : scheme_len), text);
    if (rc == 0)
        rc = complete_auth(u, flags, &e);
    if (rc == 0)
        return TSLOCK_OK;
    tslock_url_free(u);
    return e.nomem ? TSLOCK_ENOMEM : TSLOCK_EINVAL;
}

void tslock_url_free(struct tslock_url *u)
{
    int i;

    if (u == NULL)
        return;
    free(u->host);
    free(u->user);
    for (i = 0; i < u->nsentinels; i++)
        free(u->sentinel_hosts[i]);
    free(u->master_name);
    tslock_tls_free(u->tls);
    if (u->sentinel_password != NULL) {
        memset(u->sentinel_password, 0, strlen(u->sentinel_password));
        free(u->sentinel_password);
    }
    if (u->password != NULL) {
        /* Do not leave the password in freed memory. */
        memset(u->password, 0, strlen(u->password));
        free(u->password);
    }
    memset(u, 0, sizeof(*u));
}

void tslock_url_describe(const struct tslock_url *u, char *buf, size_t size)
{
    int n, i;

    if (u->nsentinels > 0) {
        n = snprintf(buf, size, "the master '%s' named by sentinel%s",
                     u->master_name, u->nsentinels == 1 ? "" : "s");
        for (i = 0; i < u->nsentinels && n >= 0 && (size_t)n < size; i++)
            n += snprintf(buf + n, size - n, "%s %s:%d", i > 0 ? "," : "",
                          u->sentinel_hosts[i], u->sentinel_ports[i]);
        if (n >= 0 && (size_t)n < size && u->sentinel_password != NULL)
            n += snprintf(buf + n, size - n, " (with their password)");
    } else if (u->is_unix)
        n = snprintf(buf, size, "unix socket %s", u->host);
    else
        n = snprintf(buf, size, "%s port %d", u->host, u->port);
    if (n < 0 || (size_t)n >= size)
        return;
    snprintf(buf + n, size - n, ", db %d%s%s%s%s", u->db,
             u->user != NULL ? ", user " : "", u->user != NULL ? u->user : "",
             u->password != NULL ? ", with a password" : "",
             u->tls != NULL ? ", TLS" : "");
}

/*
 * Where tslock_url_parse() finds the user information: [*start, *end) is
 * what comes before the '@' that ends it.  Returns 0 when there is none.
 */
static int find_userinfo(char *text, char **start, char **end)
{
    char *sep = strstr(text, "://"), *rest, *p, *at = NULL;
    size_t auth_len;

    if (sep == NULL)
        return 0;
    rest = sep + 3;
    if ((size_t)(sep - text) == 4 && strncasecmp(text, "unix", 4) == 0) {
        at = rest[0] != '/' ? strstr(rest, "@/") : NULL;
        /*
         * A malformed unix:// URL ("unix://u:pw@relative") is refused
         * by the parser, but its password is in argv all the same: the
         * last '@' before the query ends the user information then.
         */
        auth_len = at == NULL && rest[0] != '/' ? strcspn(rest, "?") : 0;
        for (p = rest; p < rest + auth_len; p++)
            if (*p == '@')
                at = p;
    } else {
        auth_len = strcspn(rest, "/?");
        for (p = rest; p < rest + auth_len; p++)
            if (*p == '@')
                at = p; /* the last '@', as parse_redis() takes it */
    }
    if (at == NULL)
        return 0;
    *start = rest;
    *end = at;
    return 1;
}

/* Hide the value at v, up to the next '&': 1 when there was one. */
static int scrub_value(char *v)
{
    size_t hidden = strcspn(v, "&"), stars, tail;

    if (hidden == 0)
        return 0;
    stars = hidden < 3 ? hidden : 3;
    tail = strlen(v + hidden) + 1;
    memset(v, '*', stars);
    memmove(v + stars, v + hidden, tail);
    memset(v + stars + tail, 0, hidden - stars);
    return 1;
}

/* Hide the value of every ?NAME= (and &NAME=) the same way. */
static int scrub_param(char *text, const char *name)
{
    char *q = strchr(text, '?');
    size_t len = strlen(name);
    int found = 0;

    while (q != NULL) {
        q++;
        if (strncmp(q, name, len) == 0 && q[len] == '='
            && scrub_value(q + len + 1))
            found = 1;
        q = strchr(q, '&');
    }
    return found;
}
int tslock_url_scrub(char *text)
{
    char *start, *at, *colon, *hide;
    size_t hidden, stars, tail;
    int sentinel;

    if (text == NULL)
        return 0;
    /* The query's secrets: the sentinels' password, the key's. */
    sentinel = scrub_param(text, "sentinel_password");
    sentinel |= scrub_param(text, "ssl_password");
    if (!find_userinfo(text, &start, &at))
        return sentinel;
    colon = memchr(start, ':', (size_t)(at - start));
    if (colon == NULL || colon + 1 == at)
        return sentinel; /* no password, or an empty one */
    /* With no user, the colon goes too, leaving three stars before @. */
    hide = colon == start ? colon : colon + 1;
    hidden = (size_t)(at - hide);
    stars = hidden < 3 ? hidden : 3;
    tail = strlen(at) + 1;
    memset(hide, '*', stars);
    memmove(hide + stars, at, tail);
    /* The string got shorter: clear the bytes it no longer uses. */
    memset(hide + stars + tail, 0, hidden - stars);
    return 1;
}

/*
 * The settings a URL carries (credentials, database, the sentinels'
 * password), then the connection it names; timeouts, the clock and the
 * time source stay the caller's.
 */
int tslock_client_connect_parsed_url(tslock_client *client,
                                     const struct tslock_url *u)
{
    int rc = TSLOCK_OK;

    if (client == NULL || u == NULL || (u->host == NULL && u->nsentinels == 0))
        return client != NULL ? tslock__fail(client, TSLOCK_EINVAL,
                                             "expected a parsed URL, got "
                                             "an empty one")
                              : TSLOCK_EINVAL;
    if (u->password != NULL)
        rc = tslock_client_set_auth(client, u->user, u->password);
    if (rc == TSLOCK_OK)
        rc = tslock_client_set_db(client, u->db);
    if (rc == TSLOCK_OK && u->sentinel_password != NULL)
        rc =
            tslock_client_set_sentinel_auth(client, NULL, u->sentinel_password);
    if (rc == TSLOCK_OK && u->tls != NULL)
        rc = tslock_client_set_tls(client, u->tls);
    if (rc != TSLOCK_OK)
        return rc;
    if (u->nsentinels > 0)
        return tslock_client_connect_sentinel(
            client, u->nsentinels, (const char *const *)u->sentinel_hosts,
            u->sentinel_ports, u->master_name);
    return u->is_unix ? tslock_client_connect_unix(client, u->host)
                      : tslock_client_connect_tcp(client, u->host, u->port);
}

int tslock_client_connect_url(tslock_client *client, const char *url)
{
    struct tslock_url u;
    char err[256];
    int rc;

    if (client == NULL)
        return TSLOCK_EINVAL;
    rc = tslock_url_parse(url, 0, &u, err, sizeof(err));
    if (rc != TSLOCK_OK)
        return tslock__fail(client, rc, "%s", err);
    rc = tslock_client_connect_parsed_url(client, &u);
    tslock_url_free(&u);
    return rc;
}

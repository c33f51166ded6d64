/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * options.c - reading tslock's command line into a request and options:
 * the option table, the checks on each value, and taking any password
 * out of the process's own argv so ps does not show it.  No form runs
 * here, so a fuzz target can call cli_parse_args() on any argv.
 */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"

/* The library refuses leases over ten years: a mistake, not a lease. */
#define MAX_TTL_MS INT64_C(315360000000)

/*
 * Options without a short form.  To add one: a value here, a row in
 * long_options, and a case in apply_option (or the parser it calls).
 */
enum long_only {
    OPT_STAMP = 256,
    OPT_DIALECT,
    OPT_CLOCK,
    OPT_TAKEOVER_GRACE,
    OPT_KILL_ON_LOSS,
    OPT_WORKERS,
    OPT_DURATION,
    OPT_NO_AUTH_WARNING,
    OPT_TIMEOUT,
    OPT_FAIR,
    OPT_POLL,
    OPT_FENCE,
    OPT_IF_VALUE,
    OPT_MATCH,
    OPT_JSON,
    OPT_ALL,
    OPT_KEYS,
    OPT_FOR,
    OPT_SVG,
    OPT_LIST,
    OPT_REPLICAS,
    OPT_REPLICAS_TIMEOUT,
    OPT_SHARED,
    OPT_EXCLUSIVE,
    OPT_PERMITS,
    OPT_HTML,
    OPT_DOC,
    OPT_FUNCTIONS,
    OPT_PUBSUB,
    OPT_AT_LEAST,
    OPT_ONCE_PER,
    OPT_PERIOD_OFFSET,
    OPT_RETRY_FAILED,
    OPT_KEEP_PERIODS,
    OPT_HOST_NAME,
    OPT_LAST,
    OPT_TLS, /* the TLS options and --user: after the ranges above */
    OPT_CACERT,
    OPT_CACERTDIR,
    OPT_CERT,
    OPT_KEY,
    OPT_SNI,
    OPT_INSECURE,
    OPT_USER,
    OPT_ONCE,
    OPT_INTERVAL,
    OPT_LIMIT,
    OPT_SCAN_MAX,
    OPT_NO_MONITOR,
    OPT_LISTEN,
    OPT_PREFIX_DEPTH,
    OPT_PREFIX_SEP,
    OPT_MAX_SERIES,
    OPT_SCAN_BUDGET,
    OPT_MONITOR_DUTY,
    OPT_RECORD_MAX,
    OPT_SINCE
};

static const char short_options[] = ":u:a:m:t:w:rE:qvVh";

static const struct option long_options[] = {
    {"url", required_argument, NULL, 'u'},
    {"pass", required_argument, NULL, 'a'},
    {"user", required_argument, NULL, OPT_USER},
    {"tls", no_argument, NULL, OPT_TLS},
    {"cacert", required_argument, NULL, OPT_CACERT},
    {"cacertdir", required_argument, NULL, OPT_CACERTDIR},
    {"cert", required_argument, NULL, OPT_CERT},
    {"key", required_argument, NULL, OPT_KEY},
    {"sni", required_argument, NULL, OPT_SNI},
    {"insecure", no_argument, NULL, OPT_INSECURE},
    {"mode", required_argument, NULL, 'm'},
    {"stamp", required_argument, NULL, OPT_STAMP},
    {"dialect", required_argument, NULL, OPT_DIALECT},
    {"clock", required_argument, NULL, OPT_CLOCK},
    {"functions", required_argument, NULL, OPT_FUNCTIONS},
    {"pubsub", required_argument, NULL, OPT_PUBSUB},
    {"takeover-grace", required_argument, NULL, OPT_TAKEOVER_GRACE},
    {"ttl", required_argument, NULL, 't'},
    {"wait", required_argument, NULL, 'w'},
    {"renew", no_argument, NULL, 'r'},
    {"kill-on-loss", no_argument, NULL, OPT_KILL_ON_LOSS},
    {"conflict-exit-code", required_argument, NULL, 'E'},
    {"quiet", no_argument, NULL, 'q'},
    {"verbose", no_argument, NULL, 'v'},
    {"version", no_argument, NULL, 'V'},
    {"help", no_argument, NULL, 'h'},
    {"workers", required_argument, NULL, OPT_WORKERS},
    {"duration", required_argument, NULL, OPT_DURATION},
    {"no-auth-warning", no_argument, NULL, OPT_NO_AUTH_WARNING},
    {"timeout", required_argument, NULL, OPT_TIMEOUT},
    {"fair", no_argument, NULL, OPT_FAIR},
    {"poll", no_argument, NULL, OPT_POLL},
    {"fence", no_argument, NULL, OPT_FENCE},
    {"if-value", required_argument, NULL, OPT_IF_VALUE},
    {"match", required_argument, NULL, OPT_MATCH},
    {"json", no_argument, NULL, OPT_JSON},
    {"all", no_argument, NULL, OPT_ALL},
    {"keys", no_argument, NULL, OPT_KEYS},
    {"for", required_argument, NULL, OPT_FOR},
    {"svg", required_argument, NULL, OPT_SVG},
    {"list", no_argument, NULL, OPT_LIST},
    {"replicas", required_argument, NULL, OPT_REPLICAS},
    {"replicas-timeout", required_argument, NULL, OPT_REPLICAS_TIMEOUT},
    {"shared", no_argument, NULL, OPT_SHARED},
    {"exclusive", no_argument, NULL, OPT_EXCLUSIVE},
    {"permits", required_argument, NULL, OPT_PERMITS},
    {"html", required_argument, NULL, OPT_HTML},
    {"doc", required_argument, NULL, OPT_DOC},
    {"at-least", required_argument, NULL, OPT_AT_LEAST},
    {"once-per", required_argument, NULL, OPT_ONCE_PER},
    {"period-offset", required_argument, NULL, OPT_PERIOD_OFFSET},
    {"retry-failed", no_argument, NULL, OPT_RETRY_FAILED},
    {"keep-periods", required_argument, NULL, OPT_KEEP_PERIODS},
    {"host-name", required_argument, NULL, OPT_HOST_NAME},
    {"last", required_argument, NULL, OPT_LAST},
    {"once", no_argument, NULL, OPT_ONCE},
    {"interval", required_argument, NULL, OPT_INTERVAL},
    {"limit", required_argument, NULL, OPT_LIMIT},
    {"scan-max", required_argument, NULL, OPT_SCAN_MAX},
    {"no-monitor", no_argument, NULL, OPT_NO_MONITOR},
    {"listen", required_argument, NULL, OPT_LISTEN},
    {"prefix-depth", required_argument, NULL, OPT_PREFIX_DEPTH},
    {"prefix-sep", required_argument, NULL, OPT_PREFIX_SEP},
    {"max-series", required_argument, NULL, OPT_MAX_SERIES},
    {"scan-budget", required_argument, NULL, OPT_SCAN_BUDGET},
    {"monitor-duty", required_argument, NULL, OPT_MONITOR_DUTY},
    {"record-max", required_argument, NULL, OPT_RECORD_MAX},
    {"since", required_argument, NULL, OPT_SINCE},
    {NULL, 0, NULL, 0}};

int cli_usage_error(const char *fmt, ...)
{
    char line[512];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    cli_error("%s", line);
    return CLI_EXIT_USAGE;
}

/* A whole decimal integer within [min, max], or -1. */
static int parse_integer(const char *text, int64_t min, int64_t max,
                         int64_t *out)
{
    char *end;
    long long v;

    if (!((text[0] >= '0' && text[0] <= '9') || text[0] == '-'))
        return -1;
    errno = 0;
    v = strtoll(text, &end, 10);
    if (errno != 0 || *end != '\0' || end == text || v < min || v > max)
        return -1;
    *out = v;
    return 0;
}

/* --shared, --exclusive and --permits: one kind of lock at a time. */
static int kind_conflict(void)
{
    return cli_usage_error("--shared, --exclusive and --permits exclude "
                           "each other: a key is one kind of lock");
}

static int parse_number_option(int opt, const char *arg, struct cli_options *o)
{
    int64_t v;

    switch (opt) {
    case 't':
        if (parse_integer(arg, 1, MAX_TTL_MS, &o->ttl_ms) != 0)
            return cli_usage_error("--ttl expects a lease in milliseconds "
                                   "greater than 0, got '%s'",
                                   arg);
        o->ttl_given = 1;
        return 0;
    case 'w':
        if (parse_integer(arg, -1, MAX_TTL_MS, &o->wait_ms) != 0)
            return cli_usage_error("--wait expects milliseconds (0 tries "
                                   "once, -1 waits forever), got '%s'",
                                   arg);
        return 0;
    case 'E':
        if (parse_integer(arg, 0, 255, &v) != 0)
            return cli_usage_error("--conflict-exit-code expects a status "
                                   "from 0 to 255, got '%s'",
                                   arg);
        o->busy_status = (int)v;
        return 0;
    case OPT_TIMEOUT:
        if (parse_integer(arg, 1, 3600000, &v) != 0)
            return cli_usage_error("--timeout expects milliseconds from 1 to "
                                   "3600000 for connecting and for each "
                                   "command, got '%s'",
                                   arg);
        o->timeout_ms = (int)v;
        return 0;
    case OPT_PERMITS:
        if (parse_integer(arg, 1, INT64_C(1000000000), &o->permits) != 0)
            return cli_usage_error("--permits expects how many may hold the "
                                   "lock at once, from 1, got '%s'",
                                   arg);
        return o->rw != TSLOCK_RW_OFF ? kind_conflict() : 0;
    case OPT_WORKERS:
        if (parse_integer(arg, 1, 64, &v) != 0)
            return cli_usage_error("--workers expects a number from 1 to 64, "
                                   "got '%s'",
                                   arg);
        o->workers = (int)v;
        return 0;
    case OPT_REPLICAS:
        if (parse_integer(arg, 0, 64, &v) != 0)
            return cli_usage_error("--replicas expects how many replicas "
                                   "must acknowledge the lock, from 0 to "
                                   "64, got '%s'",
                                   arg);
        o->replicas = (int)v;
        return 0;
    case OPT_TAKEOVER_GRACE:
        /* The library's bound: a day past a stamp is not a grace. */
        if (parse_integer(arg, 0, 86400000, &o->takeover_grace_ms) != 0)
            return cli_usage_error("--takeover-grace expects milliseconds "
                                   "from 0 to 86400000 (one day), got '%s'",
                                   arg);
        return 0;
    case OPT_REPLICAS_TIMEOUT:
        if (parse_integer(arg, 1, 3600000, &v) != 0)
            return cli_usage_error("--replicas-timeout expects milliseconds "
                                   "from 1 to 3600000, got '%s'",
                                   arg);
        o->replicas_timeout_ms = (int)v;
        return 0;
    default: /* OPT_DURATION */
        if (parse_integer(arg, 100, 600000, &o->duration_ms) != 0)
            return cli_usage_error("--duration expects milliseconds from 100 "
                                   "to 600000, got '%s'",
                                   arg);
        return 0;
    }
}

static int parse_word_option(int opt, const char *arg, struct cli_options *o)
{
    static const char *const modes[] = {"auto", "timestamp", "token", "bridge"};
    static const char *const units[] = {"ms", "s", "float"};
    int i;

    if (opt == 'm') {
        for (i = 0; i < 4; i++)
            if (strcmp(arg, modes[i]) == 0) {
                o->scheme = (tslock_scheme)i;
                return 0;
            }
        return cli_usage_error("--mode expects auto, token, timestamp or "
                               "bridge, got '%s'",
                               arg);
    }
    if (opt == OPT_FUNCTIONS) {
        static const char *const fmodes[] = {"load", "use", "off"};
        for (i = 0; i < 3; i++)
            if (strcmp(arg, fmodes[i]) == 0) {
                o->functions = (tslock_functions)i;
                return 0;
            }
        return cli_usage_error("--functions expects load, use or off, got "
                               "'%s'",
                               arg);
    }
    if (opt == OPT_PUBSUB) {
        static const char *const pmodes[] = {"auto", "classic", "sharded"};
        for (i = 0; i < 3; i++)
            if (strcmp(arg, pmodes[i]) == 0) {
                o->pubsub = i; /* TSLOCK_PUBSUB_AUTO, _CLASSIC, _SHARDED */
                return 0;
            }
        return cli_usage_error("--pubsub expects auto, classic or sharded, "
                               "got '%s'",
                               arg);
    }
    if (opt == OPT_CLOCK) {
        if (strcmp(arg, "local") == 0 || strcmp(arg, "server") == 0) {
            o->time_source =
                arg[0] == 's' ? TSLOCK_TIME_SERVER : TSLOCK_TIME_LOCAL;
            return 0;
        }
        return cli_usage_error("--clock expects local or server, got '%s'",
                               arg);
    }
    for (i = 0; i < 3; i++)
        if (strcmp(arg, units[i]) == 0) {
            o->unit = (tslock_unit)i;
            return 0;
        }
    return cli_usage_error("--stamp expects ms, s or float, got '%s'", arg);
}

/* getopt's complaint, as one line of ours (opterr is off). */
static int option_error(int opt, char **argv)
{
    const char *arg = argv[optind - 1];

    if (opt == ':')
        return cli_usage_error("option '%s' needs a value", arg);
    if (optopt != 0 && strncmp(arg, "--", 2) != 0)
        return cli_usage_error("unknown option '-%c' (see tslock --help)",
                               optopt);
    return cli_usage_error("unknown option '%s' (see tslock --help)", arg);
}

/*
 * -u URL: keep a copy to parse later, then take the password out of the
 * argument itself, which is what ps and /proc/PID/cmdline show for as
 * long as tslock runs.  Every -u is scrubbed, not only the last.
 */
static int take_url(char *arg, struct cli_request *r)
{
    char *copy = strdup(arg);

    if (copy == NULL) {
        cli_error("out of memory");
        return CLI_EXIT_OSERR;
    }
    /* Several -u make a Redlock; each is kept, the first is the URL. */
    if (r->n_urls < CLI_MAX_MASTERS) {
        r->url_copies[r->n_urls] = copy;
        if (r->n_urls == 0) {
            r->url_copy = copy;
            r->url_text = copy;
        }
    } else {
        memset(copy, 0, strlen(copy));
        free(copy);
    }
    r->n_urls++;
    r->url_origin = "--url";
    if (tslock_url_scrub(arg))
        r->password_in_argv = 1;
    return 0;
}

/*
 * -a PASSWORD, as redis-cli's: kept, then overwritten in argv itself, as
 * mysql's client does, so ps and /proc/PID/cmdline show "***" while
 * tslock runs.  The rest of the argument becomes NULs.
 */
static int take_password(char *arg, struct cli_request *r)
{
    size_t len = strlen(arg), stars = len < 3 ? len : 3;

    if (r->password != NULL) {
        memset(r->password, 0, strlen(r->password));
        free(r->password);
    }
    r->password = strdup(arg);
    if (r->password == NULL) {
        cli_error("out of memory");
        return CLI_EXIT_OSERR;
    }
    memset(arg, '*', stars);
    memset(arg + stars, 0, len - stars);
    r->password_in_argv = 1;
    return 0;
}

/* --tls, --cacert, ...: kept by name, applied to each URL later. */
static int apply_tls_option(int opt, const char *arg, struct cli_request *r)
{
    static const char *const names[] = {"cacert", "cacertdir", "cert",
                                        "key",    "sni",       "insecure"};

    r->tls = 1;
    if (opt == OPT_TLS)
        return 0;
    if (opt == OPT_KEY)
        r->tls_key = arg;
    if (opt == OPT_INSECURE)
        cli_error("warning: --insecure: the server's certificate is not "
                  "checked, so anyone on the path can pose as the server");
    if (r->n_tls == (int)(sizeof(r->tls_name) / sizeof(r->tls_name[0])))
        return cli_usage_error("too many TLS options");
    r->tls_name[r->n_tls] = names[opt - OPT_CACERT];
    r->tls_value[r->n_tls++] = arg != NULL ? arg : "";
    return 0;
}

/* The options of the survey form: OPT_MATCH to OPT_KEYS of long_only. */
static int apply_survey_option(int opt, struct cli_options *o)
{
    switch (opt) {
    case OPT_MATCH:
        /* argv outlives every form, so the pattern is not copied. */
        o->survey_match = optarg;
        return 0;
    case OPT_JSON:
        o->survey_json = 1;
        return 0;
    case OPT_ALL:
        o->survey_all = 1;
        return 0;
    case OPT_KEYS:
        o->survey_keys = 1;
        return 0;
    default: /* OPT_LIST, of the replay form */
        o->replay_list = 1;
        return 0;
    }
}

/* The switches, which take no value: each sets one flag and cannot fail. */
static int apply_switch(int opt, struct cli_request *r, struct cli_options *o)
{
    switch (opt) {
    case 'r':
        o->renew = 1;
        return 0;
    case OPT_KILL_ON_LOSS:
        o->kill_on_loss = 1;
        return 0;
    case OPT_NO_AUTH_WARNING:
        r->no_auth_warning = 1;
        return 0;
    case OPT_FAIR:
        o->fair = 1;
        return 0;
    case OPT_POLL:
        o->poll = 1;
        return 0;
    case OPT_FENCE:
        o->fence = 1;
        return 0;
    case 'q':
        cli_verbosity = -1;
        return 0;
    case 'v':
        cli_verbosity = 1;
        return 0;
    case 'V':
        r->version = 1;
        return 0;
    default: /* 'h' */
        r->help = 1;
        return 0;
    }
}

/* The options whose value is kept as text, which must not be empty. */
static int apply_text_option(int opt, struct cli_options *o)
{
    switch (opt) {
    case OPT_IF_VALUE:
        if (optarg[0] == '\0')
            return cli_usage_error("--if-value expects the value to delete, "
                                   "got ''");
        o->if_value = optarg;
        return 0;
    case OPT_SVG:
        if (optarg[0] == '\0')
            return cli_usage_error("--svg expects a file name, got ''");
        o->svg_path = optarg; /* argv outlives every form */
        return 0;
    case OPT_HTML:
        if (optarg[0] == '\0')
            return cli_usage_error("--html expects a file name, got ''");
        o->html_path = optarg;
        return 0;
    default: /* OPT_DOC */
        if (optarg[0] == '\0')
            return cli_usage_error("--doc expects the address of "
                                   "doc/races.md, got ''");
        o->doc_url = optarg;
        return 0;
    }
}

int cli_parse_duration(const char *text, int64_t *out)
{
    static const struct {
        const char *suffix;
        int64_t ms;
    } units[] = {{"ms", 1},      {"s", 1000},     {"m", 60000},
                 {"h", 3600000}, {"d", 86400000}, {"", 1}};
    char *end;
    long long v;
    size_t i;

    if (text[0] < '0' || text[0] > '9')
        return -1;
    errno = 0;
    v = strtoll(text, &end, 10);
    if (errno != 0 || end == text)
        return -1;
    for (i = 0; i < sizeof(units) / sizeof(units[0]); i++)
        if (strcmp(end, units[i].suffix) == 0) {
            if (v > MAX_TTL_MS / units[i].ms)
                return -1;
            *out = v * units[i].ms;
            return 0;
        }
    return -1;
}

/* The options of scheduled jobs: --at-least, --once-per and theirs. */
static int apply_schedule_option(int opt, struct cli_options *o)
{
    static const char dur[] = "a duration such as 1d, 1h, 15m, 30s, 250ms "
                              "or plain milliseconds";

    switch (opt) {
    case OPT_AT_LEAST:
        if (cli_parse_duration(optarg, &o->at_least_ms) != 0)
            return cli_usage_error("--at-least expects %s, got '%s'", dur,
                                   optarg);
        return 0;
    case OPT_ONCE_PER:
        if (cli_parse_duration(optarg, &o->once_per_ms) != 0
            || o->once_per_ms < 1000)
            return cli_usage_error("--once-per expects %s, of 1s or more, "
                                   "got '%s'",
                                   dur, optarg);
        return 0;
    case OPT_PERIOD_OFFSET:
        if (cli_parse_duration(optarg, &o->period_offset_ms) != 0)
            return cli_usage_error("--period-offset expects %s, got '%s'", dur,
                                   optarg);
        return 0;
    case OPT_RETRY_FAILED:
        o->retry_failed = 1;
        return 0;
    case OPT_KEEP_PERIODS:
        if (parse_integer(optarg, 1, 100000, &o->keep_periods) != 0)
            return cli_usage_error("--keep-periods expects a number of "
                                   "periods from 1 to 100000, got '%s'",
                                   optarg);
        return 0;
    case OPT_HOST_NAME:
        if (optarg[0] == '\0' || strpbrk(optarg, " \t\r\n") != NULL)
            return cli_usage_error("--host-name expects a name without "
                                   "spaces, got '%s'",
                                   optarg);
        o->host_name = optarg;
        return 0;
    default: /* OPT_LAST */
        if (parse_integer(optarg, 1, 100000, &o->history_last) != 0)
            return cli_usage_error("--last expects a number of runs from 1 "
                                   "to 100000, got '%s'",
                                   optarg);
        return 0;
    }
}

/* The exporter's options, and survey --since. */
static int apply_exporter_option(int opt, struct cli_options *o)
{
    int64_t v;

    switch (opt) {
    case OPT_LISTEN:
        o->listen = optarg;
        return 0;
    case OPT_PREFIX_SEP:
        if (optarg[0] == '\0')
            return cli_usage_error("--prefix-sep expects a separator such "
                                   "as ':', got ''");
        o->prefix_sep = optarg;
        return 0;
    case OPT_PREFIX_DEPTH:
        if (parse_integer(optarg, 0, 16, &v) != 0)
            return cli_usage_error("--prefix-depth expects how many parts "
                                   "of a key name its prefix keeps, from 0 "
                                   "to 16, got '%s'",
                                   optarg);
        o->prefix_depth = (int)v;
        return 0;
    case OPT_MAX_SERIES:
        if (parse_integer(optarg, 1, 100000, &v) != 0)
            return cli_usage_error("--max-series expects prefixes per "
                                   "server from 1 to 100000, got '%s'",
                                   optarg);
        o->max_series = (int)v;
        return 0;
    case OPT_SCAN_BUDGET:
        if (parse_integer(optarg, 1, INT64_C(100000000), &o->scan_budget) != 0)
            return cli_usage_error("--scan-budget expects keys read per "
                                   "scrape, from 1, got '%s'",
                                   optarg);
        return 0;
    case OPT_MONITOR_DUTY:
        if (parse_integer(optarg, 0, 100, &v) != 0)
            return cli_usage_error("--monitor-duty expects the percentage of "
                                   "the time MONITOR is on, 0 to 100, got "
                                   "'%s'",
                                   optarg);
        o->monitor_duty = (int)v;
        return 0;
    case OPT_RECORD_MAX:
        if (parse_integer(optarg, 0, INT64_C(10000000), &o->record_max) != 0)
            return cli_usage_error("--record-max expects how many (address, "
                                   "key) entries the record keeps, 0 (off) "
                                   "to 10000000, got '%s'",
                                   optarg);
        return 0;
    default: /* OPT_SINCE */
        if (cli_parse_duration(optarg, &o->since_ms) != 0 || o->since_ms == 0)
            return cli_usage_error("--since expects a duration such as 7d, "
                                   "12h or 30m, got '%s'",
                                   optarg);
        return 0;
    }
}

static int apply_option(int opt, struct cli_request *r, struct cli_options *o)
{
    if (opt >= OPT_TLS && opt <= OPT_INSECURE)
        return apply_tls_option(opt, optarg, r);
    if (opt == OPT_USER) {
        r->user = optarg;
        return 0;
    }
    if (opt == 'a')
        return take_password(optarg, r);
    if (opt >= OPT_LISTEN && opt <= OPT_SINCE)
        return apply_exporter_option(opt, o);
    if (opt >= OPT_AT_LEAST && opt <= OPT_LAST)
        return apply_schedule_option(opt, o);
    if (opt == 'w')
        o->wait_given = 1;
    switch (opt) {
    case 'u':
        return take_url(optarg, r);
    case OPT_DIALECT: {
        char why[400];
        if (tslock_dialect_check(optarg, why, sizeof(why)) != TSLOCK_OK)
            return cli_usage_error("--dialect: %s", why);
        o->dialect = optarg;
        return 0;
    }
    case 'm':
    case OPT_STAMP:
    case OPT_CLOCK:
    case OPT_FUNCTIONS:
    case OPT_PUBSUB:
        return parse_word_option(opt, optarg, o);
    case 'r':
    case OPT_KILL_ON_LOSS:
    case OPT_NO_AUTH_WARNING:
    case OPT_FAIR:
    case OPT_POLL:
    case OPT_FENCE:
    case 'q':
    case 'v':
    case 'V':
    case 'h':
        return apply_switch(opt, r, o);
    case OPT_SHARED:
    case OPT_EXCLUSIVE: {
        tslock_rw rw =
            opt == OPT_SHARED ? TSLOCK_RW_SHARED : TSLOCK_RW_EXCLUSIVE;
        if (o->permits > 0 || (o->rw != TSLOCK_RW_OFF && o->rw != rw))
            return kind_conflict();
        o->rw = rw;
        return 0;
    }
    case OPT_IF_VALUE:
    case OPT_SVG:
    case OPT_HTML:
    case OPT_DOC:
        return apply_text_option(opt, o);
    case OPT_ONCE:
        o->top_once = 1;
        return 0;
    case OPT_NO_MONITOR:
        o->top_no_monitor = 1;
        return 0;
    case OPT_INTERVAL:
        if (cli_parse_duration(optarg, &o->top_interval_ms) != 0
            || o->top_interval_ms < 100 || o->top_interval_ms > 3600000)
            return cli_usage_error("--interval expects a duration from "
                                   "100ms to 1h (1s, 500ms), got '%s'",
                                   optarg);
        return 0;
    case OPT_LIMIT:
        if (parse_integer(optarg, 1, 100000, &o->top_limit) != 0)
            return cli_usage_error("--limit expects a number of rows from 1 "
                                   "to 100000, got '%s'",
                                   optarg);
        return 0;
    case OPT_SCAN_MAX:
        if (parse_integer(optarg, 1, 100000000, &o->top_scan_max) != 0)
            return cli_usage_error("--scan-max expects a number of keys from "
                                   "1 to 100000000, got '%s'",
                                   optarg);
        return 0;
    case OPT_FOR:
        if (parse_integer(optarg, 1, MAX_TTL_MS, &o->watch_for_ms) != 0)
            return cli_usage_error("--for expects milliseconds greater than "
                                   "0, got '%s'",
                                   optarg);
        return 0;
    default:
        return (opt >= OPT_MATCH && opt <= OPT_KEYS) || opt == OPT_LIST
                   ? apply_survey_option(opt, o)
                   : parse_number_option(opt, optarg, o);
    }
}

static void set_defaults(struct cli_options *o, struct cli_request *r)
{
    memset(o, 0, sizeof(*o));
    memset(r, 0, sizeof(*r));
    o->scheme = TSLOCK_SCHEME_AUTO;
    o->unit = TSLOCK_UNIT_MS;
    o->time_source = TSLOCK_TIME_LOCAL;
    o->ttl_ms = 30000;
    o->busy_status = CLI_EXIT_BUSY;
    o->workers = 8;
    o->duration_ms = 3000;
    o->timeout_ms = CLI_DEFAULT_TIMEOUT_MS;
    o->replicas_timeout_ms = CLI_DEFAULT_REPLICAS_TIMEOUT_MS;
    o->keep_periods = CLI_DEFAULT_KEEP_PERIODS;
    o->history_last = CLI_DEFAULT_HISTORY_LAST;
    o->top_interval_ms = CLI_DEFAULT_TOP_INTERVAL_MS;
    o->top_scan_max = CLI_DEFAULT_TOP_SCAN_MAX;
    o->prefix_depth = 1;
    o->prefix_sep = ":";
    o->max_series = 100;
    o->scan_budget = 10000;
    o->monitor_duty = 100;
    o->record_max = 10000;
    r->url_text = getenv("REDIS_URL");
    r->url_origin = "$REDIS_URL";
    if (r->url_text == NULL || r->url_text[0] == '\0') {
        r->url_text = CLI_DEFAULT_URL;
        r->url_origin = "the default URL";
    }
}

/*
 * Options may come anywhere before "--"; everything after it is COMMAND,
 * untouched.  getopt only sees the part before, so it can permute it
 * freely without reaching into COMMAND's own options.
 */
int cli_parse_args(int argc, char **argv, struct cli_request *r,
                   struct cli_options *o)
{
    int head = 1, opt, status;

    set_defaults(o, r);
    while (head < argc && strcmp(argv[head], "--") != 0)
        head++;
    if (head < argc)
        r->command = argv + head + 1;
    opterr = 0;
    optind = 0; /* glibc: start afresh, as on a first call */
    while ((opt = getopt_long(head, argv, short_options, long_options, NULL))
           != -1) {
        if (opt == '?' || opt == ':')
            return option_error(opt, argv);
        status = apply_option(opt, r, o);
        if (status != 0)
            return status;
    }
    r->words = argv + optind;
    r->n_words = head - optind;
    return 0;
}

void cli_request_free(struct cli_request *r)
{
    int i;

    /* The copies may hold a password: do not leave it in freed memory. */
    for (i = 0; i < r->n_urls && i < CLI_MAX_MASTERS; i++) {
        memset(r->url_copies[i], 0, strlen(r->url_copies[i]));
        free(r->url_copies[i]);
        r->url_copies[i] = NULL;
    }
    r->n_urls = 0;
    r->url_copy = NULL;
    r->url_text = NULL;
    if (r->password != NULL) {
        memset(r->password, 0, strlen(r->password));
        free(r->password);
        r->password = NULL;
    }
}

/* A key file others may read is a key others may have. */
static void check_key_file(const char *path)
{
    struct stat st;

    if (path != NULL && stat(path, &st) == 0 && (st.st_mode & 077) != 0)
        cli_error("warning: the key file '%s' is readable by %s (chmod 600 "
                  "it)",
                  path, (st.st_mode & 007) ? "others" : "its group");
}

/*
 * The key file a URL names (ssl_keyfile=, the last one, as the parser
 * takes it; the URL was parsed already), checked as --key is.  Each URL
 * once.
 */
static void check_url_key_file(const char *url)
{
    static const char *checked[CLI_MAX_MASTERS];
    const char *q = strchr(url, '?'), *p, *v = NULL;
    char path[4096];
    size_t len, i;

    for (i = 0; i < CLI_MAX_MASTERS && checked[i] != NULL; i++)
        if (checked[i] == url)
            return;
    if (i < CLI_MAX_MASTERS)
        checked[i] = url;
    for (p = q; p != NULL; p = strchr(p + 1, '&'))
        if (strncmp(p + 1, "ssl_keyfile=", 12) == 0)
            v = p + 13;
    if (v == NULL || (len = strcspn(v, "&")) == 0 || len >= sizeof(path))
        return;
    memcpy(path, v, len);
    path[len] = '\0';
    check_key_file(path);
}

static int url_tls(const struct cli_request *r, struct tslock_url *u,
                   const char *which)
{
    const char *pw = getenv("TSLOCK_TLS_KEY_PASSWORD");
    char err[256];
    int i, rc = TSLOCK_OK;

    if (u->is_unix && r->tls)
        return cli_usage_error("%s: --tls and its options are for TCP; a "
                               "unix:// socket is plain text",
                               which);
    if (u->tls == NULL && r->tls && (rc = tslock_tls_new(&u->tls)) != 0)
        return rc == TSLOCK_EUNSUPPORTED
                   ? cli_usage_error("--tls: this tslock was built without "
                                     "TLS (configure --with-tls)")
                   : cli_usage_error("out of memory");
    if (u->tls == NULL)
        return 0;
    for (i = 0; i < r->n_tls && rc == TSLOCK_OK; i++)
        rc = tslock_tls_set(u->tls, r->tls_name[i], r->tls_value[i], err,
                            sizeof(err));
    if (rc == TSLOCK_OK && pw != NULL && pw[0] != '\0')
        rc = tslock_tls_set(u->tls, "key_password", pw, err, sizeof(err));
    if (rc != TSLOCK_OK)
        return cli_usage_error("%s: %s", which, err);
    return 0;
}

int cli_url_finish(const struct cli_request *r, struct tslock_url *u,
                   const char *text, const char *which)
{
    static int key_checked;
    char *copy;

    if (r->password != NULL) {
        if ((copy = strdup(r->password)) == NULL) {
            cli_error("out of memory");
            return CLI_EXIT_OSERR;
        }
        if (u->password != NULL) {
            memset(u->password, 0, strlen(u->password));
            free(u->password);
        }
        u->password = copy;
    }
    if (r->user != NULL) {
        if ((copy = strdup(r->user)) == NULL) {
            cli_error("out of memory");
            return CLI_EXIT_OSERR;
        }
        free(u->user);
        u->user = copy;
        if (u->password == NULL)
            return cli_usage_error("--user %s needs a password (-a, the "
                                   "URL or $REDISCLI_AUTH)",
                                   r->user);
    }
    if (!key_checked) {
        key_checked = 1; /* once, however many -u */
        check_key_file(r->tls_key);
    }
    if (u->tls != NULL && text != NULL)
        check_url_key_file(text);
    return url_tls(r, u, which);
}

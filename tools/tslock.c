/*
 * tslock.c - the tslock command: read the options, pick the form (run,
 * acquire, release, extend, status, demo) and hand over to it.  Every
 * usage error is one line on stderr naming what was expected and what
 * came, and exits CLI_EXIT_USAGE.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#define DEFAULT_URL "redis://127.0.0.1:6379"
/* The library refuses leases over ten years: a mistake, not a lease. */
#define MAX_TTL_MS INT64_C(315360000000)

static const char usage_line[] =
    "expected tslock [options] KEY -- COMMAND [ARG...]";

static const char help_text[] =
    "usage: tslock [options] KEY -- COMMAND [ARG...]  run COMMAND holding KEY\n"
    "       tslock [options] acquire KEY             print a handle\n"
    "       tslock [options] release KEY HANDLE      release it\n"
    "       tslock [options] extend KEY HANDLE       extend it to --ttl\n"
    "       tslock [options] status KEY              show what holds KEY\n"
    "       tslock [--workers N] [--duration MS] demo  the race "
    "demonstration\n"
    "\n"
    "  -u, --url URL        redis://[[user]:password@]host[:port][/db] or\n"
    "                       unix:///path/to/socket[?db=N]; default "
    "$REDIS_URL,\n"
    "                       else " DEFAULT_URL "; password also from\n"
    "                       $REDISCLI_AUTH\n"
    "  -m, --mode MODE      auto, token, timestamp or bridge (default auto)\n"
    "      --stamp UNIT     ms, s or float: timestamp stamps (default ms)\n"
    "      --clock SOURCE   stamps from the local clock (default, as legacy\n"
    "                       clients do) or the server's clock (server)\n"
    "  -t, --ttl MS         lease length in milliseconds (default 30000)\n"
    "  -w, --wait MS        wait for the lock: 0 tries once (default), -1\n"
    "                       waits forever\n"
    "  -r, --renew          renew the lease every ttl/3 while COMMAND runs\n"
    "      --kill-on-loss   send SIGTERM to COMMAND if a renewal fails\n"
    "  -E, --conflict-exit-code N  status when the lock is busy (default 1)\n"
    "  -q, --quiet          no chatter; errors and warnings only\n"
    "  -v, --verbose        scheme, server, capabilities and each step\n"
    "  -V, --version        print the version\n"
    "  -h, --help           print this help\n"
    "      --workers N      demo: worker processes (default 8)\n"
    "      --duration MS    demo: run time per scheme (default 3000)\n"
    "\n"
    "Exit status: COMMAND's own; 1 (-E) busy; 64 usage; 69 cannot connect;\n"
    "70 server error; 71 system error; 75 lease lost (mutual exclusion may\n"
    "have been broken); 126/127 COMMAND not runnable; 128+N signal N.\n"
    "See tslock(1).\n";

enum long_only {
    OPT_STAMP = 256,
    OPT_CLOCK,
    OPT_KILL_ON_LOSS,
    OPT_WORKERS,
    OPT_DURATION
};

static const struct option long_options[] = {
    {"url", required_argument, NULL, 'u'},
    {"mode", required_argument, NULL, 'm'},
    {"stamp", required_argument, NULL, OPT_STAMP},
    {"clock", required_argument, NULL, OPT_CLOCK},
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
    {NULL, 0, NULL, 0}};

/* What the command line asks for, before it is checked. */
struct request {
    const char *url_text;
    const char *url_origin; /* "--url" or "$REDIS_URL" */
    int help, version;
    char **words; /* KEY, or a form's name and its arguments */
    int n_words;
    char **command; /* after "--", NULL without "--" */
};

static int usage_error(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;

static int usage_error(const char *fmt, ...)
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

static int parse_number_option(int opt, const char *arg, struct cli_options *o)
{
    int64_t v;

    switch (opt) {
    case 't':
        if (parse_integer(arg, 1, MAX_TTL_MS, &o->ttl_ms) != 0)
            return usage_error("--ttl expects a lease in milliseconds "
                               "greater than 0, got '%s'",
                               arg);
        o->ttl_given = 1;
        return 0;
    case 'w':
        if (parse_integer(arg, -1, MAX_TTL_MS, &o->wait_ms) != 0)
            return usage_error("--wait expects milliseconds (0 tries once, "
                               "-1 waits forever), got '%s'",
                               arg);
        return 0;
    case 'E':
        if (parse_integer(arg, 0, 255, &v) != 0)
            return usage_error("--conflict-exit-code expects a status from 0 "
                               "to 255, got '%s'",
                               arg);
        o->busy_status = (int)v;
        return 0;
    case OPT_WORKERS:
        if (parse_integer(arg, 1, 64, &v) != 0)
            return usage_error("--workers expects a number from 1 to 64, "
                               "got '%s'",
                               arg);
        o->workers = (int)v;
        return 0;
    default: /* OPT_DURATION */
        if (parse_integer(arg, 100, 600000, &o->duration_ms) != 0)
            return usage_error("--duration expects milliseconds from 100 to "
                               "600000, got '%s'",
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
        return usage_error("--mode expects auto, token, timestamp or "
                           "bridge, got '%s'",
                           arg);
    }
    if (opt == OPT_CLOCK) {
        if (strcmp(arg, "local") == 0 || strcmp(arg, "server") == 0) {
            o->time_source =
                arg[0] == 's' ? TSLOCK_TIME_SERVER : TSLOCK_TIME_LOCAL;
            return 0;
        }
        return usage_error("--clock expects local or server, got '%s'", arg);
    }
    for (i = 0; i < 3; i++)
        if (strcmp(arg, units[i]) == 0) {
            o->unit = (tslock_unit)i;
            return 0;
        }
    return usage_error("--stamp expects ms, s or float, got '%s'", arg);
}

/* getopt's complaint, as one line of ours (opterr is off). */
static int option_error(int opt, char **argv)
{
    const char *arg = argv[optind - 1];

    if (opt == ':')
        return usage_error("option '%s' needs a value", arg);
    if (optopt != 0 && strncmp(arg, "--", 2) != 0)
        return usage_error("unknown option '-%c' (see tslock --help)", optopt);
    return usage_error("unknown option '%s' (see tslock --help)", arg);
}

static int apply_option(int opt, struct request *r, struct cli_options *o)
{
    switch (opt) {
    case 'u':
        r->url_text = optarg;
        r->url_origin = "--url";
        return 0;
    case 'm':
    case OPT_STAMP:
    case OPT_CLOCK:
        return parse_word_option(opt, optarg, o);
    case 'r':
        o->renew = 1;
        return 0;
    case OPT_KILL_ON_LOSS:
        o->kill_on_loss = 1;
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
    case 'h':
        r->help = 1;
        return 0;
    default:
        return parse_number_option(opt, optarg, o);
    }
}

/*
 * Options may come anywhere before "--"; everything after it is COMMAND,
 * untouched.  getopt only sees the part before, so it can permute it
 * freely without reaching into COMMAND's own options.
 */
static int parse_options(int argc, char **argv, struct request *r,
                         struct cli_options *o)
{
    int head = 1, opt, status;

    while (head < argc && strcmp(argv[head], "--") != 0)
        head++;
    if (head < argc)
        r->command = argv + head + 1;
    opterr = 0;
    while (
        (opt = getopt_long(head, argv, ":u:m:t:w:rE:qvVh", long_options, NULL))
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

static void set_defaults(struct cli_options *o, struct request *r)
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
    r->url_text = getenv("REDIS_URL");
    r->url_origin = "$REDIS_URL";
    if (r->url_text == NULL || r->url_text[0] == '\0') {
        r->url_text = DEFAULT_URL;
        r->url_origin = "the default URL";
    }
}

static int parse_url(const struct request *r, struct cli_options *o)
{
    char err[256];

    if (cli_url_parse(r->url_text, &o->url, err, sizeof(err)) != 0)
        return usage_error("%s: %s", r->url_origin, err);
    return 0;
}

/* The forms without "--", with their word counts (the name included). */
enum form { FORM_ACQUIRE, FORM_RELEASE, FORM_EXTEND, FORM_STATUS, FORM_DEMO };
static const struct {
    const char *name;
    int words;
    const char *args;
} forms[] = {{"acquire", 2, "KEY"},
             {"release", 3, "KEY HANDLE"},
             {"extend", 3, "KEY HANDLE"},
             {"status", 2, "KEY"},
             {"demo", 1, "no arguments"}};
#define N_FORMS (sizeof(forms) / sizeof(forms[0]))

static int run_form(enum form f, struct request *r, struct cli_options *o)
{
    if (f == FORM_DEMO)
        return cli_demo(o);
    if (r->words[1][0] == '\0')
        return usage_error("KEY must not be empty");
    if (parse_url(r, o) != 0)
        return CLI_EXIT_USAGE;
    switch (f) {
    case FORM_ACQUIRE:
        return cli_acquire(o, r->words[1]);
    case FORM_RELEASE:
        return cli_release(o, r->words[1], r->words[2]);
    case FORM_EXTEND:
        return cli_extend(o, r->words[1], r->words[2]);
    default:
        return cli_status(o, r->words[1]);
    }
}

static int dispatch_form(struct request *r, struct cli_options *o)
{
    const char *name = r->words[0];
    size_t i;

    for (i = 0; i < N_FORMS; i++)
        if (strcmp(name, forms[i].name) == 0)
            break;
    if (i == N_FORMS && r->n_words == 1)
        return usage_error("missing '-- COMMAND' after KEY '%s' (%s)", name,
                           usage_line);
    if (i == N_FORMS)
        return usage_error("missing '--' between KEY '%s' and COMMAND '%s'",
                           name, r->words[1]);
    if (r->n_words != forms[i].words)
        return usage_error("%s expects %s, got %d word%s", name, forms[i].args,
                           r->n_words - 1, r->n_words == 2 ? "" : "s");
    return run_form((enum form)i, r, o);
}

static int dispatch(struct request *r, struct cli_options *o)
{
    if (r->command == NULL && r->n_words == 0)
        return usage_error("missing KEY: expected KEY -- COMMAND, or "
                           "acquire, release, extend, status or demo (see "
                           "tslock --help)");
    if (r->command == NULL)
        return dispatch_form(r, o);
    if (r->n_words == 0)
        return usage_error("missing KEY before '--' (%s)", usage_line);
    if (r->n_words > 1)
        return usage_error("expected one KEY before '--', got %d words "
                           "('%s', '%s'%s)",
                           r->n_words, r->words[0], r->words[1],
                           r->n_words > 2 ? ", ..." : "");
    if (r->words[0][0] == '\0')
        return usage_error("KEY must not be empty");
    if (r->command[0] == NULL)
        return usage_error("missing COMMAND after '--' (%s)", usage_line);
    if (parse_url(r, o) != 0)
        return CLI_EXIT_USAGE;
    return cli_run(o, r->words[0], r->command);
}

int main(int argc, char **argv)
{
    struct cli_options o;
    struct request r;
    int status;

    set_defaults(&o, &r);
    cli_signals_ignore_pipe();
    status = parse_options(argc, argv, &r, &o);
    if (status != 0)
        return status;
    if (r.help) {
        fputs(help_text, stdout);
        return CLI_EXIT_OK;
    }
    if (r.version) {
        printf("tslock %s (libtslock %s)\n", TSLOCK_VERSION_STRING,
               tslock_version());
        return CLI_EXIT_OK;
    }
    if (o.kill_on_loss && !o.renew)
        return usage_error("--kill-on-loss needs --renew (it acts when a "
                           "renewal fails)");
    status = dispatch(&r, &o);
    cli_url_free(&o.url);
    return status;
}

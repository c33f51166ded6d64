/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tslock.c - the tslock command's main: read the command line (with
 * options.c), pick the form (run, acquire, release, extend, status,
 * break, survey, watch, demo, replay) and hand over to it.  Every usage
 * error is one line on stderr naming what was expected and what came, and
 * exits CLI_EXIT_USAGE.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char usage_line[] =
    "expected tslock [options] KEY [KEY...] -- COMMAND [ARG...]";

/* In pieces: C99 compilers need not take a literal over 4095 bytes. */
static const char *const help_text[] = {
    "usage: tslock [options] KEY [KEY...] -- COMMAND [ARG...]\n"
    "                                          run COMMAND holding every KEY\n"
    "       tslock [options] acquire KEY             print a handle\n"
    "       tslock [options] release KEY HANDLE      release it\n"
    "       tslock [options] extend KEY HANDLE       extend it to --ttl\n"
    "       tslock [options] status KEY              show what holds KEY\n"
    "       tslock [options] check KEY               may this ACL user lock "
    "KEY?\n"
    "       tslock [options] functions load|print    the Functions library "
    "(Redis 7)\n"
    "       tslock [options] break KEY [--if-value VALUE]  delete a stuck "
    "lock\n"
    "       tslock [options] survey [--match PATTERN] [--json] [--all] "
    "[--keys]\n"
    "                                                list the locks in the "
    "server\n"
    "       tslock [options] watch [--for MS] [--json] KEY...\n"
    "                                                show who touches KEYs "
    "(MONITOR)\n"
    "       tslock [--workers N] [--duration MS] [--svg FILE] demo\n"
    "                                                the race "
    "demonstration\n"
    "       tslock [options] replay RACE | --list  narrate a race of "
    "doc/races.md\n"
    "       tslock [options] history [--last N] KEY  the runs of --once-per\n"
    "       tslock [options] top [--once] [--interval DURATION] [--limit N]\n"
    "                                                the locks live, "
    "hottest first\n"
    "       tslock [options] replay --html FILE [--doc URL] [RACE...]\n"
    "                                                the races as a page "
    "to step through\n"
    "       tslock [options] survey --since DURATION [--json]\n"
    "                                                keys legacy clients "
    "wrote, recorded\n"
    "       tslock [options] exporter --listen ADDR:PORT [-u URL]...\n"
    "                                                /metrics for "
    "Prometheus\n"
    "\n"
    "  -u, --url URL        redis://[[user]:password@]host[:port][/db],\n"
    "                       unix:///path/to/socket[?db=N] or\n"
    "                       redis+sentinel://[[user]:password@]host[:port]\n"
    "                       [,host[:port]...]/MASTER[/db]"
    "[?sentinel_password=P];\n"
    "                       rediss:// and rediss+sentinel:// speak TLS\n"
    "                       (?ssl_ca_certs=, ssl_cert_reqs=, ... as redis-py)\n"
    "                       default $REDIS_URL,\n"
    "                       else " CLI_DEFAULT_URL "; password also from\n"
    "                       $REDISCLI_AUTH (safer: ps never shows it)\n"
    "                       given N times (N odd, >= 3): a Redlock over\n"
    "                       those independent masters"
    "\n",
    "  -a, --pass PASSWORD  AUTH with PASSWORD (hidden from ps at once;\n"
    "                       $REDISCLI_AUTH is safer)\n"
    "      --user NAME      the ACL user of the password\n"
    "      --no-auth-warning  no warning about a password in -a or -u\n"
    "      --tls            TLS to every server (as rediss:// does)\n"
    "      --cacert FILE    CA certificates (PEM) to check the server with\n"
    "      --cacertdir DIR  a directory of hashed CA certificates\n"
    "      --cert FILE      this client's certificate (PEM)\n"
    "      --key FILE       its private key (PEM; passphrase from\n"
    "                       $TSLOCK_TLS_KEY_PASSWORD)\n"
    "      --sni NAME       server name to send and to check in its\n"
    "                       certificate (default: the host connected to)\n"
    "      --insecure       do not check the server's certificate (warns)\n"
    "  -m, --mode MODE      auto, token, timestamp or bridge (default auto)\n"
    "      --stamp UNIT     ms, s or float: timestamp stamps (default ms)\n"
    "      --dialect D      stamps as a legacy library writes them: a preset\n"
    "                       (tslock dialects lists them) or a format such\n"
    "                       as '{s+1}:{pid}' (tslock-dialects(7))\n"
    "      --clock SOURCE   stamps from the local clock (default, as legacy\n"
    "                       clients do) or the server's clock (server)\n"
    "      --takeover-grace MS  take over a stamp only once it is MS old\n"
    "                       (room for clock skew; default 0)\n"
    "  -t, --ttl MS         lease length in milliseconds (default 30000)\n"
    "  -w, --wait MS        wait for the lock: 0 tries once (default), -1\n"
    "                       waits forever\n"
    "  -r, --renew          renew the lease every ttl/3 while COMMAND runs\n"
    "      --kill-on-loss   send SIGTERM to COMMAND if a renewal fails\n"
    "      --timeout MS     connect and command timeout (default 5000)\n"
    "      --fair           waiters take the lock in the order they asked\n"
    "      --shared         a shared hold of a read-write lock: beside other\n"
    "                       shared holders, never an exclusive one\n"
    "      --exclusive      the exclusive side of a read-write lock: while\n"
    "                       it waits, new shared holders wait behind it\n"
    "      --permits N      a semaphore: at most N holders at once\n",
    "      --functions MODE  where an ACL refuses EVAL: load (default: run\n"
    "                       the scripts as Redis 7 Functions, loading the\n"
    "                       library), use (an operator loaded it) or off\n"
    "      --pubsub MODE    how waiters are woken: auto (default: sharded\n"
    "                       pub/sub on a Redis 7.0+ Cluster), classic or\n"
    "                       sharded\n"
    "      --poll           wait by polling instead of being woken by the\n"
    "                       release\n"
    "      --replicas N     wait until N replicas acknowledge each lock\n"
    "                       write (WAIT, Redis 3.0); fewer: exit 69\n"
    "      --replicas-timeout MS  how long to wait for them (default 1000)\n"
    "      --fence          take a fencing number with the lock: in\n"
    "                       $TSLOCK_FENCE for COMMAND, after the handle\n"
    "                       for acquire\n"
    "      --if-value VALUE  break: delete KEY only while it holds VALUE\n"
    "                       (needed when not on a terminal)\n"
    "      --at-least DURATION  keep KEY held until DURATION after it was\n"
    "                       taken (1d, 1h, 15m, 30s, 250ms; never past the\n"
    "                       lease): hosts firing later find it held\n"
    "      --once-per PERIOD  run COMMAND once per PERIOD (epoch-aligned,\n"
    "                       by the server's clock from Redis 2.6); a later\n"
    "                       host skips with status 3; waits (-w -1) for\n"
    "                       a run in progress\n"
    "      --period-offset DURATION  periods start this long after the\n"
    "                       epoch-aligned boundary (a 1d period at 02:00)\n"
    "      --retry-failed   a failed or dead run may run again in its period\n"
    "      --keep-periods N  records expire after N periods (default 30)\n"
    "      --host-name NAME  the name recorded for this host (default: its\n"
    "                       host name)\n"
    "      --last N         history: the last N runs (default 10)\n",
    "  -E, --conflict-exit-code N  status when the lock is busy (default 1)\n"
    "  -q, --quiet          no chatter; errors and warnings only\n"
    "  -v, --verbose        scheme, server, capabilities and each step\n"
    "  -V, --version        print the version\n"
    "  -h, --help           print this help\n"
    "      --workers N      demo: worker processes (default 8)\n"
    "      --duration MS    demo: run time per scheme (default 3000)\n"
    "      --svg FILE       demo: also draw the holds as a timeline in FILE\n"
    "      --match PATTERN  survey: only keys matching this glob\n"
    "      --json           survey: JSON Lines, then a {\"summary\": ...} "
    "line\n"
    "      --all            survey: list keys that are not locks too\n"
    "      --keys           survey: use KEYS (blocks the server) where SCAN\n"
    "                       is missing (Redis before 2.8)\n"
    "      --for MS         watch: stop after MS (default: at SIGINT/SIGTERM)\n"
    "      --json           watch: JSON Lines, then a {\"summary\": ...} "
    "line\n"
    "      --once           top: print one frame (two readings\n"
    "                       --interval apart) and exit\n"
    "      --interval DURATION  top: time between frames (default 1s)\n"
    "      --limit N        top: at most N rows (default: the screen)\n"
    "      --scan-max N     top: keys read per frame (default 10000)\n"
    "      --no-monitor     top: no MONITOR (no LEGACY column)\n"
    "      --list           replay: list the races, one a line\n"
    "      --html FILE      replay: also write the races (default: all) as\n"
    "                       one self-contained page to step through\n"
    "      --doc URL        replay --html: where the page links to\n"
    "                       doc/races.md (default doc/races.md)\n"
    "      --since DURATION  survey: the legacy writers recorded in the\n"
    "                       last DURATION (7d, 12h), from the record\n",
    "      --listen ADDR:PORT  exporter: where to serve /metrics\n"
    "      --prefix-sep S   exporter: key parts are separated by S "
    "(default :)\n"
    "      --prefix-depth N  exporter: legacy writes counted per prefix of\n"
    "                       N parts (default 1)\n"
    "      --max-series N   exporter: at most N prefixes per server, the\n"
    "                       rest as prefix=\"(other)\" (default 100)\n"
    "      --scan-budget N  exporter: keys read per scrape (default 10000)\n"
    "      --monitor-duty PCT  exporter: MONITOR on PCT% of the time\n"
    "                       (default 100; 0: off)\n"
    "      --record-max N   exporter: entries kept in the legacy-writer\n"
    "                       record (default 10000; 0: no record)\n"
    "\n"
    "Exit status: COMMAND's own; 1 (-E) busy, or break deleted nothing;\n"
    "3 --once-per skipped (this period ran already);\n"
    "64 usage; 69 cannot connect; 70 server error; 71 system error; 75\n"
    "lease lost (mutual exclusion may have been broken); 77 denied by the\n"
    "server's ACL; 78 TLS failed (certificate, CA or key); 126/127 COMMAND\n"
    "not runnable; 128+N signal N.  replay: 0 when both schemes end as\n"
    "documented, 70 when not.\n"
    "See tslock(1).\n",
    NULL};

static void print_help(void)
{
    const char *const *piece;

    for (piece = help_text; *piece != NULL; piece++)
        fputs(*piece, stdout);
}

/*
 * Parse the URL; then, as redis-cli does, warn once about a password
 * given on the command line.  tslock has already scrubbed it from its
 * argv, but it was visible until then and stays in shell history.  A bad
 * URL gets only its own error line.
 */
static int parse_url(const struct cli_request *r, struct cli_options *o,
                     const char *form)
{
    char err[256];
    int status = cli_masters_parse(r, o, form);

    if (status != 0)
        return status;
    if (cli_url_parse(r->url_text, &o->url, err, sizeof(err)) != 0)
        return cli_usage_error("%s: %s", r->url_origin, err);
    if ((status = cli_url_finish(r, &o->url, r->url_text, r->url_origin)) != 0)
        return status;
    if (r->password_in_argv && !r->no_auth_warning)
        cli_error("warning: a password in -u/--url or -a on the command line "
                  "is not safe (shell history; ps until tslock hides it); "
                  "set $REDISCLI_AUTH instead, or pass --no-auth-warning");
    return 0;
}

/* The forms without "--", with their word counts (the name included). */
enum form {
    FORM_ACQUIRE,
    FORM_RELEASE,
    FORM_EXTEND,
    FORM_STATUS,
    FORM_BREAK,
    FORM_DEMO,
    FORM_SURVEY,
    FORM_WATCH,
    FORM_REPLAY,
    FORM_CHECK,
    FORM_FUNCTIONS,
    FORM_HISTORY,
    FORM_TOP,
    FORM_EXPORTER,
    FORM_DIALECTS
};
static const struct {
    const char *name;
    int words;
    const char *args;
} forms[] = {{"acquire", 2, "KEY"},
             {"release", 3, "KEY HANDLE"},
             {"extend", 3, "KEY HANDLE"},
             {"status", 2, "KEY"},
             {"break", 2, "KEY"},
             {"demo", 1, "no arguments"},
             {"survey", 1, "no arguments (options only)"},
             {"watch", 2, "one KEY or more"},
             {"replay", 2, "RACE (or --list)"},
             {"check", 2, "KEY"},
             {"functions", 2, "load or print"},
             {"history", 2, "KEY"},
             {"top", 1, "no arguments (options only)"},
             {"exporter", 1, "no arguments (--listen ADDR:PORT, -u URL...)"},
             {"dialects", 1, "no arguments"}};
#define N_FORMS (sizeof(forms) / sizeof(forms[0]))

/* A survey option given to another form is a mistake, not a no-op. */
static int survey_options_elsewhere(const struct cli_options *o)
{
    if (o->survey_match == NULL && !o->survey_json && !o->survey_all
        && !o->survey_keys)
        return 0;
    return cli_usage_error("--match, --json, --all and --keys are options "
                           "of the survey form only");
}

/* watch takes --json and --for; survey's other options are mistakes. */
static int watch_options_elsewhere(const struct cli_options *o, enum form f)
{
    if (f == FORM_WATCH
        && (o->survey_match != NULL || o->survey_all || o->survey_keys))
        return cli_usage_error("--match, --all and --keys are options of "
                               "the survey form only");
    if (f != FORM_WATCH && o->watch_for_ms != 0)
        return cli_usage_error("--for is an option of the watch form only");
    return 0;
}

/* The exporter's options elsewhere, and --since off the survey form. */
static int exporter_options_elsewhere(const struct cli_options *o, enum form f)
{
    if (o->since_ms != 0 && f != FORM_SURVEY)
        return cli_usage_error("--since is an option of the survey form only");
    if (f != FORM_EXPORTER
        && (o->listen != NULL || o->prefix_depth != 1
            || strcmp(o->prefix_sep, ":") != 0 || o->max_series != 100
            || o->scan_budget != 10000 || o->monitor_duty != 100
            || o->record_max != 10000))
        return cli_usage_error("--listen, --prefix-depth, --prefix-sep, "
                               "--max-series, --scan-budget, --monitor-duty "
                               "and --record-max are options of the "
                               "exporter form only");
    return 0;
}

/* Every -u, each a server of its own; $REDIS_URL or the default without. */
static int run_exporter(struct cli_request *r, struct cli_options *o)
{
    char *one[1];

    if (r->n_urls > CLI_MAX_MASTERS)
        return cli_usage_error("exporter takes at most %d -u, got %d",
                               CLI_MAX_MASTERS, r->n_urls);
    if (r->password_in_argv && !r->no_auth_warning)
        cli_error("warning: a password in -u/--url on the command line is not "
                  "safe (shell history; ps until tslock hides it); set "
                  "$REDISCLI_AUTH instead, or pass --no-auth-warning");
    if (r->n_urls > 0)
        return cli_exporter(o, r->url_copies, r->n_urls);
    one[0] = (char *)r->url_text;
    return cli_exporter(o, one, 1);
}

static int run_form(enum form f, struct cli_request *r, struct cli_options *o)
{
    if (exporter_options_elsewhere(o, f) != 0)
        return CLI_EXIT_USAGE;
    if (f == FORM_EXPORTER
        && (o->survey_json || o->survey_all || o->survey_keys
            || o->watch_for_ms != 0))
        return cli_usage_error("--json, --all, --keys and --for are not "
                               "options of the exporter (it takes --match)");
    if (f == FORM_EXPORTER)
        return run_exporter(r, o);
    if (f == FORM_DIALECTS)
        return cli_dialects(o);
    if (f == FORM_SURVEY && o->since_ms != 0)
        return parse_url(r, o, "survey") != 0 ? CLI_EXIT_USAGE
                                              : cli_survey_since(o);
    if (watch_options_elsewhere(o, f) != 0)
        return CLI_EXIT_USAGE;
    if (f != FORM_SURVEY && f != FORM_WATCH && survey_options_elsewhere(o) != 0)
        return CLI_EXIT_USAGE;
    if (f == FORM_DEMO || (f == FORM_REPLAY && o->replay_list))
        if (cli_masters_parse(r, o, forms[f].name) != 0)
            return CLI_EXIT_USAGE;
    if (f == FORM_DEMO)
        return cli_demo(o);
    if (f == FORM_TOP)
        return parse_url(r, o, "top") != 0 ? CLI_EXIT_USAGE : cli_top(o);
    if (f == FORM_SURVEY)
        return parse_url(r, o, "survey") != 0 ? CLI_EXIT_USAGE : cli_survey(o);
    if (f == FORM_WATCH)
        return parse_url(r, o, "watch") != 0
                   ? CLI_EXIT_USAGE
                   : cli_watch(o, r->words + 1, r->n_words - 1);
    if (f == FORM_REPLAY && o->replay_list)
        return cli_replay(o, NULL, 1);
    if (f == FORM_REPLAY && o->html_path != NULL)
        return parse_url(r, o, "replay") != 0
                   ? CLI_EXIT_USAGE
                   : cli_replay_html(o, r->words + 1, r->n_words - 1);
    if (f == FORM_REPLAY)
        return parse_url(r, o, "replay") != 0 ? CLI_EXIT_USAGE
                                              : cli_replay(o, r->words[1], 0);
    if (f == FORM_FUNCTIONS)
        return strcmp(r->words[1], "print") == 0 ? cli_functions(o, "print")
               : parse_url(r, o, "functions") != 0
                   ? CLI_EXIT_USAGE
                   : cli_functions(o, r->words[1]);
    if (r->words[1][0] == '\0')
        return cli_usage_error("KEY must not be empty");
    if (parse_url(r, o, f == FORM_BREAK ? "break" : NULL) != 0)
        return CLI_EXIT_USAGE;
    if (f == FORM_CHECK)
        return o->n_masters > 0
                   ? cli_usage_error("check takes one -u (run it for each "
                                     "master)")
                   : cli_check(o, r->words[1]);
    if (f == FORM_HISTORY)
        return o->n_masters > 0 ? cli_usage_error("history reads one server: "
                                                  "expected one -u")
                                : cli_history(o, r->words[1]);
    if (o->n_masters > 0)
        return f == FORM_ACQUIRE ? cli_quorum_acquire(o, r->words[1])
               : f == FORM_RELEASE
                   ? cli_quorum_release(o, r->words[1], r->words[2])
               : f == FORM_EXTEND
                   ? cli_quorum_extend(o, r->words[1], r->words[2])
                   : cli_quorum_status(o, r->words[1]);
    switch (f) {
    case FORM_ACQUIRE:
        return cli_acquire(o, r->words[1]);
    case FORM_RELEASE:
        return cli_release(o, r->words[1], r->words[2]);
    case FORM_EXTEND:
        return cli_extend(o, r->words[1], r->words[2]);
    case FORM_BREAK:
        return cli_break(o, r->words[1]);
    default:
        return cli_status(o, r->words[1]);
    }
}

/* A word as an error repeats it: a URL typed without -u hides its password. */
static char *shown(const char *word)
{
    char *copy = strdup(word);

    if (copy != NULL)
        tslock_url_scrub(copy);
    return copy;
}

/* KEY without "-- COMMAND", or COMMAND without "--". */
static int misplaced_words(const struct cli_request *r)
{
    char *a = shown(r->words[0]);
    char *b = r->n_words > 1 ? shown(r->words[1]) : NULL;
    const char *sa = a != NULL ? a : "?", *sb = b != NULL ? b : "?";
    int status;

    if (r->n_words == 1)
        status = cli_usage_error("missing '-- COMMAND' after KEY '%s' (%s)", sa,
                                 usage_line);
    else
        status = cli_usage_error(
            "missing '--' between KEY '%s' and COMMAND '%s'", sa, sb);
    free(a);
    free(b);
    return status;
}

static int dispatch_form(struct cli_request *r, struct cli_options *o)
{
    const char *name = r->words[0];
    size_t i;

    for (i = 0; i < N_FORMS; i++)
        if (strcmp(name, forms[i].name) == 0)
            break;
    if (i == N_FORMS)
        return misplaced_words(r);
    if (o->if_value != NULL && i != FORM_BREAK)
        return cli_usage_error("--if-value is for break only");
    if (o->svg_path != NULL && i != FORM_DEMO)
        return cli_usage_error("--svg is for demo only");
    if (o->replay_list && i != FORM_REPLAY)
        return cli_usage_error("--list is for replay only");
    if ((o->html_path != NULL || o->doc_url != NULL) && i != FORM_REPLAY)
        return cli_usage_error("--html and --doc are for replay only");
    if (o->doc_url != NULL && o->html_path == NULL)
        return cli_usage_error("--doc names the links of replay --html: "
                               "expected --html FILE too");
    if (i == FORM_REPLAY && o->replay_list && o->html_path != NULL)
        return cli_usage_error("replay takes --list or --html, not both");
    if (i == FORM_REPLAY && o->replay_list && r->n_words == 1)
        return run_form(FORM_REPLAY, r, o);
    if (i == FORM_REPLAY && o->html_path != NULL)
        return run_form(FORM_REPLAY, r, o); /* RACE..., or every race */
    if (r->n_words != forms[i].words
        && !(i == FORM_WATCH && r->n_words > forms[i].words))
        return cli_usage_error("%s expects %s, got %d word%s", name,
                               forms[i].args, r->n_words - 1,
                               r->n_words == 2 ? "" : "s");
    return run_form((enum form)i, r, o);
}

/* The KEYs before "--": none empty, none twice, none a URL. */
static int check_keys(const struct cli_request *r)
{
    int i, j, status = 0;

    for (i = 0; i < r->n_words && status == 0; i++) {
        if (r->words[i][0] == '\0')
            return cli_usage_error("KEY must not be empty");
        /* A URL typed without -u is a mistake, not one more KEY. */
        if (r->n_words > 1 && strstr(r->words[i], "://") != NULL) {
            char *k = shown(r->words[i]);
            status = cli_usage_error("KEY '%s' looks like a URL: expected it "
                                     "after -u (%s)",
                                     k != NULL ? k : "?", usage_line);
            free(k);
        }
        for (j = 0; j < i && status == 0; j++)
            if (strcmp(r->words[i], r->words[j]) == 0) {
                char *k = shown(r->words[i]);
                status = cli_usage_error("KEY '%s' is given twice before '--'",
                                         k != NULL ? k : "?");
                free(k);
            }
    }
    return status;
}

static int dispatch(struct cli_request *r, struct cli_options *o)
{
    int status;

    if (r->command == NULL && r->n_words == 0)
        return cli_usage_error(
            "missing KEY: expected KEY -- COMMAND, or "
            "acquire, release, extend, status, break, survey, watch, top, demo "
            "or replay "
            "(see "
            "tslock --help)");
    if (r->command == NULL)
        return dispatch_form(r, o);
    if (r->n_words == 0)
        return cli_usage_error("missing KEY before '--' (%s)", usage_line);
    if ((status = check_keys(r)) != 0)
        return status;
    if (r->command[0] == NULL)
        return cli_usage_error("missing COMMAND after '--' (%s)", usage_line);
    if (o->if_value != NULL)
        return cli_usage_error("--if-value is for break only");
    if (o->svg_path != NULL)
        return cli_usage_error("--svg is for demo only");
    if (o->replay_list)
        return cli_usage_error("--list is for replay only");
    if (o->html_path != NULL || o->doc_url != NULL)
        return cli_usage_error("--html and --doc are for replay only");
    if (exporter_options_elsewhere(o, FORM_DEMO) != 0)
        return CLI_EXIT_USAGE;
    if (survey_options_elsewhere(o) != 0 || o->watch_for_ms != 0)
        return o->watch_for_ms != 0 ? cli_usage_error("--for is an option of "
                                                      "the watch form only")
                                    : CLI_EXIT_USAGE;
    if (parse_url(r, o, NULL) != 0)
        return CLI_EXIT_USAGE;
    if (o->n_masters > 0 && r->n_words > 1)
        return cli_usage_error("several KEYs take one server: a Redlock "
                               "(-u given %d times) takes one KEY",
                               o->n_masters);
    if (o->once_per_ms > 0 && (r->n_words > 1 || o->n_masters > 0))
        return cli_usage_error("--once-per records its runs beside one KEY "
                               "on one server: expected one KEY and one -u");
    /* A later host waits for the run in progress, then skips or retries. */
    if (o->once_per_ms > 0 && !o->wait_given)
        o->wait_ms = TSLOCK_WAIT_FOREVER;
    return cli_run(o, r->words, r->n_words, r->command);
}

int main(int argc, char **argv)
{
    struct cli_options o;
    struct cli_request r;
    int status;

    cli_signals_ignore_pipe();
    status = cli_parse_args(argc, argv, &r, &o);
    if (status == 0 && r.help)
        print_help();
    else if (status == 0 && r.version)
        printf("tslock %s (libtslock %s, hiredis %s)\n", TSLOCK_VERSION_STRING,
               tslock_version(), TSLOCK_HIREDIS_VERSION);
    else if (status == 0 && o.kill_on_loss && !o.renew)
        status = cli_usage_error("--kill-on-loss needs --renew (it acts when "
                                 "a renewal fails)");
    else if (status == 0)
        status = dispatch(&r, &o);
    tslock_url_free(&o.url);
    cli_masters_free(&o);
    cli_request_free(&r);
    return status;
}

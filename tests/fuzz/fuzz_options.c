/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fuzz_options.c - the tslock command's option and argument parsing
 * (cli_parse_args), without running a form: whatever argv holds, it
 * returns 0 or a usage status, what it returns points into argv, every
 * value is within its documented range, and a password given with -u is
 * gone from argv afterwards.
 * Input: the arguments after "tslock", separated by NUL bytes; the
 * placeholder PW in an argument stands for a canary password.
 */
#include <string.h>

#include "../../tools/cli.h"
#include "fuzz.h"

#define MAX_ARGS 64

static const char canary[] = "\x7fS3CR3T\x7f";

/* Split data at NULs into argv[1..], PW replaced by the canary. */
static int make_argv(const uint8_t *data, size_t size, char **argv)
{
    size_t i = 0, start, len;
    int argc = 1;

    argv[0] = strdup("tslock");
    while (i < size && argc < MAX_ARGS) {
        const char *pw;
        start = i;
        while (i < size && data[i] != '\0')
            i++;
        len = i - start;
        argv[argc] = malloc(len + sizeof(canary) + 1);
        FUZZ_CHECK(argv[argc] != NULL);
        memcpy(argv[argc], data + start, len);
        argv[argc][len] = '\0';
        pw = strstr(argv[argc], "PW");
        if (pw != NULL) {
            size_t at = (size_t)(pw - argv[argc]);
            memmove(argv[argc] + at + sizeof(canary) - 1, argv[argc] + at + 2,
                    len - at - 1);
            memcpy(argv[argc] + at, canary, sizeof(canary) - 1);
        }
        argc++;
        i++;
    }
    argv[argc] = NULL;
    return argc;
}

static int in_argv(char **p, char **argv, int argc)
{
    return p >= argv && p <= argv + argc;
}

static void check_parsed(const struct cli_request *r,
                         const struct cli_options *o, char **argv, int argc)
{
    FUZZ_CHECK(r->n_words >= 0 && in_argv(r->words, argv, argc));
    FUZZ_CHECK(r->words + r->n_words <= argv + argc);
    FUZZ_CHECK(r->command == NULL || in_argv(r->command, argv, argc));
    FUZZ_CHECK(r->url_text != NULL && r->url_origin != NULL);
    FUZZ_CHECK(o->ttl_ms >= 1 && o->ttl_ms <= INT64_C(315360000000));
    FUZZ_CHECK(o->wait_ms >= -1 && o->wait_ms <= INT64_C(315360000000));
    FUZZ_CHECK(o->busy_status >= 0 && o->busy_status <= 255);
    FUZZ_CHECK(o->workers >= 1 && o->workers <= 64);
    FUZZ_CHECK(o->duration_ms >= 100 && o->duration_ms <= 600000);
    FUZZ_CHECK(o->scheme <= TSLOCK_SCHEME_BRIDGE);
    FUZZ_CHECK(o->unit <= TSLOCK_UNIT_FLOAT);
    FUZZ_CHECK(cli_verbosity >= -1 && cli_verbosity <= 1);
}

static int canaries(char **argv, int argc)
{
    int i, n = 0;
    const char *s;

    for (i = 0; i < argc; i++)
        for (s = argv[i]; (s = strstr(s, canary)) != NULL; s++)
            n++;
    return n;
}

/*
 * A canary password parsed from -u is gone from every argument (when it
 * was the only canary: PW in another argument is not a password).
 */
static void check_scrubbed(const struct cli_request *r, char **argv, int argc,
                           int before)
{
    struct tslock_url u;
    char err[256];
    int i;

    if (before != 1 || r->url_copy == NULL
        || cli_url_parse(r->url_text, &u, err, sizeof(err)))
        return;
    if (u.password != NULL && strstr(u.password, canary) != NULL) {
        FUZZ_CHECK(r->password_in_argv);
        for (i = 0; i < argc; i++)
            FUZZ_CHECK(strstr(argv[i], canary) == NULL);
    }
    tslock_url_free(&u);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *argv[MAX_ARGS + 1], *owned[MAX_ARGS + 1];
    struct cli_request r;
    struct cli_options o;
    int argc, i, status, before;

    unsetenv("REDIS_URL");
    unsetenv("REDISCLI_AUTH");
    cli_verbosity = 0;
    argc = make_argv(data, size, argv);
    /* getopt permutes argv: keep the pointers to free. */
    memcpy(owned, argv, sizeof(char *) * (size_t)argc);
    before = canaries(argv, argc);
    status = cli_parse_args(argc, argv, &r, &o);
    FUZZ_CHECK(status == 0 || status == CLI_EXIT_USAGE
               || status == CLI_EXIT_OSERR);
    if (status == 0) {
        check_parsed(&r, &o, argv, argc);
        check_scrubbed(&r, argv, argc, before);
    }
    cli_request_free(&r);
    for (i = 0; i < argc; i++)
        free(owned[i]);
    return 0;
}

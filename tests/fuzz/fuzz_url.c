/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fuzz_url.c - the library's URL parser (tslock_url_parse, as the tool
 * calls it), what it says about a URL (tslock_url_describe) and how it
 * hides a password in argv (tslock_url_scrub).  The property: a password never
 * shows in an error, a description or a scrubbed argument. Input, two forms: a
 * URL as is (one line), or four or more lines
 * "SCHEME\nUSER\nPASSWORD-TAIL\nREST" from which the target builds
 * SCHEME://USER:<canary>PASSWORD-TAIL@REST with a canary password it can
 * look for, and rediss://REST?ssl_password=<canary>PASSWORD-TAIL with a
 * canary key passphrase.
 */
#include <string.h>

#include "../../tools/cli.h"
#include "fuzz.h"

/* Bytes no message of the parser contains. */
static const char canary[] = "\x7fS3CR3T\x7f";

static char *find(const char *hay, size_t n, const char *needle)
{
    size_t k = strlen(needle), i;

    for (i = 0; k <= n && i + k <= n; i++)
        if (memcmp(hay + i, needle, k) == 0)
            return (char *)hay + i;
    return NULL;
}

static int count(const char *s, const char *needle)
{
    int n = 0;

    while ((s = strstr(s, needle)) != NULL) {
        n++;
        s++;
    }
    return n;
}

/* Parse, describe and scrub text; with_canary: check the canary. */
static void check_url(const char *text, int with_canary)
{
    struct tslock_url u;
    char err[256] = "", desc[512] = "", *copy = strdup(text);
    size_t before = strlen(text);
    int rc = cli_url_parse(text, &u, err, sizeof(err));
    int scrubbed = tslock_url_scrub(copy);

    FUZZ_CHECK(copy != NULL && strlen(copy) <= before);
    if (rc == 0) {
        /* A Sentinel URL names sentinels, not a host. */
        FUZZ_CHECK(u.nsentinels > 0
                   || (u.host != NULL && u.port >= 1 && u.port <= 65535));
        FUZZ_CHECK(u.db >= 0 && (u.user == NULL || u.password != NULL));
        tslock_url_describe(&u, desc, sizeof(desc));
        /* A password parsed from the URL is one the scrub found. */
        if (u.password != NULL && u.password[0] != '\0')
            FUZZ_CHECK(scrubbed);
        if (with_canary)
            FUZZ_CHECK(!find(desc, strlen(desc), canary));
        tslock_url_free(&u);
    } else {
        FUZZ_CHECK(err[0] != '\0');
        FUZZ_CHECK(u.host == NULL && u.password == NULL);
    }
    if (with_canary)
        FUZZ_CHECK(!find(err, strlen(err), canary));
    if (with_canary && (rc == 0 || scrubbed))
        FUZZ_CHECK(!find(copy, strlen(copy), canary));
    free(copy);
}

/* The parts must not move the canary out of the password. */
static int canary_stays_in_password(const char *scheme, const char *user,
                                    const char *tail)
{
    return strcspn(scheme, ":/@?") == strlen(scheme)
           && strcspn(user, ":/@?") == strlen(user)
           && strcspn(tail, "/?") == strlen(tail);
}

static void check_built(char *lines[4])
{
    size_t n = strlen(lines[0]) + strlen(lines[1]) + strlen(lines[2])
               + strlen(lines[3]) + sizeof(canary) + 8;
    char *text = malloc(n);

    FUZZ_CHECK(text != NULL);
    snprintf(text, n, "%s://%s:%s%s@%s", lines[0], lines[1], canary, lines[2],
             lines[3]);
    check_url(text,
              count(text, canary) == 1
                  && canary_stays_in_password(lines[0], lines[1], lines[2]));
    free(text);
}

/*
 * The key's passphrase in the query: "rediss://REST?ssl_password=<canary>
 * PASSWORD-TAIL" (or &ssl_password= when REST has a query) must never
 * show either.
 */
static void check_query_secret(char *lines[4])
{
    size_t n = strlen(lines[2]) + strlen(lines[3]) + sizeof(canary) + 40;
    char *text = malloc(n);

    FUZZ_CHECK(text != NULL);
    snprintf(text, n, "rediss://%s%sssl_password=%s%s", lines[3],
             strchr(lines[3], '?') != NULL ? "&" : "?", canary, lines[2]);
    check_url(text, count(text, canary) == 1
                        && strcspn(lines[2], "&") == strlen(lines[2])
                        && strcspn(lines[3], "#") == strlen(lines[3]));
    free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1), *lines[4], *p;
    int n;

    FUZZ_CHECK(text != NULL);
    memcpy(text, data, size);
    text[size] = '\0';
    /* The password must come from the URL, not from the environment. */
    unsetenv("REDISCLI_AUTH");
    for (n = 0, p = text; n < 3 && (p = strchr(p, '\n')) != NULL; n++)
        p++;
    if (n < 3) {
        check_url(text, 0);
    } else {
        lines[0] = text;
        for (n = 1; n < 4; n++) {
            lines[n] = strchr(lines[n - 1], '\n');
            *lines[n]++ = '\0';
        }
        check_built(lines);
        check_query_secret(lines);
    }
    free(text);
    return 0;
}

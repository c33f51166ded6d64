/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fuzz_http.c - the exporter's HTTP request parser (cli_http_parse):
 * whatever bytes a client sends, it returns 1, 0 or -1; it never reads
 * past the input; a complete request has a NUL-terminated method and a
 * target starting with '/', and its length lies within the input; a bad
 * one says why.  Every prefix of the input is parsed too, as the bytes
 * arrive one read at a time.
 * Input: the raw bytes of a request.
 */
#include <string.h>

#include "../../tools/cli.h"
#include "fuzz.h"

static void check_one(const uint8_t *data, size_t size)
{
    struct cli_http_request req;
    const char *why = NULL;
    char *copy = malloc(size > 0 ? size : 1);
    int rc;

    FUZZ_CHECK(copy != NULL);
    memcpy(copy, data, size);
    rc = cli_http_parse(copy, size, &req, &why);
    FUZZ_CHECK(rc == 1 || rc == 0 || rc == -1);
    if (rc == -1)
        FUZZ_CHECK(why != NULL && why[0] != '\0');
    if (rc == 0)
        FUZZ_CHECK(size < CLI_HTTP_MAX_REQUEST);
    if (rc == 1) {
        FUZZ_CHECK(req.length > 0 && req.length <= size);
        FUZZ_CHECK(memchr(req.method, '\0', sizeof(req.method)) != NULL);
        FUZZ_CHECK(req.method[0] != '\0');
        FUZZ_CHECK(memchr(req.path, '\0', sizeof(req.path)) != NULL);
        FUZZ_CHECK(req.path[0] == '/');
        FUZZ_CHECK(req.minor == 0 || req.minor == 1);
        FUZZ_CHECK(req.openmetrics == 0 || req.openmetrics == 1);
    }
    free(copy);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t cut;

    check_one(data, size);
    /* A few prefixes: the request as it arrives in pieces. */
    for (cut = 1; cut < size && cut < 64; cut += 7)
        check_one(data, cut);
    return 0;
}

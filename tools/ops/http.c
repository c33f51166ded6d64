/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * http.c - the exporter's HTTP/1.x: the request parser (outside input,
 * fuzzed by tests/fuzz/fuzz_http.c), the listening socket, and writing a
 * whole response.  One request per connection, GET and HEAD only: what
 * a Prometheus scrape needs and nothing more.
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cli.h"

/* The end of the header block ("\r\n\r\n" or a bare "\n\n"), or NULL. */
static const char *header_end(const char *buf, size_t len, size_t *skip)
{
    size_t i;

    for (i = 0; i + 1 < len; i++) {
        if (buf[i] == '\n' && buf[i + 1] == '\n') {
            *skip = 2;
            return buf + i;
        }
        if (i + 3 < len && memcmp(buf + i, "\r\n\r\n", 4) == 0) {
            *skip = 4;
            return buf + i;
        }
    }
    return NULL;
}

/* "GET /metrics HTTP/1.1": method, target and version; 0 or -1. */
static int parse_request_line(const char *p, const char *end,
                              struct cli_http_request *req, const char **why)
{
    const char *sp1 = memchr(p, ' ', (size_t)(end - p)), *sp2;
    size_t n;

    if (sp1 == NULL || sp1 == p || (size_t)(sp1 - p) >= sizeof(req->method)) {
        *why = "expected a method such as GET before the first space";
        return -1;
    }
    for (n = 0; p + n < sp1; n++)
        if (p[n] < 'A' || p[n] > 'Z') {
            *why = "expected a method of capital letters, such as GET";
            return -1;
        }
    memcpy(req->method, p, (size_t)(sp1 - p));
    req->method[sp1 - p] = '\0';
    sp2 = memchr(sp1 + 1, ' ', (size_t)(end - sp1 - 1));
    if (sp2 == NULL || sp2 == sp1 + 1) {
        *why = "expected METHOD TARGET HTTP/1.x in the request line";
        return -1;
    }
    n = (size_t)(sp2 - sp1 - 1);
    if (n >= sizeof(req->path)) {
        *why = "the request target is too long";
        return -1;
    }
    memcpy(req->path, sp1 + 1, n);
    req->path[n] = '\0';
    if (memchr(req->path, '\0', n) != NULL || req->path[0] != '/') {
        *why = "expected a request target starting with '/'";
        return -1;
    }
    n = (size_t)(end - sp2 - 1);
    if (n != 8 || memcmp(sp2 + 1, "HTTP/1.", 7) != 0
        || (sp2[8] != '0' && sp2[8] != '1')) {
        *why = "expected HTTP/1.0 or HTTP/1.1 at the end of the request line";
        return -1;
    }
    req->minor = sp2[8] - '0';
    return 0;
}

/* One "Name: value" line; only Accept matters to the exporter. */
static int parse_header(const char *p, const char *end,
                        struct cli_http_request *req, const char **why)
{
    const char *colon = memchr(p, ':', (size_t)(end - p));
    static const char want[] = "application/openmetrics-text";
    size_t n;

    if (colon == NULL || colon == p) {
        *why = "expected 'Name: value' in a header line";
        return -1;
    }
    if ((size_t)(colon - p) != 6 || strncasecmp(p, "accept", 6) != 0)
        return 0;
    for (p = colon + 1; p < end; p++) {
        n = (size_t)(end - p);
        if (n >= sizeof(want) - 1
            && strncasecmp(p, want, sizeof(want) - 1) == 0) {
            req->openmetrics = 1;
            break;
        }
    }
    return 0;
}

int cli_http_parse(const char *buf, size_t len, struct cli_http_request *req,
                   const char **why)
{
    const char *end, *p, *eol;
    size_t skip = 0;

    memset(req, 0, sizeof(*req));
    *why = NULL;
    end = header_end(buf, len, &skip);
    if (end == NULL) {
        if (len >= CLI_HTTP_MAX_REQUEST) {
            *why = "the request headers exceed 8 KiB";
            return -1;
        }
        return 0;
    }
    req->length = (size_t)(end - buf) + skip;
    /* Up to and with the last header line's '\n'. */
    end += skip == 4 ? 2 : 1;
    for (p = buf; p < end; p = eol + 1) {
        eol = memchr(p, '\n', (size_t)(end - p));
        if (eol == NULL)
            break;
        {
            const char *stop = eol > p && eol[-1] == '\r' ? eol - 1 : eol;
            int rc = p == buf ? parse_request_line(p, stop, req, why)
                              : parse_header(p, stop, req, why);
            if (rc != 0)
                return -1;
        }
    }
    return 1;
}

int cli_http_listen(const char *addr, int *out_fd)
{
    char host[256];
    const char *colon = strrchr(addr, ':');
    struct addrinfo hints, *ai = NULL;
    int fd = -1, on = 1, rc;
    size_t n;

    if (colon == NULL || colon[1] == '\0' || (n = (size_t)(colon - addr)) == 0
        || n >= sizeof(host))
        return cli_usage_error("--listen expects ADDR:PORT (127.0.0.1:9750, "
                               "[::1]:9750), got '%s'",
                               addr);
    memcpy(host, addr, n);
    host[n] = '\0';
    if (host[0] == '[' && n > 2 && host[n - 1] == ']') {
        memmove(host, host + 1, n - 2);
        host[n - 2] = '\0';
    }
    memset(&hints, 0, sizeof(hints));
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    if ((rc = getaddrinfo(host, colon + 1, &hints, &ai)) != 0)
        return cli_usage_error("--listen '%s': %s", addr, gai_strerror(rc));
    fd = socket(ai->ai_family, SOCK_STREAM, 0);
    if (fd >= 0)
        (void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
    if (fd < 0 || bind(fd, ai->ai_addr, ai->ai_addrlen) != 0
        || listen(fd, 16) != 0) {
        cli_error("--listen %s: %s", addr, strerror(errno));
        if (fd >= 0)
            close(fd);
        freeaddrinfo(ai);
        return CLI_EXIT_UNAVAILABLE;
    }
    freeaddrinfo(ai);
    (void)fcntl(fd, F_SETFD, FD_CLOEXEC);
    (void)fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    *out_fd = fd;
    return 0;
}

/* Write all of p, or give up (the scraper went away). */
static int write_all(int fd, const char *p, size_t len)
{
    ssize_t n;

    while (len > 0) {
        n = send(fd, p, len, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

int cli_http_respond(int fd, int status, const char *content_type,
                     const char *body, size_t len, int head_only)
{
    char head[512];
    const char *reason = status == 200   ? "OK"
                         : status == 400 ? "Bad Request"
                         : status == 404 ? "Not Found"
                         : status == 405 ? "Method Not Allowed"
                                         : "Error";
    int n = snprintf(head, sizeof(head),
                     "HTTP/1.1 %d %s\r\nContent-Type: %s\r\n"
                     "Content-Length: %zu\r\nConnection: close\r\n%s\r\n",
                     status, reason, content_type, len,
                     status == 405 ? "Allow: GET, HEAD\r\n" : "");

    if (write_all(fd, head, (size_t)n) != 0)
        return -1;
    return head_only ? 0 : write_all(fd, body, len);
}

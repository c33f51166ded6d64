/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * legacy_cli.c - the legacy timestamp clients of legacy.c as a command,
 * so shell tests (survey, watch) can have real legacy algorithms write
 * and delete their locks.  Each client gets its own connection, so a
 * server that names clients by address sees them apart.
 *
 *   legacy_cli (-s SOCKET | -p PORT) [-n DB] WORD...
 *
 * The words run in order:
 *   client NAME KIND TIMEOUT_MS [SKEW_MS]
 *       a client of KIND (java, redisdoc, redispy2) whose wall clock runs
 *       SKEW_MS ahead of the real one (behind when negative)
 *   lock NAME KEY      one pass of its acquire; prints "NAME held VALUE"
 *                      or "NAME busy"
 *   unlock NAME KEY    its release; prints "NAME deleted" or "NAME kept"
 *
 * Exit 0 when every word ran, 1 on a Redis or parse error, 64 on usage.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hiredis_compat.h"

#include "legacy.h"

#define MAX_CLIENTS 8

struct named {
    char name[32];
    int64_t skew_us;
    redisContext *redis;
    legacy_client lc;
};

static struct named clients[MAX_CLIENTS];
static int n_clients;
static const char *sock_path;
static int port;
static int db;

static int usage(const char *why)
{
    fprintf(stderr,
            "legacy_cli: %s\n"
            "usage: legacy_cli (-s SOCKET | -p PORT) [-n DB] WORD...\n"
            "  client NAME KIND TIMEOUT_MS [SKEW_MS] | lock NAME KEY"
            " | unlock NAME KEY\n",
            why);
    return 64;
}

static int64_t skewed_now_us(void *userdata)
{
    const struct named *n = userdata;
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000 + n->skew_us;
}

static redisContext *open_connection(void)
{
    redisContext *r = sock_path != NULL ? redisConnectUnix(sock_path)
                                        : redisConnect("127.0.0.1", port);
    redisReply *reply;

    if (r == NULL || r->err) {
        fprintf(stderr, "legacy_cli: cannot connect: %s\n",
                r != NULL ? r->errstr : "out of memory");
        redisFree(r);
        return NULL;
    }
    if (db != 0) {
        reply = redisCommand(r, "SELECT %d", db);
        if (reply == NULL || reply->type == REDIS_REPLY_ERROR) {
            fprintf(stderr, "legacy_cli: SELECT %d refused\n", db);
            freeReplyObject(reply);
            redisFree(r);
            return NULL;
        }
        freeReplyObject(reply);
    }
    return r;
}

static struct named *find(const char *name)
{
    int i;

    for (i = 0; i < n_clients; i++)
        if (strcmp(clients[i].name, name) == 0)
            return &clients[i];
    fprintf(stderr, "legacy_cli: no client named %s\n", name);
    return NULL;
}

static int parse_kind(const char *s, legacy_kind *kind)
{
    static const legacy_kind kinds[] = {LEGACY_JAVA, LEGACY_REDISDOC,
                                        LEGACY_REDISPY2};
    size_t i;

    for (i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
        if (strcmp(s, legacy_kind_name(kinds[i])) == 0) {
            *kind = kinds[i];
            return 0;
        }
    return -1;
}

static int add_client(char **w, int n)
{
    struct named *c;
    legacy_kind kind;
    char *end;
    long long timeout, skew = 0;

    if (n < 4 || n_clients == MAX_CLIENTS)
        return usage("client needs NAME KIND TIMEOUT_MS [SKEW_MS]");
    if (parse_kind(w[2], &kind) != 0)
        return usage("KIND is java, redisdoc or redispy2");
    timeout = strtoll(w[3], &end, 10);
    if (*end != '\0' || timeout <= 0)
        return usage("TIMEOUT_MS is a positive number of ms");
    if (n > 4 && strcmp(w[4], "lock") != 0 && strcmp(w[4], "unlock") != 0
        && strcmp(w[4], "client") != 0) {
        skew = strtoll(w[4], &end, 10);
        if (*end != '\0')
            return usage("SKEW_MS is a number of ms");
    }
    c = &clients[n_clients];
    snprintf(c->name, sizeof(c->name), "%s", w[1]);
    c->skew_us = skew * 1000;
    c->redis = open_connection();
    if (c->redis == NULL)
        return 1;
    n_clients++;
    legacy_init(&c->lc, kind, c->redis, timeout);
    c->lc.clock = skewed_now_us;
    c->lc.clock_ud = c;
    return 0;
}

/* The number of words the command at w took, or -1 after an error. */
static int run_word(char **w, int n, int *rc)
{
    struct named *c;
    int r;

    if (strcmp(w[0], "client") == 0) {
        *rc = add_client(w, n);
        return n > 4 && strcmp(w[4], "lock") != 0 && strcmp(w[4], "unlock") != 0
                       && strcmp(w[4], "client") != 0
                   ? 5
                   : 4;
    }
    if (n < 3 || (strcmp(w[0], "lock") != 0 && strcmp(w[0], "unlock") != 0)) {
        *rc = usage("expected client, lock NAME KEY or unlock NAME KEY");
        return -1;
    }
    c = find(w[1]);
    if (c == NULL) {
        *rc = 64;
        return -1;
    }
    if (strcmp(w[0], "lock") == 0) {
        r = legacy_try(&c->lc, w[2]);
        if (r == LEGACY_HELD)
            printf("%s held %s\n", c->name, c->lc.value);
        else if (r == LEGACY_BUSY)
            printf("%s busy\n", c->name);
    } else {
        r = legacy_unlock(&c->lc, w[2]);
        if (r >= 0)
            printf("%s %s\n", c->name, r == 1 ? "deleted" : "kept");
    }
    if (r < 0) {
        fprintf(stderr, "legacy_cli: %s %s: %s\n", c->name, w[0], c->lc.errstr);
        *rc = 1;
        return -1;
    }
    fflush(stdout);
    return 3;
}

int main(int argc, char **argv)
{
    int i = 1, rc = 0;

    while (i + 1 < argc && argv[i][0] == '-') {
        if (strcmp(argv[i], "-s") == 0)
            sock_path = argv[i + 1];
        else if (strcmp(argv[i], "-p") == 0)
            port = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "-n") == 0)
            db = atoi(argv[i + 1]);
        else
            return usage("unknown option");
        i += 2;
    }
    if (sock_path == NULL && port <= 0)
        return usage("give -s SOCKET or -p PORT");
    if (i == argc)
        return usage("no words to run");
    while (i < argc && rc == 0) {
        int used = run_word(argv + i, argc - i, &rc);
        if (used < 0)
            break;
        i += used;
    }
    for (i = 0; i < n_clients; i++)
        redisFree(clients[i].redis);
    return rc;
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * harness_cluster.c - a Redis Cluster of real redis-server processes for
 * the tests; see harness_cluster.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "harness_cluster.h"

extern char **environ;

#define NODE_CONF                                                              \
    "cluster-enabled yes\n"                                                    \
    "cluster-config-file nodes.conf\n"                                         \
    "cluster-require-full-coverage no\n"                                       \
    "repl-diskless-sync-delay 0\n"

/* A raw connection to node i, AUTHed when the cluster has a password. */
static redisContext *node_conn(const th_cluster *cl, int i)
{
    redisContext *c = th_redis(&cl->node[i]);

    if (cl->password[0] != '\0')
        freeReplyObject(redisCommand(c, "AUTH %s", cl->password));
    return c;
}

static redisReply *command_on(const th_cluster *cl, int i, const char *fmt, ...)
{
    redisContext *c = node_conn(cl, i);
    redisReply *r;
    va_list ap;

    va_start(ap, fmt);
    r = redisvCommand(c, fmt, ap);
    va_end(ap);
    redisFree(c);
    return r;
}

/* Run redis-cli --cluster create over the nodes; its output in a log. */
static int join(th_cluster *cl)
{
    const char *prog = getenv("REDIS_CLI");
    char addr[TH_CLUSTER_MAX][32], log[300], nrep[16];
    char *argv[TH_CLUSTER_MAX + 12];
    posix_spawn_file_actions_t fa;
    pid_t pid;
    int i, k = 0, status = 0, rc;

    if (prog == NULL || *prog == '\0')
        prog = "redis-cli";
    argv[k++] = (char *)prog;
    if (cl->password[0] != '\0') {
        argv[k++] = "-a";
        argv[k++] = cl->password;
        argv[k++] = "--no-auth-warning";
    }
    argv[k++] = "--cluster";
    argv[k++] = "create";
    for (i = 0; i < cl->n; i++) {
        snprintf(addr[i], sizeof(addr[i]), "127.0.0.1:%d", cl->node[i].port);
        argv[k++] = addr[i];
    }
    snprintf(nrep, sizeof(nrep), "%d", cl->replicas);
    argv[k++] = "--cluster-replicas";
    argv[k++] = nrep;
    argv[k++] = "--cluster-yes";
    argv[k] = NULL;
    snprintf(log, sizeof(log), "%s/cluster-create.log", cl->node[0].dir);
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, log, O_WRONLY | O_CREAT, 0600);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    rc = posix_spawnp(&pid, prog, &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) {
        fprintf(stderr, "harness: cannot run %s: %s\n", prog, strerror(rc));
        return -1;
    }
    /*
     * redis-cli sends each CLUSTER MEET once and then waits, without a
     * bound, for every node to agree; on a loaded machine a handshake
     * can time out and the wait never ends.  After 10 s, and every 5 s
     * from then, the nodes meet again (MEET of a known node changes
     * nothing), and after 90 s redis-cli is stopped and the join fails,
     * with its log.
     */
    for (i = 0;; i++) {
        pid_t got = waitpid(pid, &status, WNOHANG);

        if (got == pid || (got < 0 && errno != EINTR))
            break;
        if (i == 900) {
            kill(pid, SIGKILL);
            while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
                ;
            fprintf(stderr,
                    "harness: %s --cluster create did not end in "
                    "90 s\n",
                    prog);
            status = 1 << 8;
            break;
        }
        if (i >= 100 && i % 50 == 0) {
            int a, b;

            for (a = 0; a < cl->n; a++)
                for (b = 0; b < cl->n; b++)
                    if (a != b)
                        freeReplyObject(command_on(cl, a,
                                                   "CLUSTER MEET 127.0.0.1 %d",
                                                   cl->node[b].port));
        }
        usleep(100 * 1000);
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        char line[512];
        FILE *f = fopen(log, "r");
        fprintf(stderr, "harness: %s --cluster create failed:\n", prog);
        while (f != NULL && fgets(line, sizeof(line), f) != NULL)
            fputs(line, stderr);
        if (f != NULL)
            fclose(f);
        return -1;
    }
    return 0;
}

/* Whether node i says cluster_state:ok and knows all n nodes. */
static int settled(const th_cluster *cl, int i)
{
    redisReply *r = command_on(cl, i, "CLUSTER INFO");
    char want[64];
    int ok;

    snprintf(want, sizeof(want), "cluster_known_nodes:%d", cl->n);
    ok = r != NULL && r->type == REDIS_REPLY_STRING
         && strstr(r->str, "cluster_state:ok") != NULL
         && strstr(r->str, want) != NULL
         && strstr(r->str, "cluster_slots_assigned:16384") != NULL;
    freeReplyObject(r);
    return ok;
}

/* A loopback port free now, for a node's cluster bus (cluster-port). */
static int free_port(void)
{
    struct sockaddr_in a;
    socklen_t len = sizeof(a);
    int fd = socket(AF_INET, SOCK_STREAM, 0), port = -1;

    if (fd < 0)
        return -1;
    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0
        && getsockname(fd, (struct sockaddr *)&a, &len) == 0)
        port = ntohs(a.sin_port);
    close(fd);
    return port;
}

int th_cluster_start(th_cluster *cl, int n)
{
    return th_cluster_start_opts(cl, n, 0, NULL, 5000);
}

int th_cluster_start_auth(th_cluster *cl, int n, const char *password)
{
    return th_cluster_start_opts(cl, n, 0, password, 5000);
}

int th_cluster_start_opts(th_cluster *cl, int masters, int replicas,
                          const char *password, int node_timeout_ms)
{
    char conf[512];
    int i, tries, n = masters * (1 + replicas);

    memset(cl, 0, sizeof(*cl));
    cl->replicas = replicas;
    if (password != NULL)
        snprintf(cl->password, sizeof(cl->password), "%s", password);
    if (masters < 2 || replicas < 0 || n > TH_CLUSTER_MAX) {
        fprintf(stderr, "harness: a cluster of %d masters, %d replicas each\n",
                masters, replicas);
        return -1;
    }
    for (i = 0; i < n; i++) {
        /* The bus port is not data port + 10000, which may pass 65535. */
        snprintf(conf, sizeof(conf),
                 NODE_CONF "cluster-port %d\ncluster-node-timeout %d\n",
                 free_port(), node_timeout_ms);
        if (password != NULL)
            snprintf(conf + strlen(conf), sizeof(conf) - strlen(conf),
                     "requirepass %s\nmasterauth %s\n", password, password);
        if (th_server_start(&cl->node[i], conf) != 0) {
            th_cluster_stop(cl);
            return -1;
        }
        cl->n = i + 1;
    }
    if (join(cl) != 0) {
        th_cluster_stop(cl);
        return -1;
    }
    for (tries = 0; tries < 200; tries++) {
        for (i = 0; i < n && settled(cl, i); i++)
            ;
        if (i == n)
            break;
        th_sleep_us(50000);
    }
    if (tries == 200) {
        fprintf(stderr, "harness: the cluster did not settle in 10 s\n");
        th_cluster_stop(cl);
        return -1;
    }
    for (i = 0; i < n; i++) {
        redisReply *r = command_on(cl, i, "CLUSTER MYID");
        if (r != NULL && r->type == REDIS_REPLY_STRING)
            snprintf(cl->id[i], sizeof(cl->id[i]), "%s", r->str);
        freeReplyObject(r);
    }
    return 0;
}

void th_cluster_stop(th_cluster *cl)
{
    int i;

    for (i = 0; i < cl->n; i++)
        th_server_stop(&cl->node[i]);
}

const char *th_cluster_url(const th_cluster *cl, int i)
{
    static char url[64];

    snprintf(url, sizeof(url), "redis://127.0.0.1:%d", cl->node[i].port);
    return url;
}

int th_cluster_keyslot(const th_cluster *cl, int i, const char *key, size_t len)
{
    redisReply *r = command_on(cl, i, "CLUSTER KEYSLOT %b", key, len);
    int slot =
        r != NULL && r->type == REDIS_REPLY_INTEGER ? (int)r->integer : -1;

    freeReplyObject(r);
    return slot;
}

/* The first node still running: the one asked about the cluster. */
static int live_node(const th_cluster *cl)
{
    int i;

    for (i = 0; i < cl->n; i++)
        if (cl->node[i].pid != 0)
            return i;
    return 0;
}

/* The node index of element e's master (m = 2). */
static int node_of(const th_cluster *cl, const redisReply *e, size_t m)
{
    int j;

    if (e->elements <= m)
        return -1;
    for (j = 0; j < cl->n; j++)
        if (e->element[m]->element[1]->integer == cl->node[j].port)
            return j;
    return -1;
}

/* Who serves key's slot by CLUSTER SLOTS: m = 2 the master, 3 a replica. */
static int slot_node(const th_cluster *cl, const char *key, size_t m)
{
    int via = live_node(cl);
    int slot = th_cluster_keyslot(cl, via, key, strlen(key)), found = -1;
    redisReply *r = command_on(cl, via, "CLUSTER SLOTS");
    size_t i;

    for (i = 0; slot >= 0 && r != NULL && r->type == REDIS_REPLY_ARRAY
                && i < r->elements;
         i++) {
        const redisReply *e = r->element[i];
        if (e->element[0]->integer <= slot && slot <= e->element[1]->integer)
            found = node_of(cl, e, m);
    }
    freeReplyObject(r);
    return found;
}

int th_cluster_owner(const th_cluster *cl, const char *key)
{
    return slot_node(cl, key, 2);
}

int th_cluster_replica(const th_cluster *cl, const char *key)
{
    int owner = th_cluster_owner(cl, key), found = -1, j;
    redisReply *r;
    const char *line;
    char want[64];

    if (owner < 0)
        return -1;
    /* Lines of CLUSTER NODES: "<id> <ip:port@bus> <flags> <master id> ...". */
    r = command_on(cl, live_node(cl), "CLUSTER NODES");
    snprintf(want, sizeof(want), "slave %s", cl->id[owner]);
    for (line = r != NULL && r->type == REDIS_REPLY_STRING ? r->str : NULL;
         line != NULL && *line != '\0';) {
        const char *eol = strchr(line, '\n'), *slave = strstr(line, want);
        for (j = 0; slave != NULL && (eol == NULL || slave < eol) && j < cl->n;
             j++)
            if (strncmp(line, cl->id[j], 40) == 0)
                found = j;
        line = eol != NULL ? eol + 1 : NULL;
    }
    freeReplyObject(r);
    return found;
}

long th_cluster_stat(const th_cluster *cl, const char *section,
                     const char *field)
{
    long sum = 0;
    int i;

    for (i = 0; i < cl->n; i++) {
        redisReply *r = command_on(cl, i, "INFO %s", section);
        const char *p, *v;
        char want[128];

        if (r == NULL || r->type != REDIS_REPLY_STRING) {
            freeReplyObject(r);
            return -1;
        }
        snprintf(want, sizeof(want), "%s:", field);
        p = strstr(r->str, want);
        if (p != NULL) {
            const char *eol = strchr(p, '\n');
            v = strstr(p, "count=");
            if (v == NULL || (eol != NULL && v > eol))
                v = strstr(p, "calls=");
            if (v != NULL && (eol == NULL || v < eol))
                sum += strtol(v + 6, NULL, 10);
        }
        freeReplyObject(r);
    }
    return sum;
}

void th_cluster_reset_stats(const th_cluster *cl)
{
    int i;

    for (i = 0; i < cl->n; i++)
        freeReplyObject(command_on(cl, i, "CONFIG RESETSTAT"));
}

static int expect_ok(redisReply *r, const char *what)
{
    int ok = r != NULL && r->type == REDIS_REPLY_STATUS;

    if (!ok)
        fprintf(stderr, "harness: %s: %s\n", what,
                r != NULL && r->str != NULL ? r->str : "no reply");
    freeReplyObject(r);
    return ok ? 0 : -1;
}

int th_cluster_migrate_begin(const th_cluster *cl, int slot, int from, int to)
{
    if (expect_ok(command_on(cl, to, "CLUSTER SETSLOT %d IMPORTING %s", slot,
                             cl->id[from]),
                  "SETSLOT IMPORTING")
        != 0)
        return -1;
    return expect_ok(command_on(cl, from, "CLUSTER SETSLOT %d MIGRATING %s",
                                slot, cl->id[to]),
                     "SETSLOT MIGRATING");
}

int th_cluster_migrate_keys(const th_cluster *cl, int slot, int from, int to,
                            int max)
{
    redisContext *c = node_conn(cl, from);
    redisReply *keys = redisCommand(c, "CLUSTER GETKEYSINSLOT %d %d", slot,
                                    max > 0 ? max : 100000);
    int moved = -1;

    if (keys != NULL && keys->type == REDIS_REPLY_ARRAY) {
        char port[16];
        size_t i;

        snprintf(port, sizeof(port), "%d", cl->node[to].port);
        moved = 0;
        for (i = 0; i < keys->elements; i++) {
            const char *argv[9] = {
                "MIGRATE", "127.0.0.1", port,   keys->element[i]->str,
                "0",       "5000",      "AUTH", cl->password};
            size_t lens[9] = {
                7, 9, strlen(port),        keys->element[i]->len, 1,
                4, 4, strlen(cl->password)};
            /* The password, if any, goes with MIGRATE (AUTH, Redis 4). */
            redisReply *r = redisCommandArgv(c, cl->password[0] != '\0' ? 8 : 6,
                                             argv, lens);
            /* NOKEY: it expired or was deleted since GETKEYSINSLOT. */
            if (r != NULL && r->type == REDIS_REPLY_STATUS)
                moved++;
            else if (r == NULL || r->type != REDIS_REPLY_STATUS) {
                fprintf(stderr, "harness: MIGRATE: %s\n",
                        r != NULL && r->str != NULL ? r->str : "no reply");
                if (r == NULL || strstr(r->str, "NOKEY") == NULL) {
                    freeReplyObject(r);
                    moved = -1;
                    break;
                }
            }
            freeReplyObject(r);
        }
    }
    freeReplyObject(keys);
    redisFree(c);
    return moved;
}

int th_cluster_migrate_end(const th_cluster *cl, int slot, int from, int to)
{
    int i;

    if (expect_ok(
            command_on(cl, to, "CLUSTER SETSLOT %d NODE %s", slot, cl->id[to]),
            "SETSLOT NODE (target)")
        != 0)
        return -1;
    if (expect_ok(command_on(cl, from, "CLUSTER SETSLOT %d NODE %s", slot,
                             cl->id[to]),
                  "SETSLOT NODE (source)")
        != 0)
        return -1;
    for (i = 0; i < cl->n; i++)
        if (i != from && i != to)
            (void)expect_ok(command_on(cl, i, "CLUSTER SETSLOT %d NODE %s",
                                       slot, cl->id[to]),
                            "SETSLOT NODE");
    return 0;
}

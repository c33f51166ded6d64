/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_sentinel.c - locks over a master found through Redis Sentinel:
 * a master, its replica and three sentinels, all real redis-server
 * processes.  Connecting through the sentinels (also with the first one
 * down), following a SIGKILLed master and a demoted one (-READONLY),
 * WAIT for replicas, and the ROLE -> INFO fallback and WAIT's refusal on
 * an emulated Redis 2.6.  Failovers are awaited by polling the sentinels
 * with a deadline; nothing assumes how long one takes.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness_sentinel.h"

#define DEADLINE_MS 20000

static th_topology topo;

static int start_topology(void)
{
    return th_topology_start(&topo, "tsmaster");
}

static int stop_topology(void)
{
    th_topology_stop(&topo);
    return 0;
}

static int address_port(tslock_client *c)
{
    int port = -1;

    CU_ASSERT_EQUAL(tslock_client_address(c, NULL, &port), TSLOCK_OK);
    return port;
}

static tslock_lock *new_lock(tslock_client *c, const char *key, int64_t ttl)
{
    tslock_lock *l = NULL;

    CU_ASSERT_FATAL(tslock_lock_new(&l, c, key) == TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_lock_set_scheme(l, TSLOCK_SCHEME_TOKEN), TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_lock_set_ttl(l, ttl), TSLOCK_OK);
    return l;
}

/* ------------------------------------------------- one steady topology */

static void test_connect(void)
{
    tslock_client *c = th_topology_client(&topo);
    tslock_lock *l;
    char buf[64];

    if (c == NULL)
        return;
    CU_ASSERT_EQUAL(address_port(c), topo.node[0].port);
    l = new_lock(c, "s:connect", 10000);
    CU_ASSERT_EQUAL(tslock_acquire(l, 0), TSLOCK_OK);
    CU_ASSERT_EQUAL(
        th_node_get(&topo, topo.node[0].port, "s:connect", buf, sizeof(buf)),
        1);
    CU_ASSERT_STRING_EQUAL(buf, tslock_lock_value(l));
    CU_ASSERT_EQUAL(tslock_release(l), TSLOCK_OK);
    CU_ASSERT_EQUAL(
        th_node_get(&topo, topo.node[0].port, "s:connect", buf, sizeof(buf)),
        0);
    tslock_lock_free(l);
    tslock_client_free(c);
}

static void test_bad_arguments(void)
{
    const char *hosts[TH_SENTINELS], *bad_hosts[1] = {""};
    int ports[TH_SENTINELS], bad_ports[1] = {70000};
    tslock_client *c = NULL;
    tslock_lock *l = NULL;

    th_topology_addrs(&topo, hosts, ports);
    CU_ASSERT_FATAL(tslock_client_new(&c) == TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_client_connect_sentinel(NULL, 1, hosts, ports, "x"),
                    TSLOCK_EINVAL);
    CU_ASSERT_EQUAL(tslock_client_connect_sentinel(c, 0, hosts, ports, "x"),
                    TSLOCK_EINVAL);
    CU_ASSERT_EQUAL(tslock_client_connect_sentinel(c, 1, NULL, ports, "x"),
                    TSLOCK_EINVAL);
    CU_ASSERT_EQUAL(tslock_client_connect_sentinel(c, 1, hosts, ports, ""),
                    TSLOCK_EINVAL);
    CU_ASSERT_EQUAL(tslock_client_connect_sentinel(c, 1, bad_hosts, ports, "x"),
                    TSLOCK_EINVAL);
    CU_ASSERT_EQUAL(tslock_client_connect_sentinel(c, 1, hosts, bad_ports, "x"),
                    TSLOCK_EINVAL);
    CU_ASSERT_EQUAL(tslock_client_set_sentinel_auth(NULL, NULL, "x"),
                    TSLOCK_EINVAL);
    CU_ASSERT_EQUAL(tslock_client_set_sentinel_auth(c, "u", NULL),
                    TSLOCK_EINVAL);
    CU_ASSERT_EQUAL(tslock_client_address(NULL, NULL, NULL), TSLOCK_EINVAL);
    CU_ASSERT_EQUAL(tslock_client_address(c, NULL, NULL), TSLOCK_ESTATE);
    CU_ASSERT_FATAL(tslock_lock_new(&l, c, "s:args") == TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_lock_set_replicas(NULL, 1, 10), TSLOCK_EINVAL);
    CU_ASSERT_EQUAL(tslock_lock_set_replicas(l, -1, 10), TSLOCK_EINVAL);
    CU_ASSERT_EQUAL(tslock_lock_set_replicas(l, 1, 0), TSLOCK_EINVAL);
    CU_ASSERT_EQUAL(tslock_lock_set_replicas(l, 0, 0), TSLOCK_OK);
    tslock_lock_free(l);
    tslock_client_free(c);
}

static void test_unknown_name(void)
{
    const char *hosts[TH_SENTINELS];
    int ports[TH_SENTINELS];
    tslock_client *c = NULL;
    int rc;

    th_topology_addrs(&topo, hosts, ports);
    CU_ASSERT_FATAL(tslock_client_new(&c) == TSLOCK_OK);
    rc = tslock_client_connect_sentinel(c, TH_SENTINELS, hosts, ports,
                                        "nosuchmaster");
    CU_ASSERT_EQUAL(rc, TSLOCK_ESERVER);
    CU_ASSERT_PTR_NOT_NULL(
        strstr(tslock_client_errstr(c), "knows no master named"));
    CU_ASSERT_TRUE(tslock_client_is_broken(c));
    tslock_client_free(c);
}

/* Sentinels with no password refuse AUTH: the credentials are theirs. */
static void test_sentinel_auth_refused(void)
{
    const char *hosts[TH_SENTINELS];
    int ports[TH_SENTINELS];
    tslock_client *c = NULL;

    th_topology_addrs(&topo, hosts, ports);
    CU_ASSERT_FATAL(tslock_client_new(&c) == TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_client_set_sentinel_auth(c, NULL, "wrong"),
                    TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_client_connect_sentinel(c, TH_SENTINELS, hosts,
                                                   ports, topo.name),
                    TSLOCK_EAUTH);
    CU_ASSERT_PTR_NOT_NULL(strstr(tslock_client_errstr(c), "AUTH"));
    CU_ASSERT_PTR_NULL(strstr(tslock_client_errstr(c), "wrong"));
    tslock_client_free(c);
}

/* One replica acknowledges: the key is on the replica when acquire returns. */
static void test_wait_one_replica(void)
{
    tslock_client *c = th_topology_client(&topo);
    tslock_lock *l;
    char buf[64];

    if (c == NULL)
        return;
    l = new_lock(c, "s:wait1", 10000);
    CU_ASSERT_EQUAL(tslock_lock_set_replicas(l, 1, 2000), TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_acquire(l, 0), TSLOCK_OK);
    CU_ASSERT_EQUAL(
        th_node_get(&topo, topo.node[1].port, "s:wait1", buf, sizeof(buf)), 1);
    CU_ASSERT_STRING_EQUAL(buf, tslock_lock_value(l));
    CU_ASSERT_EQUAL(tslock_extend(l, 0), TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_release(l), TSLOCK_OK);
    tslock_lock_free(l);
    tslock_client_free(c);
}

/* Two asked for, one exists: the hold is undone, nothing left behind. */
static void test_wait_two_replicas(void)
{
    tslock_client *c = th_topology_client(&topo);
    tslock_lock *l;
    char buf[64];
    int64_t left = 0;

    if (c == NULL)
        return;
    l = new_lock(c, "s:wait2", 10000);
    CU_ASSERT_EQUAL(tslock_lock_set_replicas(l, 2, 200), TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_acquire(l, 0), TSLOCK_EREPLICAS);
    CU_ASSERT_PTR_NOT_NULL(
        strstr(tslock_client_errstr(c), "1 of the 2 replicas"));
    CU_ASSERT_FALSE(tslock_lock_is_held(l));
    CU_ASSERT_EQUAL(
        th_node_get(&topo, topo.node[0].port, "s:wait2", buf, sizeof(buf)), 0);
    /* An extension: still held, the lease extended on the master. */
    CU_ASSERT_EQUAL(tslock_lock_set_replicas(l, 1, 2000), TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_acquire(l, 0), TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_lock_set_replicas(l, 2, 200), TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_extend(l, 30000), TSLOCK_EREPLICAS);
    CU_ASSERT_TRUE(tslock_lock_is_held(l));
    CU_ASSERT_EQUAL(tslock_lock_time_left(l, &left), TSLOCK_OK);
    CU_ASSERT_TRUE(left > 10000);
    CU_ASSERT_EQUAL(tslock_release(l), TSLOCK_OK);
    tslock_lock_free(l);
    tslock_client_free(c);
}

/* ------------------------------------------------------ the tslock CLI */

static char cli_dir[256]; /* stdout, stderr and flag files of the CLI */

static int make_cli_dir(void)
{
    snprintf(cli_dir, sizeof(cli_dir), "/tmp/tslock-sentinel-cli.XXXXXX");
    return mkdtemp(cli_dir) != NULL ? 0 : -1;
}

static void remove_cli_dir(void)
{
    char cmd[300];

    if (cli_dir[0] != '\0' && strncmp(cli_dir, "/tmp/tslock-", 12) == 0) {
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", cli_dir);
        if (system(cmd) != 0)
            fprintf(stderr, "cannot remove %s\n", cli_dir);
    }
}

static void cli_path(char *buf, size_t size, const char *name)
{
    snprintf(buf, size, "%s/%s", cli_dir, name);
}

/* The redis+sentinel:// URL of the topology. */
static void sentinel_url(char *buf, size_t size, const char *name)
{
    snprintf(buf, size,
             "redis+sentinel://127.0.0.1:%d,127.0.0.1:%d,127.0.0.1:%d/%s",
             topo.sentinel[0].port, topo.sentinel[1].port,
             topo.sentinel[2].port, name);
}

/* Start tools/tslock with args; its stdout and stderr go to files. */
static pid_t spawn_cli(const char *const *args, const char *tag)
{
    const char *top = getenv("top_builddir");
    char prog[512], out[300], err[300];
    const char *argv[32];
    pid_t pid;
    int i;

    snprintf(prog, sizeof(prog), "%s/tools/tslock",
             top != NULL && top[0] != '\0' ? top : ".");
    argv[0] = prog;
    for (i = 0; args[i] != NULL && i < 30; i++)
        argv[i + 1] = args[i];
    argv[i + 1] = NULL;
    snprintf(out, sizeof(out), "%s/%s.out", cli_dir, tag);
    snprintf(err, sizeof(err), "%s/%s.err", cli_dir, tag);
    pid = fork();
    if (pid == 0) {
        int o = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        int e = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (o < 0 || e < 0 || dup2(o, 1) < 0 || dup2(e, 2) < 0)
            _exit(120);
        execv(prog, (char *const *)argv);
        _exit(127);
    }
    return pid;
}

static int wait_cli(pid_t pid)
{
    int st = 0;

    if (pid <= 0 || waitpid(pid, &st, 0) != pid)
        return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* Run tslock to the end: its exit status. */
static int run_cli(const char *const *args, const char *tag)
{
    return wait_cli(spawn_cli(args, tag));
}

/* The first line of a file the CLI wrote, into buf ("" when none). */
static const char *cli_output(const char *tag, const char *ext, char *buf,
                              size_t size)
{
    char path[300];
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s.%s", cli_dir, tag, ext);
    buf[0] = '\0';
    f = fopen(path, "r");
    if (f == NULL)
        return buf;
    if (fgets(buf, (int)size, f) == NULL)
        buf[0] = '\0';
    buf[strcspn(buf, "\n")] = '\0';
    fclose(f);
    return buf;
}

static int file_exists(const char *path)
{
    struct stat st;

    return stat(path, &st) == 0;
}

static void test_cli_steady(void)
{
    char url[256], handle[256], line[1024], buf[64], bad[256];
    const char *token;
    int rc;

    sentinel_url(url, sizeof(url), topo.name);
    {
        const char *args[] = {"-u", url, "acquire", "s:cli", NULL};
        CU_ASSERT_EQUAL(run_cli(args, "acquire"), 0);
    }
    cli_output("acquire", "out", handle, sizeof(handle));
    token = strchr(handle, ':');
    CU_ASSERT_FATAL(token != NULL);
    CU_ASSERT_EQUAL(
        th_node_get(&topo, topo.node[0].port, "s:cli", buf, sizeof(buf)), 1);
    CU_ASSERT_STRING_EQUAL(buf, token + 1);
    {
        const char *args[] = {"-u", url, "release", "s:cli", handle, NULL};
        CU_ASSERT_EQUAL(run_cli(args, "release"), 0);
    }
    CU_ASSERT_EQUAL(
        th_node_get(&topo, topo.node[0].port, "s:cli", buf, sizeof(buf)), 0);

    /* --replicas: one acknowledges; two asked for fail with 69. */
    {
        const char *args[] = {"-u",     url,  "--replicas", "1",
                              "s:cli1", "--", "true",       NULL};
        CU_ASSERT_EQUAL(run_cli(args, "replicas1"), 0);
    }
    {
        const char *args[] = {
            "-u",  url,      "--replicas", "2",    "--replicas-timeout",
            "200", "s:cli2", "--",         "true", NULL};
        rc = run_cli(args, "replicas2");
        CU_ASSERT_EQUAL(rc, 69);
        CU_ASSERT_PTR_NOT_NULL(
            strstr(cli_output("replicas2", "err", line, sizeof(line)),
                   "TSLOCK_EREPLICAS"));
        CU_ASSERT_EQUAL(
            th_node_get(&topo, topo.node[0].port, "s:cli2", buf, sizeof(buf)),
            0);
    }

    /* An unknown name: one line, the server's refusal (70). */
    sentinel_url(bad, sizeof(bad), "nosuch");
    {
        const char *args[] = {"-u", bad, "status", "k", NULL};
        CU_ASSERT_EQUAL(run_cli(args, "nosuch"), 70);
        CU_ASSERT_PTR_NOT_NULL(
            strstr(cli_output("nosuch", "err", line, sizeof(line)),
                   "knows no master named 'nosuch'"));
    }

    /* A sentinel that is not there is passed over. */
    snprintf(bad, sizeof(bad), "redis+sentinel://127.0.0.1:1,127.0.0.1:%d/%s",
             topo.sentinel[1].port, topo.name);
    {
        const char *args[] = {"-u", bad, "s:cli3", "--", "true", NULL};
        CU_ASSERT_EQUAL(run_cli(args, "passover"), 0);
    }
}

/* Last in its suite: it kills the first sentinel. */
static void test_first_sentinel_down(void)
{
    tslock_client *c;

    th_server_kill(&topo.sentinel[0]);
    c = th_topology_client(&topo);
    if (c == NULL)
        return;
    CU_ASSERT_EQUAL(address_port(c), topo.node[0].port);
    tslock_client_free(c);
}

/* --------------------------------------------------- SIGKILL the master */

struct renew_log {
    int failures;
    int code;
};

static void on_renew_failure(int code, const char *detail, void *ud)
{
    struct renew_log *log = ud;

    (void)detail;
    log->failures++;
    log->code = code;
}

static void test_master_killed(void)
{
    tslock_client *a = th_topology_client(&topo);
    tslock_client *w = th_topology_client(&topo);
    tslock_client *r = th_topology_client(&topo);
    tslock_client *b = th_topology_client(&topo);
    tslock_lock *held, *renewed, *waited, *lost;
    redisContext *raw;
    redisReply *reply;
    tslock_watchdog *dog = NULL;
    struct renew_log log = {0, 0};
    char token[64], buf[64], url[256], started[300], finish[300], script[700],
        cli_token[64];
    int old = topo.node[0].port, now, rc, found;
    int64_t end, failed_over;
    pid_t holder = 0;

    if (a == NULL || w == NULL || r == NULL || b == NULL)
        goto out;
    held = new_lock(a, "s:held", 20000);
    renewed = new_lock(w, "s:renewed", 3000);
    waited = new_lock(b, "s:waited", 20000);
    /* Acknowledged by the replica: it survives the failover. */
    CU_ASSERT_EQUAL(tslock_lock_set_replicas(held, 1, 2000), TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_acquire(held, 0), TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_acquire(renewed, 0), TSLOCK_OK);
    snprintf(token, sizeof(token), "%s", tslock_lock_value(renewed));
    CU_ASSERT_EQUAL(
        tslock_watchdog_start(&dog, renewed, r, 300, on_renew_failure, &log),
        TSLOCK_OK);

    /* A tslock --renew holder, its COMMAND running until told to end. */
    sentinel_url(url, sizeof(url), topo.name);
    cli_path(started, sizeof(started), "started");
    cli_path(finish, sizeof(finish), "finish");
    snprintf(script, sizeof(script),
             "touch '%s'; while [ ! -e '%s' ]; do sleep 0.05; done", started,
             finish);
    {
        const char *args[] = {"-u", url,  "-r", "-t",   "6000", "s:clirenew",
                              "--", "sh", "-c", script, NULL};
        holder = spawn_cli(args, "holder");
    }
    end = th_mono_ms() + DEADLINE_MS;
    while (!file_exists(started) && th_mono_ms() < end)
        th_sleep_us(20000);
    CU_ASSERT_FATAL(file_exists(started));
    CU_ASSERT_EQUAL(
        th_node_get(&topo, old, "s:clirenew", cli_token, sizeof(cli_token)), 1);

    /*
     * Cut the replication link, write a lock only the master has, and
     * kill the master.  The replica is frozen meanwhile: left running it
     * reconnects at once and a partial resync would bring it the lock.
     */
    th_server_pause(&topo.node[1]);
    raw = th_redis(&topo.node[0]);
    reply = redisCommand(raw, "CLIENT KILL TYPE replica");
    CU_ASSERT_TRUE(reply != NULL && reply->type == REDIS_REPLY_INTEGER
                   && reply->integer == 1);
    freeReplyObject(reply);
    redisFree(raw);
    lost = new_lock(a, "s:lost", 20000);
    CU_ASSERT_EQUAL(tslock_acquire(lost, 0), TSLOCK_OK);
    th_server_kill(&topo.node[0]);
    th_server_resume(&topo.node[1]);
    now = th_topology_wait_master(&topo, old, DEADLINE_MS);
    CU_ASSERT_FATAL(now > 0 && now == topo.node[1].port);
    failed_over = th_mono_ms();

    /* A waiting acquire on a connection to the dead master follows. */
    CU_ASSERT_EQUAL(tslock_acquire(waited, DEADLINE_MS), TSLOCK_OK);
    CU_ASSERT_EQUAL(address_port(b), now);
    CU_ASSERT_EQUAL(th_node_get(&topo, now, "s:waited", buf, sizeof(buf)), 1);

    /* The unreplicated one is gone, and its release says so. */
    CU_ASSERT_EQUAL(th_node_get(&topo, now, "s:lost", buf, sizeof(buf)), 0);
    CU_ASSERT_EQUAL(tslock_release(lost), TSLOCK_ELOST);
    CU_ASSERT_PTR_NOT_NULL(
        strstr(tslock_client_errstr(a), "the sentinels named another master"));
    CU_ASSERT_FALSE(tslock_lock_is_held(lost));
    tslock_lock_free(lost);

    /* The acknowledged hold is released on the new master. */
    rc = tslock_release(held);
    CU_ASSERT_EQUAL(rc, TSLOCK_OK);
    if (rc != TSLOCK_OK)
        fprintf(stderr, "release: %s\n", tslock_client_errstr(a));
    CU_ASSERT_EQUAL(address_port(a), now);
    CU_ASSERT_EQUAL(th_node_get(&topo, now, "s:held", buf, sizeof(buf)), 0);

    /*
     * The watchdog either renewed on the new master (the key there holds
     * our token) or reported the loss (it does not).  Wait until it has
     * met the failover: a recovery counted, or a failure.
     */
    end = th_mono_ms() + DEADLINE_MS;
    while (tslock_watchdog_recoveries(dog) == 0
           && tslock_watchdog_status(dog) == TSLOCK_OK && th_mono_ms() < end)
        th_sleep_us(20000);
    rc = tslock_watchdog_stop(dog);
    dog = NULL;
    found = th_node_get(&topo, now, "s:renewed", buf, sizeof(buf));
    CU_ASSERT_TRUE(found >= 0);
    fprintf(stderr, "(the watchdog: %s) ", tslock_errname(rc));
    if (rc == TSLOCK_OK) {
        CU_ASSERT_EQUAL(log.failures, 0);
        CU_ASSERT_EQUAL(found, 1);
        CU_ASSERT_STRING_EQUAL(buf, token);
        CU_ASSERT_EQUAL(address_port(r), now);
        CU_ASSERT_EQUAL(tslock_release(renewed), TSLOCK_OK);
    } else {
        CU_ASSERT_EQUAL(rc, TSLOCK_ELOST);
        CU_ASSERT_EQUAL(log.code, TSLOCK_ELOST);
        CU_ASSERT_TRUE(found == 0 || strcmp(buf, token) != 0);
    }

    /* A tslock started now finds the new master. */
    {
        const char *args[] = {"-u", url, "s:cliafter", "--", "true", NULL};
        CU_ASSERT_EQUAL(run_cli(args, "after"), 0);
    }

    /*
     * The --renew holder: 6.5 s after the failover, the lease it had
     * before has run out, so its token on the new master means it renewed
     * there; otherwise it must report the loss (exit 75).
     */
    while (th_mono_ms() < failed_over + 6500)
        th_sleep_us(50000);
    found = th_node_get(&topo, now, "s:clirenew", buf, sizeof(buf));
    close(open(finish, O_WRONLY | O_CREAT, 0600));
    rc = wait_cli(holder);
    holder = 0;
    fprintf(stderr, "(tslock --renew: exit %d) ", rc);
    if (found == 1 && strcmp(buf, cli_token) == 0) {
        CU_ASSERT_EQUAL(rc, 0);
        CU_ASSERT_EQUAL(th_node_get(&topo, now, "s:clirenew", buf, sizeof(buf)),
                        0);
    } else {
        char line[1024];
        CU_ASSERT_EQUAL(rc, 75);
        CU_ASSERT_PTR_NOT_NULL(
            strstr(cli_output("holder", "err", line, sizeof(line)), "lost"));
    }
    tslock_lock_free(held);
    tslock_lock_free(renewed);
    tslock_lock_free(waited);
out:
    if (holder > 0) {
        kill(holder, SIGTERM);
        wait_cli(holder);
    }
    tslock_watchdog_stop(dog);
    tslock_client_free(a);
    tslock_client_free(w);
    tslock_client_free(r);
    tslock_client_free(b);
}

/* ----------------------------------------- a demoted master: -READONLY */

/* CU_ASSERT_EQUAL_FATAL, saying why first. */
#define CU_ASSERT_EQUAL_FATAL_WHY(c, actual, expected)                         \
    do {                                                                       \
        if ((actual) != (expected))                                            \
            fprintf(stderr, "%s: %s\n", tslock_errname(actual),                \
                    tslock_client_errstr(c));                                  \
        CU_ASSERT_EQUAL_FATAL(actual, expected);                               \
    } while (0)

static int count_sets(tslock_client *c, tslock_step step, const char *key,
                      void *ud)
{
    (void)c;
    (void)key;
    if (step == TSLOCK_STEP_SET)
        (*(int *)ud)++;
    return 0;
}

/*
 * A switchover by hand, as an operator does it (REPLICAOF NO ONE on the
 * replica, REPLICAOF on the master, then the sentinels pointed at the new
 * master): unlike Sentinel's own failover, which kills the demoted
 * node's clients (CLIENT KILL TYPE normal, 2.8.12 on), it leaves their
 * connections open, and their writes get -READONLY.
 */
static void demote_by_hand(int old, int next)
{
    redisContext *up = th_redis(th_topology_node(&topo, next));
    redisContext *down = th_redis(th_topology_node(&topo, old));
    redisReply *r;

    r = redisCommand(up, "REPLICAOF NO ONE");
    CU_ASSERT_TRUE(r != NULL && r->type == REDIS_REPLY_STATUS);
    freeReplyObject(r);
    r = redisCommand(down, "REPLICAOF 127.0.0.1 %d", next);
    CU_ASSERT_TRUE(r != NULL && r->type == REDIS_REPLY_STATUS);
    freeReplyObject(r);
    redisFree(up);
    redisFree(down);
}

static void test_readonly(void)
{
    tslock_client *a = th_topology_client(&topo);
    tslock_client *b = th_topology_client(&topo);
    tslock_lock *held, *once, *waited;
    int old = topo.node[0].port, next = topo.node[1].port, now, sets = 0, rc;
    char buf[64];

    if (a == NULL || b == NULL)
        goto out;
    held = new_lock(a, "s:ro-held", 20000);
    once = new_lock(a, "s:ro-once", 20000);
    waited = new_lock(b, "s:ro-waited", 20000);
    CU_ASSERT_EQUAL(tslock_lock_set_replicas(held, 1, 2000), TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_acquire(held, 0), TSLOCK_OK);
    demote_by_hand(old, next);

    /* a's connection goes to the demoted node, which refuses writes. */
    CU_ASSERT_EQUAL(tslock_acquire(once, 0), TSLOCK_EIO);
    CU_ASSERT_PTR_NOT_NULL(strstr(tslock_client_errstr(a), "READONLY"));
    CU_ASSERT_TRUE(tslock_client_is_broken(a));

    /* A waiting acquire meets -READONLY and follows the sentinels. */
    CU_ASSERT_EQUAL(th_topology_remonitor(&topo, next), 0);
    CU_ASSERT_EQUAL(tslock_client_set_step_hook(b, count_sets, &sets),
                    TSLOCK_OK);
    rc = tslock_acquire(waited, DEADLINE_MS);
    CU_ASSERT_EQUAL_FATAL_WHY(b, rc, TSLOCK_OK);
    CU_ASSERT_TRUE(sets >= 2);
    now = address_port(b);
    CU_ASSERT_EQUAL(now, next);
    CU_ASSERT_EQUAL(th_topology_wait_master(&topo, old, DEADLINE_MS), next);
    CU_ASSERT_EQUAL(th_node_get(&topo, next, "s:ro-waited", buf, sizeof(buf)),
                    1);
    CU_ASSERT_STRING_EQUAL(buf, tslock_lock_value(waited));
    CU_ASSERT_EQUAL(tslock_release(waited), TSLOCK_OK);

    /* The hold taken before goes with the data to the new master. */
    CU_ASSERT_EQUAL(tslock_release(held), TSLOCK_OK);
    CU_ASSERT_EQUAL(address_port(a), next);
    CU_ASSERT_EQUAL(th_node_get(&topo, next, "s:ro-held", buf, sizeof(buf)), 0);
    tslock_lock_free(held);
    tslock_lock_free(once);
    tslock_lock_free(waited);
out:
    tslock_client_free(a);
    tslock_client_free(b);
}

/* ------------------------------------------ Redis 2.6 behind the proxy */

static th_server old_master, old_replica, old_proxy, old_replica_proxy,
    old_sentinel;

static int start_old(void)
{
    char conf[512];

    if (th_server_start(&old_master, NULL) != 0)
        return -1;
    snprintf(conf, sizeof(conf), "replicaof 127.0.0.1 %d\n", old_master.port);
    if (th_server_start(&old_replica, conf) != 0
        || th_proxy_start_tcp(&old_proxy, &old_master, "2.6.11") != 0
        || th_proxy_start_tcp(&old_replica_proxy, &old_replica, "2.6.11") != 0)
        return -1;
    /* No failover in these tests: a long down-after. */
    snprintf(conf, sizeof(conf),
             "sentinel monitor old 127.0.0.1 %d 1\n"
             "sentinel down-after-milliseconds old 60000\n"
             "sentinel monitor oldreplica 127.0.0.1 %d 1\n"
             "sentinel down-after-milliseconds oldreplica 60000\n"
             "sentinel monitor replica 127.0.0.1 %d 1\n"
             "sentinel down-after-milliseconds replica 60000\n",
             old_proxy.port, old_replica_proxy.port, old_replica.port);
    return th_sentinel_start(&old_sentinel, conf);
}

static int stop_old(void)
{
    th_server_stop(&old_sentinel);
    th_proxy_stop(&old_replica_proxy);
    th_proxy_stop(&old_proxy);
    th_server_stop(&old_replica);
    th_server_stop(&old_master);
    return 0;
}

static int old_connect(tslock_client **out, const char *name)
{
    const char *hosts[1] = {"127.0.0.1"};
    int ports[1] = {old_sentinel.port};

    CU_ASSERT_FATAL(tslock_client_new(out) == TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_client_set_timeouts(*out, 600, 2000), TSLOCK_OK);
    return tslock_client_connect_sentinel(*out, 1, hosts, ports, name);
}

/* ROLE is unknown before 2.8.12: INFO's role: line decides. */
static void test_old_role_from_info(void)
{
    tslock_client *c = NULL;
    redisContext *raw;
    redisReply *r;
    int major = 0, minor = 0, patch = 0;

    raw = redisConnect("127.0.0.1", old_proxy.port);
    CU_ASSERT_FATAL(raw != NULL && raw->err == 0);
    r = redisCommand(raw, "ROLE");
    CU_ASSERT_TRUE(r != NULL && r->type == REDIS_REPLY_ERROR
                   && strstr(r->str, "unknown command") != NULL);
    freeReplyObject(r);
    redisFree(raw);

    CU_ASSERT_EQUAL(old_connect(&c, "old"), TSLOCK_OK);
    CU_ASSERT_EQUAL(address_port(c), old_proxy.port);
    CU_ASSERT_EQUAL(tslock_client_server_version(c, &major, &minor, &patch),
                    TSLOCK_OK);
    CU_ASSERT_TRUE(major == 2 && minor == 6 && patch == 11);
    tslock_client_free(c);

    CU_ASSERT_EQUAL(old_connect(&c, "oldreplica"), TSLOCK_EIO);
    CU_ASSERT_PTR_NOT_NULL(
        strstr(tslock_client_errstr(c), "INFO says 'slave'"));
    tslock_client_free(c);
}

static void test_replica_named(void)
{
    tslock_client *c = NULL;

    CU_ASSERT_EQUAL(old_connect(&c, "replica"), TSLOCK_EIO);
    CU_ASSERT_PTR_NOT_NULL(
        strstr(tslock_client_errstr(c), "ROLE says 'slave'"));
    tslock_client_free(c);
}

/* WAIT is unknown before 3.0: refused, and nothing held or left. */
static void test_old_wait_refused(void)
{
    tslock_client *c = NULL;
    tslock_lock *l;
    redisContext *raw;
    redisReply *r;

    CU_ASSERT_FATAL(old_connect(&c, "old") == TSLOCK_OK);
    l = new_lock(c, "s:oldwait", 10000);
    CU_ASSERT_EQUAL(tslock_lock_set_replicas(l, 1, 500), TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_acquire(l, 0), TSLOCK_EUNSUPPORTED);
    CU_ASSERT_PTR_NOT_NULL(strstr(tslock_client_errstr(c), "Redis 3.0"));
    CU_ASSERT_FALSE(tslock_lock_is_held(l));
    raw = th_redis(&old_master);
    r = redisCommand(raw, "EXISTS s:oldwait");
    CU_ASSERT_TRUE(r != NULL && r->type == REDIS_REPLY_INTEGER
                   && r->integer == 0);
    freeReplyObject(r);
    redisFree(raw);
    tslock_lock_free(l);
    tslock_client_free(c);
}

/* ------------------------------------- fences across a failover (#44) */

/* Sentinel s's config-epoch for the topology's master, or -1. */
static long long sentinel_epoch(const th_server *s)
{
    redisContext *raw = th_redis(s);
    redisReply *r;
    long long epoch = -1;
    size_t i;

    if (raw == NULL)
        return -1;
    r = redisCommand(raw, "SENTINEL MASTER %s", topo.name);
    for (i = 0;
         r != NULL && r->type == REDIS_REPLY_ARRAY && i + 1 < r->elements;
         i += 2)
        if (strcmp(r->element[i]->str, "config-epoch") == 0)
            epoch = atoll(r->element[i + 1]->str);
    freeReplyObject(r);
    redisFree(raw);
    return epoch;
}

static int64_t fenced_once(tslock_lock *l)
{
    int64_t f;
    int rc = tslock_acquire(l, DEADLINE_MS);

    CU_ASSERT_EQUAL(rc, TSLOCK_OK);
    if (rc != TSLOCK_OK) {
        fprintf(stderr, "fenced acquire: %s\n", tslock_errname(rc));
        return -1;
    }
    f = tslock_lock_fence(l);
    CU_ASSERT_EQUAL(tslock_release(l), TSLOCK_OK);
    return f;
}

/*
 * The promoted replica has the fence counter only as far as it was
 * replicated.  Counted on from there (INCR, the broken form: what tslock
 * did before), it hands out a number the old master already handed out;
 * counted from the failover epoch, every number is above every number of
 * the old master.
 */
static void test_fence_failover(void)
{
    tslock_client *a = th_topology_client(&topo), *b = NULL;
    tslock_lock *l = NULL;
    redisContext *raw;
    redisReply *reply;
    char buf[64];
    int64_t f[5], after, next;
    long long epoch;
    int old = topo.node[0].port, now, i;

    if (a == NULL)
        goto out;
    CU_ASSERT_EQUAL(sentinel_epoch(&topo.sentinel[0]), 0);
    l = new_lock(a, "s:fenced", 20000);
    CU_ASSERT_EQUAL(tslock_lock_set_fencing(l, 1), TSLOCK_OK);
    /* Epoch 0 (no failover yet): a plain INCR, 1, 2, 3, replicated. */
    for (i = 0; i < 3; i++)
        f[i] = fenced_once(l);
    CU_ASSERT_EQUAL(f[0], 1);
    CU_ASSERT_EQUAL(f[2], 3);
    raw = th_redis(&topo.node[0]);
    reply = redisCommand(raw, "WAIT 1 5000");
    CU_ASSERT_TRUE(reply != NULL && reply->type == REDIS_REPLY_INTEGER
                   && reply->integer == 1);
    freeReplyObject(reply);
    /* 4 and 5 only on the master: the replica frozen, its link cut. */
    th_server_pause(&topo.node[1]);
    reply = redisCommand(raw, "CLIENT KILL TYPE replica");
    freeReplyObject(reply);
    redisFree(raw);
    f[3] = fenced_once(l);
    f[4] = fenced_once(l);
    CU_ASSERT_EQUAL(f[4], 5);
    th_server_kill(&topo.node[0]);
    th_server_resume(&topo.node[1]);
    now = th_topology_wait_master(&topo, old, DEADLINE_MS);
    CU_ASSERT_FATAL(now > 0 && now == topo.node[1].port);
    epoch = sentinel_epoch(&topo.sentinel[0]);
    CU_ASSERT_TRUE(epoch >= 1);
    CU_ASSERT_EQUAL(th_node_get(&topo, now, "s:fenced:fence", buf, sizeof(buf)),
                    1);
    CU_ASSERT_STRING_EQUAL(buf, "3");

    /* The broken form: INCR on the new master gives 4 a second time. */
    raw = th_redis(th_topology_node(&topo, now));
    reply = redisCommand(raw, "INCR s:fenced:fence");
    CU_ASSERT_TRUE(reply != NULL && reply->type == REDIS_REPLY_INTEGER
                   && reply->integer == f[3]);
    freeReplyObject(reply);
    redisFree(raw);

    /* tslock: the epoch's first number, then one more; the same for a
     * client that connects after the failover. */
    after = fenced_once(l);
    CU_ASSERT_EQUAL(after, ((int64_t)epoch << 32) + 1);
    CU_ASSERT_TRUE(after > f[4]);
    b = th_topology_client(&topo);
    if (b != NULL) {
        tslock_lock *m = new_lock(b, "s:fenced", 20000);
        CU_ASSERT_EQUAL(tslock_lock_set_fencing(m, 1), TSLOCK_OK);
        next = fenced_once(m);
        CU_ASSERT_EQUAL(next, after + 1);
        tslock_lock_free(m);
    }
out:
    tslock_lock_free(l);
    tslock_client_free(a);
    tslock_client_free(b);
}

int main(void)
{
    CU_pSuite s;
    int rc;

    if (make_cli_dir() != 0 || CU_initialize_registry() != CUE_SUCCESS)
        return 1;
    s = CU_add_suite("sentinel: steady", start_topology, stop_topology);
    CU_add_test(s, "connect through the sentinels", test_connect);
    CU_add_test(s, "bad arguments", test_bad_arguments);
    CU_add_test(s, "an unknown master name", test_unknown_name);
    CU_add_test(s, "sentinel AUTH refused", test_sentinel_auth_refused);
    CU_add_test(s, "WAIT: one replica acknowledges", test_wait_one_replica);
    CU_add_test(s, "WAIT: two asked, one there", test_wait_two_replicas);
    CU_add_test(s, "tslock -u redis+sentinel://", test_cli_steady);
    CU_add_test(s, "the first sentinel down", test_first_sentinel_down);
    s = CU_add_suite("sentinel: SIGKILL the master", start_topology,
                     stop_topology);
    CU_add_test(s, "locks, a watchdog and a wait follow the failover",
                test_master_killed);
    s = CU_add_suite("sentinel: fences across a failover", start_topology,
                     stop_topology);
    CU_add_test(s, "the promoted master counts from the failover epoch",
                test_fence_failover);
    s = CU_add_suite("sentinel: a demoted master", start_topology,
                     stop_topology);
    CU_add_test(s, "-READONLY sends the client back to the sentinels",
                test_readonly);
    s = CU_add_suite("sentinel: Redis 2.6.11 (proxy)", start_old, stop_old);
    CU_add_test(s, "no ROLE: INFO's role line", test_old_role_from_info);
    CU_add_test(s, "a replica named: ROLE says so", test_replica_named);
    CU_add_test(s, "no WAIT: refused, nothing left", test_old_wait_refused);
    rc = th_run_all();
    remove_cli_dir();
    return rc;
}

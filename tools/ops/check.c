/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * check.c - tslock check KEY: whether this user's ACL allows every
 * command, key and channel the chosen scheme and mode use on KEY
 * (doc/acl.md), asked of the server without running any of them, so
 * nothing is taken or written.  For an operator writing an ACL.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hiredis_compat.h"

#include "cli.h"

/* Which locks need a rule. */
enum {
    M_TOKEN = 1, /* token, waiting (the line) */
    M_FAIR = 2,
    M_TIMESTAMP = 4,
    M_BRIDGE = 8,
    M_RW = 16,  /* read-write */
    M_SEM = 32, /* semaphore */
    M_FENCE = 64,
    M_ALL = 127
};

/* The name a rule is checked on: the key, a companion, a channel. */
enum role {
    R_NONE,
    R_KEY,
    R_OWNER,
    R_QUEUE,
    R_HOLDERS,
    R_WRITER,
    R_RELEASED,
    R_WAKE,
    R_FENCE,
    R_SWAKE
};
static const char *const suffixes[] = {
    "",          "",
    ":owner",    ":queue",
    ":holders",  ":writer",
    ":released", ":wake:00000000000000000000000000000000w",
    ":fence",    ":wake:00000000000000000000000000000000s"};

/*
 * Wake-up rules (doc/acl.md's second line), none of them a failure:
 * classic pub/sub, always asked; sharded pub/sub (doc/topologies.md,
 * "Sharded wake-ups"), asked where the client uses it: SH_USED under
 * AUTO on a 7.0+ cluster or --pubsub sharded, SH_FORCED under --pubsub
 * sharded only (the announcements AUTO keeps classic).
 */
enum wake { W_NONE, W_CLASSIC, W_SSUBSCRIBE, W_SPUBLISH };
enum { SH_OFF, SH_USED, SH_FORCED };

/* One rule: the command, its name argument's role, the rest of argv. */
static const struct rule {
    unsigned modes;
    enum wake wakeup; /* without it waiters poll or wake classic */
    const char *cmd;
    enum role role;
    const char *args[3];
    int path;    /* 0 always, 1 scripts by EVAL, 2 scripts as Functions */
    int sharded; /* SH_*: under which --pubsub the rule applies */
} rules[] = {
    {M_TOKEN | M_BRIDGE | M_TIMESTAMP | M_RW | M_SEM,
     0,
     "set",
     R_KEY,
     {"v"},
     0,
     SH_OFF},
    {M_ALL, 0, "get", R_KEY, {0}, 0, SH_OFF},
    {M_ALL, 0, "del", R_KEY, {0}, 0, SH_OFF},
    {M_ALL & ~M_TIMESTAMP, 0, "pexpire", R_KEY, {"1"}, 0, SH_OFF},
    {M_ALL & ~M_TIMESTAMP, 0, "pttl", R_KEY, {0}, 0, SH_OFF},
    {M_TOKEN | M_FAIR | M_TIMESTAMP, 0, "setnx", R_KEY, {"v"}, 0, SH_OFF},
    {M_TIMESTAMP, 0, "getset", R_KEY, {"v"}, 0, SH_OFF},
    {M_TOKEN | M_FAIR, 0, "incr", R_QUEUE, {0}, 0, SH_OFF},
    {M_TOKEN | M_FAIR, 0, "zadd", R_QUEUE, {"1", "m"}, 0, SH_OFF},
    {M_TOKEN | M_FAIR, 0, "zrange", R_QUEUE, {"0", "0"}, 0, SH_OFF},
    {M_TOKEN | M_FAIR, 0, "zscore", R_QUEUE, {"m"}, 0, SH_OFF},
    {M_TOKEN | M_FAIR, 0, "zrem", R_QUEUE, {"m"}, 0, SH_OFF},
    {M_FAIR, 0, "zrangebyscore", R_QUEUE, {"0", "1"}, 0, SH_OFF},
    {M_FAIR, 0, "zrank", R_QUEUE, {"m"}, 0, SH_OFF},
    {M_BRIDGE, 0, "set", R_OWNER, {"v"}, 0, SH_OFF},
    {M_FENCE, 0, "incr", R_FENCE, {0}, 0, SH_OFF},
    {M_RW, 0, "exists", R_WRITER, {0}, 0, SH_OFF},
    {M_RW | M_SEM, 0, "zadd", R_HOLDERS, {"1", "m"}, 0, SH_OFF},
    {M_RW | M_SEM, 0, "zrem", R_HOLDERS, {"m"}, 0, SH_OFF},
    {M_RW | M_SEM, 0, "zcard", R_HOLDERS, {0}, 0, SH_OFF},
    {M_RW | M_SEM, 0, "zrange", R_HOLDERS, {"0", "0"}, 0, SH_OFF},
    {M_RW | M_SEM, 0, "zscore", R_HOLDERS, {"m"}, 0, SH_OFF},
    {M_RW | M_SEM, 0, "zremrangebyscore", R_HOLDERS, {"0", "1"}, 0, SH_OFF},
    {M_ALL, 0, "evalsha", R_NONE, {0}, 1, SH_OFF},
    {M_ALL, 0, "eval", R_NONE, {0}, 1, SH_OFF},
    {M_ALL, 0, "fcall", R_NONE, {0}, 2, SH_OFF},
    {M_ALL, 0, "function|load", R_NONE, {0}, 2, SH_OFF},
    {M_ALL, W_CLASSIC, "publish", R_RELEASED, {"k"}, 0, SH_OFF},
    {M_ALL, W_CLASSIC, "subscribe", R_RELEASED, {0}, 0, SH_OFF},
    {M_TOKEN | M_FAIR, W_CLASSIC, "subscribe", R_WAKE, {0}, 0, SH_OFF},
    /* A sharded waiter subscribes both ways (classic releasers). */
    {M_ALL, W_SSUBSCRIBE, "ssubscribe", R_RELEASED, {0}, 0, SH_USED},
    {M_TOKEN | M_FAIR, W_SSUBSCRIBE, "ssubscribe", R_SWAKE, {0}, 0, SH_USED},
    /* The token release script wakes an 's' entry, or the key's channel. */
    {M_TOKEN | M_FAIR, W_SPUBLISH, "spublish", R_RELEASED, {"k"}, 0, SH_USED},
    {M_TOKEN | M_FAIR, W_SPUBLISH, "spublish", R_SWAKE, {"k"}, 0, SH_USED},
    {M_TIMESTAMP | M_BRIDGE | M_RW | M_SEM,
     W_SPUBLISH,
     "spublish",
     R_RELEASED,
     {"k"},
     0,
     SH_FORCED},
};
#define N_RULES (sizeof(rules) / sizeof(rules[0]))

/*
 * Each check as its argument count and its arguments; the script asks
 * redis.acl_check_cmd (Redis 7.0) of each, which runs nothing.
 */
static const char check_script[] =
    "local out, i = {}, 1 while i <= #ARGV do local n = tonumber(ARGV[i]) "
    "local ok = redis.acl_check_cmd(unpack(ARGV, i + 1, i + n)) "
    "out[#out + 1] = ok and 1 or 0 i = i + n + 1 end return out";

static unsigned modes_of(const struct cli_options *o)
{
    unsigned fence = o->fence ? M_FENCE : 0;

    if (o->rw != TSLOCK_RW_OFF)
        return M_RW;
    if (o->permits > 0)
        return M_SEM;
    if (o->fair)
        return M_FAIR | fence;
    if (o->scheme == TSLOCK_SCHEME_TIMESTAMP)
        return M_TIMESTAMP | fence;
    if (o->scheme == TSLOCK_SCHEME_BRIDGE)
        return M_BRIDGE | fence;
    return M_TOKEN | fence;
}

/* Whether rule r is asked for modes with sharded pub/sub at level sh. */
static int applies(const struct rule *r, unsigned modes, int sh)
{
    return (r->modes & modes) != 0 && r->sharded <= sh;
}

/*
 * SH_* for this client: what the library's TSLOCK_PUBSUB_AUTO decides
 * (sharded on a cluster whose node says Redis 7.0 or later, from the
 * default INFO as its connection probe reads it), or the --pubsub given.
 */
static int sharded_level(redisContext *ctx, const struct cli_options *o)
{
    redisReply *r;
    const char *v;
    int major = 0, level = SH_OFF;

    if (o->pubsub == TSLOCK_PUBSUB_SHARDED)
        return SH_FORCED;
    if (o->pubsub != TSLOCK_PUBSUB_AUTO)
        return SH_OFF;
    r = cli_raw_command(ctx, "INFO");
    if (r != NULL && r->type == REDIS_REPLY_STRING
        && strstr(r->str, "cluster_enabled:1") != NULL
        && (v = strstr(r->str, "redis_version:")) != NULL
        && sscanf(v, "redis_version:%d", &major) == 1 && major >= 7)
        level = SH_USED;
    freeReplyObject(r);
    return level;
}

/* KEY's companion: a tag kept, else the key made the tag (names.c). */
static char *name_for(const char *key, enum role role)
{
    const char *open = strchr(key, '{');
    const char *close = open != NULL ? strchr(open + 1, '}') : NULL;
    size_t len = strlen(key) + 64;
    char *out = malloc(len);

    if (out == NULL)
        return NULL;
    if (role == R_KEY || role == R_NONE)
        snprintf(out, len, "%s", key);
    else if (role == R_FENCE) /* a companion only on a cluster */
        snprintf(out, len, "%s%s", key, suffixes[role]);
    else if ((close != NULL && close > open + 1) || strchr(key, '}') != NULL)
        snprintf(out, len, "%s%s", key, suffixes[role]);
    else
        snprintf(out, len, "{%s}%s", key, suffixes[role]);
    return out;
}

/* The argv of rule r on key, into v (at most 8); returns the count. */
static int rule_argv(const struct rule *r, const char *key, char *name,
                     const char **v)
{
    int n = 0, i;

    if (strcmp(r->cmd, "function|load") == 0) {
        v[n++] = "function";
        v[n++] = "load";
        v[n++] = "x";
        return n;
    }
    v[n++] = r->cmd;
    if (strcmp(r->cmd, "fcall") == 0) {
        tslock_functions_library(&v[n++]);
        v[n++] = "0";
        return n;
    }
    if (strcmp(r->cmd, "eval") == 0 || strcmp(r->cmd, "evalsha") == 0) {
        v[n++] = strcmp(r->cmd, "eval") == 0
                     ? "return 1"
                     : "0000000000000000000000000000000000000000";
        v[n++] = "1";
        v[n++] = key;
        return n;
    }
    v[n++] = name;
    for (i = 0; i < 3 && r->args[i] != NULL; i++)
        v[n++] = r->args[i];
    return n;
}

/*
 * The check script did not run: a server without scripts (before 2.6)
 * or without ACL (before 6.0) allows everything; 6.x cannot be asked
 * without running the commands; an ACL that refuses EVAL is itself the
 * first thing missing.  An exit status, 0 when all is allowed.
 */
static int unanswered(redisContext *ctx, const redisReply *r)
{
    const char *line = r->type == REDIS_REPLY_ERROR ? r->str : "no error";
    redisReply *who;

    if (strstr(line, "NOPERM") != NULL || strstr(line, "can't run") != NULL) {
        printf("  MISSING  eval     (the scripts by EVAL)\n"
               "  MISSING  fcall    (or the scripts as Functions)\n"
               "the scheme cannot work for this user, and check needs one "
               "of them to ask about the rest (doc/acl.md)\n");
        return CLI_EXIT_NOPERM;
    }
    if (strstr(line, "Function not found") != NULL) {
        printf("  MISSING  function|load (tslock's function library is not "
               "loaded, and this user may not load it; an operator can, "
               "with tslock functions load)\n"
               "the scheme cannot work for this user (doc/acl.md)\n");
        return CLI_EXIT_NOPERM;
    }
    who = cli_raw_command(ctx, "ACL WHOAMI");
    if (strncmp(line, "ERR unknown command", 19) == 0
        || (who != NULL && who->type == REDIS_REPLY_ERROR
            && strstr(who->str, "unknown") != NULL)) {
        freeReplyObject(who);
        printf("this server has no ACL (Redis before 6.0): every command is "
               "allowed\n");
        return 0;
    }
    freeReplyObject(who);
    cli_error("check: this server cannot say what a user may run without "
              "running it (redis.acl_check_cmd came in Redis 7.0): %s",
              line);
    return CLI_EXIT_SOFTWARE;
}

/*
 * The check as a Function, for a user refused EVAL: FCALL of the check
 * in tslock's library, loaded first when it is missing and the user may.
 */
static redisReply *ask_function(redisContext *ctx, int argc, const char **argv,
                                size_t *lens)
{
    const char *lib, *text = tslock_functions_library(&lib);
    const char *load[3] = {"FUNCTION", "LOAD", text};
    size_t load_lens[3] = {8, 4, text != NULL ? strlen(text) : 0};
    char fname[48];
    redisReply *r;
    int i;

    snprintf(fname, sizeof(fname), "%s_check", lib);
    argv[0] = "FCALL";
    argv[1] = fname;
    for (i = 0; i < 2; i++)
        lens[i] = strlen(argv[i]);
    r = cli_raw_command_argv(ctx, argc, argv, lens);
    if (r == NULL || r->type != REDIS_REPLY_ERROR
        || strstr(r->str, "Function not found") == NULL || text == NULL)
        return r;
    freeReplyObject(r);
    freeReplyObject(cli_raw_command_argv(ctx, 3, load, load_lens));
    return cli_raw_command_argv(ctx, argc, argv, lens);
}

/*
 * Ask the server about every rule of modes; verdicts into ok[], and
 * *functions set when the answer came through Functions (EVAL refused).
 */
static int ask(redisContext *ctx, const char *key, unsigned modes, int sh,
               int *ok, char **names, int *functions)
{
    const char *argv[3 + N_RULES * 9];
    size_t lens[3 + N_RULES * 9];
    char counts[N_RULES][4];
    int argc = 3, k = 0, rc = 0;
    size_t i, j;
    redisReply *r;

    argv[0] = "EVAL";
    argv[1] = check_script;
    argv[2] = "0";
    for (i = 0; i < N_RULES; i++) {
        const char *v[8];
        int n;
        if (!applies(&rules[i], modes, sh))
            continue;
        n = rule_argv(&rules[i], key, names[i], v);
        snprintf(counts[i], sizeof(counts[i]), "%d", n);
        argv[argc++] = counts[i];
        for (j = 0; j < (size_t)n; j++)
            argv[argc++] = v[j];
    }
    for (i = 0; i < (size_t)argc; i++)
        lens[i] = strlen(argv[i]);
    r = cli_raw_command_argv(ctx, argc, argv, lens);
    if (r != NULL && r->type == REDIS_REPLY_ERROR
        && (strstr(r->str, "NOPERM") != NULL
            || strstr(r->str, "can't run") != NULL)) {
        freeReplyObject(r);
        r = ask_function(ctx, argc, argv, lens);
        *functions = r != NULL && r->type == REDIS_REPLY_ARRAY;
    }
    if (r == NULL) {
        cli_error("check: %s", ctx->errstr[0] ? ctx->errstr : "no reply");
        return CLI_EXIT_UNAVAILABLE;
    }
    if (r->type != REDIS_REPLY_ARRAY) {
        rc = unanswered(ctx, r);
        freeReplyObject(r);
        return rc == 0 ? 1 : rc; /* 1: answered, nothing to report */
    }
    for (i = 0; i < N_RULES; i++)
        if (applies(&rules[i], modes, sh))
            ok[i] = (size_t)k < r->elements && r->element[k++]->integer == 1;
    freeReplyObject(r);
    return 0;
}

static const char *mode_name(unsigned modes)
{
    modes &= ~(unsigned)M_FENCE;
    return modes == M_FAIR        ? "token, fair"
           : modes == M_TIMESTAMP ? "timestamp"
           : modes == M_BRIDGE    ? "bridge"
           : modes == M_RW        ? "read-write"
           : modes == M_SEM       ? "semaphore"
                                  : "token";
}

/* What a missing wake-up rule costs, after the rule's line. */
static const char *const wake_notes[] = {
    "", " (wake-ups; without it, waiters poll)",
    " (sharded wake-ups; without it, waiters use classic pub/sub)",
    " (sharded wake-ups; without it, sharded waiters poll)"};

/* Print the verdicts; returns the number of needed rules missing. */
static int report(const char *key, unsigned modes, int sh, const int *ok,
                  char **names, int functions)
{
    int missing = 0, poll = 0, classic = 0, spoll = 0;
    size_t i;

    printf("%s, %s%s%s: what this user may run\n", key, mode_name(modes),
           sh != SH_OFF ? ", sharded wake-ups" : "",
           functions ? ", scripts as Functions (EVAL refused)" : "");
    for (i = 0; i < N_RULES; i++) {
        if (!applies(&rules[i], modes, sh)
            || rules[i].path == (functions ? 1 : 2))
            continue;
        printf("  %-8s %-16s %s%s\n", ok[i] ? "ok" : "MISSING", rules[i].cmd,
               rules[i].role == R_NONE ? "(the scripts)" : names[i],
               wake_notes[rules[i].wakeup]);
        if (!ok[i] && rules[i].wakeup == W_SSUBSCRIBE)
            classic = 1;
        else if (!ok[i] && rules[i].wakeup == W_SPUBLISH)
            spoll = 1;
        else if (!ok[i] && rules[i].wakeup != W_NONE)
            poll = 1;
        else if (!ok[i])
            missing++;
    }
    if (missing > 0)
        printf("%d rule%s missing: the scheme cannot work for this user "
               "(doc/acl.md)\n",
               missing, missing == 1 ? "" : "s");
    else
        printf("every rule the scheme needs is allowed%s%s%s\n",
               classic ? "; waiters will use classic pub/sub" : "",
               poll ? "; waiters will poll" : "",
               spoll ? "; sharded waiters will poll" : "");
    return missing;
}

int cli_check(const struct cli_options *o, const char *key)
{
    unsigned modes = modes_of(o);
    int ok[N_RULES] = {0};
    char *names[N_RULES] = {0};
    redisContext *ctx = NULL;
    int rc, functions = 0, sh;
    size_t i;

    if ((rc = cli_raw_connect(o, 1, &ctx)) != 0)
        return rc;
    sh = sharded_level(ctx, o);
    for (i = 0; i < N_RULES; i++)
        if ((names[i] = name_for(key, rules[i].role)) == NULL) {
            rc = CLI_EXIT_OSERR;
            goto out;
        }
    rc = ask(ctx, key, modes, sh, ok, names, &functions);
    if (rc == 1) /* answered without the rules: printed, all allowed */
        rc = 0;
    else if (rc == 0)
        rc = report(key, modes, sh, ok, names, functions) > 0 ? CLI_EXIT_NOPERM
                                                              : 0;
out:
    for (i = 0; i < N_RULES; i++)
        free(names[i]);
    tslock_conn_free(ctx);
    return rc;
}

/*
 * tslock functions print: the library as FUNCTION LOAD takes it.  load:
 * load it (an operator's user with +function|load), for clients that
 * may not (--functions use); one already there is left as it is.
 */
int cli_functions(const struct cli_options *o, const char *action)
{
    const char *name, *text = tslock_functions_library(&name);
    const char *argv[3] = {"FUNCTION", "LOAD", text};
    size_t lens[3];
    redisContext *ctx = NULL;
    redisReply *r;
    int rc;

    if (text == NULL) {
        cli_error("functions: out of memory");
        return CLI_EXIT_OSERR;
    }
    if (strcmp(action, "print") == 0) {
        fputs(text, stdout);
        return 0;
    }
    if (strcmp(action, "load") != 0)
        return cli_usage_error("functions expects load or print, got '%s'",
                               action);
    if ((rc = cli_raw_connect(o, 0, &ctx)) != 0)
        return rc;
    lens[0] = 8;
    lens[1] = 4;
    lens[2] = strlen(text);
    r = cli_raw_command_argv(ctx, 3, argv, lens);
    if (r != NULL && r->type == REDIS_REPLY_ERROR
        && strstr(r->str, "already exists") != NULL) {
        printf("%s is loaded already\n", name);
    } else if ((r = cli_raw_reply(ctx, "FUNCTION LOAD", r)) == NULL) {
        tslock_conn_free(ctx);
        return CLI_EXIT_SOFTWARE;
    } else {
        printf("loaded %s\n", name);
    }
    freeReplyObject(r);
    tslock_conn_free(ctx);
    return 0;
}

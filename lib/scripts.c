/*
 * scripts.c - the Lua scripts (Redis >= 2.6.0) and how they are run:
 * EVALSHA first, one EVAL when the server answers NOSCRIPT (after SCRIPT
 * FLUSH or a restart).  The SHA1 digests are fixed here and checked
 * against the server's SCRIPT LOAD by the test suite.
 */
#include <string.h>

#include "tslock_int.h"

static const struct {
    const char *text;
    const char *sha;
} scripts[SCRIPT_COUNT] = {
    [SCRIPT_DEL_IF_EQUAL] =
        {"if redis.call('get', KEYS[1]) == ARGV[1] then "
         "return redis.call('del', KEYS[1]) else return 0 end",
         "e9f69f2beb755be68b5e456ee2ce9aadfbc4ebf4"},
    [SCRIPT_SET_IF_EQUAL] =
        {"if redis.call('get', KEYS[1]) == ARGV[1] then "
         "redis.call('set', KEYS[1], ARGV[2]) return 1 else return 0 end",
         "74c1f25e84abdfc793797fe07fa066b4815d572c"},
    [SCRIPT_PEXPIRE_IF_EQUAL] =
        {"if redis.call('get', KEYS[1]) == ARGV[1] then "
         "return redis.call('pexpire', KEYS[1], ARGV[2]) else return 0 end",
         "9136fcf51831e5cf49f109b6e9c97d5b675280d6"},
    [SCRIPT_SETNX_PEXPIRE] =
        {"if redis.call('setnx', KEYS[1], ARGV[1]) == 1 then "
         "redis.call('pexpire', KEYS[1], ARGV[2]) return {1, 0} end "
         "return {0, redis.call('pttl', KEYS[1])}",
         "1385df53a5d0022eb1bf6d96c4afd02c905b7f5a"},
    [SCRIPT_PTTL_IF_EQUAL] =
        {"if redis.call('get', KEYS[1]) == ARGV[1] then "
         "return redis.call('pttl', KEYS[1]) else return -3 end",
         "370b8ce37d9e22e77cb52a27f74a87e47dd2fd3b"},
};

const char *tslock__script_text(enum tslock__script s)
{
    return scripts[s].text;
}

const char *tslock__script_sha(enum tslock__script s)
{
    return scripts[s].sha;
}

#define SCRIPT_MAX_ARGS 4

int tslock__script_run(tslock_client *c, enum tslock__script s, const char *key,
                       int nargs, const char **args, redisReply **out)
{
    const char *argv[4 + SCRIPT_MAX_ARGS];
    redisReply *r = NULL;
    int i, rc;

    *out = NULL;
    if (nargs > SCRIPT_MAX_ARGS)
        return tslock__fail(c, TSLOCK_EINVAL, "too many script arguments");
    argv[0] = "EVALSHA";
    argv[1] = scripts[s].sha;
    argv[2] = "1";
    argv[3] = key;
    for (i = 0; i < nargs; i++)
        argv[4 + i] = args[i];
    rc =
        tslock__command(c, TSLOCK_STEP_EVALSHA, key, 4 + nargs, argv, NULL, &r);
    if (rc == TSLOCK_OK && r->type == REDIS_REPLY_ERROR
        && strncmp(r->str, "NOSCRIPT", 8) == 0) {
        freeReplyObject(r);
        r = NULL;
        argv[0] = "EVAL";
        argv[1] = scripts[s].text;
        rc = tslock__command(c, TSLOCK_STEP_EVAL, key, 4 + nargs, argv, NULL,
                             &r);
    }
    if (rc == TSLOCK_OK && r->type == REDIS_REPLY_ERROR) {
        rc = tslock__reply_error(c, argv[0], r);
        freeReplyObject(r);
        r = NULL;
    }
    *out = r;
    return rc;
}

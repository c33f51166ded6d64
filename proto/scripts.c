/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * scripts.c - the Lua scripts (Redis >= 2.6.0) and how they are run:
 * EVALSHA first, one EVAL when the server answers NOSCRIPT (after SCRIPT
 * FLUSH or a restart).  The SHA1 digests are fixed here and checked
 * against the server's SCRIPT LOAD by the test suite.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto.h"

/*
 * The opening of every script of shared holds (readers and permits):
 * mark(now) puts the latest holder's stamp in KEYS[1] with a TTL to its
 * end (or deletes both keys when nobody holds), and marked(v) says
 * whether v is that stamp, or nothing.  The text is part of each
 * script's SHA, so it is spelled once here.
 */
#define SHARED_MARK                                                            \
    "local function mark(now, undo) local t = redis.call('zrange', "           \
    "KEYS[2], -1, -1, 'withscores') if t[1] then local ms = "                  \
    "math.ceil(tonumber(t[2]) - now) if ms < 1 then ms = 1 end if "            \
    "type(redis.pcall('pexpire', KEYS[2], ms)) == 'table' then if undo "       \
    "then redis.call('zrem', KEYS[2], undo) end redis.call('pexpire', "        \
    "KEYS[2], ms) end redis.call('set', KEYS[1], "                             \
    "string.sub(t[1], 33)) redis.call('pexpire', KEYS[1], ms) "                \
    "else redis.call('del', "                                                  \
    "KEYS[1], KEYS[2]) end end local function marked(v) local t = "            \
    "redis.call('zrange', KEYS[2], -1, -1)[1] return (not v) or (t ~= "        \
    "nil and v == string.sub(t, 33)) end "

static const struct {
    const char *text;
    const char *sha;
} scripts[SCRIPT_COUNT] = {
    /*
     * The release: delete while ours, and announce it on ARGV[2], with
     * SPUBLISH when ARGV[3] is 's' (sharded wake-ups), else PUBLISH.  The
     * announcement is a pcall: a user whose ACL has no channels (Redis 7
     * gives none by default) still releases, and its waiters poll.
     */
    [SCRIPT_DEL_IF_EQUAL] =
        {"if redis.call('get', KEYS[1]) == ARGV[1] then "
         "local n = redis.call('del', KEYS[1]) "
         "redis.pcall(ARGV[3] == 's' and 'spublish' or 'publish', ARGV[2], "
         "KEYS[1]) return n "
         "else return 0 end",
         "c3c9f6b32c128b69422ed142d2e10b7641a58c0e"},
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
         "redis.call('get', KEYS[1]) "
         "return {0, redis.call('pttl', KEYS[1])}",
         "0dd4eb41fef7ea81f9b100ee5af28604da758c63"},
    [SCRIPT_PTTL_IF_EQUAL] =
        {"if redis.call('get', KEYS[1]) == ARGV[1] then "
         "return redis.call('pttl', KEYS[1]) else return -3 end",
         "370b8ce37d9e22e77cb52a27f74a87e47dd2fd3b"},
    /*
     * The bridge scheme's claim, KEYS[1] the lock, KEYS[2] its owner key:
     * while the lock holds ARGV[4] (or is absent, when ARGV[4] is ''),
     * write the stamp ARGV[1] and the owner token ARGV[3], both with the
     * safety TTL ARGV[2] ms.  1 when claimed, else the value found.
     */
    [SCRIPT_BRIDGE_CLAIM] = {"local v = redis.call('get', KEYS[1]) "
                             "local seen = ARGV[4] ~= '' and ARGV[4] or false "
                             "if v ~= seen then return v end "
                             "redis.call('set', KEYS[1], ARGV[1]) "
                             "redis.call('pexpire', KEYS[1], ARGV[2]) "
                             "redis.call('set', KEYS[2], ARGV[3]) "
                             "redis.call('pexpire', KEYS[2], ARGV[2]) "
                             "return 1",
                             "ed5868d2cc5b14cf79666e743fac47f7d84d7986"},
    /*
     * The bridge proof, then ARGV[3]: 'del' (announced on ARGV[6], with
     * SPUBLISH when ARGV[7] is 's'), 'set'
     * (stamp ARGV[4], TTL ARGV[5] ms) or 'read'.  1 when done; -1 the stamp is
     * not ours, -2 it has no TTL (written again by a client that sets none), -3
     * the owner key holds another token.
     */
    [SCRIPT_BRIDGE_GUARD] =
        {"if redis.call('get', KEYS[1]) ~= ARGV[1] then return -1 end "
         "if redis.call('pttl', KEYS[1]) < 0 then return -2 end "
         "if redis.call('get', KEYS[2]) ~= ARGV[2] then return -3 end "
         "if ARGV[3] == 'del' then redis.call('del', KEYS[1], KEYS[2]) "
         "redis.pcall(ARGV[7] == 's' and 'spublish' or 'publish', ARGV[6], "
         "KEYS[1]) "
         "elseif ARGV[3] == 'set' then redis.call('set', KEYS[1], ARGV[4]) "
         "redis.call('pexpire', KEYS[1], ARGV[5]) "
         "redis.call('pexpire', KEYS[2], ARGV[5]) end "
         "return 1",
         "1912e82df0392a07be34e81af4a51b7ea32522c3"},
    /*
     * The operator's break (break.c), KEYS[1] the lock, KEYS[2] its owner
     * key: while the lock holds exactly ARGV[1], delete both and announce
     * it on ARGV[2] (SPUBLISH when ARGV[3] is 's').  1 when deleted, 0 when the
     * lock holds anything else.
     */
    [SCRIPT_BREAK] = {"if redis.call('get', KEYS[1]) ~= ARGV[1] then return 0 "
                      "end redis.call('del', KEYS[1], KEYS[2]) "
                      "redis.pcall(ARGV[3] == 's' and 'spublish' or "
                      "'publish', ARGV[2], KEYS[1]) return 1",
                      "ef9f95fbc3dd51b8ea43475d664826ff3617748f"},
    /*
     * The line of waiters (fair.c).  KEYS: the lock, the queue (entry ->
     * arrival number), the liveness set (entry -> alive until, ms), the
     * arrival counter.  ARGV: our entry, the token to hold, the lease ms,
     * now ms, alive-until ms, the queue keys' idle expiry ms, '1' in fair
     * mode, '1' when we may be in line already.  In fair mode at most
     * eight entries whose waiter stopped refreshing are dropped and only
     * the head may take a free key; otherwise any waiter may (a lapsed
     * entry is dropped by the release that reaches it).  Taken: out of
     * the line.  Busy: join at the tail (once) and refresh.  {1,0,0}
     * taken, else {0, holder's PTTL, our rank (fair mode) or -1}.  The
     * busy path's GET, whose value is not returned, is the type check:
     * SETNX and PTTL succeed on a key of any type, so without it a
     * waiting acquire of a list waits on (tests/test_lock.c's wrong-type
     * test hangs) where it must fail at once with WRONGTYPE; the same
     * holds for SCRIPT_SETNX_PEXPIRE's.
     */
    [SCRIPT_QUEUE_TRY] =
        {"local fair = ARGV[7] == '1' if fair then local dead = "
         "redis.call('zrangebyscore', KEYS[3], '-inf', '(' .. ARGV[4], "
         "'limit', 0, 8) for _, d in ipairs(dead) do redis.call('zrem', "
         "KEYS[2], d) redis.call('zrem', KEYS[3], d) end end local head = "
         "fair and redis.call('zrange', KEYS[2], 0, 0)[1] if (not head or "
         "head == ARGV[1]) and redis.call('setnx', KEYS[1], ARGV[2]) == 1 "
         "then local e = redis.pcall('pexpire', KEYS[1], ARGV[3]) if "
         "type(e) == 'table' then redis.call('del', KEYS[1]) return e end "
         "if ARGV[8] == '1' "
         "then redis.call('zrem', KEYS[2], ARGV[1]) redis.call('zrem', "
         "KEYS[3], ARGV[1]) end return {1, 0, 0} end if ARGV[8] ~= '1' or "
         "not redis.call('zscore', KEYS[2], ARGV[1]) then "
         "redis.call('zadd', KEYS[2], redis.call('incr', KEYS[4]), ARGV[1]) "
         "end redis.call('zadd', KEYS[3], ARGV[5], ARGV[1]) for i = 2, 4 do "
         "redis.call('pexpire', KEYS[i], ARGV[6]) end redis.call('get', "
         "KEYS[1]) return {0, redis.call('pttl', KEYS[1]), fair and "
         "redis.call('zrank', KEYS[2], ARGV[1]) or -1}",
         "9702b0d244afe63a7365a9e4845f0c6619f5af6a"},
    /*
     * Shared holds (shared.c, rwlock.c).  KEYS[1] the lock, KEYS[2] the
     * holders (token .. stamp -> lease end ms, server time), KEYS[3] a
     * waiting writer's intent.  An empty now (ms) in ARGV: the script
     * reads TIME (Redis 3.2 and later let a script write after it).
     * mark() keeps the lock key holding the
     * stamp of the latest lease with a TTL to its end (deleted with no
     * holder left); marked(v) says the lock key is that stamp or absent,
     * i.e. not held by anyone exclusive.  Acquire: ARGV entry, lease
     * ms, now, the permit limit (0 none), '1' to yield to a waiting
     * writer: {1,0,0}, or {0, wait ms, why}: 0 held exclusively, 1 a
     * writer waits, 2 no permit free.  Release: ARGV entry, now,
     * channel, 's' for SPUBLISH: 1, 0 (entry gone), -1 (the key was
     * taken).  Extend: ARGV
     * old entry, new entry, lease ms, now: as release.  Exclusive:
     * ARGV token, lease ms, now, intent ms (0 none): {1,0} taken, or
     * {0, holder's PTTL} with the intent kept.
     */
    [SCRIPT_SHARED_ACQUIRE] =
        {SHARED_MARK
         "local now = tonumber(ARGV[3]) if not now then "
         "redis.replicate_commands() local t = redis.call('time') now = "
         "t[1] * 1000 + math.floor(t[2] / 1000) end local score = now + "
         "tonumber(ARGV[2]) local v = redis.call('get', KEYS[1]) if not "
         "marked(v) then return {0, redis.call('pttl', KEYS[1]), 0} end "
         "redis.call('zremrangebyscore', KEYS[2], '-inf', '(' .. now) local "
         "why = 0 if ARGV[5] == '1' and redis.call('exists', KEYS[3]) == 1 "
         "then why = 1 elseif tonumber(ARGV[4]) > 0 and redis.call('zcard', "
         "KEYS[2]) >= tonumber(ARGV[4]) then why = 2 else "
         "redis.call('zadd', KEYS[2], score, ARGV[1]) end mark(now, ARGV[1]) "
         "if why "
         "== 1 then return {0, redis.call('pttl', KEYS[3]), 1} end if why "
         "== 2 then local f = redis.call('zrange', KEYS[2], 0, 0, "
         "'withscores') return {0, math.floor(tonumber(f[2]) - now), 2} end "
         "return {1, 0, 0}",
         "788ff0775da5e75e445f5d5557b360447c66995f"},
    [SCRIPT_SHARED_RELEASE] =
        {SHARED_MARK
         "local now = tonumber(ARGV[2]) if not now then "
         "redis.replicate_commands() local t = redis.call('time') now = "
         "t[1] * 1000 + math.floor(t[2] / 1000) end local ours = "
         "marked(redis.call('get', KEYS[1])) local n = redis.call('zrem', "
         "KEYS[2], ARGV[1]) if not ours then return -1 end "
         "redis.call('zremrangebyscore', KEYS[2], '-inf', '(' .. now) "
         "mark(now) redis.pcall(ARGV[4] == 's' and 'spublish' or 'publish', "
         "ARGV[3], KEYS[1]) return n",
         "0ca3fbd993151215c6f9967fd96c7d9cbfac2faa"},
    [SCRIPT_SHARED_EXTEND] =
        {SHARED_MARK
         "local now = tonumber(ARGV[4]) if not now then "
         "redis.replicate_commands() local t = redis.call('time') now = "
         "t[1] * 1000 + math.floor(t[2] / 1000) end if not "
         "marked(redis.call('get', KEYS[1])) then return -1 end local s = "
         "redis.call('zscore', KEYS[2], ARGV[1]) if not s then if "
         "redis.call('zscore', KEYS[2], ARGV[2]) then return 1 end return 0 "
         "end if tonumber(s) < now then return 0 end redis.call('zrem', "
         "KEYS[2], ARGV[1]) redis.call('zadd', KEYS[2], now + "
         "tonumber(ARGV[3]), ARGV[2]) redis.call('zremrangebyscore', "
         "KEYS[2], '-inf', '(' .. now) mark(now) return 1",
         "395182f5434c9401c5fbe2fbce5467254c7a6d04"},
    [SCRIPT_RW_EXCLUSIVE] =
        {SHARED_MARK
         "local now = tonumber(ARGV[3]) if not now then "
         "redis.replicate_commands() local t = redis.call('time') now = "
         "t[1] * 1000 + math.floor(t[2] / 1000) end if "
         "marked(redis.call('get', KEYS[1])) then "
         "redis.call('zremrangebyscore', KEYS[2], '-inf', '(' .. now) if "
         "redis.call('zcard', KEYS[2]) == 0 then redis.call('set', KEYS[1], "
         "ARGV[1]) local e = redis.pcall('pexpire', KEYS[1], ARGV[2]) if "
         "type(e) == 'table' then redis.call('del', KEYS[1]) return e end "
         "if redis.call('get', KEYS[3]) == ARGV[1] then redis.call('del', "
         "KEYS[3]) end return {1, 0} end mark(now) end if ARGV[4] ~= '0' "
         "then redis.call('set', KEYS[3], ARGV[1]) local e = "
         "redis.pcall('pexpire', KEYS[3], ARGV[4]) if type(e) == 'table' "
         "then redis.call('del', KEYS[3]) return e end end return {0, "
         "redis.call('pttl', KEYS[1])}",
         "9645075f0dd5e9f4c4b8aaafae129f737303e8a5"},
    /*
     * The release of a token lock with a line of waiters (guard.c).
     * KEYS: the lock and the line's arrival counter ("<line>:queue-seq",
     * which every waiter's joining INCRs), and on a cluster the line and
     * its liveness set (declared there so a migrating slot redirects; there
     * the counter is only read with EXISTS, never deleted and written back:
     * inside a script, a write to a key just deleted in a migrating slot is
     * refused as "non local").  ARGV:
     * our token, the key's channel ("<name>:released"), now ms, and on a
     * cluster 'cluster' (classic wake-ups) or 'sharded' (sharded wake-ups).
     * While the lock holds our token: delete it and the counter in one DEL,
     * whose count says whether anyone joined since the last release that read
     * the line.  Only then is the line ("<line>:queue", the counter's name
     * without "-seq") read: the counter is put back (SETNX, since every
     * user with a line has it) at the last arrival number with the line's
     * TTL (a SET with PX would save the PEXPIRE, but needs 2.6.12 where
     * this script runs from 2.6.0, and PSETEX is not in the documented
     * ACL rules, doc/acl.md), and the first live listening entry of
     * the first four is woken alone, on its own channel, the wake prefix
     * beside the key's channel ("<name>:wake:<entry>"): a classic
     * listener ('w') with PUBLISH, a sharded one ('s') with SPUBLISH.  An
     * entry that lapsed (by its liveness, "<line>:alive"), or a listener
     * no subscriber hears (it died, or its slot moved under it), is
     * dropped; a live polling entry keeps its place.  A classic PUBLISH on
     * a cluster counts only the node's own subscribers, so there it is
     * taken as heard; an SPUBLISH counts the shard's, as every sharded
     * listener subscribes at the slot's master.  With nobody woken, the
     * release is announced on the key's channel as before, for waiters
     * that do not queue, with SPUBLISH under 'sharded'.  1 deleted, 0 not
     * ours.
     *
     * Most releases find nobody in line: that path runs GET, a DEL of
     * two keys and PUBLISH, as the release before the line ran GET, DEL
     * and PUBLISH (SCRIPT_DEL_IF_EQUAL).  Its arguments are kept few,
     * since each costs the server a string object and a slot in a Lua
     * table on every call (about 1.7k instructions on Redis 7.0, more
     * than a command on an absent key): the line and its liveness set are
     * named from the counter, the wake prefix from the channel, and the
     * cluster flag is sent only on a cluster.  The line's keys share the
     * lock's hash slot (names.c), so a cluster node serves them.  The
     * counter is what the waiters of every tslock with a line (1.0 and
     * later) write, so releases of this form wake theirs too; a
     * counter left by a line that emptied costs one read of it.
     */
    [SCRIPT_RELEASE_WAKE] =
        {"if redis.call('get', KEYS[1]) ~= ARGV[1] then return 0 end "
         "local joined if ARGV[4] then redis.call('del', KEYS[1]) "
         "joined = redis.call('exists', KEYS[2]) == 1 else joined = "
         "redis.call('del', KEYS[1], KEYS[2]) > 1 end if joined then "
         "local q = KEYS[3] or string.sub(KEYS[2], 1, -5) local last = "
         "redis.call('zrange', q, '-1', '-1', 'withscores') if last[1] "
         "then local alive = KEYS[4] or string.sub(q, 1, -7) .. "
         "':alive' if not ARGV[4] then redis.call('setnx', KEYS[2], "
         "last[2]) local t = redis.call('pttl', q) if t > 0 then "
         "redis.call('pexpire', KEYS[2], t) end end local now = "
         "tonumber(ARGV[3]) local wake = string.sub(ARGV[2], 1, -10) .. "
         "':wake:' for _, h in ipairs(redis.call('zrange', q, '0', "
         "'3')) do local a = tonumber(redis.call('zscore', alive, h)) "
         "local k = string.sub(h, -1) local w = k == 'w' or k == 's' if "
         "a and a >= now and w then local n = redis.pcall(k == 's' and "
         "'spublish' or 'publish', wake .. h, KEYS[1]) if type(n) ~= "
         "'number' or n > 0 or (k == 'w' and ARGV[4]) then return 1 end "
         "end if not a or a < now or w then redis.call('zrem', q, h) "
         "redis.call('zrem', alive, h) end end end end "
         "redis.pcall(ARGV[4] == 'sharded' and 'spublish' or 'publish', "
         "ARGV[2], KEYS[1]) return 1",
         "07e7e3b2770f686287947d4bc7ff41954ee9ed0e"},
    /*
     * The fence of a master that a failover made (lib/lock.c): INCR of
     * the counter, raised to ARGV[1] (the first fence of the master's
     * failover epoch, epoch * 2^32 + 1) when it is lower, so that a
     * promoted replica never hands out a number its old master did.
     */
    [SCRIPT_FENCE_FLOOR] =
        {"local n = redis.call('incr', KEYS[1]) local f = tonumber(ARGV[1]) "
         "if n < f then redis.call('set', KEYS[1], ARGV[1]) return f end "
         "return n",
         "4124195f53a679c1300603b55c414ca039ed8845"},
};

/*
 * Redis 7 Functions: every script above, registered in one library whose
 * name carries a digest of all their SHA1s, so each libtslock's library
 * sits beside the others' and a changed script never replaces one that
 * older clients still call.  A function is named after its library and
 * the script's SHA1 prefix.  redis.replicate_commands() is dropped:
 * functions are always replicated by their effects, and do not have it.
 */
/*
 * tslock check's question, asked of every rule at once: ARGV holds each
 * command as its argument count and its arguments, and Redis 7.0's
 * redis.acl_check_cmd says whether this user may run it, running nothing.
 */
static const char tslock__acl_check_script[] =
    "local out, i = {}, 1 while i <= #ARGV do local n = tonumber(ARGV[i]) "
    "local ok = redis.acl_check_cmd(unpack(ARGV, i + 1, i + n)) "
    "out[#out + 1] = ok and 1 or 0 i = i + n + 1 end return out";

static char library_name[32];
static char *library_text;
static pthread_once_t library_once = PTHREAD_ONCE_INIT;

static void library_build(void)
{
    static const char drop[] = "redis.replicate_commands() ";
    uint64_t h = UINT64_C(1469598103934665603);
    size_t i, len = 64, at;
    const char *p;

    for (i = 0; i < SCRIPT_COUNT; i++) {
        for (p = scripts[i].sha; *p; p++)
            h = (h ^ (unsigned char)*p) * UINT64_C(1099511628211);
        len += strlen(scripts[i].text) + 160;
    }
    len += sizeof(tslock__acl_check_script) + 160;
    snprintf(library_name, sizeof(library_name), "tslock_%016llx",
             (unsigned long long)h);
    if ((library_text = malloc(len)) == NULL)
        return;
    at = (size_t)snprintf(library_text, len, "#!lua name=%s\n", library_name);
    for (i = 0; i < SCRIPT_COUNT; i++) {
        at += (size_t)snprintf(library_text + at, len - at,
                               "redis.register_function('%s_%.12s', "
                               "function(KEYS, ARGV) ",
                               library_name, scripts[i].sha);
        for (p = scripts[i].text; *p;)
            if (strncmp(p, drop, sizeof(drop) - 1) == 0)
                p += sizeof(drop) - 1;
            else
                library_text[at++] = *p++;
        at += (size_t)snprintf(library_text + at, len - at, " end)\n");
    }
    /* tslock check's question, for users refused EVAL (tools/ops/check.c). */
    snprintf(library_text + at, len - at,
             "redis.register_function{function_name='%s_check', "
             "flags={'no-writes'}, callback=function(KEYS, ARGV) %s end}\n",
             library_name, tslock__acl_check_script);
}

const char *tslock_functions_library(const char **name)
{
    pthread_once(&library_once, library_build);
    if (name != NULL)
        *name = library_name;
    return library_text;
}

/* Load the library; one that is there already (another client) is fine. */
static int library_load(tslock_client *c, const char *key)
{
    const char *text = tslock_functions_library(NULL);
    const char *load[3] = {"FUNCTION", "LOAD", text};
    redisReply *r = NULL;
    int rc;

    if (text == NULL)
        return tslock__fail(c, TSLOCK_ENOMEM,
                            "no memory for the function "
                            "library");
    rc = tslock__command(c, TSLOCK_STEP_EVAL, key, 3, load, &r);
    if (rc == TSLOCK_OK && r->type == REDIS_REPLY_ERROR
        && strstr(r->str, "already exists") == NULL) {
        rc = tslock__reply_error(c, "FUNCTION LOAD", r);
        if (rc == TSLOCK_ENOPERM)
            snprintf(c->errstr + strlen(c->errstr),
                     sizeof(c->errstr) - strlen(c->errstr),
                     "; an operator can load it: tslock functions load");
    }
    freeReplyObject(r);
    return rc;
}

/*
 * FCALL of the script's function; when the library is missing (a new
 * server, a failover to a replica that never had it, FUNCTION FLUSH), it
 * is loaded, if the client may, and called once more.
 */
static int run_function(tslock_client *c, enum tslock__script s,
                        const char *key, int argc, const char **argv,
                        redisReply **r)
{
    char fname[48];
    const char *name;
    int rc;

    tslock_functions_library(&name);
    snprintf(fname, sizeof(fname), "%s_%.12s", name, scripts[s].sha);
    argv[0] = "FCALL";
    argv[1] = fname;
    rc = tslock__command(c, TSLOCK_STEP_EVALSHA, key, argc, argv, r);
    if (rc != TSLOCK_OK || (*r)->type != REDIS_REPLY_ERROR
        || strstr((*r)->str, "Function not found") == NULL)
        return rc;
    freeReplyObject(*r);
    *r = NULL;
    if (c->functions_mode == TSLOCK_FUNCTIONS_USE)
        return tslock__fail(c, TSLOCK_ESERVER,
                            "FCALL %s: the server has no function library "
                            "%s, and this client may not load it: an "
                            "operator can, with tslock functions load",
                            fname, name);
    if ((rc = library_load(c, key)) != TSLOCK_OK)
        return rc;
    return tslock__command(c, TSLOCK_STEP_EVALSHA, key, argc, argv, r);
}

const char *tslock__script_text(enum tslock__script s)
{
    return scripts[s].text;
}

const char *tslock__script_sha(enum tslock__script s)
{
    return scripts[s].sha;
}

/*
 * A script's refusal does not say which key or command the ACL denied,
 * so the detail names what the script touches: its keys, and which
 * commands it runs (read off its text, so the list cannot drift).
 */
static void name_script_needs(tslock_client *c, enum tslock__script s,
                              int nkeys, const char *const *keys)
{
    static const char *const cmds[] = {
        "get",     "set",    "setnx",         "del",
        "pexpire", "pttl",   "incr",          "publish",
        "zadd",    "zrem",   "zrange",        "zscore",
        "zcard",   "zcount", "zrangebyscore", "zremrangebyscore"};
    size_t len = strlen(c->errstr), i;
    const char *text = scripts[s].text, *sep = "";
    char quoted[40];
    int k;

    len += (size_t)snprintf(c->errstr + len, sizeof(c->errstr) - len,
                            "; the script needs the keys");
    for (k = 0; k < nkeys && len < sizeof(c->errstr); k++)
        len += (size_t)snprintf(c->errstr + len, sizeof(c->errstr) - len,
                                "%s '%s'", k ? "," : "", keys[k]);
    if (len < sizeof(c->errstr))
        len += (size_t)snprintf(c->errstr + len, sizeof(c->errstr) - len,
                                " and the commands ");
    for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
        snprintf(quoted, sizeof(quoted), "'%s'", cmds[i]);
        if (strstr(text, quoted) == NULL || len >= sizeof(c->errstr))
            continue;
        len += (size_t)snprintf(c->errstr + len, sizeof(c->errstr) - len,
                                "%s%s", sep, cmds[i]);
        sep = ", ";
    }
}

#define SCRIPT_MAX_KEYS 4
#define SCRIPT_MAX_ARGS 8

int tslock__script_run_keys(tslock_client *c, enum tslock__script s, int nkeys,
                            const char *const *keys, int nargs,
                            const char *const *args, redisReply **out)
{
    const char *argv[3 + SCRIPT_MAX_KEYS + SCRIPT_MAX_ARGS];
    char count[2] = {(char)('0' + nkeys), '\0'};
    redisReply *r = NULL;
    int i, argc = 3, rc;

    *out = NULL;
    if (nkeys < 1 || nkeys > SCRIPT_MAX_KEYS || nargs > SCRIPT_MAX_ARGS)
        return tslock__fail(c, TSLOCK_EINVAL, "too many script arguments");
    argv[0] = "EVALSHA";
    argv[1] = scripts[s].sha;
    argv[2] = count;
    for (i = 0; i < nkeys; i++)
        argv[argc++] = keys[i];
    for (i = 0; i < nargs; i++)
        argv[argc++] = args[i];
    if (c->use_functions)
        rc = run_function(c, s, keys[0], argc, argv, &r);
    else
        rc = tslock__command(c, TSLOCK_STEP_EVALSHA, keys[0], argc, argv, &r);
    if (rc == TSLOCK_OK && r->type == REDIS_REPLY_ERROR
        && strncmp(r->str, "NOSCRIPT", 8) == 0) {
        freeReplyObject(r);
        r = NULL;
        argv[0] = "EVAL";
        argv[1] = scripts[s].text;
        rc = tslock__command(c, TSLOCK_STEP_EVAL, keys[0], argc, argv, &r);
    }
    if (rc == TSLOCK_OK && r->type == REDIS_REPLY_ERROR) {
        rc = tslock__reply_error(c, argv[0], r);
        freeReplyObject(r);
        r = NULL;
        if (rc == TSLOCK_ENOPERM)
            name_script_needs(c, s, nkeys, keys);
    }
    *out = r;
    return rc;
}

int tslock__script_run(tslock_client *c, enum tslock__script s, const char *key,
                       int nargs, const char **args, redisReply **out)
{
    const char *keys[1] = {key};

    return tslock__script_run_keys(c, s, 1, keys, nargs, args, out);
}

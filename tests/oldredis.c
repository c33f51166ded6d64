/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * oldredis - a test proxy that answers like Redis 2.0.5 ... 2.6.11 while a
 * real, modern redis-server does the work behind it.
 *
 * Every client gets its own thread and its own upstream connection, so
 * MULTI, WATCH, SELECT and AUTH state live on the real server, per client.
 * Every command that existed in the emulated version is executed by that
 * server.  shared/REDIS-VERSIONS.md lists the wire replies reproduced; the
 * old semantics come from the redis.c of those releases:
 *
 *  - Commands the version lacked: "-ERR unknown command 'NAME'", NAME as
 *    sent.  Arity as the old command table had it (SET takes no options
 *    before 2.6.12, INFO no section before 2.6, LPUSH one value before
 *    2.4, AUTH one word).  Inside MULTI such a refusal aborts EXEC from
 *    2.6.5 on (EXECABORT); before, EXEC ran what was queued.
 *  - 2.0: a write through lookupKeyWrite() (SETNX, INCR, LPUSH, HSET, ...)
 *    deletes a key that has a TTL first; EXPIRE cannot change a TTL (:0);
 *    QUIT closes without a reply.  Each is one Lua EVAL upstream, so it is
 *    atomic and is queued like the command inside MULTI.
 *  - Before 2.6 expiry was kept in whole unix seconds: EXPIRE k n at second
 *    s lasts until second s+n+1 begins, and TTL is the stored second minus
 *    now (--exact-expiry keeps the modern milliseconds instead).
 *  - 2.6: client scripts run with a prelude whose redis.call() refuses
 *    what 2.6 refused (commands it lacked, its arity, writes after TIME or
 *    another random command, SPOP and blocking commands) and answers TTL
 *    of a missing key with -1; errors are worded "ERR Error running script
 *    (call to f_<sha>): ...", and SHAs are the client's.
 *  - Replies: TTL/PTTL of a missing key -1, INFO with the emulated
 *    redis_version (flat before 2.6), old AUTH/NOAUTH/WRONGTYPE/SELECT
 *    wordings, CLIENT subcommands of 2.4 and 2.6.9, MONITOR lines without
 *    the "[db address]" of 2.6 (and with 2.0's leading '+').
 *
 * Not emulated: BLPOP/BRPOP deleting a volatile list on 2.0, 2.0's
 * de-authentication after a failed AUTH,
 * SYNC/PSYNC (unknown), OBJECT ENCODING names, options that later
 * versions added to commands of variable arity (ZADD NX, ZRANGE BYSCORE).
 *
 * --emulate modern plays a current server instead: every command and
 * every RESP2 reply passes through unchanged, so the fault mode below
 * covers the modern generation too.
 *
 * Fault mode, for tests of failures on the wire.  A client arms one fault
 * in-band with a command only the proxy knows; the connection that sends
 * it becomes a control connection whose commands are not counted from
 * then on:
 *
 *   TSLOCKFAULT ARM drop-before N    close the client's connection instead
 *                                    of forwarding command N (the replies
 *                                    to the commands before it go out)
 *   TSLOCKFAULT ARM drop-after N     forward command N, then close the
 *                                    connection without its reply
 *   TSLOCKFAULT ARM delay N MS       hold the reply to command N (and all
 *                                    after it on that connection) MS ms
 *   TSLOCKFAULT ARM half N           send the first half of the reply to
 *                                    command N, then nothing more; the
 *                                    connection stays open
 *   TSLOCKFAULT ARM half-close N     the same, then close the connection
 *   TSLOCKFAULT CLEAR                disarm
 *   TSLOCKFAULT COUNT                :commands counted since ARM or CLEAR
 *   TSLOCKFAULT FIRED                :1 once the armed fault has struck
 *
 * ARM and CLEAR reset the count.  N counts from 1, over the commands of
 * every other connection as they are parsed, one by one, so a pipeline of
 * three commands counts three.  A fault strikes once.
 *
 * Quirks of managed services, for every other connection until cleared
 * (any emulation; with modern, a current server that lacks them):
 *
 *   TSLOCKQUIRK REFUSE NAME          answer command NAME (outside scripts)
 *                                    "-ERR unknown command 'NAME', with
 *                                    args beginning with: ..." as Redis 7
 *                                    does a command it does not have (WAIT
 *                                    on ElastiCache Serverless; PUBLISH
 *                                    where a proxy filters it); up to 8
 *   TSLOCKQUIRK DEAF                 confirm every SUBSCRIBE but deliver
 *                                    no published message: the
 *                                    publishes are lost on the way, as
 *                                    where a script's PUBLISH becomes
 *                                    SPUBLISH and no SUBSCRIBE hears it
 *   TSLOCKQUIRK CLEAR                none of them
 *
 * Usage: oldredis --emulate VERSION (--listen PATH | --listen-port N)
 *                 (--upstream PATH | --upstream-port N) [--ready-fd N]
 *                 [--exact-expiry]
 * Writes "ready\n" to fd N once listening ("ready PORT\n" for
 * --listen-port 0), serves until SIGTERM/SIGINT, then exits 0.  Needs only
 * hiredis, libc and pthreads.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* memmem */
#endif
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include "hiredis_compat.h"

#define V(a, b, c) ((a)*10000 + (b)*100 + (c))

/* Past this much unsent output the proxy stops reading the client. */
#define OUT_HIGH_WATER (64u * 1024 * 1024)
#define MAX_INLINE     (64 * 1024)
#define MAX_MULTIBULK  (1024 * 1024)
#define MAX_BULK       (512L * 1024 * 1024)

/* Settings, written once by main() before any thread starts. */
static int emu;          /* emulated version, V(major, minor, patch) */
static char emu_str[16]; /* as given, for INFO */
static int exact_expiry; /* keep the modern millisecond expiry */
static int modern;       /* --emulate modern: pass everything through */
static int stop_fd = -1; /* readable once SIGTERM/SIGINT arrived */
static int stop_wfd = -1;
static const char *upstream_path;
static int upstream_port;

/* ------------------------------------------------------------ buffers */

typedef struct bytes {
    char *p;
    size_t len, cap;
} bytes;

static void *xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);

    /* A test tool may give up on exhausted memory; the library may not. */
    if (q == NULL) {
        fputs("oldredis: out of memory\n", stderr);
        abort();
    }
    return q;
}

static void bytes_reserve(bytes *b, size_t extra)
{
    size_t cap = b->cap ? b->cap : 256;

    if (b->cap - b->len >= extra)
        return;
    while (cap - b->len < extra)
        cap *= 2;
    b->p = xrealloc(b->p, cap);
    b->cap = cap;
}

static void bytes_add(bytes *b, const void *p, size_t n)
{
    bytes_reserve(b, n);
    if (n)
        memcpy(b->p + b->len, p, n);
    b->len += n;
}

static void bytes_str(bytes *b, const char *s)
{
    bytes_add(b, s, strlen(s));
}

__attribute__((format(printf, 2, 3))) static void
bytes_fmt(bytes *b, const char *fmt, ...)
{
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    bytes_reserve(b, (size_t)n + 1);
    va_start(ap, fmt);
    vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

static void bytes_drop(bytes *b, size_t n)
{
    if (n >= b->len) {
        b->len = 0;
        return;
    }
    memmove(b->p, b->p + n, b->len - n);
    b->len -= n;
}

static void bytes_free(bytes *b)
{
    free(b->p);
    b->p = NULL;
    b->len = b->cap = 0;
}

static int has_prefix(const char *s, size_t n, const char *prefix)
{
    size_t k = strlen(prefix);

    return n >= k && memcmp(s, prefix, k) == 0;
}

static int eq_nocase(const char *s, size_t n, const char *word)
{
    return strlen(word) == n && strncasecmp(s, word, n) == 0;
}

/* ------------------------------------------------------------ RESP out */

/* Status and error lines cannot carry CR or LF; Redis blanks them too. */
static void resp_line(bytes *o, char type, const char *s, size_t n)
{
    size_t i, start = o->len;

    bytes_add(o, &type, 1);
    bytes_add(o, s, n);
    for (i = start + 1; i < o->len; i++)
        if (o->p[i] == '\r' || o->p[i] == '\n')
            o->p[i] = ' ';
    bytes_add(o, "\r\n", 2);
}

static void resp_error(bytes *o, const char *msg)
{
    resp_line(o, '-', msg, strlen(msg));
}

static void resp_bulk(bytes *o, const char *s, size_t n)
{
    bytes_fmt(o, "$%zu\r\n", n);
    bytes_add(o, s, n);
    bytes_add(o, "\r\n", 2);
}

/* ------------------------------------------------------------ SHA-1 */

/* EVALSHA names scripts by the SHA-1 of their body, so the proxy must
 * compute it for the wrapped scripts it sends upstream (FIPS 180-4). */
static uint32_t rol32(uint32_t x, int n)
{
    return (x << n) | (x >> (32 - n));
}

static void sha1_block(uint32_t h[5], const unsigned char *p)
{
    uint32_t w[80], a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f, k, t;
    int i;

    for (i = 0; i < 16; i++)
        w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16
               | (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
    for (i = 16; i < 80; i++)
        w[i] = rol32(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
    for (i = 0; i < 80; i++) {
        if (i < 20) {
            f = (b & c) | (~b & d);
            k = 0x5A827999;
        } else if (i < 40) {
            f = b ^ c ^ d;
            k = 0x6ED9EBA1;
        } else if (i < 60) {
            f = (b & c) | (b & d) | (c & d);
            k = 0x8F1BBCDC;
        } else {
            f = b ^ c ^ d;
            k = 0xCA62C1D6;
        }
        t = rol32(a, 5) + f + e + k + w[i];
        e = d;
        d = c;
        c = rol32(b, 30);
        b = a;
        a = t;
    }
    h[0] += a;
    h[1] += b;
    h[2] += c;
    h[3] += d;
    h[4] += e;
}

static void sha1_hex(const char *data, size_t len, char out[41])
{
    uint32_t h[5] = {0x67452301, 0xEFCDAB89, 0x98BADCFE, 0x10325476,
                     0xC3D2E1F0};
    unsigned char tail[128];
    uint64_t bits = (uint64_t)len * 8;
    size_t i, full = len - len % 64, rest = len % 64, tlen;

    for (i = 0; i < full; i += 64)
        sha1_block(h, (const unsigned char *)data + i);
    memset(tail, 0, sizeof tail);
    memcpy(tail, data + full, rest);
    tail[rest] = 0x80;
    tlen = rest < 56 ? 64 : 128;
    for (i = 0; i < 8; i++)
        tail[tlen - 1 - i] = (unsigned char)(bits >> (8 * i));
    for (i = 0; i < tlen; i += 64)
        sha1_block(h, tail + i);
    for (i = 0; i < 5; i++)
        snprintf(out + 8 * i, 9, "%08x", (unsigned)h[i]);
}

/* ------------------------------------------------------------ scripts */

/* Client script SHA -> SHA of the wrapped script the upstream knows.  One
 * map per proxy, since the upstream's script cache is per server too. */
typedef struct script_entry {
    struct script_entry *next;
    char csha[41];
    char wsha[41];
} script_entry;

static pthread_mutex_t scripts_lock = PTHREAD_MUTEX_INITIALIZER;
static script_entry *scripts[256];

static unsigned script_bucket(const char *sha)
{
    return (unsigned)strtoul((char[]){sha[0], sha[1], 0}, NULL, 16) & 255;
}

static void script_remember(const char *csha, const char *wsha)
{
    script_entry *e;
    unsigned b = script_bucket(csha);

    pthread_mutex_lock(&scripts_lock);
    for (e = scripts[b]; e; e = e->next)
        if (strcmp(e->csha, csha) == 0)
            break;
    if (e == NULL) {
        e = xrealloc(NULL, sizeof *e);
        memcpy(e->csha, csha, 41);
        memcpy(e->wsha, wsha, 41);
        e->next = scripts[b];
        scripts[b] = e;
    }
    pthread_mutex_unlock(&scripts_lock);
}

static int script_lookup(const char *csha, char wsha[41])
{
    script_entry *e;
    int found = 0;

    pthread_mutex_lock(&scripts_lock);
    for (e = scripts[script_bucket(csha)]; e; e = e->next)
        if (strcmp(e->csha, csha) == 0) {
            memcpy(wsha, e->wsha, 41);
            found = 1;
            break;
        }
    pthread_mutex_unlock(&scripts_lock);
    return found;
}

static void scripts_free(void)
{
    size_t i;

    for (i = 0; i < 256; i++)
        while (scripts[i]) {
            script_entry *e = scripts[i];
            scripts[i] = e->next;
            free(e);
        }
}

/* Internal scripts, run upstream with EVAL so each old semantic is one
 * atomic step even inside MULTI.  Integers are checked as the old servers
 * did before touching the key. */

/* 2.0 (before 2.1.3): a write deletes a key that has a TTL first. */
static const char S_VOLATILE[] = "for i = 1, #KEYS do\n"
                                 "  if redis.call('PTTL', KEYS[i]) >= 0 then\n"
                                 "    redis.call('DEL', KEYS[i])\n"
                                 "  end\n"
                                 "end\n"
                                 "return redis.pcall(unpack(ARGV))\n";

/* EXPIRE/EXPIREAT before 2.6.  ARGV: n, '1' for EXPIREAT, '1' when a TTL
 * cannot be changed (2.0), '1' for whole-second expiry.  Before 2.6 the
 * expire time was stored in unix seconds and a key died once time() was
 * past it, so EXPIRE k n at second s lives until second s+n+1 begins. */
static const char S_EXPIRE[] =
    "if not string.match(ARGV[1], '^-?%d+$') then\n"
    "  return redis.error_reply('ERR value is not an integer or out of "
    "range')\n"
    "end\n"
    "if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end\n"
    "local n = tonumber(ARGV[1])\n"
    "local now = tonumber(redis.call('TIME')[1])\n"
    "if ARGV[2] == '1' then n = n - now end\n"
    "if n <= 0 then redis.call('DEL', KEYS[1]) return 1 end\n"
    "if ARGV[3] == '1' and redis.call('PTTL', KEYS[1]) >= 0 then\n"
    "  return 0\n"
    "end\n"
    "if ARGV[4] == '1' then\n"
    "  redis.call('PEXPIREAT', KEYS[1],\n"
    "             string.format('%.0f', (now + n + 1) * 1000))\n"
    "elseif ARGV[2] == '1' then\n"
    "  redis.call('PEXPIREAT', KEYS[1], ARGV[1] .. '000')\n"
    "else\n"
    "  redis.call('PEXPIRE', KEYS[1], string.format('%.0f', n * 1000))\n"
    "end\n"
    "return 1\n";

/* SETEX before 2.6, whole-second expiry as above. */
static const char S_SETEX[] =
    "if not string.match(ARGV[1], '^-?%d+$') then\n"
    "  return redis.error_reply('ERR value is not an integer or out of "
    "range')\n"
    "end\n"
    "local n = tonumber(ARGV[1])\n"
    "if n <= 0 then\n"
    "  return redis.error_reply('ERR invalid expire time in SETEX')\n"
    "end\n"
    "local now = tonumber(redis.call('TIME')[1])\n"
    "redis.call('SET', KEYS[1], ARGV[2])\n"
    "redis.call('PEXPIREAT', KEYS[1],\n"
    "           string.format('%.0f', (now + n + 1) * 1000))\n"
    "return redis.status_reply('OK')\n";

/* TTL before 2.6: stored second minus time(), -1 when none (or past).
 * The stored second is recovered by rounding, which is exact for the
 * whole-second expiries the scripts above set. */
static const char S_TTL[] =
    "local p = redis.call('PTTL', KEYS[1])\n"
    "if p < 0 then return -1 end\n"
    "local t = redis.call('TIME')\n"
    "local now = tonumber(t[1])\n"
    "local at = now * 1000 + math.floor(tonumber(t[2]) / 1000) + p\n"
    "local ttl = math.floor((at + 500) / 1000) - 1 - now\n"
    "if ttl < 0 then return -1 end\n"
    "return ttl\n";

/* An error that the old server raised while executing (not while
 * queuing), so inside MULTI it must come out of EXEC. */
static const char S_ERROR[] = "return redis.error_reply(ARGV[1])";

/* ------------------------------------------------------------ commands */

enum {
    CF_WRITE = 1,    /* 'w' in 2.6: refused after a random command */
    CF_RANDOM = 2,   /* 'R' in 2.6 */
    CF_NOSCRIPT = 4, /* 's' in 2.6: refused inside scripts */
    CF_VOLATILE = 8  /* 2.0: deletes its volatile keys first */
};

struct conn;
struct request;
struct cmd_def;
typedef void handler_fn(struct conn *, const struct request *,
                        const struct cmd_def *);

typedef struct cmd_def {
    const char *name;
    int since;       /* first version that has it */
    int arity;       /* N: exactly N words; -N: at least N */
    int arity_since; /* version from which arity_new holds, or 0 */
    int arity_new;
    unsigned flags;
    int first_key, last_key, key_step; /* for CF_VOLATILE */
    handler_fn *handler;               /* NULL: forward */
} cmd_def;

static handler_fn h_multi, h_exec, h_discard, h_info, h_ttl, h_pttl, h_expire,
    h_setex, h_auth, h_client, h_eval, h_evalsha, h_script, h_subscribe,
    h_monitor, h_rename;

#define W  CF_WRITE
#define R  CF_RANDOM
#define S  CF_NOSCRIPT
#define VK CF_VOLATILE
/* The commands of Redis 2.0 - 2.6 with their arity there (redis.c command
 * tables of those releases); anything else is an unknown command. */
static const cmd_def commands[] = {
    {"get", V(2, 0, 0), 2, 0, 0, 0, 0, 0, 0, NULL},
    {"set", V(2, 0, 0), 3, V(2, 6, 12), -3, W, 0, 0, 0, NULL},
    {"setnx", V(2, 0, 0), 3, 0, 0, W | VK, 1, 1, 1, NULL},
    {"setex", V(2, 0, 0), 4, 0, 0, W, 0, 0, 0, h_setex},
    {"psetex", V(2, 6, 0), 4, 0, 0, W, 0, 0, 0, NULL},
    {"append", V(2, 0, 0), 3, 0, 0, W | VK, 1, 1, 1, NULL},
    {"substr", V(2, 0, 0), 4, 0, 0, 0, 0, 0, 0, NULL},
    {"strlen", V(2, 2, 0), 2, 0, 0, 0, 0, 0, 0, NULL},
    {"getrange", V(2, 4, 0), 4, 0, 0, 0, 0, 0, 0, NULL},
    {"setrange", V(2, 2, 0), 4, 0, 0, W, 0, 0, 0, NULL},
    {"getbit", V(2, 2, 0), 3, 0, 0, 0, 0, 0, 0, NULL},
    {"setbit", V(2, 2, 0), 4, 0, 0, W, 0, 0, 0, NULL},
    {"incr", V(2, 0, 0), 2, 0, 0, W | VK, 1, 1, 1, NULL},
    {"decr", V(2, 0, 0), 2, 0, 0, W | VK, 1, 1, 1, NULL},
    {"incrby", V(2, 0, 0), 3, 0, 0, W | VK, 1, 1, 1, NULL},
    {"decrby", V(2, 0, 0), 3, 0, 0, W | VK, 1, 1, 1, NULL},
    {"incrbyfloat", V(2, 6, 0), 3, 0, 0, W, 0, 0, 0, NULL},
    {"getset", V(2, 0, 0), 3, 0, 0, W, 0, 0, 0, NULL},
    {"mget", V(2, 0, 0), -2, 0, 0, 0, 0, 0, 0, NULL},
    {"mset", V(2, 0, 0), -3, 0, 0, W, 0, 0, 0, NULL},
    {"msetnx", V(2, 0, 0), -3, 0, 0, W | VK, 1, -1, 2, NULL},
    {"bitcount", V(2, 6, 0), -2, 0, 0, 0, 0, 0, 0, NULL},
    {"bitop", V(2, 6, 0), -4, 0, 0, W, 0, 0, 0, NULL},
    {"del", V(2, 0, 0), -2, 0, 0, W, 0, 0, 0, NULL},
    {"exists", V(2, 0, 0), 2, 0, 0, 0, 0, 0, 0, NULL},
    {"type", V(2, 0, 0), 2, 0, 0, 0, 0, 0, 0, NULL},
    {"keys", V(2, 0, 0), 2, 0, 0, 0, 0, 0, 0, NULL},
    {"randomkey", V(2, 0, 0), 1, 0, 0, R, 0, 0, 0, NULL},
    {"rename", V(2, 0, 0), 3, 0, 0, W | VK, 1, 2, 1, h_rename},
    {"renamenx", V(2, 0, 0), 3, 0, 0, W | VK, 1, 2, 1, h_rename},
    {"move", V(2, 0, 0), 3, 0, 0, W, 0, 0, 0, NULL},
    {"expire", V(2, 0, 0), 3, 0, 0, W, 0, 0, 0, h_expire},
    {"expireat", V(2, 0, 0), 3, 0, 0, W, 0, 0, 0, h_expire},
    {"pexpire", V(2, 6, 0), 3, 0, 0, W, 0, 0, 0, NULL},
    {"pexpireat", V(2, 6, 0), 3, 0, 0, W, 0, 0, 0, NULL},
    {"ttl", V(2, 0, 0), 2, 0, 0, 0, 0, 0, 0, h_ttl},
    {"pttl", V(2, 6, 0), 2, 0, 0, 0, 0, 0, 0, h_pttl},
    {"persist", V(2, 2, 0), 2, 0, 0, W, 0, 0, 0, NULL},
    {"sort", V(2, 0, 0), -2, 0, 0, W, 0, 0, 0, NULL},
    {"dump", V(2, 6, 0), 2, 0, 0, 0, 0, 0, 0, NULL},
    {"restore", V(2, 6, 0), 4, 0, 0, W, 0, 0, 0, NULL},
    {"migrate", V(2, 6, 0), 6, 0, 0, W, 0, 0, 0, NULL},
    {"object", V(2, 2, 3), 3, 0, 0, 0, 0, 0, 0, NULL},
    {"lpush", V(2, 0, 0), 3, V(2, 4, 0), -3, W | VK, 1, 1, 1, NULL},
    {"rpush", V(2, 0, 0), 3, V(2, 4, 0), -3, W | VK, 1, 1, 1, NULL},
    {"lpushx", V(2, 2, 0), 3, 0, 0, W, 0, 0, 0, NULL},
    {"rpushx", V(2, 2, 0), 3, 0, 0, W, 0, 0, 0, NULL},
    {"linsert", V(2, 2, 0), 5, 0, 0, W, 0, 0, 0, NULL},
    {"lpop", V(2, 0, 0), 2, 0, 0, W | VK, 1, 1, 1, NULL},
    {"rpop", V(2, 0, 0), 2, 0, 0, W | VK, 1, 1, 1, NULL},
    {"blpop", V(2, 0, 0), -3, 0, 0, W | S, 0, 0, 0, NULL},
    {"brpop", V(2, 0, 0), -3, 0, 0, W | S, 0, 0, 0, NULL},
    {"brpoplpush", V(2, 2, 0), 4, 0, 0, W | S, 0, 0, 0, NULL},
    {"rpoplpush", V(2, 0, 0), 3, 0, 0, W | VK, 1, 2, 1, NULL},
    {"llen", V(2, 0, 0), 2, 0, 0, 0, 0, 0, 0, NULL},
    {"lindex", V(2, 0, 0), 3, 0, 0, 0, 0, 0, 0, NULL},
    {"lset", V(2, 0, 0), 4, 0, 0, W | VK, 1, 1, 1, NULL},
    {"lrange", V(2, 0, 0), 4, 0, 0, 0, 0, 0, 0, NULL},
    {"ltrim", V(2, 0, 0), 4, 0, 0, W | VK, 1, 1, 1, NULL},
    {"lrem", V(2, 0, 0), 4, 0, 0, W | VK, 1, 1, 1, NULL},
    {"sadd", V(2, 0, 0), 3, V(2, 4, 0), -3, W | VK, 1, 1, 1, NULL},
    {"srem", V(2, 0, 0), 3, V(2, 4, 0), -3, W | VK, 1, 1, 1, NULL},
    {"smove", V(2, 0, 0), 4, 0, 0, W | VK, 1, 2, 1, NULL},
    {"sismember", V(2, 0, 0), 3, 0, 0, 0, 0, 0, 0, NULL},
    {"scard", V(2, 0, 0), 2, 0, 0, 0, 0, 0, 0, NULL},
    {"spop", V(2, 0, 0), 2, 0, 0, W | R | S | VK, 1, 1, 1, NULL},
    {"srandmember", V(2, 0, 0), 2, V(2, 6, 0), -2, R, 0, 0, 0, NULL},
    {"sinter", V(2, 0, 0), -2, 0, 0, 0, 0, 0, 0, NULL},
    {"sinterstore", V(2, 0, 0), -3, 0, 0, W, 0, 0, 0, NULL},
    {"sunion", V(2, 0, 0), -2, 0, 0, 0, 0, 0, 0, NULL},
    {"sunionstore", V(2, 0, 0), -3, 0, 0, W, 0, 0, 0, NULL},
    {"sdiff", V(2, 0, 0), -2, 0, 0, 0, 0, 0, 0, NULL},
    {"sdiffstore", V(2, 0, 0), -3, 0, 0, W, 0, 0, 0, NULL},
    {"smembers", V(2, 0, 0), 2, 0, 0, 0, 0, 0, 0, NULL},
    {"zadd", V(2, 0, 0), 4, V(2, 4, 0), -4, W | VK, 1, 1, 1, NULL},
    {"zincrby", V(2, 0, 0), 4, 0, 0, W | VK, 1, 1, 1, NULL},
    {"zrem", V(2, 0, 0), 3, V(2, 4, 0), -3, W | VK, 1, 1, 1, NULL},
    {"zremrangebyscore", V(2, 0, 0), 4, 0, 0, W | VK, 1, 1, 1, NULL},
    {"zremrangebyrank", V(2, 0, 0), 4, 0, 0, W | VK, 1, 1, 1, NULL},
    {"zunionstore", V(2, 0, 0), -4, 0, 0, W, 0, 0, 0, NULL},
    {"zinterstore", V(2, 0, 0), -4, 0, 0, W, 0, 0, 0, NULL},
    {"zrange", V(2, 0, 0), -4, 0, 0, 0, 0, 0, 0, NULL},
    {"zrangebyscore", V(2, 0, 0), -4, 0, 0, 0, 0, 0, 0, NULL},
    {"zrevrangebyscore", V(2, 2, 0), -4, 0, 0, 0, 0, 0, 0, NULL},
    {"zcount", V(2, 0, 0), 4, 0, 0, 0, 0, 0, 0, NULL},
    {"zrevrange", V(2, 0, 0), -4, 0, 0, 0, 0, 0, 0, NULL},
    {"zcard", V(2, 0, 0), 2, 0, 0, 0, 0, 0, 0, NULL},
    {"zscore", V(2, 0, 0), 3, 0, 0, 0, 0, 0, 0, NULL},
    {"zrank", V(2, 0, 0), 3, 0, 0, 0, 0, 0, 0, NULL},
    {"zrevrank", V(2, 0, 0), 3, 0, 0, 0, 0, 0, 0, NULL},
    {"hset", V(2, 0, 0), 4, 0, 0, W | VK, 1, 1, 1, NULL},
    {"hsetnx", V(2, 0, 0), 4, 0, 0, W | VK, 1, 1, 1, NULL},
    {"hget", V(2, 0, 0), 3, 0, 0, 0, 0, 0, 0, NULL},
    {"hmset", V(2, 0, 0), -4, 0, 0, W | VK, 1, 1, 1, NULL},
    {"hmget", V(2, 0, 0), -3, 0, 0, 0, 0, 0, 0, NULL},
    {"hincrby", V(2, 0, 0), 4, 0, 0, W | VK, 1, 1, 1, NULL},
    {"hincrbyfloat", V(2, 6, 0), 4, 0, 0, W, 0, 0, 0, NULL},
    {"hdel", V(2, 0, 0), 3, V(2, 4, 0), -3, W | VK, 1, 1, 1, NULL},
    {"hlen", V(2, 0, 0), 2, 0, 0, 0, 0, 0, 0, NULL},
    {"hkeys", V(2, 0, 0), 2, 0, 0, 0, 0, 0, 0, NULL},
    {"hvals", V(2, 0, 0), 2, 0, 0, 0, 0, 0, 0, NULL},
    {"hgetall", V(2, 0, 0), 2, 0, 0, 0, 0, 0, 0, NULL},
    {"hexists", V(2, 0, 0), 3, 0, 0, 0, 0, 0, 0, NULL},
    {"subscribe", V(2, 0, 0), -2, 0, 0, S, 0, 0, 0, h_subscribe},
    {"unsubscribe", V(2, 0, 0), -1, 0, 0, S, 0, 0, 0, h_subscribe},
    {"psubscribe", V(2, 0, 0), -2, 0, 0, S, 0, 0, 0, h_subscribe},
    {"punsubscribe", V(2, 0, 0), -1, 0, 0, S, 0, 0, 0, h_subscribe},
    {"publish", V(2, 0, 0), 3, 0, 0, 0, 0, 0, 0, NULL},
    {"multi", V(2, 0, 0), 1, 0, 0, S, 0, 0, 0, h_multi},
    {"exec", V(2, 0, 0), 1, 0, 0, S, 0, 0, 0, h_exec},
    {"discard", V(2, 0, 0), 1, 0, 0, S, 0, 0, 0, h_discard},
    {"watch", V(2, 2, 0), -2, 0, 0, S, 0, 0, 0, NULL},
    {"unwatch", V(2, 2, 0), 1, 0, 0, S, 0, 0, 0, NULL},
    {"eval", V(2, 6, 0), -3, 0, 0, S, 0, 0, 0, h_eval},
    {"evalsha", V(2, 6, 0), -3, 0, 0, S, 0, 0, 0, h_evalsha},
    {"script", V(2, 6, 0), -2, 0, 0, S, 0, 0, 0, h_script},
    {"auth", V(2, 0, 0), 2, 0, 0, S, 0, 0, 0, h_auth},
    {"ping", V(2, 0, 0), 1, 0, 0, 0, 0, 0, 0, NULL},
    {"echo", V(2, 0, 0), 2, 0, 0, 0, 0, 0, 0, NULL},
    {"select", V(2, 0, 0), 2, 0, 0, 0, 0, 0, 0, NULL},
    {"dbsize", V(2, 0, 0), 1, 0, 0, 0, 0, 0, 0, NULL},
    {"flushdb", V(2, 0, 0), 1, 0, 0, W, 0, 0, 0, NULL},
    {"flushall", V(2, 0, 0), 1, 0, 0, W, 0, 0, 0, NULL},
    {"info", V(2, 0, 0), 1, V(2, 6, 0), -1, 0, 0, 0, 0, h_info},
    {"time", V(2, 6, 0), 1, 0, 0, R, 0, 0, 0, NULL},
    {"lastsave", V(2, 0, 0), 1, 0, 0, R, 0, 0, 0, NULL},
    {"save", V(2, 0, 0), 1, 0, 0, S, 0, 0, 0, NULL},
    {"bgsave", V(2, 0, 0), 1, 0, 0, 0, 0, 0, 0, NULL},
    {"bgrewriteaof", V(2, 0, 0), 1, 0, 0, 0, 0, 0, 0, NULL},
    {"shutdown", V(2, 0, 0), 1, V(2, 6, 0), -1, S, 0, 0, 0, NULL},
    {"config", V(2, 0, 0), -2, 0, 0, 0, 0, 0, 0, NULL},
    {"debug", V(2, 0, 0), -2, 0, 0, S, 0, 0, 0, NULL},
    {"slaveof", V(2, 0, 0), 3, 0, 0, S, 0, 0, 0, NULL},
    {"monitor", V(2, 0, 0), 1, 0, 0, S, 0, 0, 0, h_monitor},
    {"slowlog", V(2, 2, 12), -2, 0, 0, 0, 0, 0, 0, NULL},
    {"client", V(2, 4, 0), -2, 0, 0, S, 0, 0, 0, h_client},
};
#undef W
#undef R
#undef S
#undef VK

static const cmd_def *cmd_lookup(const char *name, size_t len)
{
    size_t i;

    for (i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (eq_nocase(name, len, commands[i].name))
            return commands[i].since <= emu ? &commands[i] : NULL;
    return NULL;
}

static int cmd_arity(const cmd_def *d)
{
    return d->arity_since && emu >= d->arity_since ? d->arity_new : d->arity;
}

/* ------------------------------------------------------------ 2.6 Lua */

/* Prepended to every client script on 2.6, on the script's first line so
 * error line numbers stay the same.  It shadows `redis` with one whose
 * call/pcall refuse what 2.6 refused (commands it did not have, its arity,
 * a write after TIME or another random command, commands not allowed in
 * scripts), answer TTL of a missing key with -1, and have only the 2.6
 * helper functions; `bit` did not exist until 2.8.18. */
static bytes prelude;

static void prelude_build(void)
{
    size_t i;

    bytes_str(&prelude, "local redis, bit = (function(r) local c = {");
    for (i = 0; i < sizeof commands / sizeof commands[0]; i++) {
        const cmd_def *d = &commands[i];
        if (d->since <= emu)
            bytes_fmt(&prelude, "[\"%s\"]={%d,%u},", d->name, cmd_arity(d),
                      d->flags & (CF_WRITE | CF_RANDOM | CF_NOSCRIPT));
    }
    bytes_str(&prelude,
              "} local dirty = false "
              "local function chk(...) local n = select('#', ...) "
              "if n == 0 then return 'Please specify at least one argument "
              "for redis.call()' end local name = ... "
              "local d = type(name) == 'string' and c[string.lower(name)] "
              "if not d then return 'Unknown Redis command called from Lua "
              "script' end "
              "if (d[1] > 0 and d[1] ~= n) or n < -d[1] then return 'Wrong "
              "number of args calling Redis command From Lua script' end "
              "if d[2] % 8 >= 4 then return 'This Redis command is not "
              "allowed from scripts' end "
              "if d[2] % 2 == 1 and dirty then return 'Write commands not "
              "allowed after non deterministic commands' end "
              "if d[2] % 4 >= 2 then dirty = true end return nil end ");
    bytes_fmt(&prelude,
              "local function fix(name, v) local l = string.lower(name) "
              "if (l == 'ttl' or l == 'pttl') and v == -2 then return -1 end "
              "if l == 'info' and type(v) == 'string' then "
              "v = string.gsub(v, 'redis_version:[^\\r\\n]*', "
              "'redis_version:%s') end return v end ",
              emu_str);
    bytes_str(&prelude,
              "local t = {} "
              "t.call = function(...) local e = chk(...) "
              "if e then error({err = e}) end return fix((...), r.call(...)) "
              "end "
              "t.pcall = function(...) local e = chk(...) "
              "if e then return {err = e} end "
              "return fix((...), r.pcall(...)) end "
              "for _, k in ipairs({'log', 'sha1hex', 'error_reply', "
              "'status_reply', 'LOG_DEBUG', 'LOG_VERBOSE', 'LOG_NOTICE', "
              "'LOG_WARNING'}) do t[k] = r[k] end "
              "return t, nil end)(redis); ");
}

/* ------------------------------------------------------------ connection */

/* How a reply from upstream is reworded before the client sees it. */
enum xform_kind {
    XF_PLAIN,       /* modern error wordings only */
    XF_INFO,        /* emulated redis_version, old layout */
    XF_TTL,         /* -2 (no such key) was -1 before 2.8 */
    XF_AUTH,        /* old AUTH replies */
    XF_MULTI,       /* start collecting queued commands */
    XF_EXEC,        /* rework each result as its command asks */
    XF_DISCARD,     /* forget queued commands */
    XF_EXECABORT,   /* 2.6.5+: a command was refused while queuing */
    XF_SCRIPT,      /* Lua errors worded as 2.6, with the client's SHA */
    XF_SCRIPT_LOAD, /* answer the client's SHA, not the wrapped one */
    XF_SUBSCRIBE,   /* track the subscription count */
    XF_MONITOR      /* MONITOR lines in the emulated version's format */
};

typedef struct xform {
    enum xform_kind kind;
    char sha[41];
} xform;

/* Replies owed to the client, in request order.  A local reply is ready
 * at once but still waits for the upstream replies queued before it. */
typedef struct pending {
    struct pending *next;
    int local;
    bytes reply;
    xform xf;
    int queued;      /* sent inside MULTI: +QUEUED now, result at EXEC */
    int expect;      /* upstream replies due (EXPECT_*, or a count) */
    int close_after; /* QUIT */
    int fault;       /* enum fault_kind struck on this reply */
    long delay_ms;   /* FAULT_DELAY */
} pending;

#define EXPECT_ALL_CHANNELS (-1)    /* UNSUBSCRIBE with no argument */
#define EXPECT_ALL_PATTERNS (-2)    /* PUNSUBSCRIBE with no argument */
#define EXPECT_FOREVER      INT_MAX /* MONITOR */

typedef struct request {
    int argc, cap;
    const char **argv;
    size_t *len;
} request;

typedef struct conn {
    int fd;
    redisContext *up;
    int up_wpending; /* commands appended but not yet written upstream */
    int up_dead;
    bytes in, out;
    request req; /* the request being dispatched (points into in) */
    request cmd; /* the command being built for upstream */
    char num[4][24];
    pending *head, *tail;
    int in_multi;    /* as of the last dispatched request */
    int multi_dirty; /* 2.6.5+: refused while queuing, EXEC aborts */
    xform *queued;   /* transforms of the commands inside MULTI */
    size_t nqueued, capqueued;
    int nchan, npat;    /* subscriptions, from upstream replies */
    int quitting;       /* 1: read no more; 2: close once out is sent */
    int control;        /* sent TSLOCKFAULT: its commands are not counted */
    int hold;           /* a fault holds back out past hold_len */
    size_t hold_len;    /* bytes of out that may still go while holding */
    int64_t hold_until; /* monotonic ms; INT64_MAX: for good */
    int hold_close;     /* close once hold_len bytes went out */
} conn;

static void request_add(request *r, const char *p, size_t n)
{
    if (r->argc == r->cap) {
        r->cap = r->cap ? r->cap * 2 : 16;
        r->argv = xrealloc(r->argv, sizeof *r->argv * (size_t)r->cap);
        r->len = xrealloc(r->len, sizeof *r->len * (size_t)r->cap);
    }
    r->argv[r->argc] = p;
    r->len[r->argc] = n;
    r->argc++;
}

static void request_free(request *r)
{
    free(r->argv);
    free(r->len);
}

static pending *pending_push(conn *c)
{
    pending *p = xrealloc(NULL, sizeof *p);

    memset(p, 0, sizeof *p);
    p->expect = 1;
    if (c->tail)
        c->tail->next = p;
    else
        c->head = p;
    c->tail = p;
    return p;
}

static void pending_pop(conn *c)
{
    pending *p = c->head;

    c->head = p->next;
    if (c->head == NULL)
        c->tail = NULL;
    bytes_free(&p->reply);
    free(p);
}

static void local_reply(conn *c, const char *resp, size_t n, int close_after)
{
    pending *p = pending_push(c);

    p->local = 1;
    p->close_after = close_after;
    bytes_add(&p->reply, resp, n);
}

static void local_error(conn *c, const char *msg)
{
    bytes e = {0};

    resp_error(&e, msg);
    local_reply(c, e.p, e.len, 0);
    bytes_free(&e);
}

/* Refused before queuing (unknown command, arity).  From 2.6.5 on such a
 * refusal inside MULTI makes EXEC fail with EXECABORT; before, EXEC ran
 * the commands that were queued. */
static void refuse(conn *c, const char *msg)
{
    if (c->in_multi && emu >= V(2, 6, 5))
        c->multi_dirty = 1;
    local_error(c, msg);
}

/* Sends c->cmd upstream and books its reply. */
static pending *send_cmd(conn *c, enum xform_kind kind, int expect)
{
    pending *p;

    redisAppendCommandArgv(c->up, c->cmd.argc, c->cmd.argv, c->cmd.len);
    c->up_wpending = 1;
    p = pending_push(c);
    p->xf.kind = kind;
    p->expect = expect;
    p->queued = c->in_multi;
    return p;
}

static void cmd_start(conn *c)
{
    c->cmd.argc = 0;
}

static void cmd_arg(conn *c, const char *p, size_t n)
{
    request_add(&c->cmd, p, n);
}

static void cmd_str(conn *c, const char *s)
{
    cmd_arg(c, s, strlen(s));
}

static void cmd_num(conn *c, int slot, long long v)
{
    snprintf(c->num[slot], sizeof c->num[slot], "%lld", v);
    cmd_str(c, c->num[slot]);
}

static void cmd_args_from(conn *c, const request *r, int from)
{
    int i;

    for (i = from; i < r->argc; i++)
        cmd_arg(c, r->argv[i], r->len[i]);
}

static pending *forward_as_is(conn *c, const request *r, enum xform_kind kind)
{
    cmd_start(c);
    cmd_args_from(c, r, 0);
    return send_cmd(c, kind, 1);
}

/* An error the old server raised while executing the command: inside
 * MULTI it was queued and came out of EXEC, so it must go upstream. */
static void exec_error(conn *c, const char *msg)
{
    if (!c->in_multi) {
        local_error(c, msg);
        return;
    }
    cmd_start(c);
    cmd_str(c, "EVAL");
    cmd_str(c, S_ERROR);
    cmd_str(c, "0");
    cmd_str(c, msg);
    send_cmd(c, XF_PLAIN, 1);
}

static void queue_clear(conn *c)
{
    c->nqueued = 0;
}

static void queue_push(conn *c, const xform *xf)
{
    if (c->nqueued == c->capqueued) {
        c->capqueued = c->capqueued ? c->capqueued * 2 : 16;
        c->queued = xrealloc(c->queued, sizeof *c->queued * c->capqueued);
    }
    c->queued[c->nqueued++] = *xf;
}

/* ------------------------------------------------------------ handlers */

static int is_quit(const request *r)
{
    return eq_nocase(r->argv[0], r->len[0], "quit");
}

/* 2.0 closed the connection without a word; 2.2 answers +OK first. */
static void do_quit(conn *c)
{
    if (emu < V(2, 2, 0))
        local_reply(c, "", 0, 1);
    else
        local_reply(c, "+OK\r\n", 5, 1);
    c->quitting = 1;
}

static void h_forward(conn *c, const request *r, const cmd_def *d)
{
    int i, last, nkeys = 0;

    if (!(emu < V(2, 1, 3) && (d->flags & CF_VOLATILE))) {
        forward_as_is(c, r, XF_PLAIN);
        return;
    }
    last = d->last_key < 0 ? r->argc + d->last_key : d->last_key;
    for (i = d->first_key; i <= last; i += d->key_step)
        nkeys++;
    cmd_start(c);
    cmd_str(c, "EVAL");
    cmd_str(c, S_VOLATILE);
    cmd_num(c, 0, nkeys);
    for (i = d->first_key; i <= last; i += d->key_step)
        cmd_arg(c, r->argv[i], r->len[i]);
    cmd_args_from(c, r, 0);
    send_cmd(c, XF_PLAIN, 1);
}

static void h_multi(conn *c, const request *r, const cmd_def *d)
{
    (void)d;
    forward_as_is(c, r, XF_MULTI);
    c->in_multi = 1;
}

static void h_exec(conn *c, const request *r, const cmd_def *d)
{
    int was_in_multi = c->in_multi, dirty = c->multi_dirty;

    (void)d;
    c->in_multi = c->multi_dirty = 0;
    if (was_in_multi && dirty) {
        cmd_start(c);
        cmd_str(c, "DISCARD");
        send_cmd(c, XF_EXECABORT, 1);
        return;
    }
    forward_as_is(c, r, was_in_multi ? XF_EXEC : XF_PLAIN);
}

static void h_discard(conn *c, const request *r, const cmd_def *d)
{
    (void)d;
    c->in_multi = c->multi_dirty = 0;
    forward_as_is(c, r, XF_DISCARD);
}

/* Before 2.6 INFO took no argument (arity 1); 2.6 took at most one. */
static void h_info(conn *c, const request *r, const cmd_def *d)
{
    (void)d;
    if (r->argc > 2) {
        exec_error(c, "ERR syntax error");
        return;
    }
    forward_as_is(c, r, XF_INFO);
}

static int seconds_expiry(void)
{
    return emu < V(2, 6, 0) && !exact_expiry;
}

static void h_ttl(conn *c, const request *r, const cmd_def *d)
{
    (void)d;
    if (!seconds_expiry()) {
        forward_as_is(c, r, XF_TTL);
        return;
    }
    cmd_start(c);
    cmd_str(c, "EVAL");
    cmd_str(c, S_TTL);
    cmd_str(c, "1");
    cmd_arg(c, r->argv[1], r->len[1]);
    send_cmd(c, XF_PLAIN, 1);
}

static void h_pttl(conn *c, const request *r, const cmd_def *d)
{
    (void)d;
    forward_as_is(c, r, XF_TTL);
}

static void h_expire(conn *c, const request *r, const cmd_def *d)
{
    int keep_old = emu < V(2, 1, 3);

    if (!keep_old && !seconds_expiry()) {
        forward_as_is(c, r, XF_PLAIN);
        return;
    }
    cmd_start(c);
    cmd_str(c, "EVAL");
    cmd_str(c, S_EXPIRE);
    cmd_str(c, "1");
    cmd_arg(c, r->argv[1], r->len[1]);
    cmd_arg(c, r->argv[2], r->len[2]);
    cmd_str(c, strcmp(d->name, "expireat") == 0 ? "1" : "0");
    cmd_str(c, keep_old ? "1" : "0");
    cmd_str(c, seconds_expiry() ? "1" : "0");
    send_cmd(c, XF_PLAIN, 1);
}

static void h_setex(conn *c, const request *r, const cmd_def *d)
{
    (void)d;
    if (!seconds_expiry()) {
        forward_as_is(c, r, XF_PLAIN);
        return;
    }
    cmd_start(c);
    cmd_str(c, "EVAL");
    cmd_str(c, S_SETEX);
    cmd_str(c, "1");
    cmd_arg(c, r->argv[1], r->len[1]);
    cmd_arg(c, r->argv[2], r->len[2]);
    cmd_arg(c, r->argv[3], r->len[3]);
    send_cmd(c, XF_PLAIN, 1);
}

static void h_auth(conn *c, const request *r, const cmd_def *d)
{
    (void)d;
    forward_as_is(c, r, XF_AUTH);
}

/* CLIENT came in 2.4 with LIST and KILL; GETNAME and SETNAME in 2.6.9. */
static void h_client(conn *c, const request *r, const cmd_def *d)
{
    const char *sub = r->argv[1];
    size_t n = r->len[1];
    int named = emu >= V(2, 6, 9);
    int ok = (eq_nocase(sub, n, "list") && r->argc == 2)
             || (eq_nocase(sub, n, "kill") && r->argc == 3)
             || (named && eq_nocase(sub, n, "getname") && r->argc == 2)
             || (named && eq_nocase(sub, n, "setname") && r->argc == 3);

    if (ok) {
        h_forward(c, r, d);
        return;
    }
    exec_error(c, named ? "ERR Syntax error, try CLIENT (LIST | KILL ip:port "
                          "| GETNAME | SETNAME connection-name)"
                        : "ERR Syntax error, try CLIENT (LIST | KILL ip:port)");
}

/* Old servers refused to rename a key onto itself (modern: +OK). */
static void h_rename(conn *c, const request *r, const cmd_def *d)
{
    if (r->len[1] == r->len[2]
        && memcmp(r->argv[1], r->argv[2], r->len[1]) == 0) {
        exec_error(c, "ERR source and destination objects are the same");
        return;
    }
    h_forward(c, r, d);
}

static void h_subscribe(conn *c, const request *r, const cmd_def *d)
{
    int expect = r->argc - 1;

    if (expect == 0)
        expect = strcmp(d->name, "unsubscribe") == 0 ? EXPECT_ALL_CHANNELS
                                                     : EXPECT_ALL_PATTERNS;
    forward_as_is(c, r, XF_SUBSCRIBE)->expect = expect;
}

static void h_monitor(conn *c, const request *r, const cmd_def *d)
{
    (void)d;
    forward_as_is(c, r, XF_MONITOR)->expect = EXPECT_FOREVER;
}

/*
 * A MONITOR line as the emulated version wrote it.  2.6 added "[db
 * address]" after the time; 2.2 - 2.4 have none; 2.0 puts a '+' in front
 * as well (REDIS-VERSIONS.md).  The "OK" that starts the feed stays.
 */
static void put_reply(bytes *o, const redisReply *r);

static void put_monitor_line(bytes *o, const redisReply *r)
{
    const char *open, *close;

    if (r->type != REDIS_REPLY_STATUS || emu >= V(2, 6, 0)
        || (open = memchr(r->str, '[', r->len)) == NULL
        || (close = memchr(open, ']', r->len - (size_t)(open - r->str))) == NULL
        || close + 2 > r->str + r->len) {
        put_reply(o, r);
        return;
    }
    bytes_fmt(o, "+%s%.*s%.*s\r\n", emu < V(2, 2, 0) ? "+" : "",
              (int)(open - r->str), r->str,
              (int)(r->len - (size_t)(close + 2 - r->str)), close + 2);
}

/* Wraps a client script for 2.6; returns the SHAs of both bodies. */
static void wrap_script(const char *body, size_t n, bytes *wrapped,
                        char csha[41], char wsha[41])
{
    bytes_add(wrapped, prelude.p, prelude.len);
    bytes_add(wrapped, body, n);
    sha1_hex(body, n, csha);
    sha1_hex(wrapped->p, wrapped->len, wsha);
    script_remember(csha, wsha);
}

static void h_eval(conn *c, const request *r, const cmd_def *d)
{
    bytes wrapped = {0};
    char csha[41], wsha[41];
    pending *p;

    (void)d;
    wrap_script(r->argv[1], r->len[1], &wrapped, csha, wsha);
    cmd_start(c);
    cmd_arg(c, r->argv[0], r->len[0]);
    cmd_arg(c, wrapped.p, wrapped.len);
    cmd_args_from(c, r, 2);
    p = send_cmd(c, XF_SCRIPT, 1);
    memcpy(p->xf.sha, csha, 41);
    bytes_free(&wrapped);
}

/* The upstream knows the client's script under its wrapped SHA.  An
 * unknown one is asked for under a SHA nobody has, so that NOSCRIPT comes
 * from the server (and from EXEC when queued), as on 2.6. */
static void map_sha(const char *s, size_t n, char csha[41], char wsha[41])
{
    size_t i;

    memset(csha, 0, 41);
    for (i = 0; i < n && i < 40; i++)
        csha[i] = (char)tolower((unsigned char)s[i]);
    if (n != 40 || !script_lookup(csha, wsha)) {
        memset(wsha, '0', 40);
        wsha[40] = 0;
    }
}

static void h_evalsha(conn *c, const request *r, const cmd_def *d)
{
    char csha[41], wsha[41];
    pending *p;

    (void)d;
    map_sha(r->argv[1], r->len[1], csha, wsha);
    cmd_start(c);
    cmd_arg(c, r->argv[0], r->len[0]);
    cmd_str(c, wsha);
    cmd_args_from(c, r, 2);
    p = send_cmd(c, XF_SCRIPT, 1);
    memcpy(p->xf.sha, csha, 41);
}

static void script_load(conn *c, const request *r)
{
    bytes wrapped = {0};
    char csha[41], wsha[41];
    pending *p;

    wrap_script(r->argv[2], r->len[2], &wrapped, csha, wsha);
    cmd_start(c);
    cmd_arg(c, r->argv[0], r->len[0]);
    cmd_arg(c, r->argv[1], r->len[1]);
    cmd_arg(c, wrapped.p, wrapped.len);
    p = send_cmd(c, XF_SCRIPT_LOAD, 1);
    memcpy(p->xf.sha, csha, 41);
    bytes_free(&wrapped);
}

static void script_exists(conn *c, const request *r)
{
    char *mapped = xrealloc(NULL, (size_t)r->argc * 41);
    char csha[41];
    int i;

    cmd_start(c);
    cmd_args_from(c, r, 0);
    for (i = 2; i < r->argc; i++) {
        map_sha(r->argv[i], r->len[i], csha, mapped + 41 * i);
        c->cmd.argv[i] = mapped + 41 * i;
        c->cmd.len[i] = 40;
    }
    send_cmd(c, XF_PLAIN, 1);
    free(mapped);
}

/* The subcommands of 2.6 and their exact word counts. */
static void h_script(conn *c, const request *r, const cmd_def *d)
{
    const char *sub = r->argv[1];
    size_t n = r->len[1];

    (void)d;
    if (eq_nocase(sub, n, "load") && r->argc == 3)
        script_load(c, r);
    else if (eq_nocase(sub, n, "exists"))
        script_exists(c, r);
    else if ((eq_nocase(sub, n, "flush") || eq_nocase(sub, n, "kill"))
             && r->argc == 2)
        forward_as_is(c, r, XF_PLAIN);
    else
        exec_error(c, "ERR Unknown SCRIPT subcommand or wrong # of args.");
}

static int is_subscription_command(const cmd_def *d)
{
    return d->handler == h_subscribe;
}

/* Checks in the order processCommand() of 2.x made them. */
static void dispatch(conn *c, const request *r)
{
    const cmd_def *d;
    char msg[128];
    int arity;

    if (is_quit(r)) {
        do_quit(c);
        return;
    }
    d = cmd_lookup(r->argv[0], r->len[0]);
    if (d == NULL) {
        bytes m = {0};
        bytes_fmt(&m, "ERR unknown command '%.*s'",
                  (int)strnlen(r->argv[0], r->len[0]), r->argv[0]);
        bytes_add(&m, "", 1);
        refuse(c, m.p);
        bytes_free(&m);
        return;
    }
    arity = cmd_arity(d);
    if ((arity > 0 && r->argc != arity) || r->argc < -arity) {
        snprintf(msg, sizeof msg,
                 "ERR wrong number of arguments for '%s' command", d->name);
        refuse(c, msg);
        return;
    }
    if (c->nchan + c->npat > 0 && !is_subscription_command(d)) {
        local_error(c, "ERR only (P)SUBSCRIBE / (P)UNSUBSCRIBE / QUIT "
                       "allowed in this context");
        return;
    }
    (d->handler ? d->handler : h_forward)(c, r, d);
}

/*
 * --emulate modern: the server's own checks and replies, unchanged.
 * MULTI, EXEC and DISCARD are followed as for 2.6.5+, so that a command
 * a quirk refuses inside MULTI aborts EXEC as on a server without it.
 */
static void dispatch_modern(conn *c, const request *r)
{
    const cmd_def *d = cmd_lookup(r->argv[0], r->len[0]);

    if (is_quit(r))
        do_quit(c);
    else if (d != NULL
             && (d->handler == h_subscribe || d->handler == h_monitor
                 || d->handler == h_multi || d->handler == h_exec
                 || d->handler == h_discard))
        d->handler(c, r, d);
    else
        forward_as_is(c, r, XF_PLAIN);
}

/* ------------------------------------------------------------ faults */

enum fault_kind {
    FAULT_NONE,
    FAULT_DROP_BEFORE,
    FAULT_DROP_AFTER,
    FAULT_DELAY,
    FAULT_HALF,
    FAULT_HALF_CLOSE
};

static const char *const fault_names[] = {"",      "drop-before", "drop-after",
                                          "delay", "half",        "half-close"};

/* One armed fault for all connections; counted under fault_lock. */
static pthread_mutex_t fault_lock = PTHREAD_MUTEX_INITIALIZER;
static enum fault_kind fault_kind_armed;
static long fault_at, fault_delay_ms, fault_count, fault_fired;

static int64_t mono_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Counts one command; returns the fault it must suffer, if any. */
static enum fault_kind fault_tick(long *delay_ms)
{
    enum fault_kind k = FAULT_NONE;

    pthread_mutex_lock(&fault_lock);
    fault_count++;
    if (fault_kind_armed != FAULT_NONE && fault_count == fault_at) {
        k = fault_kind_armed;
        *delay_ms = fault_delay_ms;
        fault_kind_armed = FAULT_NONE;
        fault_fired = 1;
    }
    pthread_mutex_unlock(&fault_lock);
    return k;
}

static long arg_long(const request *r, int i)
{
    char buf[24];
    char *end;
    long v;

    if (i >= r->argc || r->len[i] == 0 || r->len[i] >= sizeof buf)
        return -1;
    memcpy(buf, r->argv[i], r->len[i]);
    buf[r->len[i]] = '\0';
    v = strtol(buf, &end, 10);
    return *end == '\0' && v > 0 ? v : -1;
}

/* TSLOCKFAULT ARM kind N [MS]: the kind, or FAULT_NONE when malformed. */
static enum fault_kind fault_parse_arm(const request *r, long *at, long *ms)
{
    size_t k;

    for (k = 1; k < sizeof fault_names / sizeof fault_names[0]; k++)
        if (r->argc >= 4 && eq_nocase(r->argv[2], r->len[2], fault_names[k]))
            break;
    if (k == sizeof fault_names / sizeof fault_names[0])
        return FAULT_NONE;
    *at = arg_long(r, 3);
    *ms = k == FAULT_DELAY ? arg_long(r, 4) : 0;
    if (*at < 0 || *ms < 0 || r->argc != (k == FAULT_DELAY ? 5 : 4))
        return FAULT_NONE;
    return (enum fault_kind)k;
}

static void fault_arm(enum fault_kind k, long at, long ms)
{
    pthread_mutex_lock(&fault_lock);
    fault_kind_armed = k;
    fault_at = at;
    fault_delay_ms = ms;
    fault_count = fault_fired = 0;
    pthread_mutex_unlock(&fault_lock);
}

static long fault_read(const long *v)
{
    long n;

    pthread_mutex_lock(&fault_lock);
    n = *v;
    pthread_mutex_unlock(&fault_lock);
    return n;
}

static void fault_command(conn *c, const request *r)
{
    char num[40];
    long at = 0, ms = 0;
    enum fault_kind k;

    c->control = 1;
    if (r->argc == 2 && eq_nocase(r->argv[1], r->len[1], "clear")) {
        fault_arm(FAULT_NONE, 0, 0);
    } else if (r->argc == 2
               && (eq_nocase(r->argv[1], r->len[1], "count")
                   || eq_nocase(r->argv[1], r->len[1], "fired"))) {
        snprintf(num, sizeof num, ":%ld\r\n",
                 fault_read(r->argv[1][0] == 'c' || r->argv[1][0] == 'C'
                                ? &fault_count
                                : &fault_fired));
        local_reply(c, num, strlen(num), 0);
        return;
    } else if (r->argc >= 2 && eq_nocase(r->argv[1], r->len[1], "arm")
               && (k = fault_parse_arm(r, &at, &ms)) != FAULT_NONE) {
        fault_arm(k, at, ms);
    } else {
        local_error(c, "ERR usage: TSLOCKFAULT ARM drop-before|drop-after|"
                       "half|half-close N | ARM delay N MS | CLEAR | COUNT "
                       "| FIRED");
        return;
    }
    local_reply(c, "+OK\r\n", 5, 0);
}

/* ------------------------------------------------------------ quirks */

#define QUIRK_MAX_REFUSED 8

/* The managed-service quirks (see the header), under quirk_lock. */
static pthread_mutex_t quirk_lock = PTHREAD_MUTEX_INITIALIZER;
static char quirk_refused[QUIRK_MAX_REFUSED][32];
static int quirk_deaf;

static int quirk_refuses(const char *name, size_t n)
{
    int i, hit = 0;

    pthread_mutex_lock(&quirk_lock);
    for (i = 0; i < QUIRK_MAX_REFUSED && !hit; i++)
        hit =
            quirk_refused[i][0] != '\0' && eq_nocase(name, n, quirk_refused[i]);
    pthread_mutex_unlock(&quirk_lock);
    return hit;
}

static int quirk_is_deaf(void)
{
    int deaf;

    pthread_mutex_lock(&quirk_lock);
    deaf = quirk_deaf;
    pthread_mutex_unlock(&quirk_lock);
    return deaf;
}

static void quirk_command(conn *c, const request *r)
{
    int i, ok = 1;

    c->control = 1;
    pthread_mutex_lock(&quirk_lock);
    if (r->argc == 2 && eq_nocase(r->argv[1], r->len[1], "clear")) {
        memset(quirk_refused, 0, sizeof quirk_refused);
        quirk_deaf = 0;
    } else if (r->argc == 2 && eq_nocase(r->argv[1], r->len[1], "deaf")) {
        quirk_deaf = 1;
    } else if (r->argc == 3 && eq_nocase(r->argv[1], r->len[1], "refuse")
               && r->len[2] > 0 && r->len[2] < sizeof quirk_refused[0]) {
        for (i = 0; i < QUIRK_MAX_REFUSED && quirk_refused[i][0]; i++)
            ;
        if ((ok = i < QUIRK_MAX_REFUSED)) {
            memcpy(quirk_refused[i], r->argv[2], r->len[2]);
            quirk_refused[i][r->len[2]] = '\0';
        }
    } else {
        ok = 0;
    }
    pthread_mutex_unlock(&quirk_lock);
    if (ok)
        local_reply(c, "+OK\r\n", 5, 0);
    else
        local_error(c, "ERR usage: TSLOCKQUIRK REFUSE NAME | DEAF | CLEAR");
}

/* Redis 7's refusal of a command it does not have, with its arguments. */
static void quirk_refuse(conn *c, const request *r)
{
    bytes m = {0};
    int i;

    bytes_fmt(&m, "ERR unknown command '%.*s', with args beginning with: ",
              (int)r->len[0], r->argv[0]);
    for (i = 1; i < r->argc && m.len < 120; i++)
        bytes_fmt(&m, "'%.*s' ", (int)(r->len[i] > 40 ? 40 : r->len[i]),
                  r->argv[i]);
    bytes_add(&m, "", 1);
    refuse(c, m.p);
    bytes_free(&m);
}

/* Dispatches one parsed command, counting it and marking its fault. */
static void dispatch_counted(conn *c, const request *r)
{
    pending *last = c->tail;
    enum fault_kind k = FAULT_NONE;
    long delay_ms = 0;

    if (eq_nocase(r->argv[0], r->len[0], "tslockfault")) {
        fault_command(c, r);
        return;
    }
    if (eq_nocase(r->argv[0], r->len[0], "tslockquirk")) {
        quirk_command(c, r);
        return;
    }
    if (!c->control && quirk_refuses(r->argv[0], r->len[0])) {
        quirk_refuse(c, r);
        return;
    }
    if (!c->control)
        k = fault_tick(&delay_ms);
    if (k == FAULT_DROP_BEFORE) {
        /* Like 2.0's QUIT: close once the earlier replies went out. */
        local_reply(c, "", 0, 1);
        c->quitting = 1;
        return;
    }
    (modern ? dispatch_modern : dispatch)(c, r);
    /* Dispatching only books replies, so a new tail is this command's. */
    if (k != FAULT_NONE && c->tail != NULL && c->tail != last) {
        c->tail->fault = k;
        c->tail->delay_ms = delay_ms;
        if (k == FAULT_DROP_AFTER)
            c->quitting = 1;
    }
}

/* The reply to p has just been appended to out from byte `from` on. */
static void fault_strike(conn *c, const pending *p, size_t from)
{
    switch (p->fault) {
    case FAULT_DROP_AFTER:
        c->out.len = from;
        c->quitting = 2;
        break;
    case FAULT_DELAY:
        c->hold = 1;
        c->hold_len = from;
        c->hold_until = mono_ms() + p->delay_ms;
        break;
    case FAULT_HALF:
    case FAULT_HALF_CLOSE:
        c->hold = 1;
        c->hold_len = from + (c->out.len - from) / 2;
        c->hold_until = INT64_MAX;
        c->hold_close = p->fault == FAULT_HALF_CLOSE;
        break;
    default:
        break;
    }
}

/* How much of out may be sent now; ends a hold whose time has come. */
static size_t out_sendable(conn *c)
{
    if (c->hold && c->hold_until != INT64_MAX && mono_ms() >= c->hold_until)
        c->hold = 0;
    if (!c->hold)
        return c->out.len;
    return c->hold_len < c->out.len ? c->hold_len : c->out.len;
}

/* ------------------------------------------------------------ replies */

/* The old wording of a modern error message, without '-' and CRLF. */
static void error_text(bytes *t, const char *s, size_t n)
{
    const char *q;

    if (has_prefix(s, n, "WRONGTYPE ")) {
        bytes_str(t, "ERR ");
        bytes_add(t, s + 10, n - 10);
    } else if (has_prefix(s, n, "NOAUTH")) {
        bytes_str(t, "ERR operation not permitted");
    } else if (has_prefix(s, n, "WRONGPASS")) {
        bytes_str(t, "ERR invalid password");
    } else if (has_prefix(s, n, "ERR unknown command '")
               && (q = memchr(s + 21, '\'', n - 21)) != NULL) {
        /* Modern servers add ", with args beginning with: ...". */
        bytes_add(t, s, (size_t)(q + 1 - s));
    } else if (has_prefix(s, n, "ERR Can't execute '")) {
        bytes_str(t, "ERR only (P)SUBSCRIBE / (P)UNSUBSCRIBE / QUIT allowed "
                     "in this context");
    } else if (has_prefix(s, n, "ERR DB index is out of range")) {
        bytes_str(t, "ERR invalid DB index");
    } else if (has_prefix(s, n, "ERR invalid expire time in '")) {
        bytes_str(t, "ERR invalid expire time in SETEX");
    } else {
        bytes_add(t, s, n);
    }
}

static void put_error(bytes *o, const char *s, size_t n)
{
    bytes t = {0};

    if (modern) {
        resp_line(o, '-', s, n);
        return;
    }
    error_text(&t, s, n);
    resp_line(o, '-', t.p ? t.p : "", t.len);
    bytes_free(&t);
}

static void put_reply(bytes *o, const redisReply *r)
{
    size_t i;

    switch (r->type) {
    case REDIS_REPLY_STATUS:
        resp_line(o, '+', r->str, r->len);
        break;
    case REDIS_REPLY_ERROR:
        put_error(o, r->str, r->len);
        break;
    case REDIS_REPLY_INTEGER:
        bytes_fmt(o, ":%lld\r\n", r->integer);
        break;
    case REDIS_REPLY_STRING:
        resp_bulk(o, r->str, r->len);
        break;
    case REDIS_REPLY_ARRAY:
        bytes_fmt(o, "*%zu\r\n", (size_t)r->elements);
        for (i = 0; i < r->elements; i++)
            put_reply(o, r->element[i]);
        break;
    default: /* REDIS_REPLY_NIL, marked by nil_object() */
        bytes_str(o, r->integer ? "*-1\r\n" : "$-1\r\n");
        break;
    }
}

static int is_status(const redisReply *r, const char *s)
{
    return r->type == REDIS_REPLY_STATUS && strcmp(r->str, s) == 0;
}

/* INFO as the old server laid it out: its version; before 2.6 no section
 * headers or blank lines; keyspace lines without the 2.8+ fields. */
static void put_info(bytes *o, const char *s, size_t n)
{
    bytes t = {0};
    size_t at = 0;

    while (at < n) {
        const char *line = s + at, *nl = memchr(line, '\n', n - at);
        size_t len = nl ? (size_t)(nl - line) : n - at;
        const char *ex;
        at += len + (nl != NULL);
        if (len && line[len - 1] == '\r')
            len--;
        if (emu < V(2, 6, 0) && (len == 0 || line[0] == '#'))
            continue;
        if (has_prefix(line, len, "redis_version:")) {
            bytes_fmt(&t, "redis_version:%s\r\n", emu_str);
            continue;
        }
        if (has_prefix(line, len, "db")
            && (ex = memmem(line, len, ",expires=", 9)) != NULL) {
            const char *e = ex + 9;
            while (e < line + len && isdigit((unsigned char)*e))
                e++;
            len = (size_t)(e - line);
        }
        bytes_add(&t, line, len);
        bytes_add(&t, "\r\n", 2);
    }
    resp_bulk(o, t.p ? t.p : "", t.len);
    bytes_free(&t);
}

static void put_auth(bytes *o, const redisReply *r)
{
    if (r->type == REDIS_REPLY_ERROR
        && (strstr(r->str, "without any password configured")
            || strstr(r->str, "no password is set"))) {
        if (emu < V(2, 4, 0))
            bytes_str(o, "+OK\r\n");
        else
            resp_error(o, "ERR Client sent AUTH, but no password is set");
        return;
    }
    put_reply(o, r);
}

/* Modern: "<error> script: <sha>, on @user_script:<line>."  2.6: "ERR
 * Error running script (call to f_<sha>): <error>". */
static int script_error_cut(const char *s, size_t n, size_t *cut)
{
    const char *p = NULL, *q;
    size_t i;

    for (q = s; (q = memmem(q, n - (size_t)(q - s), " script: ", 9)); q++)
        p = q;
    if (p == NULL || (size_t)(s + n - p) < 9 + 40 + 18)
        return 0;
    for (i = 9; i < 49; i++)
        if (!isxdigit((unsigned char)p[i]))
            return 0;
    if (!has_prefix(p + 49, (size_t)(s + n - p - 49), ", on @user_script:"))
        return 0;
    *cut = (size_t)(p - s);
    return 1;
}

static void put_script_error(bytes *o, const redisReply *r, const char *sha)
{
    bytes inner = {0};
    size_t cut, skip = 0;

    if (!script_error_cut(r->str, r->len, &cut)) {
        put_reply(o, r);
        return;
    }
    error_text(&inner, r->str, cut);
    /* Lua runtime errors ("user_script:1: ...") carried no code on 2.6. */
    if (has_prefix(inner.p, inner.len, "ERR user_script:"))
        skip = 4;
    bytes_fmt(o, "-ERR Error running script (call to f_%s): %.*s\r\n", sha,
              (int)(inner.len - skip), inner.p + skip);
    bytes_free(&inner);
}

static void put_xform(conn *c, const xform *xf, const redisReply *r);

static void put_exec(conn *c, const redisReply *r)
{
    size_t i;
    xform plain = {XF_PLAIN, ""};

    if (r->type != REDIS_REPLY_ARRAY) {
        put_reply(&c->out, r);
        return;
    }
    bytes_fmt(&c->out, "*%zu\r\n", (size_t)r->elements);
    for (i = 0; i < r->elements; i++)
        put_xform(c, i < c->nqueued ? &c->queued[i] : &plain, r->element[i]);
}

static void put_xform(conn *c, const xform *xf, const redisReply *r)
{
    int is_err = r->type == REDIS_REPLY_ERROR;

    switch (xf->kind) {
    case XF_INFO:
        if (r->type == REDIS_REPLY_STRING)
            put_info(&c->out, r->str, r->len);
        else
            put_reply(&c->out, r);
        break;
    case XF_TTL:
        if (r->type == REDIS_REPLY_INTEGER && r->integer == -2)
            bytes_str(&c->out, ":-1\r\n");
        else
            put_reply(&c->out, r);
        break;
    case XF_AUTH:
        put_auth(&c->out, r);
        break;
    case XF_EXEC:
        put_exec(c, r);
        break;
    case XF_EXECABORT:
        resp_error(&c->out,
                   "EXECABORT Transaction discarded because of previous "
                   "errors.");
        break;
    case XF_SCRIPT:
        if (is_err)
            put_script_error(&c->out, r, xf->sha);
        else
            put_reply(&c->out, r);
        break;
    case XF_SCRIPT_LOAD:
        if (r->type == REDIS_REPLY_STRING)
            resp_bulk(&c->out, xf->sha, 40);
        else
            put_reply(&c->out, r);
        break;
    case XF_MONITOR:
        put_monitor_line(&c->out, r);
        break;
    default:
        put_reply(&c->out, r);
        break;
    }
}

/* A published message arrives whenever it likes once subscribed. */
static int is_push(const conn *c, const redisReply *r)
{
    const redisReply *k;

    if (c->nchan + c->npat == 0 || r->type != REDIS_REPLY_ARRAY
        || r->elements < 3)
        return 0;
    k = r->element[0];
    return k->type == REDIS_REPLY_STRING
           && ((r->elements == 3 && strcmp(k->str, "message") == 0)
               || (r->elements == 4 && strcmp(k->str, "pmessage") == 0));
}

/* Every (un)subscribe reply carries the total count; telling channels from
 * patterns lets UNSUBSCRIBE without arguments know how many replies come. */
static void count_subscriptions(conn *c, const redisReply *r)
{
    const char *kind;
    long long total;

    if (r->type != REDIS_REPLY_ARRAY || r->elements != 3
        || r->element[0]->type != REDIS_REPLY_STRING
        || r->element[2]->type != REDIS_REPLY_INTEGER)
        return;
    kind = r->element[0]->str;
    total = r->element[2]->integer;
    if (strcmp(kind, "subscribe") == 0 || strcmp(kind, "unsubscribe") == 0)
        c->nchan = (int)(total - c->npat);
    else
        c->npat = (int)(total - c->nchan);
    if (c->nchan < 0)
        c->nchan = 0;
    if (c->npat < 0)
        c->npat = 0;
}

static void on_reply(conn *c, const redisReply *r)
{
    pending *p = c->head;
    size_t from;

    if (is_push(c, r) && quirk_is_deaf())
        return; /* lost on the way (TSLOCKQUIRK DEAF) */
    if (p == NULL || p->local || is_push(c, r)) {
        put_reply(&c->out, r);
        return;
    }
    if (p->expect == EXPECT_ALL_CHANNELS)
        p->expect = c->nchan > 0 ? c->nchan : 1;
    else if (p->expect == EXPECT_ALL_PATTERNS)
        p->expect = c->npat > 0 ? c->npat : 1;
    if (p->xf.kind == XF_SUBSCRIBE)
        count_subscriptions(c, r);
    from = c->out.len;
    if (p->queued && is_status(r, "QUEUED")) {
        queue_push(c, &p->xf);
        put_reply(&c->out, r);
    } else {
        put_xform(c, &p->xf, r);
    }
    if (p->fault != FAULT_NONE && p->expect != EXPECT_FOREVER && p->expect <= 1)
        fault_strike(c, p, from);
    if (p->xf.kind == XF_MULTI && is_status(r, "OK"))
        queue_clear(c);
    if (p->xf.kind == XF_EXEC || p->xf.kind == XF_DISCARD
        || p->xf.kind == XF_EXECABORT)
        queue_clear(c);
    if (p->expect != EXPECT_FOREVER && --p->expect <= 0)
        pending_pop(c);
}

/* Local replies go out once every reply booked before them is out. */
static void emit_locals(conn *c)
{
    while (c->head && c->head->local) {
        size_t from = c->out.len;
        bytes_add(&c->out, c->head->reply.p, c->head->reply.len);
        if (c->head->close_after)
            c->quitting = 2;
        fault_strike(c, c->head, from);
        pending_pop(c);
    }
}

/* ------------------------------------------------------------ reading */

/* hiredis gives $-1 and *-1 the same NIL reply; EXEC's *-1 must survive,
 * so the NIL of an array is marked in its unused integer field. */
static redisReplyObjectFunctions reader_fns;
static void *(*default_nil)(const redisReadTask *);

static void *nil_object(const redisReadTask *task)
{
    redisReply *r = default_nil(task);

    if (r && task->type == REDIS_REPLY_ARRAY)
        r->integer = 1;
    return r;
}

static void reader_fns_init(void)
{
    redisReader *rd = redisReaderCreate();

    reader_fns = *rd->fn;
    default_nil = reader_fns.createNil;
    reader_fns.createNil = nil_object;
    redisReaderFree(rd);
}

/* Reads "<prefix><number>\r\n" at s; returns bytes used, 0 if incomplete,
 * -1 if malformed. */
static long read_number_line(const char *s, size_t n, long long *v)
{
    const char *cr = memchr(s, '\r', n);
    char *end;

    if (cr == NULL)
        return n > 64 ? -1 : 0;
    if ((size_t)(cr - s) + 1 >= n)
        return 0;
    if (cr[1] != '\n')
        return -1;
    errno = 0;
    *v = strtoll(s + 1, &end, 10);
    if (end != cr || cr == s + 1 || errno)
        return -1;
    return (long)(cr - s) + 2;
}

static int protocol_error(conn *c, const char *what)
{
    bytes msg = {0};

    bytes_fmt(&msg, "-ERR Protocol error: %s\r\n", what);
    local_reply(c, msg.p, msg.len, 1);
    bytes_free(&msg);
    c->quitting = 1;
    return -1;
}

/* One request in RESP multibulk form, as Redis reads it. */
static int parse_multibulk(conn *c, const char *s, size_t n, size_t *used)
{
    long long count, len;
    long k = read_number_line(s, n, &count), i;
    size_t at;

    if (k <= 0)
        return k == 0 ? 0 : protocol_error(c, "invalid multibulk length");
    if (count > MAX_MULTIBULK)
        return protocol_error(c, "invalid multibulk length");
    at = (size_t)k;
    c->req.argc = 0;
    for (i = 0; i < count; i++) {
        if (at >= n)
            return 0;
        if (s[at] != '$') {
            char what[64];
            snprintf(what, sizeof what, "expected '$', got '%c'", s[at]);
            return protocol_error(c, what);
        }
        k = read_number_line(s + at, n - at, &len);
        if (k < 0 || (k > 0 && (len < 0 || len > MAX_BULK)))
            return protocol_error(c, "invalid bulk length");
        if (k == 0 || n - at - (size_t)k < (size_t)len + 2)
            return 0;
        request_add(&c->req, s + at + k, (size_t)len);
        at += (size_t)k + (size_t)len + 2;
    }
    *used = at;
    return 1;
}

/* One inline request ("PING\r\n"): words separated by blanks. */
static int parse_inline(conn *c, const char *s, size_t n, size_t *used)
{
    const char *nl = memchr(s, '\n', n);
    size_t len, i = 0;

    if (nl == NULL)
        return n > MAX_INLINE ? protocol_error(c, "too big inline request") : 0;
    *used = (size_t)(nl - s) + 1;
    len = (size_t)(nl - s);
    if (len && s[len - 1] == '\r')
        len--;
    c->req.argc = 0;
    while (i < len) {
        size_t start;
        while (i < len && (s[i] == ' ' || s[i] == '\t'))
            i++;
        start = i;
        while (i < len && s[i] != ' ' && s[i] != '\t')
            i++;
        if (i > start)
            request_add(&c->req, s + start, i - start);
    }
    return 1;
}

static void process_input(conn *c)
{
    size_t at = 0;

    while (!c->quitting && at < c->in.len) {
        const char *s = c->in.p + at;
        size_t n = c->in.len - at, used = 0;
        int rc = s[0] == '*' ? parse_multibulk(c, s, n, &used)
                             : parse_inline(c, s, n, &used);
        if (rc <= 0)
            break;
        at += used;
        if (c->req.argc > 0)
            dispatch_counted(c, &c->req);
    }
    bytes_drop(&c->in, c->quitting ? c->in.len : at);
}

static int client_read(conn *c)
{
    ssize_t n;

    bytes_reserve(&c->in, 16384);
    n = read(c->fd, c->in.p + c->in.len, c->in.cap - c->in.len);
    if (n == 0)
        return -1;
    if (n < 0)
        return errno == EAGAIN || errno == EINTR ? 0 : -1;
    c->in.len += (size_t)n;
    process_input(c);
    return 0;
}

/* Returns -1 to close: a write failed, or a half-close fault is done. */
static int client_write(conn *c)
{
    size_t len = out_sendable(c);
    ssize_t n = len ? send(c->fd, c->out.p, len, MSG_NOSIGNAL) : 0;

    if (n < 0)
        return errno == EAGAIN || errno == EINTR ? 0 : -1;
    bytes_drop(&c->out, (size_t)n);
    if (c->hold)
        c->hold_len -= (size_t)n;
    return c->hold && c->hold_close && c->hold_len == 0 ? -1 : 0;
}

static int upstream_read(conn *c)
{
    void *r;

    if (redisBufferRead(c->up) != REDIS_OK)
        return -1;
    for (;;) {
        if (redisGetReplyFromReader(c->up, &r) != REDIS_OK)
            return -1;
        if (r == NULL)
            return 0;
        emit_locals(c);
        on_reply(c, r);
        freeReplyObject(r);
    }
}

static int upstream_write(conn *c)
{
    int done = 0;

    if (redisBufferWrite(c->up, &done) != REDIS_OK)
        return -1;
    c->up_wpending = !done;
    return 0;
}

/* ------------------------------------------------------------ threads */

static redisContext *upstream_connect(void)
{
    struct timeval tv = {5, 0};
    redisContext *u;

    if (upstream_path)
        u = redisConnectUnixWithTimeout(upstream_path, tv);
    else
        u = redisConnectWithTimeout("127.0.0.1", upstream_port, tv);
    if (u == NULL || u->err) {
        fprintf(stderr, "oldredis: upstream: %s\n",
                u ? u->errstr : "out of memory");
        redisFree(u);
        return NULL;
    }
    u->reader->fn = &reader_fns;
    /* Connected blocking; from here on driven by poll() like the client. */
    fcntl(u->fd, F_SETFL, fcntl(u->fd, F_GETFL) | O_NONBLOCK);
    u->flags &= ~REDIS_BLOCK;
    return u;
}

/* Milliseconds until a delay fault lets go, or -1 for no limit. */
static int hold_timeout(const conn *c)
{
    int64_t left;

    if (!c->hold || c->hold_until == INT64_MAX)
        return -1;
    left = c->hold_until - mono_ms();
    return left <= 0 ? 0 : left > INT_MAX ? INT_MAX : (int)left;
}

static int conn_poll(conn *c, struct pollfd p[3])
{
    int want_read = !c->quitting && c->out.len < OUT_HIGH_WATER;
    int want_write = out_sendable(c) > 0;

    p[0].fd = c->fd;
    p[0].events =
        (short)((want_read ? POLLIN : 0) | (want_write ? POLLOUT : 0));
    p[1].fd = c->up_dead ? -1 : c->up->fd;
    p[1].events = (short)(POLLIN | (c->up_wpending ? POLLOUT : 0));
    p[2].fd = stop_fd;
    p[2].events = POLLIN;
    p[0].revents = p[1].revents = p[2].revents = 0;
    while (poll(p, 3, hold_timeout(c)) < 0)
        if (errno != EINTR)
            return -1;
    return p[2].revents ? -1 : 0;
}

static void conn_loop(conn *c)
{
    struct pollfd p[3];

    while (conn_poll(c, p) == 0) {
        if (p[0].revents & (POLLERR | POLLNVAL))
            return;
        /* Hung up with nothing more to read: nobody is left to answer. */
        if ((p[0].revents & POLLHUP) && !(p[0].revents & POLLIN))
            return;
        if ((p[0].revents & (POLLIN | POLLHUP)) && !c->quitting
            && client_read(c) < 0)
            return;
        if ((p[1].revents & (POLLIN | POLLHUP | POLLERR))
            && upstream_read(c) < 0) {
            /* The server went away: send what is ready, then hang up. */
            c->up_dead = 1;
            c->quitting = 2;
        }
        if (!c->up_dead && c->up_wpending && upstream_write(c) < 0)
            return;
        emit_locals(c);
        if (c->out.len && client_write(c) < 0)
            return;
        if (c->quitting == 2 && c->out.len == 0)
            return;
        /* A half-close fault whose bytes are all out ends here too. */
        if (c->hold && c->hold_close && c->hold_len == 0)
            return;
    }
}

static void conn_free(conn *c)
{
    while (c->head)
        pending_pop(c);
    if (c->up)
        redisFree(c->up);
    close(c->fd);
    bytes_free(&c->in);
    bytes_free(&c->out);
    request_free(&c->req);
    request_free(&c->cmd);
    free(c->queued);
    free(c);
}

typedef struct worker {
    struct worker *next;
    pthread_t tid;
    int done; /* set by the thread as it ends, under workers_lock */
    conn *c;
} worker;

static pthread_mutex_t workers_lock = PTHREAD_MUTEX_INITIALIZER;

static int worker_done(worker *w)
{
    int done;

    pthread_mutex_lock(&workers_lock);
    done = w->done;
    pthread_mutex_unlock(&workers_lock);
    return done;
}

static void *worker_main(void *arg)
{
    worker *w = arg;

    w->c->up = upstream_connect();
    if (w->c->up)
        conn_loop(w->c);
    conn_free(w->c);
    pthread_mutex_lock(&workers_lock);
    w->done = 1;
    pthread_mutex_unlock(&workers_lock);
    return NULL;
}

static worker *reap(worker *list, int all)
{
    worker **pp = &list;

    while (*pp) {
        worker *w = *pp;
        if (all || worker_done(w)) {
            pthread_join(w->tid, NULL);
            *pp = w->next;
            free(w);
        } else {
            pp = &w->next;
        }
    }
    return list;
}

static worker *start_worker(worker *list, int fd)
{
    worker *w = xrealloc(NULL, sizeof *w);

    memset(w, 0, sizeof *w);
    w->c = xrealloc(NULL, sizeof *w->c);
    memset(w->c, 0, sizeof *w->c);
    w->c->fd = fd;
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    if (pthread_create(&w->tid, NULL, worker_main, w) != 0) {
        close(fd);
        free(w->c);
        free(w);
        return list;
    }
    w->next = list;
    return w;
}

static void serve(int lfd)
{
    worker *workers = NULL;
    struct pollfd p[2] = {{lfd, POLLIN, 0}, {stop_fd, POLLIN, 0}};

    for (;;) {
        int fd;
        if (poll(p, 2, -1) < 0 && errno != EINTR)
            break;
        if (p[1].revents)
            break;
        if (!(p[0].revents & POLLIN))
            continue;
        fd = accept(lfd, NULL, NULL);
        if (fd < 0) {
            /* Out of descriptors: the client waits in the backlog until a
             * connection closes, instead of this loop spinning on it. */
            if (errno == EMFILE || errno == ENFILE) {
                struct timespec pause = {0, 10000000};
                nanosleep(&pause, NULL);
            }
            continue;
        }
        fcntl(fd, F_SETFD, FD_CLOEXEC);
        workers = reap(start_worker(workers, fd), 0);
    }
    reap(workers, 1);
}

/* ------------------------------------------------------------ startup */

static void on_stop_signal(int sig)
{
    int saved = errno;
    ssize_t n = write(stop_wfd, "x", 1);

    (void)sig;
    (void)n;
    errno = saved;
}

static int listen_unix(const char *path)
{
    struct sockaddr_un sa;
    struct stat st;
    int fd;

    if (strlen(path) >= sizeof sa.sun_path) {
        fprintf(stderr, "oldredis: socket path too long: %s\n", path);
        return -1;
    }
    /* A socket left by a killed run would make bind() fail. */
    if (stat(path, &st) == 0 && S_ISSOCK(st.st_mode))
        unlink(path);
    memset(&sa, 0, sizeof sa);
    sa.sun_family = AF_UNIX;
    strcpy(sa.sun_path, path);
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0
        || listen(fd, 128) < 0) {
        fprintf(stderr, "oldredis: listen %s: %s\n", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    return fd;
}

static int listen_tcp(int port, int *bound)
{
    struct sockaddr_in sa;
    socklen_t sl = sizeof sa;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;

    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one)
        || bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0
        || listen(fd, 128) < 0
        || getsockname(fd, (struct sockaddr *)&sa, &sl) < 0) {
        fprintf(stderr, "oldredis: listen 127.0.0.1:%d: %s\n", port,
                strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    *bound = ntohs(sa.sin_port);
    return fd;
}

static int parse_version(const char *s)
{
    int a = 0, b = 0, c = 0, n = sscanf(s, "%d.%d.%d", &a, &b, &c);
    int v = V(a, b, c);

    if (strcmp(s, "modern") == 0) {
        modern = 1;
        snprintf(emu_str, sizeof emu_str, "modern");
        return V(99, 0, 0);
    }
    if (n < 2 || strlen(s) >= sizeof emu_str || v < V(2, 0, 0)
        || v >= V(2, 7, 0))
        return -1;
    snprintf(emu_str, sizeof emu_str, "%d.%d.%d", a, b, c);
    return v;
}

static void usage(void)
{
    fputs("usage: oldredis --emulate VERSION (--listen PATH | --listen-port N)"
          "\n                (--upstream PATH | --upstream-port N)"
          " [--ready-fd N] [--exact-expiry]\n"
          "  VERSION: 2.0.0 ... 2.6.x (e.g. 2.0.5 2.2.15 2.4.18 2.6.0 2.6.11)\n"
          "           or modern (pass everything through)\n"
          "  --listen-port 0 picks a free port and writes \"ready PORT\"\n",
          stderr);
    exit(2);
}

typedef struct options {
    const char *listen_path;
    int listen_port; /* -1: none */
    int ready_fd;    /* -1: none */
} options;

static void parse_args(int argc, char **argv, options *o)
{
    int i;

    o->listen_path = NULL;
    o->listen_port = o->ready_fd = -1;
    emu = -1;
    for (i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--exact-expiry") == 0) {
            exact_expiry = 1;
            continue;
        }
        if (v == NULL)
            usage();
        i++;
        if (strcmp(a, "--emulate") == 0)
            emu = parse_version(v);
        else if (strcmp(a, "--listen") == 0)
            o->listen_path = v;
        else if (strcmp(a, "--listen-port") == 0)
            o->listen_port = atoi(v);
        else if (strcmp(a, "--upstream") == 0)
            upstream_path = v;
        else if (strcmp(a, "--upstream-port") == 0)
            upstream_port = atoi(v);
        else if (strcmp(a, "--ready-fd") == 0)
            o->ready_fd = atoi(v);
        else
            usage();
    }
    if (emu < 0 || (o->listen_path == NULL) == (o->listen_port < 0)
        || (upstream_path == NULL) == (upstream_port <= 0))
        usage();
}

static int setup_signals(void)
{
    struct sigaction sa;
    int p[2];

    if (pipe(p) < 0)
        return -1;
    fcntl(p[0], F_SETFD, FD_CLOEXEC);
    fcntl(p[1], F_SETFD, FD_CLOEXEC);
    fcntl(p[1], F_SETFL, O_NONBLOCK);
    stop_fd = p[0];
    stop_wfd = p[1];
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    return 0;
}

/*
 * Two descriptors per client (its own and the upstream connection): a
 * benchmark of hundreds of waiters needs more than the usual soft limit
 * of 1024, so take what the hard limit allows.
 */
static void raise_fd_limit(void)
{
    struct rlimit rl;

    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
}

int main(int argc, char **argv)
{
    options o;
    int lfd, port = 0;

    parse_args(argc, argv, &o);
    raise_fd_limit();
    if (setup_signals() < 0)
        return 1;
    reader_fns_init();
    if (emu >= V(2, 6, 0) && !modern)
        prelude_build();
    lfd = o.listen_path ? listen_unix(o.listen_path)
                        : listen_tcp(o.listen_port, &port);
    if (lfd < 0)
        return 1;
    if (o.ready_fd >= 0) {
        if (o.listen_path == NULL && o.listen_port == 0)
            dprintf(o.ready_fd, "ready %d\n", port);
        else
            dprintf(o.ready_fd, "ready\n");
        close(o.ready_fd);
    }
    serve(lfd);
    close(lfd);
    if (o.listen_path)
        unlink(o.listen_path);
    close(stop_fd);
    close(stop_wfd);
    bytes_free(&prelude);
    scripts_free();
    return 0;
}

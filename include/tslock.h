/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tslock.h - mutual exclusion over Redis, in every dialect deployed.
 *
 * The one public header of libtslock.  Concepts, ownership and thread rules
 * are stated once in tslock(7); each call has its own page in section 3.
 */
#ifndef TSLOCK_H
#define TSLOCK_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ===================================================== export macro ==== */

#if defined(TSLOCK_BUILDING) && defined(__GNUC__)
#define TSLOCK_EXTERN __attribute__((visibility("default")))
#else
#define TSLOCK_EXTERN
#endif

/* ========================================================== version ==== */

#define TSLOCK_VERSION_MAJOR  1
#define TSLOCK_VERSION_MINOR  2
#define TSLOCK_VERSION_PATCH  0
#define TSLOCK_VERSION_STRING "1.2.0"

/*
 * tslock_version - the version of the library actually linked.
 *
 * Returns a static string such as "1.0.0", which may differ from
 * TSLOCK_VERSION_STRING when the program was built against older headers.
 * Ownership: static, never freed.  Threads: safe from any thread.
 */
TSLOCK_EXTERN const char *tslock_version(void);

/* ======================================================= error codes ==== */

/*
 * Every fallible call returns TSLOCK_OK (0) or one of these negative codes.
 * Numbers never change once released; a retired code is never reused.
 * "Not a failure" marks expected outcomes of a lock operation.
 *
 * X(NAME, number, message)
 */
#define TSLOCK_ERRNO_MAP(X)                                                    \
    X(OK, 0, "success")                                                        \
    X(EBUSY, -1, "lock is held by another owner (not a failure)")              \
    X(ELOST, -2,                                                               \
      "lock was lost: lease ran out or another owner took it "                 \
      "(not a failure)")                                                       \
    X(EINVAL, -3, "invalid argument")                                          \
    X(ENOMEM, -4, "out of memory")                                             \
    X(EIO, -5, "connection to the server failed")                              \
    X(ETIMEDOUT, -6, "connection or command timed out")                        \
    X(EPROTO, -7, "server sent a reply of an unexpected shape")                \
    X(ESERVER, -8, "server replied with an error")                             \
    X(EWRONGTYPE, -9, "lock key holds a value of the wrong type")              \
    X(EUNREADABLE, -10,                                                        \
      "lock is held by a value this scheme cannot read "                       \
      "(not a failure; never taken over)")                                     \
    X(ECANCELED, -11, "wait was canceled")                                     \
    X(EAUTH, -12, "authentication failed")                                     \
    X(EUNSUPPORTED, -13, "not supported by this server")                       \
    X(ESTATE, -14, "operation does not fit the lock's state")                  \
    X(EHOOK, -15, "operation stopped by the step hook")                        \
    X(ECLOCK, -16, "clock failed or gave an implausible time")                 \
    X(EREPLICAS, -17, "too few replicas acknowledged the lock")                \
    X(ENOQUORUM, -18, "too few servers could be reached for a quorum")         \
    X(ECLUSTER, -19,                                                           \
      "Redis Cluster did not serve the key's slot (redirections, "             \
      "TRYAGAIN, CLUSTERDOWN or keys in different slots)")                     \
    X(ENOPERM, -20,                                                            \
      "the server's access rules (ACL) deny this user a command, key or "      \
      "channel the lock needs")                                                \
    X(ETLS, -21,                                                               \
      "TLS failed: the handshake, the server's certificate or this "           \
      "client's certificate and key")

#define TSLOCK_ERRNO_ENUM(name, num, msg) TSLOCK_##name = (num),
/* The error codes.  TSLOCK_OK is 0; all others are negative. */
typedef enum tslock_errno { TSLOCK_ERRNO_MAP(TSLOCK_ERRNO_ENUM) } tslock_errno;
#undef TSLOCK_ERRNO_ENUM

/*
 * tslock_strerror - the message for an error code.
 *
 * code: a value returned by any tslock call.  Unknown codes give
 * "unknown tslock error".
 * Ownership: static, never freed.  Threads: safe from any thread.
 */
TSLOCK_EXTERN const char *tslock_strerror(int code);

/*
 * tslock_errname - the symbolic name of an error code, e.g. "TSLOCK_EBUSY".
 *
 * Returns "TSLOCK_UNKNOWN" for codes outside the table.
 * Ownership: static, never freed.  Threads: safe from any thread.
 */
TSLOCK_EXTERN const char *tslock_errname(int code);

/* ============================================================ types ==== */

/* A connection to one Redis server with what it can do.  Opaque. */
typedef struct tslock_client tslock_client;

/* One named lock used through one client.  Opaque. */
typedef struct tslock_lock tslock_lock;

/* A connection made by the caller with hiredis; never freed by tslock. */
struct redisContext;

/* How a lock is represented and taken. */
typedef enum tslock_scheme {
    TSLOCK_SCHEME_AUTO = 0,      /* the best scheme the server allows */
    TSLOCK_SCHEME_TIMESTAMP = 1, /* classic SETNX/GETSET expiry stamp */
    TSLOCK_SCHEME_TOKEN = 2,     /* random token with a server TTL */
    TSLOCK_SCHEME_BRIDGE = 3     /* a stamp legacy clients read, with a
                                    safety TTL and an owner key (2.2+) */
} tslock_scheme;

/* The unit a timestamp-scheme stamp is written in. */
typedef enum tslock_unit {
    TSLOCK_UNIT_MS = 0,   /* milliseconds, expiry + 1 (Java RedisLock) */
    TSLOCK_UNIT_S = 1,    /* whole seconds, now + timeout + 1 (Redis docs) */
    TSLOCK_UNIT_FLOAT = 2 /* float seconds, no +1 (redis-py 2.x) */
} tslock_unit;

/* Which form of the expiry-checked DEL a timestamp release uses. */
typedef enum tslock_release_form {
    TSLOCK_RELEASE_BEST = 0,    /* Lua if present, else WATCH, else classic */
    TSLOCK_RELEASE_CLASSIC = 1, /* GET, compare, DEL: has a gap, any server */
    TSLOCK_RELEASE_WATCH = 2,   /* WATCH/GET/MULTI/DEL/EXEC, Redis >= 2.2 */
    TSLOCK_RELEASE_LUA = 3      /* one compare-and-delete script, >= 2.6 */
} tslock_release_form;

/* Server capabilities, learned once per connection by probing. */
#define TSLOCK_CAP_WATCH     0x01u /* WATCH/UNWATCH (2.2) */
#define TSLOCK_CAP_LUA       0x02u /* EVAL/EVALSHA, PEXPIRE (2.6.0) */
#define TSLOCK_CAP_TIME      0x04u /* TIME (2.6.0) */
#define TSLOCK_CAP_SET_NX_PX 0x08u /* SET key value NX PX ms (2.6.12) */
#define TSLOCK_CAP_TTL_KEEPS 0x10u /* a write keeps a key's TTL (2.1.3) */
#define TSLOCK_CAP_CLUSTER   0x20u /* a Redis Cluster node (3.0): routed */
#define TSLOCK_CAP_FUNCTIONS                                                   \
    0x40u /* scripts as Functions: an ACL refuses                              \
             EVAL (7.0; tslock_client_set_functions) */

/* The commands a lock operation sends, named to the step hook. */
/* clang-format off */
#define TSLOCK_STEP_MAP(X)                                                     \
    X(SETNX) X(GET) X(GETSET) X(DEL) X(WATCH) X(UNWATCH) X(MULTI) X(EXEC)      \
    X(EVALSHA) X(EVAL) X(SET) X(EXPIRE) X(PEXPIRE) X(PTTL) X(INCR) X(TTL)      \
    X(SETEX) X(PUBLISH) X(ZREM) X(ZCARD) X(ZADD) X(ZRANGE) X(ZRANGEBYSCORE)    \
    X(ZSCORE) X(WAIT) X(ZREMRANGEBYSCORE) X(ZCOUNT)
/* clang-format on */

#define TSLOCK_STEP_ENUM(name) TSLOCK_STEP_##name,
/* A step: one command about to be sent by a lock operation. */
typedef enum tslock_step { TSLOCK_STEP_MAP(TSLOCK_STEP_ENUM) } tslock_step;
#undef TSLOCK_STEP_ENUM

/*
 * A step hook, for tests: called before every command a lock operation
 * sends, with the client, the step, the lock key and the user data given
 * at installation.  It may block (for example until a test lets it go) and
 * may run other clients' operations.  Returning 0 lets the command go;
 * any other value stops the operation with TSLOCK_EHOOK before the command
 * is sent, leaving the server as it is (a simulated crash).
 */
typedef int (*tslock_step_hook)(tslock_client *client, tslock_step step,
                                const char *key, void *userdata);

/* The two clocks the library reads. */
typedef enum tslock_clock_id {
    TSLOCK_CLOCK_WALL = 0,     /* Unix time: stamps written to Redis */
    TSLOCK_CLOCK_MONOTONIC = 1 /* deadlines and waits */
} tslock_clock_id;

/* Where stamps take the wall-clock time from. */
typedef enum tslock_time_source {
    TSLOCK_TIME_LOCAL = 0, /* this host's clock, as legacy clients do */
    TSLOCK_TIME_SERVER = 1 /* this host's clock corrected by the server's
                              TIME, measured at connect (Redis >= 2.6) */
} tslock_time_source;

/*
 * A clock, for tests: returns the time of clock `which` in milliseconds.
 * Must not fail; a negative value is reported as TSLOCK_ECLOCK.
 */
typedef int64_t (*tslock_clock_fn)(tslock_clock_id which, void *userdata);

/* Wait forever in tslock_acquire(). */
#define TSLOCK_WAIT_FOREVER (-1)

/* ============================================================ client ==== */

/*
 * tslock_client_new - make an unconnected client.
 *
 * out: receives the new client.  Set options with tslock_client_set_*(),
 * then connect with tslock_client_connect_tcp(), _connect_unix() or _wrap().
 * Returns TSLOCK_OK, TSLOCK_EINVAL (out is NULL) or TSLOCK_ENOMEM.
 * Ownership: *out is new; free it with tslock_client_free().
 * Threads: a client is used by one thread at a time.
 */
TSLOCK_EXTERN int tslock_client_new(tslock_client **out);

/*
 * tslock_client_free - close (unless wrapped) and free a client.
 *
 * Accepts NULL.  Locks made on the client must be freed first.
 * Ownership: frees the client; a wrapped redisContext stays the caller's.
 */
TSLOCK_EXTERN void tslock_client_free(tslock_client *client);

/*
 * tslock_client_set_timeouts - connect and per-command timeouts in ms.
 *
 * 0 means no timeout.  Applies to the next connect (and, for the command
 * timeout, at once to a live connection).
 * Returns TSLOCK_OK, TSLOCK_EINVAL (NULL client, negative value) or
 * TSLOCK_EIO (the live connection refused the new timeout; the client is
 * marked broken, the values are kept for the next connect).
 * Threads: as for the client.
 */
TSLOCK_EXTERN int tslock_client_set_timeouts(tslock_client *client,
                                             int connect_ms, int command_ms);

/*
 * tslock_client_set_auth - credentials sent with AUTH after each connect.
 *
 * user: NULL for the single-password AUTH of Redis < 6, else the ACL user.
 * password: NULL to send no AUTH.  Both strings are copied.
 * Returns TSLOCK_OK, TSLOCK_EINVAL or TSLOCK_ENOMEM.
 * Threads: as for the client.
 */
TSLOCK_EXTERN int tslock_client_set_auth(tslock_client *client,
                                         const char *user,
                                         const char *password);

/*
 * tslock_client_set_db - the database SELECTed after each connect.
 *
 * Returns TSLOCK_OK or TSLOCK_EINVAL (negative db).
 */
TSLOCK_EXTERN int tslock_client_set_db(tslock_client *client, int db);

/*
 * tslock_client_connect_tcp - connect over TCP, authenticate, select the
 * database and learn the server's capabilities.
 *
 * Returns TSLOCK_OK, TSLOCK_EINVAL, TSLOCK_EIO, TSLOCK_ETIMEDOUT,
 * TSLOCK_EAUTH, TSLOCK_ESERVER (SELECT refused) or TSLOCK_ENOMEM; the
 * detail is in tslock_client_errstr().
 * Ownership: host is copied.  Threads: as for the client.
 */
TSLOCK_EXTERN int tslock_client_connect_tcp(tslock_client *client,
                                            const char *host, int port);

/*
 * tslock_client_connect_unix - as tslock_client_connect_tcp(), over a Unix
 * socket at path.
 */
TSLOCK_EXTERN int tslock_client_connect_unix(tslock_client *client,
                                             const char *path);

/*
 * tslock_client_connect_sentinel - find the master of master_name through
 * Redis Sentinel and connect to it as tslock_client_connect_tcp() does.
 *
 * n, hosts, ports: the sentinels (n >= 1; port 26379 is Sentinel's
 * default).  They are asked in turn with SENTINEL get-master-addr-by-name;
 * the first that answers moves to the front of the list.  The address it
 * names is connected to with the data-node credentials
 * (tslock_client_set_auth(), tslock_client_set_db()), and the capability
 * probe checks, in the same round trip, that the node is the master
 * (ROLE, or INFO's role: line before Redis 2.8.12).  A node that is not
 * the master, or cannot be reached, sends the client to the next
 * sentinel; passes over all of them are retried every 100 ms within the
 * connect timeout (5 s when it is 0), which rides out a failover in
 * progress.  From then on every reconnect (tslock_client_reconnect(), and
 * so release, extend, the watchdog and waiting acquires) goes back
 * through the sentinels, and a -READONLY reply (a master demoted by a
 * failover) counts as a broken connection.
 * Returns TSLOCK_OK, TSLOCK_EINVAL (NULL or empty argument, n < 1, a
 * port outside 1..65535), TSLOCK_EIO or TSLOCK_ETIMEDOUT (no sentinel
 * named a master that could be reached and was the master), TSLOCK_EAUTH
 * (a sentinel or the master refused the credentials), TSLOCK_ESERVER (no
 * sentinel knows master_name, or SELECT was refused), TSLOCK_ESTATE (the
 * client wraps a caller's connection) or TSLOCK_ENOMEM; the detail names
 * each sentinel's answer.
 * Ownership: every string is copied.  Threads: as for the client.
 */
TSLOCK_EXTERN int tslock_client_connect_sentinel(tslock_client *client, int n,
                                                 const char *const *hosts,
                                                 const int *ports,
                                                 const char *master_name);

/*
 * tslock_client_set_sentinel_auth - credentials sent with AUTH to each
 * sentinel (Sentinel's own requirepass, or an ACL user), apart from the
 * data nodes' (tslock_client_set_auth()).
 *
 * user: NULL for a password alone.  password: NULL to send no AUTH.
 * Returns TSLOCK_OK, TSLOCK_EINVAL or TSLOCK_ENOMEM.
 * Ownership: both strings are copied.  Threads: as for the client.
 */
TSLOCK_EXTERN int tslock_client_set_sentinel_auth(tslock_client *client,
                                                  const char *user,
                                                  const char *password);

/* ================================================================ TLS ==== */

/*
 * TLS settings (rediss://), opaque: where the CA is, this client's
 * certificate and key, how the server is checked.  tslock speaks TLS
 * itself, with OpenSSL, over any hiredis (doc/tls.md).
 */
typedef struct tslock_tls tslock_tls;

/*
 * tslock_tls_new - new TLS settings: the server's certificate checked
 * against the system's CAs and its name against the host connected to.
 *
 * Returns TSLOCK_OK, TSLOCK_EINVAL (out NULL), TSLOCK_ENOMEM, or
 * TSLOCK_EUNSUPPORTED when libtslock was built without TLS.
 * Ownership: *out is new; free it with tslock_tls_free().
 * Threads: safe from any thread.
 */
TSLOCK_EXTERN int tslock_tls_new(tslock_tls **out);

/* tslock_tls_free - free TLS settings (a key password is wiped).  NULL ok. */
TSLOCK_EXTERN void tslock_tls_free(tslock_tls *tls);

/*
 * tslock_tls_set - set one TLS setting by name, with redis-cli's or
 * redis-py's spelling: "cacert" / "ssl_ca_certs" (a PEM file of CAs),
 * "cacertdir" / "ssl_ca_path" (a hashed directory), "cert" /
 * "ssl_certfile" and "key" / "ssl_keyfile" (this client's certificate
 * chain and key, PEM), "key_password" / "ssl_password" (the key's
 * passphrase), "sni" / "ssl_server_hostname" (the name sent in SNI and
 * checked in the certificate), "verify" / "ssl_cert_reqs" ("required",
 * "optional" or "none"), "insecure" (value ignored: "verify" "none"),
 * "check_hostname" / "ssl_check_hostname" ("true" or "false").  Files are
 * read when a connection is set up, not here.
 *
 * err, errsize: on failure receive one line naming the setting and what
 * was expected, never the value of key_password (err may be NULL).
 * Returns TSLOCK_OK, TSLOCK_EINVAL (an unknown name or a bad value) or
 * TSLOCK_ENOMEM.
 * Ownership: value is copied.  Threads: as for the settings.
 */
TSLOCK_EXTERN int tslock_tls_set(tslock_tls *tls, const char *name,
                                 const char *value, char *err, size_t errsize);

/*
 * tslock_client_set_tls - speak TLS on every TCP connection the client
 * makes from now on (the server, each sentinel, each cluster node, the
 * subscriber of waiting acquires), with these settings; NULL for plain
 * text.  The CA, certificate and key are loaded here, so a bad file or
 * a wrong passphrase is reported now.
 *
 * Returns TSLOCK_OK, TSLOCK_EINVAL (client NULL), TSLOCK_ETLS (a file
 * could not be loaded, or the key does not match the certificate; the
 * detail in tslock_client_errstr() names which and why),
 * TSLOCK_EUNSUPPORTED (built without TLS) or TSLOCK_ENOMEM.
 * Ownership: tls is copied; the caller keeps and frees its own.
 * Threads: as for the client.
 */
TSLOCK_EXTERN int tslock_client_set_tls(tslock_client *client,
                                        const tslock_tls *tls);

/*
 * tslock_conn_start_tls - start TLS on a connected hiredis context (one
 * the caller made with redisConnect*()), checking the server as tls
 * says, with host as the name to check and to send in SNI unless tls
 * names one.  From then on the context is read and written through the
 * tslock_conn_* calls below only, and freed by tslock_conn_free();
 * tslock_client_wrap() takes it as it is.  Uses the context's reader's
 * privdata, which must be NULL.
 *
 * err, errsize: on failure receive one line naming what failed (the
 * certificate check's own words), never a password.
 * Returns TSLOCK_OK, TSLOCK_ETLS, TSLOCK_EINVAL, TSLOCK_EUNSUPPORTED
 * (built without TLS) or TSLOCK_ENOMEM.  On failure the context is
 * unusable: free it.
 * Ownership: tls and host are not kept.  Threads: as for the context.
 */
TSLOCK_EXTERN int tslock_conn_start_tls(struct redisContext *ctx,
                                        const tslock_tls *tls, const char *host,
                                        char *err, size_t errsize);

/*
 * tslock_conn_write - write len bytes (RESP the caller formatted, say
 * with redisFormatCommandArgv()) on a context, plain or TLS, without
 * SIGPIPE; tslock_conn_get_reply - the next reply, as redisGetReply()
 * (buffers written with redisAppendCommand() are not sent on a TLS
 * context: write them with tslock_conn_write()); tslock_conn_read - read
 * what has come into the context's reader, as redisBufferRead() (for a
 * caller that polls the context's fd; no decrypted byte is left behind
 * in the TLS layer).
 *
 * Returns TSLOCK_OK, or TSLOCK_EIO with ctx->err and ctx->errstr set as
 * hiredis sets them (TSLOCK_EINVAL for a NULL argument).
 * Ownership: *reply is new (freeReplyObject()).  Threads: as for ctx.
 */
TSLOCK_EXTERN int tslock_conn_write(struct redisContext *ctx, const char *buf,
                                    size_t len);
TSLOCK_EXTERN int tslock_conn_get_reply(struct redisContext *ctx, void **reply);
TSLOCK_EXTERN int tslock_conn_read(struct redisContext *ctx);

/* tslock_conn_free - close and free a context, plain or TLS.  NULL ok. */
TSLOCK_EXTERN void tslock_conn_free(struct redisContext *ctx);

/* The most sentinels a redis+sentinel:// URL may list. */
#define TSLOCK_URL_MAX_SENTINELS 16

/* tslock_url_parse() flag: a URL without a password takes $REDISCLI_AUTH. */
#define TSLOCK_URL_ENV_AUTH 0x1u

/*
 * Where to connect, as a URL says it (tslock_url_parse()).  Read the
 * fields; the parser fills them and tslock_url_free() frees them.
 */
struct tslock_url {
    int is_unix;    /* unix://: host is the socket path */
    char *host;     /* TCP host name or address, or the socket path */
    int port;       /* 6379 unless the URL says; 0 with Sentinel */
    int db;         /* 0 unless the URL says */
    char *user;     /* ACL user, NULL for none */
    char *password; /* NULL for none; the data nodes' with Sentinel */
    /* redis+sentinel://: the sentinels, the master's name, their AUTH. */
    int nsentinels; /* 0: not a Sentinel URL */
    char *sentinel_hosts[TSLOCK_URL_MAX_SENTINELS];
    int sentinel_ports[TSLOCK_URL_MAX_SENTINELS];
    char *master_name;
    char *sentinel_password; /* ?sentinel_password=, or NULL */
    /*
     * rediss:// (and rediss+sentinel://): the TLS settings of the URL's
     * query (ssl_ca_certs=, ssl_cert_reqs=, ...); NULL for a plain URL.
     * Owned by the URL; tslock_tls_set() may add to it.
     */
    struct tslock_tls *tls;
};

/*
 * tslock_url_parse - read where to connect from a URL:
 * redis://[[user]:password@]host[:port][/db][?db=N],
 * unix://[[user]:password@]/path/to/socket[?db=N], or
 * redis+sentinel://[[user]:password@]host[:port][,host[:port]...]/MASTER
 * [/db][?sentinel_password=P] (host may be [IPv6]; parts percent-decoded).
 *
 * flags: 0, or TSLOCK_URL_ENV_AUTH.  out: filled on success, zeroed on
 * failure.  err, errsize: on failure receives one line naming what was
 * expected and what came, never the password (err may be NULL).
 * Returns TSLOCK_OK, TSLOCK_EINVAL (a bad URL) or TSLOCK_ENOMEM.
 * Ownership: out's strings are new; free them with tslock_url_free().
 * Threads: safe from any thread (reads $REDISCLI_AUTH with the flag).
 */
TSLOCK_EXTERN int tslock_url_parse(const char *text, unsigned flags,
                                   struct tslock_url *out, char *err,
                                   size_t errsize);

/*
 * tslock_url_free - free what tslock_url_parse() put in url (the
 * passwords are overwritten first) and zero it.  NULL is ignored.
 */
TSLOCK_EXTERN void tslock_url_free(struct tslock_url *url);

/*
 * tslock_url_describe - "unix socket /p, db 2, user alice", never the
 * password, into buf (truncated to size).
 * Threads: safe from any thread.
 */
TSLOCK_EXTERN void tslock_url_describe(const struct tslock_url *url, char *buf,
                                       size_t size);

/*
 * tslock_url_scrub - overwrite in place the passwords of a URL as
 * tslock_url_parse() would find them: "redis://:pw@host" becomes
 * "redis://" "***@host" and "redis://user:pw@host" "redis://user:" "***@host"
 * (fewer '*' for a shorter password), ?sentinel_password= likewise; the
 * rest moves left and the freed bytes become NULs, so the string never
 * grows (for argv and logs).  Returns 1 when a password was found, else 0.
 */
TSLOCK_EXTERN int tslock_url_scrub(char *text);

/*
 * tslock_client_connect_url - set the client's credentials, database and
 * sentinel password from url (tslock_url_parse() without flags) and
 * connect where it says: tslock_client_connect_tcp(), _unix() or
 * _sentinel().
 *
 * Returns TSLOCK_EINVAL for a bad URL (the parser's line in
 * tslock_client_errstr()), else as the connect call it makes.
 * Ownership: url is not kept.  Threads: as for the client.
 */
TSLOCK_EXTERN int tslock_client_connect_url(tslock_client *client,
                                            const char *url);

/*
 * tslock_client_connect_parsed_url - as tslock_client_connect_url(), with
 * a URL already parsed (for a caller that reports the parse itself).
 *
 * Returns TSLOCK_EINVAL (NULL, or an empty url), else as the connect call.
 * Ownership: url stays the caller's.  Threads: as for the client.
 */
TSLOCK_EXTERN int
tslock_client_connect_parsed_url(tslock_client *client,
                                 const struct tslock_url *url);

/*
 * tslock_client_address - the host (or socket path) and port the client
 * is connected to, or last tried: for a Sentinel client, the master the
 * sentinels named.
 *
 * host, port: receive them (either may be NULL); port is 0 for a Unix
 * socket.  Returns TSLOCK_OK, TSLOCK_EINVAL (NULL client) or
 * TSLOCK_ESTATE (never connected, or a wrapped connection).
 * Ownership: *host is borrowed; valid until the next call on the client.
 */
TSLOCK_EXTERN int tslock_client_address(const tslock_client *client,
                                        const char **host, int *port);

/*
 * tslock_client_wrap - use a connection the caller made and owns.
 *
 * No AUTH or SELECT is sent (the caller has done what it needs); the
 * capabilities are probed.  Returns as tslock_client_connect_tcp(), and
 * TSLOCK_ESTATE when the client connected (or tried to) by itself.
 * Ownership: ctx stays the caller's and must outlive the client; it is
 * never freed by tslock.  tslock_client_reconnect() reconnects it in place.
 */
TSLOCK_EXTERN int tslock_client_wrap(tslock_client *client,
                                     struct redisContext *ctx);

/*
 * tslock_client_reconnect - reconnect after a failure, redo AUTH and
 * SELECT, and learn the capabilities again.
 *
 * Returns as tslock_client_connect_tcp(); TSLOCK_ESTATE if the client was
 * never connected.
 */
TSLOCK_EXTERN int tslock_client_reconnect(tslock_client *client);

/*
 * tslock_client_is_broken - whether the connection has failed.
 *
 * A broken client returns TSLOCK_EIO from every lock call until
 * tslock_client_reconnect() succeeds.  Returns 1 or 0 (0 for NULL).
 */
TSLOCK_EXTERN int tslock_client_is_broken(const tslock_client *client);

/*
 * tslock_client_errstr - the detail of the last error on this client:
 * the server's own error line, or what was expected and what came.
 *
 * Returns "" when there is none, "" for NULL.
 * Ownership: borrowed; valid until the next call on the client or on any
 * of its locks.
 */
TSLOCK_EXTERN const char *tslock_client_errstr(const tslock_client *client);

/*
 * tslock_client_caps - the TSLOCK_CAP_* bits the server was found to have.
 *
 * Learned by probing at connect, so forks and proxies that misreport their
 * version are still judged by what they do.  Returns 0 before a connect.
 */
TSLOCK_EXTERN unsigned tslock_client_caps(const tslock_client *client);

/*
 * Wake-ups that fell back (tslock_client_wakeups), as bits.  UNANNOUNCED:
 * this client's releases go without PUBLISH (it was refused).  POLLING:
 * this client's waits poll (SUBSCRIBE was refused, or a release was not
 * heard).
 */
#define TSLOCK_WAKEUPS_UNANNOUNCED 0x01u
#define TSLOCK_WAKEUPS_POLLING     0x02u

/*
 * tslock_client_wakeups - whether wake-ups on this client fell back, and
 * why: its releases go unannounced (the server refused PUBLISH), or its
 * waits poll at the retry delay instead of listening (the server refused
 * SUBSCRIBE, or a waiting token acquire found the key free before its
 * holder's lease ended, with nobody else in line, and heard no release:
 * a PUBLISH refused inside a script, or lost on the way, as where a
 * service turns a script's PUBLISH into SPUBLISH).  Locks stay correct
 * either way; a polling waiter takes a freed key up to one retry delay
 * late.  A fallback lasts for the client's life.
 *
 * why: may be NULL; receives the first fallback's reason, "" when none.
 * Returns the TSLOCK_WAKEUPS_* bits, 0 while none fell back (and for
 * NULL).
 * Ownership: *why is borrowed, valid while the client lives.
 * Threads: as for the client.
 */
TSLOCK_EXTERN unsigned tslock_client_wakeups(const tslock_client *client,
                                             const char **why);

/* How a client may use Redis 7 Functions (tslock_client_set_functions). */
typedef enum tslock_functions {
    TSLOCK_FUNCTIONS_LOAD = 0, /* FCALL where EVAL is refused; FUNCTION LOAD
                                  the library when it is missing */
    TSLOCK_FUNCTIONS_USE = 1,  /* FCALL where EVAL is refused; the library
                                  must have been loaded by an operator */
    TSLOCK_FUNCTIONS_OFF = 2   /* never: where EVAL is refused, the WATCH
                                  forms, else TSLOCK_ENOPERM */
} tslock_functions;

/*
 * tslock_client_set_functions - whether scripts run as Redis 7 Functions
 * (FCALL) when an ACL refuses EVAL, and whether the client may load
 * tslock's function library itself (FUNCTION LOAD) when it is missing.
 *
 * client: not NULL.  mode: a tslock_functions value.  The default is
 * TSLOCK_FUNCTIONS_LOAD.  The library (tslock_functions_library()) holds
 * every script of this libtslock under a versioned name, so clients of
 * both kinds, and of other versions, share locks: the commands on the
 * keys are the same.  Takes effect at the next connect or reconnect.
 * Returns TSLOCK_OK or TSLOCK_EINVAL.
 * Threads: as for the client.
 */
TSLOCK_EXTERN int tslock_client_set_functions(tslock_client *client,
                                              tslock_functions mode);

/*
 * How a client's waiters hear releases (tslock_client_set_pubsub):
 * AUTO, sharded on a Redis 7.0+ Cluster and classic elsewhere; CLASSIC,
 * SUBSCRIBE and PUBLISH everywhere; SHARDED, SSUBSCRIBE and SPUBLISH
 * wherever the server has them (7.0), a single server too.
 */
#define TSLOCK_PUBSUB_AUTO    0
#define TSLOCK_PUBSUB_CLASSIC 1
#define TSLOCK_PUBSUB_SHARDED 2

/*
 * tslock_client_set_pubsub - whether waiters are woken over Redis 7.0's
 * sharded pub/sub (SSUBSCRIBE, SPUBLISH), which keeps each release's
 * message inside the shard that owns the lock's slot, or over classic
 * pub/sub, which a Redis Cluster forwards to every node.
 *
 * client: not NULL.  mode: TSLOCK_PUBSUB_AUTO (the default),
 * TSLOCK_PUBSUB_CLASSIC or TSLOCK_PUBSUB_SHARDED.  Where the server is
 * older than 7.0, or a proxy refuses SSUBSCRIBE, the client falls back
 * to classic pub/sub whatever the mode (tslock_client_get_pubsub() says
 * which it uses).  Waiters of either kind are woken by releases of
 * either kind on the same key (doc/topologies.md, "Sharded wake-ups").
 * Takes effect at the next wait.
 * Returns TSLOCK_OK or TSLOCK_EINVAL.
 * Threads: as for the client.
 */
TSLOCK_EXTERN int tslock_client_set_pubsub(tslock_client *client, int mode);

/*
 * tslock_client_get_pubsub - the pub/sub this client uses for wake-ups
 * now: TSLOCK_PUBSUB_SHARDED or TSLOCK_PUBSUB_CLASSIC, judged from its
 * mode, the server it reached and any refusal seen; TSLOCK_EINVAL when
 * client is NULL.  Before a connect it says CLASSIC.
 * Threads: as for the client.
 */
TSLOCK_EXTERN int tslock_client_get_pubsub(const tslock_client *client);

/*
 * tslock_functions_library - the Lua function library of this libtslock,
 * as FUNCTION LOAD takes it ("#!lua name=tslock_<version id>" and one
 * registered function per script), and its name.
 *
 * name: may be NULL; receives the library's name.
 * Returns the text, or NULL when out of memory.
 * Ownership: both static, built once, never freed.  Threads: safe from
 * any thread after the first call has returned.
 */
TSLOCK_EXTERN const char *tslock_functions_library(const char **name);

/*
 * tslock_client_limit_caps - act as if the server lacked every capability
 * not in allowed (TSLOCK_CAP_* bits), now and after every reconnect.
 * Pass ~0u to lift the limit (effective from the next connect).
 *
 * For tests, which force each compatibility path against a modern
 * server, and for operators whose servers refuse scripts.
 * Returns TSLOCK_OK or TSLOCK_EINVAL.
 */
TSLOCK_EXTERN int tslock_client_limit_caps(tslock_client *client,
                                           unsigned allowed);

/*
 * tslock_client_server_version - the version in the server's INFO.
 *
 * major, minor, patch: receive the numbers (any may be NULL).
 * Returns TSLOCK_OK, TSLOCK_EINVAL (NULL client) or TSLOCK_ESTATE (never
 * connected, or INFO carried no redis_version).
 */
TSLOCK_EXTERN int tslock_client_server_version(const tslock_client *client,
                                               int *major, int *minor,
                                               int *patch);

/*
 * tslock_client_set_step_hook - install (or with NULL remove) the step
 * hook.  For tests; see tslock_step_hook.
 *
 * Returns TSLOCK_OK or TSLOCK_EINVAL.
 * Ownership: userdata stays the caller's.
 */
TSLOCK_EXTERN int tslock_client_set_step_hook(tslock_client *client,
                                              tslock_step_hook hook,
                                              void *userdata);

/*
 * tslock_client_set_clock - replace (or with NULL restore) the clocks.
 * For tests; see tslock_clock_fn.
 *
 * Returns TSLOCK_OK or TSLOCK_EINVAL.
 */
TSLOCK_EXTERN int tslock_client_set_clock(tslock_client *client,
                                          tslock_clock_fn clock,
                                          void *userdata);

/*
 * tslock_client_set_time_source - take stamp times from this host's clock
 * (the default) or from the server's clock.
 *
 * TSLOCK_TIME_SERVER makes every tslock client of a server agree on time
 * to within half a round trip, whatever their hosts' clocks say: the
 * offset is measured from the TIME reply of the capability probe at each
 * connect, so it costs no round trip on the lock path.  Servers without
 * TIME (before 2.6) fall back to the local clock.  Legacy clients sharing
 * the key still read stamps with their own clocks.
 * Returns TSLOCK_OK or TSLOCK_EINVAL.
 */
TSLOCK_EXTERN int tslock_client_set_time_source(tslock_client *client,
                                                tslock_time_source source);

/*
 * tslock_client_clock_offset - the server's wall clock minus this host's,
 * in milliseconds, as measured at the last connect; 0 when the server has
 * no TIME or the client never connected.
 */
TSLOCK_EXTERN int64_t tslock_client_clock_offset(const tslock_client *client);

/*
 * tslock_step_name - the command name of a step, e.g. "GETSET".
 *
 * Returns "?" for values outside the enum.
 * Ownership: static.  Threads: safe from any thread.
 */
TSLOCK_EXTERN const char *tslock_step_name(tslock_step step);

/* ========================================================== metrics ==== */

/*
 * The upper bounds of the wait-time and hold-time histograms, in
 * milliseconds, Prometheus-style: bucket i counts the observations of at
 * most TSLOCK_STATS_BUCKETS_MS[i] ms (its "le" label is that many
 * seconds), and the last bucket, "+Inf", counts them all.  Fixed for all
 * of 1.x, so an exporter may hard-code them.  As an initializer:
 *     static const int64_t le_ms[] = TSLOCK_STATS_BUCKETS_MS;
 */
#define TSLOCK_STATS_BUCKETS_MS                                                \
    {                                                                          \
        1, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000,       \
            60000, 300000                                                      \
    }
/* Buckets in a histogram: the 15 finite bounds above, then +Inf. */
#define TSLOCK_STATS_BUCKETS 16

/* A cumulative histogram of durations (Prometheus's _bucket, _sum, _count). */
typedef struct tslock_histogram {
    uint64_t bucket[TSLOCK_STATS_BUCKETS]; /* cumulative: le bound i */
    uint64_t sum_ms;                       /* the sum of all observations */
    uint64_t count; /* == bucket[TSLOCK_STATS_BUCKETS-1] */
} tslock_histogram;

/*
 * What one client has counted since it was made or last reset, read by
 * tslock_client_stats().  Size-prefixed: the caller sets nothing; the
 * library sets size to the bytes it filled.  Fields are only ever added
 * at the end in 1.x, never moved, resized or removed, so a program built
 * against an older header gets the fields it knows, and one built against
 * a newer header, run on an older library, finds size smaller than
 * sizeof(tslock_stats) and must not read past it
 * (TSLOCK_STATS_HAS(stats, field) tells).  Counters only grow; all count
 * calls on locks of this client (tslock_lock_new(client, ...)), whichever
 * client their watchdog renews on.  tslock(7) and doc/observability.md
 * say exactly what each counts.
 */
typedef struct tslock_stats {
    size_t size; /* bytes filled by the library */
    /* Acquisitions (tslock_acquire() calls; a reentrant re-take is none). */
    uint64_t acquired;  /* TSLOCK_OK */
    uint64_t busy;      /* TSLOCK_EBUSY from a try (wait 0) */
    uint64_t timed_out; /* TSLOCK_EBUSY after waiting to the deadline */
    uint64_t canceled;  /* TSLOCK_ECANCELED */
    uint64_t errors;    /* any other code */
    /* Acquisitions, by the scheme they used (index: tslock_scheme). */
    uint64_t by_scheme[4];
    int last_scheme; /* tslock_scheme of the last acquisition, 0 if none */
    int reserved_;
    /* Ends of holds. */
    uint64_t released;         /* holds released (TSLOCK_OK) */
    uint64_t lost;             /* TSLOCK_ELOST from any call on a hold */
    uint64_t renewals;         /* watchdog renewals that succeeded */
    uint64_t renewal_failures; /* watchdogs whose renewing ended in failure */
    uint64_t takeovers;        /* expired stamps this client took over */
    uint64_t legacy_takeovers; /* bridge holds a legacy client took away */
    uint64_t wakes;        /* sleeps of a wait ended by a release announced */
    uint64_t retries;      /* attempts after the first, in waiting acquires */
    tslock_histogram wait; /* call to hold, of acquisitions that got it */
    tslock_histogram hold; /* hold to release (TSLOCK_STATS_HOLD_TIMES) */
} tslock_stats;

/* Whether stats (as filled) holds field. */
#define TSLOCK_STATS_HAS(stats, field)                                         \
    ((stats)->size >= offsetof(tslock_stats, field) + sizeof((stats)->field))

/*
 * tslock_client_stats - copy what client has counted into *out.
 *
 * client: not NULL.  out: not NULL.  size: sizeof(*out), as the caller
 * knows it; at least sizeof(size_t) + sizeof(uint64_t).  The library
 * fills min(size, its own sizeof(tslock_stats)) bytes and sets out->size
 * to that.  No round trip, no lock: each counter is read atomically, but
 * counters updated while the copy is made may be one event apart from
 * each other.
 * Returns TSLOCK_OK or TSLOCK_EINVAL.
 * Threads: safe from any thread, while the client's own thread and its
 * watchdogs count.
 */
TSLOCK_EXTERN int tslock_client_stats(const tslock_client *client,
                                      tslock_stats *out, size_t size);

/*
 * tslock_client_stats_reset - set every counter and histogram of client
 * to zero.  An exporter should not reset (Prometheus counters only grow);
 * a test or a tool taking deltas may.
 *
 * Returns TSLOCK_OK or TSLOCK_EINVAL.
 * Threads: as for the client; an event counted by a watchdog while it
 * runs may survive the reset.
 */
TSLOCK_EXTERN int tslock_client_stats_reset(tslock_client *client);

/* Options of tslock_client_set_stats_options(). */
#define TSLOCK_STATS_HOLD_TIMES 1u /* time holds: one clock read a release */

/*
 * tslock_client_set_stats_options - what the client measures beyond its
 * counters and wait times (which cost nothing: they reuse the times an
 * acquisition takes anyway).
 *
 * flags: 0, or TSLOCK_STATS_HOLD_TIMES to fill the hold histogram, at
 * the cost of one monotonic clock read per release.  An observer
 * (tslock_client_set_observer()) times holds in any case.
 * Returns TSLOCK_OK or TSLOCK_EINVAL (NULL, or an unknown flag).
 * Threads: as for the client.
 */
TSLOCK_EXTERN int tslock_client_set_stats_options(tslock_client *client,
                                                  unsigned flags);

/* What an observer is told of. */
typedef enum tslock_event_type {
    TSLOCK_EVENT_ACQUIRE = 1, /* an acquisition ended: result says how */
    TSLOCK_EVENT_RELEASE = 2, /* a hold was released */
    TSLOCK_EVENT_LOST = 3,    /* a hold was found lost (TSLOCK_ELOST) */
    TSLOCK_EVENT_TAKEOVER = 4 /* this client took over an expired stamp */
} tslock_event_type;

/*
 * One event, size-prefixed like tslock_stats (fields only added at the
 * end; check size before reading a newer one).
 */
typedef struct tslock_event {
    size_t size;
    tslock_event_type type;
    int result;           /* the tslock code of the call: TSLOCK_OK, ... */
    const char *key;      /* the lock's key; borrowed for the callback */
    int64_t duration_ms;  /* ACQUIRE: the wait; RELEASE, LOST: the hold
                             (-1 when not known) ; TAKEOVER: 0 */
    tslock_scheme scheme; /* the scheme used */
    int legacy;           /* LOST: 1 when a legacy client took the key */
    int from_watchdog;    /* 1 when called from a watchdog's thread */
} tslock_event;

/*
 * Called on each event of the client's locks.  It must return quickly
 * and must not call tslock on the lock or client the event is about (it
 * runs inside that call, or on a watchdog's thread while the caller may
 * use the client), nor free them; it may read the event, count, log,
 * end a trace span, or call tslock_client_stats().
 */
typedef void (*tslock_observer_fn)(const tslock_event *event, void *userdata);

/*
 * tslock_client_set_observer - call fn on every acquire, release, loss
 * and takeover of the client's locks; NULL to stop.
 *
 * fn is called from the thread of the call that caused the event, or, for
 * a loss found by a renewal, from that watchdog's thread (event
 * from_watchdog set): it must be safe from both.  Setting an observer
 * also times holds (one clock read per release).
 * Returns TSLOCK_OK or TSLOCK_EINVAL.
 * Ownership: userdata stays the caller's.
 * Threads: as for the client, and not while a watchdog of its locks
 * runs: set it before starting them.
 */
TSLOCK_EXTERN int tslock_client_set_observer(tslock_client *client,
                                             tslock_observer_fn fn,
                                             void *userdata);

/* ============================================================== lock ==== */

/*
 * tslock_lock_new - make a lock object for key on client.
 *
 * Defaults: scheme TSLOCK_SCHEME_AUTO, ttl 30000 ms, unit TSLOCK_UNIT_MS,
 * release form TSLOCK_RELEASE_BEST, release margin 0 ms, retry delay
 * 50-100 ms (randomized, as in the Java RedisLock of the articles).
 * Nothing is sent to the server.
 * Returns TSLOCK_OK, TSLOCK_EINVAL (NULL or empty argument) or
 * TSLOCK_ENOMEM.
 * Ownership: key is copied; *out is new, freed by tslock_lock_free().
 * Threads: a lock is used by the thread that uses its client, except
 * tslock_lock_cancel().
 */
TSLOCK_EXTERN int tslock_lock_new(tslock_lock **out, tslock_client *client,
                                  const char *key);

/*
 * tslock_lock_free - free a lock object.  Does not release the lock on the
 * server: a held lock stays held until released or its lease runs out.
 * Accepts NULL.
 */
TSLOCK_EXTERN void tslock_lock_free(tslock_lock *lock);

/*
 * tslock_lock_set_scheme - choose the scheme (before acquiring).
 *
 * Returns TSLOCK_OK, TSLOCK_EINVAL or TSLOCK_ESTATE (the lock is held).
 */
TSLOCK_EXTERN int tslock_lock_set_scheme(tslock_lock *lock,
                                         tslock_scheme scheme);

/*
 * tslock_lock_set_ttl - the lease length in milliseconds (> 0).
 *
 * Returns TSLOCK_OK or TSLOCK_EINVAL.  Applies to the next acquisition.
 */
TSLOCK_EXTERN int tslock_lock_set_ttl(tslock_lock *lock, int64_t ttl_ms);

/*
 * tslock_lock_set_unit - the unit stamps are written and read in.
 *
 * Values are read in the same unit; one that is not a plausible time
 * in this unit is never taken over (TSLOCK_EUNREADABLE).
 * Returns TSLOCK_OK, TSLOCK_EINVAL or TSLOCK_ESTATE (the lock is held).
 */
TSLOCK_EXTERN int tslock_lock_set_unit(tslock_lock *lock, tslock_unit unit);

/* ========================================================== dialects ==== */

/*
 * A dialect is how one legacy lock library writes its expiry stamp: the
 * number's unit and whether the "+1" convention applies, what surrounds
 * the number (an owner suffix such as "-<pid>-<thread>", or a
 * PHP-serialized array with an "expires" field), which values mean
 * "never expires", and how its clients release (a blind DEL, or only
 * when the key still holds the exact string they wrote).  The presets
 * name the libraries (tslock_dialect_preset()); a user-defined dialect is
 * a short format string, whose grammar tslock-dialects(7) gives:
 *
 *   FORMAT   := TEMPLATE [";never=" VALUE ("," VALUE)*]
 *               [";release=" ("del" | "compare")]
 *   TEMPLATE := (LITERAL | "{" FIELD "}")*  with exactly one time field,
 *             | "php-array(" NAME "=" FIELD ("," NAME "=" FIELD)* ")"
 *   FIELD    := "ms" | "ms+1" | "s" | "s+1" | "float" | "float+1"
 *             | "pid" | "tid" | "host"
 *
 * e.g. "{s+1}-{pid}-{tid}" (the redis-lock gem) or
 * "php-array(pid=pid,hostname=host,expires=s)" (ninja-mutex).  One
 * parser reads presets and formats alike.
 */

/*
 * tslock_lock_set_dialect - write and read stamps in a legacy library's
 * dialect (timestamp and bridge schemes, and the stamp a token-less
 * client finds): a preset name or a format string.  Values in the
 * dialect are taken over by the same compare-and-set rules as plain
 * stamps; a value the dialect cannot read is never taken over.  Setting
 * a unit afterwards (tslock_lock_set_unit()) returns to a plain stamp.
 *
 * dialect: copied before the call returns.
 * Returns TSLOCK_OK, TSLOCK_EINVAL (NULL, or neither a preset nor a valid
 * format: the detail says where the format went wrong and names the
 * closest preset) or TSLOCK_ESTATE (the lock is held).
 * Threads: as for the client.
 */
TSLOCK_EXTERN int tslock_lock_set_dialect(tslock_lock *lock,
                                          const char *dialect);

/*
 * tslock_lock_get_dialect - the dialect the lock writes: the preset name
 * when it was set by one, the format string otherwise, and for a plain
 * unit its format ("{ms+1}", "{s+1}" or "{float}").
 * Ownership: borrowed, valid until the lock's dialect or unit changes.
 */
TSLOCK_EXTERN const char *tslock_lock_get_dialect(tslock_lock *lock);

/*
 * tslock_dialect_preset - the name of preset i (0, 1, ...), NULL past
 * the last.  tslock_dialect_format() gives its format string and
 * tslock_dialect_library() the library and version it matches.
 * Threads: safe from any thread.
 */
TSLOCK_EXTERN const char *tslock_dialect_preset(size_t i);
TSLOCK_EXTERN const char *tslock_dialect_format(const char *name);
TSLOCK_EXTERN const char *tslock_dialect_library(const char *name);

/*
 * tslock_dialect_check - validate a preset name or format string.
 *
 * err, size: receive the reason when it is invalid (may be NULL, 0).
 * Returns TSLOCK_OK or TSLOCK_EINVAL.
 * Threads: safe from any thread.
 */
TSLOCK_EXTERN int tslock_dialect_check(const char *dialect, char *err,
                                       size_t size);

/*
 * tslock_dialect_parse - read a stored value in a dialect.
 *
 * expires_ms: receives the last Unix millisecond the stamp is valid, as
 * its own clients read it; INT64_MAX for a "never expires" value.
 * Returns TSLOCK_OK, TSLOCK_EUNREADABLE (not a value of this dialect) or
 * TSLOCK_EINVAL (NULL argument, unknown dialect).
 * Threads: safe from any thread.
 */
TSLOCK_EXTERN int tslock_dialect_parse(const char *dialect, const char *value,
                                       size_t len, int64_t *expires_ms);

/*
 * tslock_dialect_match - name the presets whose clients could have
 * written a stored value: names receives them joined by '/', in the
 * order of tslock_dialect_preset() (float seconds, for one, are written
 * alike by redis-py 2.x and redis-mutex), "" when none matches.
 *
 * names, size: at least 1 byte; a list that does not fit is cut at a
 * name and ends with "/...", or where that does not fit either holds the
 * first name cut to fit (32 bytes hold any preset's name).
 * expires_ms: receives the first match's reading (may be NULL).
 * Returns TSLOCK_OK, TSLOCK_EUNREADABLE (no preset matches) or
 * TSLOCK_EINVAL.
 * Threads: safe from any thread.
 */
TSLOCK_EXTERN int tslock_dialect_match(const char *value, size_t len,
                                       char *names, size_t size,
                                       int64_t *expires_ms);

/*
 * tslock_lock_set_release_form - force a release form.  The classic form
 * has a documented gap; tests use it to show it.
 *
 * Returns TSLOCK_OK or TSLOCK_EINVAL.
 */
TSLOCK_EXTERN int tslock_lock_set_release_form(tslock_lock *lock,
                                               tslock_release_form form);

/*
 * tslock_lock_set_release_margin - refuse to delete (or extend) a stamp
 * when less than margin_ms of the lease is left (room for clock skew
 * between hosts).  Timestamp and bridge schemes only: a token's lease is
 * kept by the server's clock.
 *
 * Returns TSLOCK_OK or TSLOCK_EINVAL (negative).
 */
TSLOCK_EXTERN int tslock_lock_set_release_margin(tslock_lock *lock,
                                                 int64_t margin_ms);

/*
 * tslock_lock_set_takeover_grace - count another holder's stamp as expired
 * only once it is more than grace_ms old by our wall clock, so a holder
 * whose clock runs up to grace_ms behind ours (or ours ahead) is not
 * taken over while its lease still runs.  Timestamp and bridge schemes,
 * on every server generation; the token schemes keep no stamp.  0 (the
 * default) takes over as soon as the stamp has passed.  A crashed
 * holder's lock is taken over grace_ms later.
 *
 * Returns TSLOCK_OK or TSLOCK_EINVAL (lock NULL, grace_ms negative or
 * more than one day, 86400000).
 * Ownership: nothing is allocated.
 * Threads: as the lock; it may change while the lock is held.
 */
TSLOCK_EXTERN int tslock_lock_set_takeover_grace(tslock_lock *lock,
                                                 int64_t grace_ms);

/*
 * tslock_lock_set_retry - the randomized delay between attempts while
 * waiting, uniform in [min_ms, max_ms].
 *
 * Returns TSLOCK_OK or TSLOCK_EINVAL (min_ms < 1 or max_ms < min_ms).
 */
TSLOCK_EXTERN int tslock_lock_set_retry(tslock_lock *lock, int min_ms,
                                        int max_ms);

/*
 * tslock_lock_set_reconnect - how long tslock_release() and
 * tslock_extend() (and so the watchdog) keep reconnecting after the
 * connection failed under them.
 *
 * max_ms: -1 (the default) while the lease leaves room, that is until
 * less than the recovery margin (the release margin, but at least 1% of
 * the ttl plus 2 ms) is left, and never longer than one ttl of real time;
 * 0 never reconnects (the call returns the connection code at once, as a
 * client without recovery would); > 0 at most that long, and never past
 * the lease's room.  Reconnects back off from 10 ms, doubling to 1 s,
 * jittered; each one's connect and command timeouts are cut to the room
 * left.  What an interrupted command did is settled before it is sent
 * again; tslock(7), FAILURES, has the rules.
 * Returns TSLOCK_OK or TSLOCK_EINVAL (max_ms < -1).
 */
TSLOCK_EXTERN int tslock_lock_set_reconnect(tslock_lock *lock, int64_t max_ms);

/*
 * tslock_lock_set_wakeup - whether a waiting tslock_acquire() listens for
 * releases (the default) or only polls.
 *
 * A listening wait subscribes a second connection of the client (opened
 * on first use, kept for later waits on the same key) to the lock's
 * channel ("{KEY}:released", or "KEY:released" when KEY has a hash tag or
 * a '}') and to its own wake channel ("{KEY}:wake:<entry>") before its
 * first try, and sleeps until the first of: a wake, the holder's known
 * expiry, the retry delay (tslock_lock_set_retry()), the deadline; on a
 * Redis 7.0+ Cluster the subscriptions are sharded, at the master of the
 * key's slot (tslock_client_set_pubsub()).  A
 * waiting token acquisition on Redis 2.2 or later also joins the line of
 * waiters beside the key ("{KEY}:queue", "{KEY}:alive",
 * "{KEY}:queue-seq"), and a token release wakes the first live waiter of
 * the line alone, so waiters are woken one at a time in the order they
 * joined; a client that does not wait may still take a free key first.
 * Other schemes, Redis 2.0 and releases of earlier tslock versions wake
 * every listener through the lock's channel.  A woken waiter that died
 * is passed over by the release; a paused one keeps its place until its
 * entry lapses (1 s plus twice the retry ceiling), while the others take a
 * free key at their retry delay.  Legacy clients never publish; their
 * releases are seen at the next retry.  A wait that cannot subscribe (a
 * wrapped connection, an ACL without channels) polls.  tslock(7), WAITING,
 * has the costs and the worst cases.
 * enabled: 1 to listen, 0 to poll.
 * Returns TSLOCK_OK or TSLOCK_EINVAL.
 */
TSLOCK_EXTERN int tslock_lock_set_wakeup(tslock_lock *lock, int enabled);

/*
 * tslock_lock_set_fair - fair mode: waiters take the lock in the order
 * they asked.
 *
 * The line of waiters lives in Redis beside the key ("{KEY}:queue",
 * "{KEY}:alive", "{KEY}:queue-seq", in the key's hash slot), kept by one
 * script per attempt (Redis 2.6 and later) or one WATCH transaction (2.2
 * - 2.4; TSLOCK_EUNSUPPORTED on 2.0); listening waiters of every mode
 * join it, and only its head may take the key in fair mode.  A release
 * wakes the head alone.  Fair mode takes the token scheme.  A waiter
 * refreshes its entry on every attempt; one that dies leaves the line when
 * a release finds nobody hears its wake, or once 1 s plus twice the retry
 * delay has passed since its last attempt (1.2 s by default), judged by
 * the waiters' wall clocks.  Clients that are not fair may take a free
 * key ahead of the line's head; fair waiters keep their order among
 * themselves.  An acquisition that ends without the lock leaves the line
 * at once.
 * Returns TSLOCK_OK, TSLOCK_EINVAL or TSLOCK_ESTATE (the lock is held).
 */
TSLOCK_EXTERN int tslock_lock_set_fair(tslock_lock *lock, int enabled);

/* The side a lock takes in a read-write lock (tslock_lock_set_rw). */
typedef enum tslock_rw {
    TSLOCK_RW_OFF = 0,       /* a plain exclusive lock (the default) */
    TSLOCK_RW_EXCLUSIVE = 1, /* the exclusive side: waits ahead of readers */
    TSLOCK_RW_SHARED = 2     /* a shared hold, beside other shared holds */
} tslock_rw;

/*
 * tslock_lock_set_rw - make the lock one side of a read-write lock.
 *
 * TSLOCK_RW_SHARED: any number of shared holders at once, each with its
 * own lease, listed in "{KEY}:readers" (a sorted set scored by lease
 * end); while any lives, KEY itself holds a stamp covering the latest
 * lease, so plain tslock clients and legacy timestamp clients find the
 * key held.  TSLOCK_RW_EXCLUSIVE: one holder, none shared; while it
 * waits it keeps "{KEY}:writer" set, and new shared holds are refused
 * until it is served (writer preference).  Both take the token scheme:
 * one script per operation on Redis 2.6 and later, WATCH transactions on
 * 2.2 - 2.4, TSLOCK_EUNSUPPORTED at acquire on 2.0.  doc/kinds.md says
 * what every kind of client sees.
 * mode: a tslock_rw value.
 * Returns TSLOCK_OK, TSLOCK_EINVAL (an unknown mode, or a semaphore) or
 * TSLOCK_ESTATE (the lock is held).
 */
TSLOCK_EXTERN int tslock_lock_set_rw(tslock_lock *lock, tslock_rw mode);

/*
 * tslock_lock_set_permits - make the lock a counting semaphore: at most
 * permits holders at once, each with its own lease.
 *
 * The holders live in "{KEY}:permits", a sorted set scored by lease end
 * in the server's time (TIME read by the script on Redis 3.2 and later;
 * this host's clock corrected by the offset TIME gave at connect on 2.6
 * - 3.0; this host's clock before); the count and the add are
 * one script (2.6+) or one WATCH transaction (2.2 - 2.4), so lapsed
 * entries never let more than permits in.  KEY holds a stamp covering
 * the latest lease while any permit is held.  TSLOCK_EUNSUPPORTED at
 * acquire on Redis 2.0.
 * permits: 1 or more; 0 makes the lock a plain lock again.
 * Returns TSLOCK_OK, TSLOCK_EINVAL (a negative count, or a read-write
 * lock) or TSLOCK_ESTATE (the lock is held).
 */
TSLOCK_EXTERN int tslock_lock_set_permits(tslock_lock *lock, int64_t permits);

/*
 * tslock_lock_holders - how many live holders a shared lock or a
 * semaphore has now (ZCOUNT of its set over unexpired leases), whoever
 * they are.
 *
 * Returns TSLOCK_OK, TSLOCK_EINVAL (not a shared lock or semaphore),
 * TSLOCK_EWRONGTYPE or a connection code.
 */
TSLOCK_EXTERN int tslock_lock_holders(tslock_lock *lock, int64_t *count);

/*
 * tslock_lock_queue_length - how many fair waiters are queued for the
 * lock's key (ZCARD of its queue), whoever they are.
 *
 * Returns TSLOCK_OK, TSLOCK_EINVAL, TSLOCK_EWRONGTYPE or a connection
 * code.
 */
TSLOCK_EXTERN int tslock_lock_queue_length(tslock_lock *lock, int64_t *length);

/*
 * tslock_lock_set_fencing - also return a fencing number on acquisition
 * (INCR of "<key>:fence", one more round trip).
 *
 * Returns TSLOCK_OK or TSLOCK_EINVAL.
 */
TSLOCK_EXTERN int tslock_lock_set_fencing(tslock_lock *lock, int enabled);

/*
 * tslock_lock_set_replicas - after each acquisition and extension, wait
 * until n replicas acknowledge the write (WAIT n timeout_ms, Redis 3.0).
 *
 * Replication is asynchronous: a failover can promote a replica that
 * never saw the lock, and the lock is then lost while its holder works.
 * WAIT narrows that window; it does not close it (the lock is still lost
 * when the acknowledging replicas are not the one promoted, and a hold is
 * never safe without fencing, tslock_lock_set_fencing()).  With SET NX PX
 * the WAIT goes out in the same round trip as the SET; other paths send
 * it after the write.  An acquisition that fewer than n replicas
 * acknowledged within timeout_ms is undone (the key deleted while it is
 * ours) and returns TSLOCK_EREPLICAS.  An extension they did not
 * acknowledge returns TSLOCK_EREPLICAS with the lock still held and its
 * lease extended on the master; a watchdog reports it as a warning and
 * goes on renewing.
 * n: 0 (the default) waits for none; timeout_ms: > 0 when n > 0.
 * Returns TSLOCK_OK or TSLOCK_EINVAL.  A server without WAIT makes the
 * acquisition fail with TSLOCK_EUNSUPPORTED (and hold nothing).
 */
TSLOCK_EXTERN int tslock_lock_set_replicas(tslock_lock *lock, int n,
                                           int timeout_ms);

/*
 * tslock_lock_set_reentrant - let the holder take the lock again.
 *
 * enabled: non-zero to turn on, 0 to turn off (the default).  While on,
 * tslock_acquire() on this object when it already holds the lock adds
 * one hold without a round trip, and the lock stays held until
 * tslock_release() has been called as many times; only the last release
 * asks the server.  A re-acquire checks that our lease, less the release
 * margin, still runs by our clock; if not it returns TSLOCK_ELOST and
 * changes nothing.  Extend and the watchdog act on the one hold, whatever
 * its count.  The count lives in this object only: to pass a hold to
 * another object or process, use tslock_lock_handle().
 * Returns TSLOCK_OK, TSLOCK_EINVAL or TSLOCK_ESTATE (turning it off while
 * held more than once).
 */
TSLOCK_EXTERN int tslock_lock_set_reentrant(tslock_lock *lock, int enabled);

/*
 * tslock_acquire - take the lock, waiting up to wait_ms.
 *
 * wait_ms: 0 tries once; > 0 waits up to that many milliseconds on the
 * monotonic clock; TSLOCK_WAIT_FOREVER waits until taken or canceled.
 * Returns TSLOCK_OK (held), TSLOCK_EBUSY (not a failure),
 * TSLOCK_EUNREADABLE (held by a value this scheme cannot read; not a
 * failure), TSLOCK_ECANCELED, TSLOCK_ESTATE (already held, and not
 * reentrant), TSLOCK_ELOST (reentrant and held, but the lease ran out by
 * our clock: not taken again), TSLOCK_EINVAL,
 * TSLOCK_EWRONGTYPE, TSLOCK_EUNSUPPORTED, TSLOCK_EHOOK, TSLOCK_ECLOCK,
 * TSLOCK_EREPLICAS (tslock_lock_set_replicas(); nothing held), or
 * a connection code (TSLOCK_EIO, TSLOCK_ETIMEDOUT, TSLOCK_EPROTO,
 * TSLOCK_ESERVER).
 * Threads: as for the client; tslock_lock_cancel() may interrupt it.
 */
TSLOCK_EXTERN int tslock_acquire(tslock_lock *lock, int64_t wait_ms);

/*
 * tslock_release - release a held lock, deleting it only while it is still
 * ours and our lease (less the margin) has not run out.
 *
 * Returns TSLOCK_OK (deleted), TSLOCK_ELOST (not ours any more, or the
 * lease ran out: nothing deleted; not a failure, but mutual exclusion may
 * have been broken), TSLOCK_ESTATE (not held), TSLOCK_EWRONGTYPE,
 * TSLOCK_EUNSUPPORTED (a forced release form the server lacks),
 * TSLOCK_EHOOK, or a connection code.  The lock object stays held after
 * anything but TSLOCK_OK, TSLOCK_ELOST and TSLOCK_EWRONGTYPE: the key may
 * still be ours, and the release can be tried again.  A reentrant lock
 * held more than once only drops one hold (TSLOCK_OK, no round trip).
 */
TSLOCK_EXTERN int tslock_release(tslock_lock *lock);

/*
 * tslock_release_after - end a hold that must last at least min_ms since
 * the lock was taken: released at once if that much has passed, else the
 * lease is shortened to what is left of min_ms and the key expires by
 * itself (as ShedLock's lockAtLeastFor).  Never kept past the lease: if
 * the lease ends first, the key is left to expire with it.
 *
 * min_ms: the minimum hold, counted on the monotonic clock from the end of
 * the tslock_acquire() that took it (from now after tslock_lock_adopt()).
 * Shortening is tslock_extend() with the rest: one compare-and-PEXPIRE or
 * compare-and-set script from 2.6, WATCH-guarded from 2.2 (EXPIRE in whole
 * seconds, rounded up), and on Redis 2.0 the stamp rewritten by
 * GETSET-and-check.  Not announced on the key's channel: waiters see the
 * key expire.
 * Returns TSLOCK_OK (released, or left to expire; the object is no longer
 * held), TSLOCK_ELOST, TSLOCK_ESTATE (not held), TSLOCK_EINVAL (min_ms
 * negative or over ten years), TSLOCK_ECLOCK, or any code of
 * tslock_release() and tslock_extend(), with the object left as they leave
 * it.  A reentrant lock held more than once only drops one hold.
 * Ownership: the lock stays the caller's.
 * Threads: as for the client.
 */
TSLOCK_EXTERN int tslock_release_after(tslock_lock *lock, int64_t min_ms);

/*
 * tslock_extend - set a held lock's lease to ttl_ms from now (not added
 * to what is left), only while the lock is still ours.
 *
 * ttl_ms: the new lease, or 0 for the lock's configured ttl.
 * Token scheme: compare-and-PEXPIRE (Lua, or WATCH-guarded EXPIRE in
 * whole seconds rounded up).  Timestamp scheme: compare-and-set of a new
 * stamp (Lua, WATCH, or on Redis 2.0 GETSET-and-check, which has a gap).
 * Returns TSLOCK_OK, TSLOCK_ELOST (not ours any more, or the lease ran
 * out: nothing changed, the object is no longer held), TSLOCK_ESTATE (not
 * held), TSLOCK_EINVAL, TSLOCK_EWRONGTYPE, TSLOCK_ECLOCK (no plausible
 * time for a new stamp), TSLOCK_EUNSUPPORTED (a client limited to neither
 * scripts nor WATCH), TSLOCK_EHOOK, or a connection code.
 */
TSLOCK_EXTERN int tslock_extend(tslock_lock *lock, int64_t ttl_ms);

/*
 * tslock_lock_time_left - how long the held lease has left, as the server
 * sees it (token) or as the stored stamp says (timestamp).
 *
 * ms_left: receives the milliseconds left (0 when it has just run out).
 * Returns TSLOCK_OK, TSLOCK_ELOST (the key no longer holds our value),
 * TSLOCK_ESTATE (not held), TSLOCK_EINVAL, or a connection code.
 */
TSLOCK_EXTERN int tslock_lock_time_left(tslock_lock *lock, int64_t *ms_left);

/*
 * tslock_lock_cancel - make a wait in tslock_acquire() on this lock
 * return TSLOCK_ECANCELED.
 *
 * Async-signal-safe: may be called from a signal handler or another
 * thread.  A cancel that arrives while no wait is running cancels the
 * next wait, before its first try: that wait takes nothing, even on a
 * free key.  Returns TSLOCK_OK or TSLOCK_EINVAL.
 */
TSLOCK_EXTERN int tslock_lock_cancel(tslock_lock *lock);

/*
 * tslock_lock_is_held - whether this object holds the lock, as far as
 * its own operations know (the lease may still have run out).
 */
TSLOCK_EXTERN int tslock_lock_is_held(const tslock_lock *lock);

/*
 * tslock_lock_value - the value this object wrote for its hold (a stamp
 * or a token), or NULL when not held.
 *
 * Ownership: borrowed; valid until the next call on the lock.
 */
TSLOCK_EXTERN const char *tslock_lock_value(const tslock_lock *lock);

/*
 * tslock_lock_scheme_used - the scheme of the current or last hold
 * (never TSLOCK_SCHEME_AUTO once acquired; TSLOCK_SCHEME_AUTO before).
 */
TSLOCK_EXTERN tslock_scheme tslock_lock_scheme_used(const tslock_lock *lock);

/*
 * tslock_lock_expires_ms - when the current hold's lease runs out, in
 * wall-clock Unix milliseconds (or the last holder seen on TSLOCK_EBUSY);
 * 0 when unknown.
 */
TSLOCK_EXTERN int64_t tslock_lock_expires_ms(const tslock_lock *lock);

/*
 * tslock_lock_fence - the fencing number of the current hold, or 0 when
 * fencing is off or the lock is not held.
 */
TSLOCK_EXTERN int64_t tslock_lock_fence(const tslock_lock *lock);

/* ========================================================== redlock ==== */

/*
 * One lock over N independent Redis masters (N odd, at least 3): the
 * Redlock algorithm of the Redis documentation.  It is held while a
 * majority of the masters (N/2 + 1) hold the same random token under the
 * same key, taken within the validity time.  Opaque.
 */
typedef struct tslock_redlock tslock_redlock;

/*
 * tslock_redlock_new - make a Redlock over n clients, one per master, for
 * key.
 *
 * clients: n connected clients of independent masters (not replicas of
 * one another), borrowed.  n: odd, from 3 to 63.  Each master takes the
 * token scheme through the path its version allows (SET NX PX; one
 * script on 2.6.0 - 2.6.11; WATCH on 2.2 - 2.4).  Defaults: ttl 30000
 * ms, per-master timeout derived from the ttl, retry delay 50-100 ms.
 * Nothing is sent to the servers.
 * Returns TSLOCK_OK, TSLOCK_EINVAL (NULL or empty argument, a NULL or
 * repeated client, n even or out of range) or TSLOCK_ENOMEM.
 * Ownership: key is copied, the clients stay the caller's and must
 * outlive the Redlock; *out is new, freed by tslock_redlock_free().
 * Threads: a Redlock and its clients are used by one thread at a time,
 * except tslock_redlock_cancel().
 */
TSLOCK_EXTERN int tslock_redlock_new(tslock_redlock **out,
                                     tslock_client *const *clients, size_t n,
                                     const char *key);

/*
 * tslock_redlock_free - free a Redlock.  Does not release it: a held
 * Redlock stays held on the masters until released or its lease runs
 * out.  Accepts NULL.
 */
TSLOCK_EXTERN void tslock_redlock_free(tslock_redlock *rl);

/*
 * tslock_redlock_set_ttl - the lease in milliseconds (> 0, at most ten
 * years), set on every master.  Applies to the next acquisition.
 * Returns TSLOCK_OK or TSLOCK_EINVAL.
 */
TSLOCK_EXTERN int tslock_redlock_set_ttl(tslock_redlock *rl, int64_t ttl_ms);

/*
 * tslock_redlock_set_server_timeout - how long one master may take to
 * answer (connecting again included) before the attempt moves on to the
 * next master.
 *
 * ms: 0 (the default) for a tenth of the ttl, at least 5 ms and at most
 * 1000 ms, and never more than the client's own timeouts; > 0 exactly
 * that.  From its first operation on, the Redlock lowers each client's
 * connect and command timeouts to this; tslock_redlock_free() puts back
 * what they were.  Returns TSLOCK_OK or TSLOCK_EINVAL (negative).
 */
TSLOCK_EXTERN int tslock_redlock_set_server_timeout(tslock_redlock *rl, int ms);

/*
 * tslock_redlock_set_retry - the randomized delay between attempts of a
 * waiting tslock_redlock_acquire(), uniform in [min_ms, max_ms].
 * Returns TSLOCK_OK or TSLOCK_EINVAL (min_ms < 1 or max_ms < min_ms).
 */
TSLOCK_EXTERN int tslock_redlock_set_retry(tslock_redlock *rl, int min_ms,
                                           int max_ms);

/*
 * tslock_redlock_acquire - take the Redlock, waiting up to wait_ms.
 *
 * Each attempt writes one new token to every master in turn, each with
 * the per-master timeout.  It holds when a majority took it and the
 * validity, ttl - elapsed - drift (drift = ttl / 100 + 2 ms), is still
 * above 0; otherwise the token is deleted again from every master that
 * took it or whose answer was lost.  wait_ms: 0 tries once; > 0 retries
 * after a random delay until that many ms have passed;
 * TSLOCK_WAIT_FOREVER retries until taken or canceled.
 * Returns TSLOCK_OK (held), TSLOCK_EBUSY (not a failure: held by another
 * owner on enough masters, or taken too slowly), TSLOCK_ENOQUORUM (too
 * many masters failed for a majority), TSLOCK_EUNSUPPORTED (a master
 * older than Redis 2.2), TSLOCK_ECANCELED, TSLOCK_ESTATE (already
 * held), TSLOCK_EINVAL or TSLOCK_ECLOCK.  tslock_redlock_errstr() says
 * what each master answered.
 * Threads: as for the Redlock; tslock_redlock_cancel() may interrupt it.
 */
TSLOCK_EXTERN int tslock_redlock_acquire(tslock_redlock *rl, int64_t wait_ms);

/*
 * tslock_redlock_release - delete our token from every master that holds
 * it (compare-and-delete, as tslock_release()).
 *
 * Returns TSLOCK_OK (deleted from a majority: the lock is free; masters
 * that could not be reached let it run out by its TTL), TSLOCK_ELOST
 * (gone from so many masters that it was no longer ours; not a failure),
 * TSLOCK_ENOQUORUM (too few masters could be reached to tell: still held,
 * try again), TSLOCK_ESTATE (not held) or TSLOCK_EINVAL.
 */
TSLOCK_EXTERN int tslock_redlock_release(tslock_redlock *rl);

/*
 * tslock_redlock_extend - set the lease to ttl_ms from now on every
 * master that holds our token (compare-and-PEXPIRE, as tslock_extend()).
 *
 * ttl_ms: the new lease, or 0 for the Redlock's ttl.  Holds only when a
 * majority extended within the new validity, which then counts from the
 * start of this call.
 * Returns TSLOCK_OK, TSLOCK_ELOST (our token is gone from too many
 * masters: released everywhere, no longer held; not a failure),
 * TSLOCK_ENOQUORUM (too few masters answered: still held with the
 * validity it had), TSLOCK_ESTATE (not held) or TSLOCK_EINVAL.
 */
TSLOCK_EXTERN int tslock_redlock_extend(tslock_redlock *rl, int64_t ttl_ms);

/*
 * tslock_redlock_validity_ms - how long the hold is still valid by this
 * host's monotonic clock: ttl - drift from the start of the acquire or
 * extend that set it.  No round trip.
 *
 * Returns the ms left, 0 when not held or run out, -1 when unknown (an
 * adopted handle, until the first extend).
 */
TSLOCK_EXTERN int64_t tslock_redlock_validity_ms(const tslock_redlock *rl);

/*
 * tslock_redlock_cancel - make a wait in tslock_redlock_acquire() return
 * TSLOCK_ECANCELED.  Async-signal-safe.
 * Returns TSLOCK_OK or TSLOCK_EINVAL.
 */
TSLOCK_EXTERN int tslock_redlock_cancel(tslock_redlock *rl);

/*
 * tslock_redlock_is_held - whether this object holds the Redlock, as far
 * as its own operations know.  0 for NULL.
 */
TSLOCK_EXTERN int tslock_redlock_is_held(const tslock_redlock *rl);

/*
 * tslock_redlock_taken - on how many masters the current hold (or the
 * last attempt) has our token, as far as this object knows.
 */
TSLOCK_EXTERN int tslock_redlock_taken(const tslock_redlock *rl);

/*
 * tslock_redlock_handle - "redlock:TOKEN", the hold's token (the same on
 * every master), which tslock_redlock_adopt() turns back into a held
 * Redlock over the same masters in another process.
 *
 * Returns NULL when not held.
 * Ownership: borrowed; valid until the next call on the Redlock.
 */
TSLOCK_EXTERN const char *tslock_redlock_handle(const tslock_redlock *rl);

/*
 * tslock_redlock_adopt - make rl hold what handle describes
 * ("redlock:TOKEN" or "token:TOKEN"), on every master, so it can be
 * released or extended.  Nothing is sent; a hold that is gone is found
 * out by the next release or extend.
 * Returns TSLOCK_OK, TSLOCK_EINVAL (NULL, or a handle that does not
 * parse; the detail names what was expected) or TSLOCK_ESTATE (held).
 * Ownership: handle is copied.
 */
TSLOCK_EXTERN int tslock_redlock_adopt(tslock_redlock *rl, const char *handle);

/*
 * tslock_redlock_errstr - the detail of the last call: what each master
 * answered.  "" when there is none, "" for NULL.
 * Ownership: borrowed; valid until the next call on the Redlock.
 */
TSLOCK_EXTERN const char *tslock_redlock_errstr(const tslock_redlock *rl);

/* ======================================== several locks, scoped use ==== */

/*
 * tslock_acquire_all - take every lock of a set, or none.
 *
 * locks: n lock objects (n >= 1), on one client or several, with distinct
 * keys.  The keys are taken in one fixed order (their bytes, as memcmp
 * sorts them), each with a single try; at the first busy one, the locks
 * taken so far are given back and only that key is waited for (within
 * wait_ms, as tslock_acquire()), holding nothing else; then the pass
 * starts again.  No tslock client ever waits while holding part of a
 * set, so sets cannot deadlock one another.
 * Returns TSLOCK_OK (every lock held), or with none of them held: the
 * code of the busy or failed key (TSLOCK_EBUSY, TSLOCK_EUNREADABLE,
 * TSLOCK_ECANCELED, a connection code ...), TSLOCK_EINVAL (NULL, n == 0,
 * a key twice).  If giving back a partly taken set fails, that release's
 * code is returned and the locks it could not give back stay held
 * (tslock_lock_is_held()): release them, or the set, again.  The message
 * is on the client of the lock it names.  To cancel a wait, call
 * tslock_lock_cancel() on every lock of the set.
 */
TSLOCK_EXTERN int tslock_acquire_all(tslock_lock *const *locks, size_t n,
                                     int64_t wait_ms);

/*
 * tslock_release_all - release every held lock of a set.
 *
 * Each held lock is released (in the reverse of the acquire order), even
 * after another's release failed.  Returns TSLOCK_OK (all released),
 * TSLOCK_ESTATE (none was held), TSLOCK_EINVAL, or the first failure
 * (TSLOCK_ELOST, a connection code ...), its message on that lock's
 * client; as after tslock_release(), a lock whose release failed but was
 * not lost stays held.
 */
TSLOCK_EXTERN int tslock_release_all(tslock_lock *const *locks, size_t n);

/* The work done under tslock_with(): its int result is handed back. */
typedef int (*tslock_with_fn)(tslock_lock *lock, void *userdata);

/*
 * tslock_with - take the lock, run fn, release the lock.
 *
 * wait_ms: as tslock_acquire().  renew_client: NULL for no renewal, or a
 * connected client for a watchdog that keeps the lease renewed while fn
 * runs (tslock_watchdog_start()).  fn(lock, userdata) runs only once the
 * lock is held; *result (result may be NULL) gets its return value, and
 * is left untouched when fn did not run.
 * Returns TSLOCK_OK (held from before fn started until released after it
 * ended), TSLOCK_ELOST (fn ran, but the hold was lost: the lease ran out
 * or a renewal found the key taken; mutual exclusion may have been
 * broken while fn ran), the acquire's code (fn did not run), the
 * watchdog's start code (fn did not run; the lock was released),
 * TSLOCK_ESTATE (fn released the lock itself), or the release's code (fn
 * ran; the lock stays held, as after tslock_release()).
 * Threads: with renew_client, fn must not use renew_client, nor change
 * the lock (extend, release); reading it is safe.
 */
TSLOCK_EXTERN int tslock_with(tslock_lock *lock, int64_t wait_ms,
                              tslock_client *renew_client, tslock_with_fn fn,
                              void *userdata, int *result);

/* =========================================== handles and inspection ==== */

/*
 * tslock_lock_handle - a printable handle of the current hold, which
 * tslock_lock_adopt() turns back into a held lock object in another
 * process or on another connection.  The forms are "token:VALUE",
 * "timestamp-UNIT:VALUE", "bridge-UNIT:VALUE" and, for a bridge hold with
 * its ownership proof (Redis 2.2 and later), "bridge-UNIT:VALUE/TOKEN",
 * with UNIT ms, s or float and TOKEN the owner key's 32 hex digits.  A
 * timestamp or bridge extension writes a new stamp, so the handle changes
 * with it.
 *
 * Returns NULL when the lock is not held.
 * Ownership: borrowed; valid until the next call on the lock.
 */
TSLOCK_EXTERN const char *tslock_lock_handle(const tslock_lock *lock);

/*
 * tslock_lock_adopt - make lock hold what handle describes, as if it had
 * acquired it, so it can be released, extended or read.
 *
 * Nothing is sent to the server; a handle whose hold is gone is found
 * out by the next release or extend (TSLOCK_ELOST).
 * Returns TSLOCK_OK, TSLOCK_EINVAL (NULL, or a handle that does not
 * parse; the detail names what was expected) or TSLOCK_ESTATE (already
 * held).
 * Ownership: handle is copied.
 */
TSLOCK_EXTERN int tslock_lock_adopt(tslock_lock *lock, const char *handle);

/*
 * tslock_lock_peek - read what holds the lock's key now, whoever wrote
 * it (GET and PTTL, or TTL before Redis 2.6).
 *
 * value, size: receive the stored value, "" when the key is absent
 * (truncated to size - 1 bytes).  ttl_ms: receives the server TTL in ms,
 * -1 when the key has none, -2 when it is absent (may be NULL).
 * Returns TSLOCK_OK, TSLOCK_EINVAL, TSLOCK_EWRONGTYPE or a connection
 * code.
 */
TSLOCK_EXTERN int tslock_lock_peek(tslock_lock *lock, char *value, size_t size,
                                   int64_t *ttl_ms);

/*
 * tslock_lock_owner_key - the name of the owner key a bridge hold with
 * its ownership proof keeps beside the lock's key ("{KEY}:owner", or
 * "KEY:owner" when KEY has a hash tag or a '}').
 *
 * Returns the name, or NULL when lock is NULL or memory ran out.
 * Ownership: borrowed; valid while the lock object lives.
 */
TSLOCK_EXTERN const char *tslock_lock_owner_key(tslock_lock *lock);

/*
 * tslock_lock_peek_owner - read the owner key of the lock's key (GET):
 * the token of the bridge holder whose proof it carries, whoever that is.
 *
 * token, size: receive the 32 hex digits, "" when the owner key is
 * absent (size must be at least 33).
 * Returns TSLOCK_OK, TSLOCK_EINVAL, TSLOCK_EUNREADABLE (it holds
 * something else; token gets ""), TSLOCK_EWRONGTYPE or a connection
 * code.
 */
TSLOCK_EXTERN int tslock_lock_peek_owner(tslock_lock *lock, char *token,
                                         size_t size);

/*
 * tslock_lock_break - for operators: delete the lock's key, whoever holds
 * it and however long its lease, but only while it holds exactly value
 * (as read with tslock_lock_peek()), together with its bridge owner key,
 * and announce it to waiters.  One script on Redis 2.6 and later; WATCH,
 * GET, MULTI, DEL, EXEC on 2.2 - 2.4; GET, compare, DEL on 2.0, where a
 * value written between the GET and the DEL is deleted too.
 *
 * value: the exact value to delete; copied before the call returns.
 * Returns TSLOCK_OK (deleted), TSLOCK_ELOST (the key holds another value
 * or is gone: nothing deleted; not a failure), TSLOCK_EINVAL (NULL or ""),
 * TSLOCK_ESTATE (this lock object holds the lock: release it instead),
 * TSLOCK_EWRONGTYPE, TSLOCK_EHOOK, or a connection code.
 * Ownership: value stays the caller's.
 * Threads: as for the client.
 */
TSLOCK_EXTERN int tslock_lock_break(tslock_lock *lock, const char *value);

/*
 * tslock_value_classify - tell from a stored value which kind of lock
 * wrote it: 32 hex digits are a token (tslock's, or redis-py's uuid
 * hex); a plausible stamp is a timestamp in the unit its magnitude and
 * form show (a '.' means float seconds; otherwise milliseconds, else
 * seconds).
 *
 * scheme, unit, expires_ms: receive the verdict (unit and expires_ms
 * only for stamps; expires_ms is 0 for tokens).  Any may be NULL.
 * Returns TSLOCK_OK, TSLOCK_EUNREADABLE (neither), or TSLOCK_EINVAL.
 * Threads: safe from any thread.
 */
TSLOCK_EXTERN int tslock_value_classify(const char *value, size_t len,
                                        tslock_scheme *scheme,
                                        tslock_unit *unit, int64_t *expires_ms);

/* What a stored value is, as tslock_value_name() tells it. */
typedef enum tslock_value_kind {
    TSLOCK_VALUE_NOT_A_LOCK = 0,   /* no lock wrote it, by its form */
    TSLOCK_VALUE_TOKEN = 1,        /* 32 hex digits: tslock's or redis-py's */
    TSLOCK_VALUE_STAMP = 2,        /* an expiry stamp tslock can read */
    TSLOCK_VALUE_UNKNOWN_STAMP = 3 /* looks like a lock; nothing reads it */
} tslock_value_kind;

/*
 * tslock_value_name - what a stored value is, as tslock's survey, top,
 * watch and exporter name it: a token; a stamp, in a plain unit
 * (tslock_value_classify()) or of the presets whose clients could have
 * written it (tslock_dialect_match()); an unknown stamp (a plausible
 * number first, or a PHP-serialized array, that no unit or preset
 * reads); or no lock.  A bare "never expires" sentinel ("1", "true") is
 * also what a counter or a flag holds: it is a stamp only on a key whose
 * name holds "lock" in any case, or when key is NULL (a key the caller
 * knows is a lock).
 *
 * key, key_len: the key's name, or NULL.
 * kind: receives the verdict.  unit, expires_ms: receive a stamp's unit
 * (of the first preset, for a dialect's stamp) and the last Unix
 * millisecond it is valid (INT64_MAX: never expires); may be NULL.
 * dialects, size: receive the presets joined by '/', as
 * tslock_dialect_match() gives them; "unknown-stamp" for a value that
 * looks like a lock but no preset reads; "" for tokens and for values
 * that are no lock.  May be NULL and 0; else size is at least 1.
 * Returns TSLOCK_OK (whatever the verdict), or TSLOCK_EINVAL (value or
 * kind NULL, or dialects given with size 0).
 * Threads: safe from any thread.
 */
TSLOCK_EXTERN int tslock_value_name(const char *key, size_t key_len,
                                    const char *value, size_t len,
                                    tslock_value_kind *kind, tslock_unit *unit,
                                    int64_t *expires_ms, char *dialects,
                                    size_t size);

/* ========================================================== watchdog ==== */

/* Keeps one held lock renewed from a thread of its own.  Opaque. */
typedef struct tslock_watchdog tslock_watchdog;

/*
 * Called once, from the watchdog's thread, when renewing ends in failure:
 * code is the tslock code (TSLOCK_ELOST when the lock moved on, or the
 * lease ran out before a renewal reached the server; a connection code
 * when reconnecting was given up early, see tslock_lock_set_reconnect())
 * and detail the renewing client's message.  The same type serves the
 * warnings of tslock_watchdog_set_on_warning().
 */
typedef void (*tslock_watchdog_fn)(int code, const char *detail,
                                   void *userdata);

/*
 * tslock_watchdog_start - renew a held lock every interval_ms until
 * stopped, on renew_client from a new thread.
 *
 * lock: a held lock.  renew_client: a connected client used only by the
 * watchdog while it runs, so a busy caller never delays a renewal.
 * interval_ms: 0 for a third of the lock's ttl.  Each renewal sets the
 * lease to the lock's ttl (tslock_extend()).  on_failure: may be NULL;
 * tslock_watchdog_status() reports the same.
 * Returns TSLOCK_OK, TSLOCK_EINVAL, TSLOCK_ESTATE (lock not held),
 * TSLOCK_ENOMEM or TSLOCK_EIO (no thread).
 * Ownership: *out is new and freed by tslock_watchdog_stop().
 * Threads: while it runs, neither lock nor renew_client may be used by
 * the caller; stop the watchdog first.
 */
TSLOCK_EXTERN int
tslock_watchdog_start(tslock_watchdog **out, tslock_lock *lock,
                      tslock_client *renew_client, int64_t interval_ms,
                      tslock_watchdog_fn on_failure, void *userdata);

/*
 * tslock_watchdog_set_on_warning - be told of each transient fault
 * (TSLOCK_EIO, TSLOCK_ETIMEDOUT) a renewal rode out: the renewal
 * reconnected and renewed in time, so the lock is still ours.
 *
 * on_warning: called from the watchdog's thread with the fault's code
 * and a detail saying what failed and how it was recovered; NULL to stop.
 * Install it right after tslock_watchdog_start(); a fault recovered
 * before then is only counted (tslock_watchdog_recoveries()).
 * Returns TSLOCK_OK or TSLOCK_EINVAL.
 * Ownership: userdata stays the caller's.  Threads: safe from any thread.
 */
TSLOCK_EXTERN int tslock_watchdog_set_on_warning(tslock_watchdog *watchdog,
                                                 tslock_watchdog_fn on_warning,
                                                 void *userdata);

/*
 * tslock_watchdog_recoveries - how many renewals hit a transient fault
 * and recovered from it; 0 for NULL.
 * Threads: safe from any thread.
 */
TSLOCK_EXTERN unsigned
tslock_watchdog_recoveries(const tslock_watchdog *watchdog);

/*
 * tslock_watchdog_status - TSLOCK_OK while every renewal has succeeded,
 * else the code of the failure that ended the renewals.
 * Threads: safe from any thread.
 */
TSLOCK_EXTERN int tslock_watchdog_status(const tslock_watchdog *watchdog);

/*
 * tslock_watchdog_stop - stop renewing, join the thread, hand the renewed
 * hold back to the lock (no longer held if a renewal found it lost), and
 * free the watchdog.
 *
 * Returns the final tslock_watchdog_status(); TSLOCK_OK for NULL.
 */
TSLOCK_EXTERN int tslock_watchdog_stop(tslock_watchdog *watchdog);

/* ========================================================= utilities ==== */

/*
 * tslock_stamp_parse - read a stored timestamp-scheme value.
 *
 * text, len: the value as stored (len bytes, NUL bytes included).
 * unit: the unit it is expected in.
 * expires_ms: receives the last Unix millisecond the stamp is valid:
 * the stored time as written for TSLOCK_UNIT_MS (including its "+1") and
 * TSLOCK_UNIT_FLOAT; S.999 for a whole-seconds stamp S, which the clients
 * that write it treat as valid through second S.  The lock counts as
 * expired once the clock passes it.
 * Accepts plain decimal digits, and for TSLOCK_UNIT_FLOAT one '.' and a
 * fraction (digits past the third are dropped); rejects empty text,
 * spaces, signs, exponents, a fraction in the whole-number units,
 * trailing garbage, more than 16 digits, and times outside 2000-01-01
 * 00:00:00 .. 2100-01-01 00:00:00 UTC inclusive in the given unit (a
 * seconds stamp read as milliseconds lies in 1970).
 * Returns TSLOCK_OK, TSLOCK_EUNREADABLE, or TSLOCK_EINVAL (NULL text or
 * expires_ms, unknown unit).
 * Threads: safe from any thread.
 */
TSLOCK_EXTERN int tslock_stamp_parse(const char *text, size_t len,
                                     tslock_unit unit, int64_t *expires_ms);

/*
 * tslock_stamp_format - write the stamp for a lease of ttl_ms taken at
 * now_ms (Unix milliseconds), in unit, with that unit's legacy convention:
 * TSLOCK_UNIT_MS writes now + ttl + 1; TSLOCK_UNIT_S writes whole seconds,
 * floor(now) + ceil(ttl) + 1; TSLOCK_UNIT_FLOAT writes now + ttl in
 * seconds with three decimals.
 *
 * buf, size: size must be at least 32 (any stamp fits in that).
 * now_ms, ttl_ms: both > 0 and before 2100.
 * Returns the length written, or TSLOCK_EINVAL.
 * Threads: safe from any thread.
 */
TSLOCK_EXTERN int tslock_stamp_format(char *buf, size_t size, tslock_unit unit,
                                      int64_t now_ms, int64_t ttl_ms);

/*
 * tslock_key_slot - the Redis Cluster hash slot of a key: CRC16 (XMODEM)
 * of the key, or of its hash tag, modulo 16384.  The hash tag is what
 * lies between the first '{' and the first '}' after it, when that is
 * not empty; as CLUSTER KEYSLOT computes it.
 *
 * key, len: the key's bytes (any bytes, NUL included).
 * Returns 0 .. 16383, or TSLOCK_EINVAL for a NULL key.
 * Threads: safe from any thread.
 */
TSLOCK_EXTERN int tslock_key_slot(const char *key, size_t len);

#ifdef __cplusplus
}
#endif

#endif /* TSLOCK_H */

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cluster.c - Redis Cluster: a key's hash slot (CRC16 of the key or of
 * its hash tag), the slot map learned from CLUSTER SLOTS, one connection
 * per master opened on first use, and -MOVED, -ASK, -TRYAGAIN and
 * -CLUSTERDOWN followed as the Redis Cluster specification asks of
 * clients.  A single server never comes here: tslock__pipeline tests one
 * pointer.
 */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net.h"

#define MAX_HOPS      16  /* MOVED and ASK followed for one pipeline */
#define BACKOFF_FIRST 5   /* ms, TRYAGAIN and CLUSTERDOWN */
#define BACKOFF_MAX   100 /* ms */
#define MAX_SEND      (2 * (2 + TSLOCK__MAX_QUEUED) + 8)

struct node {
    char *host;
    int port;
    char id[41]; /* from CLUSTER SLOTS (4.0+) or MYID, or "" */
    redisContext *ctx;
};

struct tslock__cluster {
    struct node *nodes;
    int n, cap;
    unsigned short owner[TSLOCK__SLOTS]; /* node index + 1; 0 unknown */
    int current;                         /* whose connection c->ctx is, or -1 */
    int watch_node;                      /* where a WATCH is pending, or -1 */
    int watch_asking;                    /* it was sent after ASKING */
    int stale;   /* a MOVED came: reload the map at the next use */
    int rewatch; /* a transaction was refused as moved under WATCH */
};

/* ------------------------------------------------------------ slots */

/* CRC16-CCITT (XMODEM): polynomial 0x1021, initial 0, as the spec says. */
static unsigned crc16(const char *buf, size_t len)
{
    unsigned crc = 0;
    size_t i;
    int b;

    for (i = 0; i < len; i++) {
        crc ^= (unsigned)(unsigned char)buf[i] << 8;
        for (b = 0; b < 8; b++)
            crc = crc & 0x8000u ? (crc << 1) ^ 0x1021u : crc << 1;
        crc &= 0xffffu;
    }
    return crc;
}

/*
 * The hash tag rule: the first '{', then the first '}' after it; if
 * something lies between them, only that is hashed.  "{}x" and "x{" hash
 * whole; "{a}{b}" hashes "a"; "{{a}}" hashes "{a".
 */
unsigned tslock__slot(const char *key, size_t len)
{
    const char *open = memchr(key, '{', len), *close = NULL;

    if (open != NULL)
        close = memchr(open + 1, '}', len - (size_t)(open + 1 - key));
    if (close != NULL && close > open + 1)
        return crc16(open + 1, (size_t)(close - open - 1)) & 16383u;
    return crc16(key, len) & 16383u;
}

int tslock_key_slot(const char *key, size_t len)
{
    if (key == NULL)
        return TSLOCK_EINVAL;
    return (int)tslock__slot(key, len);
}

/* ------------------------------------------------------------ nodes */

static int node_find(struct tslock__cluster *cl, const char *host, int port,
                     const char *id)
{
    int i;

    for (i = 0; id != NULL && id[0] != '\0' && i < cl->n; i++)
        if (strcmp(cl->nodes[i].id, id) == 0)
            return i;
    for (i = 0; i < cl->n; i++)
        if (cl->nodes[i].port == port && strcmp(cl->nodes[i].host, host) == 0)
            return i;
    return -1;
}

/* The index of host:port (id may be NULL), added if new; <0 on ENOMEM. */
static int node_get(tslock_client *c, const char *host, int port,
                    const char *id)
{
    struct tslock__cluster *cl = c->cluster;
    int i = node_find(cl, host, port, id);
    struct node *grown;

    if (i >= 0) {
        if (id != NULL && id[0] != '\0' && cl->nodes[i].id[0] == '\0')
            snprintf(cl->nodes[i].id, sizeof(cl->nodes[i].id), "%s", id);
        return i;
    }
    if (cl->n == cl->cap) {
        int cap = cl->cap ? cl->cap * 2 : 8;
        if (cap > 65000)
            return tslock__fail(c, TSLOCK_ECLUSTER, "too many cluster nodes");
        grown = realloc(cl->nodes, (size_t)cap * sizeof(*grown));
        if (grown == NULL)
            return tslock__fail(c, TSLOCK_ENOMEM, "no memory for a node");
        cl->nodes = grown;
        cl->cap = cap;
    }
    memset(&cl->nodes[cl->n], 0, sizeof(cl->nodes[0]));
    cl->nodes[cl->n].host = strdup(host);
    if (cl->nodes[cl->n].host == NULL)
        return tslock__fail(c, TSLOCK_ENOMEM, "no memory for a node");
    cl->nodes[cl->n].port = port;
    if (id != NULL)
        snprintf(cl->nodes[cl->n].id, sizeof(cl->nodes[0].id), "%s", id);
    return cl->n++;
}

void tslock__cluster_close(tslock_client *c)
{
    struct tslock__cluster *cl = c->cluster;
    int i, owned = 0;

    if (cl == NULL)
        return;
    for (i = 0; i < cl->n; i++) {
        if (cl->nodes[i].ctx == c->ctx)
            owned = 1;
        if (cl->nodes[i].ctx != NULL)
            tslock__ctx_free(cl->nodes[i].ctx);
        cl->nodes[i].ctx = NULL;
    }
    if (!owned && c->ctx != NULL)
        tslock__ctx_free(c->ctx);
    c->ctx = NULL;
    cl->current = -1;
    cl->watch_node = -1;
}

void tslock__cluster_free(tslock_client *c)
{
    struct tslock__cluster *cl = c->cluster;
    int i;

    if (cl == NULL)
        return;
    tslock__cluster_close(c);
    for (i = 0; i < cl->n; i++)
        free(cl->nodes[i].host);
    free(cl->nodes);
    free(cl);
    c->cluster = NULL;
}

int tslock__cluster_set_timeout(tslock_client *c)
{
    struct tslock__cluster *cl = c->cluster;
    struct timeval tv = tslock__ms_to_timeval(c->command_ms);
    int i;

    for (i = 0; i < cl->n; i++)
        if (cl->nodes[i].ctx != NULL
            && redisSetTimeout(cl->nodes[i].ctx, tv) != REDIS_OK) {
            c->ctx = cl->nodes[i].ctx;
            cl->current = i;
            return tslock__io_failure(c, "set command timeout");
        }
    return TSLOCK_OK;
}

int tslock__cluster_seed(tslock_client *c, int i, const char **host, int *port)
{
    if (c->cluster == NULL || i >= c->cluster->n)
        return 0;
    *host = c->cluster->nodes[i].host;
    *port = c->cluster->nodes[i].port;
    return 1;
}

/* ------------------------------------------------------- the slot map */

static int is_int(const redisReply *r)
{
    return r != NULL && r->type == REDIS_REPLY_INTEGER;
}

static int is_str(const redisReply *r)
{
    return r != NULL
           && (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS);
}

/*
 * Read CLUSTER SLOTS: [[start, end, [ip, port, id?, ...], replicas...]].
 * An empty ip (a node that does not know its own address) is the one we
 * asked, at fallback_host.
 */
static int parse_slots(tslock_client *c, const redisReply *r,
                       const char *fallback_host)
{
    struct tslock__cluster *cl = c->cluster;
    size_t i;

    if (r->type == REDIS_REPLY_ERROR)
        return tslock__reply_error(c, "CLUSTER SLOTS", r);
    if (r->type != REDIS_REPLY_ARRAY)
        return tslock__unexpected(c, "CLUSTER SLOTS", "an array", r);
    memset(cl->owner, 0, sizeof(cl->owner));
    for (i = 0; i < r->elements; i++) {
        const redisReply *e = r->element[i], *m;
        long long s, end;
        int idx;

        if (e->type != REDIS_REPLY_ARRAY || e->elements < 3
            || !is_int(e->element[0]) || !is_int(e->element[1])
            || e->element[2]->type != REDIS_REPLY_ARRAY
            || e->element[2]->elements < 2)
            return tslock__unexpected(c, "CLUSTER SLOTS",
                                      "[start, end, [ip, port, ...]]", e);
        m = e->element[2];
        s = e->element[0]->integer;
        end = e->element[1]->integer;
        if (!is_str(m->element[0]) || !is_int(m->element[1]) || s < 0
            || end >= TSLOCK__SLOTS || s > end)
            return tslock__unexpected(c, "CLUSTER SLOTS",
                                      "a slot range and a node", e);
        idx = node_get(
            c, m->element[0]->len ? m->element[0]->str : fallback_host,
            (int)m->element[1]->integer,
            m->elements > 2 && is_str(m->element[2]) ? m->element[2]->str
                                                     : NULL);
        if (idx < 0)
            return idx;
        for (; s <= end; s++)
            cl->owner[s] = (unsigned short)(idx + 1);
    }
    cl->stale = 0;
    return TSLOCK_OK;
}

int tslock__cluster_setup(tslock_client *c)
{
    static const char *myid[2] = {"CLUSTER", "MYID"};
    static const char *slots[2] = {"CLUSTER", "SLOTS"};
    const struct tslock__queued q[2] = {{TSLOCK_STEP_GET, 2, myid},
                                        {TSLOCK_STEP_GET, 2, slots}};
    struct tslock__cluster *cl = c->cluster;
    redisReply *r[2] = {NULL, NULL};
    int rc, idx;

    if (cl == NULL) {
        cl = calloc(1, sizeof(*cl));
        if (cl == NULL)
            return tslock__fail(c, TSLOCK_ENOMEM, "no memory for a slot map");
        c->cluster = cl;
    }
    cl->current = cl->watch_node = -1;
    rc = tslock__exchange(c, 2, q, r);
    if (rc != TSLOCK_OK)
        return rc;
    if (!is_str(r[0]))
        rc = tslock__unexpected(c, "CLUSTER MYID", "a node id", r[0]);
    else
        rc = parse_slots(c, r[1], c->host);
    if (rc == TSLOCK_OK) {
        /* The node we reached: found by its id, or added. */
        idx = node_get(c, c->host, c->port, r[0]->str);
        if (idx < 0) {
            rc = idx;
        } else {
            if (cl->nodes[idx].ctx != NULL && cl->nodes[idx].ctx != c->ctx)
                tslock__ctx_free(cl->nodes[idx].ctx);
            cl->nodes[idx].ctx = c->ctx;
            cl->current = idx;
        }
    }
    tslock__free_replies(2, r);
    return rc;
}

/* Reload the map from node i (a MOVED said it changed). */
static void reload(tslock_client *c, int i)
{
    static const char *slots[2] = {"CLUSTER", "SLOTS"};
    struct tslock__cluster *cl = c->cluster;
    char keep[TSLOCK__ERRSTR_SIZE];
    redisReply *r = NULL;

    memcpy(keep, c->errstr, sizeof(keep));
    if (tslock__roundtrip(cl->nodes[i].ctx, 2, slots, &r) == REDIS_OK)
        (void)parse_slots(c, r, cl->nodes[i].host);
    freeReplyObject(r);
    memcpy(c->errstr, keep, sizeof(keep));
}

/* Make node i's connection c->ctx, opening it on first use. */
static int use_node(tslock_client *c, int i)
{
    struct tslock__cluster *cl = c->cluster;
    struct node *nd = &cl->nodes[i];

    if (nd->ctx == NULL) {
        int rc = tslock__connect_node(c, nd->host, nd->port, &nd->ctx);
        if (rc != TSLOCK_OK) {
            c->broken = 1;
            return tslock__fail(c, rc == TSLOCK_EAUTH ? rc : TSLOCK_EIO,
                                "connect to cluster node %s:%d failed",
                                nd->host, nd->port);
        }
    }
    c->ctx = nd->ctx;
    cl->current = i;
    return TSLOCK_OK;
}

/* -------------------------------------------------------- redirection */

enum redirect { NONE, MOVED, ASK, RETRY };

static enum redirect redirect_of(const redisReply *r)
{
    if (r == NULL || r->type != REDIS_REPLY_ERROR)
        return NONE;
    if (strncmp(r->str, "MOVED ", 6) == 0)
        return MOVED;
    if (strncmp(r->str, "ASK ", 4) == 0)
        return ASK;
    if (strncmp(r->str, "TRYAGAIN", 8) == 0
        || strncmp(r->str, "CLUSTERDOWN", 11) == 0)
        return RETRY;
    return NONE;
}

/* "MOVED 3999 127.0.0.1:6381": the slot and the node's index. */
static int redirect_target(tslock_client *c, const redisReply *r, int *slot)
{
    const char *p = strchr(r->str, ' '), *addr, *colon;
    char host[256];
    long s;
    int port;

    if (p == NULL)
        return -1;
    s = strtol(p + 1, NULL, 10);
    addr = strchr(p + 1, ' ');
    if (addr == NULL || s < 0 || s >= TSLOCK__SLOTS)
        return -1;
    addr++;
    colon = strrchr(addr, ':');
    if (colon == NULL || colon == addr
        || (size_t)(colon - addr) >= sizeof(host))
        return -1;
    memcpy(host, addr, (size_t)(colon - addr));
    host[colon - addr] = '\0';
    port = atoi(colon + 1);
    if (port <= 0 || port > 65535)
        return -1;
    *slot = (int)s;
    return node_get(c, host, port, NULL);
}

static int is_named(const struct tslock__queued *q, const char *name)
{
    return strcasecmp(q->argv[0], name) == 0;
}

/*
 * Send the commands sel[0..m) of q to node `node`: with ASKING before
 * each of them when asking (but not inside MULTI, where the flag holds
 * until EXEC), and the replies into out[sel[i]].
 */
static int send_selected(tslock_client *c, int node, int asking,
                         const struct tslock__queued *q, const int *sel, int m,
                         redisReply **out)
{
    static const char *askv[1] = {"ASKING"};
    struct tslock__queued s[MAX_SEND];
    redisReply *r[MAX_SEND];
    int map[MAX_SEND];
    int i, k = 0, in_multi = 0, rc = use_node(c, node);

    if (rc != TSLOCK_OK)
        return rc;
    for (i = 0; i < m && k + 2 <= MAX_SEND; i++) {
        const struct tslock__queued *one = &q[sel[i]];
        if (asking && !in_multi) {
            s[k].step = one->step;
            s[k].argc = 1;
            s[k].argv = askv;
            map[k++] = -1;
        }
        if (is_named(one, "MULTI"))
            in_multi = 1;
        else if (is_named(one, "EXEC") || is_named(one, "DISCARD"))
            in_multi = 0;
        s[k] = *one;
        map[k++] = sel[i];
    }
    if (i < m)
        return tslock__fail(c, TSLOCK_EINVAL, "%d commands in one pipeline", m);
    rc = tslock__exchange(c, k, s, r);
    if (rc != TSLOCK_OK)
        return rc;
    for (i = 0; i < k; i++) {
        if (map[i] < 0)
            freeReplyObject(r[i]);
        else
            out[map[i]] = r[i];
    }
    return TSLOCK_OK;
}

/* A reply standing for what a transaction's commands would have said. */
static redisReply *made_reply(int type, const char *str)
{
    redisReply *r = calloc(1, sizeof(*r));

    if (r != NULL && str != NULL) {
        r->str = strdup(str);
        if (r->str == NULL) {
            free(r);
            return NULL;
        }
        r->len = strlen(str);
    }
    if (r != NULL)
        r->type = type;
    return r;
}

/*
 * A transaction under WATCH was redirected: its WATCH lives on the
 * connection it was sent on, so it must not run anywhere else.  Nothing
 * of it ran (a queued command's redirection aborts EXEC), which is what
 * a watched key changing says: MULTI +OK, every command +QUEUED, EXEC
 * nil.  The caller tries again, and its next WATCH goes where the key is.
 */
static int as_watch_failed(tslock_client *c, int n,
                           const struct tslock__queued *q, redisReply **out)
{
    int i, in_multi = 0;

    for (i = 0; i < n; i++) {
        redisReply *made;
        if (is_named(&q[i], "MULTI")) {
            in_multi = 1;
            made = made_reply(REDIS_REPLY_STATUS, "OK");
        } else if (is_named(&q[i], "EXEC")) {
            in_multi = 0;
            made = made_reply(REDIS_REPLY_NIL, NULL);
        } else if (in_multi) {
            made = made_reply(REDIS_REPLY_STATUS, "QUEUED");
        } else {
            continue;
        }
        freeReplyObject(out[i]);
        out[i] = made;
        if (made == NULL) {
            tslock__free_replies(n, out);
            return tslock__fail(c, TSLOCK_ENOMEM, "no memory for a reply");
        }
    }
    return TSLOCK_OK;
}

int tslock__rewatch(tslock_client *c)
{
    int was;

    if (c->cluster == NULL)
        return 0;
    was = c->cluster->rewatch;
    c->cluster->rewatch = 0;
    return was;
}

/* Sleep before another TRYAGAIN; 0 when the budget is spent. */
static int back_off(tslock_client *c, int64_t *waited, int *delay)
{
    int64_t budget = c->command_ms > 0 ? c->command_ms : 5000;
    int ms =
        *delay / 2 + (int)(tslock__random64(c) % (uint64_t)(*delay / 2 + 1));

    if (*waited >= budget)
        return 0;
    if (ms > budget - *waited)
        ms = (int)(budget - *waited);
    (void)poll(NULL, 0, ms);
    *waited += ms;
    *delay = *delay * 2 > BACKOFF_MAX ? BACKOFF_MAX : *delay * 2;
    return 1;
}

/* Where a pipeline goes first: its WATCH's node, or the slot's owner. */
static int first_node(tslock_client *c, unsigned slot, int n,
                      const struct tslock__queued *q, int *asking)
{
    struct tslock__cluster *cl = c->cluster;
    int i;

    *asking = 0;
    if (cl->watch_node >= 0)
        for (i = 0; i < n; i++)
            if (is_named(&q[i], "MULTI") || is_named(&q[i], "UNWATCH")) {
                *asking = cl->watch_asking;
                return cl->watch_node;
            }
    if (cl->owner[slot] != 0)
        return cl->owner[slot] - 1;
    return cl->current >= 0 ? cl->current : 0;
}

/*
 * After a round: a WATCH that answered +OK waits on this node's
 * connection (sent after ASKING or not); EXEC, UNWATCH and DISCARD end it.
 */
static void note_watch(struct tslock__cluster *cl, int node, int asking,
                       const struct tslock__queued *q, const int *sel, int m,
                       redisReply **out)
{
    int i;

    for (i = 0; i < m; i++) {
        const struct tslock__queued *one = &q[sel[i]];
        const redisReply *r = out[sel[i]];
        if (is_named(one, "WATCH") && r != NULL
            && r->type == REDIS_REPLY_STATUS) {
            cl->watch_node = node;
            cl->watch_asking = asking;
        } else if (is_named(one, "EXEC") || is_named(one, "UNWATCH")
                   || is_named(one, "DISCARD")) {
            cl->watch_node = -1;
        }
    }
}

/* Where one pipeline stands in the redirection loop, from round to round. */
struct route {
    int node;       /* where the next round goes */
    int asking;     /* that round goes after ASKING */
    int hops;       /* MOVED and ASK followed so far */
    int delay;      /* ms, the next TRYAGAIN or CLUSTERDOWN wait */
    int64_t waited; /* ms waited on TRYAGAIN and CLUSTERDOWN so far */
    int watched;    /* the round goes to the connection holding our WATCH */
    int sel[2 + TSLOCK__MAX_QUEUED + 8]; /* the commands the round sends */
    int m;                               /* how many of them */
    char last[160]; /* the last redirection, for the error at the end */
};

/* Finds a round's first redirection, and whether one hit a MULTI block. */
static const redisReply *first_redirect(int n, const struct tslock__queued *q,
                                        redisReply **out, enum redirect *kind,
                                        int *block)
{
    const redisReply *first = NULL;
    int i, in_multi = 0;

    *kind = NONE;
    *block = 0;
    for (i = 0; i < n; i++) {
        enum redirect r = redirect_of(out[i]);
        if (is_named(&q[i], "MULTI"))
            in_multi = 1;
        if (r != NONE && first == NULL) {
            first = out[i];
            *kind = r;
        }
        if (r != NONE && in_multi)
            *block = 1;
        if (is_named(&q[i], "EXEC"))
            in_multi = 0;
    }
    return first;
}

/* Picks what goes again: the redirected, whole blocks, a later PUBLISH. */
static int select_again(int n, const struct tslock__queued *q, redisReply **out,
                        int block, int *sel)
{
    int i, k = 0, in_multi = 0;

    for (i = 0; i < n; i++) {
        int again = redirect_of(out[i]) != NONE;
        if (is_named(&q[i], "MULTI"))
            in_multi = 1;
        if (in_multi && block)
            again = 1;
        if (k > 0
            && (is_named(&q[i], "PUBLISH") || is_named(&q[i], "SPUBLISH")))
            /* a release's announcement */
            again = 1;
        if (is_named(&q[i], "EXEC"))
            in_multi = 0;
        if (again) {
            freeReplyObject(out[i]);
            out[i] = NULL;
            sel[k++] = i;
        }
    }
    return k;
}

/* TRYAGAIN, CLUSTERDOWN: waits, asks the owner again; 0 after too long. */
static int wait_for_owner(tslock_client *c, unsigned slot, struct route *rt)
{
    struct tslock__cluster *cl = c->cluster;

    if (!back_off(c, &rt->waited, &rt->delay))
        return 0;
    if (cl->stale || strncmp(rt->last, "CLUSTERDOWN", 11) == 0)
        reload(c, rt->node);
    rt->node = cl->owner[slot] != 0 ? cl->owner[slot] - 1 : rt->node;
    rt->asking = 0;
    return 1;
}

/* Follows a MOVED (noting the new owner) or an ASK; 0 when out of hops. */
static int hop(tslock_client *c, enum redirect kind, int target, int moved_slot,
               struct route *rt)
{
    struct tslock__cluster *cl = c->cluster;

    if (++rt->hops > MAX_HOPS)
        return 0;
    if (kind == MOVED) {
        cl->owner[moved_slot] = (unsigned short)(target + 1);
        cl->stale = 1;
        rt->asking = 0;
    } else {
        rt->asking = 1;
    }
    rt->node = target;
    rt->watched = 0;
    if (kind == MOVED && use_node(c, rt->node) == TSLOCK_OK)
        reload(c, rt->node);
    return 1;
}

/* A WATCH cannot follow its transaction elsewhere: fail it, watch again. */
static int watch_redirected(tslock_client *c, enum redirect kind, int n,
                            const struct tslock__queued *q, redisReply **out)
{
    struct tslock__cluster *cl = c->cluster;

    if (kind == MOVED)
        cl->stale = 1;
    cl->watch_node = -1;
    cl->rewatch = 1;
    return as_watch_failed(c, n, q, out);
}

int tslock__cluster_pipeline(tslock_client *c, const char *key, int n,
                             const struct tslock__queued *q, redisReply **out)
{
    struct tslock__cluster *cl = c->cluster;
    unsigned slot = tslock__slot(key, strlen(key));
    struct route rt = {.hops = 0, .delay = BACKOFF_FIRST, .waited = 0};
    int i, rc;

    rt.node = first_node(c, slot, n, q, &rt.asking);
    if (n > (int)(sizeof(rt.sel) / sizeof(rt.sel[0])))
        return tslock__fail(c, TSLOCK_EINVAL, "%d commands in one pipeline", n);
    if (cl->stale && cl->owner[slot] != 0 && use_node(c, rt.node) == TSLOCK_OK)
        reload(c, rt.node);
    for (i = 0; i < n; i++)
        rt.sel[i] = i;
    rt.m = n;
    rt.watched = cl->watch_node >= 0 && rt.node == cl->watch_node;
    for (;;) {
        const redisReply *first;
        enum redirect kind;
        int block, target, moved_slot = 0;

        rc = send_selected(c, rt.node, rt.asking, q, rt.sel, rt.m, out);
        if (rc != TSLOCK_OK) {
            tslock__free_replies(n, out);
            return rc;
        }
        note_watch(cl, rt.node, rt.asking, q, rt.sel, rt.m, out);
        first = first_redirect(n, q, out, &kind, &block);
        if (kind == NONE)
            return TSLOCK_OK;
        snprintf(rt.last, sizeof(rt.last), "%s", first->str);
        target = kind == RETRY ? 0 : redirect_target(c, first, &moved_slot);
        if (target < 0) {
            rc = tslock__unexpected(c, "cluster redirection",
                                    "MOVED or ASK slot host:port", first);
            tslock__free_replies(n, out);
            return rc;
        }
        if (block && rt.watched)
            return watch_redirected(c, kind, n, q, out);
        rt.m = select_again(n, q, out, block, rt.sel);
        if (kind == RETRY) {
            if (!wait_for_owner(c, slot, &rt))
                break;
        } else if (!hop(c, kind, target, moved_slot, &rt)) {
            break;
        }
    }
    /* Out of hops or patience: nothing of what was redirected ran. */
    tslock__free_replies(n, out);
    return tslock__fail(c, TSLOCK_ECLUSTER,
                        "slot %u of '%s' was not served after %d "
                        "redirections: -%s",
                        slot, key, rt.hops, rt.last);
}

/* ------------------------------------------------- sharded subscribers */

/*
 * Ask for the slot map on ctx (a connection to node i): 1 when it was
 * learned.  The client's error is left as it was.
 */
static int map_from(tslock_client *c, redisContext *ctx, int i)
{
    static const char *slots[2] = {"CLUSTER", "SLOTS"};
    char keep[TSLOCK__ERRSTR_SIZE];
    redisReply *r = NULL;
    int ok;

    memcpy(keep, c->errstr, sizeof(keep));
    ok = tslock__roundtrip(ctx, 2, slots, &r) == REDIS_OK
         && r->type == REDIS_REPLY_ARRAY
         && parse_slots(c, r, c->cluster->nodes[i].host) == TSLOCK_OK;
    freeReplyObject(r);
    memcpy(c->errstr, keep, sizeof(keep));
    return ok;
}

/*
 * Ask any node that answers for the slot map: the current connection
 * first, then a new connection to each known node in turn (the current
 * one may be to a master that just died).
 */
static void refresh_map(tslock_client *c)
{
    struct tslock__cluster *cl = c->cluster;
    int i, n = cl->n;

    if (cl->current >= 0 && cl->nodes[cl->current].ctx != NULL
        && !cl->nodes[cl->current].ctx->err
        && map_from(c, cl->nodes[cl->current].ctx, cl->current))
        return;
    for (i = 0; i < n; i++) {
        char keep[TSLOCK__ERRSTR_SIZE];
        redisContext *ctx = NULL;
        int ok;

        memcpy(keep, c->errstr, sizeof(keep));
        ok = tslock__connect_node(c, cl->nodes[i].host, cl->nodes[i].port, &ctx)
                 == TSLOCK_OK
             && map_from(c, ctx, i);
        memcpy(c->errstr, keep, sizeof(keep));
        redisFree(ctx);
        if (ok)
            return;
    }
}

void tslock__cluster_owner(tslock_client *c, const char *key, int refresh,
                           const char **host, int *port)
{
    struct tslock__cluster *cl = c->cluster;
    unsigned slot;
    int i;

    *host = c->host;
    *port = c->port;
    if (cl == NULL)
        return;
    if (refresh || cl->stale)
        refresh_map(c);
    slot = tslock__slot(key, strlen(key));
    if (cl->owner[slot] == 0)
        return;
    i = cl->owner[slot] - 1;
    *host = cl->nodes[i].host;
    *port = cl->nodes[i].port;
}

void tslock__cluster_moved(tslock_client *c, const char *moved)
{
    redisReply r = {.type = REDIS_REPLY_ERROR};
    char line[300];
    int slot, target;

    if (c->cluster == NULL)
        return;
    snprintf(line, sizeof(line), "%s", moved);
    r.str = line;
    r.len = strlen(line);
    target = redirect_target(c, &r, &slot);
    if (target >= 0)
        c->cluster->owner[slot] = (unsigned short)(target + 1);
    c->cluster->stale = 1;
}

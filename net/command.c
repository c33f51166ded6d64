/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * command.c - the one path every lock operation's command takes: the
 * step hook, then the wire (wire.c) or, on a cluster, the node owning
 * the key's slot (cluster.c).
 */
#include <stdio.h>

#include "net.h"

int tslock__check_usable(tslock_client *c)
{
    if (c->ctx == NULL)
        return tslock__fail(c, TSLOCK_ESTATE, "client is not connected");
    if (c->broken)
        return TSLOCK_EIO; /* keep the first failure's detail */
    return TSLOCK_OK;
}

int tslock__command(tslock_client *c, tslock_step step, const char *key,
                    int argc, const char **argv, redisReply **out)
{
    const struct tslock__queued q = {step, argc, argv};

    return tslock__pipeline(c, key, 1, &q, out);
}

int tslock__pipeline(tslock_client *c, const char *key, int n,
                     const struct tslock__queued *q, redisReply **out)
{
    int i, rc = tslock__check_usable(c);

    for (i = 0; i < n; i++)
        out[i] = NULL;
    if (rc != TSLOCK_OK)
        return rc;
    snprintf(c->op_key, sizeof(c->op_key), "%s", key != NULL ? key : "");
    /* Every hook first: a stop leaves nothing half sent. */
    for (i = 0; i < n; i++)
        if (c->hook != NULL && c->hook(c, q[i].step, key, c->hook_ud) != 0)
            return tslock__fail(c, TSLOCK_EHOOK, "step hook stopped %s on '%s'",
                                tslock_step_name(q[i].step), key);
    if (c->cluster != NULL)
        return tslock__cluster_pipeline(c, key, n, q, out);
    return tslock__exchange(c, n, q, out);
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * semaphore.c - a counting semaphore: at most N holders of one key, each
 * with its own lease.  Its holds are shared holds (shared.c) with a
 * limit, counted and added in one script or WATCH transaction.
 */
#include <stdlib.h>

#include "tslock_int.h"

int tslock_lock_set_permits(tslock_lock *l, int64_t permits)
{
    if (l == NULL || permits < 0)
        return TSLOCK_EINVAL;
    if (l->held)
        return TSLOCK_ESTATE;
    if (permits > 0 && l->rw != TSLOCK_RW_OFF)
        return tslock__fail(l->client, TSLOCK_EINVAL,
                            "lock '%s' is a read-write lock; it takes no "
                            "permit count",
                            l->key);
    /* The holders set is named by the kind: name it again. */
    if ((permits > 0) != (l->permits > 0)) {
        free(l->holders_key);
        l->holders_key = NULL;
    }
    l->permits = permits;
    return TSLOCK_OK;
}

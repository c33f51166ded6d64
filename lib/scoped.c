/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * scoped.c - tslock_with(): a lock held around a piece of work, the C
 * form of the declarative lock of other libraries (an annotation on a
 * method).  Take, optionally keep renewed, run, release, and say whether
 * the hold lasted.
 */
#include <string.h>

#include "tslock_int.h"

int tslock_with(tslock_lock *l, int64_t wait_ms, tslock_client *renew_client,
                tslock_with_fn fn, void *userdata, int *result)
{
    tslock_watchdog *w = NULL;
    int rc, renewal = TSLOCK_OK, r;

    if (l == NULL || fn == NULL)
        return TSLOCK_EINVAL;
    rc = tslock_acquire(l, wait_ms);
    if (rc != TSLOCK_OK)
        return rc;
    if (renew_client != NULL) {
        rc = tslock_watchdog_start(&w, l, renew_client, 0, NULL, NULL);
        if (rc != TSLOCK_OK) {
            char why[TSLOCK__ERRSTR_SIZE];
            memcpy(why, l->client->errstr, sizeof(why));
            (void)tslock_release(l);
            memcpy(l->client->errstr, why, sizeof(why));
            return rc;
        }
    }
    r = fn(l, userdata);
    if (result != NULL)
        *result = r;
    if (w != NULL)
        renewal = tslock_watchdog_stop(w); /* hands the hold back */
    if (!l->held && renewal == TSLOCK_ELOST)
        return TSLOCK_ELOST; /* the message is the renewal's */
    if (!l->held)
        return tslock__fail(l->client, TSLOCK_ESTATE,
                            "lock '%s' was released inside the scoped work",
                            l->key);
    /*
     * A renewal that failed without finding the key taken leaves the
     * verdict to the release, which checks the lease and the key.
     */
    return tslock_release(l);
}

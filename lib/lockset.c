/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lockset.c - several locks taken as one: every key of the set, or none.
 *
 * The keys are tried in one order (their bytes), each once; at the first
 * busy key the keys taken so far are given back and that key alone is
 * waited for, so no tslock client waits while it holds part of a set,
 * and two sets never wait for each other in a circle.  Once it has the
 * key it waited for, the pass starts again.  The fixed order makes
 * clients that want the same keys meet at the same first key, so a pass
 * seldom has to give back what it took.
 */
#include <stdlib.h>
#include <string.h>

#include "tslock_int.h"

static int key_cmp(const void *a, const void *b)
{
    const tslock_lock *x = *(tslock_lock *const *)a;
    const tslock_lock *y = *(tslock_lock *const *)b;

    return strcmp(x->key, y->key); /* keys are C strings: memcmp's order */
}

/*
 * The set in key order, into a new array: TSLOCK_OK, or EINVAL for a
 * NULL, an empty set or a key twice, ENOMEM.
 */
static int ordered(tslock_lock *const *locks, size_t n, tslock_lock ***out)
{
    tslock_lock **o;
    size_t i;

    *out = NULL;
    if (locks == NULL || n == 0)
        return TSLOCK_EINVAL;
    for (i = 0; i < n; i++)
        if (locks[i] == NULL)
            return TSLOCK_EINVAL;
    o = malloc(n * sizeof(*o));
    if (o == NULL)
        return TSLOCK_ENOMEM;
    memcpy(o, locks, n * sizeof(*o));
    qsort(o, n, sizeof(*o), key_cmp);
    for (i = 1; i < n; i++)
        if (strcmp(o[i - 1]->key, o[i]->key) == 0) {
            int rc = tslock__fail(o[i]->client, TSLOCK_EINVAL,
                                  "key '%s' is twice in the set of locks",
                                  o[i]->key);
            free(o);
            return rc;
        }
    *out = o;
    return TSLOCK_OK;
}

/*
 * Give back what this pass took, the last first.  TSLOCK_OK when every
 * one is given back (or found lost: not kept either way), else the
 * first failure, with the lock's client's message saying what is still
 * held; that lock stays held.  why is the message of the busy or failed
 * key, put back on its client when every give-back worked.
 */
static int give_back(tslock_lock **o, char *have, size_t n, tslock_lock *cause)
{
    char why[TSLOCK__ERRSTR_SIZE];
    int rc = TSLOCK_OK;
    size_t i;

    memcpy(why, cause->client->errstr, sizeof(why));
    for (i = n; i-- > 0;) {
        int r;
        if (!have[i])
            continue;
        r = tslock_release(o[i]);
        if (r == TSLOCK_OK || r == TSLOCK_ELOST) {
            have[i] = 0;
        } else if (rc == TSLOCK_OK) {
            char err[TSLOCK__ERRSTR_SIZE];
            memcpy(err, o[i]->client->errstr, sizeof(err));
            rc = tslock__fail(o[i]->client, r,
                              "the set was not taken (%s), and giving back "
                              "'%s' failed: %s; it stays held",
                              why, o[i]->key, err);
        }
    }
    if (rc == TSLOCK_OK)
        memcpy(cause->client->errstr, why, sizeof(why));
    return rc;
}

int tslock_acquire_all(tslock_lock *const *locks, size_t n, int64_t wait_ms)
{
    tslock_lock **o;
    tslock_client *c;
    char *have;
    int64_t deadline = 0;
    size_t i;
    int rc;

    if (wait_ms < TSLOCK_WAIT_FOREVER)
        return TSLOCK_EINVAL;
    if ((rc = ordered(locks, n, &o)) != TSLOCK_OK)
        return rc;
    have = calloc(n, 1);
    if (have == NULL) {
        free(o);
        return TSLOCK_ENOMEM;
    }
    c = o[0]->client;
    if (wait_ms > 0)
        deadline = tslock__now(c, TSLOCK_CLOCK_MONOTONIC) + wait_ms;
    for (;;) {
        int64_t left = TSLOCK_WAIT_FOREVER;
        size_t busy = n;

        rc = TSLOCK_OK;
        for (i = 0; i < n && rc == TSLOCK_OK; i++) {
            if (have[i])
                continue; /* the key waited for */
            rc = tslock_acquire(o[i], 0);
            if (rc == TSLOCK_OK)
                have[i] = 1;
            else
                busy = i;
        }
        if (rc == TSLOCK_OK)
            break;
        /* Nothing is kept: what this pass took goes back first. */
        {
            int back = give_back(o, have, n, o[busy]);
            if (back != TSLOCK_OK) {
                rc = back;
                break;
            }
        }
        if (rc != TSLOCK_EBUSY && rc != TSLOCK_EUNREADABLE)
            break;
        if (wait_ms > 0) {
            left = deadline - tslock__now(c, TSLOCK_CLOCK_MONOTONIC);
            if (left <= 0)
                break;
        }
        if (wait_ms == 0)
            break;
        /* Wait for the busy key alone, holding nothing else. */
        rc = tslock_acquire(o[busy], left);
        if (rc != TSLOCK_OK)
            break;
        have[busy] = 1;
    }
    if (rc == TSLOCK_ECANCELED) /* cancels of the whole set end here */
        for (i = 0; i < n; i++)
            tslock__drain_cancel(o[i]);
    free(have);
    free(o);
    return rc;
}

int tslock_release_all(tslock_lock *const *locks, size_t n)
{
    tslock_lock **o;
    size_t i, held = 0;
    int rc, first = TSLOCK_OK;

    if ((rc = ordered(locks, n, &o)) != TSLOCK_OK)
        return rc;
    for (i = n; i-- > 0;) {
        if (!o[i]->held)
            continue;
        held++;
        rc = tslock_release(o[i]);
        if (rc != TSLOCK_OK && first == TSLOCK_OK)
            first = rc;
    }
    if (held == 0)
        first = tslock__fail(o[0]->client, TSLOCK_ESTATE,
                             "no lock of the set is held");
    free(o);
    return first;
}

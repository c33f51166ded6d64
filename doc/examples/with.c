/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * with.c - a lock held around one function, renewed while it runs:
 * tslock_with(), the C form of a declarative lock.  Usage: with
 * SOCKET-PATH [KEY]
 */
#include <stdio.h>

#include <tslock.h>

struct report {
    int rows;
};

/* The work that must not run twice at once; its int comes back. */
static int rebuild_index(tslock_lock *lock, void *userdata)
{
    struct report *r = userdata;

    printf("rebuilding, fencing number %lld\n",
           (long long)tslock_lock_fence(lock));
    r->rows = 1000;
    return 0; /* the work's own status */
}

static tslock_client *connect_to(const char *path)
{
    tslock_client *c = NULL;

    if (tslock_client_new(&c) != TSLOCK_OK)
        return NULL;
    if (tslock_client_connect_unix(c, path) != TSLOCK_OK) {
        fprintf(stderr, "connect: %s\n", tslock_client_errstr(c));
        tslock_client_free(c);
        return NULL;
    }
    return c;
}

int main(int argc, char **argv)
{
    tslock_client *client, *renewer;
    tslock_lock *lock = NULL;
    struct report report = {0};
    int rc, work = -1, status = 1;

    if (argc < 2) {
        fprintf(stderr, "usage: %s SOCKET-PATH [KEY]\n", argv[0]);
        return 2;
    }
    client = connect_to(argv[1]);
    renewer = connect_to(argv[1]); /* the watchdog's own connection */
    if (client == NULL || renewer == NULL
        || tslock_lock_new(&lock, client, argc > 2 ? argv[2] : "index")
               != TSLOCK_OK)
        goto out;
    tslock_lock_set_ttl(lock, 10000);
    tslock_lock_set_fencing(lock, 1);

    rc = tslock_with(lock, 2000, renewer, rebuild_index, &report, &work);
    if (rc == TSLOCK_EBUSY) {
        printf("busy: someone else is rebuilding\n");
        status = 0;
    } else if (rc == TSLOCK_ELOST) {
        /* The work ran (work holds its status), but not alone. */
        fprintf(stderr, "warning: %s\n", tslock_client_errstr(client));
    } else if (rc != TSLOCK_OK) {
        fprintf(stderr, "lock: %s: %s\n", tslock_strerror(rc),
                tslock_client_errstr(client));
    } else {
        printf("rebuilt %d rows under the lock, status %d\n", report.rows,
               work);
        status = work;
    }
out:
    tslock_lock_free(lock);
    tslock_client_free(renewer);
    tslock_client_free(client);
    return status;
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * basic.c - take a lock, do the work, release it, and tell a lost lease
 * from a clean release.  Usage: basic SOCKET-PATH [KEY]
 */
#include <stdio.h>

#include <tslock.h>

int main(int argc, char **argv)
{
    tslock_client *client = NULL;
    tslock_lock *lock = NULL;
    int rc, status = 1;

    if (argc < 2) {
        fprintf(stderr, "usage: %s SOCKET-PATH [KEY]\n", argv[0]);
        return 2;
    }
    if (tslock_client_new(&client) != TSLOCK_OK)
        return 1;
    rc = tslock_client_connect_unix(client, argv[1]);
    if (rc != TSLOCK_OK) {
        fprintf(stderr, "connect: %s: %s\n", tslock_strerror(rc),
                tslock_client_errstr(client));
        goto out;
    }
    rc = tslock_lock_new(&lock, client, argc > 2 ? argv[2] : "nightly-job");
    if (rc != TSLOCK_OK)
        goto out;
    tslock_lock_set_ttl(lock, 10000); /* a 10 s lease */

    rc = tslock_acquire(lock, 2000); /* wait up to 2 s */
    if (rc == TSLOCK_EBUSY) {
        printf("busy: %s\n", tslock_client_errstr(client));
        status = 0; /* someone else is doing the work: not a failure */
        goto out;
    }
    if (rc != TSLOCK_OK) {
        fprintf(stderr, "acquire: %s: %s\n", tslock_strerror(rc),
                tslock_client_errstr(client));
        goto out;
    }
    printf("holding the lock with stamp %s\n", tslock_lock_value(lock));

    /* ... the work that must not run twice at once ... */

    rc = tslock_release(lock);
    if (rc == TSLOCK_ELOST)
        fprintf(stderr, "warning: %s\n", tslock_client_errstr(client));
    else if (rc == TSLOCK_OK)
        printf("released\n");
    status = rc == TSLOCK_OK ? 0 : 1;
out:
    tslock_lock_free(lock);
    tslock_client_free(client);
    return status;
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tls.c - a lock on a server that requires TLS and a client certificate,
 * set up in code rather than in a URL.  Usage:
 * tls HOST PORT CA-FILE CERT-FILE KEY-FILE [KEY]
 */
#include <stdio.h>
#include <stdlib.h>

#include <tslock.h>

int main(int argc, char **argv)
{
    tslock_client *client = NULL;
    tslock_lock *lock = NULL;
    tslock_tls *tls = NULL;
    char err[256];
    int rc, status = 1;

    if (argc < 6) {
        fprintf(stderr, "usage: %s HOST PORT CA CERT KEY [KEY-NAME]\n",
                argv[0]);
        return 2;
    }
    if (tslock_client_new(&client) != TSLOCK_OK
        || tslock_tls_new(&tls) != TSLOCK_OK)
        goto out;
    /* redis-cli's names; redis-py's (ssl_ca_certs, ...) work as well. */
    if (tslock_tls_set(tls, "cacert", argv[3], err, sizeof(err)) != TSLOCK_OK
        || tslock_tls_set(tls, "cert", argv[4], err, sizeof(err)) != TSLOCK_OK
        || tslock_tls_set(tls, "key", argv[5], err, sizeof(err)) != TSLOCK_OK) {
        fprintf(stderr, "TLS settings: %s\n", err);
        goto out;
    }
    /* The files are loaded here: a missing one is reported now. */
    rc = tslock_client_set_tls(client, tls);
    if (rc == TSLOCK_OK)
        rc = tslock_client_connect_tcp(client, argv[1], atoi(argv[2]));
    if (rc != TSLOCK_OK) {
        /* TSLOCK_ETLS: OpenSSL's words, e.g. "certificate has expired". */
        fprintf(stderr, "%s: %s\n", tslock_errname(rc),
                tslock_client_errstr(client));
        goto out;
    }
    rc = tslock_lock_new(&lock, client, argc > 6 ? argv[6] : "nightly-job");
    if (rc == TSLOCK_OK)
        rc = tslock_acquire(lock, 0);
    if (rc == TSLOCK_OK) {
        printf("held over TLS\n");
        rc = tslock_release(lock);
    }
    if (rc != TSLOCK_OK)
        fprintf(stderr, "%s: %s\n", tslock_errname(rc),
                tslock_client_errstr(client));
    else
        status = 0;
out:
    tslock_lock_free(lock);
    tslock_tls_free(tls);
    tslock_client_free(client);
    return status;
}

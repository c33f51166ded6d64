/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fuzz_handle.c - tslock_lock_adopt() on any handle text: it holds only
 * what parses, and then tslock_lock_handle() gives back a handle that
 * adopts to the same hold (scheme, unit, value) and reads the same.
 * Input: the handle (a NUL in it ends it, as for any C string).
 */
#include <string.h>

#include <tslock.h>

#include "fuzz.h"

static tslock_client *client;

/* A client that never connects: adopt sends nothing. */
static tslock_lock *new_lock(void)
{
    tslock_lock *l = NULL;

    if (client == NULL)
        FUZZ_CHECK(tslock_client_new(&client) == TSLOCK_OK);
    FUZZ_CHECK(tslock_lock_new(&l, client, "fuzz") == TSLOCK_OK);
    return l;
}

static void check_same_hold(tslock_lock *a, const char *handle)
{
    tslock_lock *b = new_lock();
    const char *again;

    FUZZ_CHECK(tslock_lock_adopt(b, handle) == TSLOCK_OK);
    FUZZ_CHECK(tslock_lock_is_held(b));
    FUZZ_CHECK(tslock_lock_scheme_used(b) == tslock_lock_scheme_used(a));
    FUZZ_CHECK(strcmp(tslock_lock_value(b), tslock_lock_value(a)) == 0);
    FUZZ_CHECK(tslock_lock_expires_ms(b) == tslock_lock_expires_ms(a));
    again = tslock_lock_handle(b);
    FUZZ_CHECK(again != NULL && strcmp(again, handle) == 0);
    tslock_lock_free(b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    tslock_lock *l = new_lock();
    const char *handle;
    int rc;

    FUZZ_CHECK(text != NULL);
    memcpy(text, data, size);
    text[size] = '\0';
    rc = tslock_lock_adopt(l, text);
    FUZZ_CHECK(rc == TSLOCK_OK || rc == TSLOCK_EINVAL);
    FUZZ_CHECK(tslock_lock_is_held(l) == (rc == TSLOCK_OK));
    if (rc == TSLOCK_OK) {
        handle = tslock_lock_handle(l);
        FUZZ_CHECK(handle != NULL);
        /* The handle read back is the one given. */
        FUZZ_CHECK(strcmp(handle, text) == 0);
        FUZZ_CHECK(strlen(tslock_lock_value(l)) < 64);
        check_same_hold(l, handle);
        FUZZ_CHECK(tslock_lock_adopt(l, text) == TSLOCK_ESTATE);
    } else {
        FUZZ_CHECK(tslock_lock_handle(l) == NULL);
        FUZZ_CHECK(tslock_lock_value(l) == NULL);
    }
    tslock_lock_free(l);
    free(text);
    return 0;
}

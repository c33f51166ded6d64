/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * value.c - the token a lock key holds: made from 16 random bytes, and
 * told apart from a stamp by its form alone.
 */
#include "proto.h"

/* 16 bytes from the kernel, as 32 hex digits. */
int tslock__make_token(tslock_client *c, char *buf)
{
    static const char hex[] = "0123456789abcdef";
    unsigned char raw[16];
    size_t i;

    if (tslock__random_bytes(raw, sizeof(raw)) != TSLOCK_OK)
        return tslock__fail(c, TSLOCK_EIO,
                            "no randomness for a token (getrandom and "
                            "/dev/urandom failed)");
    for (i = 0; i < sizeof(raw); i++) {
        buf[2 * i] = hex[raw[i] >> 4];
        buf[2 * i + 1] = hex[raw[i] & 15];
    }
    buf[2 * sizeof(raw)] = '\0';
    return TSLOCK_OK;
}

int tslock__is_token(const char *v, size_t len)
{
    size_t i;

    if (len != 32)
        return 0;
    for (i = 0; i < len; i++)
        if (!((v[i] >= '0' && v[i] <= '9') || (v[i] >= 'a' && v[i] <= 'f')))
            return 0;
    return 1;
}

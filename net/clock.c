/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * clock.c - the two clocks (wall for stamps, monotonic for deadlines) and
 * randomness for retry jitter and tokens.
 * Tests replace the clocks through tslock_client_set_clock().
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>
#ifdef HAVE_SYS_RANDOM_H
#include <sys/random.h>
#endif

#include "net.h"

struct timeval tslock__ms_to_timeval(int ms)
{
    struct timeval tv = {.tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000};
    return tv;
}

int64_t tslock__system_ms(tslock_clock_id which)
{
    struct timespec ts;
    clockid_t id =
        which == TSLOCK_CLOCK_WALL ? CLOCK_REALTIME : CLOCK_MONOTONIC;

    if (clock_gettime(id, &ts) != 0)
        return -1;
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t tslock__now(tslock_client *c, tslock_clock_id which)
{
    if (c->clock != NULL)
        return c->clock(which, c->clock_ud);
    if (which == TSLOCK_CLOCK_WALL && c->time_source == TSLOCK_TIME_SERVER
        && (c->caps & TSLOCK_CAP_TIME))
        return tslock__system_ms(which) + c->clock_offset_ms;
    return tslock__system_ms(which);
}

/* Fill buf from the kernel's generator; never from rand(). */
int tslock__random_bytes(void *buf, size_t len)
{
    unsigned char *p = buf;
    size_t got = 0;

#ifdef HAVE_GETRANDOM
    while (got < len) {
        ssize_t n = getrandom(p + got, len - got, 0);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        got += (size_t)n;
    }
    if (got == len)
        return TSLOCK_OK;
#endif
    {
        int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            return TSLOCK_EIO;
        while (got < len) {
            ssize_t n = read(fd, p + got, len - got);
            if (n <= 0) {
                if (n < 0 && errno == EINTR)
                    continue;
                close(fd);
                return TSLOCK_EIO;
            }
            got += (size_t)n;
        }
        close(fd);
    }
    return TSLOCK_OK;
}

/*
 * Jitter needs spread, not secrecy: a xorshift64* stream seeded once per
 * client from the kernel is enough and costs no system call per draw.
 */
uint64_t tslock__random64(tslock_client *c)
{
    uint64_t x = c->rng;

    if (x == 0) {
        if (tslock__random_bytes(&x, sizeof(x)) != TSLOCK_OK || x == 0)
            x = (uint64_t)tslock__system_ms(TSLOCK_CLOCK_MONOTONIC)
                    * 2654435761u
                | 1u;
    }
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    c->rng = x;
    return x * 2685821657736338717ull;
}

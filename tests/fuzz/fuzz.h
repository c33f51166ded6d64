/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fuzz.h - what the fuzz targets in tests/fuzz share: the libFuzzer entry
 * point they define, and the check that aborts on a violated property so
 * libFuzzer (or the plain replay driver) reports the input.
 */
#ifndef TSLOCK_FUZZ_H
#define TSLOCK_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A property every input must keep; abort() makes the input a crash. */
#define FUZZ_CHECK(cond)                                                       \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "%s:%d: property violated: %s\n", __FILE__,        \
                    __LINE__, #cond);                                          \
            abort();                                                           \
        }                                                                      \
    } while (0)

#endif /* TSLOCK_FUZZ_H */

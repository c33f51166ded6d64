/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tslock_atomic.h - C11 atomics where the compiler has <stdatomic.h>, and
 * the same names over gcc's __atomic builtins where it has not (gcc 4.7
 * and 4.8, the compiler of CentOS 7), for the watchdog and the tool.
 */
#ifndef TSLOCK_ATOMIC_H
#define TSLOCK_ATOMIC_H

#include "config.h"

#ifdef HAVE_STDATOMIC_H
#include <stdatomic.h>
#else
typedef int atomic_int;
typedef unsigned atomic_uint;
typedef long atomic_long;
typedef long long atomic_llong;
typedef unsigned long long atomic_ullong;
#define atomic_init(p, v)      ((void)(*(p) = (v)))
#define atomic_load(p)         __atomic_load_n((p), __ATOMIC_SEQ_CST)
#define atomic_store(p, v)     __atomic_store_n((p), (v), __ATOMIC_SEQ_CST)
#define atomic_exchange(p, v)  __atomic_exchange_n((p), (v), __ATOMIC_SEQ_CST)
#define atomic_fetch_add(p, v) __atomic_fetch_add((p), (v), __ATOMIC_SEQ_CST)
#define atomic_compare_exchange_weak(p, expected, desired)                     \
    __atomic_compare_exchange_n((p), (expected), (desired), 1,                 \
                                __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)
#endif

/* Counters (stats.c): relaxed, they order nothing else. */
#ifdef HAVE_STDATOMIC_H
#define tslock__count_add(p, v)                                                \
    atomic_fetch_add_explicit((p), (v), memory_order_relaxed)
#define tslock__count_load(p) atomic_load_explicit((p), memory_order_relaxed)
#define tslock__count_store(p, v)                                              \
    atomic_store_explicit((p), (v), memory_order_relaxed)
#else
#define tslock__count_add(p, v)   __atomic_fetch_add((p), (v), __ATOMIC_RELAXED)
#define tslock__count_load(p)     __atomic_load_n((p), __ATOMIC_RELAXED)
#define tslock__count_store(p, v) __atomic_store_n((p), (v), __ATOMIC_RELAXED)
#endif

#endif

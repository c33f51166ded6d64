#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# test_partition_short.sh - make check's partition case (issue 44): on
# hosts made of network namespaces, the Sentinel master isolated with a
# minority of clients; the plain token lock must lose an update, token
# with --fence must lose none and hand out no fence twice across the
# failover, and the client-history checker must catch a lock without
# compare-and-delete (tests/partition/short.sh, seed 1; about 30 s).
# Skips (77) without root or ip netns, saying why.
exec sh "${top_srcdir:-.}/tests/partition/short.sh" 1

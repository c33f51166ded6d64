#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# test_bench_cluster.sh - the driver of `make bench-cluster` kept working,
# and the counts doc/scale.md rests on: its bus part once, on 3 masters
# with a replica each, 200 releases.  The wake channel a real waiter
# listens on, published raw, must cost 5 bus messages at 6 nodes with
# PUBLISH (every other node) and 1 with SPUBLISH (the shard's replica),
# and a release through the library one PUBLISH's worth.  A few seconds.
# POSIX sh.
set -u

. "${top_srcdir:-.}/tests/harness.sh"
need_server
dir=$(mktemp -d "${TMPDIR:-/tmp}/tslock-benchcl.XXXXXX") || exit 1
out=$dir/out
err=$dir/err
shown=20
trap 'rm -rf "$dir"' EXIT

# A row of the bus table: masters 3, nodes 6, WHAT, then msgs.
row() {
    grep -Eq "^ +3 +6  $1 +$2 " "$out"
}

no_failed_row() {
    ! grep -q "did not run cleanly" "$out"
}

t "bench_cluster's bus part runs" 0 env REDIS_SERVER="${REDIS_SERVER:-}" \
    TSLOCK_BENCH_MASTERS=3 TSLOCK_BENCH_RELEASES=200 \
    TSLOCK_BENCH_PARTS=bus "${top_builddir:-.}/tests/bench_cluster"
check "it publishes the wake channel a waiter listens on" \
    has "wake channel: {bench:bus}:wake:[0-9a-f]\{32\}w$" "$out"
check "PUBLISH: 5 bus messages at 6 nodes" row "PUBLISH \(raw\)" "5\.00"
check "SPUBLISH: 1 bus message, to the replica" row "SPUBLISH \(raw\)" "1\.00"
check "a release with nobody in line: 5" \
    row "release, nobody in line" "5\.00"
check "a release waking the next in line: 5" \
    row "release, two in turn" "5\.00"
check "every row ran cleanly" no_failed_row
finish

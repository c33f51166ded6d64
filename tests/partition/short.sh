#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# short.sh - the short partition case (make check runs it as
# tests/test_partition_short.sh; make check-partitions-short): the master
# isolated with a minority of clients, on the short schedule, and the
# history checker's broken control:
#   token   plain, no fencing: an update must be lost.  The cut lasts
#           until one is (PARTITION_UNTIL=lost, at most 30 s), so this
#           asserts only that the failover came and the two masters'
#           holders overlapped once in that time.
#   fence   --fence, the resource refusing older fences: no update lost
#           and no fence handed out twice.  The cut lasts until the lock
#           was broken (a double grant during the cut) and the promoted
#           master handed out a fence of its failover epoch
#           (PARTITION_UNTIL=broken), so the run proves something; its
#           assertions hold by construction (fences unique across the
#           failover, the resource's check atomic), not by timing.
#   nocad   SET NX PX and a DEL that compares nothing, with a lease
#           shorter than the hold, no fault: the client history
#           (history.awk) must show holds overlapping that no client was
#           told of, or the mutex-model checker is blind.
# Skips (77) as run.sh does.
#
#   short.sh [SEED]
set -u
seed=${1:-1}
here=$(cd "$(dirname "$0")" && pwd)
PARTITION_SHORT=1
export PARTITION_SHORT

# field LINE KEY: the value of KEY=... in a run.sh line (up to "(").
field() {
    echo "$1" | tr ' ' '\n' | sed -n "s/^$2=\([0-9a-z]*\).*/\1/p"
}

fail=0
# one CONFIG NEMESIS UNTIL: run.sh's line, or exit (77 passed on).
one() {
    line=$(PARTITION_UNTIL=$3 sh "$here/run.sh" "$1" "$2" "$seed")
    rc=$?
    [ "$rc" = 77 ] && exit 77
    echo "$line"
    if [ "$rc" != 0 ] || [ -z "$line" ]; then
        echo "FAIL: run.sh $1 $2 $seed exited $rc" >&2
        exit 1
    fi
}

one token isolate lost
control=$line
if [ "$(field "$control" lost)" = 0 ]; then
    echo "FAIL: the plain token lock lost no update in $(field "$control" \
        fault_ms) ms of isolation (until=$(field "$control" until)):" \
        "no failover, or the checker is blind" >&2
    fail=1
fi

one fence isolate broken
fenced=$line
if [ "$(field "$fenced" until)" != met ]; then
    echo "FAIL: in $(field "$fenced" fault_ms) ms of isolation the fenced" \
        "lock was never broken with a fence of a later failover epoch:" \
        "the run proves nothing" >&2
    fail=1
fi
if [ "$(field "$fenced" lost)" != 0 ]; then
    echo "FAIL: an update was lost behind the fence" >&2
    fail=1
fi
if [ "$(field "$fenced" dupfence)" != 0 ]; then
    echo "FAIL: a fence was handed out twice across the failover" >&2
    fail=1
fi

one nocad none ""
broken=$line
if [ "$(field "$broken" hist_violations)" = 0 ]; then
    echo "FAIL: the lock without compare-and-delete broke no mutex in the" \
        "client history: the history checker is blind" >&2
    fail=1
fi
exit $fail

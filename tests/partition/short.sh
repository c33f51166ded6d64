#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# short.sh - the short partition case (make check-partitions-short): the
# master isolated with a minority of clients, on a short schedule, twice:
#   nolock  the control, no lock at all: the checker must count double
#           grants and lost updates, or it is blind;
#   fence   token with --fence, the resource refusing older fences: no
#           lost update.
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
    echo "$1" | tr ' ' '\n' | sed -n "s/^$2=\([0-9]*\).*/\1/p"
}

fail=0
control=$(sh "$here/run.sh" nolock isolate "$seed")
rc=$?
[ "$rc" = 77 ] && exit 77
echo "$control"
if [ "$rc" != 0 ]; then
    echo "FAIL: run.sh nolock isolate $seed exited $rc" >&2
    exit 1
fi
if [ "$(field "$control" double)" = 0 ] || [ "$(field "$control" lost)" = 0 ]; then
    echo "FAIL: the no-lock control shows no double grant or no lost update:" \
        "the checker is blind" >&2
    fail=1
fi

fenced=$(sh "$here/run.sh" fence isolate "$seed")
rc=$?
echo "$fenced"
if [ "$rc" != 0 ]; then
    echo "FAIL: run.sh fence isolate $seed exited $rc" >&2
    exit 1
fi
if [ "$(field "$fenced" lost)" != 0 ]; then
    echo "FAIL: an update was lost behind the fence" >&2
    fail=1
fi
exit $fail

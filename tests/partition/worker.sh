#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# worker.sh - one client, run inside a host's namespace: take the lock
# with tslock and run hold.sh under it, again and again until $STATE/stop
# appears; each attempt's exit status and end time (µs) go to a log line.
# LOCK is empty for the no-lock control (hold.sh bare, with a short
# random pause so the clients interleave as lock waiters would).
#
# Arguments: CLIENT LOG; environment: LOCK (the tslock command line
# before the key), STATE, and what hold.sh reads.
set -u
CLIENT=$1
log=$2
export CLIENT
here=$(dirname "$0")
while [ ! -e "$STATE/stop" ]; do
    if [ -n "$LOCK" ]; then
        # shellcheck disable=SC2086 # LOCK is a word list on purpose
        $LOCK partition-lock -- sh "$here/hold.sh" 2>>"$log.err"
        rc=$?
    else
        sh "$here/hold.sh"
        rc=$?
        sleep "0.0$(od -An -N1 -tu1 /dev/urandom | tr -d ' ' | cut -c1)"
    fi
    echo "$(date +%s%6N) $rc" >>"$log"
done

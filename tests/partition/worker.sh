#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# worker.sh - one client, run inside a host's namespace: take the lock
# with tslock and run hold.sh under it, again and again until $STATE/stop
# appears; each attempt's exit status and end time (µs) go to a log line,
# and its history to LOG.hist (history.awk):
#   INVOKE_US START_US END_US DONE_US RC
# INVOKE when the client asked for the lock, START and END when its
# command (hold.sh) began and ended, DONE when tslock returned RC (0
# released, 75 told the lease was lost, another code an error); START and
# END are "-" when no hold began.  Every namespace shares the machine's
# clock, so the histories of all clients can be ordered together.
#
# LOCK is empty for the no-lock control (hold.sh bare, with a short
# random pause so the clients interleave as lock waiters would).  LOCK
# "nocad" is the broken control of the history checker: SET NX PX on
# $NOCAD_MASTER, the hold, then DEL without comparing the value (no
# compare-and-delete) and without asking whether the lease ran out.
#
# Arguments: CLIENT LOG; environment: LOCK (the tslock command line
# before the key), STATE, NOCAD_MASTER, NOCAD_TTL_MS, CLOCK_JUMP_S (the
# clock nemesis's jump, for this client), and what hold.sh reads.
set -u
CLIENT=$1
log=$2
HOLD_LOG=$STATE/$CLIENT.hold
export CLIENT HOLD_LOG
here=$(dirname "$0")

# One pass of the broken lock: 0 held and released, 1 busy.
nocad() {
    r=$(redis-cli -h "$NOCAD_MASTER" --raw SET partition-lock "$CLIENT" NX \
        PX "$NOCAD_TTL_MS" 2>/dev/null)
    [ "$r" = OK ] || {
        sleep 0.01
        return 1
    }
    sh "$here/hold.sh"
    redis-cli -h "$NOCAD_MASTER" DEL partition-lock >/dev/null 2>&1
    return 0
}

while [ ! -e "$STATE/stop" ]; do
    rm -f "$HOLD_LOG"
    invoke=$(date +%s%6N)
    if [ "$LOCK" = nocad ]; then
        nocad
        rc=$?
    elif [ -n "$LOCK" ]; then
        jump=
        # The clock nemesis (run.sh): while $STATE/jump exists, tslock
        # runs with its wall clock CLOCK_JUMP_S ahead (libfaketime; the
        # monotonic clock is left alone, as a stepped clock leaves it).
        if [ -n "${CLOCK_JUMP_S:-}" ] && [ -e "$STATE/jump" ]; then
            jump="faketime -f +${CLOCK_JUMP_S}s"
        fi
        # shellcheck disable=SC2086 # LOCK is a word list on purpose
        FAKETIME_DONT_FAKE_MONOTONIC=1 DONT_FAKE_MONOTONIC=1 \
            $jump $LOCK partition-lock -- \
            sh "$here/hold.sh" 2>>"$log.err"
        rc=$?
    else
        sh "$here/hold.sh"
        rc=$?
        sleep "0.0$(od -An -N1 -tu1 /dev/urandom | tr -d ' ' | cut -c1)"
    fi
    done_at=$(date +%s%6N)
    [ "$LOCK" = nocad ] && [ "$rc" = 1 ] && continue
    echo "$done_at $rc" >>"$log"
    hold="- -"
    [ -s "$HOLD_LOG" ] && hold=$(cat "$HOLD_LOG")
    echo "$invoke $hold $done_at $rc" >>"$log.hist"
done

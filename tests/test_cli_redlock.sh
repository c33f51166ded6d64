#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# test_cli_redlock.sh - tslock with -u given several times: a Redlock over
# three private redis-servers on Unix sockets in a temp dir (stopped by
# their pids on the way out).  KEY -- COMMAND, acquire / status / extend /
# release with a handle, --renew, one and two masters down, and the usage
# errors: -u twice or four times, -m timestamp and bridge, --fence, --fair
# and the one-server forms.  POSIX sh; ordering through files, not timing.
set -u

tool="${top_builddir:-.}/tools/tslock"
. "${top_srcdir:-.}/tests/harness.sh"
need_server
if [ ! -x "$tool" ]; then
    echo "no tool at $tool"
    exit 1
fi

# /tmp, not $TMPDIR: a Unix socket path must stay under ~100 bytes.
dir=$(mktemp -d /tmp/tslock-rl.XXXXXX) || exit 1
pid1=
pid2=
pid3=
cleanup() {
    for p in "$pid1" "$pid2" "$pid3"; do
        [ -n "$p" ] && kill "$p" 2>/dev/null && wait "$p" 2>/dev/null
    done
    rm -rf "$dir"
}
th_on_exit cleanup
trap 'exit 130' INT TERM

# start N: redis-server N on $dir/rN.sock; its pid in pidN.
start() {
    start_unix_server "$dir/r$1.sock" "$dir/r$1.log"
    eval "pid$1=$started"
}

# stop N: SIGKILL server N (a master that is down) and wait for it.
stop() {
    eval "p=\$pid$1"
    kill -9 "$p" 2>/dev/null
    wait "$p" 2>/dev/null
    eval "pid$1="
    rm -f "$dir/r$1.sock"
}

start 1
start 2
start 3

out="$dir/out"
err="$dir/err"

# get N KEY: what server N holds under KEY ("" when absent).
get() {
    "$cli" -s "$dir/r$1.sock" get "$2"
}

U1="unix://$dir/r1.sock"
U2="unix://$dir/r2.sock"
U3="unix://$dir/r3.sock"
rl="$tool -u $U1 -u $U2 -u $U3"

# ----------------------------------------------------------- run
t "3 x -u: COMMAND runs, its status" 7 $rl k1 -- sh -c \
    "'$cli' -s '$dir/r1.sock' get k1 >'$dir/v1'; \
     '$cli' -s '$dir/r2.sock' get k1 >'$dir/v2'; \
     '$cli' -s '$dir/r3.sock' get k1 >'$dir/v3'; exit 7"
check "3 x -u: one token on all three masters while COMMAND ran" \
    eval '[ -n "$(cat "$dir/v1")" ] && cmp -s "$dir/v1" "$dir/v2" \
        && cmp -s "$dir/v1" "$dir/v3"'
check "3 x -u: released on all three" \
    eval '[ -z "$(get 1 k1)$(get 2 k1)$(get 3 k1)" ]'

# ----------------------------------------------------------- handles
t "acquire prints a redlock handle" 0 $rl acquire k2
h=$(cat "$out")
check "acquire: redlock:<32 hex digits>" \
    eval 'echo "$h" | grep -Eq "^redlock:[0-9a-f]{32}$"'
check "acquire: the token on every master" \
    eval '[ "$(get 1 k2)" = "${h#redlock:}" ] \
        && [ "$(get 2 k2)" = "${h#redlock:}" ] \
        && [ "$(get 3 k2)" = "${h#redlock:}" ]'
t "status: held by a majority" 0 $rl status k2
check "status: names the token and the count" \
    has "held: \"${h#redlock:}\" on 3 of 3 masters" "$out"
t "acquire while held: busy (1)" 1 $rl acquire k2
check "busy: says how many masters" has "taken on 0 of 3 masters" "$err"
"$cli" -s "$dir/r1.sock" pexpire k2 5000 >/dev/null
t "extend with the handle" 0 $rl -t 60000 extend k2 "$h"
check "extend: the lease set on every master" \
    eval '[ "$("$cli" -s "$dir/r1.sock" pttl k2)" -gt 30000 ] \
        && [ "$("$cli" -s "$dir/r3.sock" pttl k2)" -gt 30000 ]'
t "release with the handle" 0 $rl release k2 "$h"
check "release: gone from every master" \
    eval '[ -z "$(get 1 k2)$(get 2 k2)$(get 3 k2)" ]'
t "release again: lost (75)" 75 $rl release k2 "$h"
t "release with a bad handle: usage (64)" 64 $rl release k2 token:xyz
check "bad handle: says what a handle looks like" \
    one_line "redlock:<32 hex digits>"
t "status of a free key" 0 $rl status k2
check "status: not held" has "not held by a majority" "$out"

# ----------------------------------------------------------- waiting
t "a holder for the waits" 0 $rl acquire k8
h8=$(cat "$out")
$rl -v -w -1 k8 -- true >"$dir/outW" 2>"$dir/errW" &
w=$!
n=0
until grep -q "waiting until it is" "$dir/errW" 2>/dev/null; do
    n=$((n + 1))
    [ $n -gt 1000 ] && break
    sleep 0.01
done
kill -TERM $w
wait $w
rc=$?
check "SIGTERM ends a Redlock wait: 143" [ $rc -eq 143 ]
check "SIGTERM: the holder still holds it" \
    eval '[ "$(get 1 k8)" = "${h8#redlock:}" ]'
$rl -w 30000 k8 -- sh -c "echo ran >'$dir/v8'" >"$dir/outW" 2>"$dir/errW" &
w=$!
t "release lets the waiter in" 0 $rl release k8 "$h8"
wait $w
rc=$?
check "the waiter ran after the release" \
    eval '[ $rc -eq 0 ] && [ "$(cat "$dir/v8")" = ran ]'

# ----------------------------------------------------------- renewal
# A 1200 ms lease: each master gets 120 ms to answer, room on a busy host.
t "--renew keeps the Redlock past its lease" 0 $rl -r -t 1200 k3 -- sh -c \
    "sleep 3.8; '$cli' -s '$dir/r2.sock' get k3 >'$dir/v4'"
check "--renew: still ours after three leases" \
    eval '[ -n "$(cat "$dir/v4")" ]'
t "--renew: lost when the token is deleted from two masters: 75" 75 \
    $rl -r -t 300 k4 -- sh -c \
    "'$cli' -s '$dir/r1.sock' del k4 >/dev/null; \
     '$cli' -s '$dir/r2.sock' del k4 >/dev/null; sleep 0.5"
check "--renew lost: warned" has "WARNING: renewing the lease" "$err"

# ----------------------------------------------------------- usage errors
t "-u twice: usage (64)" 64 $tool -u "$U1" -u "$U2" k -- true
check "-u twice: one line naming the odd count" one_line "odd number"
t "-u four times: usage (64)" 64 $rl -u "$U1" k -- true
t "-m timestamp with several -u: usage (64)" 64 $rl -m timestamp k -- true
check "-m timestamp: says why" one_line "cannot be used with several servers"
t "-m bridge with several -u: usage (64)" 64 $rl -m bridge acquire k
check "-m bridge: says why" one_line "-m bridge cannot be used"
t "-m token with several -u is fine" 0 $rl -m token k -- true
t "--fence with several -u: usage (64)" 64 $rl --fence k -- true
check "--fence: says why" one_line "own counter"
t "--fair with several -u: usage (64)" 64 $rl --fair k -- true
t "break with several -u: usage (64)" 64 $rl break k
check "break: one server only" one_line "break works on one server"
t "survey with several -u: usage (64)" 64 $rl survey
t "several KEYs with several -u: usage (64)" 64 $rl ka kb -- true
check "several KEYs: one line saying a Redlock takes one KEY" \
    one_line "takes one KEY"
check "no key k anywhere" eval '[ -z "$(get 1 k)$(get 2 k)$(get 3 k)" ]'
t "one -u still works as before" 0 $tool -u "$U2" k5 -- true

# ----------------------------------------------------------- masters down
stop 1
t "one of three down: still works" 0 $rl -v k6 -- sh -c \
    "'$cli' -s '$dir/r2.sock' get k6 >'$dir/v6'"
check "one down: held on the other two" eval '[ -n "$(cat "$dir/v6")" ]'
check "one down: says which master failed" has "master 1" "$err"
# The second master of three dies while COMMAND runs: renewals reach too
# few masters (a warning while the validity lasts), then the hold is lost.
t "--renew, a second master lost mid-run: 75" 75 $rl -r -t 1200 k9 -- \
    sh -c "kill -9 $pid3; sleep 3"
check "--renew: warned of too few masters" has "reached too few masters" "$err"
check "--renew: then the loss" has "WARNING: renewing the lease" "$err"
stop 3
t "two of three down: unavailable (69)" 69 $rl k7 -- true
check "two down: TSLOCK_ENOQUORUM" has "TSLOCK_ENOQUORUM" "$err"
check "two down: nothing left on the live master" eval '[ -z "$(get 2 k7)" ]'
t "two down, waiting 200 ms: still 69" 69 $rl -w 200 k7 -- true
check "two down, waiting: nothing left" eval '[ -z "$(get 2 k7)" ]'

finish

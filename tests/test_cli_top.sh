#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# test_cli_top.sh - tslock top against a private redis-server: --once's
# frame for scripts (no escapes) with the numbers of activity caused
# during its interval (holders of each dialect, two waiters joining a
# line, two releases, a legacy SETNX and GETSET); then the live view in a
# detached tmux session of a fixed size: its rows, the sort keys, and the
# terminal put back (main screen, cursor shown, stty sane) after q, after
# C-c and after the server goes away (exit 69).  POSIX sh; the ordering
# comes from what the server and the pane show, polled, never from sleeps
# alone.
set -u

tool="${top_builddir:-.}/tools/tslock"
tool="$(cd "$(dirname "$tool")" && pwd)/$(basename "$tool")"
old="${top_builddir:-.}/tests/oldredis"
. "${top_srcdir:-.}/tests/harness.sh"
need_server
if ! command -v tmux >/dev/null 2>&1; then
    echo "FAIL - tmux not found (apt-get install tmux; quickstart.sh does)"
    exit 1
fi

dir=$(mktemp -d /tmp/tslock-top.XXXXXX) || exit 1
pid=
pid2=
old_pid=
waiters=
tm="tmux -L tslock-top-$$ -f /dev/null"
cleanup() {
    $tm kill-server 2>/dev/null
    [ -n "$old_pid" ] && kill "$old_pid" 2>/dev/null && wait "$old_pid" 2>/dev/null
    for w in $waiters; do kill "$w" 2>/dev/null && wait "$w" 2>/dev/null; done
    [ -n "$pid2" ] && kill "$pid2" 2>/dev/null && wait "$pid2" 2>/dev/null
    [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
    rm -rf "$dir"
}
th_on_exit cleanup
trap 'exit 130' INT TERM

out="$dir/out"
err="$dir/err"
shown=20
sock="$dir/r.sock"
start_unix_server "$sock" "$dir/redis.log"
pid=$started
url="unix://$sock"
rc() { "$cli" -s "$sock" "$@"; }

# Holders of each dialect; tok's lease the longest, for the 't' sort.
"$tool" -u "$url" -t 90000 acquire tok >"$dir/h.tok"
"$tool" -u "$url" -m timestamp -t 60000 acquire ts >/dev/null
"$tool" -u "$url" -m bridge -t 60000 acquire br >/dev/null
token=$(sed 's/^token://' "$dir/h.tok")

# await_top: top's main connection has read the lines once (its last
# command is PUBSUB NUMSUB), so what follows falls in its interval.
await_top() {
    n=0
    until rc client list | grep -q "cmd=pubsub|numsub"; do
        n=$((n + 1))
        [ $n -gt 500 ] && return 1
        sleep 0.02
    done
}

# activity: two waiters join tok's line, rel is taken and released twice,
# a legacy client writes legacy1 (SETNX) and ts (GETSET).
activity() {
    for i in 1 2; do
        "$tool" -u "$url" -w 60000 tok -- true >/dev/null 2>&1 &
        waiters="$waiters $!"
    done
    for i in 1 2; do
        h=$("$tool" -u "$url" -t 60000 acquire rel)
        "$tool" -u "$url" release rel "$h"
    done
    rc setnx legacy1 $(($(date +%s) * 1000 + 30000)) >/dev/null
    rc getset ts 1000000000000 >/dev/null
    n=0
    until [ "$(rc zcard '{tok}:queue')" = 2 ]; do
        n=$((n + 1))
        [ $n -gt 500 ] && break
        sleep 0.02
    done
}

# ---- --once, for scripts
# The interval is long enough for activity() on a loaded machine (it
# starts six tslock processes; beside stress-ng it took more than 2 s):
# its 2 waits and 2 releases over 15 s show as 0.1/s (anything from
# 13.4 s to 40 s would), and the test checks that activity() ended first.
th_begin "--once runs"
"$tool" -u "$url" --once --interval 15s top >"$out" 2>"$err" &
once=$!
await_top
activity
kill -0 $once 2>/dev/null && activity_done=1 || activity_done=0
wait $once
rc_once=$?
[ $rc_once -eq 0 ] && ok "--once exits 0" || not_ok "--once exits 0 ($rc_once)"
check "--once: the activity fell inside its interval" [ $activity_done = 1 ]
row() { grep "^$1 " "$out"; }
col() { row "$1" | awk -v c="$2" '{print $c}'; }
check "--once: no escape in the frame" eval '! grep -q "$(printf "\033")" "$out"'
check "--once: a totals line, then the header" \
    eval 'head -1 "$out" | grep -q "^tslock top - .*locks 4 " && sed -n 2p "$out" | grep -q "^KEY *KIND *HOLDER *LEFT_MS *LINE *WAITS/S *RELS/S *LEGACY *DIALECT$"'
check "--once: totals: 2 waiting, 0.1 waits/s, 0.1 releases/s" \
    eval 'head -1 "$out" | grep -q "waiting 2  waits/s 0.1  releases/s 0.1 "'
check "--once: tok is a token lock held by the acquired token" \
    eval '[ "$(col tok 2)" = token ] && [ "$(col tok 3)" = "$(echo "$token" | cut -c1-23)" ]'
check "--once: tok's line is 2 and 2 waits over 15 s are 0.1/s" \
    eval '[ "$(col tok 5)" = 2 ] && [ "$(col tok 6)" = 0.1 ]'
check "--once: tok has 50-90 s left" \
    eval '[ "$(col tok 4)" -gt 50000 ] && [ "$(col tok 4)" -le 90000 ]'
check "--once: ts is timestamp-ms, expired by the GETSET, one legacy writer" \
    eval '[ "$(col ts 2)" = timestamp-ms ] && [ "$(col ts 4)" = expired ] && [ "$(col ts 8)" = 1 ]'
check "--once: br is a bridge lock" eval '[ "$(col br 2)" = bridge-ms ]'
check "--once: rel: 2 releases over 15 s are 0.1/s, no lock now" \
    eval '[ "$(col rel 2)" = - ] && [ "$(col rel 7)" = 0.1 ]'
check "--once: legacy1: one legacy writer" eval '[ "$(col legacy1 8)" = 1 ]'
check "--once: the hottest (tok) first" eval '[ "$(sed -n 3p "$out" | cut -d" " -f1)" = tok ]'
t "--once --limit 1: one row" 0 "$tool" -u "$url" --once --interval 100ms --limit 1 top
check "--limit 1: three lines" eval '[ $(wc -l <"$out") -eq 3 ]'
t "top without a terminal or --once: usage" 64 "$tool" -u "$url" top
check "it says --once" has "pass --once" "$err"
t "--interval 5: usage" 64 "$tool" -u "$url" --interval 5 --once top
check "it names what was expected and what came" \
    has "--interval expects a duration from 100ms to 1h (1s, 500ms), got '5'" "$err"

# ---- every dialect named: a key of each preset's form, written by raw
# SETs as each library writes it, in a db of its own.  The last column
# names the presets whose clients could have written the value, or
# unknown-stamp; LEFT_MS says expired, or never for a sentinel.
rd() { rc -n 3 "$@" >/dev/null; }
dnow=$(rc time | head -1)
rd set d:java $(((dnow + 60) * 1000 + 1))
rd set d:redisdoc $((dnow + 61))
rd set d:float "$((dnow + 60)).3051164"
rd set d:objects_lock 1
rd set lock:d:resque true
rd set d:gem "$((dnow + 61))-27118-520"
rd set d:ninja "a:3:{s:3:\"pid\";i:8975;s:8:\"hostname\";s:2:\"vm\";s:7:\"expires\";i:$((dnow - 60));}"
rd set d:predis "$((dnow + 61)):15131"
rd set d:odd "$((dnow + 60))_15131"
rd set d:counter 1
t "--once: every dialect" 0 "$tool" -u "unix://$sock?db=3" --once \
    --interval 100ms top
cp "$out" "$dir/dialects.out"
# named KEY KIND LEFT DIALECT: the row says so (LEFT: a pattern).
named() {
    row "$1" | awk -v k="$2" -v l="^$3\$" -v d="$4" \
        '$2 == k && $4 ~ l && $9 == d && NF == 9 { f = 1 } END { exit !f }'
}
top_dialect_checks() {
    $1 "top names java-redislock/node-redis-lock" \
        named d:java timestamp-ms "[0-9]*" java-redislock/node-redis-lock
    $1 "top names redis-docs/resque-lock-timeout" \
        named d:redisdoc timestamp-s "[0-9]*" redis-docs/resque-lock-timeout
    $1 "top names redis-py2/redis-objects/redis-mutex" \
        named d:float timestamp-float "[0-9]*" redis-py2/redis-objects/redis-mutex
    $1 "top names redis-objects' 1, never expiring" \
        named d:objects_lock timestamp-float never redis-objects
    $1 "top names resque-lock-timeout's true, never expiring" \
        named lock:d:resque timestamp-s never resque-lock-timeout
    $1 "top names the redis-lock gem" named d:gem timestamp-s "[0-9]*" redis-lock-gem
    $1 "top names ninja-mutex, expired" named d:ninja timestamp-s expired ninja-mutex
    $1 "top names predislock" named d:predis timestamp-s "[0-9]*" predislock
    $1 "top: another suffix is unknown-stamp, not expired" \
        named d:odd unknown-stamp - unknown-stamp
    $1 "top: a counter of 1 is no lock" eval '! row d:counter >/dev/null'
}
top_dialect_checks check
# The checks can fail: on the frame with its names broken, each fails.
refutes() {
    name=$1
    shift
    th_begin "$name"
    if "$@"; then
        not_ok "broken copy: $name passes all the same"
    else
        ok "broken copy: $name fails"
    fi
}
sed -e 's/java-redislock.node-redis-lock$/java-redislock/' \
    -e 's/redis-docs.resque-lock-timeout$/redis-docs/' \
    -e 's/redis-py2.redis-objects.redis-mutex$/redis-py2/' \
    -e 's/never\( .*\)redis-objects$/expired\1redis-objects/' \
    -e 's/never\( .*\)resque-lock-timeout$/-\1resque-lock-timeout/' \
    -e 's/redis-lock-gem$/unknown-stamp/; s/ninja-mutex$/-/' \
    -e 's/predislock$/redis-docs/' \
    -e 's/^\(d:odd .*\) - \(.*\)unknown-stamp$/\1 expired \2unknown-stamp/' \
    "$dir/dialects.out" >"$out"
echo "d:counter                timestamp-s     -  never 0 0.0 0.0 0 redis-objects" >>"$out"
top_dialect_checks refutes

# A server before 2.8 has no SCAN: refused by name, never KEYS.
if [ -x "$old" ]; then
    "$old" --emulate 2.6.17 --listen "$dir/old.sock" --upstream "$sock" &
    old_pid=$!
    await_file "$dir/old.sock"
    t "--once on 2.6: 69" 69 "$tool" -u "unix://$dir/old.sock" --once \
        --interval 100ms top
    check "it says SCAN came in 2.8 and KEYS is not used" \
        one_line "no SCAN (it came in Redis 2.8), which tslock top needs: it never lists keys with KEYS"
    kill "$old_pid"
    wait "$old_pid" 2>/dev/null
    old_pid=
else
    echo "FAIL - no tests/oldredis"
    failed=$((failed + 1))
fi

# ---- live, in tmux
pane() { $tm capture-pane -p -t top 2>/dev/null; }
# await_pane TEXT: until the pane shows it (10 s at most; at once when the
# tmux session is gone, which the next check then reports).
await_pane() {
    n=0
    until pane | grep -q -- "$1"; do
        n=$((n + 1))
        [ $n -gt 500 ] && return 1
        $tm has-session -t top 2>/dev/null || return 1
        sleep 0.02
    done
}
flag() { $tm display -p -t top "#{$1}" 2>/dev/null; }
# first_row: the key of the first row under the header.
first_row() { pane | sed -n 3p | cut -d" " -f1; }
# Each call's marker is numbered, so an earlier answer still on the
# screen is never taken for this one.
stty_seq=0
stty_of_pane() {
    stty_seq=$((stty_seq + 1))
    $tm send-keys -t top "stty -a | tr ' ;' '\\n\\n' | grep -x -e icanon -e -icanon -e echo -e -echo | tr '\\n' ' ' | sed 's/^/ST''TY$stty_seq: /'; echo" Enter
    # (the command as typed does not hold the marker; its output may
    # follow a prompt when echo is off)
    await_pane "STTY$stty_seq: " &&
        pane | grep -o "STTY$stty_seq: .*" | tail -1 | sed "s/^STTY$stty_seq:/STTY:/"
}
# restored WHY: main screen, cursor shown, canonical input with echo.
restored() {
    check "$1: main screen again" eval '[ "$(flag alternate_on)" = 0 ]'
    check "$1: cursor visible" eval '[ "$(flag cursor_flag)" = 1 ]'
    s=$(stty_of_pane)
    check "$1: stty icanon echo" eval 'echo "$s" | grep -q "STTY: icanon echo"'
}

$tm new-session -d -s top -x 120 -y 30 "env PS1='$ ' sh"
th_begin "tmux: top draws"
$tm send-keys -t top "$tool -u $url --interval 300ms top; echo EXIT=\$?" Enter
await_pane "^tslock top - " && ok "tmux: top draws" || not_ok "tmux: top draws"
check "tmux: on the alternate screen, cursor hidden" \
    eval '[ "$(flag alternate_on)" = 1 ] && [ "$(flag cursor_flag)" = 0 ]'
await_pane "^tok .* 2 " >/dev/null
check "tmux: tok's row: token, line 2" eval 'pane | grep -Eq "^tok +token +[0-9a-f]{23} +[0-9]+ +2 "'
check "tmux: the key line at the bottom" eval 'pane | sed -n 30p | grep -q "q quit"'
$tm send-keys -t top n
await_pane "sort name" >/dev/null
check "tmux: n sorts by name (br first)" eval '[ "$(first_row)" = br ]'
$tm send-keys -t top t
await_pane "sort left" >/dev/null
check "tmux: t sorts by time left (tok first)" eval '[ "$(first_row)" = tok ]'
$tm send-keys -t top s s
await_pane "sort line" >/dev/null
check "tmux: s steps to the next sort (name, then line)" eval 'pane | grep -q "sort line"'
# A smaller window: SIGWINCH, and the key line moves to the new last row.
$tm resize-window -t top -x 100 -y 20
n=0
until pane | sed -n 20p | grep -q "q quit" || [ $n -gt 500 ]; do
    n=$((n + 1))
    sleep 0.02
done
check "tmux: resized to 100x20, the key line on row 20" \
    eval 'pane | sed -n 20p | grep -q "q quit"'
$tm send-keys -t top q
await_pane "EXIT=[0-9]" >/dev/null
check "tmux: q exits 0" eval 'pane | grep -q "EXIT=0$"'
restored "after q"

th_begin "tmux: C-c"
$tm send-keys -t top "clear" Enter
$tm send-keys -t top "$tool -u $url --interval 300ms top; echo EXIT=\$?" Enter
await_pane "^tslock top - " >/dev/null
$tm send-keys -t top C-c
await_pane "EXIT=[0-9]" >/dev/null
check "tmux: C-c exits 130" eval 'pane | grep -q "EXIT=130$"'
restored "after C-c"

th_begin "tmux: server goes away"
sock2="$dir/r2.sock"
start_unix_server "$sock2" "$dir/redis2.log"
pid2=$started
$tm send-keys -t top "clear" Enter
$tm send-keys -t top "$tool -u unix://$sock2 --interval 300ms top; echo EXIT=\$?" Enter
await_pane "^tslock top - " >/dev/null
kill "$pid2"
wait "$pid2" 2>/dev/null
pid2=
await_pane "EXIT=[0-9]" >/dev/null
th_begin "tmux: a lost server exits 69"
if pane | grep -q "EXIT=69$"; then
    ok "tmux: a lost server exits 69"
else
    not_ok "tmux: a lost server exits 69"
    pane | sed 's/^/    pane: /'
fi
check "tmux: the reason shown after the screen is back" \
    eval 'pane | grep -q "tslock: top stopped: the server at .* went away or failed (exit 69)"'
restored "after the server went away"

# The checks above can fail: a program that leaves the terminal as top
# draws on it is seen so.
th_begin "proof"
$tm send-keys -t top "clear" Enter
# Its own marker: an EXIT= left on the screen by the section before
# would match before the "clear" has run.
$tm send-keys -t top "printf '\\033[?1049h\\033[?25l'; stty -icanon -echo; echo PROOF=\$?" Enter
await_pane "PROOF=[0-9]" >/dev/null
check "proof: a program that leaves the alternate screen on is seen" \
    eval '[ "$(flag alternate_on)" = 1 ] && [ "$(flag cursor_flag)" = 0 ]'
s=$(stty_of_pane)
check "proof: and its stty is seen as not sane" \
    eval 'echo "$s" | grep -q "STTY: -icanon -echo"'

# After a failure, the pane as it was last, for the reader of the log.
[ $failed -eq 0 ] || pane | sed 's/^/    pane: /'
finish

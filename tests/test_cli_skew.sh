#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# test_cli_skew.sh - skewed clocks seen by the tslock command: status and
# survey print this host's offset from the server's clock (TIME, 2.6+)
# or say none can be read; watch names a legacy writer whose clock runs
# ahead or behind; --takeover-grace refuses bad values.  The skewed
# processes run under libfaketime, which shifts their wall clock only
# (FAKETIME_DONT_FAKE_MONOTONIC=1: CLOCK_MONOTONIC stays true).  POSIX sh;
# ordering comes from handshakes on files, never from timing alone.
set -u

tool="${top_builddir:-.}/tools/tslock"
legacy="${top_builddir:-.}/tests/legacy_cli"
old="${top_builddir:-.}/tests/oldredis"
. "${top_srcdir:-.}/tests/harness.sh"
need_server
libft="${TSLOCK_LIBFAKETIME:-}"
if [ -z "$libft" ]; then
    for f in /usr/lib/*/faketime/libfaketime.so.1 \
        /usr/lib/faketime/libfaketime.so.1; do
        [ -r "$f" ] && libft=$f && break
    done
fi
if [ -z "$libft" ]; then
    echo "FAIL - libfaketime not found (apt-get install faketime" \
        "libfaketime; quickstart.sh does)"
    exit 1
fi
# skewed OFFSET COMMAND...: run COMMAND with its wall clock OFFSET
# seconds off ("+120", "-120"), its monotonic clock untouched.
skewed() {
    offset=$1
    shift
    LD_PRELOAD="$libft" FAKETIME="$offset" FAKETIME_DONT_FAKE_MONOTONIC=1 \
        ASAN_OPTIONS=verify_asan_link_order=0 "$@"
}

dir=$(mktemp -d /tmp/tslock-skew.XXXXXX) || exit 1
pid=
old_pid=
watcher=
cleanup() {
    [ -n "$watcher" ] && kill "$watcher" 2>/dev/null && wait "$watcher" 2>/dev/null
    [ -n "$old_pid" ] && kill "$old_pid" 2>/dev/null && wait "$old_pid" 2>/dev/null
    [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
    rm -rf "$dir"
}
th_on_exit cleanup
trap 'exit 130' INT TERM

out="$dir/out"
err="$dir/err"
shown=20

# await_count TEXT FILE N: until N lines of FILE match, for up to 10 s.
# MONITOR's lines reach a watcher after the commands' replies (through
# the proxy later still): each watch awaits the line of its last command
# before the SIGTERM, where a loaded machine killed the watcher first.
await_count() {
    n=0
    until [ "$(grep -c -- "$1" "$2" 2>/dev/null)" -ge "$3" ]; do
        n=$((n + 1))
        [ $n -gt 1000 ] && return 1
        sleep 0.01
    done
}

# MONITOR names clients by address only over TCP: a loopback server.
if ! start_tcp_server 11 "$dir/redis.log"; then
    echo "no redis-server of ours came up on a loopback port"
    exit 1
fi
pid=$started
port=$started_port
U="redis://127.0.0.1:$port"

# ---------------------------------------------------- bad grace values
t "--takeover-grace -1: usage error" 64 $tool -u "$U" --takeover-grace -1 k -- true
check "--takeover-grace -1: says what it expects" \
    has "takeover-grace expects milliseconds from 0 to 86400000 (one day), got '-1'" "$err"
t "--takeover-grace past a day: usage error" 64 \
    $tool -u "$U" --takeover-grace 86400001 k -- true
t "--takeover-grace 2s: usage error" 64 $tool -u "$U" --takeover-grace 2s k -- true
t "--takeover-grace 0 runs" 0 $tool -u "$U" --takeover-grace 0 k -- true
t "--takeover-grace 86400000 runs" 0 $tool -u "$U" --takeover-grace 86400000 k -- true

# ------------------------------------------- this host's offset (TIME)
t "status on a host 5 s ahead" 0 skewed +5 $tool -u "$U" status k
check "status: this host's clock ahead of the server's, by about 5 s" \
    eval 'grep -Eq "^clock: this host.s clock is (4[89][0-9][0-9]|5[01][0-9][0-9]) ms ahead of the server.s \(TIME\)$" "$out"'
t "status on a host 3 s behind" 0 skewed -3 $tool -u "$U" status k
check "status: behind by about 3 s" \
    eval 'grep -Eq "^clock: this host.s clock is (2[89][0-9][0-9]|3[01][0-9][0-9]) ms behind the server.s" "$out"'
t "status -q: no clock line" 0 skewed +5 $tool -u "$U" -q status k
check "status -q: one word" eval '[ "$(cat "$out")" = free ]'
t "survey on a host 5 s ahead" 0 skewed +5 $tool -u "$U" survey
check "survey: the offset line" \
    eval 'grep -Eq "^clock: this host.s clock is (4[89][0-9][0-9]|5[01][0-9][0-9]) ms ahead" "$out"'
t "survey --json on a host 5 s ahead" 0 skewed +5 $tool -u "$U" survey --json
check "survey --json: clock_ahead_ms in the summary" \
    eval 'grep -Eq "^\{\"summary\":\{\"keys\":[0-9]*,\"locks\":[0-9]*,\"clock_ahead_ms\":(4[89][0-9][0-9]|5[01][0-9][0-9]),\"clock_source\":\"TIME\"," "$out"'
if [ -x "$old" ]; then
    osock="$dir/old.sock"
    "$old" --emulate 2.4.18 --listen "$osock" --upstream-port $port &
    old_pid=$!
    await_file "$osock"
    t "status on 2.4" 0 $tool -u "unix://$osock" status k
    check "status on 2.4: no offset can be read" \
        has "^clock: the server has no TIME (before Redis 2.6): no offset" "$out"
    t "survey --json on 2.4" 0 $tool -u "unix://$osock" survey --json --keys
    check "survey --json on 2.4: clock_ahead_ms null" \
        has '"clock_ahead_ms":null,"clock_source":null' "$out"
    # MONITOR on 2.4 gives no address: the writer is flagged, unnamed.
    : >"$dir/werr"
    $tool -u "unix://$osock" watch --for 20000 wo >"$dir/wout" 2>"$dir/werr" &
    watcher=$!
    await "^tslock: watching 1 key on" "$dir/werr"
    skewed -120 "$legacy" -s "$osock" client z redisdoc 60000 lock z wo \
        >"$dir/lz"
    await_count ' setnx "wo" ' "$dir/wout" 1
    kill -TERM $watcher
    wait $watcher
    watcher=
    cp "$dir/wout" "$out"
    check "watch on 2.4: a writer 120 s behind flagged, with no address" \
        eval 'grep -Eq "^SKEW: a client \(the server gives no addresses before 2\.6\): its clock runs at least (5[89]|60)[0-9]{3} ms behind" "$out"'
else
    echo "FAIL - no tests/oldredis"
    failed=$((failed + 1))
fi

# ------------------------------------------ watch names a skewed writer
# Real legacy processes on connections of their own: a Java RedisLock x
# on the true clock holds wk for 60 s; y, the same client in a process
# whose wall clock runs 120 s ahead, reads x's stamp as expired and takes
# it over by GETSET.  Then a redis-doc client z, 120 s behind, writes a
# stamp already expired by the server's clock.
$tool -u "$U" watch --for 20000 wk >"$dir/wout" 2>"$dir/werr" &
watcher=$!
await "^tslock: watching 1 key on" "$dir/werr"
"$legacy" -p $port client x java 60000 lock x wk >"$dir/lx"
skewed +120 "$legacy" -p $port client y java 60000 lock y wk >"$dir/ly"
"$cli" -p $port del wk >/dev/null
skewed -120 "$legacy" -p $port client z redisdoc 60000 lock z wk >"$dir/lz"
# x's, y's and z's SETNX: z's is the last command.
await_count ' setnx "wk" ' "$dir/wout" 3
kill -TERM $watcher
wait $watcher
watcher=
cp "$dir/wout" "$out"
cp "$dir/werr" "$err"
check "watch: the legacy processes ran as planned" eval \
    '[ "$(cut -d" " -f1,2 "$dir/lx" "$dir/ly" "$dir/lz" | tr "\n" " ")" = "x held y held z held " ]'
check "watch: x on the true clock is not flagged" \
    eval '[ $(grep -c "^SKEW" "$out") -eq 2 ]'
check "watch: y named, at least 59 s ahead, by its takeover" \
    eval 'grep -Eq "^SKEW: 127\.0\.0\.1:[0-9]+: its clock runs at least (59[0-9]{3}|60[0-9]{3}) ms ahead of the server.s: took over a stamp the server.s clock calls live$" "$out"'
check "watch: z named, at least 58 s behind" \
    eval 'grep -Eq "^SKEW: 127\.0\.0\.1:[0-9]+: its clock runs at least (5[89][0-9]{3}|60[0-9]{3}) ms behind the server.s: stamp already expired when written$" "$out"'
check "watch: the summary's skew lines" \
    eval '[ $(grep -c "^skew: 127\.0\.0\.1:[0-9]*: its clock runs at least" "$out") -eq 2 ]'
: >"$dir/werr"
$tool -u "$U" watch --for 20000 --json wk >"$dir/wout" 2>"$dir/werr" &
watcher=$!
await "^tslock: watching 1 key on" "$dir/werr"
"$cli" -p $port del wk >/dev/null
skewed -120 "$legacy" -p $port client z redisdoc 60000 lock z wk >"$dir/lz"
await_count '"command":"setnx"' "$dir/wout" 1
kill -TERM $watcher
wait $watcher
watcher=
cp "$dir/wout" "$out"
check "watch --json: the event carries clock_ahead_ms and skew" \
    eval 'grep -Eq "\"danger\":null,\"clock_ahead_ms\":-(58|59|60)[0-9]{3},\"skew\":\"stamp already expired when written\"\}$" "$out"'
check "watch --json: the summary too" \
    eval 'grep -Eq "\"danger\":0,(\"stamp_dialects\":\{[^}]*\},)?\"skewed\":1,\"clock_ahead_ms\":-(58|59|60)[0-9]{3}\}" "$out"'

# The GETSET loser on true clocks is not skew: A and B read a dead
# holder's expired stamp, A's GETSET wins, B's GETSET loses and B puts
# A's stamp back.  Then C, on the same connection scheme, reads A's live
# stamp and takes it over: that is flagged, so the check can fail.  Each
# client is one connection (raw RESP over a socket); the commands go one
# at a time, each after the reply to the one before.
: >"$dir/werr"
$tool -u "$U" watch --for 20000 wk >"$dir/wout" 2>"$dir/werr" &
watcher=$!
await "^tslock: watching 1 key on" "$dir/werr"
python3 - "$port" <<'PY' >"$dir/py" 2>&1
import socket, sys, time
def conn():
    return socket.create_connection(("127.0.0.1", int(sys.argv[1])))
def cmd(s, *args):
    msg = "*%d\r\n" % len(args)
    for a in args:
        msg += "$%d\r\n%s\r\n" % (len(a), a)
    s.sendall(msg.encode())
    return s.recv(4096)
now = int(time.time() * 1000)
w, a, b, c = conn(), conn(), conn(), conn()
cmd(w, "SET", "wk", str(now - 500))  # expired, within the threshold
cmd(a, "GET", "wk")
cmd(b, "GET", "wk")
sa = str(now + 60001)
cmd(a, "GETSET", "wk", sa)
cmd(b, "GETSET", "wk", str(now + 60002))
cmd(b, "SET", "wk", sa)
cmd(c, "GET", "wk")
cmd(c, "GETSET", "wk", str(now + 180001))
print("done")
PY
# A's, B's and C's GETSET: C's is the last command.
await_count ' getset "wk" ' "$dir/wout" 3
kill -TERM $watcher
wait $watcher
watcher=
cp "$dir/wout" "$out"
cp "$dir/py" "$err"
check "watch: the loser race ran" has "^done$" "$dir/py"
check "watch: only the taker of a live stamp is flagged, not the loser" \
    eval '[ $(grep -c "^SKEW" "$out") -eq 1 ]'
check "watch: the taker's clock at least 59 s ahead" \
    eval 'grep -Eq "^SKEW: 127\.0\.0\.1:[0-9]+: its clock runs at least (59[0-9]{3}|60[0-9]{3}) ms ahead of the server.s: took over" "$out"'

finish

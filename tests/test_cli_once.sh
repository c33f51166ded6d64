#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# test_cli_once.sh - scheduled jobs with real processes: five hosts per
# period, started 0-8 s apart, their clocks skewed by up to 5 s either
# way (libfaketime, wall clock only), a job of 0.1 s to 20 s, run with
# tslock --once-per on Redis 7 and through the proxy as 2.2 and 2.0: each
# period runs exactly once, and every host that skips names the host that
# ran.  A control with a plain lock and no minimum hold runs a period more
# than once.  A host killed mid-run leaves a record that says so; with
# --retry-failed the next host reruns the period once the lease ends.
# Time is shrunk by $SCALE (default 20): a 60 s period is 3 s, 8 s of
# firing spread 0.4 s, 20 s of job 1 s.  $TSLOCK_ONCE_PERIODS periods per
# server (default 2; make check-once runs 50).  POSIX sh.
set -u

tool="${top_builddir:-.}/tools/tslock"
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
periods=${TSLOCK_ONCE_PERIODS:-2}
seed=${TSLOCK_ONCE_SEED:-$$}
SCALE=${SCALE:-20}
# The unshrunk schedule, in ms: the period, the spread of the firings,
# the skew either way, the shortest and longest job, the grace.
period_ms=$((60000 / SCALE))
spread_ms=$((8000 / SCALE))
skew_ms=$((5000 / SCALE))
job_min_ms=$((100 / SCALE))
job_max_ms=$((20000 / SCALE))
grace_ms=$((6000 / SCALE))
echo "# seed $seed, $periods periods of $period_ms ms per server"

dir=$(mktemp -d /tmp/tslock-once.XXXXXX) || exit 1
# The server's pid has a name of its own: check_period reads "pid" from
# the runs, and a cleanup that killed "$pid" left the server running.
server_pid=
proxies=
cleanup() {
    for p in $proxies; do kill "$p" 2>/dev/null && wait "$p" 2>/dev/null; done
    [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null \
        && wait "$server_pid" 2>/dev/null
    rm -rf "$dir"
}
th_on_exit cleanup
trap 'exit 130' INT TERM
out="$dir/out"
err="$dir/err"

if ! start_tcp_server 13 "$dir/redis.log"; then
    echo "no redis-server of ours came up on a loopback port"
    exit 1
fi
server_pid=$started
port=$started_port
for v in 2.2.15 2.0.5; do
    "$old" --emulate $v --listen "$dir/old-$v.sock" --upstream-port $port &
    proxies="$proxies $!"
    th_track $!
done
for v in 2.2.15 2.0.5; do
    await_file "$dir/old-$v.sock" || {
        echo "FAIL - the proxy as $v did not start"
        exit 1
    }
done

# skewed MS COMMAND...: COMMAND with its wall clock MS milliseconds off.
skewed() {
    offset=$(awk -v ms="$1" 'BEGIN { printf "%+.3f", ms / 1000 }')
    shift
    LD_PRELOAD="$libft" FAKETIME="$offset" FAKETIME_DONT_FAKE_MONOTONIC=1 \
        ASAN_OPTIONS=verify_asan_link_order=0 "$@"
}

now_ms() { date +%s%3N; }

sleep_until() {
    d=$(($1 - $(now_ms)))
    [ $d -gt 0 ] && sleep "$(awk -v d=$d 'BEGIN { print d / 1000 }')"
    return 0
}

# plan SEED: five lines "HOST SKEW OFFSET JOB", in ms.
plan() {
    awk -v seed="$1" -v sp=$spread_ms -v sk=$skew_ms -v jmin=$job_min_ms \
        -v jmax=$job_max_ms 'BEGIN {
        srand(seed)
        for (h = 1; h <= 5; h++)
            printf "h%d %d %d %d\n", h, int(rand() * (2 * sk + 1)) - sk,
                int(rand() * (sp + 1)), jmin + int(rand() * (jmax - jmin + 1))
    }'
}

# host URL KEY BOUNDARY HOST SKEW OFFSET JOB OPTIONS...: what a host's
# cron does: fire when its own (skewed) clock reads BOUNDARY + OFFSET.
# The job writes "BOUNDARY HOST PID PERIOD_START KEY" to runs (PID: its
# tslock's, as the record names it); the status goes to results.
host() {
    u=$1 k=$2 b=$3 h=$4 sk=$5 off=$6 job=$7
    shift 7
    sleep_until $((b - sk + off))
    skewed "$sk" $tool -u "$u" -t $((job_max_ms * 5)) --host-name "$h" "$@" \
        "$k" -- sh -c 'echo "$0 $1 $PPID ${TSLOCK_PERIOD_START:--} $2" \
            >>"$3"; sleep "$4"' "$b" "$h" "$k" "$dir/runs" \
        "$(awk -v j=$job 'BEGIN { print j / 1000 }')" \
        >"$dir/out.$b.$h" 2>"$dir/err.$b.$h"
    echo "$b $h $?" >>"$dir/results"
}

# one_period URL KEY SEED OPTIONS...: five hosts in the next period;
# sets b to its boundary.
one_period() {
    u=$1 k=$2 s=$3
    shift 3
    b=$((($(now_ms) / period_ms + 1) * period_ms))
    plan "$s" >"$dir/plan"
    hosts=
    while read -r h sk off job; do
        host "$u" "$k" $b $h $sk $off $job "$@" &
        hosts="$hosts $!"
    done <"$dir/plan"
    wait $hosts
}

# iso MS: Unix ms as the tool prints them, 2026-11-26T02:00:00.000Z.
iso() {
    printf '%s.%03dZ' "$(date -u -d "@$(($1 / 1000))" +%Y-%m-%dT%H:%M:%S)" \
        $(($1 % 1000))
}

# check_period TARGET KEY: the round fired for period b.  A host the
# machine's load starts late may fall into a later period by the clock
# that counts (the server's, or its own before 2.6), where it is a run of
# that period: so each run must be the only one of its period for KEY,
# each other host must skip, naming the host and pid of its period's run.
check_period() {
    name="$1 round $b"
    bad=
    while read -r rb h pid p k; do
        [ "$rb" = "$b" ] || continue
        n=$(awk -v p="$p" -v k="$k" '$4 == p && $5 == k' "$dir/runs" | wc -l)
        [ "$n" -eq 1 ] || bad="$bad period-$p-ran-$n-times"
    done <"$dir/runs"
    ran_in=$(awk -v b=$b '$1 == b { print $4 }' "$dir/runs" | sort -u |
        tr '\n' ' ')
    [ -n "$ran_in" ] || bad="$bad no-run"
    [ "$ran_in" = "$b " ] ||
        echo "# round $b: hosts fell into periods $ran_in(late under load)"
    while read -r pb h rc; do
        [ "$pb" = "$b" ] || continue
        if [ "$rc" -eq 0 ]; then
            awk -v b=$b -v h=$h '$1 == b && $2 == h' "$dir/runs" | grep -q . ||
                bad="$bad $h:exit-0-without-a-run"
            continue
        fi
        if [ "$rc" -ne 3 ]; then
            bad="$bad $h:exit-$rc($(head -c 200 "$dir/err.$b.$h"))"
            continue
        fi
        named=$(sed -n 's/.*the period from \([^ ]*\) ran already on \([^ ]*\) (pid \([0-9]*\)).*/\1 \2 \3/p' \
            "$dir/err.$b.$h")
        set -- $named
        found=
        if [ $# -eq 3 ]; then
            for p in $(awk -v h=$2 -v pid=$3 \
                '$2 == h && $3 == pid { print $4 }' "$dir/runs"); do
                [ "$(iso "$p")" = "$1" ] && found=1
            done
        fi
        [ -n "$found" ] ||
            bad="$bad $h:skip-names-no-run($(head -c 200 "$dir/err.$b.$h"))"
    done <"$dir/results"
    if [ -z "$bad" ]; then
        ok "$name: one run per period ($ran_in), the others skip naming it"
    else
        not_ok "$name:$bad (plan: $(tr '\n' ';' <"$dir/plan"))"
    fi
}

# -------------------------------------------- once per period, skewed
round=0
for target in "7.0 redis://127.0.0.1:$port" \
    "2.2 unix://$dir/old-2.2.15.sock" "2.0 unix://$dir/old-2.0.5.sock"; do
    v=${target%% *}
    u=${target#* }
    i=0
    while [ $i -lt $periods ]; do
        i=$((i + 1))
        round=$((round + 1))
        one_period "$u" "nightly:$v" $((seed * 1000 + round)) \
            --once-per ${period_ms}ms --takeover-grace $grace_ms --keep-periods 100
        check_period "$v"
    done
    t "$v: history lists the runs" 0 $tool -u "$u" --last 100 history \
        "nightly:$v"
    check "$v: history: one ok run per period, as many as ran" \
        eval '[ "$(grep -c " ok " "$out")" -eq \
                "$(grep -c " nightly:$v\$" "$dir/runs")" ] &&
              [ -z "$(awk "/ ok /{print \$1}" "$out" | sort | uniq -d)" ]'
done

# ------------------------------ control: a plain lock, no minimum hold
# The same five hosts, each job 20 ms: a host that fires after the run
# before it released runs the job again, under a correct lock.
b=$((($(now_ms) / period_ms + 1) * period_ms))
hosts=
for h in 1 2 3 4 5; do
    host "redis://127.0.0.1:$port" control $b h$h 0 $((h * spread_ms / 5)) \
        20 &
    hosts="$hosts $!"
done
wait $hosts
n=$(grep -c "^$b " "$dir/runs")
if [ "$n" -gt 1 ]; then
    ok "control: a plain lock ran one period $n times"
else
    not_ok "control: a plain lock ran the period $n times, expected repeats"
fi
# The checker of the rounds above, shown failing on the control.
verdict=$(check_period control | grep "^FAIL")
case $verdict in
"FAIL - control round"*ran-[2-9]-times*)
    ok "the round checker fails the control's round (${verdict%%(*})" ;;
*) not_ok "the round checker passed the control's round: $verdict" ;;
esac
# The same with --at-least the spread: one run.
b=$((($(now_ms) / period_ms + 1) * period_ms))
hosts=
for h in 1 2 3 4 5; do
    host "redis://127.0.0.1:$port" atleast $b h$h 0 $((h * spread_ms / 5)) \
        20 --at-least $((spread_ms * 2)) &
    hosts="$hosts $!"
done
wait $hosts
n=$(grep -c "^$b " "$dir/runs")
if [ "$n" -eq 1 ]; then
    ok "--at-least the spread: the period ran once"
else
    not_ok "--at-least the spread: the period ran $n times"
fi

# --------------------------------------------- a host killed mid-run
# killed URL KEY OPTIONS...: h1 runs a long job and is killed (SIGKILL:
# no release, no record of its end); h2 comes after it.
killed() {
    u=$1 k=$2
    shift 2
    $tool -u "$u" -t 600 -r --host-name h1 --once-per 1d "$k" -- \
        sh -c 'echo $$ >"$0"; exec sleep 30' "$dir/job.$k" \
        >/dev/null 2>&1 &
    victim=$!
    await_file "$dir/job.$k" || echo "# h1 never started its job"
    kill -9 $victim
    wait $victim 2>/dev/null
    kill "$(cat "$dir/job.$k")" 2>/dev/null
    t "$k: h2 after h1 died" "$want" $tool -u "$u" -t 600 --host-name h2 \
        --once-per 1d "$@" "$k" -- true
}
for target in "7.0 redis://127.0.0.1:$port" \
    "2.2 unix://$dir/old-2.2.15.sock" "2.0 unix://$dir/old-2.0.5.sock"; do
    v=${target%% *}
    u=${target#* }
    want=3
    killed "$u" "died:$v"
    check "$v: without --retry-failed, h2 says h1's run died" \
        has "run of 'died:$v' on h1 (pid [0-9]*) died" "$err"
    t "$v: history says the run died" 0 $tool -u "$u" history "died:$v"
    check "$v: history: h1 died" eval 'grep -q " died .*h1 (pid" "$out"'
    want=0
    killed "$u" "retry:$v" --retry-failed
    check "$v: --retry-failed: h2 retried" has "retrying the failed run" "$err"
    t "$v: history: died, then ok" 0 $tool -u "$u" history "retry:$v"
    check "$v: history: h2 ok after h1 died" \
        eval 'sed -n 2p "$out" | grep -q " ok .*h2" &&
              sed -n 3p "$out" | grep -q " died .*h1"'
done

# ----------------------------------------------------- usage errors
t "--once-per 0: usage error" 64 $tool --once-per 0 k -- true
check "--once-per 0: says what it expects" \
    has "once-per expects a duration such as 1d" "$err"
t "--at-least 5x: usage error" 64 $tool --at-least 5x k -- true
t "--once-per with two KEYs: usage error" 64 $tool --once-per 1d a b -- true

finish

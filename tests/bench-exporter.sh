#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# bench-exporter.sh - what the exporter's legacy-write collection costs
# the server (make bench-exporter).  redis-benchmark's SET loop runs on a
# private redis-server in alternating rounds: alone (the baseline), with
# tslock exporter attached (MONITOR on all the time, --monitor-duty 100),
# with it at --monitor-duty 10, and with keyspace notifications on and one
# subscriber (the other way the exporter could have counted writes).
# Prints each mode's median SET/s and the server's CPU per SET (INFO
# cpu, which a loaded machine disturbs far less than the rate), each as a
# ratio to the baseline measured in the same run, and the exporter's own
# CPU.  Rounds: $ROUNDS (default
# 5), requests per round: $REQUESTS (default 100000), clients: $CLIENTS
# (default 8).  POSIX sh.
set -u

tool="${top_builddir:-.}/tools/tslock"
. "${top_srcdir:-.}/tests/harness.sh"
need_server
bench=$(command -v redis-benchmark) || { echo "no redis-benchmark"; exit 77; }
rounds=${ROUNDS:-5}
requests=${REQUESTS:-100000}
clients=${CLIENTS:-8}

dir=$(mktemp -d /tmp/tslock-bench-exporter.XXXXXX) || exit 1
rpid= epid= spid=
stop() {
    [ -n "$1" ] || return 0
    kill "$1" 2>/dev/null
    wait "$1" 2>/dev/null
}
cleanup() {
    stop "$epid"
    stop "$spid"
    stop "$rpid"
    rm -rf "$dir"
}
th_on_exit cleanup
trap 'exit 130' INT TERM

start_tcp_server 11 "$dir/redis.log" || { echo "no redis-server"; exit 1; }
rpid=$started
port=$started_port
eport=$((port + 1))

# The server's CPU seconds so far (user + system, all its threads).
server_cpu() {
    "$cli" -p "$port" info cpu | tr -d '\r' | awk -F: '
        /^used_cpu_(sys|user):/ { s += $2 } END { printf "%.6f", s }'
}

# One round of mode M: SET/s of the loop (keys lock:0..9999, stamp-like
# values) into $dir/M, the server's microseconds of CPU per SET into
# $dir/M.cpu.
set_rate() {
    c0=$(server_cpu)
    "$bench" -p "$port" -n "$requests" -c "$clients" -r 10000 -d 13 \
        -t set --csv 2>/dev/null \
        | sed -n 's/^"SET","\([0-9.]*\)".*/\1/p' >>"$dir/$1"
    echo "$(server_cpu) $c0 $requests" \
        | awk '{ printf "%.3f\n", ($1 - $2) * 1e6 / $3 }' >>"$dir/$1.cpu"
}

# The exporter up with its MONITOR stream attached (or not at 0).
exporter_on() {
    "$tool" -u "redis://127.0.0.1:$port" exporter \
        --listen "127.0.0.1:$eport" --monitor-duty "$1" --record-max 0 \
        >/dev/null 2>&1 &
    epid=$!
    n=0
    until "$cli" -p "$port" client list 2>/dev/null | grep -q 'cmd=monitor'; do
        n=$((n + 1))
        [ $n -gt 300 ] && break
        sleep 0.02
    done
}

notify_on() {
    "$cli" -p "$port" config set notify-keyspace-events 'K$' >/dev/null
    "$cli" -p "$port" psubscribe '__keyspace@0__:*' >/dev/null &
    spid=$!
    sleep 0.2
}

notify_off() {
    stop "$spid"
    spid=
    "$cli" -p "$port" config set notify-keyspace-events '' >/dev/null
}

median() {
    sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'
}

cpu_ticks() {
    awk '{ print $14 + $15 }' "/proc/$1/stat" 2>/dev/null || echo 0
}

echo "# SET loop: $requests requests, $clients clients, $rounds rounds;" \
    "load: $(cut -d' ' -f1-3 /proc/loadavg)"
r=0
while [ $r -lt "$rounds" ]; do
    r=$((r + 1))
    set_rate base
    exporter_on 100
    t0=$(cpu_ticks "$epid")
    set_rate monitor
    echo "$(($(cpu_ticks "$epid") - t0))" >>"$dir/cpu"
    stop "$epid"
    epid=
    # At 10 % duty, the round sees MONITOR on or off as the cycle falls;
    # the median over rounds is near the off rate, the mean shows the mix.
    exporter_on 10
    set_rate duty10
    stop "$epid"
    epid=
    notify_on
    set_rate notify
    notify_off
done

base=$(median <"$dir/base")
basecpu=$(median <"$dir/base.cpu")
printf '%-32s %9s SET/s %31s %7s us CPU/SET\n' "baseline (nothing attached)" \
    "$base" "" "$basecpu"
for m in monitor duty10 notify; do
    v=$(median <"$dir/$m")
    cpu=$(median <"$dir/$m.cpu")
    mean=$(awk '{ s += $1 } END { printf "%.0f", s / NR }' "$dir/$m")
    case $m in
    monitor) what="exporter, MONITOR 100%" ;;
    duty10) what="exporter, --monitor-duty 10" ;;
    notify) what="keyspace notifications + 1 sub" ;;
    esac
    printf '%-32s %9s SET/s ratio %.3f (mean %.3f) %7s us CPU/SET ratio %.3f\n' \
        "$what" "$v" "$(echo "$v $base" | awk '{ print $1 / $2 }')" \
        "$(echo "$mean $base" | awk '{ print $1 / $2 }')" "$cpu" \
        "$(echo "$cpu $basecpu" | awk '{ print $1 / $2 }')"
done
hz=$(getconf CLK_TCK)
echo "exporter CPU per MONITOR round (median): $(median <"$dir/cpu" \
    | awk -v hz="$hz" '{ printf "%.2f", $1 / hz }') s for $requests SETs"

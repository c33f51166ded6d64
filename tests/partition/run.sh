#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# run.sh - one run of the partition suite: five hosts in network
# namespaces (netns.sh), Redis and Sentinel on them, five clients taking
# one lock and doing a read-modify-write on a never-partitioned checker
# (hold.sh), one fault from the nemesis, then the checker's counts
# (check.awk) as one line:
#   config=C nemesis=N seed=S fault_ms=F grants=... failed=... codes=...
#
#   run.sh CONFIG NEMESIS SEED
# CONFIG: nolock (control: no lock at all), short (control: token with a
#   lease shorter than the hold, no fencing), token, replicas1 (token,
#   --replicas 1), fence (token, --fence, the resource checks the fence),
#   redlock (three independent masters, n1..n3).
# NEMESIS: none, isolate (the master n1 and the client on n4 cut off from
#   n2, n3, n5: the sentinels on n2 and n3 promote a replica), pause (the
#   master's redis-server stopped with SIGSTOP, then SIGCONT).
# SEED picks when the fault starts and how long it lasts (the workload's
#   own timing is not replayed; the schedule is).
#
# Needs root and ip netns; skips (77) without them.  Everything it makes
# is torn down on exit, on failure, on a signal and, through a watchdog,
# on a hang.  Environment: TSLOCK (the tool), PARTITION_LIMIT (seconds
# before the watchdog ends the run; default 120), PARTITION_SHORT (set:
# the short fixed schedule), PARTITION_KEEP (a directory: keep each run's
# events, client logs, sentinel logs and fault times there).
set -u
config=${1:?usage: run.sh CONFIG NEMESIS SEED}
nemesis=${2:?usage: run.sh CONFIG NEMESIS SEED}
seed=${3:?usage: run.sh CONFIG NEMESIS SEED}
here=$(cd "$(dirname "$0")" && pwd)
tool=${TSLOCK:-${top_builddir:-.}/tools/tslock}
case $tool in /*) ;; *) tool=$(pwd)/$tool ;; esac

skip() {
    echo "SKIP: $*" >&2
    exit 77
}
[ "$(id -u)" = 0 ] || skip "needs root (network namespaces)"
command -v ip >/dev/null 2>&1 || skip "no ip (install iproute2)"
command -v redis-server >/dev/null 2>&1 || skip "no redis-server"
command -v redis-cli >/dev/null 2>&1 || skip "no redis-cli"
[ -x "$tool" ] || {
    echo "no tool at $tool" >&2
    exit 1
}

# The schedule from the seed: 3-4 s of calm, a fault of 6-9 s, 6 s after.
set -- $(awk -v s="$seed" 'BEGIN { srand(s);
    printf "%d %d\n", 3000 + int(rand() * 1000), 6000 + int(rand() * 3000) }')
pre_ms=$1
fault_ms=$2
post_ms=6000
# The short form (short.sh): 2 s of calm, a 6 s fault, 3 s after.
if [ -n "${PARTITION_SHORT:-}" ]; then
    pre_ms=2000
    fault_ms=6000
    post_ms=3000
fi

P=tsp$$
STATE=$(mktemp -d /tmp/tslock-partition.XXXXXX) || exit 1
export STATE
. "$here/netns.sh"

watchdog=
cleanup() {
    trap - EXIT INT TERM HUP
    [ -n "$watchdog" ] && kill "$watchdog" 2>/dev/null
    net_down
    rm -rf "$STATE"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

# Namespaces left by an earlier run that was SIGKILLed (its pid is gone).
for old in $(ip netns list 2>/dev/null | awk '/^tsp[0-9]+(sw|n[0-9]|chk)/ {print $1}'); do
    pid=$(echo "$old" | sed 's/^tsp\([0-9]*\).*/\1/')
    if ! kill -0 "$pid" 2>/dev/null; then
        for p in $(ip netns pids "$old" 2>/dev/null); do kill -KILL "$p"; done
        ip netns del "$old" 2>/dev/null
    fi
done

# A hang ends the run: the watchdog signals this shell, whose trap tears
# everything down.
(
    trap 'kill "$nap" 2>/dev/null; exit 0' TERM
    sleep "${PARTITION_LIMIT:-120}" &
    nap=$!
    wait "$nap" || exit 0
    echo "run.sh: watchdog: no end after ${PARTITION_LIMIT:-120} s" >&2
    kill -TERM $$
) &
watchdog=$!

ip netns add "${P}probe" 2>/dev/null || skip "ip netns add failed (no CAP_SYS_ADMIN?)"
ip netns del "${P}probe"
net_up || {
    echo "run.sh: could not build the hosts" >&2
    exit 1
}

# redis HOST ADDR [ARGS...]: a redis-server on ADDR:6379 in HOST.
redis() {
    h=$1
    a=$2
    shift 2
    mkdir -p "$STATE/$h"
    in_host "$h" redis-server --bind "$a" --port 6379 --save '' \
        --appendonly no --protected-mode no --dir "$STATE/$h" \
        --daemonize yes --pidfile "$STATE/$h/redis.pid" \
        --logfile "$STATE/$h/redis.log" "$@" || return 1
}

# sentinel HOST ADDR: a Sentinel on ADDR:26379 watching n1 as "m".
sentinel() {
    cat >"$STATE/$1/sentinel.conf" <<EOF
bind $2
port 26379
daemonize yes
pidfile $STATE/$1/sentinel.pid
logfile $STATE/$1/sentinel.log
dir $STATE/$1
sentinel monitor m 10.44.0.1 6379 2
sentinel down-after-milliseconds m 1000
sentinel failover-timeout m 4000
sentinel parallel-syncs m 2
EOF
    in_host "$1" redis-server "$STATE/$1/sentinel.conf" --sentinel
}

# until_true SECONDS CMD...: poll CMD every 0.1 s.
until_true() {
    n=$(($1 * 10))
    shift
    while [ "$n" -gt 0 ]; do
        "$@" && return 0
        sleep 0.1
        n=$((n - 1))
    done
    return 1
}
pong() { [ "$(in_host "$1" redis-cli -h "$2" -p "${3:-6379}" PING 2>/dev/null)" = PONG ]; }
sentinel_ready() {
    for i in 1 2 3; do
        in_host "n$i" redis-cli -h "10.44.0.$i" -p 26379 SENTINEL master m \
            2>/dev/null | tr '\n' ' ' |
            grep -q 'num-slaves 2 .*num-other-sentinels 2 ' || return 1
    done
}

redis chk 10.45.0.100 || exit 1
until_true 10 pong chk 10.45.0.100 || exit 1

sentinels="10.44.0.1:26379,10.44.0.2:26379,10.44.0.3:26379"
common="$tool -q --timeout 300 -w 2000 -t 2000 -m token"
case $config in
redlock)
    for i in 1 2 3; do redis "n$i" "10.44.0.$i" || exit 1; done
    for i in 1 2 3; do until_true 10 pong "n$i" "10.44.0.$i" || exit 1; done
    LOCK="$tool -q --timeout 300 -w 2000 -t 2000 -u redis://10.44.0.1
          -u redis://10.44.0.2 -u redis://10.44.0.3"
    ;;
nolock | short | token | replicas1 | fence)
    redis n1 10.44.0.1 || exit 1
    for i in 2 3; do
        redis "n$i" "10.44.0.$i" --replicaof 10.44.0.1 6379 || exit 1
    done
    for i in 1 2 3; do until_true 10 pong "n$i" "10.44.0.$i" || exit 1; done
    for i in 1 2 3; do sentinel "n$i" "10.44.0.$i" || exit 1; done
    until_true 30 sentinel_ready || {
        echo "run.sh: the sentinels did not find each other" >&2
        exit 1
    }
    url="redis+sentinel://$sentinels/m"
    case $config in
    nolock) LOCK= ;;
    short) LOCK="$tool -q --timeout 300 -w 2000 -t 20 -m token -u $url" ;;
    token) LOCK="$common -u $url" ;;
    replicas1) LOCK="$common --replicas 1 --replicas-timeout 300 -u $url" ;;
    fence) LOCK="$common --fence -u $url" ;;
    esac
    ;;
*)
    echo "run.sh: unknown config $config" >&2
    exit 64
    ;;
esac

FENCED=0
[ "$config" = fence ] && FENCED=1
CHK=10.45.0.100
HOLD_S=0.05
[ "$config" = short ] && HOLD_S=0.1
export LOCK FENCED CHK HOLD_S
for i in 1 2 3 4 5; do
    in_host "n$i" sh "$here/worker.sh" "c$i" "$STATE/c$i.log" &
    echo $! >>"$STATE/workers"
done

ms() { sleep "$(awk -v m="$1" 'BEGIN { printf "%.3f", m / 1000 }')"; }
ms "$pre_ms"
master_pid=$(cat "$STATE/n1/redis.pid")
fault_at=$(date +%s%6N)
case $nemesis in
none) ;;
isolate) cut 1 4 ;;
pause) kill -STOP "$master_pid" ;;
*)
    echo "run.sh: unknown nemesis $nemesis" >&2
    exit 64
    ;;
esac
ms "$fault_ms"
case $nemesis in
isolate) heal ;;
pause) kill -CONT "$master_pid" ;;
esac
healed_at=$(date +%s%6N)
ms "$post_ms"
touch "$STATE/stop"
for p in $(cat "$STATE/workers"); do wait "$p"; done

ask() { in_host chk redis-cli -h 10.45.0.100 --raw "$@"; }
counter=$(ask GET counter)
ask LRANGE events 0 -1 >"$STATE/events"
counts=$(awk -v counter="${counter:-0}" -v fault_at="$fault_at" \
    -v healed_at="$healed_at" -f "$here/check.awk" "$STATE/events")
failed=$(cat "$STATE"/c?.log | awk '$2 != 0' | wc -l)
codes=$(cat "$STATE"/c?.log | awk '$2 != 0 { n[$2]++ }
    END { s = ""; for (c in n) s = s (s == "" ? "" : ",") c ":" n[c];
          print s == "" ? "-" : s }')
echo "config=$config nemesis=$nemesis seed=$seed fault_ms=$fault_ms" \
    "$counts failed=$failed codes=$codes"
if [ -n "${PARTITION_KEEP:-}" ]; then
    mkdir -p "$PARTITION_KEEP"
    cp "$STATE/events" "$PARTITION_KEEP/$config-$nemesis-$seed.events"
    cat "$STATE"/c?.log.err >"$PARTITION_KEEP/$config-$nemesis-$seed.err" 2>/dev/null
    for h in n1 n2 n3; do
        cat "$STATE/$h/sentinel.log" 2>/dev/null | sed "s/^/$h /"
    done >"$PARTITION_KEEP/$config-$nemesis-$seed.sentinel"
    for i in 1 2 3 4 5; do sed "s/\$/ c$i/" "$STATE/c$i.log"; done |
        sort -n >"$PARTITION_KEEP/$config-$nemesis-$seed.attempts"
    echo "$fault_at $healed_at" >"$PARTITION_KEEP/$config-$nemesis-$seed.fault"
fi

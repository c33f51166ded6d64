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
#   lease shorter than the hold, no fencing), nocad (control of the
#   history checker: SET NX PX with a lease shorter than the hold and a
#   DEL that compares nothing, worker.sh), token, replicas1 (token,
#   --replicas 1), replicas2 (--replicas 2), fence (token, --fence, the
#   resource checks the fence), timestamp, bridge (those schemes, plain),
#   redlock (three independent masters, n1..n3).
# NEMESIS: none, isolate (the master n1 and the client on n4 cut off from
#   n2, n3, n5: the sentinels on n2 and n3 promote a replica), halves
#   ({n1,n2} against {n3,n4,n5}: the master keeps a replica and two of
#   the three sentinels), bridge (n4, n5 cut from n1, n2; n3 sees both
#   sides through a second port), pause (the master's redis-server stopped with
#   SIGSTOP, then SIGCONT), clock (the clients on n1 and n4 run with their
#   wall clock jumped ahead by the seed's amount, libfaketime; no cut).
# SEED picks when the fault starts, how long it lasts and the clock
#   jump (the workload's own timing is not replayed; the schedule is).
#
# Needs root and ip netns; skips (77) without them.  Everything it makes
# is torn down on exit, on failure, on a signal and, through a watchdog,
# on a hang.  Environment: TSLOCK (the tool), PARTITION_LIMIT (seconds
# before the watchdog ends the run; default 120), PARTITION_SHORT (set:
# the short fixed schedule), PARTITION_UNTIL (the fault lasts past its
# length until this holds, at most PARTITION_CAP_MS, default 30000:
# "lost", an update lost; "broken", a double grant during the fault and a
# fence of a later failover epoch), PARTITION_KEEP (a directory: keep each
# run's events, client logs and histories, sentinel logs and fault times).
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

# The schedule from the seed: 3-4 s of calm, a fault of 6-9 s, 6 s
# after; a clock jump of 2-12 s.
set -- $(awk -v s="$seed" 'BEGIN { srand(s);
    printf "%d %d %d\n", 3000 + int(rand() * 1000), 6000 + int(rand() * 3000),
        2 + int(rand() * 11) }')
pre_ms=$1
fault_ms=$2
jump_s=$3
post_ms=6000
# The short form (short.sh): 2 s of calm, a fault of at least 3 s (and
# until PARTITION_UNTIL holds), 2 s after.
if [ -n "${PARTITION_SHORT:-}" ]; then
    pre_ms=2000
    fault_ms=3000
    post_ms=2000
fi
cap_ms=${PARTITION_CAP_MS:-30000}
case $nemesis in
clock)
    command -v faketime >/dev/null 2>&1 || skip "no faketime (install faketime)"
    ;;
esac

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
# A namespace that can be made but not wired (no veth or bridge in this
# kernel, no CAP_NET_ADMIN inside it) is an environment without hosts.
net_up 2>"$STATE/net_up.err" || skip "could not build the hosts (veth" \
    "pairs and bridges): $(tail -1 "$STATE/net_up.err")"

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
nolock | short | nocad | token | replicas1 | replicas2 | fence | timestamp | bridge)
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
    nocad) LOCK=nocad ;;
    short) LOCK="$tool -q --timeout 300 -w 2000 -t 20 -m token -u $url" ;;
    token) LOCK="$common -u $url" ;;
    replicas1) LOCK="$common --replicas 1 --replicas-timeout 300 -u $url" ;;
    replicas2) LOCK="$common --replicas 2 --replicas-timeout 300 -u $url" ;;
    fence) LOCK="$common --fence -u $url" ;;
    timestamp | bridge)
        LOCK="$tool -q --timeout 300 -w 2000 -t 2000 -m $config -u $url" ;;
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
[ "$config" = nocad ] && HOLD_S=0.1
NOCAD_MASTER=10.44.0.1
NOCAD_TTL_MS=20
export LOCK FENCED CHK HOLD_S NOCAD_MASTER NOCAD_TTL_MS
for i in 1 2 3 4 5; do
    if [ "$nemesis" = clock ] && { [ "$i" = 1 ] || [ "$i" = 4 ]; }; then
        # The clock nemesis: these clients' wall clock runs jump_s ahead
        # from the fault on (the monotonic clock is left alone, as a
        # stepped NTP clock leaves it).  worker.sh waits for the fault.
        in_host "n$i" env CLOCK_JUMP_S="$jump_s" sh "$here/worker.sh" \
            "c$i" "$STATE/c$i.log" &
    else
        in_host "n$i" sh "$here/worker.sh" "c$i" "$STATE/c$i.log" &
    fi
    echo $! >>"$STATE/workers"
done

ask() { in_host chk redis-cli -h 10.45.0.100 --raw "$@"; }
# until_met: whether PARTITION_UNTIL holds now (see the top).
until_met() {
    case ${PARTITION_UNTIL:-} in
    lost)
        # Atomic on the checker: accepted writes minus the counter.
        [ "$(ask EVAL "local n = 0 for _, e in ipairs(redis.call('LRANGE',
            'events', 0, -1)) do if string.find(e, ' write%-ok ') then
            n = n + 1 end end return n - tonumber(redis.call('GET',
            'counter') or '0')" 0)" -gt 0 ] 2>/dev/null
        ;;
    broken)
        ask LRANGE events 0 -1 | awk -v counter=0 -v fault_at="$fault_at" \
            -v healed_at=9999999999999999 -f "$here/check.awk" |
            grep -q 'double=[0-9]*([0-9]*/[1-9].* newepoch=[1-9]'
        ;;
    *) return 0 ;;
    esac
}

ms() { sleep "$(awk -v m="$1" 'BEGIN { printf "%.3f", m / 1000 }')"; }
ms "$pre_ms"
master_pid=$(cat "$STATE/n1/redis.pid")
fault_at=$(date +%s%6N)
case $nemesis in
none) ;;
isolate) cut 1 4 ;;
halves) cut 1 2 ;;
bridge) cut 4 5 && bridge_up 3 4 5 ;;
pause) kill -STOP "$master_pid" ;;
clock) touch "$STATE/jump" ;;
*)
    echo "run.sh: unknown nemesis $nemesis" >&2
    exit 64
    ;;
esac
ms "$fault_ms"
# Past its length, the fault lasts until PARTITION_UNTIL holds, or the cap.
until=-
if [ -n "${PARTITION_UNTIL:-}" ]; then
    until=cap
    left=$(((cap_ms - fault_ms) / 200))
    while [ "$left" -gt 0 ]; do
        if until_met; then
            until=met
            break
        fi
        sleep 0.2
        left=$((left - 1))
    done
fi
case $nemesis in
isolate | halves) heal ;;
bridge)
    bridge_down 3
    heal
    ;;
pause) kill -CONT "$master_pid" ;;
clock) rm -f "$STATE/jump" ;;
esac
healed_at=$(date +%s%6N)
fault_ms=$(((healed_at - fault_at) / 1000))
ms "$post_ms"
touch "$STATE/stop"
for p in $(cat "$STATE/workers"); do wait "$p"; done

counter=$(ask GET counter)
ask LRANGE events 0 -1 >"$STATE/events"
counts=$(awk -v counter="${counter:-0}" -v fault_at="$fault_at" \
    -v healed_at="$healed_at" -f "$here/check.awk" "$STATE/events")
failed=$(cat "$STATE"/c?.log | awk '$2 != 0' | wc -l)
codes=$(cat "$STATE"/c?.log | awk '$2 != 0 { n[$2]++ }
    END { s = ""; for (c in n) s = s (s == "" ? "" : ",") c ":" n[c];
          print s == "" ? "-" : s }')
for i in 1 2 3 4 5; do
    sed "s/\$/ c$i/" "$STATE/c$i.log.hist" 2>/dev/null
done >"$STATE/history"
hist=$(awk -f "$here/history.awk" "$STATE/history")
echo "config=$config nemesis=$nemesis seed=$seed fault_ms=$fault_ms" \
    "until=$until $counts failed=$failed codes=$codes $hist"
if [ -n "${PARTITION_KEEP:-}" ]; then
    mkdir -p "$PARTITION_KEEP"
    cp "$STATE/events" "$PARTITION_KEEP/$config-$nemesis-$seed.events"
    cat "$STATE"/c?.log.err >"$PARTITION_KEEP/$config-$nemesis-$seed.err" 2>/dev/null
    for h in n1 n2 n3; do
        cat "$STATE/$h/sentinel.log" 2>/dev/null | sed "s/^/$h /"
    done >"$PARTITION_KEEP/$config-$nemesis-$seed.sentinel"
    for i in 1 2 3 4 5; do sed "s/\$/ c$i/" "$STATE/c$i.log"; done |
        sort -n >"$PARTITION_KEEP/$config-$nemesis-$seed.attempts"
    cp "$STATE/history" "$PARTITION_KEEP/$config-$nemesis-$seed.history"
    echo "$fault_at $healed_at" >"$PARTITION_KEEP/$config-$nemesis-$seed.fault"
fi

# SPDX-License-Identifier: BSD-3-Clause
# netns.sh - the hosts of the partition suite, sourced by run.sh: network
# namespaces made here, two networks between them, the nemesis's cuts,
# and a teardown that kills what ran inside and deletes every namespace.
#
# Layout (all names carry the prefix $P, unique to this run):
#   ${P}sw       the test's own switch namespace: bridges brA and brB (the
#                data network, split in two by the nemesis) and brC (the
#                checker network, never cut).  No host has a route out:
#                no default route, no address outside 10.44/16, 10.45/16.
#   ${P}n1..n5   the hosts: eth0 10.44.0.N on the data network (Redis,
#                Sentinel, lock traffic), eth1 10.45.0.N on the checker
#                network (only the checker's writes).
#   ${P}chk      the checker's Redis, 10.45.0.100, on brC only.
# A partition moves hosts' switch ports from brA to brB: frames stop,
# with no RST, as when a real link is cut; heal moves them back.

NHOSTS=5

ns() { echo "${P}$1"; }

# in HOST CMD...: CMD inside host HOST's namespace.
in_host() {
    h=$1
    shift
    ip netns exec "$(ns "$h")" "$@"
}

# net_up: the switch, the hosts, the checker host.  Fails (non-zero)
# when a namespace or a link cannot be made.
net_up() {
    sw=$(ns sw)
    ip netns add "$sw" || return 1
    echo "$sw" >>"$STATE/namespaces"
    ip -n "$sw" link set lo up || return 1
    for br in brA brB brC; do
        ip -n "$sw" link add "$br" type bridge || return 1
        ip -n "$sw" link set "$br" up || return 1
    done
    i=1
    while [ "$i" -le "$NHOSTS" ]; do
        host_up "n$i" "$i" || return 1
        i=$((i + 1))
    done
    host_up chk 100 checker-only || return 1
}

# host_up NAME N [checker-only]: a namespace with eth0 (data, on brA)
# and eth1 (checker, on brC), lo up, no default route.
host_up() {
    h=$(ns "$1")
    ip netns add "$h" || return 1
    echo "$h" >>"$STATE/namespaces"
    ip -n "$h" link set lo up || return 1
    if [ $# -lt 3 ]; then
        link_up "$h" eth0 "d$2" brA "10.44.0.$2/24" || return 1
    fi
    link_up "$h" eth1 "c$2" brC "10.45.0.$2/24" || return 1
}

# link_up NS IFNAME PORT BRIDGE ADDR: a veth pair made in the switch
# namespace (nothing is ever made in the namespace this script runs in),
# IFNAME moved into NS, PORT (its peer) a port of BRIDGE.
link_up() {
    ip -n "$sw" link add "$3" type veth peer name "$2" netns "$1" || return 1
    ip -n "$sw" link set "$3" master "$4" || return 1
    ip -n "$sw" link set "$3" up || return 1
    ip -n "$1" addr add "$5" dev "$2" || return 1
    ip -n "$1" link set "$2" up
}

# cut N...: hosts N... on the other side (brB) from the rest (brA).
cut() {
    for i in "$@"; do
        ip -n "$(ns sw)" link set "d$i" master brB
    done
}

# bridge_up N: host N sees both sides: a second data port (eth2, b<N>) on
# brB with its address as a /32, and host routes to the hosts on brB
# (HOSTS...) through it.  bridge_down N removes the port and the routes.
bridge_up() {
    b=$1
    shift
    link_up "$(ns "n$b")" eth2 "b$b" brB "10.44.0.$b/32" || return 1
    for i in "$@"; do
        ip -n "$(ns "n$b")" route add "10.44.0.$i/32" dev eth2 || return 1
    done
}
bridge_down() {
    ip -n "$(ns sw)" link del "b$1" 2>/dev/null
}

# heal: every data port back on brA.
heal() {
    i=1
    while [ "$i" -le "$NHOSTS" ]; do
        ip -n "$(ns sw)" link set "d$i" master brA
        i=$((i + 1))
    done
}

# net_down: kill every process still inside our namespaces (they are
# ours: nothing else runs in a namespace this run made), then delete the
# namespaces (which deletes their veths).  Safe to call twice.
net_down() {
    [ -f "$STATE/namespaces" ] || return 0
    for h in $(cat "$STATE/namespaces"); do
        for p in $(ip netns pids "$h" 2>/dev/null); do
            kill -CONT "$p" 2>/dev/null
            kill -KILL "$p" 2>/dev/null
        done
    done
    for h in $(cat "$STATE/namespaces"); do
        ip netns del "$h" 2>/dev/null
    done
    rm -f "$STATE/namespaces"
}

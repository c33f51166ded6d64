#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# table.sh - every configuration under every nemesis (run.sh, one run
# each, one after another), printed as a Markdown table with the
# machine, the commit and the seed.  Fails (1) when a control shows no
# violation under a fault (nolock and short by the resource's checker,
# nocad by the client-history checker), since then the checker proves
# nothing; skips (77) as run.sh does.
#
#   table.sh [SEED]
# Environment: CONFIGS, NEMESES (word lists replacing the defaults), and
# what run.sh reads.
set -u
seed=${1:-1}
here=$(cd "$(dirname "$0")" && pwd)
configs=${CONFIGS:-nolock short nocad token replicas1 replicas2 fence timestamp bridge redlock}
nemeses=${NEMESES:-none isolate halves bridge pause clock}
out=$(mktemp /tmp/tslock-partition-table.XXXXXX) || exit 1
trap 'rm -f "$out"' EXIT
trap 'exit 130' INT TERM HUP

for c in $configs; do
    for n in $nemeses; do
        line=$(sh "$here/run.sh" "$c" "$n" "$seed")
        rc=$?
        [ "$rc" = 77 ] && exit 77
        if [ "$rc" != 0 ] || [ -z "$line" ]; then
            echo "table.sh: run.sh $c $n $seed failed ($rc)" >&2
            exit 1
        fi
        echo "$line" | tee -a "$out" >&2
    done
done

commit=$(cd "$here" && git rev-parse --short HEAD 2>/dev/null || echo unknown)
echo "Seed $seed, commit $commit, $(uname -srm), $(nproc) cores," \
    "$(redis-server --version | sed 's/ sha=.*//')."
echo
awk '
function v(k,   i, a) {
    for (i = 1; i <= NF; i++) {
        split($i, a, "=")
        if (a[1] == k) return substr($i, length(k) + 2)
    }
    return "?"
}
BEGIN {
    print "| configuration | nemesis | fault ms | grants | double grants (before/during/after) | lost updates | refused by fence | fences handed out twice | mutex violations (excused by a loss report) | failed attempts (exit codes) | longest without a holder (ms) |"
    print "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
}
{
    printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s (%s) | %s (%s) | %s |\n",
        v("config"), v("nemesis"), v("nemesis") == "none" ? "-" : v("fault_ms"),
        v("grants"), v("double"), v("lost"), v("refused"), v("dupfence"),
        v("hist_violations"), v("hist_excused"), v("failed"), v("codes"),
        v("gap_ms")
}' "$out"

# The controls must fail somewhere, or the checker is blind.
bad=0
for c in nolock short; do
    case " $configs " in *" $c "*) ;; *) continue ;; esac
    if ! grep "config=$c " "$out" | grep -v 'nemesis=none' |
        grep -qv 'double=0(' ; then
        echo "table.sh: control $c shows no double grant: the checker is blind" >&2
        bad=1
    fi
done
case " $configs " in
*" nocad "*)
    if ! grep "config=nocad " "$out" | grep -qv 'hist_violations=0 '; then
        echo "table.sh: control nocad breaks no mutex in the history:" \
            "the history checker is blind" >&2
        bad=1
    fi
    ;;
esac
exit $bad

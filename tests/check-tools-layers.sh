#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# check-tools-layers.sh - the folders of tools/ call as tools/README.md
# says: tslock.c calls any folder; run/, ops/ and class/ call plumb/ and
# common/ but never each other; plumb/ calls common/; common/ calls only
# the library.  And no files call each other in a circle.  The calls are
# read from the tool's built objects (nm), as check-layers.sh reads the
# library's.  Each breach is printed as
#   FAIL tools/ops/top.c calls cli_run of tools/run/run.c (ops/ may call: plumb common)
#   FAIL circle: tools/a.c -> tools/b.c -> tools/a.c
# The same check then runs with a sibling call, an upward call and a
# circle planted among the edges, and must report each.
set -u
src=$(cd "${top_srcdir:-.}" && pwd)
build=$(cd "${top_builddir:-.}" && pwd)
NM=${NM:-nm}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tslock-toolslayers.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT INT TERM

# Each object of the tool whose source is in the tree: "FILE SYMBOL" for
# what it defines and what it uses.
: >"$tmp/def"
: >"$tmp/use"
n=0
for o in $(cd "$build" && find tools -name 'tslock-*.o' | sort); do
    base=${o##*/tslock-}
    s=${o%/*}/${base%.o}.c
    [ -f "$src/$s" ] || continue # an object left from a file since moved
    n=$((n + 1))
    $NM --defined-only "$build/$o" | awk -v f="$s" '$2 ~ /[TDBR]/ { print f, $3 }' >>"$tmp/def"
    $NM -u "$build/$o" | awk -v f="$s" '{ print f, $2 }' >>"$tmp/use"
done
[ "$n" -gt 10 ] || { echo "FAIL - only $n objects of tools/ found in $build"; exit 1; }
awk 'NR == FNR { d[$2] = $1; next }
     ($2 in d) && d[$2] != $1 { print $1, $2, d[$2] }' \
    "$tmp/def" "$tmp/use" | sort -u >"$tmp/edges"

# judge EDGES: every breach of the folder rule, and every circle.
judge() {
    awk '
    function folder(f) { return split(f, p, "/") == 2 ? "main" : p[2] }
    BEGIN {
        rank["main"] = 4; rank["run"] = 3; rank["ops"] = 3
        rank["class"] = 3; rank["plumb"] = 2; rank["common"] = 1
        may["main"] = "run ops class plumb common"
        may["run"] = may["ops"] = may["class"] = "plumb common"
        may["plumb"] = "common"; may["common"] = "(only the library)"
    }
    {
        a = folder($1); b = folder($3)
        if (!(a in rank) || !(b in rank)) {
            printf "FAIL %s or %s is in no folder tools/README.md names\n", $1, $3
            bad = 1
        } else if (a != b && !(rank[a] > rank[b] && !(rank[a] == 3 && rank[b] == 3))) {
            printf "FAIL %s calls %s of %s (%s/ may call: %s)\n", $1, $2, $3, a, may[a]
            bad = 1
        }
        if (!(($1, $3) in e)) { e[$1, $3] = 1; out[$1] = out[$1] " " $3 }
        node[$1] = node[$3] = 1
    }
    function dfs(v,    i, k, w, list) {
        state[v] = 1; stack[++sp] = v
        k = split(out[v], list, " ")
        for (i = 1; i <= k; i++) {
            w = list[i]
            if (state[w] == 1) {
                c = w
                for (j = sp; j >= 1 && stack[j] != w; j--) c = stack[j] " -> " c
                printf "FAIL circle: %s -> %s\n", w, substr(c, length(w) + 5)
                bad = 1
            } else if (state[w] == 0) dfs(w)
        }
        sp--; state[v] = 2
    }
    END {
        for (v in node) if (state[v] == 0) dfs(v)
        exit bad
    }' "$1"
}

status=0
judge "$tmp/edges" || status=1
edges=$(wc -l <"$tmp/edges")

# The controls: each planted edge must be reported.
plant() { # WHAT EDGE
    { cat "$tmp/edges"; echo "$2"; } >"$tmp/planted"
    if judge "$tmp/planted" >"$tmp/said"; then
        echo "FAIL - the control: $1 ($2) passed"
        status=1
    elif ! grep -q "$3" "$tmp/said"; then
        echo "FAIL - the control: $1 was not named as such:"
        cat "$tmp/said"
        status=1
    fi
}
plant "a sibling call" "tools/ops/top.c cli_planted tools/run/run.c" "calls cli_planted"
plant "an upward call" "tools/common/session.c cli_planted tools/plumb/rawconn.c" "calls cli_planted"
plant "a circle" "tools/common/signals.c cli_planted tools/common/session.c" "circle:"
[ $status -eq 0 ] && echo "tools/: $n objects, $edges calls between files, each as" \
    "tools/README.md allows, no circle; the planted sibling call, upward" \
    "call and circle are each reported"
exit $status

#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# check-layers.sh - the library's layers call only down (doc/layers.md):
#
#   lib/  >  compat/  >  proto/  >  net/  >  include/
#
# A file may include a header of its own layer or of a layer below it,
# and a layer's objects may use only symbols defined in their own layer
# or below; no files of the library may call each other in a circle,
# however far round, except the circles listed in known_circles below.  The includes are read from the sources; the calls from the
# built objects (nm), so a comment or a string never counts and a call
# hidden in a macro does.  Every breach is printed as
#   FAIL net/wire.c includes lib/tslock_int.h (net/ may use: net include)
# and every circle as
#   FAIL circle of 2 files (net/a.c net/b.c): net/a.c -> net/b.c (sym) -> ...
# and the exit status is 1.
#
# Usage: check-layers.sh [SRCDIR [BUILDDIR]]   (default: top_srcdir and
# top_builddir, as make check sets them).  tests/check-layers-proof.sh
# runs it on a copy with an upward include, an upward call and a circle
# planted.
set -u
src=${1:-${top_srcdir:-.}}
build=${2:-${top_builddir:-.}}
layers="lib compat proto net include"
NM=${NM:-nm}

# The ranks, for awk: lib=5 compat=4 proto=3 net=2 include=1.  What a
# layer may use: itself and every layer below it.  Each step below is one
# awk over everything, not a process per include or per symbol.
ranks="lib=5 compat=4 proto=3 net=2 include=1"
awk_layers='
BEGIN {
    n = split(ranks, kv, " ")
    for (i = 1; i <= n; i++) {
        split(kv[i], p, "=")
        rank[p[1]] = p[2]
        order[i] = p[1]
    }
    for (i = 1; i <= n; i++) {
        a = ""
        for (j = i; j <= n; j++)
            a = a (a == "" ? "" : " ") order[j]
        allowed[order[i]] = a
    }
}'

status=0
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT

# ---- includes: #include "name" resolved to the layer holding name (the
# first layer, top down, with a file of that name).
for l in $layers; do
    for f in "$src/$l"/*; do
        [ -f "$f" ] && echo "F $l ${f##*/}"
    done
done >"$tmp/files"
for l in $layers; do
    set --
    for f in "$src/$l"/*.c "$src/$l"/*.h; do
        [ -f "$f" ] && set -- "$@" "$f"
    done
    [ $# -eq 0 ] && continue
    awk -v l="$l" '/^[ \t]*#[ \t]*include[ \t]*"[^"]*"/ {
        h = $0
        sub(/^[^"]*"/, "", h)
        sub(/".*/, "", h)
        f = FILENAME
        sub(/.*\//, "", f)
        print "I", l, f, h
    }' "$@"
done >"$tmp/includes"
awk -v ranks="$ranks" "$awk_layers"'
$1 == "F" { if (!($3 in home)) home[$3] = $2; next }
{
    base = $4
    sub(/.*\//, "", base)
    if (!(base in home)) next
    m = home[base]
    if (rank[m] > rank[$2])
        printf "FAIL %s/%s includes %s/%s (%s/ may use: %s)\n", $2, $3, m, base, $2, allowed[$2]
}' "$tmp/files" "$tmp/includes" >"$tmp/inc"
if [ -s "$tmp/inc" ]; then
    cat "$tmp/inc"
    status=1
fi

# ---- calls: each layer's objects (libtool's, <library>_la-<file>.o).
# An object whose source is gone from the layer (a file moved away, its
# old object left in the build tree) is not the library's any more.
objects() {
    for o in $(find "$build/$1" -name '*_la-*.o' 2>/dev/null | sort); do
        file=${o##*/}
        file=${file#*_la-}
        [ -f "$src/$1/${file%.o}.c" ] && echo "$o"
    done
}
n=0
# D symbol layer file: a global symbol a library object defines;
# U symbol layer file: one it uses.
for l in lib compat proto net; do
    set -- $(objects "$l") # one word per object path
    [ $# -eq 0 ] && continue
    n=$((n + $#))
    # nm -A: each line starts "OBJECT: ", the object named even when alone.
    $NM -A -P "$@" | awk -v l="$l" '{
        f = $1
        sub(/:$/, "", f)
        sub(/.*\//, "", f)
        f = substr(f, index(f, "_la-") + 4)
        sub(/\.o$/, ".c", f)
    }
    $3 ~ /^[TDBRGSCVW]$/ { print "D", $2, l, f }
    $3 == "U" { print "U", $2, l, f }'
done >"$tmp/syms"
if [ "$n" -eq 0 ]; then
    echo "no library objects under $build/{lib,compat,proto,net}: build first"
    exit 99
fi
# The definitions first (sorted: the first of a symbol names it), then
# the uses; a symbol no layer defines (hiredis, libc) is below them all.
{
    grep '^D ' "$tmp/syms" | sort -u
    grep '^U ' "$tmp/syms" | sort -u
} | awk -v ranks="$ranks" "$awk_layers"'
$1 == "D" { if (!($2 in def)) { def[$2] = $3; deffile[$2] = $4 } next }
($2 in def) && rank[def[$2]] > rank[$3] {
    printf "FAIL %s/%s calls %s of %s/%s (%s/ may use: %s)\n", $3, $4, $2, def[$2], deffile[$2], $3, allowed[$3]
}' | sort -u >"$tmp/calls"
if [ -s "$tmp/calls" ]; then
    cat "$tmp/calls"
    status=1
fi

# The circles the library had when this check began to look for them,
# each its files by name, circles apart by ";".  Each is printed as
# KNOWN, and passes while it stays as it is; any other circle, or one of
# these grown by a file, fails.  Take a circle out of the list when it is
# gone (doc/layers.md).
# The last two (lib/bridge.c, lib/lock.c, lib/timestamp.c; lib/rwlock.c,
# lib/shared.c) went when the takeover count and the server's clock moved
# down into net/ (stats.c, client.c).
known_circles=""

# ---- circles: files of the library that call each other, however far
# round (a calls b, b calls c, c calls a), even inside one layer.  Each
# circle is printed once, from its first file by name, as
#   FAIL circle: net/a.c -> net/b.c (sym) -> net/a.c (sym)
# naming a symbol that ties each step.
{
    grep '^D ' "$tmp/syms" | sort -u
    grep '^U ' "$tmp/syms" | sort -u
} | awk -v known="$known_circles" '
$1 == "D" { if (!($2 in def)) def[$2] = $3 "/" $4; next }
($2 in def) {
    from = $3 "/" $4
    to = def[$2]
    if (from == to || ((from, to) in edge)) next
    edge[from, to] = $2
    adj[from] = adj[from] " " to
    node[from] = 1
    node[to] = 1
}
END {
    for (s in node) {
        split("", seen)
        q[1] = s; h = 1; t = 1
        while (h <= t) {
            u = q[h++]
            n = split(adj[u], a, " ")
            for (i = 1; i <= n; i++)
                if (!(a[i] in seen)) { seen[a[i]] = 1; q[++t] = a[i] }
        }
        for (v in seen) reach[s, v] = 1
    }
    for (s in node) {
        if (!((s, s) in reach)) continue
        first = 1 # s is its circle'"'"'s first file by name
        m = 0
        split("", member)
        for (v in node)
            if (((s, v) in reach) && ((v, s) in reach)) {
                if (v < s) first = 0
                member[++m] = v
            }
        if (!first) continue
        for (i = 2; i <= m; i++) # its files by name, insertion sort
            for (j = i; j > 1 && member[j] < member[j - 1]; j--) {
                v = member[j]; member[j] = member[j - 1]; member[j - 1] = v
            }
        files = member[1]
        for (i = 2; i <= m; i++)
            files = files " " member[i]
        # The shortest way round from s, breadth first within the circle.
        split("", par)
        q[1] = s; h = 1; t = 1; found = 0
        while (h <= t && !found) {
            u = q[h++]
            n = split(adj[u], a, " ")
            for (i = 1; i <= n; i++) {
                v = a[i]
                if (!((v, s) in reach) || (v in par)) continue
                par[v] = u
                if (v == s) { found = 1; break }
                q[++t] = v
            }
        }
        path = ""
        v = s
        do {
            u = par[v]
            path = " -> " v " (" edge[u, v] ")" path
            v = u
        } while (v != s)
        print (index(";" known ";", ";" files ";") ? "KNOWN" : "FAIL") \
            " circle of " m " files (" files "): " s path
    }
}' | sort >"$tmp/circles"
grep '^KNOWN ' "$tmp/circles"
if grep -q '^FAIL ' "$tmp/circles"; then
    grep '^FAIL ' "$tmp/circles"
    status=1
fi
[ "$status" -eq 0 ] &&
    echo "layers: no upward include or call, no new circle ($(grep -c '^KNOWN ' "$tmp/circles") known), in $n objects"
exit $status

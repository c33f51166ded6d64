#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# check-layers.sh - the library's layers call only down (doc/layers.md):
#
#   lib/  >  compat/  >  proto/  >  net/  >  include/
#
# A file may include a header of its own layer or of a layer below it,
# and a layer's objects may use only symbols defined in their own layer
# or below.  The includes are read from the sources; the calls from the
# built objects (nm), so a comment or a string never counts and a call
# hidden in a macro does.  Every breach is printed as
#   FAIL net/wire.c includes lib/tslock_int.h (net/ may use: net include)
# and the exit status is 1.
#
# Usage: check-layers.sh [SRCDIR [BUILDDIR]]   (default: top_srcdir and
# top_builddir, as make check sets them).  tests/check-layers-proof.sh
# runs it on a copy with an upward include and an upward call planted.
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
[ "$status" -eq 0 ] && echo "layers: no upward include or call in $n objects"
exit $status

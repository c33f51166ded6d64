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

# The rank of a layer: 5 for lib/ down to 1 for include/.
rank() {
    r=5
    for l in $layers; do
        [ "$l" = "$1" ] && { echo $r; return; }
        r=$((r - 1))
    done
    echo 0
}
# What a layer may use: itself and every layer below it.
allowed() {
    seen=""
    for l in $layers; do
        [ "$l" = "$1" ] && seen=1
        [ -n "$seen" ] && printf '%s ' "$l"
    done
}

status=0
fail() {
    echo "FAIL $*"
    status=1
}

# ---- includes: #include "name" resolved to the layer holding name.
for l in $layers; do
    for f in "$src/$l"/*.c "$src/$l"/*.h; do
        [ -f "$f" ] || continue
        for h in $(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f"); do
            base=${h##*/}
            for m in $layers; do
                [ -f "$src/$m/$base" ] || continue
                if [ "$(rank "$m")" -gt "$(rank "$l")" ]; then
                    fail "$l/${f##*/} includes $m/$base ($l/ may use:" \
                        "$(allowed "$l"))"
                fi
                break
            done
        done
    done
done

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
for l in lib compat proto net; do
    n=$((n + $(objects "$l" | wc -l)))
done
if [ "$n" -eq 0 ]; then
    echo "no library objects under $build/{lib,compat,proto,net}: build first"
    exit 99
fi
defs=$(mktemp) || exit 99
calls=$(mktemp) || exit 99
trap 'rm -f "$defs" "$calls"' EXIT
# symbol layer file, for every global symbol a library object defines.
for l in lib compat proto net; do
    for o in $(objects "$l"); do
        file=${o##*/}
        file=${file#*_la-}
        file=${file%.o}.c
        $NM -P "$o" | awk -v l="$l" -v f="$file" \
            '$2 ~ /^[TDBRGSCVW]$/ { print $1, l, f }'
    done
done | sort -u >"$defs"
for l in lib compat proto net; do
    for o in $(objects "$l"); do
        file=${o##*/}
        file=${file#*_la-}
        file=${file%.o}.c
        for s in $($NM -P "$o" | awk '$2 == "U" { print $1 }' | sort -u); do
            set -- $(awk -v s="$s" '$1 == s { print $2, $3; exit }' "$defs")
            [ $# -eq 2 ] || continue # hiredis, libc: below every layer
            if [ "$(rank "$1")" -gt "$(rank "$l")" ]; then
                echo "FAIL $l/$file calls $s of $1/$2 ($l/ may use:" \
                    "$(allowed "$l"))"
            fi
        done
    done
done >"$calls"
if [ -s "$calls" ]; then
    sort -u "$calls"
    status=1
fi
[ "$status" -eq 0 ] && echo "layers: no upward include or call in $n objects"
exit $status

#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The exported symbols of libtslock.so must match tests/symbols.txt, so a
# change to the ABI is always a deliberate one, and each must have its man
# page in doc/man.  Exits 77 (skip) where no shared library was built.
set -u
lib="${top_builddir:-.}/.libs/libtslock.so"
list="${top_srcdir:-.}/tests/symbols.txt"
if [ ! -f "$lib" ]; then
    echo "no shared library at $lib; skipped"
    exit 77
fi
# nm prints versioned names as NAME@@VERSION: compare names, then check
# every function carries a TSLOCK_ version (lib/libtslock.map) where nm
# shows versions (binutils 2.35 on).
syms=$(nm -D --defined-only "$lib" | awk '$2 == "T" { print $3 }')
got=$(printf '%s\n' "$syms" | sed 's/@.*//' | sort)
want=$(sort "$list")
if [ "$got" != "$want" ]; then
    echo "exported symbols differ from tests/symbols.txt (< want, > got):"
    printf '%s\n' "$want" >want.tmp.$$
    printf '%s\n' "$got" >got.tmp.$$
    diff want.tmp.$$ got.tmp.$$
    rm -f want.tmp.$$ got.tmp.$$
    exit 1
fi
unversioned=$(printf '%s\n' "$syms" | grep -v '@@TSLOCK_1\.[0-9]*$')
if printf '%s\n' "$syms" | grep -q '@' && [ -n "$unversioned" ]; then
    echo "exported without a TSLOCK_1.x version:"
    printf '%s\n' "$unversioned"
    exit 1
fi
missing=0
for sym in $want; do
    if [ ! -f "${top_srcdir:-.}/doc/man/$sym.3" ]; then
        echo "no man page doc/man/$sym.3"
        missing=1
    fi
done
[ $missing -eq 0 ] || exit 1
echo "exported symbols match ($(printf '%s\n' "$got" | wc -l) functions)," \
    "each with its man page and a TSLOCK_1.x version"

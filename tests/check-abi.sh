#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# check-abi.sh - the built libtslock against the committed ABI baseline
# (abi/libtslock.abi, libabigail's abidw output of 1.0): fails on a change
# a program built against 1.0 would notice (a function removed, a
# parameter or return type changed, a public type changed), passes when
# functions were only added.  make check runs it; make check-abi too.
#
# abidiff's exit status is a bit field: 1 error, 2 usage, 4 ABI change,
# 8 incompatible change.  abidiff 2.2 sets 8 only for removed symbols and
# reports a changed parameter type as 4, so additions are filtered out
# (--no-added-syms) and whatever change is left fails, 4 or 8.  Harmless
# changes (an enumerator added at the end, say) are filtered by abidiff.
#
# Environment: top_srcdir, top_builddir; ABI_BASELINE, ABI_LIB to compare
# other files.  Exit 77 (skip) without abidiff or without debug info.
set -u
src="${top_srcdir:-.}"
lib="${ABI_LIB:-${top_builddir:-.}/.libs/libtslock.so}"
base="${ABI_BASELINE:-$src/abi/libtslock.abi}"

if ! command -v abidiff >/dev/null 2>&1; then
    echo "abidiff not found (apt-get install abigail-tools); skipped"
    exit 77
fi
if [ ! -f "$lib" ]; then
    echo "no shared library at $lib; skipped"
    exit 77
fi
if ! readelf -S "$lib" | grep -q '\.debug_info'; then
    echo "$lib has no debug info (built without -g); skipped"
    exit 77
fi
abidiff --no-added-syms --headers-dir2 "$src/include" "$base" "$lib" \
    >abi-report.tmp.$$ 2>&1
rc=$?
abidiff --headers-dir2 "$src/include" "$base" "$lib" 2>&1 \
    | grep -E '^ *\[A\]' | sed 's/^ */added: /'
cat abi-report.tmp.$$
rm -f abi-report.tmp.$$
if [ $((rc & 3)) -ne 0 ]; then
    echo "abidiff failed (exit status $rc)"
    exit 99
fi
if [ $((rc & 12)) -ne 0 ]; then
    echo "FAIL: the ABI of $lib is not compatible with $base" \
        "(abidiff status $rc; $((rc & 8 ? 1 : 0)) incompatible bit)"
    exit 1
fi
echo "ABI compatible with $(basename "$base") (only additions, if any)"

#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# check-mutants-apply.sh - every mutant of tests/mutants/ still applies to
# the tree exactly (patch --dry-run, no fuzz: a patch applied by fuzz may
# plant its bug elsewhere), so a change to the code a mutant plants its
# bug in is seen in make check, not days later in the daily pick of
# make check-mutants.  The control: a patch whose context is gone must be
# reported.
set -u
src=$(cd "${top_srcdir:-.}" && pwd)
command -v patch >/dev/null 2>&1 || { echo "no patch(1)"; exit 77; }
fail=0
n=0
for m in "$src"/tests/mutants/*.patch; do
    n=$((n + 1))
    if ! (cd "$src" && patch -p1 -s -f -F0 --dry-run <"$m") >/dev/null 2>&1; then
        echo "FAIL - ${m#"$src"/} no longer applies: regenerate it against" \
            "the code it names (its first line says what it breaks)"
        fail=1
    fi
done
tmp=$(mktemp "${TMPDIR:-/tmp}/tslock-mutapply.XXXXXX") || exit 99
# fence-constant's removed line, changed in the copy: the code it names
# is no longer there.
awk '/^@@/ { hunk = 1 } hunk && /^-/ { $0 = $0 " /* gone */" } { print }' \
    "$src/tests/mutants/fence-constant.patch" >"$tmp"
if (cd "$src" && patch -p1 -s -f -F0 --dry-run <"$tmp") >/dev/null 2>&1; then
    echo "FAIL - the control: a patch whose context is gone applied"
    fail=1
fi
rm -f "$tmp"
[ $fail -eq 0 ] && echo "all $n mutants apply to the tree"
exit $fail

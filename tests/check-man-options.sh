#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# check-man-options.sh - every long option `tslock --help` prints, and
# every one the tool's option table takes (tools/common/options.c: the
# subcommands' too, such as the exporter's --match), is documented in
# tslock(1) (as \fB--OPTION in the roff, the dashes escaped), as curl's
# manpage-scan does for its tool; every TSLOCK_E* code of include/tslock.h
# is on tslock_strerror(3) and tslock(7); every exit status of
# tools/cli.h is under tslock(1)'s EXIT STATUS; and no page names a page
# twice in SEE ALSO.  The controls: an absent option, a code, an exit
# status and a doubled SEE ALSO entry planted in copies must be reported.
set -u
tool="${top_builddir:-.}/tools/tslock"
page="${top_srcdir:-.}/doc/man/tslock.1"
# documented OPTION [PAGE]: the page names the option in bold.
documented() {
    esc=$(printf '%s' "$1" | sed 's/-/\\\\-/g')
    grep -q -- "\\\\fB$esc" "${2:-$page}"
}
opts=$("$tool" --help 2>&1 | grep -o -- '--[a-z][a-z0-9-]*' | sort -u)
[ -n "$opts" ] || { echo "FAIL - tslock --help printed no long option"; exit 1; }
missing=0
for o in $opts; do
    if ! documented "$o"; then
        echo "FAIL - $o (in tslock --help) is not in tslock(1)"
        missing=1
    fi
done
if documented --no-such-option-xyz; then
    echo "FAIL - the control: an absent option was found in the page"
    missing=1
fi
for form in dialects; do
    grep -q "^\\\\fB$form\\\\fP" "$page" || {
        echo "FAIL - the $form form is not in tslock(1)"
        missing=1
    }
done
src="${top_srcdir:-.}"
table=$(grep -ho '{"[a-z][a-z0-9-]*", *[a-z_]*_argument' "$src"/tools/*.c "$src"/tools/*/*.c |
    sed 's/{"\([^"]*\)".*/--\1/' | sort -u)
[ -n "$table" ] || { echo "FAIL - no option table found in tools/"; exit 1; }
for o in $table; do
    documented "$o" ||
        { echo "FAIL - $o (tools/common/options.c) is not in tslock(1)"; missing=1; }
done

# codes PAGE...: the TSLOCK_E* codes of the header that a page lacks.
codes=$(sed -n 's/^ *X(\(E[A-Z]*\), *-[0-9].*/TSLOCK_\1/p' \
    "$src/include/tslock.h")
[ -n "$codes" ] || { echo "FAIL - no TSLOCK_E* codes in the header"; exit 1; }
lacking() {
    for c in $codes; do grep -q "$c" "$1" || echo "$c"; done
}
for p in tslock_strerror.3 tslock.7; do
    l=$(lacking "$src/doc/man/$p")
    [ -z "$l" ] || { echo "FAIL - $p lacks:" $l; missing=1; }
done

# exits PAGE: the exit statuses of tools/cli.h not under EXIT STATUS.
statuses=$(sed -n 's/^#define CLI_EXIT_[A-Z_]* *\([0-9][0-9]*\).*/\1/p' \
    "$src/tools/cli.h" | sort -un)
exits() {
    sed -n '/^\.SH EXIT STATUS/,/^\.SH /p' "$1" >"$tmp/exit"
    for n in $statuses; do
        grep -q "^\.B $n\(+\|\$\)" "$tmp/exit" || echo "$n"
    done
}
# doubles PAGE: a page SEE ALSO names twice.
doubles() {
    sed -n '/^\.SH "\{0,1\}SEE ALSO/,/^\.SH /p' "$1" | grep '^\.BR' |
        sed 's/^\.BR *\([^ ]*\) *\(([0-9])\).*/\1\2/' | sort | uniq -d
}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tslock-manopt.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT INT TERM
l=$(exits "$page")
[ -z "$l" ] || { echo "FAIL - tslock(1) EXIT STATUS lacks:" $l; missing=1; }
for p in "$src"/doc/man/*.[0-9]; do
    d=$(doubles "$p")
    [ -z "$d" ] || { echo "FAIL - ${p##*/} names twice in SEE ALSO:" $d; missing=1; }
done

# The controls, on copies.
cp "$page" "$tmp/t1"
sed -i '/^\.SH EXIT STATUS/,/^\.SH /{/^\.B 75$/d}' "$tmp/t1"
[ -n "$(exits "$tmp/t1")" ] ||
    { echo "FAIL - the control: a removed exit status passed"; missing=1; }
grep -v "TSLOCK_ETLS" "$src/doc/man/tslock_strerror.3" >"$tmp/t2"
[ -n "$(lacking "$tmp/t2")" ] ||
    { echo "FAIL - the control: a removed code passed"; missing=1; }
sed '/^\.SH "\{0,1\}SEE ALSO/a .BR tslock (7),\n.BR tslock (7),' "$page" >"$tmp/t3"
[ -n "$(doubles "$tmp/t3")" ] ||
    { echo "FAIL - the control: a doubled SEE ALSO entry passed"; missing=1; }
sed 's/\\fB\\-\\-match/\\fB\\-\\-matc/g' "$page" >"$tmp/t4"
documented --match "$tmp/t4" &&
    { echo "FAIL - the control: a removed option (--match) passed"; missing=1; }

[ $missing -eq 0 ] || exit 1
echo "tslock(1) documents the $(printf '%s\n' "$opts" | wc -l) long options" \
    "tslock --help prints and the $(printf '%s\n' "$table" | wc -l) of the" \
    "option table, and its $(printf '%s\n' "$statuses" | wc -l) exit" \
    "statuses; tslock_strerror(3) and tslock(7) every one of the" \
    "$(printf '%s\n' "$codes" | wc -l) codes; no SEE ALSO names a page twice"

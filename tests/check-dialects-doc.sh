#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# check-dialects-doc.sh - the presets tslock-dialects(7) lists are the
# library's, as `tslock dialects` prints them: every name with its format,
# in order, none missing and none extra.  A copy of the page with one
# format changed must fail the same comparison.
set -u
tool="${top_builddir:-.}/tools/tslock"
page="${top_srcdir:-.}/doc/man/tslock-dialects.7"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tslock-dialects.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT INT TERM

# "name<TAB>format" from the page's table, roff escapes undone.
page_rows() {
    sed -n '/^\.\\" presets: begin/,/^\.\\" presets: end/p' "$1" \
        | grep -v '^\.' | grep -v '^l l\.$' | sed 's/\\-/-/g'
}
"$tool" dialects | awk 'NR > 1 { print $1 "\t" $2 }' >"$tmp/built" || exit 1
[ -s "$tmp/built" ] || { echo "tslock dialects printed nothing"; exit 1; }

page_rows "$page" >"$tmp/page"
if ! cmp -s "$tmp/built" "$tmp/page"; then
    echo "tslock-dialects(7) disagrees with tslock dialects (< built, > page):"
    diff "$tmp/built" "$tmp/page"
    exit 1
fi
# The control: one format changed on a copy of the page.
sed 's/^predislock\t.*/predislock\t{s}:{pid}/' "$page" >"$tmp/changed.7"
page_rows "$tmp/changed.7" >"$tmp/changed"
if cmp -s "$tmp/built" "$tmp/changed"; then
    echo "the control was not caught: a changed row passed"
    exit 1
fi
echo "tslock-dialects(7) lists the $(wc -l <"$tmp/built") presets the library has"

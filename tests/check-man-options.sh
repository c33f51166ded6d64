#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# check-man-options.sh - every long option `tslock --help` prints is
# documented in tslock(1) (as \fB--OPTION in the roff, the dashes escaped),
# as curl's manpage-scan does for its tool.  The control: an option the
# page does not have must be reported.
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
[ $missing -eq 0 ] || exit 1
echo "tslock(1) documents the $(printf '%s\n' "$opts" | wc -l) long options" \
    "tslock --help prints"

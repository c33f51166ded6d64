#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# check-configure.sh - an in-tree ./configure prints no error line.
#
# Autoconf's conftest cleanup runs 'rm -f core conftest*' in the directory
# configure runs in, so a source folder named core/ made every in-tree
# configure print 'rm: cannot remove 'core': Is a directory' (37 times)
# while still succeeding.  Those lines go to the terminal, not config.log,
# and a build in _build/ never shows them, so neither the real configure
# run nor its log can tell: this test runs configure where the source is.
#
# The copy holds what configure reads (configure, the .in files,
# build-aux/, include/tslock.h, lib/libtslock.map) and an empty folder for every top-level
# folder of the source tree, since only the names beside configure can
# collide with what it removes.  configure runs with no options (the
# the in-place by-hand route of doc/building.md), with the CC and hiredis flags of this build.
# An error line is any line on stderr but configure's own "WARNING:"
# lines, which are shown and allowed.  Then the proof: core/ planted in
# the copy, the same run must show an error line naming it.
#
# Environment: top_srcdir, CC, HIREDIS_CFLAGS, HIREDIS_LIBS (make check).
set -u
src=$(cd "${top_srcdir:-.}" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/tslock-configure.XXXXXX") || exit 99
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT TERM
copy="$work/tree"
status=0

mkdir -p "$copy/include" || exit 99
(cd "$src" && cp -p configure Makefile.in config.h.in tslock.pc.in \
    "$copy/" && cp -pR build-aux "$copy/" \
    && cp -p include/tslock.h "$copy/include/") || exit 99
for d in "$src"/*/; do
    mkdir -p "$copy/$(basename "$d")" || exit 99
done
# configure's summary reads the symbol version nodes from the map.
cp -p "$src/lib/libtslock.map" "$copy/lib/" || exit 99
# make distcheck's sources are read-only, and so would the copy be.
chmod -R u+w "$copy"

# run_configure: ./configure in the copy; its stderr in $work/err, the
# error lines (all but configure's WARNING lines) in $work/errors.
run_configure() {
    (cd "$copy" && ./configure CC="${CC:-cc}" \
        HIREDIS_CFLAGS="${HIREDIS_CFLAGS:-}" \
        HIREDIS_LIBS="${HIREDIS_LIBS:-}") >"$work/out" 2>"$work/err"
    rc=$?
    grep -v '^configure: WARNING: ' "$work/err" >"$work/errors"
    return $rc
}

start=$(date +%s)
if ! run_configure; then
    echo "FAIL - ./configure in the copy exited non-zero:"
    tail -20 "$work/err" | sed 's/^/    /'
    exit 1
fi
if [ -s "$work/errors" ]; then
    echo "FAIL - an in-tree ./configure printed $(wc -l <"$work/errors")" \
        "error lines, first:"
    sort "$work/errors" | uniq -c | sort -rn | head -5 | sed 's/^/    /'
    status=1
else
    echo "ok - an in-tree ./configure prints no error line" \
        "($(($(date +%s) - start)) s)"
fi
grep '^configure: WARNING: ' "$work/err" | sed 's/^/    allowed: /'

# The proof: the folder the middle layer had before it was proto/.
mkdir -p "$copy/core" && : >"$copy/core/core.h" || exit 99
run_configure
if grep -q "core" "$work/errors"; then
    echo "ok - with core/ planted the check fails:" \
        "$(grep -c "core" "$work/errors") error lines, as" \
        "'$(head -1 "$work/errors")'"
else
    echo "FAIL - with core/ planted, configure printed no error line" \
        "naming it; the check could not fail"
    sed 's/^/    stderr: /' "$work/err" | head -5
    status=1
fi
exit $status

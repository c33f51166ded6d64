#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# test_classroom.sh - the race classroom page in a real browser.  Writes
# the races page with `tslock replay --html` against a private
# redis-server, and the explorer's page with `tests/explore --html` (the
# modern two-client rows: the controls and the classic release's gap
# beside the WATCH form), then has tests/browser/classroom.mjs open both
# in Debian's chromium (headless, through puppeteer-core), step through
# two races with the keyboard and compare what it shows with the data and
# with the text the same runs printed.  The pages and screenshots stay in
# tests/classroom/ of the build tree.  Skipped (77), saying what to run,
# where chromium, node or puppeteer-core (npm ci in tests/browser) is
# missing, as after the by-hand build of doc/building.md; quickstart.sh test
# installs all three and makes a missing one a failure.
set -u

srcdir="${top_srcdir:-.}"
builddir="${top_builddir:-.}"
tool="$builddir/tools/tslock"
explore="$builddir/tests/explore"
browser=$(cd "$srcdir/tests/browser" && pwd)

# skip WHAT HOW...: a piece the by-hand build does not install is missing;
# say what and the commands that install it, and skip (77).  quickstart.sh
# test installs every piece and sets TSLOCK_CLASSROOM_REQUIRED=1, so there
# a missing piece fails instead of hiding the test.
skip() {
    what=$1
    shift
    echo "SKIP: $what, so the classroom pages were not tested in a browser."
    echo "      To run this test:"
    for how in "$@"; do
        echo "          $how"
    done
    echo "      (quickstart.sh test does all of it.)"
    if [ "${TSLOCK_CLASSROOM_REQUIRED:-}" = 1 ]; then
        echo "FAIL: TSLOCK_CLASSROOM_REQUIRED=1 (quickstart.sh test)"
        exit 1
    fi
    exit 77
}
chromium="${CHROMIUM:-}"
[ -n "$chromium" ] || chromium=$(command -v chromium 2>/dev/null || true)
[ -n "$chromium" ] || skip "chromium is not installed" \
    "apt-get install chromium"
command -v node >/dev/null 2>&1 || skip "node is not installed" \
    "apt-get install nodejs npm" \
    "(cd $browser && PUPPETEER_SKIP_DOWNLOAD=1 npm ci)"
# The test's node modules: npm ci's in tests/browser, or, for a tree
# without them (make distcheck's), $TSLOCK_NODE_MODULES beside a copy of
# the script, since node resolves an import from the script's folder.
script="$srcdir/tests/browser/classroom.mjs"
modules="${TSLOCK_NODE_MODULES:-}"
if [ ! -f "$browser/node_modules/puppeteer-core/package.json" ] \
    && [ -n "$modules" ] && [ -f "$modules/puppeteer-core/package.json" ]; then
    run="$builddir/tests/browser-run"
    mkdir -p "$run" && cp "$script" "$run/" \
        && ln -sfn "$modules" "$run/node_modules" || exit 1
    script="$run/classroom.mjs"
elif [ ! -f "$browser/node_modules/puppeteer-core/package.json" ]; then
    skip "puppeteer-core is not installed in $browser/node_modules" \
        "(cd $browser && PUPPETEER_SKIP_DOWNLOAD=1 npm ci)"
fi
. "$srcdir/tests/harness.sh"
need_server

out="$builddir/tests/classroom"
mkdir -p "$out" || exit 1
rm -f "$out"/*.png "$out"/*.html "$out"/*.txt
# /tmp, not $TMPDIR: a Unix socket path must stay under ~100 bytes.
dir=$(mktemp -d /tmp/tslock-classroom.XXXXXX) || exit 1
sock="$dir/redis.sock"
pid=
cleanup() {
    [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
    rm -rf "$dir"
}
th_on_exit cleanup
trap 'exit 130' INT TERM
start_unix_server "$sock" "$dir/redis.log"
pid=$started

status=0
if ! "$tool" -u "unix://$sock" replay --html "$out/races.html" \
    >"$out/races.txt"; then
    echo "FAIL: tslock replay --html did not end as documented"
    cat "$out/races.txt"
    exit 1
fi
echo "ok: tslock replay --html wrote $(wc -c <"$out/races.html") bytes"
if ! REDIS_SERVER="$server" "$explore" --html "$out/explore.html" \
    --only "modern two" >"$out/explore.txt"; then
    echo "FAIL: tests/explore --html failed"
    tail -20 "$out/explore.txt"
    exit 1
fi
echo "ok: tests/explore --html: $(tail -1 "$out/explore.txt")"
node "$script" --chromium "$chromium" \
    --races "$out/races.html" --races-text "$out/races.txt" \
    --explore "$out/explore.html" --explore-text "$out/explore.txt" \
    --doc "$srcdir/doc/races.md" --out "$out" || status=1
ls -l "$out"
exit $status

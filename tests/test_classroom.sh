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
# tests/classroom/ of the build tree.  Skipped (77) only where chromium is
# not installed; quickstart.sh installs it, and node and puppeteer-core.
set -u

srcdir="${top_srcdir:-.}"
builddir="${top_builddir:-.}"
tool="$builddir/tools/tslock"
explore="$builddir/tests/explore"
chromium="${CHROMIUM:-}"
[ -n "$chromium" ] || chromium=$(command -v chromium 2>/dev/null || true)
if [ -z "$chromium" ]; then
    echo "SKIP: chromium is not installed, so the classroom page was not"
    echo "      tested in a browser (apt-get install chromium; quickstart.sh"
    echo "      installs it)"
    exit 77
fi
if ! command -v node >/dev/null 2>&1; then
    echo "FAIL: chromium is installed but node is not (apt-get install"
    echo "      nodejs npm; quickstart.sh installs them)"
    exit 1
fi
# The test's node modules: npm ci's in tests/browser, or, for a tree
# without them (make distcheck's), $TSLOCK_NODE_MODULES beside a copy of
# the script, since node resolves an import from the script's folder.
script="$srcdir/tests/browser/classroom.mjs"
modules="${TSLOCK_NODE_MODULES:-}"
if [ ! -f "$srcdir/tests/browser/node_modules/puppeteer-core/package.json" ] \
    && [ -n "$modules" ] && [ -f "$modules/puppeteer-core/package.json" ]; then
    run="$builddir/tests/browser-run"
    mkdir -p "$run" && cp "$script" "$run/" \
        && ln -sfn "$modules" "$run/node_modules" || exit 1
    script="$run/classroom.mjs"
elif [ ! -f "$srcdir/tests/browser/node_modules/puppeteer-core/package.json" ]; then
    echo "FAIL: puppeteer-core is not installed for the browser test: run"
    echo "      (cd $srcdir/tests/browser && npm ci)   (quickstart.sh does)"
    exit 1
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
trap cleanup EXIT
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

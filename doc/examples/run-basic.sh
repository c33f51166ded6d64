#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Run doc/examples/basic and with against a private redis-server in a temp dir,
# stopped by its pid on the way out.
set -u
server="${REDIS_SERVER:-redis-server}"
dir=$(mktemp -d "${TMPDIR:-/tmp}/tslock-example.XXXXXX") || exit 1
pid=
cleanup() {
    [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
    rm -rf "$dir"
}
trap cleanup EXIT INT TERM
"$server" --port 0 --unixsocket "$dir/redis.sock" --save '' \
    --appendonly no --dir "$dir" --logfile "$dir/redis.log" &
pid=$!
i=0
while [ ! -S "$dir/redis.sock" ] && [ $i -lt 100 ]; do
    sleep 0.05
    i=$((i + 1))
done
"${top_builddir:-.}/doc/examples/basic" "$dir/redis.sock" example-key &&
    "${top_builddir:-.}/doc/examples/with" "$dir/redis.sock" example-index &&
    "${top_builddir:-.}/doc/examples/stats" "$dir/redis.sock" >"$dir/stats.txt" &&
    grep -q '^tslock_acquisitions_total{result="acquired"} 1$' "$dir/stats.txt" &&
    grep -q '^tslock_hold_seconds_count 1$' "$dir/stats.txt"

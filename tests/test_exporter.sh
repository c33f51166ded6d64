#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# test_exporter.sh - tslock exporter against real parts: a loopback
# redis-server, legacy clients (tests/legacy_cli) and tslock locks that
# the test makes, Debian's prometheus scraping the exporter every second
# and answering /api/v1/query with the numbers the test caused, promtool
# check metrics on the exporter's output (and seen failing on a broken
# exposition), promtool check config and check rules on the examples of
# doc/observability.md as they stand there, and survey --since reporting
# a legacy writer from the record after the exporter has stopped.
# POSIX sh; every wait is for a condition, bounded.
set -u

tool="${top_builddir:-.}/tools/tslock"
legacy="${top_builddir:-.}/tests/legacy_cli"
old="${top_builddir:-.}/tests/oldredis"
src="${top_srcdir:-.}"
. "$src/tests/harness.sh"
need_server
for p in prometheus promtool curl; do
    if ! command -v $p >/dev/null 2>&1; then
        echo "FAIL - $p not found (apt-get install prometheus curl;" \
            "quickstart.sh does)"
        exit 1
    fi
done

dir=$(mktemp -d /tmp/tslock-exporter.XXXXXX) || exit 1
pid=
old_pid=
second=
exporter=
prom=
cleanup() {
    [ -n "$old_pid" ] && kill "$old_pid" 2>/dev/null && wait "$old_pid" 2>/dev/null
    [ -n "$second" ] && kill "$second" 2>/dev/null && wait "$second" 2>/dev/null
    [ -n "$prom" ] && kill "$prom" 2>/dev/null && wait "$prom" 2>/dev/null
    [ -n "$exporter" ] && kill "$exporter" 2>/dev/null \
        && wait "$exporter" 2>/dev/null
    [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
    rm -rf "$dir"
}
th_on_exit cleanup
trap 'exit 130' INT TERM
out="$dir/out"
err="$dir/err"
shown=30

# MONITOR names clients by address only over TCP: a loopback server.
if ! start_tcp_server 29 "$dir/redis.log"; then
    echo "no redis-server of ours came up on a loopback port"
    exit 1
fi
pid=$started
U="redis://127.0.0.1:$started_port"

# free_port: a loopback port nobody listens on now (the kernel's choice).
free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# until_true SECONDS COMMAND...: until it succeeds, every 0.1 s, for at
# most SECONDS by the clock.
until_true() {
    end=$(($(date +%s) + $1))
    shift
    until "$@" >/dev/null 2>&1; do
        [ "$(date +%s)" -ge "$end" ] && return 1
        sleep 0.1
    done
}

# ------------------------------------------------------------ usage errors
t "exporter without --listen: usage error" 64 $tool -u "$U" exporter
check "... says what it expects" has "exporter expects --listen ADDR:PORT" "$err"
t "--listen without a port: usage error" 64 \
    $tool -u "$U" exporter --listen 127.0.0.1
check "... names the form" has "expects ADDR:PORT" "$err"
t "--max-series 0: usage error" 64 $tool exporter --listen 127.0.0.1:1 \
    --max-series 0
t "--listen on survey: usage error" 64 $tool survey --listen 127.0.0.1:1
t "--json on the exporter: usage error" 64 \
    $tool exporter --listen 127.0.0.1:1 --json
check "... names what it takes" has "it takes --match" "$err"
t "--since on watch: usage error" 64 $tool watch --since 7d k
t "--since 7x: usage error" 64 $tool survey --since 7x
check "... says what it expects" has "a duration such as 7d, 12h or 30m, got '7x'" "$err"

# ------------------------------------------------- what the test causes
# Token locks (tslock), a bridge lock (tslock, stamps from a script) and
# classic clients' stamps: only the classic clients' writes are legacy.
t "2 token locks" 0 sh -c "$tool -q -u $U -m token -t 600000 acquire tok:1 \
    && $tool -q -u $U -m token -t 600000 acquire tok:2"
t "a bridge lock" 0 $tool -q -u "$U" -m bridge -t 600000 acquire job:bridge
# A fair line of three ({KEY}:queue, as tslock --fair keeps it).
"$cli" -p "$started_port" zadd '{job:fair}:queue' 1 a 2 b 3 c >/dev/null

port=$(free_port)
$tool -u "$U" --max-series 2 exporter --listen "127.0.0.1:$port" \
    >"$dir/exporter.out" 2>"$dir/exporter.err" &
exporter=$!
metrics="http://127.0.0.1:$port/metrics"
check "the exporter's MONITOR stream is on" until_true 10 sh -c \
    "curl -sf $metrics | grep -q '^tslock_legacy_monitor_up{.*} 1$'"

# Four classic (java) clients lock billing:*, one redisdoc client locks
# audit:x, one locks zz:y (a third prefix, past --max-series 2): each an
# uncontended SETNX of a stamp, one legacy write each.
t "legacy clients lock" 0 "$legacy" -p "$started_port" \
    client a java 600000 client b java 600000 client c java 600000 \
    client d java 600000 client e redisdoc 600000 client f java 600000 \
    lock a billing:1 lock b billing:2 lock c billing:3 lock d billing:4 \
    lock e audit:x lock f zz:y

scrape() {
    curl -sf "$metrics" >"$dir/metrics.txt" && cat "$dir/metrics.txt"
}
check "the six writes are counted" until_true 10 sh -c \
    "curl -sf $metrics | grep -q '^tslock_legacy_writes_total{.*prefix=\"billing\"} 4$'"
t "scrape /metrics" 0 scrape
S="server=\"127.0.0.1:$started_port/0\""
check "tslock_locks: 2 live token locks" \
    has "^tslock_locks{$S,dialect=\"token\",state=\"live\"} 2$" "$out"
check "tslock_locks: 1 live bridge-ms lock" \
    has "^tslock_locks{$S,dialect=\"bridge-ms\",state=\"live\"} 1$" "$out"
check "tslock_locks: 5 live timestamp-ms locks (java)" \
    has "^tslock_locks{$S,dialect=\"timestamp-ms\",state=\"live\"} 5$" "$out"
check "tslock_locks: 1 live timestamp-s lock (redisdoc)" \
    has "^tslock_locks{$S,dialect=\"timestamp-s\",state=\"live\"} 1$" "$out"
check "tslock_waiters: 3" has "^tslock_waiters{$S} 3$" "$out"
check "tslock_clock_offset_seconds is there" \
    has "^tslock_clock_offset_seconds{$S} " "$out"
check "legacy writes: billing 4" \
    has "^tslock_legacy_writes_total{$S,prefix=\"billing\"} 4$" "$out"
check "legacy writes: audit 1" \
    has "^tslock_legacy_writes_total{$S,prefix=\"audit\"} 1$" "$out"
check "legacy writes: the third prefix is (other), past --max-series 2" \
    has "^tslock_legacy_writes_total{$S,prefix=\"(other)\"} 1$" "$out"
check "no series per key, none for the bridge or token writes" \
    sh -c "! grep -q 'prefix=\"\\(zz\\|job\\|tok\\)' '$out'"
check "scrape health: tslock_up 1" has "^tslock_up{$S} 1$" "$out"
t "promtool check metrics passes on the output" 0 \
    sh -c "promtool check metrics <'$dir/metrics.txt'"
# The same exposition broken: a sample whose label value lost its
# quotes.  promtool must refuse it.
sed -e 's/^\(tslock_up{server=\)"\([^"]*\)"/\1\2/' "$dir/metrics.txt" \
    >"$dir/bad.txt"
check "the broken copy differs" \
    sh -c "! cmp -s '$dir/metrics.txt' '$dir/bad.txt'"
t "promtool check metrics fails on a broken exposition" 1 \
    sh -c "promtool check metrics <'$dir/bad.txt'"

t "OpenMetrics when asked: ends with # EOF" 0 sh -c \
    "curl -sf -H 'Accept: application/openmetrics-text;version=1.0.0' \
     $metrics | tail -1 | grep -qx '# EOF'"
t "a request other than GET: 405" 0 sh -c \
    "curl -s -o /dev/null -w '%{http_code}' -X POST $metrics | grep -qx 405"
t "another path: 404" 0 sh -c \
    "curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:$port/x \
     | grep -qx 404"

# --------------------------------------------------- a real Prometheus
pport=$(free_port)
mkdir -p "$dir/prom"
cat >"$dir/prom/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: tslock
    static_configs:
      - targets: ["127.0.0.1:$port"]
EOF
prometheus --config.file="$dir/prom/prometheus.yml" \
    --storage.tsdb.path="$dir/prom/data" \
    --web.listen-address="127.0.0.1:$pport" >"$dir/prom/log" 2>&1 &
prom=$!
api="http://127.0.0.1:$pport/api/v1/query"
# query EXPR VALUE: Prometheus answers EXPR with one sample of VALUE.
query() {
    curl -sf --data-urlencode "query=$1" "$api" >"$dir/q.json" || return 1
    python3 - "$dir/q.json" "$2" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["data"]["result"]
sys.exit(0 if len(r) == 1 and float(r[0]["value"][1]) == float(sys.argv[2]) else 1)
PY
}
check "prometheus scrapes the exporter: tslock_up 1" until_true 30 \
    query 'tslock_up{job="tslock"}' 1
check "prometheus: 5 live timestamp-ms locks" until_true 10 \
    query 'tslock_locks{dialect="timestamp-ms",state="live"}' 5
check "prometheus: 2 live token locks" until_true 10 \
    query 'tslock_locks{dialect="token",state="live"}' 2
check "prometheus: 4 legacy writes to billing" until_true 10 \
    query 'tslock_legacy_writes_total{prefix="billing"}' 4
check "prometheus: 3 waiters" until_true 10 query 'tslock_waiters' 3
check "prometheus's scrapes succeed (it asks for OpenMetrics first)" \
    query 'up{job="tslock"}' 1
kill "$prom" && wait "$prom" 2>/dev/null
prom=

# ------------------------------------ the record outlives the exporter
kill "$exporter"
wait "$exporter"
estatus=$?
exporter=
check "the exporter stops at SIGTERM with status 0 (got $estatus)" \
    test "$estatus" -eq 0
check "... and nothing on stderr but its first line" \
    sh -c "[ \$(wc -l <'$dir/exporter.err') -eq 1 ] \
           && grep -q '^tslock: exporter: serving /metrics' '$dir/exporter.err'"
t "survey --since 1h after the exporter stopped" 0 \
    $tool -u "$U" survey --since 1h
check "... names billing:3 and its writer's address" \
    has '127\.0\.0\.1 *"billing:3"' "$out"
check "... counts 6 keys" has "^6 keys had legacy writers in the last 1h" "$out"
check "... names the recorder" has "^recorded by .* 127.0.0.1:$port from " "$out"
check "... not the bridge or token keys" \
    sh -c "! grep -q 'job:bridge\\|tok:' '$out'"
t "survey --since --json" 0 $tool -u "$U" survey --since 1h --json
check "... a summary with keys 6" has '"summary":{"since_ms":3600000,"keys":6,' "$out"
check "... billing:1 from 127.0.0.1" \
    has '{"key":"billing:1","last_seen_ms":[0-9]*,"addresses":"127.0.0.1"}' "$out"
"$cli" -p "$started_port" del tslock:legacy-recorders >/dev/null
t "no recorder in the window: said" 0 $tool -u "$U" survey --since 1h
check "... a warning" has "warning: no recorder (tslock exporter) ran" "$out"

# ---------------------------------- every dialect, by the dialect label
# A key of each preset's form on the first server, written by raw SETs
# as each library writes it; the next exporter's tslock_dialect_locks
# names each by the presets whose clients could have written it.
rcli() { "$cli" -p "$started_port" "$@" >/dev/null; }
dnow=$("$cli" -p "$started_port" time | head -1)
rcli set dl:java $(((dnow + 600) * 1000 + 1))
rcli set dl:redisdoc $((dnow + 601))
rcli set dl:float "$((dnow + 600)).3051164"
rcli set dl:objects_lock 1
rcli set lock:dl:resque true
rcli set dl:gem "$((dnow + 601))-27118-520"
rcli set dl:gem-old "$((dnow - 60))-27118-520"
rcli set dl:ninja "a:3:{s:3:\"pid\";i:8975;s:8:\"hostname\";s:2:\"vm\";s:7:\"expires\";i:$((dnow + 600));}"
rcli set dl:predis "$((dnow + 601)):15131"
rcli set dl:odd "$((dnow + 600))_15131"
rcli set dl:counter 1

# ------------- several servers, one down; prefixes of two parts on '.'
sock="$dir/second.sock"
start_unix_server "$sock" "$dir/second.log"
second=$started
dead=$(free_port)
port=$(free_port)
$tool -u "$U" -u "unix://$sock" -u "redis://127.0.0.1:$dead" \
    --prefix-sep . --prefix-depth 2 exporter --listen "127.0.0.1:$port" \
    >"$dir/exporter2.out" 2>"$dir/exporter2.err" &
exporter=$!
metrics="http://127.0.0.1:$port/metrics"
S2="server=\"unix:$sock/0\""
check "the second server's MONITOR stream is on" until_true 10 sh -c \
    "curl -sf $metrics | grep -qF 'tslock_legacy_monitor_up{$S2} 1'"
# Legacy writes of every dialect count; a counter's 1 does not.
t "a redis-lock gem stamp and a counter written on the first server" 0 \
    sh -c "'$cli' -p $started_port set legacy.gem.x '$((dnow + 601))-1-2' >/dev/null \
        && '$cli' -p $started_port set legacy.counter.x 1 >/dev/null"
check "the gem's write counts as a legacy write" until_true 10 sh -c \
    "curl -sf $metrics | grep -qF 'tslock_legacy_writes_total{$S,prefix=\"legacy.gem\"} 1'"
t "a legacy client on the second server" 0 "$legacy" -s "$sock" \
    client a java 600000 client b java 600000 client c java 600000 \
    lock a app.jobs.nightly lock b app.jobs.hourly lock c flat
check "... counted under app.jobs, twice" until_true 10 sh -c \
    "curl -sf $metrics | grep -qF 'tslock_legacy_writes_total{$S2,prefix=\"app.jobs\"} 2'"
t "scrape the three servers" 0 scrape
check "a key without the separator counts under \"\"" \
    has "^tslock_legacy_writes_total{$S2,prefix=\"\"} 1$" "$out"
check "the second server: 3 live timestamp-ms locks" \
    has "^tslock_locks{$S2,dialect=\"timestamp-ms\",state=\"live\"} 3$" "$out"
check "the first server is still read: 2 live token locks" \
    has "^tslock_locks{$S,dialect=\"token\",state=\"live\"} 2$" "$out"
check "a counter's 1 is no legacy write" \
    sh -c "! grep -q 'prefix=\"legacy.counter\"' '$out'"
cp "$out" "$dir/dialects.txt"
# dl DIALECT STATE N: the first server's tslock_dialect_locks sample.
dl() {
    grep -qxF "tslock_dialect_locks{$S,dialect=\"$1\",state=\"$2\"} $3" "$out"
}
exporter_dialect_checks() {
    # billing:1-4 and zz:y (java), audit:x (redisdoc) and the bridge
    # hold job:bridge, whose stamp is in milliseconds, are live too.
    $1 "tslock_dialect_locks: java-redislock/node-redis-lock live" \
        dl java-redislock/node-redis-lock live 7
    $1 "tslock_dialect_locks: redis-docs/resque-lock-timeout live" \
        dl redis-docs/resque-lock-timeout live 2
    $1 "tslock_dialect_locks: redis-py2/redis-objects/redis-mutex live" \
        dl redis-py2/redis-objects/redis-mutex live 1
    $1 "tslock_dialect_locks: redis-objects never" dl redis-objects never 1
    $1 "tslock_dialect_locks: resque-lock-timeout never" \
        dl resque-lock-timeout never 1
    $1 "tslock_dialect_locks: redis-lock-gem live (dl:gem, legacy.gem.x)" \
        dl redis-lock-gem live 2
    $1 "tslock_dialect_locks: redis-lock-gem expired" dl redis-lock-gem expired 1
    $1 "tslock_dialect_locks: ninja-mutex live" dl ninja-mutex live 1
    $1 "tslock_dialect_locks: predislock live" dl predislock live 1
    $1 "tslock_dialect_locks: unknown-stamp unreadable" \
        dl unknown-stamp unreadable 1
    $1 "tslock_locks: the unknown stamp by kind" \
        has "^tslock_locks{$S,dialect=\"unknown-stamp\",state=\"unreadable\"} 1$" "$out"
}
exporter_dialect_checks check
# The checks can fail: on the exposition with its names broken.
refutes() {
    name=$1
    shift
    th_begin "$name"
    if "$@"; then
        not_ok "broken copy: $name passes all the same"
    else
        ok "broken copy: $name fails"
    fi
}
sed -e 's/dialect="java-redislock.node-redis-lock"/dialect="java-redislock"/' \
    -e 's/dialect="redis-docs.resque-lock-timeout"/dialect="redis-docs"/' \
    -e 's/dialect="redis-py2.redis-objects.redis-mutex"/dialect="redis-py2"/' \
    -e 's/dialect="redis-objects",state="never"/dialect="redis-objects",state="live"/' \
    -e 's/dialect="resque-lock-timeout",state="never"/dialect="resque-lock-timeout",state="expired"/' \
    -e 's/dialect="redis-lock-gem"/dialect="unknown-stamp"/' \
    -e 's/dialect="ninja-mutex"/dialect="unknown-stamp"/' \
    -e 's/dialect="predislock"/dialect="redis-docs"/' \
    -e 's/dialect="unknown-stamp",state="unreadable"} 1/dialect="unknown-stamp",state="unreadable"} 0/' \
    -e 's/^\(tslock_locks{.*dialect="unknown-stamp",state="unreadable"}\) 1/\1 0/' \
    "$dir/dialects.txt" >"$out"
exporter_dialect_checks refutes
check "the server that is down: tslock_up 0, no lock counts" sh -c \
    "grep -q '^tslock_up{server=\"127.0.0.1:$dead/0\"} 0$' '$out' \
     && ! grep -q '^tslock_locks{server=\"127.0.0.1:$dead/0\"' '$out'"
check "... and its failed scrapes are counted" \
    has "^tslock_scrape_errors_total{server=\"127.0.0.1:$dead/0\"} [1-9]" "$out"
t "promtool check metrics passes on three servers" 0 \
    sh -c "promtool check metrics <'$dir/metrics.txt'"
kill "$exporter"
wait "$exporter"
exporter=
kill "$second" && wait "$second" 2>/dev/null
second=

# ------------------------------------- Redis 2.4 (tests/oldredis plays it)
# No SCAN, no TIME, MONITOR lines without the client's address: the
# walk is refused (tslock_up 0, never KEYS), the legacy writes are still
# counted and recorded, under the address "?".
osock="$dir/old.sock"
"$old" --emulate 2.4.18 --listen "$osock" --upstream-port "$started_port" \
    >"$dir/old.log" 2>&1 &
old_pid=$!
check "the 2.4 proxy listens" await_file "$osock"
port=$(free_port)
$tool -u "unix://$osock" exporter --listen "127.0.0.1:$port" \
    >"$dir/exporter3.out" 2>"$dir/exporter3.err" &
exporter=$!
metrics="http://127.0.0.1:$port/metrics"
S3="server=\"unix:$osock/0\""
check "2.4: the MONITOR stream is on" until_true 10 sh -c \
    "curl -sf $metrics | grep -qF 'tslock_legacy_monitor_up{$S3} 1'"
t "2.4: a legacy client locks old:1" 0 "$legacy" -s "$osock" \
    client a redisdoc 600000 lock a old:1
check "2.4: counted under old" until_true 10 sh -c \
    "curl -sf $metrics | grep -qF 'tslock_legacy_writes_total{$S3,prefix=\"old\"} 1'"
t "2.4: scrape" 0 scrape
check "2.4: tslock_up 0 (no SCAN), no tslock_locks" sh -c \
    "grep -qF 'tslock_up{$S3} 0' '$out' && ! grep -qF 'tslock_locks{$S3' '$out'"
check "2.4: no clock offset (no TIME)" \
    sh -c "! grep -qF 'tslock_clock_offset_seconds{$S3' '$out'"
check "2.4: the exporter says why" has "has no SCAN" "$dir/exporter3.err"
kill "$exporter"
wait "$exporter"
exporter=
t "2.4: survey --since reads the record through 2.4" 0 \
    $tool -u "unix://$osock" survey --since 1h
check "2.4: old:1 from the address ?" has '^[-0-9T:Z]* *[0-9]*s  ? *"old:1"' "$out"
kill "$old_pid" && wait "$old_pid" 2>/dev/null
old_pid=

# ---------------------------- the clock offset: its sign and its unit
# tslock_clock_offset_seconds is the server's clock (TIME) minus the
# exporter host's, in seconds.  An exporter on a host whose wall clock
# runs 10 s ahead (libfaketime, the monotonic clock left alone) reads the
# server 10 s behind: about -10; one 10 s behind reads about +10; one
# with the true clock about 0.  A wrong sign or milliseconds fail.
libft="${TSLOCK_LIBFAKETIME:-}"
if [ -z "$libft" ]; then
    for f in /usr/lib/*/faketime/libfaketime.so.1 \
        /usr/lib/faketime/libfaketime.so.1; do
        [ -r "$f" ] && libft=$f && break
    done
fi
# offset_with SKEW: the offset an exporter reads with its clock SKEW off
# (a faketime offset such as +10), printed; 1 when none came within 10 s.
offset_with() {
    oport=$(free_port)
    LD_PRELOAD="${1:+$libft}" FAKETIME="$1" FAKETIME_DONT_FAKE_MONOTONIC=1 \
        ASAN_OPTIONS=verify_asan_link_order=0 \
        $tool -u "$U" exporter --listen "127.0.0.1:$oport" \
        >"$dir/exporter-skew.out" 2>"$dir/exporter-skew.err" &
    exporter=$!
    until_true 10 sh -c "curl -sf http://127.0.0.1:$oport/metrics \
        | grep -q '^tslock_clock_offset_seconds{$S} '"
    got=$(curl -sf "http://127.0.0.1:$oport/metrics" |
        sed -n "s|^tslock_clock_offset_seconds{$S} ||p")
    kill "$exporter"
    wait "$exporter"
    exporter=
    [ -n "$got" ] && echo "$got"
}
# near VALUE WANT: |VALUE - WANT| < 1.5 s (a scrape's round trip, a loaded
# machine, and TIME's whole seconds on the way).
near() {
    awk -v v="$1" -v w="$2" 'BEGIN { d = v - w; exit !(v != "" && d > -1.5 && d < 1.5) }'
}
if [ -z "$libft" ]; then
    not_ok "clock offset under libfaketime: libfaketime not found" \
        "(apt-get install faketime libfaketime; quickstart.sh does)"
else
    ahead=$(offset_with +10)
    behind=$(offset_with -10)
    true_clock=$(offset_with "")
    check "a host 10 s ahead reads the server's clock at -10 s (got $ahead)" \
        near "$ahead" -10
    check "a host 10 s behind reads +10 s (got $behind)" near "$behind" 10
    check "the true clock reads about 0 s (got $true_clock)" \
        near "$true_clock" 0
fi

# ------------------------------ the examples of doc/observability.md
# The YAML blocks after the markers, as they stand in the page.
block() {
    awk -v m="<!-- $1 -->" '$0 == m {f = 1; next}
        f && /^```yaml/ {p = 1; next} p && /^```/ {exit} p' \
        "$src/doc/observability.md"
}
block scrape-config >"$dir/prometheus.yml"
block alert-rules >"$dir/tslock-rules.yml"
check "the page's scrape config is there" test -s "$dir/prometheus.yml"
check "the page's alert rules are there" test -s "$dir/tslock-rules.yml"
t "promtool check config on the page's scrape config" 0 \
    promtool check config "$dir/prometheus.yml"
t "promtool check rules on the page's alert rules" 0 \
    promtool check rules "$dir/tslock-rules.yml"

finish

#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# check-stress.sh - make check-stress: the timing-sensitive test programs,
# STRESS_RUNS times (default 10) each, beside stress-ng --cpu STRESS_CPU
# (default 4) hogging every core, then a table: each program, its passes
# out of its runs, and for every failure the run and what failed (CUnit
# "suite/test" names, shell "FAIL - " checks, pytest ids, HANG lines).
# STRESS_TESTS (the test names as in TESTS) replaces the default list;
# STRESS_JOBS runs that many tests at once (make -j), default one.
# Each run is one "make check TESTS=..." in the build tree; its logs are
# kept in stress/run-N/.  Exits 0 only when every program passed every
# time; the table of the runs done so far is rewritten after each run
# (stress/table.txt).  stress-ng runs with its own --timeout, under
# timeout(1), and is stopped by its pid however this script ends.
set -u

builddir=${top_builddir:-.}
make=${MAKE:-make}
runs=${STRESS_RUNS:-10}
cpu=${STRESS_CPU:-4}
default_tests="tests/test_client tests/test_wakeup tests/test_wakeone
tests/test_fair tests/test_interop tests/test_cli.sh tests/test_cli_redlock.sh
tests/test_resilience tests/test_faults tests/test_chaos tests/test_load
tests/test_sentinel tests/test_skew tests/test_cli_skew.sh tests/test_python.sh
tests/test_lock tests/test_redlock tests/test_cluster tests/test_shard
tests/test_quirks tests/test_stats tests/test_cli_top.sh tests/test_exporter.sh
tests/test_cli_once.sh tests/test_at_least tests/test_noscript tests/test_tls.sh
tests/test_acl.sh tests/test_java.sh"
tests=${STRESS_TESTS:-$default_tests}
# An upper bound on the whole run for stress-ng's own timeout: an hour
# per run is far beyond what the default list takes on two loaded cores.
limit=$((runs * 3600))

case $runs in
'' | *[!0-9]* | 0)
    echo "check-stress: STRESS_RUNS must be a positive number, got '$runs'"
    exit 2
    ;;
esac
if ! command -v stress-ng >/dev/null 2>&1; then
    echo "check-stress: stress-ng not found (apt-get install stress-ng)"
    exit 2
fi

results=$builddir/stress
rm -rf "$results"
mkdir -p "$results" || exit 2
sng=
stop_stress() {
    if [ -n "$sng" ]; then
        kill "$sng" 2>/dev/null
        wait "$sng" 2>/dev/null
        sng=
    fi
}
trap stop_stress EXIT
trap 'exit 130' INT TERM
timeout -k 10 $((limit + 60)) stress-ng --cpu "$cpu" --timeout "${limit}s" \
    --quiet >"$results/stress-ng.log" 2>&1 &
sng=$!
sleep 1
if ! kill -0 "$sng" 2>/dev/null; then
    echo "check-stress: stress-ng did not start:"
    cat "$results/stress-ng.log"
    exit 2
fi

# The log name automake gives a test: tests/test_cli.sh -> tests/test_cli.
log_of() {
    case $1 in
    *.sh) echo "${1%.sh}" ;;
    *) echo "$1" ;;
    esac
}

# What failed in one log, on one line: CUnit tests (after their suite),
# shell checks, pytest ids and HANG lines.
failures_in() {
    awk '
        /^Suite: / { suite = substr($0, 8) }
        /^  Test: / {
            name = substr($0, 9)
            sub(/ \.\.\..*$/, "", name)
        }
        /\.\.\.FAILED/ || /^FAILED *$/ {
            out = out sep suite "/" name
            sep = "; "
        }
        /^FAIL - / { out = out sep substr($0, 8); sep = "; " }
        /^FAILED [^ ]*::/ { out = out sep $2; sep = "; " }
        /^HANG: / { out = out sep $0; sep = "; " }
        END { print out }' "$1"
}

# table DONE: the table of runs 1..DONE into stress/table.txt, and
# $status 1 unless every program passed every one of them.  Its loop
# variable is r: shell variables are global, and the caller's is i.
table() {
    status=0
    {
        printf '%-28s %-8s %s\n' program passes failures
        for t in $tests; do
            name=$(basename "$(log_of "$t")")
            pass=0
            what=
            r=1
            while [ "$r" -le "$1" ]; do
                trs="$results/run-$r/$name.trs"
                res=$(sed -n 's/^:test-result: //p' "$trs" 2>/dev/null)
                if [ "$res" = PASS ]; then
                    pass=$((pass + 1))
                else
                    f=$(failures_in "$results/run-$r/$name.log" 2>/dev/null)
                    what="$what${what:+ | }run $r ${res:-NO RESULT}${f:+: $f}"
                fi
                r=$((r + 1))
            done
            [ "$pass" -eq "$1" ] || status=1
            printf '%-28s %-8s %s\n' "$name" "$pass/$1" "$what"
        done
        echo "($1 of $runs runs in $(($(date +%s) - start)) s beside" \
            "stress-ng --cpu $cpu; logs in $results/)"
    } >"$results/table.txt"
}

start=$(date +%s)
i=1
while [ "$i" -le "$runs" ]; do
    echo "check-stress: run $i of $runs: $(echo $tests | wc -w) programs" \
        "beside stress-ng --cpu $cpu"
    $make -C "$builddir" ${STRESS_JOBS:+-j$STRESS_JOBS} check \
        TESTS="$(echo $tests)" >"$results/run-$i.make.log" 2>&1
    mkdir -p "$results/run-$i"
    for t in $tests; do
        base=$(log_of "$t")
        for ext in log trs; do
            [ -f "$builddir/$base.$ext" ] && cp "$builddir/$base.$ext" \
                "$results/run-$i/$(basename "$base").$ext"
        done
    done
    # The table so far, so a run stopped early still leaves one.
    table "$i"
    i=$((i + 1))
done
stop_stress
table "$runs"
cat "$results/table.txt"
exit $status

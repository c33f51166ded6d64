#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# fuzz.sh - build the libFuzzer targets of tests/fuzz with clang
# (-fsanitize=fuzzer,address,undefined; the library's sources compiled in
# directly) and run them: "run" fuzzes each for $FUZZ_SECONDS and prints
# its execs and execs/s; "replay" runs each corpus file once.
#
#   fuzz.sh build|run|replay [TARGET...]
#
# Environment (make fuzz sets it): CLANG, top_srcdir, top_builddir,
# HIREDIS_CFLAGS, HIREDIS_LIBS, FUZZ_SECONDS (default 60).  New inputs go
# to $top_builddir/tests/fuzz/work/TARGET, crashes to .../artifacts/.
set -u
mode=${1:-run}
[ $# -gt 0 ] && shift
src=$(cd "${top_srcdir:-.}" && pwd)
build=$(cd "${top_builddir:-.}" && pwd)
cc=${CLANG:-clang}
out="$build/tests/fuzz"
targets=${*:-"stamp classify handle url options reply http push monitor dialect"}
seconds=${FUZZ_SECONDS:-60}

# Every C file of the library's four layers (lib/, compat/, proto/, net/)
# is the library's, so the list cannot drift from Makefile.am.
lib_sources=$(cd "$src" && echo lib/*.c compat/*.c proto/*.c net/*.c)
tool_sources="tools/common/options.c tools/common/session.c tools/common/signals.c tools/ops/http.c"
monitor_sources="tools/ops/watch.c tools/ops/stampname.c tools/plumb/rawconn.c tools/plumb/rawcmd.c
    tools/plumb/escape.c tools/ops/skew.c"
flags="-g -O1 -fno-omit-frame-pointer -fno-sanitize-recover=undefined
    -I$src/include -I$src/lib -I$src/compat -I$src/proto -I$src/net
    -I$src/tools -I$src/tools/common -I$src/tools/plumb -I$src/tools/class
    -I$build ${HIREDIS_CFLAGS:-}"

# The sources a target needs besides its own file.
sources_of() {
    case $1 in
    url | options | http) echo "$lib_sources $tool_sources" ;;
    monitor) echo "$lib_sources $tool_sources $monitor_sources" ;;
    *) echo "$lib_sources" ;;
    esac
}

# The library's and the tool's objects, compiled once for every target,
# again whenever a source or header is newer than the last build or an
# object is missing (a source added to the lists since).
build_objects() {
    stamp="$out/obj/.stamp"
    for s in $lib_sources $tool_sources $monitor_sources; do
        [ -f "$out/obj/$(echo "$s" | tr / _).o" ] || rm -f "$stamp"
    done
    if [ -f "$stamp" ] && [ -z "$(find "$src/lib" "$src/compat" "$src/proto" \
        "$src/net" "$src/tools" \
        "$src/include" -name '*.[ch]' -newer "$stamp")" ]; then
        return 0
    fi
    mkdir -p "$out/obj"
    for s in $lib_sources $tool_sources $monitor_sources; do
        # shellcheck disable=SC2086
        $cc $flags -fsanitize=fuzzer-no-link,address,undefined \
            -c "$src/$s" -o "$out/obj/$(echo "$s" | tr / _).o" || return 1
    done
    touch "$stamp"
}

# Link bin/fuzz_TARGET unless it is newer than every source.
build_target() {
    t=$1
    bin="$out/bin/fuzz_$t"
    build_objects || return 1
    if [ -x "$bin" ] && [ "$bin" -nt "$out/obj/.stamp" ] \
        && [ -z "$(find "$src/tests/fuzz" -name '*.[ch]' -newer "$bin")" ]; then
        return 0
    fi
    mkdir -p "$out/bin"
    objs=""
    for s in $(sources_of "$t"); do
        objs="$objs $out/obj/$(echo "$s" | tr / _).o"
    done
    # shellcheck disable=SC2086
    $cc $flags -fsanitize=fuzzer,address,undefined -o "$bin" \
        "$src/tests/fuzz/fuzz_$t.c" $objs ${HIREDIS_LIBS:-} -lpthread \
        || return 1
    echo "built $bin"
}

# Fuzz one target; print its execs and execs/s, and any crash.
run_target() {
    t=$1
    log="$out/log/$t.log"
    mkdir -p "$out/work/$t" "$out/artifacts/$t" "$out/log"
    "$out/bin/fuzz_$t" -max_total_time="$seconds" -print_final_stats=1 \
        -timeout=10 -rss_limit_mb=1024 -close_fd_mask=3 \
        -artifact_prefix="$out/artifacts/$t/" \
        "$out/work/$t" "$src/tests/fuzz/corpus/$t" >"$log" 2>&1
    rc=$?
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
    secs=$(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$log")
    [ -n "$secs" ] && [ "$secs" -gt 0 ] || secs=$seconds
    printf '%-9s %10s execs in %3s s = %8s execs/s' "$t" "${execs:-?}" \
        "$secs" "$(( ${execs:-0} / secs ))"
    if [ $rc -ne 0 ]; then
        printf '  CRASH (exit %s): %s; log %s\n' "$rc" \
            "$(ls "$out/artifacts/$t" | head -3 | tr '\n' ' ')" "$log"
        grep -m3 'ERROR\|property violated\|runtime error' "$log" | sed 's/^/    /'
        return 1
    fi
    echo
}

# Every corpus file once, as libFuzzer runs a file named on its command line.
replay_target() {
    t=$1
    set -- "$src/tests/fuzz/corpus/$t"/*
    [ -e "$1" ] || { echo "$t: empty corpus"; return 1; }
    if "$out/bin/fuzz_$t" -runs=1 "$@" >"$out/log/replay-$t.log" 2>&1; then
        echo "$t: $# corpus files replayed under libFuzzer"
    else
        echo "$t: FAILED; see $out/log/replay-$t.log"
        tail -20 "$out/log/replay-$t.log"
        return 1
    fi
}

status=0
mkdir -p "$out/log"
for t in $targets; do
    build_target "$t" || { echo "$t: build failed"; status=1; continue; }
    case $mode in
    build) ;;
    run) run_target "$t" || status=1 ;;
    replay) replay_target "$t" || status=1 ;;
    *) echo "usage: $0 build|run|replay [TARGET...]"; exit 2 ;;
    esac
done
exit $status

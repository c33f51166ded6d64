#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# check-hiredis.sh - the whole of make check against each hiredis release:
# every hiredis-VERSION.tar.gz in HIREDIS_ARCHIVES is built into a private
# prefix, tslock is configured against it (and runs with it, by rpath) in
# a build directory of its own (found through the hiredis.pc it installs,
# or by header and library for 0.11, which installs none), and make check
# runs there.  "system" is the hiredis pkg-config finds (Debian's own).  make check-hiredis runs it.
#
#   HIREDIS_ARCHIVES=DIR tests/check-hiredis.sh [VERSION|system ...]
#
# Environment: top_srcdir, top_builddir, HIREDIS_ARCHIVES, CHECK_JOBS (-j,
# default 2), CHECK_TESTS (a TESTS= subset, default the whole suite).
# Results: $top_builddir/hiredis-check/results.md, a table in the form of
# doc/compat.md.  Exit status 1 when any version failed.
set -u
src=$(cd "${top_srcdir:-.}" && pwd)
build=$(cd "${top_builddir:-.}" && pwd)
archives=${HIREDIS_ARCHIVES:-$src/../shared/hiredis}
jobs=${CHECK_JOBS:-2}
work="$build/hiredis-check"
results="$work/results.md"

if [ ! -d "$archives" ]; then
    echo "check-hiredis: no hiredis archives in $archives: skipped" \
        "(set HIREDIS_ARCHIVES to a directory of hiredis-VERSION.tar.gz)"
    exit 0
fi
versions=${*:-"$(cd "$archives" && ls hiredis-*.tar.gz 2>/dev/null \
    | sed 's/^hiredis-//; s/\.tar\.gz$//' | sort -V | tr '\n' ' ') system"}
mkdir -p "$work"
printf '| hiredis | configure found | replaced | make check | seconds |\n' \
    >"$results"
printf '|---|---|---|---|---|\n' >>"$results"
status=0

# Build hiredis $1 into $work/$1/prefix (PREFIX and LIBRARY_PATH on both
# make calls: the .pc file is written by the first).
build_hiredis() {
    v=$1
    d="$work/$v"
    rm -rf "$d/hiredis-$v" "$d/prefix"
    mkdir -p "$d"
    tar -xzf "$archives/hiredis-$v.tar.gz" -C "$d" || return 1
    (cd "$d/hiredis-$v" \
        && make USE_SSL=0 PREFIX="$d/prefix" LIBRARY_PATH=lib \
        && make USE_SSL=0 PREFIX="$d/prefix" LIBRARY_PATH=lib install) \
        >"$d/hiredis-build.log" 2>&1
}

# Counts of PASS / FAIL / ERROR / SKIP in the .trs files under $1.
tally() {
    c() { cat "$1"/tests/*.trs "$1"/tests/fuzz/*.trs "$1"/doc/examples/*.trs \
        2>/dev/null | grep -c "^:test-result: $2" ; }
    echo "$(c "$1" PASS) pass, $(c "$1" FAIL) fail, $(c "$1" ERROR) error," \
        "$(c "$1" SKIP) skip"
}

for v in $versions; do
    start=$(date +%s)
    d="$work/$v"
    b="$d/build"
    echo "== hiredis $v"
    if [ "$v" = system ]; then
        set --
    else
        if [ ! -f "$archives/hiredis-$v.tar.gz" ]; then
            echo "check-hiredis: $archives/hiredis-$v.tar.gz not found"
            status=1
            continue
        fi
        if ! build_hiredis "$v"; then
            echo "FAIL - hiredis $v did not build; see $d/hiredis-build.log"
            printf '| %s | - | - | hiredis did not build | - |\n' "$v" \
                >>"$results"
            status=1
            continue
        fi
        # As a user would: its hiredis.pc where it installs one (0.12
        # on), else the header and the library named (0.11); an rpath so
        # the tests load this hiredis, not the system's.
        p="$d/prefix"
        if [ -f "$p/lib/pkgconfig/hiredis.pc" ]; then
            set -- PKG_CONFIG_PATH="$p/lib/pkgconfig" \
                LDFLAGS="-Wl,-rpath,$p/lib"
        else
            set -- HIREDIS_CFLAGS="-I$p/include" \
                HIREDIS_LIBS="-L$p/lib -lhiredis -Wl,-rpath,$p/lib"
        fi
    fi
    rm -rf "$b"
    mkdir -p "$b"
    if ! (cd "$b" && env "$@" "$src/configure" --enable-werror \
        >configure.out 2>&1); then
        echo "FAIL - configure; see $b/config.log"
        printf '| %s | configure failed | - | - | - |\n' "$v" >>"$results"
        status=1
        continue
    fi
    found=$(sed -n 's/^  hiredis: *\([0-9.]*\).*/\1/p' "$b/configure.out")
    lacks=$(sed -n 's/^  hiredis lacks: *\(.*\) (net.*/\1/p' "$b/configure.out")
    if ! (cd "$b" && make -j"$jobs" >make.out 2>&1); then
        echo "FAIL - build; see $b/make.out"
        printf '| %s | %s | %s | build failed | - |\n' "$v" "$found" \
            "$lacks" >>"$results"
        status=1
        continue
    fi
    # The tool must report, and run with, the hiredis asked for.
    "$b/tools/tslock" --version | sed 's/^/   /'
    if [ "$v" != system ] && ! ldd "$b/.libs/libtslock.so" \
        | grep -q "$d/prefix/lib/libhiredis"; then
        echo "FAIL - libtslock does not load $d/prefix/lib/libhiredis.so"
        status=1
        continue
    fi
    if [ "$v" != system ] && [ "$found" != "$v" ]; then
        echo "FAIL - configure found hiredis $found, not $v"
        status=1
        continue
    fi
    if [ -n "${CHECK_TESTS:-}" ]; then
        set -- TESTS="$CHECK_TESTS"
    else
        set --
    fi
    # The rpath serves the library and the tool; the libFuzzer replays
    # link hiredis on their own, so they find it by LD_LIBRARY_PATH.
    libpath=${LD_LIBRARY_PATH:-}
    [ "$v" = system ] || libpath="$d/prefix/lib${libpath:+:$libpath}"
    if (cd "$b" && LD_LIBRARY_PATH=$libpath make -j"$jobs" check "$@" \
        >check.out 2>&1); then
        verdict="pass ($(tally "$b"))"
    else
        verdict="FAIL ($(tally "$b"))"
        status=1
        grep -h '^FAIL\|^ERROR' "$b/check.out" | sed 's/^/   /'
    fi
    secs=$(($(date +%s) - start))
    echo "$verdict in ${secs}s"
    printf '| %s | %s | %s | %s | %s |\n' "$v" "$found" "$lacks" \
        "$verdict" "$secs" >>"$results"
done
echo
cat "$results"
exit $status

#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
#
# bench-ab.sh - make bench-ab: the uncontended token acquire + release of
# this build (A) against libtslock built at a baseline commit (B), loaded
# side by side by tests/bench_ab and run alternately on one server.
#
#   bench-ab.sh [--if-built] SRCDIR BUILDDIR
#
# BASELINE (a commit of SRCDIR's git history) is built once, with its own
# configure, into BUILDDIR/bench-ab/<commit>/; BASELINE_LIB names a
# libtslock.so built already instead.  With --if-built (make bench), the
# A/B runs only when the baseline's library is there.
set -e

if_built=0
if [ "$1" = "--if-built" ]; then
    if_built=1
    shift
fi
srcdir=$1
builddir=$2
baseline=${BASELINE:?set BASELINE to a commit}
lib=${BASELINE_LIB:-}

if [ -z "$lib" ]; then
    dir=$builddir/bench-ab/$baseline
    lib=$dir/src/_build/.libs/libtslock.so
    if [ ! -f "$lib" ] && [ $if_built = 1 ]; then
        echo "(the A/B against libtslock at $baseline: make bench-ab)"
        exit 0
    fi
    if [ ! -f "$lib" ]; then
        if ! git -C "$srcdir" rev-parse -q --verify "$baseline^{commit}" \
            >/dev/null; then
            echo "bench-ab: $srcdir has no commit '$baseline' (a git" \
                "checkout is needed, or BASELINE_LIB=/path/libtslock.so)" >&2
            exit 1
        fi
        echo "bench-ab: building libtslock at $baseline in $dir"
        rm -rf "$dir"
        mkdir -p "$dir/src"
        git -C "$srcdir" archive "$baseline" | tar -x -C "$dir/src"
        (cd "$dir/src" && autoreconf -fi && mkdir -p _build && cd _build &&
            ../configure --disable-python && make libtslock.la) \
            >"$dir/build.log" 2>&1 || {
            echo "bench-ab: the baseline did not build; see $dir/build.log" >&2
            exit 1
        }
    fi
fi

# A copy of this build's library: bench_ab links it too, and a second
# map of one file in another namespace hides its symbols from valgrind.
this=$builddir/bench-ab/this-libtslock.so
mkdir -p "$builddir/bench-ab"
cp "$builddir/.libs/libtslock.so" "$this"
"$builddir/tests/bench_ab" "$this" "$lib" "this build" \
    "$(echo "$baseline" | cut -c1-12)"

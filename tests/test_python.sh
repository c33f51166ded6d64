#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# test_python.sh - the pytest suite of the tslock Python module
# (bindings/python/tests) against the module and library just built; the
# tests start their own redis-server processes.  Skipped (77) when the
# python3 configure chose has no pytest.  "test_python.sh --run SCRIPT"
# runs SCRIPT with the module instead (make bench: tests/bench_python.py).
set -u
top_builddir=$(cd "${top_builddir:-.}" && pwd)
top_srcdir=$(cd "${top_srcdir:-.}" && pwd)
python=${PYTHON:-python3}
so=$top_builddir/bindings/python/tslock/.libs/_tslock.so
if [ ! -f "$so" ]; then
    echo "test_python: $so not built (./configure --enable-python)"
    exit 99
fi
run=""
if [ "${1:-}" = --run ]; then
    run=$2
    shift 2
elif ! "$python" -c 'import pytest' 2>/dev/null; then
    echo "test_python: $python has no pytest (apt-get install python3-pytest)"
    exit 77
fi
# The package as it is installed: __init__.py beside _tslock.so.
stage=$(mktemp -d "${TMPDIR:-/tmp}/tslock-py.XXXXXX") || exit 99
trap 'rm -rf "$stage"' EXIT INT TERM
mkdir "$stage/tslock"
ln -s "$top_srcdir/bindings/python/tslock/__init__.py" "$stage/tslock/"
ln -s "$so" "$stage/tslock/_tslock.so"
PYTHONPATH=$stage${PYTHONPATH:+:$PYTHONPATH}
LD_LIBRARY_PATH=$top_builddir/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
PYTHONDONTWRITEBYTECODE=1
export PYTHONPATH LD_LIBRARY_PATH PYTHONDONTWRITEBYTECODE
export TSLOCK_OLDREDIS="$top_builddir/tests/oldredis"
export TSLOCK_SRCDIR="$top_srcdir"
export TSLOCK_CLI="$top_builddir/tools/tslock"
# A library built with the sanitizers needs their runtimes loaded first
# into a python3 built without them; Python's own allocations are not
# leak-checked.
asan=$(ldd "$top_builddir/.libs/libtslock.so" 2>/dev/null \
    | sed -n 's/.*\(libasan\.so[^ ]*\) => \([^ ]*\).*/\2/p')
ubsan=$(ldd "$top_builddir/.libs/libtslock.so" 2>/dev/null \
    | sed -n 's/.*\(libubsan\.so[^ ]*\) => \([^ ]*\).*/\2/p')
if [ -n "$asan" ]; then
    LD_PRELOAD="$asan${ubsan:+ $ubsan}"
    ASAN_OPTIONS=detect_leaks=0
    export LD_PRELOAD ASAN_OPTIONS
fi
cd "$stage" || exit 99
if [ -n "$run" ]; then
    "$python" "$run" "$@"
    exit
fi
# tests/pytest_hang.py bounds each test as tests/harness.c bounds a C one.
PYTHONPATH=$PYTHONPATH:$top_srcdir/tests
exec "$python" -m pytest -q -p no:cacheprovider -p pytest_hang "$@" \
    "$top_srcdir/bindings/python/tests"

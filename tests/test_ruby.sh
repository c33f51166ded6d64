#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# test_ruby.sh - build the tslock Ruby extension with its own extconf.rb
# (mkmf, as the gem builds it) against the library just built, and run its
# minitest suite (bindings/ruby/test) under ruby -w; any warning fails.
# The tests start their own redis-server.  Skipped (77) without ruby, its
# headers (ruby-dev) or minitest (ruby-minitest).
# "test_ruby.sh --run SCRIPT ARGS" runs SCRIPT with the extension instead.
set -u
top_builddir=$(cd "${top_builddir:-.}" && pwd)
top_srcdir=$(cd "${top_srcdir:-.}" && pwd)
ruby=${RUBY:-ruby}
if ! command -v "$ruby" >/dev/null 2>&1; then
    echo "test_ruby: no ruby (apt-get install ruby-dev ruby-minitest)"
    exit 77
fi
if ! "$ruby" -rrbconfig -e \
    'exit File.exist?(File.join(RbConfig::CONFIG["rubyhdrdir"], "ruby.h"))'; then
    echo "test_ruby: $ruby has no headers (apt-get install ruby-dev)"
    exit 77
fi
if ! "$ruby" -e 'require "minitest"' 2>/dev/null; then
    echo "test_ruby: $ruby has no minitest (apt-get install ruby-minitest)"
    exit 77
fi
lib=$top_builddir/.libs/libtslock.so
if [ ! -f "$lib" ]; then
    echo "test_ruby: $lib not built"
    exit 99
fi
stage=$(mktemp -d "${TMPDIR:-/tmp}/tslock-rb.XXXXXX") || exit 99
trap 'rm -rf "$stage"' EXIT INT TERM
mkdir "$stage/build" "$stage/lib" "$stage/lib/tslock"
# mkmf builds in the current directory, from the sources in srcdir.
(cd "$stage/build" \
    && "$ruby" "$top_srcdir/bindings/ruby/ext/tslock/extconf.rb" \
        --with-tslock-include="$top_srcdir/include" \
        --with-tslock-lib="$top_builddir/.libs" --enable-werror \
        >extconf.out 2>&1 \
    && make V=0 >make.out 2>&1) || {
    cat "$stage/build/extconf.out" "$stage/build/make.out" \
        "$stage/build/mkmf.log" 2>/dev/null | tail -40
    echo "test_ruby: the extension did not build"
    exit 1
}
cp "$stage/build/tslock_ext.so" "$stage/lib/tslock/"
LD_LIBRARY_PATH=$top_builddir/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
RUBYLIB=$stage/lib:$top_srcdir/bindings/ruby/lib:$top_srcdir/bindings/ruby/test
export LD_LIBRARY_PATH RUBYLIB
export TSLOCK_OLDREDIS="$top_builddir/tests/oldredis"
export TSLOCK_SRCDIR="$top_srcdir"
# A library built with the sanitizers needs their runtimes loaded first
# into a ruby built without them; Ruby's own allocations are not
# leak-checked.
asan=$(ldd "$lib" 2>/dev/null \
    | sed -n 's/.*\(libasan\.so[^ ]*\) => \([^ ]*\).*/\2/p')
ubsan=$(ldd "$lib" 2>/dev/null \
    | sed -n 's/.*\(libubsan\.so[^ ]*\) => \([^ ]*\).*/\2/p')
if [ -n "$asan" ]; then
    LD_PRELOAD="$asan${ubsan:+ $ubsan}"
    # Ruby unmaps its threads' signal stacks itself; ASan's own
    # alternate stack then fails to unmap at thread exit.
    ASAN_OPTIONS=detect_leaks=0:use_sigaltstack=0
    export LD_PRELOAD ASAN_OPTIONS
fi
if [ "${1:-}" = --run ]; then
    shift
    exec "$ruby" -w "$@"
fi
# ruby -w: every warning (ours or the tests') fails the run.
"$ruby" -w -e 'ARGV.each { |f| require f }' \
    $(ls "$top_srcdir"/bindings/ruby/test/test_*.rb) \
    2>"$stage/stderr"
rc=$?
cat "$stage/stderr" >&2
if grep -q 'warning:' "$stage/stderr"; then
    echo "test_ruby: ruby -w warned (above)"
    exit 1
fi
exit $rc

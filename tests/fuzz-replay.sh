#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# fuzz-replay.sh - the fuzz corpora as a regression test: every file in
# tests/fuzz/corpus/TARGET goes once through that target's checks, by the
# plain driver (tests/fuzz/replay_TARGET, built with the normal compiler)
# everywhere, and also under libFuzzer with ASan and UBSan when configure
# found clang with -fsanitize=fuzzer.  Crashes found by make fuzz belong
# in the corpus once fixed, so they stay fixed.
set -u
src="${top_srcdir:-.}"
build="${top_builddir:-.}"
targets="stamp classify handle url options reply http push monitor dialect"
status=0

for t in $targets; do
    log="$build/tests/fuzz/replay-$t.log"
    if "$build/tests/fuzz/replay_$t" "$src/tests/fuzz/corpus/$t" \
        >"$log" 2>&1; then
        echo "ok - $t: $(tail -1 "$log") by the plain driver"
    else
        echo "FAIL - $t: the plain driver failed; last lines of $log:"
        tail -15 "$log" | sed 's/^/    /'
        status=1
    fi
done

if [ -z "${CLANG:-}" ]; then
    echo "# clang with libFuzzer not found by configure: corpora replayed by"
    echo "# the plain driver only (apt-get install clang, re-run configure)"
else
    log="$build/tests/fuzz/replay-libfuzzer.log"
    CLANG="$CLANG" top_srcdir="$src" top_builddir="$build" \
        "${SHELL:-/bin/sh}" "$src/tests/fuzz/fuzz.sh" replay $targets \
        >"$log" 2>&1 || status=1
    sed 's/^/libFuzzer: /' "$log"
fi
exit $status

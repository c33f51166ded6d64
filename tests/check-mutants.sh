#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# check-mutants.sh - make check-mutants: every small bug in tests/mutants/
# must be caught by the test program it names.  A mutant is a patch whose
# first line reads
#   caught-by: tests/PROGRAM ["PART OF A TEST NAME"] -- the behaviour broken
# (the quoted part, for CUnit programs, runs only the tests whose names
# contain it, through $TSLOCK_TEST_ONLY).  The tracked files of the tree
# are copied to $MUTANTS_DIR (default $top_builddir/mutants), configured
# there as this build was and built once; the named tests run once
# unmutated (a test that fails anyway would "catch" everything); then
# each mutant in turn is applied to the copy, built, its tests run under
# timeout(1) with a bound of $MUTANT_BOUND s (default 600), and reverted.
# The table says, for each: caught, hang (named: the bound ran out, or
# the harness's watchdog saw one), survived, broken (the patch does not
# apply or the mutant does not build), or skipped (its test ran nothing,
# exit 77: it proves nothing).  Exits 0 only when every mutant was caught
# or hung.  A survivor means a test is missing: add
# the test, never delete the mutant.
#
# MUTANTS: the mutants to run (file names or paths), default all.
# MUTANTS_PICK=daily: CI's short form, a seventh of them (rounded up)
# chosen by the day of the week, so that every mutant runs over a week.
# POSIX sh.
set -u

src=$(cd "${top_srcdir:-.}" && pwd)
build=$(cd "${top_builddir:-.}" && pwd)
make=${MAKE:-make}
bound=${MUTANT_BOUND:-600}
work=${MUTANTS_DIR:-$build/mutants}

all=$(ls "$src"/tests/mutants/*.patch 2>/dev/null)
if [ -n "${MUTANTS:-}" ]; then
    all=
    for m in $MUTANTS; do
        [ -f "$m" ] || m=$src/tests/mutants/$(basename "$m" .patch).patch
        [ -f "$m" ] || { echo "check-mutants: no mutant $m"; exit 2; }
        all="$all $m"
    done
fi
total=$(echo $all | wc -w)
[ "$total" -gt 0 ] || { echo "check-mutants: no mutants"; exit 2; }
# pick DAY: the mutants of weekday DAY (1..7), a seventh of them rounded up.
pick() {
    per=$(((total + 6) / 7))
    first=$((($1 - 1) * per % total))
    echo $all | tr ' ' '\n' | awk -v f=$first -v n=$per -v t=$total \
        '{ i = NR - 1; if ((i - f + t) % t < n) print }'
}
if [ "${MUTANTS_PICK:-}" = daily ]; then
    # The week's seven picks together name every mutant, or CI would
    # never run some of them.
    week=$(for d in 1 2 3 4 5 6 7; do pick $d; done | sort -u | wc -l)
    if [ "$week" -ne "$total" ]; then
        echo "check-mutants: a week of daily picks runs $week of $total mutants"
        exit 2
    fi
    day=$(date -u +%u) # 1..7
    all=$(pick "$day")
    echo "# daily pick: $(echo $all | wc -w) of $total mutants (day $day)"
fi

# field FILE: the mutant's program; its filter; its behaviour.
program() { sed -n '1s/^caught-by: *\([^ ]*\).*/\1/p' "$1"; }
filter() { sed -n '1s/^caught-by: *[^ ]* *"\([^"]*\)".*/\1/p' "$1"; }
behaviour() { sed -n '1s/^caught-by:.* -- //p' "$1"; }

for m in $all; do
    if [ -z "$(program "$m")" ] || [ -z "$(behaviour "$m")" ]; then
        echo "check-mutants: $m: its first line is not" \
            "'caught-by: tests/PROGRAM [\"TEST\"] -- BEHAVIOUR'"
        exit 2
    fi
done

# The copy: the tracked files as they are in the source tree now.  Only
# a file whose content changed is written, stamped with the time of this
# run, so an unchanged file is not rebuilt on a second run and a changed
# one always is (its own time may be older than an object the last run
# built from the file before it changed).
mkdir -p "$work/src" "$work/build" || exit 2
rm -rf "$work/stage" && mkdir -p "$work/stage" || exit 2
(cd "$src" && git ls-files -z | xargs -0 tar cf -) | tar xf - -C "$work/stage" ||
    exit 2
(cd "$work/stage" && find . -type f) | while IFS= read -r f; do
    cmp -s "$work/stage/$f" "$work/src/$f" && continue
    mkdir -p "$(dirname "$work/src/$f")" && rm -f "$work/src/$f" &&
        cp "$work/stage/$f" "$work/src/$f" || exit 2
done || exit 2
rm -rf "$work/stage"
# The npm packages the Node and browser tests use are not tracked: the
# copy sees the source tree's, so a test of them runs rather than skips.
for d in bindings/node/node_modules tests/node-peers/node_modules \
    tests/browser/node_modules; do
    [ -d "$src/$d" ] && [ ! -e "$work/src/$d" ] && ln -s "$src/$d" "$work/src/$d"
done
log=$work/log
: >"$log"
echo "# copy of the tree in $work/src, built in $work/build (log: $log)"
if [ ! -f "$work/build/Makefile" ]; then
    config=$("$build/config.status" --config 2>/dev/null | tr -d "'")
    (cd "$work/src" && autoreconf -fi) >>"$log" 2>&1 &&
        (cd "$work/build" && eval "../src/configure $config") >>"$log" 2>&1 ||
        { echo "check-mutants: configuring the copy failed (see $log)"; exit 2; }
fi
# Everything make check needs, without running a test.
build_copy() {
    "$make" -C "$work/build" -j2 all >>"$log" 2>&1 &&
        "$make" -C "$work/build" -j2 check TESTS= >>"$log" 2>&1
}

# run_test PROGRAM FILTER NAME: its log in $work/NAME.log; prints the
# verdict: pass, fail, hang, or skip (the test ran nothing: exit 77, so
# it proves nothing either way).
run_test() {
    TSLOCK_TEST_ONLY=$2 timeout -k 20 "$bound" "$make" -C "$work/build" \
        check TESTS="$1" >"$work/$3.make.log" 2>&1
    rc=$?
    # The test's log, named as automake names it (foo.sh's is foo.log).
    cat "$work/build/${1%.sh}.log" >"$work/$3.log" 2>/dev/null
    if [ $rc -eq 124 ] || [ $rc -eq 137 ] ||
        grep -q "^HANG: " "$work/$3.log" 2>/dev/null; then
        echo hang
    elif [ $rc -eq 0 ] && grep -q '^:test-result: SKIP' \
        "$work/build/${1%.sh}.trs" 2>/dev/null; then
        echo skip
    elif [ $rc -eq 0 ]; then
        echo pass
    else
        echo fail
    fi
}

echo "# building the unmutated copy"
build_copy || { echo "check-mutants: the unmutated copy does not build (see $log)"; exit 2; }
status=0
for pair in $(for m in $all; do printf '%s|%s\n' "$(program "$m")" \
    "$(filter "$m" | tr ' ' '\001')"; done | sort -u); do
    p=${pair%%|*}
    f=$(echo "${pair#*|}" | tr '\001' ' ')
    v=$(run_test "$p" "$f" "baseline-$(basename "$p")")
    echo "# baseline $p${f:+ \"$f\"}: $v"
    # A skipped baseline proves nothing: its mutants could not be caught.
    [ "$v" = pass ] || status=1
done
if [ $status -ne 0 ]; then
    echo "check-mutants: a named test fails or skips without any mutant;" \
        "fix it (or install what it needs) first"
    exit 1
fi

table=$work/table.txt
printf '%-32s %-9s %s\n' MUTANT VERDICT "TEST -- BEHAVIOUR" >"$table"
caught=0 hung=0 survived=0 broken=0 skipped=0
for m in $all; do
    name=$(basename "$m" .patch)
    p=$(program "$m")
    f=$(filter "$m")
    if ! (cd "$work/src" && patch -p1 -s --dry-run <"$m") >>"$log" 2>&1; then
        v=broken
    else
        (cd "$work/src" && patch -p1 -s <"$m") >>"$log" 2>&1
        if build_copy; then
            v=$(run_test "$p" "$f" "$name")
            case $v in pass) v=survived ;; fail) v=caught ;; skip) v=skipped ;; esac
        else
            v=broken
        fi
        (cd "$work/src" && patch -p1 -R -s <"$m") >>"$log" 2>&1 || {
            echo "check-mutants: reverting $name failed; the copy is unusable"
            exit 2
        }
    fi
    case $v in
    caught) caught=$((caught + 1)) ;;
    hang) hung=$((hung + 1)) ;;
    survived) survived=$((survived + 1)) ;;
    broken) broken=$((broken + 1)) ;;
    skipped) skipped=$((skipped + 1)) ;;
    esac
    line=$(printf '%-32s %-9s %s%s -- %s' "$name" "$v" "$p" \
        "${f:+ \"$f\"}" "$(behaviour "$m")")
    echo "$line"
    echo "$line" >>"$table"
done
# The copy is left as the tree is: rebuilt now, a later run starts clean.
build_copy >/dev/null 2>&1
echo "# $caught caught, $hung hang, $survived survived, $broken broken," \
    "$skipped skipped" \
    "of $(echo $all | wc -w) (table: $table)"
[ $survived -eq 0 ] && [ $broken -eq 0 ] && [ $skipped -eq 0 ]

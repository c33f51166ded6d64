#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# check-layers-proof.sh - tests/check-layers.sh can fail.  On a copy of
# the layers' sources and objects it plants what the check forbids, one
# breach at a time, and expects a failure naming it:
#   - net/wire.c including lib/tslock_int.h (an upward include);
#   - proto/names.c including compat/compat.h (one layer up);
#   - a net/ object calling tslock__fair_try of lib/fair.c;
#   - a compat/ object calling tslock__guarded of lib/guard.c;
#   - a circle inside one layer: a net/ object calling tslock__send of
#     net/wire.c, and wire.c calling that object back;
#   - a circle inside lib/;
# and the clean copy passes before and after.
set -u
src=${top_srcdir:-.}
build=${top_builddir:-.}
CC=${CC:-cc}
check="$src/tests/check-layers.sh"
work=$(mktemp -d) || exit 99
trap 'rm -rf "$work"' EXIT
status=0

# The copy: every layer's sources, and the library's objects beside them.
for l in lib compat proto net include; do
    mkdir -p "$work/src/$l" "$work/build/$l"
    cp "$src/$l"/*.[ch] "$work/src/$l/" 2>/dev/null
done
for l in lib compat proto net; do
    find "$build/$l" -name '*_la-*.o' -exec cp {} "$work/build/$l/" \;
done

run() {
    sh "$check" "$work/src" "$work/build" >"$work/out" 2>&1
}
# expect pass|fail WHAT [TEXT]: the check's verdict, and TEXT in its words.
expect() {
    run
    rc=$?
    case $1 in
    pass) [ "$rc" -eq 0 ] ;;
    fail) [ "$rc" -eq 1 ] && { [ -z "${3:-}" ] || grep -qF "$3" "$work/out"; } ;;
    esac
    if [ $? -eq 0 ]; then
        echo "ok - $2: ${1}ed"
    else
        echo "FAIL - $2: expected the check to $1, it exited $rc:"
        sed 's/^/    /' "$work/out"
        status=1
    fi
}

expect pass "the copy as built"

cp "$work/src/net/wire.c" "$work/wire.c.orig"
printf '#include "tslock_int.h"\n' >>"$work/src/net/wire.c"
expect fail "net/wire.c includes lib/tslock_int.h" \
    "FAIL net/wire.c includes lib/tslock_int.h"
cp "$work/wire.c.orig" "$work/src/net/wire.c"

cp "$work/src/proto/names.c" "$work/names.c.orig"
sed -i 's/^#include "proto.h"$/#include "compat.h"/' "$work/src/proto/names.c"
expect fail "proto/names.c includes compat/compat.h" \
    "FAIL proto/names.c includes compat/compat.h"
cp "$work/names.c.orig" "$work/src/proto/names.c"

# An upward call needs an object: a planted source, compiled alone.
plant() { # layer file symbol
    printf 'int %s(void *l);\nint planted_%s(void) { return %s(0); }\n' \
        "$3" "$1" "$3" >"$work/src/$1/$2.c"
    "$CC" -c -o "$work/build/$1/lib$1_la-$2.o" "$work/src/$1/$2.c" || {
        echo "FAIL - $CC could not compile the planted $1/$2.c"
        exit 99
    }
}
unplant() {
    rm -f "$work/src/$1/$2.c" "$work/build/$1/lib$1_la-$2.o"
}

plant net planted tslock__fair_try
expect fail "a net/ object calls tslock__fair_try of lib/" \
    "FAIL net/planted.c calls tslock__fair_try of lib/fair.c"
unplant net planted

plant compat planted tslock__guarded
expect fail "a compat/ object calls tslock__guarded of lib/" \
    "FAIL compat/planted.c calls tslock__guarded of lib/guard.c"
unplant compat planted

# A circle: net/planted.c calls tslock__send (wire.c), and wire.c calls
# planted_net back (wire.c's object rebuilt from its copy, plus a call).
plant net planted tslock__send
cp "$work/build/net/libnet_la-wire.o" "$work/wire.o.orig"
printf 'int planted_net(void);\nint tslock__planted_back(void) { return planted_net(); }\n' \
    >"$work/back.c"
"$CC" -c -o "$work/back.o" "$work/back.c" || exit 99
ld -r -o "$work/build/net/libnet_la-wire.o" "$work/wire.o.orig" "$work/back.o" || {
    echo "FAIL - ld -r could not join the planted call to wire.c's object"
    exit 99
}
expect fail "net/planted.c and net/wire.c call each other" \
    "FAIL circle of 2 files (net/planted.c net/wire.c)"
cp "$work/wire.o.orig" "$work/build/net/libnet_la-wire.o"
unplant net planted

# A circle inside lib/: lib/planted.c calls tslock__rw_exclusive_ops
# (rwlock.c), and rwlock.c calls planted_lib back.
plant lib planted tslock__rw_exclusive_ops
cp "$work/build/lib/libtslock_la-rwlock.o" "$work/rwlock.o.orig"
printf 'int planted_lib(void);\nint tslock__planted_back(void) { return planted_lib(); }\n' \
    >"$work/back.c"
"$CC" -c -o "$work/back.o" "$work/back.c" || exit 99
ld -r -o "$work/build/lib/libtslock_la-rwlock.o" "$work/rwlock.o.orig" "$work/back.o" || exit 99
expect fail "lib/planted.c and lib/rwlock.c call each other" \
    "FAIL circle of 2 files (lib/planted.c lib/rwlock.c)"
cp "$work/rwlock.o.orig" "$work/build/lib/libtslock_la-rwlock.o"
unplant lib planted

expect pass "the copy restored"
exit $status

#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# check-abi-proof.sh - shows that make check-abi tells additions from
# breakage, on a throwaway copy of the tree (never the tree itself):
#   1. make abi-baseline on the copy as it is;
#   2. a function added: make check-abi passes;
#   3. a parameter type changed (tslock_errname(int) to long long): fails;
#   4. a field added to a private struct (tslock_client): passes;
#   5. a public struct added and baselined, then a field added to it:
#      fails (tslock.h has no struct with visible fields today, so the
#      proof brings its own).
# Environment: top_srcdir, top_builddir, HIREDIS_CFLAGS, HIREDIS_LIBS.
set -u
src=$(cd "${top_srcdir:-.}" && pwd)
build=$(cd "${top_builddir:-.}" && pwd)
copy="$build/abi-proof"
log="$copy/proof.log"

if ! command -v abidiff >/dev/null 2>&1; then
    echo "abidiff not found (apt-get install abigail-tools); skipped"
    exit 77
fi
rm -rf "$copy"
mkdir -p "$copy/tree" "$copy/build"
# What building libtslock needs, mtimes kept so no autotools rerun.  From
# the layers only their sources: a by-hand build in the source tree
# leaves its objects there (lib/libtslock_la-guard.lo, .libs/, .deps/),
# and the copy's make would find them through VPATH and fail on them.
(cd "$src" && {
    printf '%s\n' configure configure.ac Makefile.am Makefile.in \
        config.h.in aclocal.m4 build-aux m4 tslock.pc.in \
        tests/check-abi.sh
    find include lib compat proto net abi -type f \
        \( -name '*.[ch]' -o -name '*.map' -o -name '*.abi' \) \
        ! -path '*/.*'
} | tar -cf - -T -) \
    | (cd "$copy/tree" && tar -xf -) || exit 99
chmod -R u+w "$copy/tree"
header="$copy/tree/include/tslock.h"
errors="$copy/tree/net/errors.c"
cp "$header" "$copy/tslock.h.orig"
cp "$errors" "$copy/errors.c.orig"

# make in the copy's build directory, quietly; output kept in the log.
mk() {
    (cd "$copy/build" && make "$@") >>"$log" 2>&1
}
restore() {
    cp "$copy/tslock.h.orig" "$header"
    cp "$copy/errors.c.orig" "$errors"
}
fail=0
# expect NAME WANT: make check-abi in the copy must exit 0 (WANT pass) or
# not (WANT fail).
expect() {
    if ! mk libtslock.la; then
        echo "FAIL - $1: the copy did not build; see $log"
        fail=1
        return
    fi
    out="$copy/check-abi.out"
    if (cd "$copy/build" && make check-abi) >"$out" 2>&1; then
        got=pass
    elif grep -q '^FAIL: the ABI' "$out"; then
        got=fail
    else
        got=error
    fi
    cat "$out" >>"$log"
    if [ "$got" = "$2" ]; then
        echo "ok - $1: make check-abi ${got}es" | sed "s/failes/fails/"
        grep -E 'summary|\[[ACD]\]|changed from|size changed' "$out" \
            | sed 's/^ */    /'
    else
        echo "FAIL - $1: make check-abi gave $got, expected $2; see $log"
        fail=1
    fi
}

(cd "$copy/build" && "$copy/tree/configure" --disable-static \
    CFLAGS="-g -O0" HIREDIS_CFLAGS="${HIREDIS_CFLAGS:-}" \
    HIREDIS_LIBS="${HIREDIS_LIBS:-}" >>"$log" 2>&1) || {
    echo "configure of the copy failed; see $log"
    exit 99
}
mk libtslock.la && mk abi-baseline || {
    echo "FAIL - make abi-baseline on the copy; see $log"
    exit 1
}
expect "baseline of the copy against itself" pass

echo 'TSLOCK_EXTERN int tslock_abi_probe_added(void);' >>"$header"
printf '\nint tslock_abi_probe_added(void)\n{\n    return 1;\n}\n' >>"$errors"
expect "a function added" pass
restore

sed -i 's/const char \*tslock_errname(int code)/const char *tslock_errname(long long code)/' \
    "$header" "$errors"
grep -q 'tslock_errname(long long code)' "$header" || {
    echo "FAIL - the signature to change was not found in tslock.h"
    exit 1
}
expect "tslock_errname(int) changed to (long long)" fail
restore

# What the user cannot see may change: the client's private structure.
internal="$copy/tree/net/net.h"
cp "$internal" "$copy/net.h.orig"
sed -i 's/^struct tslock_client {$/struct tslock_client {\n    long abi_probe_private[4];/' \
    "$internal"
expect "a field added to the private struct tslock_client" pass
cp "$copy/net.h.orig" "$internal"

printf 'struct tslock_abi_probe {\n    int a;\n};\n%s\n' \
    'TSLOCK_EXTERN int tslock_abi_probe(const struct tslock_abi_probe *p);' \
    >>"$header"
printf '\nint tslock_abi_probe(const struct tslock_abi_probe *p)\n{\n    return p->a;\n}\n' \
    >>"$errors"
mk libtslock.la && mk abi-baseline || {
    echo "FAIL - baseline with a public struct; see $log"
    exit 1
}
expect "a public struct, unchanged" pass
sed -i 's/^    int a;$/    int a;\n    long b;/' "$header"
expect "a field added to the public struct" fail
restore
exit $fail

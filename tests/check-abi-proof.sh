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
# The copy reuses the configured build: the library is linked from the
# build's own objects, and a step compiles again, with the build's own
# commands (make -n), only the objects whose code the step changed: the
# unit defining the probed functions (net/errors.c), for a change in
# tslock.h, since an exported function's types are read (abidw) from its
# defining unit; every unit that includes net/net.h (the build's .deps),
# for the private struct (then the build's objects are put back).  No
# configure and no full build: 40 s at a load of 8, where a copy
# configured and built six times took 280 s.
# Environment: top_srcdir, top_builddir, HIREDIS_LIBS (and OPENSSL_LIBS).
set -u
src=$(cd "${top_srcdir:-.}" && pwd)
build=$(cd "${top_builddir:-.}" && pwd)
copy="$build/abi-proof"
log="$copy/proof.log"
tree="$copy/tree"

if ! command -v abidiff >/dev/null 2>&1 || ! command -v abidw >/dev/null 2>&1; then
    echo "abidiff not found (apt-get install abigail-tools); skipped"
    exit 77
fi
if [ ! -f "$build/.libs/libtslock.so" ]; then
    echo "no shared library at $build/.libs/libtslock.so; skipped"
    exit 77
fi
if [ ! -f "$build/net/.libs/libnet_la-errors.o" ]; then
    echo "no shared objects under $build/net/.libs: build the library first"
    exit 99
fi
rm -rf "$copy"
mkdir -p "$tree"
# The layers' sources: a by-hand build in the source tree leaves its
# objects there, and only the sources are the copy's.
(cd "$src" && find include lib compat proto net -type f \
    \( -name '*.[ch]' -o -name '*.map' \) ! -path '*/.*' | tar -cf - -T -) \
    | (cd "$tree" && tar -xf -) || exit 99
chmod -R u+w "$tree"
# Where the build's compile commands run: as far from the copy as the
# build is from the source tree (srcdir), with its config.h and libtool.
srcdir=$(sed -n 's/^srcdir = //p' "$build/Makefile")
case $srcdir in
.) b="$tree" ;;
..) b="$tree/_b" ;;
*) b="$copy/b" ;;
esac
mkdir -p "$b"
cp "$build/config.h" "$build/libtool" "$b/" || exit 99
for l in lib compat proto net; do
    mkdir -p "$b/$l/.libs" "$b/$l/.deps"
    for o in "$build/$l"/.libs/*_la-*.o; do
        f=${o##*/}
        f=${f#*_la-}
        # An object whose source left the layer is not the library's.
        [ -f "$tree/$l/${f%.o}.c" ] && cp "$o" "$b/$l/.libs/"
    done
done
cp -r "$b" "$copy/objects.orig"
header="$tree/include/tslock.h"
errors="$tree/net/errors.c"
cp "$header" "$copy/tslock.h.orig"
cp "$errors" "$copy/errors.c.orig"

# recompile OBJECT.lo...: the build's command for each, run in the copy.
recompile() {
    w=""
    for t in "$@"; do
        s=${t%.lo}
        w="$w -W ${s%%/*}/${s#*_la-}.c"
    done
    # At -O0, as the types are what counts; two at a time, as make -j2.
    (cd "$build" && make -n $w "$@") 2>>"$log" | grep -e '--mode=compile' \
        | sed -e "s|$src|$tree|g" -e 's/ -c -o / -O0 -c -o /' >"$copy/cc.sh"
    [ "$(wc -l <"$copy/cc.sh")" -eq $# ] || return 1
    rm -rf "$copy/cc"
    mkdir "$copy/cc"
    (cd "$copy/cc" && split -l 1 "$copy/cc.sh" cc.)
    (cd "$b" && find "$copy/cc" -name "cc.*" -print0 | xargs -0 -P 2 -n 1 sh -e) \
        >>"$log" 2>&1
}
# The shared library as libtool links it: every object, the map.
link() {
    gcc_=$(sed -n 's/^CC = //p' "$build/Makefile")
    $gcc_ -shared -fPIC -g -o "$copy/libtslock.so" "$b"/*/.libs/*_la-*.o \
        -Wl,--version-script="$tree/lib/libtslock.map" \
        -Wl,-soname,libtslock.so.1 ${HIREDIS_LIBS:-} ${OPENSSL_LIBS:-} \
        -lpthread >>"$log" 2>&1
}
# abi-baseline on the copy: make abi-baseline's abidw.
baseline() {
    abidw --headers-dir "$tree/include" --no-corpus-path \
        --no-comp-dir-path --drop-undefined-syms "$copy/libtslock.so" \
        2>>"$log" | sed "s|$tree/||g" >"$copy/baseline.abi"
}
restore() {
    cp "$copy/tslock.h.orig" "$header"
    cp "$copy/errors.c.orig" "$errors"
}
fail=0
# expect NAME WANT [OBJECT.lo...]: with OBJECTs compiled again (default
# net/errors.c's), make check-abi's script on the copy must exit 0 (WANT
# pass) or not (WANT fail).
expect() {
    name=$1
    want=$2
    shift 2
    [ $# -eq 0 ] && set -- net/libnet_la-errors.lo
    if ! recompile "$@" || ! link; then
        echo "FAIL - $name: the copy did not build; see $log"
        fail=1
        return
    fi
    out="$copy/check-abi.out"
    if (cd "$copy" && top_srcdir="$tree" ABI_LIB="$copy/libtslock.so" \
        ABI_BASELINE="$copy/baseline.abi" sh "$src/tests/check-abi.sh") \
        >"$out" 2>&1; then
        got=pass
    elif grep -q '^FAIL: the ABI' "$out"; then
        got=fail
    else
        got=error
    fi
    cat "$out" >>"$log"
    if [ "$got" = "$want" ]; then
        echo "ok - $name: make check-abi ${got}es" | sed "s/failes/fails/"
        grep -E 'summary|\[[ACD]\]|changed from|size changed' "$out" \
            | sed 's/^ */    /'
    else
        echo "FAIL - $name: make check-abi gave $got, expected $want; see $log"
        fail=1
    fi
}

link && baseline || {
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
internal="$tree/net/net.h"
cp "$internal" "$copy/net.h.orig"
sed -i 's/^struct tslock_client {$/struct tslock_client {\n    long abi_probe_private[4];/' \
    "$internal"
# Every unit that includes net.h, by the build's dependency files (all of
# the library's units when it tracked none).
users=$(cd "$build" && for l in lib compat proto net; do
    for d in "$l"/.deps/*_la-*.Plo; do
        [ -f "$d" ] || continue
        o=${d##*/}
        [ -f "$b/$l/.libs/${o%.Plo}.o" ] || continue
        if grep -q 'net/net\.h' "$d" || ! grep -q '\.h' "$d"; then
            echo "$l/${o%.Plo}.lo"
        fi
    done
done)
echo "    $(echo $users | wc -w) units include net/net.h: compiled again"
expect "a field added to the private struct tslock_client" pass $users
# Back as built: the sources, and the objects the build made of them.
cp "$copy/net.h.orig" "$internal"
for l in lib compat proto net; do
    cp "$copy/objects.orig/$l"/.libs/*.o "$b/$l/.libs/"
done

printf 'struct tslock_abi_probe {\n    int a;\n};\n%s\n' \
    'TSLOCK_EXTERN int tslock_abi_probe(const struct tslock_abi_probe *p);' \
    >>"$header"
printf '\nint tslock_abi_probe(const struct tslock_abi_probe *p)\n{\n    return p->a;\n}\n' \
    >>"$errors"
recompile net/libnet_la-errors.lo && link && baseline || {
    echo "FAIL - baseline with a public struct; see $log"
    exit 1
}
expect "a public struct, unchanged" pass
sed -i 's/^    int a;$/    int a;\n    long b;/' "$header"
expect "a field added to the public struct" fail
restore
exit $fail

#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# test_java_install.sh - doc/java.md's App.java, after a from-source
# make install (into a DESTDIR), compiles and runs with only the installed
# jar named: the jar finds libtslock-jni.so where make install put it,
# with no -Dtslock.jni and no java.library.path.  A jar whose record of
# that place is removed must fail the same way a reader's would, naming
# where it looked.
set -u
top_builddir=$(cd "${top_builddir:-.}" && pwd)
top_srcdir=$(cd "${top_srcdir:-.}" && pwd)
. "$top_srcdir/tests/harness.sh"
if [ ! -f "$top_builddir/bindings/java/tslock.jar" ]; then
    echo "test_java_install: no Java binding in this build (no JDK found)"
    exit 77
fi
need_server
dir=$(mktemp -d "${TMPDIR:-/tmp}/tslock-javainst.XXXXXX") || exit 99
pid=
cleanup() {
    [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
    rm -rf "$dir"
}
th_on_exit cleanup
trap 'exit 130' INT TERM
fail=0

root=$dir/root
if ! make -C "$top_builddir" install DESTDIR="$root" >"$dir/install.log" 2>&1
then
    echo "FAIL - make install DESTDIR=... failed:"
    tail -20 "$dir/install.log"
    exit 1
fi
jar=$(find "$root" -name tslock.jar | head -1)
jnilib=$(find "$root" -name libtslock-jni.so | head -1)
libdir=$(dirname "$(find "$root" -name 'libtslock.so.*' | head -1)")
[ -n "$jar" ] && [ -n "$jnilib" ] || {
    echo "FAIL - make install put no jar ($jar) or JNI library ($jnilib)"
    exit 1
}
echo "ok - installed ${jar#"$root"} and ${jnilib#"$root"}"

# The page's App.java, as a reader copies it.
awk '/^<!-- doc-test: skip run by tests\/test_java_install.sh/ { m = 1; next }
     m && /^```java$/ { inb = 1; next }
     inb && /^```/ { exit }
     inb { print }' "$top_srcdir/doc/java.md" >"$dir/App.java"
grep -q "^public class App" "$dir/App.java" ||
    { echo "FAIL - no App.java in doc/java.md"; exit 1; }
start_unix_server "$dir/redis.sock" "$dir/redis.log"
pid=$started
cd "$dir" || exit 99
# The libtslock.so the JNI library links to: where ldconfig would find it
# after a real install.
LD_LIBRARY_PATH=$libdir
export LD_LIBRARY_PATH
# A library built with the sanitizers needs their runtimes loaded first
# into the JVM, which keeps SIGSEGV for itself.
asan=$(ldd "$top_builddir/.libs/libtslock.so" 2>/dev/null |
    sed -n 's/.*\(libasan\.so[^ ]*\) => \([^ ]*\).*/\2/p')
ubsan=$(ldd "$top_builddir/.libs/libtslock.so" 2>/dev/null |
    sed -n 's/.*\(libubsan\.so[^ ]*\) => \([^ ]*\).*/\2/p')
if [ -n "$asan" ]; then
    LD_PRELOAD="$asan${ubsan:+ $ubsan}"
    ASAN_OPTIONS=detect_leaks=0:handle_segv=0:allow_user_segv_handler=1
    export LD_PRELOAD ASAN_OPTIONS
fi
if javac -cp "$jar" App.java 2>"$dir/javac.err" &&
    REDIS_URL="unix://$dir/redis.sock" java -cp "$jar:." App \
        >"$dir/out" 2>&1 && grep -q "holding orders:42" "$dir/out"; then
    echo "ok - doc/java.md's App runs with only the installed jar named"
else
    echo "FAIL - doc/java.md's App after make install:"
    cat "$dir/javac.err" "$dir/out" 2>/dev/null | head -20
    fail=1
fi

# The control: the same jar without its record fails, and says where to
# look (not a bare "no tslock-jni in java.library.path").
mkdir "$dir/bare"
(cd "$dir/bare" && jar xf "$jar" && rm tslock/jni.properties &&
    jar cf "$dir/bare.jar" .) || exit 99
REDIS_URL="unix://$dir/redis.sock" java -cp "$dir/bare.jar:." App \
    >"$dir/out2" 2>&1
rc=$?
if [ $rc -ne 0 ] && grep -q "UnsatisfiedLinkError" "$dir/out2" &&
    grep -q "tslock.jni=" "$dir/out2"; then
    echo "ok - without the record, UnsatisfiedLinkError says what to do"
else
    echo "FAIL - a jar without its record (exit $rc):"
    head -5 "$dir/out2"
    fail=1
fi
exit $fail

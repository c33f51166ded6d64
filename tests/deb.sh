#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# deb.sh - make deb: the Debian packages built from the release
# tarball, checked by lintian, then installed into a scratch root with
# dpkg -x (this machine's own packages are never touched) and used from
# there: doc/examples/basic.c compiled against the installed header with
# pkg-config, the installed tslock run against a private redis-server, and
# a Java program against the installed tslock.jar and its JNI library.
#
#   deb.sh TARBALL        (make deb passes the one make dist wrote)
#
# Environment: top_srcdir, top_builddir, REDIS_SERVER.  Output in
# $top_builddir/deb/: the .deb files, lintian.log, build.log.
set -u
tarball=$1
src=$(cd "${top_srcdir:-.}" && pwd)
build=$(cd "${top_builddir:-.}" && pwd)
out="$build/deb"
. "$src/tests/harness.sh"
need_server

for tool in dpkg-buildpackage dh lintian fakeroot; do
    if ! command -v $tool >/dev/null 2>&1; then
        echo "deb: $tool not found (apt-get install dpkg-dev debhelper" \
            "lintian fakeroot)"
        exit 1
    fi
done
rm -rf "$out"
mkdir -p "$out"
tar -xzf "$tarball" -C "$out" || exit 1
tree="$out/$(basename "$tarball" .tar.gz)"
[ -f "$tree/debian/control" ] || {
    echo "deb: $tarball has no debian/"
    exit 1
}

# 1. Build.
start=$(date +%s)
if ! (cd "$tree" && dpkg-buildpackage -us -uc -b) >"$out/build.log" 2>&1
then
    echo "FAIL - dpkg-buildpackage; last lines of $out/build.log:"
    tail -30 "$out/build.log" | sed 's/^/    /'
    exit 1
fi
echo "ok - dpkg-buildpackage -us -uc -b in $(($(date +%s) - start)) s:"
for p in libtslock1 libtslock-dev tslock libtslock-java; do
    deb=$(ls "$out"/${p}_*.deb 2>/dev/null | head -1)
    if [ -z "$deb" ]; then
        echo "FAIL - no $p package"
        exit 1
    fi
    echo "    $(basename "$deb")"
done
status=0

# 2. lintian: no errors (warnings are listed, not fatal).
lintian --fail-on error --display-info "$out"/*.changes >"$out/lintian.log" 2>&1
if [ $? -ne 0 ]; then
    echo "FAIL - lintian reports errors:"
    status=1
else
    echo "ok - lintian: no errors"
fi
sed 's/^/    /' "$out/lintian.log"

# 3. What went where.
contents() { dpkg-deb -c "$out"/$1_*.deb | awk '{print $6}'; }
check_has() {
    if contents "$1" | grep -q "$2"; then
        echo "ok - $1 has $2"
    else
        echo "FAIL - $1 lacks $2"
        status=1
    fi
}
check_has libtslock1 'libtslock\.so\.1$'
check_has libtslock-dev 'include/tslock\.h$'
check_has libtslock-dev 'libtslock\.so$'
check_has libtslock-dev 'pkgconfig/tslock\.pc$'
check_has libtslock-dev 'man3/tslock_acquire\.3\.gz$'
check_has tslock 'bin/tslock$'
check_has tslock 'man1/tslock\.1\.gz$'
check_has tslock 'man7/tslock\.7\.gz$'
check_has libtslock-java 'usr/share/java/tslock\.jar$'
check_has libtslock-java 'usr/share/java/tslock-[0-9.]*\.jar$'
check_has libtslock-java 'jni/libtslock-jni\.so$'

# 4. Install into a scratch root and use it.
root="$out/root"
for d in "$out"/*.deb; do
    dpkg -x "$d" "$root" || exit 1
done
libdir=$(dirname "$(find "$root" -name libtslock.so.1 | head -1)")
pc=$(find "$root" -name tslock.pc | head -1)
export LD_LIBRARY_PATH="$libdir"
flags=$(PKG_CONFIG_PATH=$(dirname "$pc") PKG_CONFIG_SYSROOT_DIR="$root" \
    pkg-config --cflags --libs tslock) || {
    echo "FAIL - pkg-config tslock"
    exit 1
}
echo "ok - pkg-config --cflags --libs tslock: $flags"
# shellcheck disable=SC2086
if cc -o "$out/basic" "$src/doc/examples/basic.c" $flags; then
    echo "ok - doc/examples/basic.c compiles against the installed header"
else
    echo "FAIL - doc/examples/basic.c against the installed header"
    exit 1
fi
dir=$(mktemp -d "${TMPDIR:-/tmp}/tslock-deb.XXXXXX") || exit 1
pid=
cleanup() {
    [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
    rm -rf "$dir"
}
trap cleanup EXIT INT TERM
start_unix_server "$dir/redis.sock" "$dir/redis.log"
pid=$started
if "$out/basic" "$dir/redis.sock" deb-key >"$out/basic.out" 2>&1; then
    echo "ok - the example runs with the installed library"
else
    echo "FAIL - the example against the installed library:"
    sed 's/^/    /' "$out/basic.out"
    status=1
fi
ldd "$out/basic" | grep -q "$libdir/libtslock.so.1" || {
    echo "FAIL - the example did not load $libdir/libtslock.so.1"
    status=1
}
v=$("$root/usr/bin/tslock" --version)
echo "ok - installed tslock --version: $v"
got=$("$root/usr/bin/tslock" -u "unix://$dir/redis.sock" deb-cli -- echo held)
if [ "$got" = held ]; then
    echo "ok - installed tslock ran a command holding a lock"
else
    echo "FAIL - installed tslock KEY -- echo held gave: $got"
    status=1
fi
# The Java binding as installed: a program compiled against the jar in
# /usr/share/java, its JNI library found in the JNI directory.
jni=$(dirname "$(find "$root" -name libtslock-jni.so | head -1)")
mkdir -p "$dir/java"
cat >"$dir/java/DebSmoke.java" <<'JAVA'
public class DebSmoke {
    public static void main(String[] a) {
        try (tslock.Client c = tslock.Client.fromUrl(a[0])) {
            java.util.concurrent.locks.Lock l = c.lock("deb-java");
            l.lock();
            System.out.println("held");
            l.unlock();
        }
    }
}
JAVA
if javac -cp "$root/usr/share/java/tslock.jar" -d "$dir/java" \
    "$dir/java/DebSmoke.java" \
    && got=$(java -Djava.library.path="$jni" \
        -cp "$root/usr/share/java/tslock.jar:$dir/java" DebSmoke \
        "unix://$dir/redis.sock") && [ "$got" = held ]; then
    echo "ok - the installed tslock.jar took and released a lock"
else
    echo "FAIL - the installed tslock.jar: ${got:-no output}"
    status=1
fi
exit $status

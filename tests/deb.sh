#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# deb.sh - make deb: the seven Debian packages built from the release
# tarball, checked by lintian, then installed into a scratch root with
# dpkg -x (this machine's own packages are never touched) and used from
# there: doc/examples/basic.c compiled against the installed header with
# pkg-config, the installed tslock run against a private redis-server,
# the installed Python module imported by Debian's python3, taking and
# releasing a lock on that server, a Java program against the
# installed tslock.jar and its JNI library, the PHP extension loaded
# by Debian's php and the Ruby extension required by Debian's ruby from
# the scratch root.
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
for p in libtslock1 libtslock-dev tslock python3-tslock libtslock-java \
    php-tslock ruby-tslock; do
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
check_has python3-tslock 'python3/dist-packages/tslock/__init__\.py$'
check_has python3-tslock \
    'python3/dist-packages/tslock/_tslock\.cpython-[^/]*\.so$'
check_has libtslock-java 'usr/share/java/tslock\.jar$'
check_has libtslock-java 'usr/share/java/tslock-[0-9.]*\.jar$'
check_has libtslock-java 'jni/libtslock-jni\.so$'
check_has php-tslock 'usr/lib/php/[0-9]*/tslock\.so$'
check_has php-tslock 'etc/php/[0-9.]*/mods-available/tslock\.ini$'
check_has ruby-tslock 'usr/lib/[^/]*/ruby/vendor_ruby/[0-9.]*/tslock/tslock_ext\.so$'
check_has ruby-tslock 'usr/lib/ruby/vendor_ruby/tslock\.rb$'

# 4. Install into a scratch root and use it (tests/harness.sh).
root="$out/root"
for d in "$out"/*.deb; do
    dpkg -x "$d" "$root" || exit 1
done
use_installed "$root" "$out" || status=1

# 5. The Python module, from the scratch root, with Debian's python3 (no
# user site; the module is found only where the package put it).
pysite="$root/usr/lib/python3/dist-packages"
got=$(env -u PYTHONHOME PYTHONPATH="$pysite" PYTHONNOUSERSITE=1 \
    /usr/bin/python3 - "$dir/redis.sock" "$pysite" <<'EOF' 2>&1
import sys

import tslock

sock, site = sys.argv[1], sys.argv[2]
assert tslock.__file__.startswith(site), tslock.__file__
lock = tslock.Client(unix_socket_path=sock).lock("deb-py", timeout=5)
assert lock.acquire(blocking=False) is True
assert lock.owned() and lock.locked()
lock.release()
assert not lock.locked()
print("held and released with libtslock", tslock.library_version())
EOF
)
if [ $? -eq 0 ]; then
    echo "ok - python3-tslock: /usr/bin/python3 took and released a lock" \
        "($got)"
else
    echo "FAIL - python3-tslock from the scratch root:"
    printf '%s\n' "$got" | sed 's/^/    /'
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
# The PHP extension as installed, loaded by Debian's php from the scratch
# root with php -d extension=...
phpext=$(find "$root/usr/lib/php" -name tslock.so | head -1)
if got=$(php -n -d extension="$phpext" -r '
    $c = Tslock\Client::fromUrl($argv[1]);
    $l = $c->lock("deb-php", 5.0);
    if (!$l->acquire() || !$l->isAcquired() || !$l->release()) exit(1);
    echo "held and released with libtslock ", Tslock\LIBRARY_VERSION;
    ' "unix://$dir/redis.sock" 2>&1); then
    echo "ok - php-tslock: /usr/bin/php took and released a lock ($got)"
else
    echo "FAIL - php-tslock from the scratch root: $got"
    status=1
fi
# The Ruby extension as installed, required by Debian's ruby from the
# scratch root (its vendor directories first on the load path).
rbarch=$(dirname "$(dirname "$(find "$root/usr/lib" -name tslock_ext.so \
    | head -1)")")
if got=$(ruby -w -I "$root/usr/lib/ruby/vendor_ruby" -I "$rbarch" -e '
    require "tslock"
    where = $LOADED_FEATURES.grep(/tslock/).join(" ")
    abort "loaded #{where}" unless $LOADED_FEATURES.grep(/tslock/).all? { |f| f.start_with?(ARGV[1]) }
    l = Tslock::Client.new(url: ARGV[0]).lock("deb-ruby", ttl: 5)
    l.synchronize { abort "not owned" unless l.owned? }
    abort "held after the block" if l.locked?
    puts "held and released with libtslock #{Tslock.library_version}"
    ' "unix://$dir/redis.sock" "$root" 2>&1); then
    echo "ok - ruby-tslock: /usr/bin/ruby took and released a lock ($got)"
else
    echo "FAIL - ruby-tslock from the scratch root: $got"
    status=1
fi
exit $status

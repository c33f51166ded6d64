#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# test_java.sh - the JUnit 5 suite of the Java binding (bindings/java/test)
# against the jar and JNI library just built, on a private redis-server
# and through tests/oldredis answering as Redis 2.0, 2.2 and 2.6.0.
# Skipped (77) without JUnit's console launcher (apt-get install junit5).
# "test_java.sh --run CLASS [ARGS]" runs CLASS's main instead (make
# java-load, make bench).  $JAVA_OPTS goes to the JVM (-Xcheck:jni).
set -u
top_builddir=$(cd "${top_builddir:-.}" && pwd)
top_srcdir=$(cd "${top_srcdir:-.}" && pwd)
jar=$top_builddir/bindings/java/tslock.jar
jni=$top_builddir/bindings/java/.libs/libtslock-jni.so
junit=${JUNIT_CONSOLE:-/usr/share/java/junit-platform-console-standalone.jar}
javac=${JAVAC:-javac}
java=${JAVA:-java}
oldredis=$top_builddir/tests/oldredis
if [ ! -f "$jar" ] || [ ! -f "$jni" ]; then
    echo "test_java: $jar or $jni not built (./configure --enable-java)"
    exit 99
fi
if [ ! -f "$junit" ]; then
    echo "test_java: no JUnit console launcher at $junit (apt-get install junit5)"
    exit 77
fi
. "$top_srcdir/tests/harness.sh"
need_server
dir=$(mktemp -d "${TMPDIR:-/tmp}/tslock-java.XXXXXX") || exit 99
pids=""
cleanup() {
    for p in $pids; do
        kill "$p" 2>/dev/null
        wait "$p" 2>/dev/null
    done
    rm -rf "$dir"
}
th_on_exit cleanup
trap 'exit 1' INT TERM

# The tests, compiled against the jar as a user's code would be.
classes=$top_builddir/bindings/java/test-classes
rm -rf "$classes" && mkdir -p "$classes" || exit 99
"$javac" -Xlint:all -encoding UTF-8 -d "$classes" -cp "$jar:$junit" \
    $(find "$top_srcdir/bindings/java/test" -name '*.java') || exit 1

start_unix_server "$dir/redis.sock" "$dir/redis.log"
pids="$started"
props="-Dtslock.url=unix://$dir/redis.sock -Dtslock.socket=$dir/redis.sock"
# Two more servers: with the first, the three masters of a Redlock.
masters="unix://$dir/redis.sock"
for m in 2 3; do
    start_unix_server "$dir/redis-m$m.sock" "$dir/redis-m$m.log"
    pids="$pids $started"
    masters="$masters,unix://$dir/redis-m$m.sock"
done
props="$props -Dtslock.masters=$masters"
# The proxies: old servers as REDIS-VERSIONS.md records them.
if [ -x "$oldredis" ]; then
    for v in 2.0 2.2 2.6.0; do
        "$oldredis" --emulate "$v" --listen "$dir/redis-$v.sock" \
            --upstream "$dir/redis.sock" </dev/null &
        pids="$pids $!"
        n=0
        until "$cli" -s "$dir/redis-$v.sock" ping >/dev/null 2>&1; do
            n=$((n + 1))
            [ $n -gt 200 ] && { echo "oldredis $v did not start"; exit 1; }
            sleep 0.05
        done
        props="$props -Dtslock.url.$v=unix://$dir/redis-$v.sock"
        props="$props -Dtslock.socket.$v=$dir/redis-$v.sock"
    done
fi
# A server on TLS only, client certificates required, with a CA and
# certificates made here (TlsTest; skipped without openssl).
if command -v openssl >/dev/null 2>&1; then
    c="$dir/pki"
    mkdir -p "$c"
    ossl() { openssl "$@" >/dev/null 2>&1; }
    for n in ca other server client; do
        ossl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 \
            -out "$c/$n.key"
    done
    ossl req -x509 -new -key "$c/ca.key" -out "$c/ca.crt" -days 2 \
        -subj "/CN=tslock test CA"
    ossl req -x509 -new -key "$c/other.key" -out "$c/other.crt" -days 2 \
        -subj "/CN=some other CA"
    echo "subjectAltName=DNS:localhost,IP:127.0.0.1" >"$c/server.ext"
    echo "extendedKeyUsage=clientAuth" >"$c/client.ext"
    for n in server client; do
        ossl req -new -key "$c/$n.key" -out "$c/$n.csr" -subj "/CN=$n"
        ossl x509 -req -in "$c/$n.csr" -CA "$c/ca.crt" -CAkey "$c/ca.key" \
            -CAcreateserial -days 2 -out "$c/$n.crt" -extfile "$c/$n.ext"
    done
    for try in 1 2 3 4 5; do
        tport=$((21000 + ($$ * 13 + try * 911) % 15000))
        "$server" --port 0 --tls-port $tport --bind 127.0.0.1 \
            --unixsocket "$dir/tls.sock" --tls-cert-file "$c/server.crt" \
            --tls-key-file "$c/server.key" --tls-ca-cert-file "$c/ca.crt" \
            --tls-auth-clients yes --save '' --appendonly no \
            --dir "$c" --logfile "$dir/tls.log" &
        tpid=$!
        th_track $tpid
        n=0
        while kill -0 $tpid 2>/dev/null && [ $n -le 200 ] \
            && ! "$cli" -s "$dir/tls.sock" ping >/dev/null 2>&1; do
            n=$((n + 1))
            sleep 0.05
        done
        kill -0 $tpid 2>/dev/null && break
        wait $tpid 2>/dev/null
        tpid=
    done
    if [ -n "$tpid" ]; then
        pids="$pids $tpid"
        q="ssl_certfile=$c/client.crt&ssl_keyfile=$c/client.key"
        props="$props -Dtslock.tlsurl=rediss://localhost:$tport?ssl_ca_certs=$c/ca.crt&$q"
        props="$props -Dtslock.tlsurl.wrongca=rediss://localhost:$tport?ssl_ca_certs=$c/other.crt&$q"
    fi
fi
LD_LIBRARY_PATH=$top_builddir/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export LD_LIBRARY_PATH
# A library built with the sanitizers needs their runtimes loaded first
# into a JVM built without them.  The JVM handles SIGSEGV itself (its
# implicit null checks), so ASan must leave that signal alone, and the
# JVM's own allocations are not leak-checked.
asan=$(ldd "$top_builddir/.libs/libtslock.so" 2>/dev/null \
    | sed -n 's/.*\(libasan\.so[^ ]*\) => \([^ ]*\).*/\2/p')
ubsan=$(ldd "$top_builddir/.libs/libtslock.so" 2>/dev/null \
    | sed -n 's/.*\(libubsan\.so[^ ]*\) => \([^ ]*\).*/\2/p')
if [ -n "$asan" ]; then
    LD_PRELOAD="$asan${ubsan:+ $ubsan}"
    ASAN_OPTIONS=detect_leaks=0:handle_segv=0:allow_user_segv_handler=1
    export LD_PRELOAD ASAN_OPTIONS
fi
jvm="${JAVA_OPTS:-} -Dtslock.jni=$jni $props"
if [ "${1:-}" = --run ]; then
    main=$2
    shift 2
    # shellcheck disable=SC2086
    "$java" $jvm -cp "$jar:$classes:$junit" "$main" "$@"
    exit
fi
# shellcheck disable=SC2086
"$java" $jvm -jar "$junit" --disable-banner --details=tree \
    --fail-if-no-tests -cp "$jar:$classes" \
    --include-classname='.*Test' --scan-classpath "$classes"

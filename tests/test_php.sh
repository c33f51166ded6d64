#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# test_php.sh - the PHPUnit suite of the tslock PHP extension
# (bindings/php/tests) against the library just built.  The extension is
# built as its users build it, phpize && ./configure && make, in
# $top_builddir/bindings/php/phpize (kept between runs: only make runs
# again), against this tree's libtslock; then Debian's phpunit runs under
# php -d extension=... with a redis-server started here in a temp dir
# (and tests/oldredis in front of it as 2.0, 2.2 and 2.6.0 when built,
# and a TLS-only one with certificates made with openssl),
# stopped by its pid on exit.  Skipped (77) without php-dev or phpunit.
# "test_php.sh --run SCRIPT [ARG...]" runs SCRIPT with the extension
# instead, against the same servers.
set -u
top_builddir=$(cd "${top_builddir:-.}" && pwd)
top_srcdir=$(cd "${top_srcdir:-.}" && pwd)
for tool in phpize php-config php phpunit; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        echo "test_php: no $tool (apt-get install php-dev php-cli phpunit)"
        exit 77
    fi
done
if ! php -r 'exit(extension_loaded("redis") ? 0 : 1);'; then
    echo "test_php: no phpredis (apt-get install php-redis)"
    exit 77
fi
if [ ! -f /usr/share/php/Predis/Autoloader.php ] \
    || [ ! -f /usr/share/php/Symfony/Component/Lock/autoload.php ]; then
    echo "test_php: no predis or Symfony Lock (apt-get install php-predis" \
        "php-symfony-lock)"
    exit 77
fi
lib=$top_builddir/.libs/libtslock.so
if [ ! -f "$lib" ]; then
    echo "test_php: $lib not built"
    exit 99
fi

# The extension, built with phpize as a user builds it.
build=$top_builddir/bindings/php/phpize
mkdir -p "$build/src" || exit 99
cp -p "$top_srcdir/bindings/php/config.m4" "$build/" || exit 99
for f in "$top_srcdir"/bindings/php/src/*; do
    cmp -s "$f" "$build/src/${f##*/}" || cp -p "$f" "$build/src/" || exit 99
done
if [ ! -f "$build/Makefile" ] || [ "$build/config.m4" -nt "$build/Makefile" ]
then
    (cd "$build" && phpize >phpize.log 2>&1 \
        && ./configure --with-tslock="$top_builddir" \
            CPPFLAGS="-I$top_srcdir/include" >configure.log 2>&1) || {
        echo "test_php: phpize/configure failed:"
        tail -20 "$build/configure.log" "$build/phpize.log" 2>/dev/null
        exit 99
    }
fi
if ! (cd "$build" && make CFLAGS="-O2 -g -Wall -Wextra -Wno-unused-parameter \
        -Werror" >make.log 2>&1); then
    echo "test_php: the extension did not build:"
    grep -E "error|warning" "$build/make.log" | head -40
    exit 1
fi
ext=$build/modules/tslock.so

LD_LIBRARY_PATH=$top_builddir/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export LD_LIBRARY_PATH
# A library built with the sanitizers needs their runtimes loaded first
# into a php built without them; PHP's own allocations are not checked.
asan=$(ldd "$lib" 2>/dev/null \
    | sed -n 's/.*\(libasan\.so[^ ]*\) => \([^ ]*\).*/\2/p')
ubsan=$(ldd "$lib" 2>/dev/null \
    | sed -n 's/.*\(libubsan\.so[^ ]*\) => \([^ ]*\).*/\2/p')
if [ -n "$asan" ]; then
    # Debian's php loads every extension (opcache, phpredis, ours) with
    # dlopen(RTLD_DEEPBIND), which the sanitizer runtimes refuse
    # (google/sanitizers#611): a sanitized libtslock cannot be loaded
    # into it at all.  The plain build runs this test.
    echo "test_php: skipped in a sanitizer build: php loads extensions" \
        "with RTLD_DEEPBIND, which ASan cannot serve (the plain build" \
        "runs it)"
    exit 77
fi

# The servers.
dir=$(mktemp -d "${TMPDIR:-/tmp}/tslock-php.XXXXXX") || exit 99
pids=""
cleanup() {
    for pid in $pids; do
        kill "$pid" 2>/dev/null
    done
    for pid in $pids; do
        wait "$pid" 2>/dev/null
    done
    rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
redis=${REDIS_SERVER:-redis-server}
cat >"$dir/redis.conf" <<CONF
port 0
unixsocket $dir/redis.sock
unixsocketperm 700
dir $dir
save ""
appendonly no
daemonize no
CONF
"$redis" "$dir/redis.conf" >"$dir/redis.log" 2>&1 </dev/null &
pids="$!"
i=0
until [ -S "$dir/redis.sock" ] \
    && php -r '$r = new Redis(); $r->connect($argv[1]); $r->ping();' \
        "$dir/redis.sock" 2>/dev/null; do
    i=$((i + 1))
    if [ $i -gt 200 ]; then
        echo "test_php: redis-server did not start:"
        cat "$dir/redis.log"
        exit 99
    fi
    sleep 0.05
done
TSLOCK_PHP_SOCKET=$dir/redis.sock
TSLOCK_PHP_OLD=""
oldredis=$top_builddir/tests/oldredis
if [ -x "$oldredis" ]; then
    for v in 2.0.5 2.2.15 2.6.0; do
        fifo=$dir/ready-$v
        mkfifo "$fifo" || exit 99
        "$oldredis" --emulate "$v" --listen "$dir/redis-$v.sock" \
            --upstream "$dir/redis.sock" --ready-fd 3 3>"$fifo" \
            </dev/null &
        pids="$pids $!"
        read -r ready <"$fifo"
        case $ready in
        ready*) TSLOCK_PHP_OLD="$TSLOCK_PHP_OLD $v=$dir/redis-$v.sock" ;;
        *)
            echo "test_php: oldredis --emulate $v did not become ready"
            exit 99
            ;;
        esac
    done
fi
# A TLS-only server requiring client certificates, with a CA (and a
# stranger CA) and certificates made here with openssl, for TlsTest's
# stream options (skipped without openssl).
TSLOCK_PHP_TLS=""
if command -v openssl >/dev/null 2>&1; then
    pki=$dir/pki
    mkdir "$pki" || exit 99
    key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 \
        -out "$pki/$1.key" 2>/dev/null; }
    for n in ca stranger server client; do key $n; done
    for n in ca stranger; do
        openssl req -x509 -new -key "$pki/$n.key" -out "$pki/$n.crt" -days 2 \
            -subj "/CN=tslock php test $n" 2>/dev/null
    done
    printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\n' >"$pki/server.ext"
    printf 'extendedKeyUsage=clientAuth\n' >"$pki/client.ext"
    for n in server client; do
        openssl req -new -key "$pki/$n.key" -out "$pki/$n.csr" \
            -subj "/CN=$n" 2>/dev/null
        openssl x509 -req -in "$pki/$n.csr" -CA "$pki/ca.crt" \
            -CAkey "$pki/ca.key" -CAcreateserial -days 2 -out "$pki/$n.crt" \
            -extfile "$pki/$n.ext" 2>/dev/null
    done
    for try in 1 2 3 4 5; do
        port=$((20000 + ($$ * 7 + try * 1013) % 20000))
        "$redis" --port 0 --tls-port "$port" --bind 127.0.0.1 \
            --unixsocket "$dir/tls.sock" --tls-cert-file "$pki/server.crt" \
            --tls-key-file "$pki/server.key" --tls-ca-cert-file "$pki/ca.crt" \
            --tls-auth-clients yes --save '' --appendonly no --dir "$pki" \
            >"$dir/tls.log" 2>&1 </dev/null &
        tls_pid=$!
        i=0
        until [ -S "$dir/tls.sock" ] || ! kill -0 $tls_pid 2>/dev/null \
            || [ $i -gt 200 ]; do
            i=$((i + 1))
            sleep 0.05
        done
        if kill -0 $tls_pid 2>/dev/null && [ -S "$dir/tls.sock" ]; then
            pids="$pids $tls_pid"
            TSLOCK_PHP_TLS="localhost:$port:$pki"
            break
        fi
        wait $tls_pid 2>/dev/null
    done
fi
TSLOCK_PHP_EXT=$ext
TSLOCK_PHP_BENCH_C=""
for b in "$top_builddir/tests/.libs/bench_binding" \
    "$top_builddir/tests/bench_binding"; do
    if [ -x "$b" ] && [ -z "$TSLOCK_PHP_BENCH_C" ]; then
        TSLOCK_PHP_BENCH_C=$b
    fi
done
export TSLOCK_PHP_SOCKET TSLOCK_PHP_OLD TSLOCK_PHP_EXT TSLOCK_PHP_BENCH_C \
    TSLOCK_PHP_TLS
export TSLOCK_SRCDIR="$top_srcdir"

if [ "${1:-}" = --run ]; then
    shift
    php -d extension="$ext" "$@"
    exit
fi
cd "$dir" || exit 99
php -d extension="$ext" /usr/bin/phpunit --do-not-cache-result \
    --bootstrap "$top_srcdir/bindings/php/tests/bootstrap.php" "$@" \
    "$top_srcdir/bindings/php/tests"

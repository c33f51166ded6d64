#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# test_tls.sh - rediss:// against Debian's redis-server with TLS, with a
# CA, server and client certificates this script makes with openssl (an
# expired one and one for another name too): every scheme through TLS, the
# tool's own connections (survey, watch), a waiting acquire's subscriber,
# Redlock over three rediss:// URLs, Sentinel (TLS to the sentinel and to
# the master it names), a Cluster of three TLS masters (redirects
# included), plain Unix and TCP unaffected, each error with its code and
# message, and the secrets kept out of ps and of every message.  POSIX sh.
set -u

tool="${top_builddir:-.}/tools/tslock"
. "${top_srcdir:-.}/tests/harness.sh"
need_server
if [ ! -x "$tool" ]; then
    echo "no tool at $tool"
    exit 1
fi
openssl=$(command -v openssl) || {
    echo "openssl not found; skipped"
    exit 77
}
if "$tool" -u rediss://localhost status k 2>&1 | grep -q "without TLS"; then
    echo "tslock built without TLS; skipped"
    exit 77
fi

dir=$(mktemp -d /tmp/tslock-tls.XXXXXX) || exit 1
pids=
cleanup() {
    for p in $pids; do
        kill "$p" 2>/dev/null && wait "$p" 2>/dev/null
    done
    rm -rf "$dir"
}
th_on_exit cleanup
trap 'exit 130' INT TERM
out="$dir/out"
err="$dir/err"

# ---------------------------------------------------------- certificates
# EC keys (fast), signed with `openssl ca`, which can backdate an expired
# certificate (-startdate/-enddate) on OpenSSL 3.0.
c="$dir/pki"
mkdir -p "$c/db"
: >"$c/db/index"
echo 01 >"$c/db/serial"
cat >"$c/ca.cnf" <<EOF
[ca]
default_ca = d
[d]
database = $c/db/index
serial = $c/db/serial
new_certs_dir = $c/db
default_md = sha256
policy = p
unique_subject = no
[p]
commonName = supplied
[server]
subjectAltName = DNS:localhost,IP:127.0.0.1
[wrong]
subjectAltName = DNS:wrong.example
[client]
extendedKeyUsage = clientAuth
EOF
ec() { "$openssl" genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 \
    -out "$1" 2>/dev/null && chmod 600 "$1"; }
# sign NAME CN EXT [START END]: $c/NAME.crt from a new key $c/NAME.key.
sign() {
    ec "$c/$1.key"
    "$openssl" req -new -key "$c/$1.key" -out "$c/$1.csr" -subj "/CN=$2" \
        2>/dev/null
    if [ $# -gt 3 ]; then
        set -- "$1" "$2" "$3" -startdate "$4" -enddate "$5"
    else
        set -- "$1" "$2" "$3" -days 2
    fi
    n=$1
    e=$3
    shift 3
    "$openssl" ca -batch -config "$c/ca.cnf" -cert "$c/ca.crt" \
        -keyfile "$c/ca.key" -in "$c/$n.csr" -out "$c/$n.crt" \
        -extensions "$e" -notext "$@" >/dev/null 2>&1
}
ec "$c/ca.key"
"$openssl" req -x509 -new -key "$c/ca.key" -out "$c/ca.crt" -days 2 \
    -subj "/CN=tslock test CA" 2>/dev/null
ec "$c/other.key"
"$openssl" req -x509 -new -key "$c/other.key" -out "$c/other.crt" -days 2 \
    -subj "/CN=some other CA" 2>/dev/null
sign server localhost server
sign wrong wrong.example wrong
sign expired localhost server 20200101000000Z 20200201000000Z
sign client "tslock client" client
# The client key again, encrypted with a passphrase.
"$openssl" pkey -in "$c/client.key" -out "$c/client-enc.key" -aes256 \
    -passout pass:KEYSECRET 2>/dev/null
chmod 600 "$c/client-enc.key"
if [ ! -s "$c/expired.crt" ] || [ ! -s "$c/client.crt" ]; then
    echo "could not make the certificates"
    exit 1
fi

# ------------------------------------------------------------- servers
sock="$dir/redis.sock"
tls_conf() {
    echo "tls-cert-file $c/server.crt"
    echo "tls-key-file $c/server.key"
    echo "tls-ca-cert-file $c/ca.crt"
}
# A port free now, from $1: ours only once the server answers with our
# directory (as harness.sh's start_tcp_server checks).
port_base=$((21000 + ($$ * 7) % 15000))
# start NAME EXTRA...: redis-server with TLS on port_base+k, a plain port
# beside it, and a Unix socket $dir/NAME.sock; its ports in tport, pport.
start() {
    name=$1
    shift
    for try in 1 2 3 4 5 6 7 8; do
        tport=$((port_base + try * 37))
        pport=$((tport + 1))
        port_base=$((port_base + 400))
        # A fresh directory each try: no nodes.conf of a failed one.
        rm -rf "$dir/$name"
        mkdir -p "$dir/$name"
        { tls_conf; printf '%s\n' "$@"; } >"$dir/$name/extra.conf"
        "$server" "$dir/$name/extra.conf" --port "$pport" \
            --bind 127.0.0.1 127.0.0.2 \
            --tls-port "$tport" --unixsocket "$dir/$name.sock" --save '' \
            --appendonly no --dir "$dir/$name" \
            --logfile "$dir/$name/log" &
        started=$!
        n=0
        while kill -0 "$started" 2>/dev/null && [ $n -le 200 ]; do
            if [ "$("$cli" -s "$dir/$name.sock" config get dir 2>/dev/null \
                | tail -1)" = "$(cd "$dir/$name" && pwd -P)" ]; then
                pids="$pids $started"
                th_track "$started"
                return 0
            fi
            n=$((n + 1))
            sleep 0.05
        done
        kill "$started" 2>/dev/null
        wait "$started" 2>/dev/null
    done
    echo "redis-server $name did not start; its last log lines:"
    tail -5 "$dir/$name/log" 2>/dev/null | sed 's/^/    /'
    exit 1
}
start main "tls-auth-clients yes"
T=$tport
P=$pport
sock="$dir/main.sock"
rcli() { "$cli" -s "$sock" "$@"; }

CA="ssl_ca_certs=$c/ca.crt"
CERT="ssl_certfile=$c/client.crt&ssl_keyfile=$c/client.key"
U="rediss://localhost:$T?$CA&$CERT"
TLSOPT="--tls --cacert $c/ca.crt --cert $c/client.crt --key $c/client.key"

not_in_err() { ! grep -q -- "$1" "$err"; }
gone() { [ "$(rcli exists "$1")" = 0 ]; }

# ------------------------------------------------------- it works
t "rediss:// with a client certificate: COMMAND runs" 0 \
    $tool -u "$U" tk -- sh -c 'echo held'
check "rediss://: COMMAND ran" has held "$out"
check "rediss://: released" gone tk
check "rediss://: the server saw a TLS client" \
    eval 'rcli info stats | grep -q "^total_connections_received"'
for m in token timestamp bridge auto; do
    t "-m $m over TLS" 0 $tool -u "$U" -m $m "tk-$m" -- true
    check "-m $m over TLS: released" gone "tk-$m"
done
t "--renew over TLS: the lease outlives its ttl" 0 $tool -u "$U" -t 300 \
    -r rnk -- sh -c 'sleep 1; echo renewed'
check "--renew over TLS: no warning" eval '[ ! -s "$err" ] && has renewed "$out"'
t "--fair over TLS" 0 $tool -u "$U" --fair tkf -- true
t "--shared over TLS" 0 $tool -u "$U" --shared tkr -- true
t "--permits over TLS" 0 $tool -u "$U" --permits 2 tks -- true
t "redis:// with --tls --cacert --cert --key (redis-cli's names)" 0 \
    $tool -u "redis://localhost:$T" $TLSOPT tk -- true
t "acquire over TLS prints a handle" 0 $tool -u "$U" acquire th
handle=$(cat "$out")
t "release over TLS with the handle" 0 $tool -u "$U" release th "$handle"
t "survey over TLS" 0 $tool -u "$U" survey
check "survey over TLS: its summary" has "keys" "$out"
t "top --once over TLS" 0 $tool -u "$U" top --once --no-monitor
check "top --once over TLS: its totals line" has "locks" "$out"
t "survey --since over TLS" 0 $tool -u "$U" survey --since 1h
# The exporter's scrape and its MONITOR stream over TLS: tslock_up is 1
# and a legacy SETNX of a stamp, sent after MONITOR is on, is counted.
if command -v curl >/dev/null 2>&1; then
    xport=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    $tool -u "$U" exporter --listen "127.0.0.1:$xport" \
        >"$dir/exporter.out" 2>"$dir/exporter.err" &
    xpid=$!
    n=0
    until rcli client list | grep -q "cmd=monitor"; do
        n=$((n + 1))
        [ $n -gt 1000 ] && break
        sleep 0.01
    done
    rcli setnx "legacy:tls" "$(($(date +%s) + 60))" >/dev/null
    n=0
    until curl -sf "http://127.0.0.1:$xport/metrics" >"$dir/metrics.txt" \
        && grep -q '^tslock_legacy_writes_total{.*prefix="legacy".*} 1$' \
            "$dir/metrics.txt"; do
        n=$((n + 1))
        [ $n -gt 100 ] && break
        sleep 0.1
    done
    check "exporter over TLS: tslock_up is 1" \
        grep -q '^tslock_up{.*} 1$' "$dir/metrics.txt"
    check "exporter over TLS: the legacy SETNX seen over MONITOR" \
        grep -q '^tslock_legacy_writes_total{.*prefix="legacy".*} 1$' \
        "$dir/metrics.txt"
    kill "$xpid" 2>/dev/null
    wait "$xpid" 2>/dev/null
    rcli del legacy:tls tslock:legacy-writers tslock:legacy-recorders >/dev/null
fi
# watch reads MONITOR over TLS by poll(2): the lines of a lock taken
# once it is watching (its MONITOR seen by the server) must all come.
$tool -u "$U" watch --for 20000 wk >"$dir/watch.out" 2>"$dir/watch.err" &
wpid=$!
n=0
until rcli client list | grep -q "cmd=monitor"; do
    n=$((n + 1))
    [ $n -gt 500 ] && break
    sleep 0.01
done
t "a lock while watched over TLS" 0 $tool -u "$U" wk -- true
await 'del "wk"' "$dir/watch.out"
kill -INT $wpid 2>/dev/null
wait $wpid
cp "$dir/watch.out" "$out"
cp "$dir/watch.err" "$err"
check "watch over TLS: saw set, the release's get and del" \
    eval 'has "token set \"wk\"" "$out" && has "del \"wk\"" "$out"'
check "watch over TLS: its summary" has "summary: .* token=1 danger=0" "$out"
t "--once-per over TLS" 0 $tool -u "$U" --once-per 1d ok1 -- sh -c 'echo ran'
t "--once-per over TLS: the second run of the period skips" 3 \
    $tool -u "$U" --once-per 1d ok1 -- sh -c 'echo ran'
t "history over TLS" 0 $tool -u "$U" history ok1
check "history over TLS: the run is listed, ok" has " ok  " "$out"
t "check over TLS" 0 $tool -u "$U" check ck
check "check over TLS: lists commands" has "ok" "$out"

# A waiter over TLS, woken through its subscriber connection (also TLS).
rm -f "$dir/go" "$dir/held"
$tool -u "$U" wt -- sh -c "touch $dir/held; while [ ! -e $dir/go ]; do sleep 0.01; done" \
    >/dev/null 2>&1 &
holder=$!
await_file "$dir/held"
$tool -u "$U" -w 10000 wt -- sh -c 'echo waited' >"$dir/wout" 2>"$dir/werr" &
waiter=$!
n=0
until rcli client list | grep -q "cmd=subscribe"; do
    n=$((n + 1))
    [ $n -gt 500 ] && break
    sleep 0.01
done
check "waiter over TLS: subscribed (a TLS subscriber connection)" \
    eval 'rcli client list | grep -q "cmd=subscribe"'
touch "$dir/go"
wait $holder
wait $waiter
wrc=$?
cp "$dir/werr" "$err"
cp "$dir/wout" "$out"
check "waiter over TLS: got the lock after the release" \
    eval '[ $wrc -eq 0 ] && grep -q waited "$out"'

# Plain text beside it is unaffected.
t "unix:// plain, same server" 0 $tool -u "unix://$sock" pk -- true
t "redis:// plain port, same server" 0 $tool -u "redis://127.0.0.1:$P" pk -- true
check "plain: nothing on stderr" eval '[ ! -s "$err" ]'

# ------------------------------------------------------- the library
api="${top_builddir:-.}/tests/tls_api"
if [ -x "$api" ]; then
    th_begin "tls_api"
    "$api" "$T" "$P" "$sock" "$c/ca.crt" "$c/client.crt" "$c/client.key" \
        "$c/other.crt" >"$out" 2>"$err"
    while IFS= read -r line; do
        case $line in
        "ok - "*) ok "library: ${line#ok - }" ;;
        "FAIL - "*) not_ok "library: ${line#FAIL - }" ;;
        esac
    done <"$out"
    grep -q "^ok - " "$out" || not_ok "tests/tls_api ran"
else
    not_ok "tests/tls_api built"
fi

ex="${top_builddir:-.}/doc/examples/tls"
if [ -x "$ex" ]; then
    t "doc/examples/tls.c runs" 0 "$ex" localhost "$T" "$c/ca.crt" \
        "$c/client.crt" "$c/client.key" ex-key
    check "doc/examples/tls.c: held over TLS" has "held over TLS" "$out"
    t "doc/examples/tls.c, wrong CA: TSLOCK_ETLS" 1 "$ex" localhost "$T" \
        "$c/other.crt" "$c/client.crt" "$c/client.key" ex-key
    check "doc/examples/tls.c, wrong CA: its words" \
        has "TSLOCK_ETLS: TLS handshake with localhost:$T: certificate verify failed" "$err"
fi

# ------------------------------------------------------- Redlock
t "Redlock over three rediss:// URLs" 0 $tool \
    -u "rediss://localhost:$T/1?$CA&$CERT" \
    -u "rediss://localhost:$T/2?$CA&$CERT" \
    -u "rediss://localhost:$T/3?$CA&$CERT" rl -- sh -c 'echo quorum'
check "Redlock over TLS: COMMAND ran" has quorum "$out"
t "Redlock with --tls options over three redis:// URLs" 0 $tool $TLSOPT \
    -u "redis://localhost:$T/1" -u "redis://localhost:$T/2" \
    -u "redis://localhost:$T/3" rl -- true

# ------------------------------------------------------- the errors
t "wrong CA: exit 78" 78 $tool -u "rediss://localhost:$T?ssl_ca_certs=$c/other.crt&$CERT" ek -- true
check "wrong CA: TSLOCK_ETLS, OpenSSL's verify result" \
    eval 'one_line "TSLOCK_ETLS: TLS handshake with localhost:'$T': certificate verify failed: \(self-signed certificate in certificate chain\|unable to get local issuer certificate\)"'
check "wrong CA: names what to fix" has "not signed by a CA trusted here" "$err"

t "plain text to the TLS port: exit 69" 69 $tool -u "redis://localhost:$T" ek -- true
check "plain text to the TLS port: the server may require TLS" \
    eval 'one_line "TSLOCK_EIO: .*the server may require TLS: use rediss:// or --tls"'

t "TLS to a plain-text port: exit 78" 78 $tool --timeout 400 \
    -u "rediss://localhost:$P?$CA" ek -- true
check "TLS to a plain-text port: says so" \
    eval 'one_line "TSLOCK_ETLS: TLS handshake with localhost:'$P': the server did not answer in TLS .*is it a plain-text port"'

t "no client certificate where one is required: exit 78" 78 \
    $tool -u "rediss://localhost:$T?$CA" ek -- true
check "no client certificate: says it is required" \
    eval 'one_line "TSLOCK_ETLS: .*certificate required.*--cert and --key"'

t "name mismatch (127.0.0.2 is not in the certificate): exit 78" 78 \
    $tool -u "rediss://127.0.0.2:$T?$CA&$CERT" ek -- true
check "name mismatch: OpenSSL's words" \
    eval 'one_line "TSLOCK_ETLS: .*certificate verify failed: IP address mismatch"'

rcli config set tls-cert-file "$c/wrong.crt" tls-key-file "$c/wrong.key" >/dev/null
t "a certificate for another name: exit 78" 78 $tool -u "$U" ek -- true
check "another name: Hostname mismatch named" \
    eval 'one_line "TSLOCK_ETLS: .*certificate verify failed: hostname mismatch"'
t "--sni wrong.example checks that name instead" 0 $tool -u "$U" \
    --sni wrong.example ek -- true
t "ssl_check_hostname=false skips the name" 0 $tool \
    -u "$U&ssl_check_hostname=false" ek -- true
rcli config set tls-cert-file "$c/expired.crt" tls-key-file "$c/expired.key" >/dev/null
t "an expired certificate: exit 78" 78 $tool -u "$U" ek -- true
check "expired: OpenSSL's words" \
    eval 'one_line "TSLOCK_ETLS: .*certificate verify failed: certificate has expired; the server.s certificate is past its end date"'
t "--insecure connects anyway" 0 $tool -u "$U" --insecure ek -- true
check "--insecure warns" has "warning: --insecure" "$err"
t "ssl_cert_reqs=none connects anyway" 0 $tool -u "$U&ssl_cert_reqs=none" ek -- true
rcli config set tls-cert-file "$c/server.crt" tls-key-file "$c/server.key" >/dev/null

t "a missing CA file: exit 78" 78 $tool \
    -u "rediss://localhost:$T?ssl_ca_certs=$dir/none.crt&$CERT" ek -- true
check "a missing CA file: named" has "cannot load the CA certificates from '$dir/none.crt'" "$err"

# ------------------------------------------------------- secrets
cp "$c/client.key" "$dir/open.key"
chmod 644 "$dir/open.key"
t "a key file others may read: works" 0 $tool -u "redis://localhost:$T" \
    --tls --cacert "$c/ca.crt" --cert "$c/client.crt" --key "$dir/open.key" \
    sk -- true
check "a key file others may read: a warning" \
    eval 'one_line "warning: the key file .*open.key. is readable by others"'

t "a URL's ssl_keyfile= others may read: works" 0 $tool \
    -u "rediss://localhost:$T?$CA&ssl_certfile=$c/client.crt&ssl_keyfile=$dir/open.key" \
    sk -- true
check "a URL's ssl_keyfile= others may read: a warning" \
    eval 'one_line "warning: the key file .*open.key. is readable by others"'

t "encrypted key, passphrase from \$TSLOCK_TLS_KEY_PASSWORD" 0 \
    env TSLOCK_TLS_KEY_PASSWORD=KEYSECRET $tool -u "redis://localhost:$T" \
    --tls --cacert "$c/ca.crt" --cert "$c/client.crt" \
    --key "$c/client-enc.key" sk -- true
t "encrypted key, wrong passphrase: exit 78" 78 \
    env TSLOCK_TLS_KEY_PASSWORD=NOTKEYSECRET $tool -u "redis://localhost:$T" \
    --tls --cacert "$c/ca.crt" --cert "$c/client.crt" \
    --key "$c/client-enc.key" sk -- true
check "wrong passphrase: names the key" \
    eval 'one_line "TSLOCK_ETLS: TLS: cannot load the client key .*client-enc.key"'
check "wrong passphrase: never shown" not_in_err NOTKEYSECRET

rcli acl setuser tlsuser on '>SECRETPW' '~*' '&*' '+@all' >/dev/null
show_cmdline='tr "\0" " " </proc/$PPID/cmdline'
no_secret() { ! grep -q -e SECRETPW -e KEYSECRET "$out" "$err"; }
t "-a PASSWORD: COMMAND runs" 0 $tool -u "$U" --user tlsuser -a SECRETPW \
    sk -- sh -c "$show_cmdline"
check "-a PASSWORD: not in /proc/PID/cmdline" no_secret
check "-a PASSWORD: cmdline shows -a ***" has "-a \*\*\* " "$out"
check "-a PASSWORD: warned as redis-cli does" \
    has "password in -u/--url or -a on the command line" "$err"
t "URL password and ssl_password=: COMMAND runs" 0 $tool \
    -u "rediss://tlsuser:SECRETPW@localhost:$T?$CA&ssl_certfile=$c/client.crt&ssl_keyfile=$c/client-enc.key&ssl_password=KEYSECRET" \
    sk -- sh -c "$show_cmdline"
check "URL secrets: neither in /proc/PID/cmdline" no_secret
check "URL secrets: shown as ***" has "tlsuser:\*\*\*@.*ssl_password=\*\*\*" "$out"
t "\$REDISCLI_AUTH keeps working, no warning" 0 \
    env REDISCLI_AUTH=SECRETPW $tool -u "$U" --user tlsuser sk -- true
check "\$REDISCLI_AUTH: nothing on stderr" eval '[ ! -s "$err" ]'
t "wrong password over TLS: exit 69" 69 $tool --no-auth-warning \
    -u "rediss://tlsuser:NOTSECRETPW@localhost:$T?$CA&$CERT" sk -- true
check "wrong password: TSLOCK_EAUTH, the password not shown" \
    eval 'one_line TSLOCK_EAUTH && ! grep -q NOTSECRETPW "$err"'
t "a bad URL with secrets: exit 64" 64 $tool \
    -u "rediss://tlsuser:SECRETPW@localhost:$T?ssl_password=KEYSECRET&ssl_bogus=1" \
    sk -- true
check "a bad URL: neither secret in the message" no_secret

# ------------------------------------------------------- Sentinel
# A sentinel on TLS only, which speaks TLS to the master too.
spid=
sdir="$dir/sentinel"
mkdir -p "$sdir"
for try in 1 2 3 4 5 6; do
    sport=$((port_base + try * 41))
    port_base=$((port_base + 300))
    {
        echo "port 0"
        echo "tls-port $sport"
        echo "bind 127.0.0.1"
        tls_conf
        echo "tls-replication yes"
        echo "tls-auth-clients yes"
        echo "dir $sdir"
        echo "sentinel monitor tm 127.0.0.1 $T 1"
    } >"$sdir/sentinel.conf"
    "$server" "$sdir/sentinel.conf" --sentinel --logfile "$sdir/log" &
    spid=$!
    th_track $spid
    n=0
    while kill -0 $spid 2>/dev/null && [ $n -le 100 ]; do
        "$cli" -p $sport --tls --cacert "$c/ca.crt" --cert "$c/client.crt" \
            --key "$c/client.key" sentinel get-master-addr-by-name tm \
            2>/dev/null | grep -q "127.0.0.1" && break
        n=$((n + 1))
        sleep 0.05
    done
    kill -0 $spid 2>/dev/null && break
    wait $spid 2>/dev/null
    spid=
done
if [ -n "$spid" ]; then
    pids="$pids $spid"
    t "rediss+sentinel://: the master through a TLS sentinel" 0 $tool \
        -u "rediss+sentinel://localhost:$sport/tm?$CA&$CERT" snk -- \
        sh -c 'echo via-sentinel'
    check "Sentinel over TLS: COMMAND ran" has via-sentinel "$out"
    t "redis+sentinel:// with --tls options" 0 $tool $TLSOPT \
        -u "redis+sentinel://localhost:$sport/tm" snk -- true
    t "Sentinel over TLS, wrong CA: exit 78" 78 $tool \
        -u "rediss+sentinel://localhost:$sport/tm?ssl_ca_certs=$c/other.crt&$CERT" \
        snk -- true
    check "Sentinel, wrong CA: the sentinel's verify failure named" \
        has "sentinel localhost:$sport: TLS handshake with localhost:$sport: certificate verify failed" "$err"
else
    not_ok "a TLS sentinel started"
fi

# ------------------------------------------------------- Cluster
# Three masters with tls-cluster yes; redis-cli --tls creates the cluster.
nodes=
for k in 1 2 3; do
    start "node$k" "tls-auth-clients yes" "tls-cluster yes" \
        "cluster-enabled yes" "cluster-config-file nodes.conf"
    nodes="$nodes 127.0.0.1:$tport"
    eval "nsock$k=\$dir/node\$k.sock"
done
if "$cli" --tls --cacert "$c/ca.crt" --cert "$c/client.crt" \
    --key "$c/client.key" --cluster create $nodes --cluster-yes \
    >"$dir/cluster.log" 2>&1; then
    first=${nodes# }
    first=${first%% *}
    fport=${first#127.0.0.1:}
    n=0
    until [ "$("$cli" -s "$nsock1" cluster info | grep -c cluster_state:ok)" = 1 ] \
        && [ "$("$cli" -s "$nsock3" cluster info | grep -c cluster_state:ok)" = 1 ]; do
        n=$((n + 1))
        [ $n -gt 400 ] && break
        sleep 0.05
    done
    CU="rediss://127.0.0.1:$fport?$CA&$CERT"
    # Keys on each of the three masters: two of them are redirects.
    t "Cluster over TLS: keys on every master" 0 $tool -u "$CU" \
        a b c d e f -- sh -c 'echo clustered'
    check "Cluster over TLS: COMMAND ran" has clustered "$out"
    t "Cluster over TLS: a waiter's subscriber on the key's node" 0 \
        $tool -u "$CU" -w 1000 b -- true
    t "Cluster over TLS, plain text to the TLS ports: exit 69" 69 \
        $tool -u "redis://127.0.0.1:$fport" a -- true
else
    not_ok "redis-cli --tls --cluster create"
    sed 's/^/    /' "$dir/cluster.log" | tail -5
fi

finish

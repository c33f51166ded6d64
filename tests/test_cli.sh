#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# test_cli.sh - the tslock command against a private redis-server on a
# Unix socket in a temp dir (stopped by its pid on the way out): exit
# statuses, signal forwarding, renewal, waiting, URLs, status on legacy
# stamps and tokens, handles, survey, watch, and the demo.  POSIX sh.  Ordering is
# checked through files written by the commands, never by timing alone.
set -u

tool="${top_builddir:-.}/tools/tslock"
legacy="${top_builddir:-.}/tests/legacy_cli"
. "${top_srcdir:-.}/tests/harness.sh"
need_server
if [ ! -x "$tool" ]; then
    echo "no tool at $tool"
    exit 1
fi
if [ ! -x "$legacy" ]; then
    echo "no legacy clients at $legacy"
    exit 1
fi

# /tmp, not $TMPDIR: a Unix socket path must stay under ~100 bytes.
dir=$(mktemp -d /tmp/tslock-cli.XXXXXX) || exit 1
sock="$dir/redis.sock"
U="unix://$sock"
pid=
pw_pid=
old_pid=
w_pid=
cleanup() {
    [ -n "$w_pid" ] && kill "$w_pid" 2>/dev/null && wait "$w_pid" 2>/dev/null
    [ -n "$old_pid" ] && kill "$old_pid" 2>/dev/null && wait "$old_pid" 2>/dev/null
    [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
    [ -n "$pw_pid" ] && kill "$pw_pid" 2>/dev/null && wait "$pw_pid" 2>/dev/null
    rm -rf "$dir"
}
th_on_exit cleanup
trap 'exit 130' INT TERM
start_unix_server "$sock" "$dir/redis.log"
pid=$started

out="$dir/out"
err="$dir/err"

no_stderr() {
    [ ! -s "$err" ]
}

key_exists() {
    [ "$("$cli" -s "$sock" exists "$1")" = 1 ]
}

now_ms() {
    "$cli" -s "$sock" time | {
        read -r s
        read -r us
        echo $((s * 1000 + us / 1000))
    }
}

ts="$tool -u $U"

# await_count TEXT FILE N: until N lines of FILE match, for up to 10 s.
await_count() {
    n=0
    until [ "$(grep -c -- "$1" "$2" 2>/dev/null)" -ge "$3" ]; do
        n=$((n + 1))
        [ $n -gt 1000 ] && return 1
        sleep 0.01
    done
}

# ------------------------------------------------------------ usage
t "no arguments" 64 $tool
check "no arguments: one line" one_line "missing KEY"
t "unknown long option" 64 $ts --bogus k -- true
check "unknown long option: one line" one_line "unknown option '--bogus'"
t "unknown short option" 64 $ts -x k -- true
check "unknown short option: one line" one_line "unknown option '-x'"
for bad in 0 -5 abc 10ms; do
    t "ttl $bad" 64 $ts -t "$bad" k -- true
    check "ttl $bad: one line" one_line "got '$bad'"
done
t "ttl missing value" 64 $tool -t
check "ttl missing value: one line" one_line "needs a value"
t "wait -2" 64 $ts -w -2 k -- true
check "wait -2: one line" one_line "got '-2'"
t "conflict exit code 300" 64 $ts -E 300 k -- true
check "conflict exit code 300: one line" one_line "got '300'"
t "unknown mode" 64 $ts -m fancy k -- true
check "unknown mode: one line" one_line "auto, token, timestamp or bridge"
t "unknown stamp unit" 64 $ts --stamp min k -- true
check "unknown stamp unit: one line" one_line "ms, s or float, got 'min'"
t "KEY without -- COMMAND" 64 $ts k
check "KEY without -- COMMAND: one line" one_line "missing '-- COMMAND'"
t "COMMAND without --" 64 $ts k true
check "COMMAND without --: one line" one_line "missing '--' between KEY"
t "-- without KEY" 64 $ts -- true
check "-- without KEY: one line" one_line "missing KEY before '--'"
t "-- without COMMAND" 64 $ts k --
check "-- without COMMAND: one line" one_line "missing COMMAND"
t "acquire without KEY" 64 $ts acquire
check "acquire without KEY: one line" one_line "acquire expects KEY"
t "release without HANDLE" 64 $ts release k
check "release without HANDLE: one line" one_line "expects KEY HANDLE"
t "bad handle" 64 $ts release k nonsense
check "bad handle: one line" one_line "token:"
t "kill-on-loss without renew" 64 $ts --kill-on-loss k -- true
t "help" 0 $tool --help
check "help on stdout" has "usage: tslock" "$out"
t "version" 0 $tool -V
check "version on stdout" has "^tslock " "$out"
check "version: libtslock and hiredis" has \
    "^tslock [0-9.]* (libtslock [0-9.]*, hiredis [0-9]*\\.[0-9]*\\.[0-9]*)$" "$out"

# -------------------------------------------------------------- URLs
bad_url() {
    t "bad URL $1" 64 $tool -u "$1" status k
    check "bad URL $1: one line naming $2" one_line "$2"
    check "bad URL $1: no password shown" eval '! grep -q s3cret "$err"'
}
bad_url "redis://:s3cret@localhost:99999" "port"
bad_url "redis://:s3cret@localhost:http" "port"
bad_url "http://localhost:6379" "redis://, unix:// or redis+sentinel://"
bad_url "redis://localhost?ssl_ca_certs=/x" "needs rediss://"
bad_url "rediss://localhost?ssl_cert_reqs=maybe" "required, optional or none"
bad_url "rediss://localhost?ssl_password=s3cret&ssl_nope=1" "unknown URL parameter"
bad_url "redis://:s3cret@localhost:6379/x" "database"
bad_url "redis://localhost:6379/-1" "database"
bad_url "unix://$sock?db=two" "database"
bad_url "unix://relative/path" "absolute"
bad_url "unix://$sock?timeout=5" "unknown URL parameter"
bad_url "redis://:s3cret%zz@localhost" "percent"
bad_url "redis://alice@localhost" "no password"
t "bad \$REDIS_URL" 64 env REDIS_URL=nope $tool status k
check "bad \$REDIS_URL: named" one_line "REDIS_URL"

# TCP URLs are parsed, then refused by a closed port: 69, not 64.
t "redis://host:port/db parsed" 69 $tool -v -u redis://127.0.0.1:1/3 status k
check "redis://host:port/db: host, port, db" \
    has "127.0.0.1 port 1, db 3" "$err"
t "user:password@ percent-decoded" 69 \
    $tool -v -u 'redis://al%40ice:p%3Ass@127.0.0.1:1' status k
check "user:password@: user decoded" has "user al@ice, with a password" "$err"
check "user:password@: password not shown" eval '! grep -q "p:ss" "$err"'
t "[v6]:port parsed" 69 $tool -v -u 'redis://[::1]:1' status k
check "[v6]:port: host" has "::1 port 1" "$err"
t "unix ?db=2" 0 $tool -u "unix://$sock?db=2" acquire dbkey
check "unix ?db=2: key in db 2" \
    eval '[ "$("$cli" -s "$sock" -n 2 exists dbkey)" = 1 ]'
check "unix ?db=2: not in db 0" eval '! key_exists dbkey'
t "\$REDIS_URL used" 0 env REDIS_URL="$U" $tool status k
t "db out of range: server error" 70 $tool -u "unix://$sock?db=99999" status k
t "dead socket: connection error" 69 $tool -u "unix://$dir/none.sock" k -- true
check "dead socket: one line" one_line "none.sock"

# ACL users arrived in Redis 6.
if "$cli" -s "$sock" acl setuser alice on '>s3cret' '~*' '+@all' \
    >/dev/null 2>&1; then
    t "user:password@ authenticates" 0 \
        $tool -u "unix://alice:s3cret@$sock" status k
    t "wrong password: connection error" 69 \
        $tool --no-auth-warning -u "unix://alice:wrong@$sock" status k
    check "wrong password: one line" one_line "TSLOCK_EAUTH"
    t "\$REDISCLI_AUTH supplies the password" 0 \
        env REDISCLI_AUTH=s3cret $tool -u "unix://alice@$sock" status k
else
    echo "# skipped ACL tests: server has no ACL"
fi

# ---------------------------------------------- passwords out of sight
# A second server that wants a password (requirepass, as on any version).
psock="$dir/pw.sock"
"$server" --port 0 --unixsocket "$psock" --requirepass SECRETPW --save '' \
    --appendonly no --dir "$dir" --logfile "$dir/redis-pw.log" &
pw_pid=$!
th_track $pw_pid
i=0
until "$cli" -s "$psock" -a SECRETPW --no-auth-warning ping >/dev/null 2>&1; do
    i=$((i + 1))
    [ $i -gt 200 ] && break
    sleep 0.05
done

no_secret() {
    ! grep -q SECRETPW "$out" "$err"
}

# The job reads what ps shows for tslock (its parent) while tslock runs.
show_cmdline='tr "\0" " " </proc/$PPID/cmdline'
if [ -r /proc/$$/cmdline ]; then
    t "-u password: job runs" 0 $tool -u "unix://:SECRETPW@$psock" pk -- \
        sh -c "$show_cmdline"
    check "-u password: not in tslock's cmdline" no_secret
    check "-u password: cmdline shows unix://***@" \
        has "-u unix://\*\*\*@$psock  *pk -- sh" "$out"
    check "-u password: warned once" \
        eval '[ "$(grep -c "password in -u/--url" "$err")" -eq 1 ]'
    check "-u password: warning names \$REDISCLI_AUTH" has REDISCLI_AUTH "$err"
    t "--url= password: job runs" 0 $tool "--url=unix://:SECRETPW@$psock" \
        pk -- sh -c "$show_cmdline"
    check "--url= password: not in tslock's cmdline" no_secret
    check "--url= password: cmdline shows --url=unix://***@" \
        has "--url=unix://\*\*\*@$psock" "$out"
    # Three -u (a Redlock, here over three databases of one server).
    t "three -u: all scrubbed" 0 $tool -u "unix://:SECRETPW@$psock?db=1" \
        -u "unix://:SECRETPW@$psock?db=2" -u "unix://:SECRETPW@$psock?db=3" \
        pk -- sh -c "$show_cmdline"
    check "three -u: no password in cmdline" no_secret
    t "two -u: a usage error, not the last one silently" 64 $tool \
        -u "redis://:SECRETPW@x" -u "unix://:SECRETPW@$psock" pk -- true
    check "two -u: the error names the odd count" has "odd number" "$err"
    if "$cli" -s "$sock" acl setuser carol on '>SECRETPW' '~*' '+@all' \
        >/dev/null 2>&1; then
        t "user:password@: job runs" 0 $tool -u "unix://carol:SECRETPW@$sock" \
            pk -- sh -c "$show_cmdline"
        check "user:password@: not in tslock's cmdline" no_secret
        check "user:password@: cmdline shows carol:***@" \
            has "unix://carol:\*\*\*@$sock" "$out"
    fi
else
    echo "# skipped cmdline tests: no /proc"
fi
t "--no-auth-warning: silent" 0 $tool --no-auth-warning \
    -u "unix://:SECRETPW@$psock" pk -- true
check "--no-auth-warning: nothing on stderr" no_stderr
t "-q still warns" 0 $tool -q -u "unix://:SECRETPW@$psock" pk -- true
check "-q still warns: one line" one_line "password in -u/--url"
t "\$REDIS_URL password: no warning" 0 \
    env REDIS_URL="unix://:SECRETPW@$psock" $tool pk -- true
check "\$REDIS_URL password: nothing on stderr" no_stderr
t "-v with a password" 0 $tool -v -u "unix://:SECRETPW@$psock" status pk
check "-v with a password: password not shown" no_secret
check "-v with a password: says there is one" has "with a password" "$err"
t "wrong password" 69 $tool -v -u "unix://:SECRETPWX@$psock" status pk
check "wrong password: password not shown" no_secret
check "wrong password: TSLOCK_EAUTH" has "TSLOCK_EAUTH" "$err"
t "password to a server without one" 69 $tool -u "unix://:SECRETPW@$sock" \
    status pk
check "password to a server without one: not shown" no_secret
t "unreachable host with a password" 69 $tool -v \
    -u "redis://:SECRETPW@127.0.0.1:1" pk -- true
check "unreachable host: password not shown" no_secret
t "URL without -u: usage error" 64 $tool "redis://:SECRETPW@h" k -- true
check "URL without -u: password not shown" no_secret
check "URL without -u: shown hidden" has "redis://\*\*\*@h" "$err"
t "URL as KEY without --" 64 $tool "redis://u:SECRETPW@h" k
check "URL as KEY without --: password not shown" no_secret
for u in "redis://:SECRETPW@localhost:99999" "redis://:SECRETPW%zz@h" \
    "redis://u:SECRETPW@h/x" "unix://:SECRETPW@rel/path" \
    "http://:SECRETPW@h"; do
    t "bad URL with a password: $u" 64 $tool -v -u "$u" pk -- true
    check "bad URL with a password: not shown ($u)" no_secret
done

# ----------------------------------------------------- exit statuses
t "COMMAND's status 0" 0 $ts k1 -- true
t "COMMAND's status 7" 7 $ts k1 -- sh -c 'exit 7'
check "k1 released" eval '! key_exists k1'
t "acquire" 0 $ts acquire k1
h1=$(cat "$out")
t "busy: default status 1" 1 $ts k1 -- true
check "busy: says so" has "busy" "$err"
t "busy: -E 3" 3 $ts -E 3 k1 -- true
t "busy: -q is silent" 1 $ts -q k1 -- true
check "busy: -q prints nothing" no_stderr
t "release" 0 $ts release k1 "$h1"
t "COMMAND not found: 127" 127 $ts k2 -- "$dir/no-such-command"
check "COMMAND not found: says so" has "cannot run" "$err"
printf '#!/bin/sh\n' >"$dir/not-exec"
t "COMMAND not executable: 126" 126 $ts k2 -- "$dir/not-exec"
check "k2 released after exec failure" eval '! key_exists k2'
t "lease lost: 75" 75 $ts -t 200 k3 -- sleep 0.5
check "lease lost: loud warning" has "WARNING.*mutual exclusion" "$err"
t "COMMAND failed and lease lost: 75" 75 $ts -t 200 k3 -- sh -c 'sleep 0.5; exit 3'
t "verbose: scheme and server" 0 $ts -v k4 -- true
check "verbose: server version" has "server: Redis [0-9]" "$err"
check "verbose: capabilities" has "capabilities:" "$err"
check "verbose: scheme" has "with the token scheme" "$err"

# ----------------------------------------------------------- signals
rm -f "$dir/ready"
$ts k5 -- sh -c "trap 'exit 42' TERM; touch '$dir/ready'
    while :; do sleep 0.05; done" >"$out" 2>"$err" &
bg=$!
await_file "$dir/ready"
kill -TERM $bg
wait $bg
rc=$?
check "SIGTERM forwarded: COMMAND's trap status 42" [ $rc -eq 42 ]
check "SIGTERM forwarded: lock released" eval '! key_exists k5'
t "COMMAND killed by SIGKILL: 137" 137 $ts k6 -- sh -c 'kill -KILL $$'
check "COMMAND killed: lock released" eval '! key_exists k6'

# SIGINT while waiting: tslock runs in the foreground (a background job
# of a script ignores SIGINT); a helper sends it once tslock waits.
if [ "$(sh -c 'kill -INT $$; echo alive' 2>/dev/null)" = alive ]; then
    echo "# skipped SIGINT test: SIGINT is ignored here"
else
    t "hold k7" 0 $ts acquire k7
    h7=$(cat "$out")
    rm -f "$dir/ran" "$dir/pid"
    (await waiting "$err" && kill -INT "$(cat "$dir/pid")") &
    helper=$!
    t "SIGINT while waiting: 130" 130 sh -c "echo \$\$ >'$dir/pid'; \
        exec $ts -v -w 10000 k7 -- touch '$dir/ran'"
    wait $helper
    check "SIGINT while waiting: COMMAND not run" [ ! -e "$dir/ran" ]
    t "release k7" 0 $ts release k7 "$h7"
fi

# ----------------------------------------------------------- waiting
t "hold k8" 0 $ts acquire k8
h8=$(cat "$out")
t "-w 0: busy at once" 1 $ts -w 0 k8 -- true
t "-w 200: waits, then busy" 1 $ts -w 200 k8 -- true
check "-w 200: says it waited" has "after waiting 200 ms" "$err"
$ts -v -w -1 k8 -- sh -c "echo W >>'$dir/order8'" 2>"$dir/err8" &
bg=$!
await waiting "$dir/err8"
echo R >>"$dir/order8"
t "release k8 while -w -1 waits" 0 $ts release k8 "$h8"
wait $bg
rc=$?
check "-w -1: waited until released" [ $rc -eq 0 ]
check "-w -1: ran after the release" \
    [ "$(tr -d '\n' <"$dir/order8")" = RW ]

# ------------------------------------------------------ several KEYs
t "two KEYs: both held while COMMAND runs" 0 $ts m1 m2 -- \
    sh -c "'$cli' -s '$sock' exists m1 m2"
check "two KEYs: both held" has "^2$" "$out"
check "two KEYs: both released" eval '! key_exists m1 && ! key_exists m2'
t "a KEY twice" 64 $ts m1 m2 m1 -- true
check "a KEY twice: one line" one_line "KEY 'm1' is given twice"
t "an empty KEY among KEYs" 64 $ts m1 "" -- true
t "hold m2" 0 $ts acquire m2
h2=$(cat "$out")
rm -f "$dir/ran"
t "one KEY busy: none taken" 1 $ts m1 m2 m3 -- touch "$dir/ran"
check "one KEY busy: COMMAND not run" [ ! -e "$dir/ran" ]
check "one KEY busy: says none is held" has "none of the keys is held" "$err"
check "one KEY busy: m1 and m3 not kept" \
    eval '! key_exists m1 && ! key_exists m3'
$ts -v -w 10000 m3 m2 -- sh -c "echo W >>'$dir/orderm'" 2>"$dir/errm" &
bg=$!
await waiting "$dir/errm"
echo R >>"$dir/orderm"
t "release m2 while the set waits" 0 $ts release m2 "$h2"
wait $bg
rc=$?
check "set -w: waited, then ran" [ $rc -eq 0 ]
check "set -w: ran after the release" [ "$(tr -d '\n' <"$dir/orderm")" = RW ]
t "two KEYs --fence" 0 $ts --fence f1 f2 -- sh -c 'echo "$TSLOCK_FENCE"'
check "two KEYs --fence: two numbers" has "^[0-9][0-9]* [0-9][0-9]*$" "$out"
# The job outlives the first lease by the server's clock: it reads the
# leases' end (TIME + the longer PTTL of r1 and r2) and ends once TIME has
# passed it with both keys still there, so each must have been renewed,
# however the job was scheduled (10 s at most, else it exits 1).  A 2 s
# lease is renewed every 667 ms: a loaded machine missed a 300 ms one.
cat >"$dir/outlive.sh" <<EOS
now() { "$cli" -s "$sock" time | { read -r s; read -r us; echo \$((s * 1000 + us / 1000)); }; }
p1=\$("$cli" -s "$sock" pttl r1) p2=\$("$cli" -s "$sock" pttl r2)
end=\$((\$(now) + (p1 > p2 ? p1 : p2)))
n=0
until [ \$(now) -gt \$end ]; do
    n=\$((n + 1)); [ \$n -gt 200 ] && exit 1; sleep 0.05
done
[ "\$("$cli" -s "$sock" exists r1 r2)" = 2 ] || exit 2
[ "\$("$cli" -s "$sock" pttl r1)" -gt 0 ] && [ "\$("$cli" -s "$sock" pttl r2)" -gt 0 ]
EOS
t "two KEYs renewed past their leases" 0 $ts -r -t 2000 r1 r2 -- \
    sh "$dir/outlive.sh"
check "two KEYs renewed: released" eval '! key_exists r1 && ! key_exists r2'
t "two KEYs, lease lost: 75" 75 $ts -t 200 l1 l2 -- sleep 0.5
# {x,y} and {y,x} at once, ten times each: never both inside (mkdir is
# the checker), and no deadlock (every run ends within its wait).
cs='mkdir "$0/cs" 2>/dev/null || echo OVERLAP >>"$0/overlaps"; sleep 0.01; rmdir "$0/cs"'
# The checker first catches a broken control: one holds x, the other y,
# and the second goes in while the first is inside.
wait_for='n=0; until [ -e "$1" ] || [ $n -gt 1000 ]; do n=$((n+1)); sleep 0.01; done'
$ts -q x -- sh -c "mkdir '$dir/cs'; touch '$dir/a-in'; set -- '$dir/b-done';
    $wait_for; rmdir '$dir/cs'" &
ctl=$!
await_file "$dir/a-in"
$ts -q y -- sh -c "$cs; touch \"\$0/b-done\"" "$dir"
wait $ctl
check "control {x} and {y}: the checker sees both inside" \
    [ -s "$dir/overlaps" ]
rm -f "$dir/overlaps"
rmdir "$dir/cs" 2>/dev/null
(for i in 1 2 3 4 5 6 7 8 9 10; do
    $ts -q -w 30000 x y -- sh -c "$cs" "$dir" || echo "fail $?" >>"$dir/setfail"
done) &
p1=$!
(for i in 1 2 3 4 5 6 7 8 9 10; do
    $ts -q -w 30000 y x -- sh -c "$cs" "$dir" || echo "fail $?" >>"$dir/setfail"
done) &
p2=$!
wait $p1 $p2
check "{x,y} and {y,x}: every run held both" [ ! -e "$dir/setfail" ]
check "{x,y} and {y,x}: never both inside" [ ! -e "$dir/overlaps" ]
# The same on old servers, played by the proxy.
for v in 2.2.15 2.0.5; do
    oldp="${top_builddir:-.}/tests/oldredis"
    if [ ! -x "$oldp" ]; then
        echo "ok - several KEYs on $v: skipped (no tests/oldredis)"
        break
    fi
    osock="$dir/oldm-$v.sock"
    "$oldp" --emulate $v --listen "$osock" --upstream "$sock" &
    old_pid=$!
    await_file "$osock"
    to="$tool -u unix://$osock"
    t "several KEYs on $v: both held" 0 $to o1 o2 -- \
        sh -c "'$cli' -s '$sock' exists o1 o2"
    check "several KEYs on $v: both held" has "^2$" "$out"
    check "several KEYs on $v: released" eval '! key_exists o1 && ! key_exists o2'
    t "several KEYs on $v: hold o2" 0 $to acquire o2
    ho=$(cat "$out")
    t "several KEYs on $v: one busy, none taken" 1 $to o1 o2 -- true
    check "several KEYs on $v: o1 not kept" eval '! key_exists o1'
    t "several KEYs on $v: release o2" 0 $to release o2 "$ho"
    kill "$old_pid" && wait "$old_pid" 2>/dev/null
    old_pid=
done

# ----------------------------------------------------------- renewal
# A holds k9 with a 300 ms lease for 1.2 s, renewed; B waits for it.
order="$dir/order9"
$ts -r -t 300 k9 -- sh -c "echo A-start >>'$order'; sleep 1.2; \
    echo A-end >>'$order'" >"$dir/outA" 2>"$dir/errA" &
a=$!
await A-start "$order"
t "renew: B waits for A" 0 $ts -v -t 300 -w 10000 k9 -- \
    sh -c "echo B >>'$order'"
check "renew: B did wait" has "waiting" "$err"
wait $a
rc=$?
check "renew: A exits 0" [ $rc -eq 0 ]
check "renew: A kept the lock through 4 leases" \
    [ "$(tr '\n' ' ' <"$order")" = "A-start A-end B " ]
t "renewal fails: 75" 75 $ts -r -t 300 k10 -- \
    sh -c "'$cli' -s '$sock' del k10 >/dev/null; sleep 0.5"
check "renewal fails: warned at once" has "WARNING: renewing the lease" "$err"
# Every client connection killed once while COMMAND runs (the job does
# it): the renewal reconnects and renews, warns, and the exit status is
# COMMAND's.  The job ends once the warning is out (10 s at most, else it
# exits 1), so the renewal after the kill must have worked; the lease is
# long enough (3 s, renewed each second) for a loaded machine to
# reconnect in, where a 600 ms one ran out under load.
t "renew through CLIENT KILL: 0" 0 $ts -r -t 3000 k12 -- \
    sh -c "'$cli' -s '$sock' client kill type normal >/dev/null; n=0; \
    until grep -q 'recovered' '$err'; do n=\$((n + 1)); \
    [ \$n -gt 1000 ] && exit 1; sleep 0.01; done"
check "renew through CLIENT KILL: warned of the recovery" \
    has "recovered .*the lock is still ours" "$err"
check "renew through CLIENT KILL: released" eval '! key_exists k12'

# A key that is not a string: a clear EWRONGTYPE in every mode, at once
# even when waiting, and the hash untouched.
"$cli" -s "$sock" hset khash f v >/dev/null
for m in auto token timestamp bridge; do
    t "wrong type, -m $m: 70" 70 $ts -m $m -w 0 khash -- true
    check "wrong type, -m $m: says so" has "TSLOCK_EWRONGTYPE" "$err"
    t "wrong type, -m $m, -w 30000: 70 at once" 70 \
        timeout 10 $ts -m $m -w 30000 khash -- true
done
check "wrong type: the hash is untouched" \
    [ "$("$cli" -s "$sock" hget khash f)" = v ]

# A hung server (SIGSTOP): --timeout bounds the wait for a reply, and the
# status says the server is unavailable.
kill -STOP "$pid"
t "hung server, --timeout 300: 69" 69 timeout 10 $ts --timeout 300 k13 -- true
kill -CONT "$pid"
check "hung server: the message names the timeout" \
    has "TSLOCK_ETIMEDOUT.*300 ms" "$err"
t "--timeout 0 refused" 64 $ts --timeout 0 k -- true

# Fair mode and the queue length in status.
t "--fair takes a free lock" 0 $ts --fair k14 -- true
t "--fair with -m timestamp: 70" 70 $ts --fair -m timestamp k14 -- true
h=$($ts acquire k15)
$ts --fair -w 20000 k15 -- true >/dev/null 2>&1 &
w=$!
i=0
until [ "$("$cli" -s "$sock" zcard '{k15}:queue')" = 1 ] || [ $i -gt 200 ]; do
    i=$((i + 1))
    sleep 0.05
done
t "status shows the fair queue" 0 $ts status k15
check "status: fair queue: 1 waiter" has "fair queue: 1 waiter" "$out"
t "release lets the fair waiter in" 0 $ts release k15 "$h"
wait $w
check "the fair waiter took it and exited 0" [ $? -eq 0 ]

rm -f "$dir/termed"
t "--kill-on-loss: 75" 75 $ts -r --kill-on-loss -t 300 k11 -- \
    sh -c "trap 'touch \"$dir/termed\"; exit 9' TERM
        '$cli' -s '$sock' del k11 >/dev/null; sleep 5 & wait \$!"
check "--kill-on-loss: COMMAND got SIGTERM" [ -e "$dir/termed" ]

# ------------------------------------------------------------ status
now=$(now_ms)
t "status: free" 0 $ts status nokey
check "status: free says so" has "^state: free" "$out"
"$cli" -s "$sock" set st_ms $((now + 60000)) >/dev/null
t "status: ms stamp" 0 $ts status st_ms
check "status: ms stamp held" has "^state: held" "$out"
check "status: ms stamp unit" has "^unit: ms" "$out"
check "status: ms stamp time left" has "^time left: [0-9]* ms" "$out"
check "status: ms stamp no server TTL" has "^server TTL: none" "$out"
check "status: ms stamp owner key named" has "^owner key: {st_ms}:owner" "$out"
check "status: ms stamp from a legacy writer" has "^writer: a legacy client" "$out"
"$cli" -s "$sock" set st_s $((now / 1000 + 60)) >/dev/null
t "status: s stamp" 0 $ts status st_s
check "status: s stamp unit" has "^unit: s$" "$out"
"$cli" -s "$sock" set st_f "$((now / 1000 + 60)).250" px 90000 >/dev/null
t "status: float stamp" 0 $ts status st_f
check "status: float stamp unit" has "^unit: float" "$out"
check "status: float stamp server TTL" has "^server TTL: [0-9]* ms" "$out"
"$cli" -s "$sock" set st_old $((now - 5000)) >/dev/null
t "status: expired stamp" 0 $ts status st_old
check "status: expired stamp says so" has "^state: expired" "$out"
check "status: expired N ms ago" has "^expired: [0-9]* ms ago" "$out"
"$cli" -s "$sock" set st_odd "hello world" >/dev/null
t "status: unreadable value" 0 $ts status st_odd
check "status: unreadable shown raw" has 'value: "hello world"' "$out"
check "status: unreadable noted" has "^note: " "$out"
# A bridge hold shows its owner token; migrating fleets tell it from a
# legacy holder this way.
t "status: bridge hold taken" 0 $ts -m bridge acquire st_br
hb=$(cat "$out")
t "status: bridge hold" 0 $ts status st_br
check "status: bridge writer" has "^writer: tslock bridge" "$out"
check "status: bridge owner is the handle's token" \
    has "^owner: ${hb##*/}\$" "$out"
t "status: bridge hold released" 0 $ts -m bridge release st_br "$hb"
t "status -q" 0 $ts -q status st_ms
check "status -q: one word" [ "$(cat "$out")" = held ]
"$cli" -s "$sock" rpush st_list x >/dev/null
t "status: wrong type is a server error" 70 $ts status st_list

# ------------------------------------------ read-write and semaphore
t "--shared beside --shared" 0 $ts --shared rw1 -- $ts --shared rw1 -- true
t "--exclusive while shared: busy" 1 \
    $ts --shared rw1 -- $ts --exclusive rw1 -- true
check "--exclusive while shared: says held" has "is held" "$err"
t "plain lock while shared: busy" 1 $ts --shared rw1 -- $ts rw1 -- true
t "--shared while exclusive: busy" 1 \
    $ts --exclusive rw1 -- $ts --shared rw1 -- true
t "--shared while a plain lock holds: busy" 1 \
    $ts rw1 -- $ts --shared rw1 -- true
check "rw1 and its readers gone" \
    eval '! key_exists rw1 && ! key_exists "{rw1}:readers"'
t "status of a shared key" 0 $ts --shared rw1 -- $ts status rw1
check "status of a shared key: its holders" has "^shared holders: 1" "$out"
t "status of a semaphore" 0 $ts --permits 2 sem1 -- $ts status sem1
check "status of a semaphore: its holders" has "^permit holders: 1" "$out"
t "--permits 2: two hold at once" 0 \
    $ts --permits 2 sem1 -- $ts --permits 2 sem1 -- true
t "--permits 2: a third is busy" 1 $ts --permits 2 sem1 -- \
    $ts --permits 2 sem1 -- $ts --permits 2 sem1 -- true
check "--permits 2: says every permit is taken" \
    has "every permit is taken" "$err"
check "sem1 and its permits gone" \
    eval '! key_exists sem1 && ! key_exists "{sem1}:permits"'
t "--permits 0" 64 $ts --permits 0 sem1 -- true
check "--permits 0: one line" one_line "from 1, got '0'"
t "--permits x" 64 $ts --permits x sem1 -- true
t "--shared with --permits" 64 $ts --shared --permits 2 sem1 -- true
check "--shared with --permits: one line" one_line "exclude each other"
t "--exclusive with --shared" 64 $ts --exclusive --shared rw1 -- true
t "--shared with several servers" 64 $tool -u "$U" -u "$U" -u "$U" --shared rw1 -- true
check "--shared with several servers: one line" one_line "one server only"
t "--shared over several keys" 0 $ts --shared rw4 rw5 -- \
    $ts --shared rw4 rw5 -- true
t "--exclusive over several keys while one is shared: busy" 1 \
    $ts --shared rw5 -- $ts --exclusive rw4 rw5 -- true
check "several keys: rw4 and rw5 released" \
    eval '! key_exists rw4 && ! key_exists rw5'

t "acquire --shared" 0 $ts --shared acquire rw2
h=$(cat "$out")
check "acquire --shared: shared-ms handle" \
    eval 'echo "$h" | grep -Eq "^shared-ms:[0-9a-f]{32}[0-9]+$"'
check "acquire --shared: the key holds a ms stamp" \
    eval '"$cli" -s "$sock" get rw2 | grep -Eq "^[0-9]{13}$"'
t "extend --shared" 0 $ts -t 60000 extend rw2 "$h"
h_new=$(cat "$out")
check "extend --shared: a new handle" [ -n "$h_new" -a "$h_new" != "$h" ]
t "release --shared with the new handle" 0 $ts release rw2 "$h_new"
check "release --shared: key gone" eval '! key_exists rw2'
t "acquire --permits" 0 $ts --permits 3 acquire sem2
h=$(cat "$out")
check "acquire --permits: permit-ms handle" has "^permit-ms:" "$out"
t "release a permit" 0 $ts release sem2 "$h"
check "release a permit: key gone" eval '! key_exists sem2'
# Writer preference: a waiting --exclusive turns new readers away.
rm -f "$dir/rw3-go" "$dir/rw3-wrote"
$ts --shared rw3 -- sh -c "until [ -e '$dir/rw3-go' ]; do sleep 0.02; done" \
    >/dev/null 2>&1 &
w_pid=$!
n=0
until key_exists rw3 || [ $n -gt 500 ]; do n=$((n + 1)); sleep 0.02; done
$ts --exclusive -w 20000 rw3 -- touch "$dir/rw3-wrote" >/dev/null 2>&1 &
x_pid=$!
n=0
until key_exists "{rw3}:writer" || [ $n -gt 500 ]; do
    n=$((n + 1))
    sleep 0.02
done
t "--shared behind a waiting --exclusive: busy" 1 $ts --shared rw3 -- true
check "--shared behind a waiting --exclusive: says a writer waits" \
    has "a writer is waiting" "$err"
touch "$dir/rw3-go"
wait $w_pid
w_pid=
wait $x_pid
rc=$?
check "the waiting --exclusive ran once the reader left" \
    [ $rc -eq 0 -a -e "$dir/rw3-wrote" ]

# ----------------------------------------------------------- handles
t "acquire: token" 0 $ts acquire h1
h=$(cat "$out")
check "acquire: token handle" eval 'echo "$h" | grep -Eq "^token:[0-9a-f]{32}$"'
t "status: token" 0 $ts status h1
check "status: token scheme" has "^scheme: token" "$out"
check "status: token time left" has "^time left: [0-9]* ms (server TTL)" "$out"
t "extend: token" 0 $ts -t 60000 extend h1 "$h"
check "extend: token handle unchanged" [ "$(cat "$out")" = "$h" ]
t "release: token" 0 $ts release h1 "$h"
check "release: token gone" eval '! key_exists h1'
t "release again: lost" 75 $ts release h1 "$h"
check "release again: loud warning" has "WARNING" "$err"
t "acquire: timestamp ms" 0 $ts -m timestamp -t 10000 acquire h2
h=$(cat "$out")
check "acquire: timestamp-ms handle" eval 'echo "$h" | grep -q "^timestamp-ms:"'
t "extend: timestamp" 0 $ts -t 20000 extend h2 "$h"
h_new=$(cat "$out")
check "extend: timestamp handle changed" [ -n "$h_new" -a "$h_new" != "$h" ]
t "release with the old handle: lost" 75 $ts release h2 "$h"
t "release with the new handle" 0 $ts release h2 "$h_new"
t "acquire: timestamp float" 0 $ts -m timestamp --stamp float acquire h3
check "acquire: timestamp-float handle" has "^timestamp-float:" "$out"
t "acquire: timestamp s" 0 $ts -m timestamp --stamp s acquire h4
check "acquire: timestamp-s handle" has "^timestamp-s:" "$out"
$ts -m bridge acquire h5 >"$out" 2>"$err"
rc=$?
if [ $rc -eq 0 ]; then
    check "bridge: handle" has "^bridge-" "$out"
else
    check "bridge: unsupported is a clear server error" \
        eval '[ $rc -eq 70 ] && one_line bridge'
fi

# ------------------------------------------------------------ break
tok=0123456789abcdef0123456789abcdef
"$cli" -s "$sock" set b1 $tok >/dev/null
t "break: refused off a terminal without --if-value" 64 $ts break b1 </dev/null
check "break: refusal is one usage line" one_line "needs --if-value VALUE"
check "break: refusal deletes nothing" key_exists b1
t "break: --if-value elsewhere is a usage error" 64 $ts --if-value x status b1
t "break: --if-value on the run form too" 64 $ts --if-value x b1 -- true
t "break: another value" 1 $ts break b1 --if-value 4102444800000 </dev/null
check "break: another value: says nothing was deleted" \
    has "nothing deleted" "$err"
check "break: another value: kept" key_exists b1
t "break: token without TTL" 0 $ts break b1 --if-value $tok </dev/null
check "break: shows the value" has "^value: \"$tok\"" "$out"
check "break: shows no TTL" has "^server TTL: none" "$out"
check "break: token gone" eval '! key_exists b1'
"$cli" -s "$sock" set b2 4102444800000 >/dev/null
t "break: far-future stamp" 0 $ts break b2 --if-value 4102444800000 </dev/null
check "break: stamp gone" eval '! key_exists b2'
"$cli" -s "$sock" set b3 4102444800000 px 600000 >/dev/null
"$cli" -s "$sock" set '{b3}:owner' fedcba9876543210fedcba9876543210 >/dev/null
t "break: bridge hold" 0 $ts break b3 --if-value 4102444800000 </dev/null
check "break: bridge shows its owner key" has "^owner key: {b3}:owner" "$out"
check "break: bridge shows the TTL" has "^server TTL: [0-9]* ms" "$out"
check "break: bridge key gone" eval '! key_exists b3'
check "break: owner key gone too" eval '! key_exists "{b3}:owner"'
t "break: missing key" 1 $ts break b4 --if-value x </dev/null
check "break: missing key: says it is free" one_line "is free"
# On a terminal it asks (util-linux script(1) gives it one, when present).
if script -qec true /dev/null >/dev/null 2>&1 </dev/null; then
    "$cli" -s "$sock" set b6 stuck >/dev/null
    echo n | script -qec "$ts break b6" /dev/null >"$out" 2>&1
    check "break: asks on a terminal" has "delete 'b6' holding \"stuck\"? \[y/N\]" "$out"
    check "break: no is no" key_exists b6
    echo y | script -qec "$ts break b6" /dev/null >"$out" 2>&1
    check "break: yes deletes" eval '! key_exists b6'
fi
t "break: a hold taken by acquire" 0 $ts acquire b5
h=$(cat "$out")
t "break: acquire's token" 0 $ts -q break b5 --if-value "${h#token:}" </dev/null
t "break: taken again at once" 0 $ts acquire b5

# ---------------------------------------------------------- fencing
t "fence: acquire" 0 $ts --fence acquire f1
f1=$(awk '{ print $2 }' "$out")
check "fence: HANDLE FENCE on one line" \
    eval 'grep -Eq "^token:[0-9a-f]{32} [0-9]+$" "$out" && [ "$(wc -l <"$out")" -eq 1 ]'
t "fence: release" 0 $ts release f1 "$(awk '{ print $1 }' "$out")"
t "fence: acquire again" 0 $ts --fence acquire f1
f2=$(awk '{ print $2 }' "$out")
check "fence: the number grows" eval '[ "$f2" -gt "$f1" ]'
$ts release f1 "$(awk '{ print $1 }' "$out")" >/dev/null 2>&1
t "fence: COMMAND sees TSLOCK_FENCE" 0 $ts --fence f1 -- \
    sh -c 'echo "$TSLOCK_FENCE"'
check "fence: COMMAND's number grows" eval '[ "$(cat "$out")" -gt "$f2" ]'
t "fence: none without --fence" 0 $ts f1 -- sh -c 'echo "${TSLOCK_FENCE-unset}"'
check "fence: TSLOCK_FENCE unset without --fence" [ "$(cat "$out")" = unset ]
# ------------------------------------------------------------ survey
# Its own db, so the keys other sections leave behind do not count.
# Every lock is written as its legacy client writes it.
SU="unix://$sock?db=5"
sv() { "$cli" -s "$sock" -n 5 "$@" >/dev/null; }
# The stamps come from the legacy clients of tests/legacy.c: the Java
# RedisLock (ms), the Redis documentation's pattern (s), redis-py 2.x
# (float s), and a Java client whose clock runs two minutes behind (a
# stamp already expired for everyone else).
lg() { "$legacy" -s "$sock" -n 5 "$@"; }
lg client j java 60000 client d redisdoc 60000 client p redispy2 60000 \
    client late java 60000 -120000 \
    lock j sv:ms lock d sv:s lock p sv:float lock late sv:old >"$dir/lg"
check "survey: the legacy clients took their locks" \
    eval '[ "$(grep -c " held " "$dir/lg")" -eq 4 ]'
ms_stamp=$(awk '$1 == "j" { print $3 }' "$dir/lg")
old_stamp=$(awk '$1 == "late" { print $3 }' "$dir/lg")
sv set sv:tok 0123456789abcdef0123456789abcdef nx px 60000
sv set sv:stuck fedcba9876543210fedcba9876543210 nx
sv set 'sv:q"uo\te' 00112233445566778899aabbccddeeff nx px 60000
sv hset sv:hash f v
sv set sv:plain hello
t "survey: a bridge hold" 0 $tool -u "$SU" -m bridge -t 60000 acquire sv:br
before=$("$cli" -s "$sock" -n 5 --scan | sort | tr '\n' ' ')

# row KEY DIALECT STATE: the table has that row.
row() {
    # Through the environment: awk -v would read the key's backslashes.
    K="$1" awk -v d="$2" -v s="$3" \
        '$NF == ENVIRON["K"] && $1 == d && $2 == s { f = 1 } END { exit !f }' \
        "$out"
}
t "survey: table" 0 $tool -u "$SU" survey
check "survey table: header" \
    has "^KIND *STATE *LEFT_MS *TTL_MS *DIALECT *KEY$" "$out"
check "survey table: ms stamp live" row sv:ms timestamp-ms live
check "survey table: s stamp live" row sv:s timestamp-s live
check "survey table: float stamp live" row sv:float timestamp-float live
check "survey table: old stamp expired" row sv:old timestamp-ms expired
check "survey table: token live" row sv:tok token live
check "survey table: token without TTL" row sv:stuck token no-ttl
check "survey table: bridge hold" row sv:br bridge-ms live
check "survey table: key escaped" row 'sv:q"uo\x5cte' token live
check "survey table: no hash, plain string or owner key" \
    eval '! grep -q "sv:hash\|sv:plain\|:owner" "$out"'
check "survey table: summary" has "^11 keys, 8 locks$" "$out"
check "survey table: summary by state" has "^  token *no-ttl *1$" "$out"
check "survey table: not-a-lock counted" has "^  not-a-lock *- *3$" "$out"

# json KEY-JSON DIALECT STATE: a line that starts so.
json() {
    grep -qF "{\"key\":\"$1\",\"dialect\":\"$2\",\"state\":$3," "$out"
}
t "survey --json" 0 $tool -u "$SU" survey --json
check "survey json: ms stamp" json sv:ms timestamp-ms '"live"'
check "survey json: s stamp" json sv:s timestamp-s '"live"'
check "survey json: float stamp" json sv:float timestamp-float '"live"'
check "survey json: expired stamp" json sv:old timestamp-ms '"expired"'
check "survey json: token" json sv:tok token '"live"'
check "survey json: token without TTL" json sv:stuck token '"no-ttl"'
check "survey json: bridge" json sv:br bridge-ms '"live"'
check "survey json: key escaped" json 'sv:q\"uo\\te' token '"live"'
check "survey json: no TTL is null" \
    has '"key":"sv:stuck".*"expires_ms":null,"ttl_ms":null}$' "$out"
check "survey json: stamp's expiry" \
    has "\"key\":\"sv:ms\".*\"expires_ms\":$ms_stamp," "$out"
check "survey json: summary last" eval \
    'tail -n 1 "$out" | grep -q "^{\"summary\":{\"keys\":11,\"locks\":8,"'
check "survey json: 9 lines" eval '[ "$(wc -l <"$out")" -eq 9 ]'
if command -v python3 >/dev/null 2>&1; then
    check "survey json: every line parses" \
        python3 -c 'import json, sys; [json.loads(l) for l in sys.stdin]' \
        <"$out"
fi

t "survey --all --json" 0 $tool -u "$SU" survey --all --json
check "survey --all: hash" json sv:hash not-a-lock null
check "survey --all: plain string" json sv:plain not-a-lock null
check "survey --all: owner key" json '{sv:br}:owner' not-a-lock null

t "survey option on status" 64 $tool -u "$SU" status sv:ms --json
check "survey option on status: one line" one_line "survey form only"
t "survey with a word" 64 $tool -u "$SU" survey sv:ms
check "survey with a word: one line" one_line "survey expects no arguments"

t "survey --match" 0 $tool -u "$SU" survey --json --match 'sv:[st]*'
check "survey --match: only the matching keys" eval \
    '[ "$(grep -c "^{\"key\"" "$out")" -eq 3 ] && ! grep -q sv:ms "$out"'

after=$("$cli" -s "$sock" -n 5 --scan | sort | tr '\n' ' ')
check "survey: wrote nothing" eval \
    '[ "$before" = "$after" ] && [ "$("$cli" -s "$sock" -n 5 ttl sv:stuck)" = -1 ] && [ "$("$cli" -s "$sock" -n 5 get sv:old)" = "$old_stamp" ]'

# Every preset's form, written by raw SETs as each library writes it,
# in a db of its own: plain survey lists each, named by the presets
# whose clients could have written it (tslock_dialect_match), with the
# kind (the unit the dialect's stamp is in) and state.  A value that
# looks like a lock but that no preset reads is unknown-stamp; "1" and
# "true" are never-expires sentinels on a key named as a lock, and a
# counter elsewhere.
DU="unix://$sock?db=6"
dl() { "$cli" -s "$sock" -n 6 "$@" >/dev/null; }
dnow=$(($(now_ms) / 1000))
dl set dl:java $(((dnow + 60) * 1000 + 1))
dl set dl:redisdoc $((dnow + 61))
dl set dl:float "$((dnow + 60)).3051164"
dl set dl:objects_lock 1
dl set lock:dl:resque true
dl set dl:gem "$((dnow + 61))-27118-520"
dl set dl:gem-old "$((dnow - 60))-27118-520"
dl set dl:ninja "a:3:{s:3:\"pid\";i:8975;s:8:\"hostname\";s:2:\"vm\";s:7:\"expires\";i:$((dnow + 60));}"
dl set dl:ninja-old "a:3:{s:3:\"pid\";i:8975;s:8:\"hostname\";s:2:\"vm\";s:7:\"expires\";i:$((dnow - 60));}"
dl set dl:predis "$((dnow + 61)):15131"
dl set dl:odd "$((dnow + 60))_15131"
dl set dl:php-noexp 'a:1:{s:3:"pid";i:8975;}'
dl set dl:counter 1
dl set dl:flag true
# drow KEY KIND STATE DIALECT: the table has that row.
drow() {
    K="$1" awk -v k="$2" -v s="$3" -v d="$4" \
        '$NF == ENVIRON["K"] && $1 == k && $2 == s && $(NF - 1) == d { f = 1 }
         END { exit !f }' "$out"
}
# dialect_checks RUNNER: every check of the table in $out, each run by
# RUNNER: check, or refutes on a copy whose naming is broken.
dialect_checks() {
    $1 "survey names java-redislock/node-redis-lock" \
        drow dl:java timestamp-ms live java-redislock/node-redis-lock
    $1 "survey names redis-docs/resque-lock-timeout" \
        drow dl:redisdoc timestamp-s live redis-docs/resque-lock-timeout
    $1 "survey names redis-py2/redis-objects/redis-mutex" \
        drow dl:float timestamp-float live redis-py2/redis-objects/redis-mutex
    $1 "survey names redis-objects' 1: never expires" \
        drow dl:objects_lock timestamp-float never redis-objects
    $1 "survey names resque-lock-timeout's true: never expires" \
        drow lock:dl:resque timestamp-s never resque-lock-timeout
    $1 "survey names the redis-lock gem, live" \
        drow dl:gem timestamp-s live redis-lock-gem
    $1 "survey names the redis-lock gem, expired" \
        drow dl:gem-old timestamp-s expired redis-lock-gem
    $1 "survey names ninja-mutex, live" \
        drow dl:ninja timestamp-s live ninja-mutex
    $1 "survey names ninja-mutex, expired" \
        drow dl:ninja-old timestamp-s expired ninja-mutex
    $1 "survey names predislock" drow dl:predis timestamp-s live predislock
    $1 "survey: a stamp with another suffix is unknown-stamp" \
        drow dl:odd unknown-stamp unreadable unknown-stamp
    $1 "survey: a PHP array without expires is unknown-stamp" \
        drow dl:php-noexp unknown-stamp unreadable unknown-stamp
    $1 "survey: 1 and true elsewhere are no locks" \
        eval '! grep -q "dl:counter\|dl:flag" "$out"'
    $1 "survey: 14 keys, 12 locks" has "^14 keys, 12 locks$" "$out"
    $1 "survey: counted by dialect" \
        has "^  dialect redis-lock-gem expired 1$" "$out"
}
t "survey of every dialect" 0 $tool -u "$DU" survey
cp "$out" "$dir/dialects.out"
dialect_checks check
t "survey --json of every dialect" 0 $tool -u "$DU" survey --json
check "survey json: the gem's stamp_dialect and expiry" \
    has "^{\"key\":\"dl:gem\",\"dialect\":\"timestamp-s\",\"state\":\"live\",\"stamp_dialect\":\"redis-lock-gem\",\"expires_ms\":$((dnow + 61))999," "$out"
check "survey json: a sentinel never expires: no expiry" \
    has '^{"key":"dl:objects_lock","dialect":"timestamp-float","state":"never","stamp_dialect":"redis-objects","expires_ms":null,' "$out"
check "survey json: unknown-stamp" \
    has '^{"key":"dl:odd","dialect":"unknown-stamp","state":"unreadable","stamp_dialect":"unknown-stamp",' "$out"
check "survey json: a token has no stamp_dialect" \
    eval '$tool -u "$SU" survey --json | grep -q "^{\"key\":\"sv:tok\",\"dialect\":\"token\",\"state\":\"live\",\"stamp_dialect\":null,"'
check "survey json: the summary counts by stamp dialect" \
    has '"stamp_dialects":{.*"ninja-mutex":{"live":1,"expired":1}' "$out"
# The checks can fail: on the table with every name replaced by the
# closest wrong answer (unknown-stamp, and the unit's other presets),
# each check of the names above must fail.
sed -e 's/redis-lock-gem/unknown-stamp/; s/ninja-mutex/unknown-stamp/' \
    -e 's/predislock/redis-docs/; s/java-redislock.node-redis-lock/java-redislock/' \
    -e 's/redis-docs.resque-lock-timeout/resque-lock-timeout/' \
    -e 's/redis-py2.redis-objects.redis-mutex/redis-mutex/' \
    -e 's/ never \( *-1 *-1 *\)redis-objects/ live \1redis-objects/' \
    -e 's/ never \( *-1 *-1 *\)resque/ expired \1resque/' \
    -e 's/unreadable \( *-1 *-1 *\)unknown-stamp/unreadable \1-/' \
    -e 's/^14 keys, 12 locks/14 keys, 10 locks/' \
    -e 's/^\(timestamp-s.*dl:\)gem-old$/\1gem-old2/' \
    "$dir/dialects.out" >"$out"
echo "   dl:counter" >>"$out"
# refutes NAME COMMAND...: the check NAME fails on the broken copy.
refutes() {
    name=$1
    shift
    th_begin "$name"
    if "$@"; then
        not_ok "broken copy: $name passes all the same"
    else
        ok "broken copy: $name fails"
    fi
}
dialect_checks refutes

# Servers before 2.8, played by the proxy: no SCAN, so --keys is needed.
old="${top_builddir:-.}/tests/oldredis"
for v in 2.6.11 2.4.0; do
    if [ ! -x "$old" ]; then
        echo "ok - survey on $v: skipped (no tests/oldredis)"
        break
    fi
    osock="$dir/old-$v.sock"
    "$old" --emulate $v --listen "$osock" --upstream "$sock" &
    old_pid=$!
    await_file "$osock"
    OU="unix://$osock?db=5"
    t "survey on $v without --keys: refused" 69 $tool -u "$OU" survey
    check "survey on $v: says KEYS blocks the server" \
        eval 'one_line "pass --keys" && has "blocks the server" "$err"'
    t "survey on $v --keys" 0 $tool -u "$OU" survey --keys --json
    check "survey on $v: stamp" json sv:ms timestamp-ms '"live"'
    check "survey on $v: token TTL" \
        has '"key":"sv:tok".*"ttl_ms":[0-9]' "$out"
    check "survey on $v: bridge" json sv:br bridge-ms '"live"'
    check "survey on $v: summary" has '^{"summary":{"keys":11,"locks":8,' "$out"
    kill "$old_pid" && wait "$old_pid" 2>/dev/null
    old_pid=
done

# A server that goes away mid-survey: 69 (unavailable), naming the
# command, whether it goes at SELECT, at INFO or at SCAN (its first three);
# EX_SOFTWARE (70) stays for a server that answers with an error.
if [ -x "$old" ]; then
    fsock="$dir/fault.sock"
    "$old" --emulate modern --listen "$fsock" --upstream "$sock" &
    old_pid=$!
    await_file "$fsock"
    for at in 1:SELECT 2:INFO 3:SCAN; do
        "$cli" -s "$fsock" TSLOCKFAULT ARM drop-before "${at%%:*}" >/dev/null
        t "survey, server gone at ${at#*:}: 69" 69 $tool -u "unix://$fsock?db=5" survey
        check "survey, server gone at ${at#*:}: says so" \
            eval 'one_line "^tslock: ${at#*:}: .*\(closed\|pipe\|reset\)"'
    done
    "$cli" -s "$fsock" TSLOCKFAULT CLEAR >/dev/null
    kill "$old_pid" && wait "$old_pid" 2>/dev/null
    old_pid=
fi

# ------------------------------------------------------------- watch
# MONITOR tells clients apart by address only over TCP (every Unix socket
# client is "unix:PATH"), so watch gets its own server on loopback.
if ! start_tcp_server 7 "$dir/watch-redis.log"; then
    echo "no redis-server of ours came up on a loopback port"
    exit 1
fi
w_pid=$started
wport=$started_port
WU="redis://127.0.0.1:$wport"
wcli() { "$cli" -p $wport "$@" >/dev/null; }
$tool -u "$WU" watch --for 20000 wk >"$dir/wout" 2>"$dir/werr" &
watcher=$!
# The handshake: the line comes once MONITOR has answered OK.  SIGTERM,
# not SIGINT, ends it: a background job of a script ignores SIGINT.
await "^tslock: watching 1 key on" "$dir/werr"
# The legacy clients of tests/legacy.c, each on its own connection: Java
# RedisLock x holds; y, whose clock runs two minutes ahead, sees x's stamp
# expired and takes it over with GETSET; x's unlock0 then deletes y's
# stamp.  A redisdoc and a redis-py 2.x client lock and release after.
"$legacy" -p $wport client x java 60000 client y java 60000 120000 \
    client d redisdoc 60000 client p redispy2 60000 \
    lock x wk lock y wk unlock x wk lock d wk unlock d wk \
    lock p wk unlock p wk >"$dir/lg"
check "watch: the legacy clients ran as planned" eval \
    '[ "$(cut -d" " -f1,2 "$dir/lg" | tr "\n" " ")" = "x held y held x deleted d held d deleted p held p deleted " ]'
stamp=$(awk '$1 == "x" && $2 == "held" { print $3 }' "$dir/lg")
wcli set wk 0123456789abcdef0123456789abcdef NX PX 30000
wcli del wk
t "watch: a tslock hold meanwhile" 0 $tool -u "$WU" -m token wk -- true
wcli set other-key $stamp
# MONITOR's lines reach the watcher after the commands' replies: the
# last one (the DEL of tslock's release) is awaited before the SIGTERM.
await_count ' del "wk"$' "$dir/wout" 3
kill -TERM $watcher
wait $watcher
rc=$?
cp "$dir/wout" "$out"
cp "$dir/werr" "$err"
check "watch: ends 0 on SIGTERM" eval '[ $rc -eq 0 ]'
check "watch: SETNX of an ms stamp" \
    has "^[0-9.]* 127.0.0.1:[0-9]* timestamp-ms setnx \"wk\" \"$stamp\"$" "$out"
check "watch: GETSET over a live stamp flagged" \
    has "^DANGER: GETSET over a live stamp: .* getset \"wk\"" "$out"
check "watch: DEL by another client flagged" \
    has "^DANGER: DEL of a value another client wrote: .* del \"wk\"$" "$out"
check "watch: token SET NX PX" \
    has " token set \"wk\" \"0123456789abcdef0123456789abcdef\" \"NX\"" "$out"
check "watch: tslock's own release by script is not flagged" \
    eval '[ $(grep -c "^DANGER" "$out") -eq 3 ]'
check "watch: other keys ignored" eval '! grep -q other-key "$out"'
check "watch: summary names the Java host that deleted another's stamp" \
    has "^summary: 127.0.0.1:[0-9]* timestamp-ms=1 danger=1$" "$out"
check "watch: summary names the Java host with the fast clock" \
    has "^summary: 127.0.0.1:[0-9]* timestamp-ms=2 danger=1$" "$out"
check "watch: summary names the seconds-stamp host" \
    has "^summary: 127.0.0.1:[0-9]* timestamp-s=1 danger=0$" "$out"
check "watch: summary names the float-stamp host" \
    has "^summary: 127.0.0.1:[0-9]* timestamp-float=1 danger=0$" "$out"
: >"$dir/werr" # no handshake of the run before may be read as this one's
$tool -u "$WU" watch --for 2000 --json wk >"$dir/wout" 2>"$dir/werr" &
watcher=$!
await "^tslock: watching" "$dir/werr"
wcli setnx wk $stamp
wait $watcher
rc=$?
cp "$dir/wout" "$out"
check "watch --for: ends by itself, 0" eval '[ $rc -eq 0 ]'
check "watch --json: an event" \
    has '^{"time":[0-9.]*,"client":"127.0.0.1:[0-9]*","command":"setnx","args":\["wk","[0-9]*"\],"key":"wk","dialect":"timestamp-ms","stamp_dialect":"java-redislock/node-redis-lock","danger":null}$' "$out"
check "watch --json: summary" \
    has '^{"summary":{"clients":\[{"client":"127.0.0.1:[0-9]*","writes":{"timestamp-ms":1},"danger":0,"stamp_dialects":{"java-redislock/node-redis-lock":1}}\]}}$' "$out"

# Blind overwrites and clock skew told apart.  MONITOR shows no replies,
# but the order of its lines says what each GET found.  Raw GETSETs
# over a live redis-lock gem stamp and of an empty key (no GET before
# them), and the issue's interleaving: C's SETNX fails, the holder's DEL
# empties the key, C's GET finds it empty, a fresh holder's SETNX wins,
# and C's GETSET overwrites it.  Then a Java client whose clock runs two
# minutes ahead reads a live stamp and takes it over: skew, not blind.
: >"$dir/werr"
$tool -u "$WU" watch --for 30000 wb >"$dir/wout" 2>"$dir/werr" &
watcher=$!
await "^tslock: watching 1 key on" "$dir/werr"
wnow=$(($(now_ms) / 1000))
wcli set wb "$((wnow + 60))-27118-520"
wcli getset wb "$((wnow + 61))-27118-521"
wcli del wb
wcli getset wb "$((wnow + 61)):15131"
wcli set wb $((wnow + 60))
# C: one connection, fed line by line; each step awaits its MONITOR line.
mkfifo "$dir/c.fifo"
"$cli" -p $wport <"$dir/c.fifo" >"$dir/c.out" 2>&1 &
c_pid=$!
exec 4>"$dir/c.fifo"
echo "SETNX wb $((wnow + 61))" >&4
await_count ' setnx "wb"' "$dir/wout" 1
wcli del wb
await_count ' del "wb"$' "$dir/wout" 2
echo "GET wb" >&4
await_count ' get "wb"$' "$dir/wout" 1
wcli setnx wb $((wnow + 62))
await_count ' setnx "wb"' "$dir/wout" 2
echo "GETSET wb $((wnow + 61))" >&4
exec 4>&-
wait $c_pid
wcli del wb
"$legacy" -p $wport client x java 60000 client y java 60000 120000 \
    lock x wb lock y wb >"$dir/lg"
await_count ' getset "wb"' "$dir/wout" 4
kill -TERM $watcher
wait $watcher
cp "$dir/wout" "$dir/blind.out"
cp "$dir/wout" "$out"
# The address of the client that wrote the line matching $1.
addr_of() { grep -- "$1" "$dir/blind.out" | head -1 | sed 's/.* \(127\.0\.0\.1:[0-9]*\) .*/\1/'; }
gem_taker=$(addr_of 'getset "wb" "[0-9]*-27118-521"')
predis=$(addr_of 'getset "wb" "[0-9]*:15131"')
c_addr=$(addr_of ' get "wb"$')
java_taker=$(addr_of 'timestamp-ms getset "wb"')
# blind_checks RUNNER: every check of the watch in $out.
blind_checks() {
    $1 "watch: a raw GETSET over a live stamp is a blind overwrite" \
        has "^DANGER: blind GETSET over a live stamp: .* $gem_taker timestamp-s getset \"wb\"" "$out"
    $1 "watch: ... naming the gem's dialect, not skew" \
        has "^BLIND: $gem_taker (redis-lock-gem): GETSET over a live stamp without a GET of the key first; not clock skew$" "$out"
    $1 "watch: a raw GETSET of an empty key is a blind overwrite" \
        has "^DANGER: blind GETSET of an empty key: .* $predis timestamp-s getset \"wb\"" "$out"
    $1 "watch: ... naming PredisLock's dialect, not skew" \
        has "^BLIND: $predis (predislock): GETSET of an empty key without a GET of the key first; not clock skew$" "$out"
    $1 "watch: a GETSET after a GET that found the key empty is blind" \
        has "^BLIND: $c_addr (redis-docs/resque-lock-timeout): GETSET over a live stamp after its GET found the key empty (a client that takes an empty GET for an expired lock); not clock skew$" "$out"
    $1 "watch: no blind writer is called skewed" \
        eval '! grep -q "^SKEW: \($gem_taker\|$predis\|$c_addr\):" "$out"'
    $1 "watch: the skewed takeover is still skew" \
        has "^SKEW: $java_taker: its clock runs at least [0-9]* ms ahead of the server's: took over a stamp the server's clock calls live$" "$out"
    $1 "watch: ... and not blind: three blind GETSETs in all" \
        eval '[ "$(grep -c "^BLIND: " "$out")" -eq 3 ] && ! grep -q "^BLIND: $java_taker" "$out"'
    $1 "watch: the summary counts each blind writer's" \
        eval 'has "^blind: $gem_taker: 1 blind GETSET$" "$out" && has "^blind: $c_addr: 1 blind GETSET$" "$out"'
    $1 "watch: the summary names each writer's dialects" \
        eval 'has "^dialects: $predis predislock=1$" "$out" && has "^dialects: $java_taker java-redislock/node-redis-lock=2$" "$out"'
}
blind_checks check
# The checks can fail: on the output as watch wrote it before it told a
# blind overwrite from skew (a SKEW line for every GETSET over a live
# stamp, no BLIND lines, no dialect), each must fail.
sed -e '/^BLIND: /d' -e '/^blind: /d' -e '/^dialects: /d' \
    -e 's/^DANGER: blind GETSET over a live stamp: \(.*\)$/DANGER: GETSET over a live stamp: \1\
SKEW: x: took over a stamp the server'"'"'s clock calls live/' \
    -e 's/^DANGER: blind GETSET of an empty key: //' \
    -e "s/^SKEW: $java_taker:/SKEW: 127.0.0.2:1:/" \
    "$dir/blind.out" >"$out"
awk -v c="$c_addr" 'index($0, " " c " ") && / getset / { print "SKEW: " c ": took over a stamp the server'"'"'s clock calls live" } { print }' \
    "$out" >"$out.2" && mv "$out.2" "$out"
blind_checks refutes

# A GETSET race and the loser's restore: A and B both read an expired
# stamp; A's GETSET wins, B's loses and B puts A's value back, so the
# value is A's again and A's release is no DEL of another's value;
# neither GETSET is blind (each read a stamp) nor skewed.
: >"$dir/werr"
$tool -u "$WU" watch --for 30000 wr >"$dir/wout" 2>"$dir/werr" &
watcher=$!
await "^tslock: watching 1 key on" "$dir/werr"
wnow=$(($(now_ms) / 1000))
wcli set wr $((wnow - 30))
mkfifo "$dir/a.fifo" "$dir/b.fifo"
"$cli" -p $wport <"$dir/a.fifo" >"$dir/a.out" 2>&1 &
a_pid=$!
"$cli" -p $wport <"$dir/b.fifo" >"$dir/b.out" 2>&1 &
b_pid=$!
exec 5>"$dir/a.fifo" 6>"$dir/b.fifo"
# step FD COMMAND PATTERN N: send, then await the Nth MONITOR line.
step() {
    echo "$2" >&$1
    await_count "$3" "$dir/wout" $4
}
step 5 "GET wr" ' get "wr"$' 1
step 6 "GET wr" ' get "wr"$' 2
step 5 "GETSET wr $((wnow + 61))" ' getset "wr"' 1
step 6 "GETSET wr $((wnow + 62))" ' getset "wr"' 2
step 6 "SET wr $((wnow + 61))" " set \"wr\" \"$((wnow + 61))\"$" 1
step 5 "DEL wr" ' del "wr"$' 1
exec 5>&- 6>&-
wait $a_pid $b_pid
kill -TERM $watcher
wait $watcher
cp "$dir/wout" "$dir/race.out"
cp "$dir/wout" "$out"
# A and B: the clients of the two GETs (the setup's SET of an expired
# stamp from another connection is skew of its own).
race_a=$(grep ' get "wr"$' "$dir/race.out" | sed -n '1s/^[0-9.]* \([^ ]*\) .*/\1/p')
race_b=$(grep ' get "wr"$' "$dir/race.out" | sed -n '2s/^[0-9.]* \([^ ]*\) .*/\1/p')
race_checks() {
    $1 "watch: the GETSET race's winner releases its own value, no DANGER" \
        eval '! grep -q "^DANGER: DEL of a value another client wrote" "$out" && has " del \"wr\"$" "$out"'
    $1 "watch: neither GETSET of the race is blind or skewed" \
        eval '[ "$(grep -c " getset \"wr\"" "$out")" -eq 2 ] && ! grep -q "^BLIND: \|^SKEW: \($race_a\|$race_b\):\|blind GETSET" "$out"'
}
race_checks check
# The checks can fail: on the output as watch wrote it before it gave a
# restored value back to its writer, and with a GETSET called skew.
sed -e 's/^\([0-9.]* 127[^ ]* - del "wr"\)$/DANGER: DEL of a value another client wrote: \1/' \
    -e '0,/ getset "wr"/s/^\(.* getset "wr".*\)$/\1\
SKEW: '"$race_a"': took over a stamp the server'"'"'s clock calls live/' \
    "$dir/race.out" >"$out"
race_checks refutes
t "watch: survey's --match is refused" 64 $tool -u "$WU" watch --match x wk
t "watch: --for elsewhere is refused" 64 $tool -u "$WU" --for 5 status wk
t "watch: needs a KEY" 64 $tool -u "$WU" watch
# Old MONITOR formats, played by the proxy: 2.2 - 2.4 give no client
# address, 2.0 also puts a '+' in front.  The proxy's own upstream
# commands (the PTTL with which it plays 2.0's SETNX, say) show too.
for v in 2.4.18 2.0.5; do
    if [ ! -x "$old" ]; then
        echo "ok - watch on $v: skipped (no tests/oldredis)"
        break
    fi
    wcli del wk
    osock="$dir/wold-$v.sock"
    "$old" --emulate $v --listen "$osock" --upstream-port $wport &
    old_pid=$!
    await_file "$osock"
    : >"$dir/werr"
    $tool -u "unix://$osock" watch --for 20000 wk >"$dir/wout" 2>"$dir/werr" &
    watcher=$!
    await "^tslock: watching 1 key on" "$dir/werr"
    "$legacy" -s "$osock" client x java 60000 client y java 60000 120000 \
        lock x wk lock y wk unlock x wk >"$dir/lg"
    # Through the proxy, MONITOR's lines come later still: the last
    # (x's DEL) is awaited before the SIGTERM.
    await_count ' del "wk"$' "$dir/wout" 1
    kill -TERM $watcher
    wait $watcher
    rc=$?
    cp "$dir/wout" "$out"
    cp "$dir/werr" "$err"
    check "watch on $v: ends 0" eval '[ $rc -eq 0 ]'
    check "watch on $v: the server's version" has "(Redis ${v%.*})$" "$err"
    check "watch on $v: a SETNX of an ms stamp, client unknown" \
        has "^[0-9.]* ? timestamp-ms setnx \"wk\" \"[0-9]*\"$" "$out"
    check "watch on $v: GETSET over a live stamp flagged" \
        has "^DANGER: GETSET over a live stamp: .* getset \"wk\"" "$out"
    check "watch on $v: a DEL by an unknown client is not flagged" \
        eval '[ $(grep -c "^DANGER" "$out") -eq 1 ]'
    kill "$old_pid" && wait "$old_pid" 2>/dev/null
    old_pid=
done
kill "$w_pid" && wait "$w_pid" 2>/dev/null
w_pid=
# ------------------------------------------------------------ replay
t "replay --list" 0 $tool replay --list
check "replay --list: race a on one line" has "^a  DEL after seeing expiry" "$out"
t "replay a" 0 $tool -u "$U" replay a
check "replay a: P3's paused DEL" has "^ *[0-9]*\. P3 *DEL *-> (nil)$" "$out"
check "replay a: the broken verdict" \
    has "broken (naive DEL recovery): both P2 and P3 hold the lock" "$out"
check "replay a: the tslock verdict" \
    has "tslock (GETSET takeover): only P2 holds it" "$out"
check "replay a: its scratch key is gone" eval '! key_exists tslock:replay:a'
for race in b c d e h; do
    t "replay $race ends as documented" 0 $tool -u "$U" replay $race
    check "replay $race: both verdicts" \
        eval 'has "^  broken (" "$out" && has "^  tslock (" "$out"'
done
t "replay of an unknown race" 64 $tool -u "$U" replay zz
check "replay zz: one line" one_line "no race 'zz'"
t "replay without a race" 64 $tool replay
t "--list on another form" 64 $tool -u "$U" status k --list
page="$dir/races.html"
t "replay --html of two races" 0 $tool -u "$U" replay --html "$page" a d
check "replay --html: both narrated" \
    eval 'has "^race a: " "$out" && has "^race d: " "$out"'
check "replay --html: the page holds their data" \
    eval 'grep -q "id=\"tslock-data\"" "$page" && grep -q "\"id\":\"d\"" "$page"'
check "replay --html: no other race on it" eval '! grep -q "\"id\":\"b\"" "$page"'
check "replay --html: self-contained" \
    eval '! grep -q -i -e "src=" -e "@import" -e "http://" -e "https://" "$page"'
check "replay --html: its scratch keys are gone" \
    eval '! key_exists tslock:replay:a && ! key_exists tslock:replay:d'
t "replay --html of an unknown race" 64 $tool -u "$U" replay --html "$page" a zz
check "replay --html zz: one line" one_line "no race 'zz'"
t "replay --html with an empty file name" 64 $tool -u "$U" replay --html ""
t "replay --html into a missing directory" 71 \
    $tool -u "$U" replay --html "$dir/no/such/dir/p.html" a
t "--doc without --html" 64 $tool -u "$U" replay --doc x a
t "--html on another form" 64 $tool -u "$U" status k --html "$page"
t "replay with --list and --html" 64 $tool replay --list --html "$page"

# -------------------------------------------------------------- demo
svg="$dir/demo.svg"
t "demo runs" 0 $tool demo --workers 4 --duration 500 --svg "$svg"
# Columns: ... holds overlaps past-lease foreign-DEL lost.
demo_column() {
    awk -v row="$1" -v back="$2" 'BEGIN { bad = 1 }
        $1 == row && $NF ~ /^[0-9-]+$/ { bad = $(NF - back) != 0 }
        END { exit bad }' "$out"
}
for s in 3 4 6; do
    check "demo: scheme $s has no overlaps" demo_column $s 3
    check "demo: scheme $s has no foreign DELs" demo_column $s 1
done
check "demo: broken schemes labelled" has "^1 .*(broken)" "$out"
check "demo: the migration row" has "^5 Java + tslock bridge, one key" "$out"
check "demo: migration foreign DELs are Java's" \
    has "foreign DELs were all sent by Java releases" "$out"
# Refused writes need a pause to meet a waiter, so only their count's
# presence is checked; the damage must be 0 every time.
check "demo: the fencing row" has "^6 tslock token + fencing" "$out"
check "demo: fenced writes counted, no damage" \
    has "^  fenced writes: [0-9]* accepted, [0-9]* refused as stale, damage 0$" \
    "$out"
demo_dir=$(sed -n 's|.* on \(/tmp/tslock-demo\.[^/]*\)/redis.sock$|\1|p' "$out")
check "demo: its server's directory is gone" \
    eval '[ -n "$demo_dir" ] && [ ! -e "$demo_dir" ]'

# The timeline: one bar (a line of its own) per hold, inside its
# scheme's <g id="scheme-N">, as many as the holds column printed, and
# as many marked overlap and past lease as those columns.
svg_bars() {
    awk -v id="scheme-$1" -v pat="$2" '$0 ~ "<g id=\"" id "\"" { on = 1 }
        on && $0 ~ pat { n++ }
        on && /<\/g>/ { on = 0 }
        END { print n + 0 }' "$svg"
}
# svg_matches COLUMN-FROM-THE-END PATTERN
svg_matches() {
    for s in 1 2 3 4 5 6; do
        n=$(awk -v row=$s -v back="$1" '$1 == row && $NF ~ /^[0-9-]+$/ {
            print $(NF - back) }' "$demo_out")
        [ -n "$n" ] && [ "$(svg_bars $s "$2")" -eq "$n" ] || return 1
    done
}
demo_out="$dir/demo.out"
cp "$out" "$demo_out"
check "demo --svg: a bar per hold in each panel" \
    svg_matches 4 '<rect class="hold'
check "demo --svg: overlaps marked" svg_matches 3 '<rect class="hold[a-z ]*overlap'
check "demo --svg: past lease marked" svg_matches 2 '<rect class="hold past'
svg_refused_marked() {
    n=$(sed -n 's/.* accepted, \([0-9]*\) refused as stale.*/\1/p' \
        "$demo_out")
    [ -n "$n" ] && [ "$(svg_bars 6 '<rect class="hold[a-z ]*refused')" -eq "$n" ]
}
check "demo --svg: refused writes marked in the fencing panel" \
    svg_refused_marked
check "demo --svg: a legend" grep -q '<g id="legend"' "$svg"
check "demo --svg: self-contained" \
    eval '! grep -q -e "href=" -e "<script" -e "@import" "$svg"'
if command -v xmllint >/dev/null 2>&1; then
    check "demo --svg: well-formed XML" xmllint --noout "$svg"
else
    echo "ok - demo --svg: well-formed XML # SKIP xmllint not installed"
fi
t "demo --svg on another form" 64 $tool --svg "$svg" status k
t "demo --svg FILE not writable" 71 $tool demo --svg "$dir/no/such/dir.svg"
check "demo --svg: a bad path fails before any round" \
    eval '! grep -q scheme "$out"'

finish

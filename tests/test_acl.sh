#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# test_acl.sh - least privilege, as doc/acl.md writes it down.  Every
# "ACL SETUSER" user of that page is created on a private redis-server
# (Redis 6+, Debian's 7.0) and runs its scheme through tslock: a command
# under the lock, a handle acquired, extended and released, a contended
# wait, and the takeover of an expired stamp where the scheme has one.
# Then each rule is taken away in turn: a rule of the first line must
# make the scenario fail with TSLOCK_ENOPERM (exit 77) and a message
# naming the refusal, leaving no key that outlives the lease; a rule of
# the second line (wake-ups) must not matter.  The check of what is left
# is shown failing on a half-written lock (SETNX, then a refused PEXPIRE,
# as tslock's scripts did before they undid it) and a stamp beyond the
# lease.  Users run in parallel, each on its own server.  POSIX sh.
set -u

tool="${top_builddir:-.}/tools/tslock"
doc="${top_srcdir:-.}/doc/acl.md"
. "${top_srcdir:-.}/tests/harness.sh"
need_server
[ -x "$tool" ] || { echo "no tool at $tool"; exit 1; }
[ -r "$doc" ] || { echo "no $doc"; exit 1; }
# The program itself, not libtool's wrapper: this test runs it ~900 times.
direct_tool "$tool"

dir=$(mktemp -d /tmp/tslock-acl.XXXXXX) || exit 1
# redis-cli runs as the default user; each tslock run is given its user's
# password on its own command line.
unset REDISCLI_AUTH
pid=
cleanup() {
    [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
    # Every server told to stop first, then each waited for: they stop
    # side by side, not one after another.
    ps=
    for f in "$dir"/*.pid; do
        [ -f "$f" ] || continue
        p=$(cat "$f")
        kill "$p" 2>/dev/null && ps="$ps $p"
    done
    for p in $ps; do
        n=0
        while kill -0 "$p" 2>/dev/null && [ $n -lt 500 ]; do
            n=$((n + 1))
            sleep 0.01
        done
    done
    rm -rf "$dir"
}
th_on_exit cleanup
trap 'exit 130' INT TERM
out="$dir/out"
err="$dir/err"
passed=0
failed=0
# Leases long enough that no load on the machine lets one run out between
# the processes of a scenario; what a refused run leaves is judged by its
# TTLs, not by waiting for them.
lease=30000
# 1 while the scenario's token waiters listen and so join the line.
listening=1

# The version, from a server of its own; each user then gets its own
# server (check_user), so no other user's run loads its scripts.
start_unix_server "$dir/r.sock" "$dir/r.log" || exit 1
pid=$started
major=$("$cli" -s "$dir/r.sock" info server \
    | sed -n 's/^redis_version:\([0-9]*\).*/\1/p')
kill "$pid" && wait "$pid" 2>/dev/null
pid=
if [ "${major:-0}" -lt 7 ]; then
    echo "SKIP: doc/acl.md's rules need Redis 7 (channel rules); this"
    echo "redis-server is ${major:-unknown}"
    exit 77
fi

# The users of the page: name, then the rules of each of its two lines.
grep '^ACL SETUSER ' "$doc" | sed 's/^ACL SETUSER //' >"$dir/lines"
users=$(awk '{print $1}' "$dir/lines" | uniq)
# TEST_ACL_USERS: only these (when looking into one).
[ -n "${TEST_ACL_USERS:-}" ] && users=$TEST_ACL_USERS
required() { awk -v u="$1" '$1 == u && $2 == "reset" {
    for (i = 5; i <= NF; i++) print $i }' "$dir/lines"; }
wakeups() { awk -v u="$1" '$1 == u && $2 != "reset" {
    for (i = 2; i <= NF; i++) print $i }' "$dir/lines"; }

# What each user runs: the tool's options for its scheme and mode.
options_of() {
    case $1 in
    tslock-token) echo "-m token" ;;
    tslock-fence) echo "-m token --fence" ;;
    tslock-sharded) echo "-m token --pubsub sharded" ;;
    tslock-functions) echo "-m token" ;;
    tslock-fair) echo "-m token --fair" ;;
    tslock-timestamp) echo "-m timestamp" ;;
    tslock-bridge) echo "-m bridge" ;;
    tslock-rw) echo "--exclusive" ;;
    tslock-semaphore) echo "--permits 1" ;;
    *) echo "unknown" ;;
    esac
}

# ucli ARGS...: redis-cli as the default user on $u's own server.
ucli() { "$cli" -s "$dir/$u.sock" "$@"; }

# The rules a scenario cannot reach, with the path that needs them: their
# removal may fail (TSLOCK_ENOPERM, exit 77) or not, but nothing else.
edge_rules() {
    case $1 in
    # A semaphore's key holding a mark no permit explains (a release
    # refused halfway): its PTTL says how long to wait.
    tslock-semaphore) echo "+pttl" ;;
    esac
}

# setuser USER RULES...: the user anew, with exactly these rules, and no
# script cached and no function library loaded, so every run loads them
# as on a fresh server.
setuser() {
    u=$1
    shift
    # One redis-cli for the three commands (its stdin form splits each
    # line as its arguments would be: no rule holds a space or a quote).
    printf '%s\n' "acl setuser $u reset on >pw-$u $*" "script flush" \
        "function flush" | ucli >"$dir/$u.setuser"
    [ "$(grep -c '^OK$' "$dir/$u.setuser")" -eq 3 ] \
        || echo "setuser $u: $(cat "$dir/$u.setuser")" >&2
}

# scenario USER PREFIX TTL OPTIONS...: 0 when every step worked; else the
# failing step's exit status, its stderr in $dir/USER.err.  Holders keep
# their lock until the test lets them go (a line on their FIFO), which it
# does once the waiter has said (-v) that it found the lock held: the
# order comes from what the processes say, not from how long they take.
scenario() {
    u=$1 p=$2 ttl=$3
    shift 3
    url="unix://$u@$dir/$u.sock"
    e="$dir/$u.err"
    run() { REDISCLI_AUTH="pw-$u" "$tool" -u "$url" "$@" 2>"$e"; }
    rm -f "$dir/$u.ran"
    run -q "$@" -t "$ttl" "$p:a" -- touch "$dir/$u.ran" || return $?
    [ -e "$dir/$u.ran" ] || { echo "command did not run" >"$e"; return 1; }
    h=$(run -q "$@" -t "$ttl" acquire "$p:h") || return $?
    h=${h%% *}
    h2=$(run -q "$@" -t "$ttl" extend "$p:h" "$h") || return $?
    [ -n "$h2" ] && h=${h2%% *}
    run -q "$@" release "$p:h" "$h" || return $?
    contend "$p:b" "$@" || return $?
    case "$*" in
    *--exclusive*)
        # A shared hold, and a writer that waits for it to end.  (That new
        # shared holders then wait behind the writer is test_rwsem's,
        # ordered by the step hook: here the machine's load could let the
        # writer's intent lapse.)
        hold "$p:s" --shared || return $?
        REDISCLI_AUTH="pw-$u" "$tool" -v -u "$url" --exclusive -t "$ttl" \
            -w 20000 "$p:s" -- true 2>"$e.waiter" &
        waited $! "$e.waiter" || return $?
        # A shared hold by handle: acquired, extended, released.
        h=$(run -q --shared -t "$ttl" acquire "$p:s") || return $?
        h2=$(run -q --shared -t "$ttl" extend "$p:s" "$h") || return $?
        [ -n "$h2" ] && h=$h2
        run -q --shared release "$p:s" "$h" || return $?
        ;;
    *timestamp* | *bridge*)
        # A legacy stamp, expired ten seconds ago: taken over.
        ucli set "$p:t" $(($(date +%s) * 1000 - 10000)) >/dev/null
        run -q "$@" -t "$ttl" "$p:t" -- true || return $?
        ;;
    esac
    return 0
}

# let_go: the holder's COMMAND ends (it reads a line from the FIFO
# $flag).  Opened read-write, the FIFO never blocks the test, even with
# the holder gone; the holder keeps it open read-write from before it
# says "taken", so the line waits there until it reads it.
let_go() {
    echo go 1<>"$flag" 2>/dev/null
    rm -f "$flag"
}

# said TEXT FILE: whether a line of FILE holds TEXT (the shell's read,
# not a grep process: this is asked every 10 ms while a waiter starts).
said() {
    [ -r "$2" ] || return 1
    while IFS= read -r said_line; do
        case $said_line in *"$1"*) return 0 ;; esac
    done <"$2"
    return 1
}

# hold KEY OPTIONS...: a holder of KEY in the background ($holder) that
# keeps it until let_go; fails with the holder's status when it did not
# take the key.
hold() {
    k=$1
    shift
    flag="$dir/$u.flag"
    rm -f "$flag"
    mkfifo "$flag" || return 1
    # Before the holder starts: removed after, it could remove the mark
    # of a holder quick enough to have made it already, and the wait
    # below would see none until its bound, with the holder keeping the
    # key past its lease ("tslock-fair without +pttl" exited 75 so).
    rm -f "$flag.taken"
    REDISCLI_AUTH="${hold_auth:-pw-$u}" "$tool" -q -u "$url" "$@" -t "$ttl" \
        "$k" -- \
        sh -c 'exec 3<>"$1"; echo taken >"$1.taken"; read -r x <&3' \
        - "$flag" 2>"$e.holder" &
    holder=$!
    n=0
    until [ -e "$flag.taken" ]; do
        if ! kill -0 $holder 2>/dev/null || [ $n -gt 3000 ]; then
            let_go; wait $holder; rc=$?
            cp "$e.holder" "$e"
            return $((rc ? rc : 1))
        fi
        n=$((n + 1))
        sleep 0.01
    done
}

# contend KEY OPTIONS...: a holder, and a waiter that finds KEY held and
# takes it once the holder lets go.
contend() {
    k=$1
    shift
    hold "$k" "$@" || return $?
    REDISCLI_AUTH="pw-$u" "$tool" -v -u "$url" "$@" -t "$ttl" -w 20000 "$k" \
        -- true 2>"$e.waiter" &
    waiter=$!
    waited "$waiter" "$e.waiter" "$k" "$@"
}

# waited PID FILE [KEY OPTIONS...]: once the waiter PID says in FILE that
# the lock is held (and, for a token lock, has joined KEY's line of
# waiters, so the release has someone to wake), the holder lets go and
# both must succeed; a waiter that fails before that (a refusal on its
# first attempt) is the failure to report.
in_line() {
    case "$listening $*" in
    "1 "*"-m token"*) [ "$(ucli zcard "{$1}:queue")" -ge 1 ] ;;
    *) true ;;
    esac
}

waited() {
    n=0
    until said "is held" "$2" \
        && { [ $# -lt 3 ] || in_line "$3" "$@"; }; do
        if ! kill -0 "$1" 2>/dev/null || [ $n -gt 3000 ]; then
            let_go
            wait "$1"
            rc=$?
            wait $holder
            cp "$2" "$e"
            return $((rc ? rc : 1))
        fi
        n=$((n + 1))
        sleep 0.01
    done
    let_go
    # A holder that failed (its release refused) may leave the key held
    # to its lease: the waiter would only wait out its -w.  Its outcome
    # is not what is judged then, so it is stopped (SIGTERM: the tool
    # leaves the line and exits) rather than waited for.
    wait $holder || {
        rc=$?
        cp "$e.holder" "$e"
        kill "$1" 2>/dev/null
        wait "$1"
        return $rc
    }
    wait "$1" || { rc=$?; cp "$2" "$e"; return $rc; }
}

# Nothing a refused run left outlives its lease: every key of the run
# has a TTL, but a timestamp lock's stamp (legacy clients read it, so it
# never has one), which must not lie beyond the lease, and the fencing
# counter, which is kept on purpose.
nothing_outlives() {
    u=$1 p=$2 ttl=$3
    now=$(($(date +%s) * 1000))
    # Each key of the run with its PTTL and its value ('' for a value no
    # GET reads), in one round trip: three lines a key, then a line
    # ':end' (no key is named so) to show the list is whole.
    ucli eval "local out = {} for _, k in ipairs(redis.call('keys', \
        ARGV[1])) do local v = redis.pcall('get', k) if type(v) ~= \
        'string' then v = '' end out[#out + 1] = k out[#out + 1] = \
        tostring(redis.call('pttl', k)) out[#out + 1] = v end \
        out[#out + 1] = ':end' return out" 0 "*$p:*" >"$dir/$u.keys" 2>&1
    whole=0
    while read -r k; do
        [ "$k" = :end ] && { whole=1; break; }
        read -r left && read -r v || break
        case $k in *:fence) continue ;; esac
        if [ "$left" -eq -1 ]; then
            v=${v%%.*}
            case $v in
            '' | *[!0-9]*)
                echo "(then '$k' was left with no TTL)" >>"$dir/$u.err"
                return 1
                ;;
            esac
            [ "$v" -le $((now + ttl + 2000)) ] && continue
            echo "(then '$k' held a stamp $v beyond the lease)" \
                >>"$dir/$u.err"
            return 1
        fi
    done <"$dir/$u.keys"
    [ $whole -eq 1 ] && return 0
    echo "(then the keys could not be read: $(head -c 200 "$dir/$u.keys"))" \
        >>"$dir/$u.err"
    return 1
}

# checked USER KEY STATUS RULE OPTIONS...: tslock check, asked without
# running anything, agrees: exit STATUS, and without RULE a MISSING line
# for its command (a key or channel pattern: some MISSING line).
checked() {
    u=$1 k=$2 want=$3 r=$4
    shift 4
    REDISCLI_AUTH="pw-$u" "$tool" -u "unix://$u@$dir/$u.sock" "$@" check \
        "$k" >"$dir/$u.check" 2>&1
    crc=$?
    case $r in
    +*) line="MISSING  ${r#+} " ;;
    '') line="" ;;
    *) line="MISSING" ;;
    esac
    if [ $crc -eq "$want" ] && { [ -z "$line" ] || grep -q -- "$line" \
        "$dir/$u.check"; } && { [ -n "$r" ] || ! grep -q MISSING \
        "$dir/$u.check"; }; then
        echo "ok - $u${r:+ without $r}: tslock check says so (exit $want)" \
            >>"$report"
    else
        echo "FAIL - $u${r:+ without $r}: tslock check exit $crc, expected" \
            "$want${line:+ and '$line'}: $(head -c 600 "$dir/$u.check")" \
            >>"$report"
    fi
}

# check_user USER: writes its ok/FAIL lines to $dir/USER.report.
check_user() {
    u=$1
    opts=$(options_of "$u")
    report="$dir/$u.report"
    : >"$report"
    if ! start_unix_server "$dir/$u.sock" "$dir/$u.log"; then
        echo "FAIL - $u: its redis-server did not start" >>"$report"
        return
    fi
    echo "$started" >"$dir/$u.pid"
    if [ "$opts" = unknown ]; then
        echo "FAIL - $u: doc/acl.md names a user this test does not know" \
            >>"$report"
        return
    fi
    setuser "$u" $(required "$u") $(wakeups "$u")
    # shellcheck disable=SC2086
    if scenario "$u" "lock:$u:full" "$lease" $opts; then
        echo "ok - $u: every step works with the page's rules" >>"$report"
        checked "$u" "lock:$u:full:a" 0 "" $opts
    else
        echo "FAIL - $u: the page's rules are not enough (exit $?):" \
            "$(head -c 400 "$dir/$u.err")" >>"$report"
        return
    fi
    i=0
    for r in $(required "$u"); do
        i=$((i + 1))
        # The sharded user's first line is the token user's, whose every
        # removal is run there: here only tslock check is asked about it.
        if [ "$u" = tslock-sharded ]; then
            rest=$(required "$u" | grep -vxF -- "$r")
            # shellcheck disable=SC2086
            setuser "$u" $rest $(wakeups "$u")
            # shellcheck disable=SC2086
            checked "$u" "lock:$u:r$i:a" 77 "$r" $opts
            continue
        fi
        rest=$(required "$u" | grep -vxF -- "$r")
        # shellcheck disable=SC2086
        setuser "$u" $rest $(wakeups "$u")
        # shellcheck disable=SC2086
        scenario "$u" "lock:$u:r$i" "$lease" $opts
        ran=$?
        edge_rules "$u" | grep -qxF -- "$r" \
            || checked "$u" "lock:$u:r$i:a" 77 "$r" $opts
        rc=$ran
        if [ $rc -eq 0 ] && edge_rules "$u" | grep -qxF -- "$r"; then
            echo "ok - $u without $r: not reached by the scenario (an" \
                "edge path needs it)" >>"$report"
        elif [ $rc -eq 77 ] && grep -q "TSLOCK_ENOPERM" "$dir/$u.err" \
            && grep -q "for lock 'lock:$u:r$i" "$dir/$u.err"; then
            # shellcheck disable=SC2086
            if nothing_outlives "$u" "lock:$u:r$i" "$lease"; then
                echo "ok - $u without $r: exit 77, TSLOCK_ENOPERM naming" \
                    "the lock, nothing left" >>"$report"
            else
                echo "FAIL - $u without $r: a key outlives the lease:" \
                    "$(tail -c 300 "$dir/$u.err")" >>"$report"
            fi
        else
            echo "FAIL - $u without $r: exit $rc, expected 77 with" \
                "TSLOCK_ENOPERM: $(head -c 300 "$dir/$u.err")" >>"$report"
        fi
    done
    # Without a wake-up rule a waiter polls, and a polling waiter stays
    # out of the line.
    listening=0
    for r in $(wakeups "$u"); do
        i=$((i + 1))
        rest=$(wakeups "$u" | grep -vxF -- "$r")
        # shellcheck disable=SC2086
        setuser "$u" $(required "$u") $rest
        # shellcheck disable=SC2086
        checked "$u" "lock:$u:w$i:a" 0 "$r" $opts
        if scenario "$u" "lock:$u:w$i" "$lease" $opts; then
            echo "ok - $u without $r: works, waiters poll" >>"$report"
        else
            echo "FAIL - $u without $r: exit $?, expected to work:" \
                "$(head -c 300 "$dir/$u.err")" >>"$report"
        fi
    done
}

# The check of what a refused run leaves can fail: a SETNX whose PEXPIRE
# the ACL refuses leaves a lock that never expires, and a stamp far
# beyond the lease outlives it.
proof() {
    u=tslock-proof
    report="$dir/$u.report"
    : >"$report"
    start_unix_server "$dir/$u.sock" "$dir/$u.log" || return
    echo "$started" >"$dir/$u.pid"
    setuser "$u" '~lock:*' +setnx +evalsha +eval +get
    REDISCLI_AUTH="pw-$u" "$cli" -s "$dir/$u.sock" --user "$u" \
        eval "if redis.call('setnx', KEYS[1], ARGV[1]) == 1 then
              redis.call('pexpire', KEYS[1], ARGV[2]) end return 1" \
        1 "lock:$u:r1:a" token "$lease" >"$dir/$u.eval" 2>&1
    if grep -q "can't run this command" "$dir/$u.eval" \
        && ! nothing_outlives "$u" "lock:$u:r1" "$lease"; then
        echo "ok - control: a SETNX whose PEXPIRE was refused is caught" \
            >>"$report"
    else
        echo "FAIL - control: the half-written lock was not caught:" \
            "$(cat "$dir/$u.eval")" >>"$report"
    fi
    ucli set "lock:$u:r2:t" $(($(date +%s) * 1000 + 3600000)) >/dev/null
    if ! nothing_outlives "$u" "lock:$u:r2" "$lease"; then
        echo "ok - control: a stamp an hour past the lease is caught" \
            >>"$report"
    else
        echo "FAIL - control: a stamp past the lease was not caught" \
            >>"$report"
    fi
}

# Clients on EVAL and clients on FCALL share one lock: each waits for
# the other's hold and takes the key once it is released.
mixed() {
    u=tslock-mixed
    report="$dir/$u.report"
    : >"$report"
    start_unix_server "$dir/$u.sock" "$dir/$u.log" || return
    echo "$started" >"$dir/$u.pid"
    for who in tslock-token tslock-functions; do
        # shellcheck disable=SC2046
        ucli acl setuser "$who" reset on ">pw-$who" $(required "$who") \
            $(wakeups "$who") >/dev/null
    done
    ttl=$lease
    e="$dir/$u.err"
    for pair in "tslock-token tslock-functions" \
        "tslock-functions tslock-token"; do
        set -- $pair
        url="unix://$1@$dir/$u.sock"
        hold_auth="pw-$1" hold "lock:mix:$1" -m token
        hrc=$?
        hold_auth=
        url="unix://$2@$dir/$u.sock"
        REDISCLI_AUTH="pw-$2" "$tool" -v -u "$url" -m token -t "$ttl" \
            -w 20000 "lock:mix:$1" -- true 2>"$e.waiter" &
        if [ $hrc -eq 0 ] && waited $! "$e.waiter" "lock:mix:$1" -m token; then
            echo "ok - a $2 waiter takes the lock after a $1 holder" \
                >>"$report"
        else
            echo "FAIL - a $2 waiter beside a $1 holder: $(head -c 300 "$e")" \
                >>"$report"
        fi
    done
}

# Under the default --pubsub auto, tslock check lists the sharded rules
# on a Redis 7.0+ Cluster node (cluster_enabled:1 in INFO; a node with
# no slots is enough, nothing runs): reported missing for the token
# user, allowed for the sharded one; with --pubsub classic, not asked.
cluster_auto() {
    u=tslock-cluster
    report="$dir/$u.report"
    : >"$report"
    if ! start_tcp_server 7 "$dir/$u.log" --cluster-enabled yes \
        --cluster-config-file "$dir/$u-nodes.conf"; then
        echo "FAIL - $u: no cluster-enabled redis-server started" >>"$report"
        return
    fi
    echo "$started" >"$dir/$u.pid"
    for who in tslock-token tslock-sharded; do
        # shellcheck disable=SC2046
        "$cli" -p "$started_port" acl setuser "$who" reset on ">pw-$who" \
            +info $(required "$who") $(wakeups "$who") >/dev/null
    done
    for run in "tslock-token auto 0 MISSING..ssubscribe.*MISSING..spublish" \
        "tslock-sharded auto 0 ok.......ssubscribe.*ok.......spublish" \
        "tslock-token classic 0 -"; do
        set -- $run
        REDISCLI_AUTH="pw-$1" "$tool" -u "redis://$1@127.0.0.1:$started_port" \
            --pubsub "$2" check lock:c >"$dir/$u.check" 2>&1
        crc=$?
        flat=$(tr '\n' ' ' <"$dir/$u.check")
        if [ $crc -eq "$3" ] && if [ "$4" = - ]; then
            ! grep -q "ssubscribe\|spublish\|MISSING" "$dir/$u.check"
        else
            echo "$flat" | grep -q "sharded wake-ups: what" \
                && echo "$flat" | grep -q -- "$4" \
                && grep -q "^every rule the scheme needs" "$dir/$u.check"
        fi; then
            echo "ok - a cluster node, $1 under --pubsub $2: tslock check" \
                "says what sharded wake-ups need (exit $3)" >>"$report"
        else
            echo "FAIL - a cluster node, $1 under --pubsub $2: exit $crc," \
                "expected $3 and '$4': $(head -c 600 "$dir/$u.check")" \
                >>"$report"
        fi
    done
}

[ -n "$users" ] || { echo "FAIL - no ACL SETUSER lines in $doc"; exit 1; }
proof
mixed
cluster_auto
jobs=
for u in $users; do
    check_user "$u" &
    jobs="$jobs $!"
done
# shellcheck disable=SC2086
wait $jobs
for u in tslock-proof tslock-mixed tslock-cluster $users; do
    cat "$dir/$u.report"
    passed=$((passed + $(grep -c '^ok' "$dir/$u.report")))
    failed=$((failed + $(grep -c '^FAIL' "$dir/$u.report")))
done
finish

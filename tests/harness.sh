# SPDX-License-Identifier: BSD-3-Clause
# harness.sh - what the shell tests share, sourced (POSIX sh): the
# redis-server and redis-cli to use, a private server on a Unix socket or
# on a loopback port, and the checks.  tests/harness.c is the same for the
# C tests.  A sourcing script sets $dir (its temp dir), $out and $err (the
# files of the last command run by t), and may set $shown, the lines of
# stdout printed under a failure (5 unless set).
#
# Nothing a test starts outlives it.  The servers started here (and what
# a script hands to th_track) are noted; a script stops them by pid in its
# own cleanup, which it installs with th_on_exit CLEANUP instead of trap
# ... EXIT.  After CLEANUP, on success, failure and hang alike, the exit
# trap looks for any noted process still running: it names it, kills it
# and fails the script.  A script that started a server without
# th_on_exit fails at finish.

passed=0
failed=0
th_tracked=
th_exit_armed=

# th_track PID...: note processes the script started, for the exit check.
th_track() {
    th_tracked="$th_tracked $*"
}

# th_alive PID: running, not a zombie waiting to be reaped.
th_alive() {
    kill -0 "$1" 2>/dev/null || return 1
    th_pstate=$(sed -n 's/^[0-9]* (.*) \([A-Za-z]\).*/\1/p' \
        "/proc/$1/stat" 2>/dev/null)
    [ "$th_pstate" != Z ]
}

# th_leak_check: 0 when no noted process runs any more; else each one
# still running is named (FAIL), killed with SIGKILL and reaped, and 1.
th_leak_check() {
    th_leaks=0
    for th_p in $th_tracked; do
        th_alive "$th_p" || continue
        echo "FAIL - process $th_p ($(tr '\0' ' ' <"/proc/$th_p/cmdline" \
            2>/dev/null | sed 's/ *$//')) outlived $(basename "$0"):" \
            "not stopped by its pid"
        kill -KILL "$th_p" 2>/dev/null
        wait "$th_p" 2>/dev/null
        th_leaks=$((th_leaks + 1))
    done
    [ $th_leaks -eq 0 ]
}

# th_on_exit CLEANUP: at exit, run CLEANUP (a command), then the leak
# check; a leak turns the exit status into 1.
th_on_exit() {
    th_exit_armed=1
    th_cleanup=$1
    trap 'th_rc=$?; eval "$th_cleanup"; th_leak_check || th_rc=1; exit $th_rc' \
        EXIT
}

# need_server: $server and $cli, or the test is skipped (77) without them.
need_server() {
    server="${REDIS_SERVER:-}"
    [ -n "$server" ] || server=redis-server
    if ! command -v "$server" >/dev/null 2>&1; then
        echo "redis-server not found; skipped"
        exit 77
    fi
    cli=$(command -v redis-cli 2>/dev/null \
        || echo "$(dirname "$(command -v "$server")")/redis-cli")
    if [ ! -x "$cli" ]; then
        echo "redis-cli not found; skipped"
        exit 77
    fi
}

# direct_tool TOOL: the program libtool's wrapper TOOL would run, run
# directly ($tool set to it, the build's library on LD_LIBRARY_PATH, as
# the wrapper does), or TOOL itself where there is no wrapper.  The
# wrapper is a shell script with several sed runs each time: a test that
# runs the tool hundreds of times pays more for it than for the tool.
direct_tool() {
    tool=$1
    real="$(dirname "$1")/.libs/$(basename "$1")"
    if [ -x "$real" ] && head -c 2 "$1" | grep -q '^#!'; then
        lib="$(cd "${top_builddir:-.}" && pwd)/.libs"
        LD_LIBRARY_PATH="$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
        export LD_LIBRARY_PATH
        tool=$real
    fi
}

# start_unix_server SOCK LOG: a redis-server on the Unix socket SOCK (its
# files in $dir, its log in LOG), answering PING; its pid in $started.
# Exits 1 when it does not answer within 10 s.
start_unix_server() {
    "$server" --port 0 --unixsocket "$1" --save '' --appendonly no \
        --dir "$dir" --logfile "$2" &
    started=$!
    n=0
    until "$cli" -s "$1" ping >/dev/null 2>&1; do
        n=$((n + 1))
        if [ $n -gt 200 ]; then
            echo "redis-server on $1 did not start"
            kill "$started" 2>/dev/null
            wait "$started" 2>/dev/null
            exit 1
        fi
        sleep 0.05
    done
    th_track "$started"
}

# start_tcp_server SEED LOG: a redis-server on a loopback port, for what
# tells clients apart by address only over TCP (MONITOR names every Unix
# socket client "unix:PATH").  A port may be taken (by another run, say):
# the server then exits at once and the next port is tried, and the one
# answering is checked to be ours by its directory, never assumed.  SEED
# spreads the ports of different tests.  Its pid in $started, its port in
# $started_port; returns 1 when none of ten ports worked.  Further
# arguments go to the server (--cluster-enabled yes ...).
start_tcp_server() {
    seed=$1 log=$2
    shift 2
    for try in 1 2 3 4 5 6 7 8 9 10; do
        started_port=$((20000 + ($$ * seed + try * 997) % 20000))
        "$server" --port $started_port --bind 127.0.0.1 --save '' \
            --appendonly no --dir "$dir" --logfile "$log" "$@" &
        started=$!
        n=0
        while kill -0 "$started" 2>/dev/null && [ $n -le 200 ]; do
            [ "$("$cli" -p $started_port config get dir 2>/dev/null \
                | tail -1)" = "$(cd "$dir" && pwd -P)" ] &&
                th_track "$started" && return 0
            n=$((n + 1))
            sleep 0.05
        done
        kill "$started" 2>/dev/null
        wait "$started" 2>/dev/null
    done
    started=
    return 1
}

# A hang is a failure.  The first check starts a watchdog process that
# notes each check as it begins (t and check write its name to a state
# file) and, when one check (with what follows it up to the next) runs
# longer than the bound, prints "HANG: SCRIPT/CHECK exceeded N s", sends
# the script SIGTERM (its own trap then stops its servers) and kills its
# child processes.  The bound is the C harness's: $TSLOCK_TEST_TIMEOUT
# seconds (default 120) times $TSLOCK_TEST_TIMEOUT_SCALE (default 1).
th_watchdog_pid=
th_check_n=0
th_state=
th_watchdog() {
    th_bound=$((${TSLOCK_TEST_TIMEOUT:-120} * ${TSLOCK_TEST_TIMEOUT_SCALE:-1}))
    [ "$th_bound" -gt 0 ] || th_bound=120
    th_state=$(mktemp "${TMPDIR:-/tmp}/tslock-check.XXXXXX") || return 0
    th_prog=$(basename "$0")
    # The watchdog drops the script's traps before it runs: a copy of the
    # script's shell killed before its exec would run the script's
    # cleanup and exit check itself.
    (trap - EXIT INT TERM; exec sh -c '
        main=$1 state=$2 bound=$3 prog=$4
        last= since=$(date +%s)
        while kill -0 "$main" 2>/dev/null; do
            cur=
            read -r cur <"$state" 2>/dev/null
            now=$(date +%s)
            if [ "$cur" != "$last" ]; then
                last=$cur
                since=$now
            elif [ $((now - since)) -gt "$bound" ]; then
                echo "HANG: $prog/${cur#* } exceeded $bound s"
                kids=$(ps -o pid= --ppid "$main" | grep -vx " *$$")
                kill -TERM "$main" $kids 2>/dev/null
                sleep 2
                kill -KILL $kids 2>/dev/null
                break
            fi
            sleep 1
        done
        rm -f "$state"' tslock-watchdog "$$" "$th_state" "$th_bound" \
        "$th_prog") &
    th_watchdog_pid=$!
}

# th_begin NAME: the check NAME begins (for the watchdog).
th_begin() {
    [ -n "$th_watchdog_pid" ] || th_watchdog
    th_check_n=$((th_check_n + 1))
    [ -z "$th_state" ] || echo "$th_check_n $1" >"$th_state"
}

ok() {
    passed=$((passed + 1))
    echo "ok - $1"
}

not_ok() {
    failed=$((failed + 1))
    echo "FAIL - $1"
    [ -s "$err" ] && sed 's/^/    stderr: /' "$err" | head -5
    [ -s "$out" ] && sed 's/^/    stdout: /' "$out" | head -"${shown:-5}"
    return 0
}

# t NAME STATUS COMMAND...: run it (stdout, stderr to files), check status.
t() {
    name=$1
    want=$2
    shift 2
    th_begin "$name"
    "$@" >"$out" 2>"$err"
    rc=$?
    if [ "$rc" -eq "$want" ]; then
        ok "$name"
    else
        not_ok "$name (exit $rc, expected $want)"
    fi
}

# check NAME COMMAND...: a condition on the last run's files.
check() {
    name=$1
    shift
    th_begin "$name"
    if "$@"; then ok "$name"; else not_ok "$name"; fi
}

has() {
    grep -q -- "$1" "$2"
}

one_line() {
    [ "$(wc -l <"$err")" -eq 1 ] && grep -q -- "$1" "$err"
}

# await TEXT FILE, await_file FILE: until it is there, for up to 10 s;
# the ordering of the tests comes from files the commands write.
await() {
    n=0
    until grep -q -- "$1" "$2" 2>/dev/null; do
        n=$((n + 1))
        [ $n -gt 1000 ] && return 1
        sleep 0.01
    done
}

await_file() {
    n=0
    until [ -e "$1" ]; do
        n=$((n + 1))
        [ $n -gt 1000 ] && return 1
        sleep 0.01
    done
}

# The summary line and the exit status of a test script.
finish() {
    [ -z "$th_watchdog_pid" ] || kill "$th_watchdog_pid" 2>/dev/null
    [ -z "$th_state" ] || rm -f "$th_state"
    if [ -n "$th_tracked" ] && [ -z "$th_exit_armed" ]; then
        not_ok "harness: $(basename "$0") started servers but installed no \
th_on_exit cleanup, so nothing checks they are stopped"
    fi
    echo "$passed passed, $failed failed"
    [ $failed -eq 0 ]
}

# use_installed ROOT OUT: packages unpacked into ROOT (dpkg -x, rpm2cpio),
# used as a user would: doc/examples/basic.c compiled against ROOT's
# header and library with pkg-config, and run with ROOT's library; ROOT's
# tslock run holding a lock; both against a private redis-server.  Files
# in OUT.  Prints ok/FAIL lines, returns 1 on a failure.  Needs $src and
# need_server; sets $dir and the EXIT trap, which stops the server.
use_installed() {
    root=$1
    ui_out=$2
    ui_status=0
    libdir=$(dirname "$(find "$root" -name libtslock.so.1 | head -1)")
    pc=$(find "$root" -name tslock.pc | head -1)
    if [ -z "$pc" ] || [ ! -f "$libdir/libtslock.so.1" ]; then
        echo "FAIL - no tslock.pc or libtslock.so.1 under $root"
        return 1
    fi
    export LD_LIBRARY_PATH="$libdir"
    flags=$(PKG_CONFIG_PATH=$(dirname "$pc") PKG_CONFIG_SYSROOT_DIR="$root" \
        pkg-config --cflags --libs tslock) || {
        echo "FAIL - pkg-config tslock"
        return 1
    }
    echo "ok - pkg-config --cflags --libs tslock: $flags"
    # shellcheck disable=SC2086
    if cc -o "$ui_out/basic" "$src/doc/examples/basic.c" $flags; then
        echo "ok - doc/examples/basic.c compiles against the installed header"
    else
        echo "FAIL - doc/examples/basic.c against the installed header"
        return 1
    fi
    dir=$(mktemp -d "${TMPDIR:-/tmp}/tslock-pkg.XXXXXX") || return 1
    ui_pid=
    th_on_exit '[ -n "$ui_pid" ] && kill "$ui_pid" 2>/dev/null \
        && wait "$ui_pid" 2>/dev/null; rm -rf "$dir"'
    trap 'exit 130' INT TERM
    start_unix_server "$dir/redis.sock" "$dir/redis.log"
    ui_pid=$started
    if "$ui_out/basic" "$dir/redis.sock" pkg-key >"$ui_out/basic.out" 2>&1
    then
        echo "ok - the example runs with the installed library"
    else
        echo "FAIL - the example against the installed library:"
        sed 's/^/    /' "$ui_out/basic.out"
        ui_status=1
    fi
    ldd "$ui_out/basic" | grep -q "$libdir/libtslock.so.1" || {
        echo "FAIL - the example did not load $libdir/libtslock.so.1"
        ui_status=1
    }
    if v=$("$root/usr/bin/tslock" --version); then
        echo "ok - installed tslock --version: $v"
    else
        echo "FAIL - installed tslock --version"
        ui_status=1
    fi
    got=$("$root/usr/bin/tslock" -u "unix://$dir/redis.sock" pkg-cli \
        -- echo held)
    if [ "$got" = held ]; then
        echo "ok - installed tslock ran a command holding a lock"
    else
        echo "FAIL - installed tslock KEY -- echo held gave: $got"
        ui_status=1
    fi
    return $ui_status
}

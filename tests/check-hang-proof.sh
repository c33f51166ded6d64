#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# check-hang-proof.sh - a hang is a failure, shown on a planted one: the
# CUnit program tests/hang_proof hangs in its first test with a
# redis-server and a child process running; with a 2 s bound the
# harness's watchdog must end it within seconds (30 at most on a loaded
# machine), exit 124, with "HANG: proof/a planted hang exceeded 2 s",
# the server and the child gone.  The same for a shell test through
# tests/harness.sh, and for a pytest test through tests/pytest_hang.py.
# And a leak is a failure: a C program that leaves a child running, and
# a shell test whose cleanup forgets a server.
set -u

. "${top_srcdir:-.}/tests/harness.sh"
need_server
prog="${top_builddir:-.}/tests/hang_proof"
dir=$(mktemp -d /tmp/tslock-hang.XXXXXX) || exit 1
trap 'rm -rf "$dir"' EXIT
out="$dir/out"
err="$dir/err"

# gone PID: the process is gone, or soon (a killed child whose parent
# exited is a zombie until init reaps it).
gone() {
    n=0
    while kill -0 "$1" 2>/dev/null && [ "$(ps -o stat= -p "$1")" != Z ]; do
        n=$((n + 1))
        [ $n -gt 200 ] && return 1
        sleep 0.01
    done
}

# The C harness.
start=$(date +%s)
TSLOCK_TEST_TIMEOUT=2 TSLOCK_TEST_TIMEOUT_SCALE=1 "$prog" >"$out" 2>"$err"
rc=$?
took=$(($(date +%s) - start))
check "C: the hung program fails, 124" [ $rc -eq 124 ]
check "C: within 30 s (took $took s)" [ $took -le 30 ]
check "C: the hang is named" has "^HANG: proof/a planted hang exceeded 2 s$" \
    "$err"
check "C: the next test never ran" eval '! grep -q "after the hang" "$out"'
server=$(sed -n 's/^server \([0-9]*\) child [0-9]*$/\1/p' "$out")
child=$(sed -n 's/^server [0-9]* child \([0-9]*\)$/\1/p' "$out")
check "C: the pids were printed" eval '[ -n "$server" ] && [ -n "$child" ]'
check "C: its redis-server is stopped" gone "${server:-0}"
check "C: its child process is killed" gone "${child:-0}"

# Nothing outlives a C test program: "hang_proof leak" passes its test
# but leaves a forked child and a th_track()ed grandchild running; the
# harness's exit check names both, kills them and fails the program.
# "hang_proof tidy" stops them itself and passes.
"$prog" leak >"$out" 2>"$err"
rc=$?
server=$(sed -n 's/^server \([0-9]*\) child.*/\1/p' "$out")
child=$(sed -n 's/.* child \([0-9]*\) grandchild.*/\1/p' "$out")
grand=$(sed -n 's/.* grandchild \([0-9]*\)$/\1/p' "$out")
check "C leak: the pids were printed" \
    eval '[ -n "$server" ] && [ -n "$child" ] && [ -n "$grand" ]'
check "C leak: its test passed" has "^Run Summary" "$out"
check "C leak: the program fails (exit $rc)" [ $rc -eq 1 ]
check "C leak: the child is named" \
    has "^FAIL - process $child (.*hang_proof leak) outlived hang_proof: not stopped by its pid$" "$err"
check "C leak: the tracked grandchild is named" \
    has "^FAIL - process $grand (.*) outlived hang_proof" "$err"
check "C leak: the server (stopped by the harness) is not named" \
    eval '! grep -q "process $server " "$err"'
check "C leak: the child is gone afterwards" gone "${child:-0}"
check "C leak: the grandchild is gone afterwards" gone "${grand:-0}"
check "C leak: the server is gone afterwards" gone "${server:-0}"
"$prog" tidy >"$out" 2>"$err"
rc=$?
check "C tidy: the program that stops its processes passes (exit $rc)" \
    [ $rc -eq 0 ]
check "C tidy: nothing named" eval '! grep -q outlived "$err"'
# (The same for a hung program: the watchdog kills its children above.)

# The shell harness: a check that runs a command that never ends.
cat >"$dir/hung.sh" <<EOT
. "${top_srcdir:-.}/tests/harness.sh"
dir="$dir"
out="$dir/hout"
err="$dir/herr"
t "a quick check" 0 true
t "a planted hang" 0 sleep 3600
finish
EOT
start=$(date +%s)
TSLOCK_TEST_TIMEOUT=2 TSLOCK_TEST_TIMEOUT_SCALE=1 $SHELL "$dir/hung.sh" \
    >"$out" 2>"$err"
rc=$?
took=$(($(date +%s) - start))
check "sh: the hung script fails" [ $rc -ne 0 ]
check "sh: within 30 s (took $took s)" [ $took -le 30 ]
check "sh: the hang is named" \
    has "^HANG: hung.sh/a planted hang exceeded 2 s$" "$out"

# Nothing outlives a shell test: a script whose cleanup forgets its
# server (as test_cli_once.sh's did, its pid overwritten) passes every
# check and still fails, naming the server, which is gone afterwards; the
# same script that stops it passes; one with no th_on_exit fails at
# finish; and a hung one leaves no server either.
leaky() { # leaky NAME CLEANUP [EXTRA]: the script $dir/NAME.sh
    cat >"$dir/$1.sh" <<EOT
. "${top_srcdir:-.}/tests/harness.sh"
need_server
dir="$dir/$1.d"
mkdir -p "\$dir"
out="\$dir/out"
err="\$dir/err"
cleanup() { $2; }
${4:-th_on_exit cleanup}
trap 'exit 130' INT TERM
start_unix_server "\$dir/r.sock" "\$dir/r.log"
pid=\$started
echo "server \$pid"
t "a check that passes" 0 true
${3:-}
finish
EOT
    TSLOCK_TEST_TIMEOUT=2 TSLOCK_TEST_TIMEOUT_SCALE=1 $SHELL "$dir/$1.sh" \
        >"$out" 2>"$err"
    rc=$?
    server=$(sed -n 's/^server \([0-9]*\)$/\1/p' "$out")
}
leaky leak 'pid=1234567; kill "$pid" 2>/dev/null'
check "leak: the script fails (exit $rc)" [ $rc -ne 0 ]
check "leak: the server is named" \
    has "^FAIL - process $server (.*redis-server.*) outlived leak.sh" "$out"
check "leak: and is gone afterwards" gone "${server:-0}"
leaky tidy 'kill "$pid" && wait "$pid"'
check "tidy: the script that stops its server passes (exit $rc)" [ $rc -eq 0 ]
check "tidy: its server is gone" gone "${server:-0}"
leaky untracked 'kill "$pid" && wait "$pid"' '' "trap cleanup EXIT"
check "no th_on_exit: the script fails (exit $rc)" [ $rc -ne 0 ]
check "no th_on_exit: said" has "installed no th_on_exit" "$out"
check "no th_on_exit: its own trap stopped its server" gone "${server:-0}"
[ -z "$server" ] || kill "$server" 2>/dev/null # whatever the check said
leaky hung 'kill "$pid" && wait "$pid"' 't "a planted hang" 0 sleep 3600'
check "hung: the script fails (exit $rc)" [ $rc -ne 0 ]
check "hung: the hang is named" \
    has "^HANG: hung.sh/a planted hang exceeded 2 s$" "$out"
check "hung: its server is gone" gone "${server:-0}"

# The pytest plugin of tests/test_python.sh, where pytest is installed.
python=${PYTHON:-python3}
if "$python" -c 'import pytest' 2>/dev/null; then
    cat >"$dir/test_hung.py" <<EOT
import time
def test_planted_hang():
    time.sleep(3600)
EOT
    start=$(date +%s)
    tests=$(cd "${top_srcdir:-.}/tests" && pwd)
    (cd "$dir" && TSLOCK_TEST_TIMEOUT=2 TSLOCK_TEST_TIMEOUT_SCALE=1 \
        PYTHONPATH="$tests" \
        PYTHONDONTWRITEBYTECODE=1 "$python" -m pytest -q \
        -p no:cacheprovider -p pytest_hang test_hung.py) >"$out" 2>"$err"
    rc=$?
    took=$(($(date +%s) - start))
    check "pytest: the hung test fails, 124" [ $rc -eq 124 ]
    check "pytest: within 30 s (took $took s)" [ $took -le 30 ]
    check "pytest: the hang is named" \
        has "^HANG: test_hung.py::test_planted_hang exceeded 2 s$" "$out"
else
    echo "ok - pytest: skipped ($python has no pytest)"
fi
finish

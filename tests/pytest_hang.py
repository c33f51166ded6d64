# SPDX-License-Identifier: BSD-3-Clause
"""A hang is a failure, for the pytest suite (tests/test_python.sh loads
this plugin with -p): a test that runs past the bound of tests/harness.c
($TSLOCK_TEST_TIMEOUT seconds, default 120, times
$TSLOCK_TEST_TIMEOUT_SCALE) ends the run with "HANG: FILE::TEST exceeded
N s", its child processes (the servers the tests started) killed."""
import os
import signal
import threading

import pytest

# pytest captures fds 1 and 2 while a test runs; the HANG line goes to
# the stdout this plugin was loaded with (before the capture began).
_stdout = os.dup(1)


def _bound():
    def number(name, default):
        try:
            value = int(os.environ.get(name, "") or default)
        except ValueError:
            value = default
        return value if value > 0 else default

    return number("TSLOCK_TEST_TIMEOUT", 120) * number(
        "TSLOCK_TEST_TIMEOUT_SCALE", 1)


def _kill_children():
    """Every process whose parent is this one, from /proc."""
    me = os.getpid()
    for name in os.listdir("/proc") if os.path.isdir("/proc") else []:
        if not name.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % name) as f:
                stat = f.read()
            if int(stat.rsplit(")", 1)[1].split()[1]) == me:
                os.kill(int(name), signal.SIGKILL)
        except (OSError, ValueError, IndexError):
            pass


def _hang(nodeid, bound):
    os.write(_stdout, b"\nHANG: %s exceeded %d s\n" % (nodeid.encode(), bound))
    _kill_children()
    os._exit(124)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    bound = _bound()
    timer = threading.Timer(bound, _hang, (item.nodeid, bound))
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()

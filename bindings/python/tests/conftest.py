# SPDX-License-Identifier: BSD-3-Clause
"""Fixtures of the tslock module's tests: a private redis-server on a Unix
socket in a temporary directory, started here and stopped by its pid, and
(when tests/oldredis is built) the proxy that answers as an old Redis; and
count_overlaps(), the mutual exclusion checker the tests import."""
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import uuid

import pytest
import redis

import tslock


def _ping(path):
    try:
        s = socket.socket(socket.AF_UNIX)
        s.settimeout(0.2)
        s.connect(path)
        s.sendall(b"PING\r\n")
        ok = s.recv(64).startswith((b"+PONG", b"-NOAUTH"))
        s.close()
        return ok
    except OSError:
        return False


def count_overlaps(make_sections, rounds, inside_s=0.0005, join_s=300):
    """Each factory in make_sections drives one thread of `rounds`
    critical sections (``with factory(): ...``, `inside_s` seconds inside)
    and counts how often two were inside at once.  Returns {"inside": how
    many are inside at the end, "overlaps": ..., "counts": how many
    sections each thread ran}; an exception in a thread fails the test."""
    state = {"inside": 0, "overlaps": 0}
    guard = threading.Lock()
    counts = [0] * len(make_sections)
    errors = []

    def work(i):
        try:
            for _ in range(rounds):
                with make_sections[i]():
                    with guard:
                        state["inside"] += 1
                        if state["inside"] > 1:
                            state["overlaps"] += 1
                    time.sleep(inside_s)
                    with guard:
                        state["inside"] -= 1
                counts[i] += 1
        except BaseException as e:  # reported below
            errors.append(e)

    ts = [threading.Thread(target=work, args=(i,))
          for i in range(len(make_sections))]
    for t in ts:
        t.start()
    for t in ts:
        t.join(join_s)
    assert not errors, errors
    return dict(state, counts=counts)


class Server:
    """One redis-server process of this test run."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="tslock-pytest.")
        self.socket = os.path.join(self.dir, "redis.sock")
        conf = os.path.join(self.dir, "redis.conf")
        with open(conf, "w") as f:
            f.write('port 0\nunixsocket "%s"\nunixsocketperm 700\n'
                    'dir "%s"\nsave ""\nappendonly no\ndaemonize no\n'
                    % (self.socket, self.dir))
        prog = os.environ.get("REDIS_SERVER") or shutil.which("redis-server")
        if not prog:
            pytest.fail("redis-server not found (apt-get install redis-server)")
        self.log = open(os.path.join(self.dir, "redis.log"), "w")
        self.proc = subprocess.Popen([prog, conf], stdout=self.log,
                                     stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while not _ping(self.socket):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                pytest.fail("redis-server did not start (log in %s)"
                            % self.dir)
            time.sleep(0.01)
        self.url = "unix://" + self.socket

    def stop(self):
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                os.kill(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


class Proxy:
    """tests/oldredis in front of a Server, answering as Redis `version`."""

    def __init__(self, server, version):
        binary = os.environ.get("TSLOCK_OLDREDIS", "")
        self.socket = os.path.join(server.dir, "redis-%s.sock" % version)
        r, w = os.pipe()
        self.proc = subprocess.Popen(
            [binary, "--emulate", version, "--listen", self.socket,
             "--upstream", server.socket, "--ready-fd", str(w)],
            pass_fds=(w,), stdin=subprocess.DEVNULL)
        os.close(w)
        with os.fdopen(r) as f:
            line = f.readline()
        if not line.startswith("ready"):
            self.stop()
            pytest.fail("oldredis --emulate %s did not become ready" % version)
        self.url = "unix://" + self.socket

    def stop(self):
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGTERM)
            self.proc.wait(10)


def have_proxy():
    return os.access(os.environ.get("TSLOCK_OLDREDIS", ""), os.X_OK)


@pytest.fixture(scope="session")
def server():
    s = Server()
    yield s
    s.stop()


@pytest.fixture
def client(server):
    return tslock.Client.from_url(server.url)


@pytest.fixture
def r(server):
    """A plain redis-py connection to the same server (for the legacy
    clients and for looking at keys)."""
    c = redis.Redis(unix_socket_path=server.socket)
    yield c
    c.close()


@pytest.fixture
def key():
    """A key no other test uses."""
    return "pytest:" + uuid.uuid4().hex[:12]


@pytest.fixture(params=["2.0.5", "2.2.15", "2.6.0"])
def old_server(request, server):
    if not have_proxy():
        pytest.skip("tests/oldredis not built (TSLOCK_OLDREDIS)")
    p = Proxy(server, request.param)
    p.version = request.param
    yield p
    p.stop()


@pytest.fixture
def masters():
    """Three independent redis-servers, for a Redlock."""
    servers = [Server() for _ in range(3)]
    yield servers
    for s in servers:
        s.stop()

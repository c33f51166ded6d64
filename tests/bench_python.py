#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""bench_python.py - uncontended acquire+release through the tslock Python
module beside redis-py's own Lock, in the same run against the same
redis-server (a private one on a Unix socket, started here and stopped by
its pid).  Prints the median cost of each as a multiple of one redis-py
PING, and tslock's time as a ratio of redis-py's (below 1: faster)."""
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

import redis
import redis.lock

import tslock

ROUNDS, BATCH = 7, 500


def start_server():
    d = tempfile.mkdtemp(prefix="tslock-bench-py.")
    sock = os.path.join(d, "redis.sock")
    prog = os.environ.get("REDIS_SERVER") or "redis-server"
    p = subprocess.Popen([prog, "--port", "0", "--unixsocket", sock,
                          "--save", "", "--appendonly", "no", "--dir", d],
                         stdout=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    r = redis.Redis(unix_socket_path=sock)
    for _ in range(500):
        try:
            r.ping()
            return d, sock, p
        except redis.exceptions.ConnectionError:
            time.sleep(0.01)
    p.kill()
    sys.exit("bench_python: redis-server did not start")


def median_us(fn):
    fn()
    runs = []
    for _ in range(ROUNDS):
        t = time.perf_counter()
        for _ in range(BATCH):
            fn()
        runs.append((time.perf_counter() - t) / BATCH * 1e6)
    return statistics.median(runs)


def main():
    d, sock, p = start_server()
    try:
        r = redis.Redis(unix_socket_path=sock)
        client = tslock.Client(unix_socket_path=sock)
        lock = client.lock("bench:py:tslock", timeout=10)
        pylock = redis.lock.Lock(r, "bench:py:redispy", timeout=10)

        def ts():
            lock.acquire(blocking=False)
            lock.release()

        def py():
            pylock.acquire(blocking=False)
            pylock.release()

        ping = median_us(r.ping)
        t, q = median_us(ts), median_us(py)
        print("python: PING %.1f us; acquire+release: tslock %.1f us "
              "(%.2f PINGs), redis-py Lock %.1f us (%.2f PINGs); "
              "tslock/redis-py %.2f" % (ping, t, t / ping, q, q / ping, t / q))
    finally:
        os.kill(p.pid, signal.SIGTERM)
        p.wait()
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
# bench_pylock.py - the contended workload of tests/bench_contend.c with
# redis-py's own Lock at its default settings, as the peer to beat:
# PROCS processes take one key in turn for SECONDS, a hold is one INCR,
# 0.5 ms between holds.  Prints one line:
#   holds p50_ms p99_ms max_ms jain
# Usage: bench_pylock.py SOCKET PROCS SECONDS
import multiprocessing
import sys
import time

import redis


def worker(sock, end, out):
    r = redis.Redis(unix_socket_path=sock)
    waits = []
    holds = 0
    while time.monotonic() < end:
        t0 = time.monotonic()
        lock = r.lock("bench:pycontend", timeout=10, blocking_timeout=2)
        if not lock.acquire():
            continue
        waits.append((time.monotonic() - t0) * 1000.0)
        r.incr("bench:counter")
        lock.release()
        holds += 1
        time.sleep(0.0005)
    out.put((holds, waits))


def main():
    sock, procs, seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
    end = time.monotonic() + seconds
    out = multiprocessing.Queue()
    ps = [multiprocessing.Process(target=worker, args=(sock, end, out))
          for _ in range(procs)]
    for p in ps:
        p.start()
    results = [out.get() for _ in ps]
    for p in ps:
        p.join()
    counts = [h for h, _ in results]
    waits = sorted(w for _, ws in results for w in ws)
    n = len(waits)
    total = sum(counts)
    sq = sum(c * c for c in counts)
    jain = total * total / (procs * sq) if sq else 0.0
    p50 = waits[n // 2] if n else 0.0
    p99 = waits[int(n * 0.99)] if n else 0.0
    mx = waits[-1] if n else 0.0
    print("%d %.3f %.3f %.3f %.4f" % (total, p50, p99, mx, jain))


if __name__ == "__main__":
    main()

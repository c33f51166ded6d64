#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
# bench_pylock.py - the contended workload of tests/bench_contend.c with
# redis-py's own Lock at its default settings, as the peer to beat:
# PROCS processes take one key in turn for SECONDS, a hold is one INCR,
# 0.5 ms between holds.  Prints one line:
#   holds p50_ms p99_ms max_ms jain
# Usage: bench_pylock.py SOCKET PROCS SECONDS
#
# --scale, for the scale table of tests/bench_scale.c: WAITERS threads in
# PROCS processes, one redis.Redis each; all connect and take one warm-up
# hold, then run for SECONDS; a wait the end cuts off counts with its
# length so far.  Prints one line, with the server's commands (INFO
# commandstats) between the start and the end, and the commands the
# clients sent (a script is one):
#   holds p50_ms p99_ms max_ms jain commands requests
# Usage: bench_pylock.py --scale SOCKET WAITERS PROCS SECONDS
import multiprocessing
import sys
import threading
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


def summary(counts, waits):
    waits = sorted(waits)
    n = len(waits)
    total = sum(counts)
    sq = sum(c * c for c in counts)
    jain = total * total / (len(counts) * sq) if sq else 0.0
    p50 = waits[n // 2] if n else 0.0
    p99 = waits[int(n * 0.99)] if n else 0.0
    mx = waits[-1] if n else 0.0
    return "%d %.3f %.3f %.3f %.4f" % (total, p50, p99, mx, jain)


def hold(r, lock):
    r.incr("bench:counter")
    lock.release()
    time.sleep(0.0005)


class CountingRedis(redis.Redis):
    """Counts the commands this client sends (a script is one)."""
    requests = 0

    def execute_command(self, *args, **options):
        self.requests += 1
        return super().execute_command(*args, **options)


def scale_waiter(sock, barrier, end, result):
    r = CountingRedis(unix_socket_path=sock)
    lock = r.lock("bench:pyscale", timeout=10, blocking_timeout=60)
    if lock.acquire():
        hold(r, lock)
    barrier.wait()  # ready
    barrier.wait()  # go: end is set
    r.requests = 0
    stop = end.value
    while True:
        t0 = time.monotonic()
        if t0 >= stop:
            break
        lock = r.lock("bench:pyscale", timeout=10, blocking_timeout=stop - t0)
        got = lock.acquire()
        result["waits"].append((time.monotonic() - t0) * 1000.0)
        if got:
            hold(r, lock)
            result["holds"] += 1
    result["requests"] = r.requests
    barrier.wait()  # done
    barrier.wait()  # counted: tear down


def scale_process(sock, nthreads, barrier, end, out):
    results = [{"holds": 0, "waits": [], "requests": 0}
               for _ in range(nthreads)]
    threads = [threading.Thread(target=scale_waiter,
                                args=(sock, barrier, end, res))
               for res in results]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    out.put(results)


def commands(r):
    stats = r.info("commandstats")
    return sum(v["calls"] for v in stats.values())


def scale_main(sock, waiters, procs, seconds):
    barrier = multiprocessing.Barrier(waiters + 1, timeout=180)
    end = multiprocessing.Value("d", 0.0)
    out = multiprocessing.Queue()
    sizes = [(i + 1) * waiters // procs - i * waiters // procs
             for i in range(procs)]
    ps = [multiprocessing.Process(target=scale_process,
                                  args=(sock, n, barrier, end, out))
          for n in sizes]
    for p in ps:
        p.start()
    r = redis.Redis(unix_socket_path=sock)
    barrier.wait()  # ready
    before = commands(r)
    end.value = time.monotonic() + seconds
    barrier.wait()  # go
    barrier.wait()  # done
    after = commands(r)
    barrier.wait()  # counted
    results = [res for _ in ps for res in out.get()]
    for p in ps:
        p.join()
    print("%s %d %d" % (summary([res["holds"] for res in results],
                                [w for res in results for w in res["waits"]]),
                        after - before - 1,
                        sum(res["requests"] for res in results)))
    return 0 if all(p.exitcode == 0 for p in ps) else 1


def main():
    if sys.argv[1] == "--scale":
        return scale_main(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]),
                          float(sys.argv[5]))
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
    print(summary([h for h, _ in results],
                  [w for _, ws in results for w in ws]))
    return 0


if __name__ == "__main__":
    sys.exit(main())

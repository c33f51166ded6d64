#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""interop_pylock.py - one redis-py process contending with tslock.

Started by tests/test_interop.c with the Unix socket of its redis-server,
the lock key, the number of holds and a marker directory.  Each hold takes
redis.lock.Lock (SET key token NX PX, Lua compare-and-delete release) and,
inside the critical section, creates DIR/held with O_CREAT|O_EXCL: the C
side does the same, so a file that already exists means two holders at
once.  Prints one line of counts; exits 0 when there was no overlap and
no error, 1 otherwise.
"""
import os
import sys
import time

import redis
import redis.lock


def main(argv):
    if len(argv) != 5:
        sys.stderr.write("usage: interop_pylock.py SOCKET KEY COUNT DIR\n")
        return 2
    socket_path, key, count, marker_dir = argv[1], argv[2], int(argv[3]), argv[4]
    client = redis.Redis(unix_socket_path=socket_path)
    # A lease far longer than a hold, so no lease runs out: any overlap
    # would be the lock's fault.  sleep: poll often, the run is short.
    lock = redis.lock.Lock(client, key, timeout=10, sleep=0.002,
                           blocking_timeout=30)
    marker = os.path.join(marker_dir, "held")
    acquired = overlaps = errors = 0
    for _ in range(count):
        if not lock.acquire():
            errors += 1
            continue
        acquired += 1
        try:
            fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
        except FileExistsError:
            overlaps += 1
        else:
            time.sleep(0.001)
            os.close(fd)
            os.unlink(marker)
        try:
            lock.release()
        except redis.exceptions.LockError as e:
            sys.stderr.write("interop_pylock: release: %s\n" % e)
            errors += 1
    print("redis-py %s acquired=%d overlaps=%d errors=%d"
          % (redis.__version__, acquired, overlaps, errors))
    return 0 if overlaps == 0 and errors == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))

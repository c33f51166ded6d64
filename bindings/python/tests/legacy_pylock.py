# SPDX-License-Identifier: BSD-3-Clause
"""The Lock of redis-py 2.x before the 2.10 rewrite, as it was published
(redis/client.py), flaws included: the client bridge mode exists for.

Stamps are float seconds, ``repr(time.time() + timeout)`` with no +1;
acquire is SETNX, then GET and, for an expired stamp, GETSET, won when the
old value returned is still expired; release deletes whenever the stored
value is >= its own ``acquired_until``, whoever wrote it.  Written over
today's redis-py (python3-redis), whose ``setnx``, ``get``, ``getset`` and
``delete`` send the same commands.
"""
import time


class LegacyLock:
    LOCK_FOREVER = float(2 ** 31 + 1)

    def __init__(self, redis, name, timeout=None, sleep=0.1,
                 on_lost_getset=None):
        # on_lost_getset(value): for tests only, told when a takeover
        # GETSET that did not win replaced `value` (another holder's
        # stamp) with ours: the algorithm's loser overwrite.
        self.on_lost_getset = on_lost_getset
        self.redis = redis
        self.name = name
        self.acquired_until = None
        self.timeout = timeout
        self.sleep = sleep

    def acquire(self, blocking=True, deadline=None):
        # deadline (monotonic): the original loops forever; a test ends.
        sleep = self.sleep
        timeout = self.timeout
        while 1:
            unixtime = time.time()
            if timeout:
                timeout_at = unixtime + timeout
            else:
                timeout_at = self.LOCK_FOREVER
            timeout_at = float(timeout_at)
            if self.redis.setnx(self.name, repr(timeout_at)):
                self.acquired_until = timeout_at
                return True
            existing = float(self.redis.get(self.name) or 1)
            if existing < unixtime:
                old = self.redis.getset(self.name, repr(timeout_at))
                existing = float(old or 1)
                if not existing < unixtime and self.on_lost_getset:
                    self.on_lost_getset(old)
                if existing < unixtime:
                    self.acquired_until = timeout_at
                    return True
            if not blocking:
                return False
            if deadline is not None and time.monotonic() > deadline:
                return False
            time.sleep(sleep)

    def release(self):
        if self.acquired_until is None:
            raise ValueError("Cannot release an unlocked lock")
        existing = float(self.redis.get(self.name) or 1)
        if existing >= self.acquired_until:
            self.redis.delete(self.name)
        self.acquired_until = None

# SPDX-License-Identifier: BSD-3-Clause
"""The same calls on redis-py's Lock and on tslock's, against the same
server: where doc/python.md says they behave alike, they do; each row of
its table of differences ("Where the meaning differs") holds as written.
The row a test asserts is named in its docstring.

redis-py is the installed one (Debian's python3-redis); behaviour that
came with a later redis-py (raise_on_release_error and LockError's
lock_name, redis-py 6) is compared with it when it is there, and with
what redis-py 6's source does otherwise.
"""
import logging
import os
import threading
import time

import pytest
import redis
import redis.exceptions
import redis.lock

import tslock

REDIS_PY = tuple(int(p) for p in redis.__version__.split(".")[:2])


@pytest.fixture
def both(client, r):
    """(redis-py Lock maker, tslock Lock maker) on the same server."""
    return (lambda name, **kw: redis.lock.Lock(r, name, **kw),
            lambda name, **kw: client.lock(name, **kw))


# -- alike ---------------------------------------------------------------

def test_locked_while_key_holds_empty_string(both, r, key):
    """locked() is true whenever the key exists, even holding ""; and
    neither can take it."""
    r.set(key, "")
    for make in both:
        lock = make(key, timeout=5)
        assert lock.locked() is True
        assert lock.acquire(blocking=False) is False
        assert lock.owned() is False
    r.delete(key)
    for make in both:
        assert make(key).locked() is False


def test_same_answers_on_one_key(both, r, key):
    """acquire, owned, locked, extend, release: the same answers in the
    same order, whichever library holds and whichever asks."""
    for holder_make, other_make in (both, both[::-1]):
        holder = holder_make(key, timeout=5)
        other = other_make(key, timeout=5)
        assert holder.acquire(blocking=False) is True
        assert other.acquire(blocking=False) is False
        assert (holder.owned(), other.owned()) == (True, False)
        assert holder.locked() and other.locked()
        assert holder.extend(10) is True
        assert 14000 < r.pttl(key) <= 15000
        assert holder.extend(3, replace_ttl=True) is True
        assert 2000 < r.pttl(key) <= 3000
        assert holder.reacquire() is True
        assert 4000 < r.pttl(key) <= 5000
        holder.release()
        assert r.exists(key) == 0
        assert not holder.owned() and not other.locked()


def test_release_errors_alike(both, r, key):
    """Releasing or extending an unlocked lock raises LockError, and a
    lock another owner took raises LockNotOwnedError, in both."""
    errors = ((redis.exceptions.LockError, redis.exceptions.LockNotOwnedError),
              (tslock.LockError, tslock.LockNotOwnedError))
    for make, (lock_error, not_owned) in zip(both, errors):
        lock = make(key, timeout=5)
        with pytest.raises(lock_error):
            lock.release()
        with pytest.raises(lock_error):
            lock.extend(1)
        assert lock.acquire(blocking=False)
        r.set(key, "someone-else")
        with pytest.raises(not_owned):
            lock.release()
        assert r.get(key) == b"someone-else"
        r.delete(key)


def test_with_block_alike(both, key):
    """with: held inside, released after; LockError when not taken in
    time."""
    for make, lock_error in zip(both, (redis.exceptions.LockError,
                                       tslock.LockError)):
        with make(key, timeout=5) as lock:
            assert lock.owned()
            with pytest.raises(lock_error):
                with make(key, blocking_timeout=0.1):
                    pass
        assert not lock.locked()


# -- the mapping table's redis-py 6 rows --------------------------------

def test_lock_error_has_lock_name(both, key):
    """LockError.lock_name names the lock (redis-py 6; the installed
    redis-py, if older, has no such attribute)."""
    for make in both:
        lock = make(key)
        with pytest.raises(Exception) as info:
            lock.release()
        if make is both[0] and REDIS_PY < (5, 0):
            assert not hasattr(info.value, "lock_name")
        else:
            assert info.value.lock_name == key
    assert tslock.LockError("x").lock_name is None


def _exit_after_loss(make, r, key, **kw):
    """A with block whose lock another owner takes inside it."""
    try:
        with make(key, timeout=5, blocking=False, **kw):
            r.set(key, "someone-else")
    finally:
        r.delete(key)


def test_raise_on_release_error(both, client, r, key, caplog):
    """raise_on_release_error=False: the end of a with block logs a lock no
    longer ours instead of raising (redis-py 6); True, the default, raises;
    release() raises either way."""
    makers = both if REDIS_PY >= (6, 0) else both[1:]
    if REDIS_PY < (6, 0):
        with pytest.raises(TypeError):
            both[0](key, raise_on_release_error=False)
    for make in makers:
        with pytest.raises((tslock.LockNotOwnedError,
                            redis.exceptions.LockNotOwnedError)):
            _exit_after_loss(make, r, key)
        caplog.clear()
        with caplog.at_level(logging.WARNING):
            _exit_after_loss(make, r, key, raise_on_release_error=False)
        assert "no longer owned" in caplog.text
        lock = make(key, raise_on_release_error=False)
        with pytest.raises((tslock.LockError, redis.exceptions.LockError)):
            lock.release()
        r.delete(key)
    # Released inside the block: the exit finds it not held.
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        with client.lock(key, raise_on_release_error=False) as lock:
            lock.release()
    assert "was unlocked" in caplog.text
    with pytest.raises(tslock.LockError, match="unlocked"):
        with client.lock(key) as lock:
            lock.release()


# -- the table of differences, row by row --------------------------------

def test_row_timeout_none_is_a_lease(both, r, key):
    """Row "timeout=None": redis-py's key never expires; tslock's has a
    30 s lease."""
    rp, ts = (make(key) for make in both)
    assert rp.acquire(blocking=False)
    assert r.pttl(key) == -1
    rp.release()
    assert ts.acquire(blocking=False)
    assert 29000 < r.pttl(key) <= 30000
    ts.release()


def test_row_sleep_is_longest_delay(both, key):
    """Row "sleep": a tslock waiter wakes when a tslock holder releases;
    a redis-py waiter sleeps its whole ``sleep`` between tries."""
    waited = {}
    for make in both:
        holder = both[1](key, timeout=10)
        assert holder.acquire()
        waiter = make(key, timeout=10, sleep=1.5)
        ready = threading.Event()

        def wait(make=make, waiter=waiter):
            ready.set()
            start = time.monotonic()
            assert waiter.acquire(blocking_timeout=10)
            waited[make] = time.monotonic() - start
            waiter.release()
        t = threading.Thread(target=wait)
        t.start()
        ready.wait()
        time.sleep(0.2)   # the waiter has tried once and waits
        holder.release()
        t.join()
    assert waited[both[0]] >= 1.4
    assert waited[both[1]] < 1.0


def test_row_no_thread_local_no_token(both, r, key):
    """Row "No thread_local, no acquire(token=)"."""
    rp_make, ts_make = both
    rp = rp_make(key, thread_local=False)
    assert rp.acquire(token="mine")
    assert r.get(key) == b"mine"
    rp.release()
    with pytest.raises(TypeError):
        ts_make(key, thread_local=False)
    with pytest.raises(tslock.UnsupportedError, match="token"):
        ts_make(key).acquire(token="mine")
    assert r.exists(key) == 0


def test_row_extend_adds_to_what_is_left(both, r, key):
    """Row "extend() without replace_ttl": the same lease as redis-py
    (what was left plus the addition)."""
    for make in both:
        lock = make(key, timeout=4)
        assert lock.acquire()
        assert lock.extend(6)
        assert 9000 < r.pttl(key) <= 10000
        lock.release()


def test_row_second_acquire_raises(both, key):
    """Row "second acquire()": redis-py's answers False without blocking
    (with blocking it would wait on its own hold); tslock's raises
    LockError at once, whatever blocking says."""
    rp_make, ts_make = both
    rp = rp_make(key, timeout=5)
    assert rp.acquire()
    assert rp.acquire(blocking=False) is False
    assert rp.acquire(blocking_timeout=0.2) is False
    rp.release()
    ts = ts_make(key, timeout=5)
    assert ts.acquire()
    for kw in ({"blocking": False}, {"blocking_timeout": 0.2}, {}):
        with pytest.raises(tslock.LockError, match="already held"):
            ts.acquire(**kw)
    assert ts.owned()
    ts.release()


def test_row_one_thread_at_a_time(both, key):
    """Row "a Lock object used by two threads at once": while one thread
    waits in acquire() on a tslock Lock, another thread's call on the
    same object raises LockError; redis-py's answers False."""
    outcome = {}
    for make in both:
        holder = both[1](key, timeout=10)
        assert holder.acquire()
        shared = make(key, timeout=5)
        t = threading.Thread(
            target=lambda: shared.acquire(blocking_timeout=1))
        t.start()
        time.sleep(0.3)   # the thread is inside acquire(), waiting
        try:
            outcome[make] = shared.acquire(blocking=False)
        except tslock.LockError as e:
            outcome[make] = e
        t.join()
        holder.release()
    assert outcome[both[0]] is False
    assert isinstance(outcome[both[1]], tslock.LockError)
    assert "another thread" in str(outcome[both[1]])


def test_row_exception_classes(both, key):
    """Row "exception classes": tslock's are not redis-py's, and are not
    ValueErrors (redis-py's LockError is)."""
    assert not issubclass(tslock.LockError, redis.exceptions.LockError)
    assert issubclass(redis.exceptions.LockError, ValueError)
    assert not issubclass(tslock.LockError, ValueError)
    with pytest.raises(tslock.LockError) as info:
        both[1](key).release()
    assert not isinstance(info.value, redis.exceptions.RedisError)


# Each row of doc/python.md's table of differences, by its first cell,
# and the test above that asserts it.
ROWS = {
    "`timeout=None`": test_row_timeout_none_is_a_lease,
    "`sleep`": test_row_sleep_is_longest_delay,
    "`thread_local=`, `acquire(token=)`": test_row_no_thread_local_no_token,
    "`extend()` without `replace_ttl`": test_row_extend_adds_to_what_is_left,
    "a second `acquire()` on a holding `Lock`": test_row_second_acquire_raises,
    "a `Lock` object used by two threads at once":
        test_row_one_thread_at_a_time,
    "exception classes": test_row_exception_classes,
}


def test_every_documented_difference_has_its_test():
    """The table in doc/python.md and ROWS name the same rows: a row added
    to the docs without a test here (or the other way) fails."""
    path = os.path.join(os.environ["TSLOCK_SRCDIR"], "doc", "python.md")
    with open(path) as f:
        text = f.read()
    table = text[text.index("| what | redis-py | tslock |"):]
    table = table[:table.index("\n\n")]
    rows = [line.split(" | ")[0].lstrip("| ")
            for line in table.splitlines()[2:]]
    assert rows == list(ROWS)

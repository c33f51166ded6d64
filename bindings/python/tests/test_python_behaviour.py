# SPDX-License-Identifier: BSD-3-Clause
"""Behaving well inside Python: the GIL, Ctrl-C, threads, fork(), the
watchdog's reports, and no reference leaks."""
import gc
import os
import signal
import sys
import threading
import time
import tracemalloc

import pytest

import tslock
from conftest import count_overlaps


def subscribers(r, key):
    """How many waiters listen on the key's release channel."""
    return dict(r.pubsub_numsub("{%s}:released" % key)).get(
        ("{%s}:released" % key).encode(), 0)


def wait_until(cond, seconds=10):
    deadline = time.monotonic() + seconds
    while not cond():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.005)


def test_gil_is_released_while_waiting(client, key):
    holder = client.lock(key)
    assert holder.acquire()
    done = threading.Event()

    def wait():
        client.lock(key, blocking_timeout=0.5).acquire()
        done.set()

    t = threading.Thread(target=wait)
    t.start()
    spins = 0
    while not done.is_set():
        spins += 1  # runs only while the waiter does not hold the GIL
    t.join()
    assert spins > 10000
    holder.release()


@pytest.fixture
def python_sigint():
    """Python's own SIGINT handler (KeyboardInterrupt), for the test's
    length.  Python installs it at start only where SIGINT is not ignored;
    a process started in the background by a shell without job control
    (nohup ... &, some CI runners) begins with SIGINT ignored, and so does
    the Python in it: Ctrl-C cannot reach a wait there, by design."""
    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, old)


def test_ctrl_c_interrupts_a_blocking_acquire_promptly(client, r, key,
                                                      python_sigint):
    holder = client.lock(key, timeout=30)
    assert holder.acquire()
    # sleep=30: without the cancel, the waiter would next look in 15-30 s.
    waiter = client.lock(key, sleep=30, fair=True)
    sent = []

    def interrupt():
        wait_until(lambda: subscribers(r, key) >= 1
                   and holder.queue_length() == 1)
        sent.append(time.monotonic())
        os.kill(os.getpid(), signal.SIGINT)

    t = threading.Thread(target=interrupt)
    t.start()
    with pytest.raises(KeyboardInterrupt):
        waiter.acquire()
    elapsed = time.monotonic() - sent[0]
    t.join()
    # Without the cancel the waiter would look again in 15 to 30 s.
    assert elapsed < 2.0, elapsed
    # Nothing held, nothing queued.
    assert not waiter.owned()
    assert holder.queue_length() == 0
    assert holder.owned()
    holder.release()
    assert not waiter.locked()


def test_ctrl_c_leaves_no_waiting_writer_behind(client, key, python_sigint):
    reader = client.read_lock(key)
    assert reader.acquire()
    writer = client.write_lock(key, sleep=30)

    def interrupt():
        # A waiting writer keeps new readers out (writer preference).
        wait_until(lambda: not client.read_lock(key).acquire(blocking=False))
        os.kill(os.getpid(), signal.SIGINT)

    t = threading.Thread(target=interrupt)
    t.start()
    with pytest.raises(KeyboardInterrupt):
        writer.acquire()
    t.join()
    # The writer's claim went with it: readers are let in again.
    second = client.read_lock(key)
    assert second.acquire(blocking=False)
    second.release()
    reader.release()


def test_an_ignored_sigint_leaves_the_wait_alone(client, key):
    holder = client.lock(key, timeout=30, fair=True)
    assert holder.acquire()
    old = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        def interrupt_then_release():
            wait_until(lambda: holder.queue_length() >= 1)
            os.kill(os.getpid(), signal.SIGINT)
            holder.release()

        t = threading.Thread(target=interrupt_then_release)
        t.start()
        waiter = client.lock(key, fair=True)
        assert waiter.acquire(blocking_timeout=20) is True
        t.join()
        waiter.release()
    finally:
        signal.signal(signal.SIGINT, old)


def test_a_handler_that_does_not_raise_lets_the_wait_go_on(client, r, key):
    holder = client.lock(key, timeout=30, fair=True)
    assert holder.acquire()
    seen = []
    old = signal.signal(signal.SIGINT, lambda *a: seen.append(1))
    try:
        def interrupt_then_release():
            wait_until(lambda: holder.queue_length() >= 1)
            os.kill(os.getpid(), signal.SIGINT)
            wait_until(lambda: seen)
            holder.release()

        t = threading.Thread(target=interrupt_then_release)
        t.start()
        waiter = client.lock(key, fair=True)
        assert waiter.acquire(blocking_timeout=20) is True
        t.join()
        waiter.release()
    finally:
        signal.signal(signal.SIGINT, old)
    assert seen == [1]


def test_cancel_from_another_thread(client, r, key):
    holder = client.lock(key, fair=True)
    assert holder.acquire()
    waiter = client.lock(key, sleep=30, fair=True)
    t = threading.Thread(target=lambda: (
        wait_until(lambda: holder.queue_length() >= 1), waiter.cancel()))
    t.start()
    start = time.monotonic()
    assert waiter.acquire() is False
    assert time.monotonic() - start < 5
    t.join()
    holder.release()


def test_eight_threads_share_one_client(client, key):
    def section():
        return client.lock(key, blocking_timeout=60)

    state = count_overlaps([section] * 8, 40, join_s=120)
    assert state == {"inside": 0, "overlaps": 0, "counts": [40] * 8}
    stats = client._pool_stats()
    assert stats["opened"] <= 16 and stats["idle"] <= 16


def test_the_overlap_checker_sees_a_broken_lock():
    """count_overlaps() counts overlaps when there is no exclusion."""
    barrier = threading.Barrier(8)

    class NoLock:
        def __enter__(self):
            barrier.wait(10)  # all eight inside at once

        def __exit__(self, *a):
            pass

    assert count_overlaps([NoLock] * 8, 1, join_s=120)["overlaps"] > 0


def test_one_lock_object_used_by_two_threads_is_refused(client, r, key):
    holder = client.lock(key, fair=True)
    assert holder.acquire()
    shared = client.lock(key, fair=True)
    t = threading.Thread(target=lambda: shared.acquire(blocking_timeout=20))
    t.start()
    wait_until(lambda: holder.queue_length() >= 1)
    with pytest.raises(tslock.LockError, match="in use by another thread"):
        shared.release()
    holder.release()
    t.join()
    assert shared.owned()
    shared.release()


def test_fork_child_opens_its_own_connections(client, key):
    lock = client.lock(key, timeout=30)
    assert lock.acquire()
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report through the pipe, never return
        status = 1
        try:
            os.close(r)
            out = []
            out.append(lock.owned() is False)
            try:
                lock.release()
                out.append(False)
            except tslock.LockError as e:
                out.append(e.errname == "TSLOCK_ESTATE")
            opened = client._pool_stats()["opened"]
            with client.lock(key + ":child") as mine:
                out.append(mine.owned())
            out.append(client._pool_stats()["opened"] == opened + 1)
            out.append(lock.locked())  # the parent's hold is still there
            os.write(w, repr(out).encode())
            status = 0
        finally:
            os._exit(status)
    os.close(w)
    with os.fdopen(r) as f:
        report = f.read()
    _, status = os.waitpid(pid, 0)
    assert status == 0 and report == repr([True] * 5), report
    # The parent's connections were not touched by the child.
    assert lock.owned()
    lock.release()


def test_watchdog_keeps_a_short_lease(client, key):
    lock = client.lock(key, timeout=1, auto_renew=True)
    assert lock.acquire()
    time.sleep(2.5)  # two and a half leases
    assert lock.owned() and lock.locked()
    lock.release()
    assert not lock.locked()


def test_watchdog_reports_a_lost_lease(client, r, key):
    reports = []
    event = threading.Event()

    def on_lost(exc):
        reports.append(exc)
        try:  # its own Lock is refused here, not a self-join deadlock
            lock.release()
        except tslock.LockError as e:
            reports.append(e)
        event.set()

    lock = client.lock(key, timeout=2, auto_renew=True, renew_interval=0.05,
                       on_lost=on_lost)
    assert lock.acquire()
    r.set(key, "taken-by-someone")
    assert event.wait(10)
    assert isinstance(reports[0], tslock.LockLostError)
    assert "must not use its own Lock" in str(reports[1])
    assert not lock.owned()
    with pytest.raises(tslock.LockLostError):
        lock.release()
    assert r.get(key) == b"taken-by-someone"


def test_no_leak_over_many_operations(client, key):
    def cycle():
        lock = client.lock(key, fencing=True)
        assert lock.acquire()
        lock.handle()
        lock.fence
        lock.owned()
        lock.release()
        try:
            lock.release()
        except tslock.LockError:
            pass

    for _ in range(200):
        cycle()
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    for _ in range(2000):
        cycle()
    gc.collect()
    grown = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    assert grown < 64 * 1024, grown
    if hasattr(sys, "gettotalrefcount"):  # a debug build of Python
        gc.collect()
        refs = sys.gettotalrefcount()
        for _ in range(500):
            cycle()
        gc.collect()
        assert sys.gettotalrefcount() - refs < 100

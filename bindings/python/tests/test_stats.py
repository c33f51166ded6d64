# SPDX-License-Identifier: BSD-3-Clause
"""Client.stats() and Client.set_observer(): the library's metrics, summed
over the Client's connections, and its events, also from a watchdog's
thread (which takes the GIL to call the observer)."""
import threading
import time

import pytest

import tslock


def _bucket(hist, le):
    return dict(hist["buckets"])[le]


def test_counts_and_events(client, r, key):
    events = []
    client.set_observer(events.append)
    lock = client.lock(key, timeout=5, scheme="token")
    assert lock.acquire()
    assert client.lock(key, scheme="token").acquire(blocking=False) is False
    r.delete(key)  # the lease is lost
    with pytest.raises(tslock.LockLostError):
        lock.release()

    stamp = key + ":stamp"
    r.set(stamp, "1600000000000")  # expired in 2020
    old = client.lock(stamp, scheme="timestamp")
    assert old.acquire(blocking=False)
    old.release()

    bridge = client.lock(key + ":bridge", scheme="bridge")
    assert bridge.acquire(blocking=False)
    r.getset(key + ":bridge", "1600000000000")  # a legacy client's GETSET
    with pytest.raises(tslock.LockLostError):
        bridge.release()

    s = client.stats()
    assert (s["acquired"], s["busy"], s["timed_out"], s["canceled"],
            s["errors"]) == (3, 1, 0, 0, 0)
    assert s["by_scheme"] == {"timestamp": 1, "token": 1, "bridge": 1}
    assert (s["released"], s["lost"], s["takeovers"],
            s["legacy_takeovers"]) == (1, 2, 1, 1)
    assert s["wait"]["count"] == 3 and s["wait"]["sum"] == 0.0
    assert _bucket(s["wait"], 0.001) == 3
    assert s["wait"]["buckets"][-1] == (float("inf"), 3)
    assert s["hold"]["count"] == 3  # an observer times holds

    got = [(e["type"], e["key"], e["result"], e["scheme"], e["legacy"])
           for e in events]
    assert got == [
        ("acquire", key, "TSLOCK_OK", "token", False),
        ("acquire", key, "TSLOCK_EBUSY", "token", False),
        ("lost", key, "TSLOCK_ELOST", "token", False),
        ("takeover", stamp, "TSLOCK_OK", "timestamp", False),
        ("acquire", stamp, "TSLOCK_OK", "timestamp", False),
        ("release", stamp, "TSLOCK_OK", "timestamp", False),
        ("acquire", key + ":bridge", "TSLOCK_OK", "bridge", False),
        ("lost", key + ":bridge", "TSLOCK_ELOST", "bridge", True),
    ]
    assert all(e["duration"] >= 0 for e in events)
    client.set_observer(None)
    with pytest.raises(TypeError, match="callable"):
        client.set_observer(42)


def test_watchdog_renews_and_its_thread_calls_the_observer(client, r, key):
    seen = threading.Event()
    events = []

    def observer(e):
        events.append((e["type"], e["from_watchdog"],
                       threading.current_thread() is threading.main_thread()))
        if e["type"] == "lost":
            seen.set()

    client.set_observer(observer)
    lock = client.lock(key, timeout=2, auto_renew=True, renew_interval=0.05,
                       on_lost=lambda exc: None)
    assert lock.acquire()
    deadline = time.monotonic() + 10
    while client.stats()["renewals"] < 1 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert client.stats()["renewals"] >= 1
    r.set(key, "taken-by-someone")
    assert seen.wait(10)
    assert events[0] == ("acquire", False, True)
    assert events[-1] == ("lost", True, False)  # on the watchdog's thread
    # The watchdog counts its failure once tslock_extend() has returned,
    # after the loss was observed inside it: wait for that state.
    deadline = time.monotonic() + 10
    while (client.stats()["renewal_failures"] < 1
           and time.monotonic() < deadline):
        time.sleep(0.01)
    s = client.stats()
    assert s["lost"] == 1 and s["renewal_failures"] == 1

# SPDX-License-Identifier: BSD-3-Clause
"""A Redlock over three independent masters, from several URLs."""
import pytest

import tslock
from conftest import count_overlaps


def test_from_several_urls_takes_a_majority(masters, key):
    rc = tslock.Client.from_url([m.url for m in masters])
    assert isinstance(rc, tslock.RedlockClient)
    lock = rc.lock(key, timeout=5)
    assert lock.acquire()
    assert lock.owned() and 4.0 < lock.validity() <= 5.0
    assert lock.handle().startswith("redlock:")
    other = tslock.Client.from_url([m.url for m in masters]).lock(key)
    assert other.acquire(blocking=False) is False
    lock.extend(10, replace_ttl=True)
    assert lock.validity() > 9.0
    lock.release()
    assert not lock.owned()
    with pytest.raises(tslock.LockError):
        lock.release()
    with other:
        assert other.owned()


def test_one_master_down_still_a_majority(masters, key):
    masters[2].stop()
    rc = tslock.Client.from_url([m.url for m in masters])
    with rc.lock(key, timeout=5) as lock:
        assert lock.owned()
    masters[1].stop()
    with pytest.raises(tslock.LockError) as e:
        rc.lock(key).acquire(blocking=False)
    assert e.value.errname == "TSLOCK_ENOQUORUM"


def test_lost_on_a_majority_is_reported(masters, key):
    import redis
    rc = tslock.Client.from_url([m.url for m in masters])
    lock = rc.lock(key, timeout=5)
    assert lock.acquire()
    for m in masters[:2]:
        redis.Redis(unix_socket_path=m.socket).delete(key)
    with pytest.raises(tslock.LockLostError):
        lock.release()


def test_adopt_a_redlock_handle(masters, key):
    rc = tslock.Client.from_url([m.url for m in masters])
    lock = rc.lock(key, timeout=5)
    assert lock.acquire()
    copy = tslock.Client.from_url([m.url for m in masters]).adopt(
        lock.handle(), key)
    copy.release()
    with pytest.raises(tslock.LockLostError):
        lock.release()


def test_even_number_of_masters_refused(masters):
    with pytest.raises(ValueError, match="odd number"):
        tslock.Client.from_url([m.url for m in masters[:2]])


def test_threads_share_a_redlock_client(masters, key):
    rc = tslock.Client.from_url([m.url for m in masters])

    def section():
        return rc.lock(key, timeout=10, sleep=0.01, blocking_timeout=60)

    state = count_overlaps([section] * 4, 10, inside_s=0.001, join_s=120)
    assert state == {"inside": 0, "overlaps": 0, "counts": [10] * 4}

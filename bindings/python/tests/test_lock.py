# SPDX-License-Identifier: BSD-3-Clause
"""The redis-py-shaped interface: acquire, release, extend, reacquire,
locked, owned, with; the exception hierarchy; the kinds beyond redis-py."""
import threading
import time

import pytest

import tslock


def test_acquire_release_owned_locked(client, key):
    lock = client.lock(key, timeout=5)
    assert not lock.locked() and not lock.owned()
    assert lock.acquire() is True
    assert lock.owned() and lock.locked()
    assert lock.scheme_used == "token"
    assert lock.handle().startswith("token:")
    assert 4.0 < lock.time_left() <= 5.0
    other = client.lock(key)
    assert other.acquire(blocking=False) is False
    assert other.locked() and not other.owned()
    lock.release()
    assert not lock.owned() and not lock.locked()


def test_blocking_timeout_returns_false(client, key):
    holder = client.lock(key, timeout=5)
    assert holder.acquire()
    start = time.monotonic()
    assert client.lock(key, blocking_timeout=0.2).acquire() is False
    assert 0.15 < time.monotonic() - start < 2.0
    holder.release()


def test_context_manager(client, key):
    with client.lock(key, timeout=5) as lock:
        assert lock.owned()
        with pytest.raises(tslock.LockError, match="Unable to acquire"):
            with client.lock(key, blocking=False):
                pass
    assert not lock.locked()


def test_release_unlocked_raises_lockerror_as_redis_py(client, key):
    lock = client.lock(key)
    with pytest.raises(tslock.LockError) as e:
        lock.release()
    assert e.value.code == tslock.ERRORS["ESTATE"]
    assert not isinstance(e.value, tslock.LockNotOwnedError)
    with pytest.raises(tslock.LockError):
        lock.extend(1)


def test_release_after_takeover_raises_lock_lost(client, r, key):
    lock = client.lock(key, timeout=5)
    assert lock.acquire()
    r.set(key, "someone-else")
    assert not lock.owned()
    with pytest.raises(tslock.LockLostError) as e:
        lock.release()
    assert isinstance(e.value, tslock.LockNotOwnedError)
    assert e.value.errname == "TSLOCK_ELOST"
    assert r.get(key) == b"someone-else"  # never deleted what is not ours


def test_extend_adds_or_replaces_and_reacquire(client, key):
    lock = client.lock(key, timeout=2)
    assert lock.acquire()
    lock.extend(10)
    assert 11.0 < lock.time_left() <= 12.0
    lock.extend(3, replace_ttl=True)
    assert 2.0 < lock.time_left() <= 3.0
    lock.reacquire()
    assert 1.0 < lock.time_left() <= 2.0
    lock.release()


def test_timestamp_scheme_units(client, r, key):
    for unit, check in (("ms", lambda v: len(v) == 13 and v.isdigit()),
                        ("s", lambda v: len(v) == 10 and v.isdigit()),
                        ("float", lambda v: "." in v)):
        lock = client.lock(key + unit, scheme="timestamp", unit=unit)
        assert lock.acquire()
        value = r.get(key + unit).decode()
        assert check(value), (unit, value)
        assert lock.value == value
        assert r.ttl(key + unit) == -1  # no TTL on a timestamp key
        lock.release()


def test_wrongtype_error(client, r, key):
    r.rpush(key, "x")
    with pytest.raises(tslock.WrongTypeError) as e:
        client.lock(key).acquire(blocking=False)
    assert e.value.code == tslock.ERRORS["EWRONGTYPE"]


def test_every_code_maps_to_the_hierarchy():
    special = {"ELOST": tslock.LockLostError,
               "EWRONGTYPE": tslock.WrongTypeError,
               "EUNSUPPORTED": tslock.UnsupportedError}
    assert len(tslock.ERRORS) == 21  # ENOPERM (-20), ETLS (-21) came in 1.1
    for name, code in tslock.ERRORS.items():
        exc = tslock._tslock._exception(code, "detail of %s" % name)
        assert type(exc) is special.get(name, tslock.LockError), name
        assert isinstance(exc, tslock.LockError)
        assert exc.code == code and exc.errname == "TSLOCK_" + name
        assert str(exc) == "detail of %s" % name
    assert issubclass(tslock.LockLostError, tslock.LockNotOwnedError)


def test_errors_takes_the_errname_a_lock_error_carries():
    # doc/python.md looks a code up by e.errname ("TSLOCK_ELOST").
    exc = tslock._tslock._exception(tslock.ERRORS["ELOST"], "lost")
    assert tslock.ERRORS[exc.errname] == exc.code == tslock.ERRORS["ELOST"]
    assert "TSLOCK_ELOST" in tslock.ERRORS and "ELOST" in tslock.ERRORS
    assert "TSLOCK_ENOSUCH" not in tslock.ERRORS
    assert len(tslock.ERRORS) == 21 and "TSLOCK_ELOST" not in tslock.ERRORS.keys()
    with pytest.raises(KeyError):
        tslock.ERRORS["TSLOCK_ENOSUCH"]
    # Without a detail, the library's message.
    assert "held by another owner" in str(
        tslock._tslock._exception(tslock.ERRORS["EBUSY"]))


def test_bad_arguments_name_what_was_expected(client):
    with pytest.raises(ValueError, match="scheme: expected one of"):
        client.lock("k", scheme="tokens")
    with pytest.raises(ValueError, match="unit: expected one of"):
        client.lock("k", unit="us")
    with pytest.raises(ValueError, match="timeout: expected a finite"):
        client.lock("k", timeout=-1)
    with pytest.raises(ValueError, match="expected redis://"):
        tslock.Client.from_url("http://x")
    with pytest.raises(ValueError, match="database number") as e:
        tslock.Client.from_url("redis://:secret@host/abc")
    assert "secret" not in str(e.value)
    with pytest.raises(tslock.UnsupportedError):
        client.lock("k").acquire(token="abc")


def test_from_url_forms():
    p = tslock._parse_url
    assert p("redis://h:7000/3") == dict(username=None, password=None,
                                         host="h", port=7000, db=3)
    assert p("unix://u:p%40w@/tmp/r.sock?db=2")["password"] == "p@w"
    s = p("redis+sentinel://:pw@s1,s2:26380/mymaster/1"
          "?sentinel_password=sp")
    assert s["sentinels"] == [("s1", 26379), ("s2", 26380)]
    assert (s["service_name"], s["db"], s["sentinel_password"]) == \
        ("mymaster", 1, "sp")


def test_connection_error_is_a_lock_error(tmp_path):
    c = tslock.Client.from_url("unix://%s/nothing.sock" % tmp_path)
    with pytest.raises(tslock.LockError) as e:
        c.lock("k").acquire(blocking=False)
    assert e.value.errname == "TSLOCK_EIO"
    assert "nothing.sock" in str(e.value)


def test_fencing_numbers_grow(client, key):
    seen = []
    for _ in range(3):
        with client.lock(key, fencing=True) as lock:
            seen.append(lock.fence)
    assert seen[0] >= 1 and seen == sorted(seen) and len(set(seen)) == 3
    assert client.lock(key).fence is None


def test_read_write_lock(client, key):
    r1, r2 = client.read_lock(key), client.read_lock(key)
    assert r1.acquire() and r2.acquire()
    assert r1.holders() == 2
    w = client.write_lock(key)
    assert w.acquire(blocking=False) is False
    assert client.lock(key).locked()  # plain clients see the key held
    r1.release()
    r2.release()
    assert w.acquire(blocking=False) is True
    assert client.read_lock(key).acquire(blocking=False) is False
    w.release()


def test_semaphore(client, key):
    sems = [client.semaphore(key, 2) for _ in range(3)]
    assert sems[0].acquire() and sems[1].acquire()
    assert sems[2].acquire(blocking=False) is False
    assert sems[0].holders() == 2
    sems[0].release()
    assert sems[2].acquire(blocking=False) is True
    sems[1].release()
    sems[2].release()
    with pytest.raises(ValueError, match="permits"):
        client.semaphore(key, 0)


def test_fair_mode_serves_in_order_of_asking(client, key):
    holder = client.lock(key, fair=True)
    assert holder.acquire()
    order = []

    def waiter(i):
        lock = client.lock(key, fair=True)
        if lock.acquire(blocking_timeout=20):
            order.append(i)
            lock.release()

    threads = []
    for i in range(3):
        t = threading.Thread(target=waiter, args=(i,))
        t.start()
        threads.append(t)
        # The next waiter asks only once this one is queued.
        deadline = time.monotonic() + 10
        while holder.queue_length() < i + 1:
            assert time.monotonic() < deadline
            time.sleep(0.005)
    holder.release()
    for t in threads:
        t.join(30)
    assert order == [0, 1, 2]
    assert holder.queue_length() == 0


def test_handle_and_adopt_across_processes(client, server, key):
    import subprocess
    import sys
    lock = client.lock(key, scheme="bridge", unit="ms", timeout=30)
    assert lock.acquire()
    handle = lock.handle()
    assert handle.startswith("bridge-ms:")
    code = ("import tslock, sys\n"
            "c = tslock.Client.from_url(sys.argv[1])\n"
            "l = c.adopt(sys.argv[2], sys.argv[3], unit='ms')\n"
            "assert l.owned()\n"
            "l.release()\n")
    subprocess.run([sys.executable, "-c", code, server.url, handle, key],
                   check=True, timeout=30)
    assert not lock.locked()
    with pytest.raises(tslock.LockLostError):
        lock.release()


def test_survey_names_each_dialect(client, r, key):
    token = client.lock(key + ":t")
    bridge = client.lock(key + ":b", scheme="bridge", unit="s")
    assert token.acquire() and bridge.acquire()
    r.set(key + ":legacy", repr(time.time() + 30))  # redis-py 2.x stamp
    r.set(key + ":old", str(int(time.time() * 1000) - 60000))
    r.set(key + ":other", "hello")
    found = {e.key: e for e in client.survey(match=key + "*")}
    assert found[key + ":t"].dialect == "token"
    assert found[key + ":t"].state == "live"
    assert found[key + ":b"].dialect == "bridge-s"
    assert found[key + ":legacy"].dialect == "timestamp-float"
    assert found[key + ":old"].dialect == "timestamp-ms"
    assert found[key + ":old"].state == "expired"
    assert key + ":other" not in found
    assert not any(k.endswith(":owner") for k in found)
    every = {e.key for e in client.survey(match=key + "*", all_keys=True)}
    assert key + ":other" in every
    token.release()
    bridge.release()


def test_old_servers(old_server, r, key):
    c = tslock.Client.from_url(old_server.url)
    assert c.server_info()["version"][:2] == tuple(
        int(x) for x in old_server.version.split(".")[:2])
    with c.lock(key, timeout=5) as lock:
        assert lock.owned()
        expected = "timestamp" if old_server.version == "2.0.5" else "token"
        assert lock.scheme_used == expected
    assert not lock.locked()
    if old_server.version == "2.0.5":
        with pytest.raises(tslock.UnsupportedError):
            c.lock(key, fair=True).acquire(blocking=False)


def test_release_at_least_keeps_it_held_then_expires(client, r, key):
    lock = client.lock(key, timeout=5)
    assert lock.acquire()
    lock.release(at_least=0.6)
    assert not lock.owned()
    # Held by nobody's object, yet taken: a host firing late finds it so.
    assert 0 < r.pttl(key) <= 600
    assert client.lock(key).acquire(blocking=False) is False
    time.sleep(0.7)
    assert client.lock(key).acquire(blocking=False) is True


def test_release_at_least_past_minimum_deletes(client, r, key):
    lock = client.lock(key, timeout=5)
    assert lock.acquire()
    time.sleep(0.1)
    lock.release(at_least=0.05)
    assert r.exists(key) == 0
    with pytest.raises(ValueError, match="at_least"):
        client.lock(key).release(at_least=-1)

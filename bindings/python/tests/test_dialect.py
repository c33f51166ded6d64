# SPDX-License-Identifier: BSD-3-Clause
"""The dialect option: stamps written as a legacy library writes them, and
that library's crashed holders taken over, with the library's presets."""
import json
import os
import re
import subprocess
import time

import pytest

import tslock
from test_migration import doc_example


def test_presets_come_from_the_library():
    assert "redis-lock-gem" in tslock.DIALECTS
    assert tslock.DIALECTS["predislock"] == "{s+1}:{pid}"
    assert tslock.DIALECTS["ninja-mutex"].startswith("php-array(")


def test_a_bad_dialect_is_refused_before_any_command(client, key):
    with pytest.raises(ValueError, match=r"unknown field.*presets: java"):
        client.lock(key, dialect="{x}")


def test_the_value_is_the_dialects(client, r, key):
    with client.lock(key, timeout=5, scheme="timestamp", dialect="predislock"):
        value = r.get(key).decode()
        assert re.fullmatch(r"\d{10}:%d" % os.getpid(), value), value
        assert int(value.split(":")[0]) >= int(time.time()) + 5
    assert r.get(key) is None


@pytest.mark.parametrize("scheme", ["timestamp", "bridge"])
def test_a_crashed_legacy_holder_is_taken_over(client, r, key, scheme):
    r.set(key, "%d-4242-77" % (time.time() - 3))  # the redis-lock gem's
    plain = client.lock(key, timeout=5, scheme=scheme)
    assert not plain.acquire(blocking=False)  # unreadable in plain ms
    lock = client.lock(key, timeout=5, scheme=scheme, dialect="redis-lock-gem")
    assert lock.acquire(blocking=False)
    assert re.fullmatch(r"\d{10}-%d-\d+" % os.getpid(), r.get(key).decode())
    lock.release()


def test_match_names_the_writer():
    names, _expires = tslock._tslock.dialect_match(b"1795841799:15131")
    assert names == "predislock"
    assert tslock._tslock.dialect_match(b"1795841687")[0] == \
        "redis-docs/resque-lock-timeout"
    assert tslock._tslock.dialect_match(b"hello") is None


def test_the_docs_dialect_example_runs(server):
    exec(compile(doc_example("dialect"), "doc/python.md", "exec"),
         {"url": server.url})


def test_auto_with_a_dialect_is_a_bridge_lock(client, r, key):
    # A dialect is asked for to share the lock with its clients: auto
    # then takes the bridge scheme, never a token they cannot see.
    with client.lock(key, timeout=5, dialect="redis-lock-gem") as lock:
        assert lock.scheme_used == "bridge"
        assert re.fullmatch(r"\d{10}-%d-\d+" % os.getpid(),
                            r.get(key).decode())


def test_a_token_writer_refuses_a_dialect(client, r, key):
    lock = client.lock(key, timeout=5, scheme="token", dialect="predislock")
    with pytest.raises(tslock.LockError) as e:
        lock.acquire(blocking=False)
    assert e.value.errname == "TSLOCK_EINVAL"
    assert "token scheme" in str(e.value) and "predislock" in str(e.value)
    assert r.get(key) is None


def test_survey_names_the_legacy_libraries(server, client, r, key):
    # The keys of the gem, PredisLock and ninja-mutex, which no plain
    # unit reads, are named by their library; so are the sentinels of
    # redis-objects and resque-lock-timeout, on keys named as locks.
    now = int(time.time())
    r.set(key + ":gem", "%d-4242-77" % (now + 30))
    r.set(key + ":predis", "%d:4242" % (now - 30))
    r.set(key + ":ninja", 'a:3:{s:3:"pid";i:1;s:8:"hostname";s:2:"vm";'
          's:7:"expires";i:%d;}' % (now + 30))
    r.set(key + ":objects_lock", "1")
    r.set(key + ":counter", "1")
    r.set(key + ":strange", "%d~x" % (now + 30))
    found = {e.key[len(key) + 1:]: e for e in client.survey(match=key + "*")}
    assert found["gem"].stamp_dialect == "redis-lock-gem"
    assert found["gem"].state == "live"
    assert found["gem"].dialect == "timestamp-s"
    assert found["predis"].stamp_dialect == "predislock"
    assert found["predis"].state == "expired"
    assert found["ninja"].stamp_dialect == "ninja-mutex"
    assert found["objects_lock"].stamp_dialect == "redis-objects"
    assert found["objects_lock"].state == "never"
    assert "counter" not in found  # a "1" on a key not named as a lock
    assert found["strange"].dialect == "unknown-stamp"
    assert found["strange"].state == "unreadable"
    # The tslock command's survey gives the same verdicts.
    cli = os.environ.get("TSLOCK_CLI")
    if cli:
        out = subprocess.run(
            [cli, "-u", server.url, "survey", "--json", "--match",
             key + "*"], check=True, capture_output=True, text=True).stdout
        rows = [json.loads(line) for line in out.splitlines()
                if line.startswith("{")]
        named = {row["key"][len(key) + 1:]: row for row in rows
                 if "key" in row}
        assert set(named) == set(found)
        for name, entry in found.items():
            assert named[name]["stamp_dialect"] == entry.stamp_dialect, name

# SPDX-License-Identifier: BSD-3-Clause
"""The dialect option: stamps written as a legacy library writes them, and
that library's crashed holders taken over, with the library's presets."""
import os
import re
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

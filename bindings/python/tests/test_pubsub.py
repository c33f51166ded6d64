# SPDX-License-Identifier: BSD-3-Clause
"""Client(pubsub=...): how waiters are woken (tslock_client_set_pubsub),
and the pubsub property (tslock_client_get_pubsub), on a single Redis
7.0 server: "auto" and "classic" use classic pub/sub there, "sharded"
SSUBSCRIBE and SPUBLISH.  A waiter of each mode is woken by the release:
its retry delay outlasts its blocking timeout, so only the wake-up can
let it in."""
import threading
import time

import pytest

import tslock


def _version(r):
    return tuple(int(x) for x in r.info()["redis_version"].split(".")[:2])


def test_default_is_auto_and_classic_on_a_single_server(client):
    assert client.pubsub_mode == "auto"
    assert client.pubsub == "classic"


@pytest.mark.parametrize("mode", ["auto", "classic", "sharded"])
def test_mode_given_is_the_mode_read(server, mode):
    c = tslock.Client.from_url(server.url, pubsub=mode)
    assert c.pubsub_mode == mode
    assert c.pubsub == ("sharded" if mode == "sharded" else "classic")


def test_bad_mode_names_what_was_expected(server):
    with pytest.raises(ValueError, match='expected "auto", "classic" or '
                       '"sharded", got "shard"'):
        tslock.Client(unix_socket_path=server.socket, pubsub="shard")
    with pytest.raises(TypeError):
        tslock.Client(unix_socket_path=server.socket, pubsub=2)


def _subscribers(r, channel, sharded):
    if sharded:
        return r.execute_command("PUBSUB", "SHARDNUMSUB", channel)[1]
    return r.execute_command("PUBSUB", "NUMSUB", channel)[1]


@pytest.mark.parametrize("mode", ["classic", "sharded"])
def test_waiter_is_woken(server, r, key, mode):
    if mode == "sharded" and _version(r) < (7, 0):
        pytest.skip("sharded pub/sub needs Redis 7.0")
    c = tslock.Client.from_url(server.url, pubsub=mode)
    holder = c.lock(key, timeout=60)
    assert holder.acquire()
    got = []
    # sleep (the longest retry delay) and the holder's lease outlast the
    # blocking timeout: without a wake-up the waiter would give up.
    waiter = threading.Thread(target=lambda: got.append(
        c.lock(key, timeout=5, sleep=60).acquire(blocking_timeout=30)))
    waiter.start()
    channel = "{%s}:released" % key
    deadline = time.monotonic() + 20
    while (_subscribers(r, channel, mode == "sharded") < 1
           or r.zcard("{%s}:queue" % key) < 1):
        assert waiter.is_alive() and time.monotonic() < deadline
        time.sleep(0.01)
    # The waiter's entry in the line says how it listens ('s' sharded).
    entry = r.zrange("{%s}:queue" % key, 0, 0)[0].decode()
    assert entry.endswith("s" if mode == "sharded" else "w")
    holder.release()
    waiter.join(40)
    assert got == [True]

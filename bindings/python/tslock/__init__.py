# SPDX-License-Identifier: BSD-3-Clause
"""tslock - mutual exclusion over Redis, in every lock dialect, for Python.

A Python face for libtslock, shaped like redis-py's ``Lock``::

    import tslock

    client = tslock.Client.from_url("redis://localhost:6379/0")
    with client.lock("nightly-report", timeout=60, blocking_timeout=10):
        make_report()

Beyond redis-py: every scheme tslock speaks (``scheme="token"``,
``"timestamp"``, ``"bridge"`` beside legacy SETNX/GETSET clients, or
``"auto"``), read-write locks, semaphores, fair mode, fencing numbers, a
watchdog that keeps the lease renewed and reports a lost one, ``survey()``,
and handles that move a hold to another process.  doc/python.md has the
whole story; every docstring says where a meaning differs from redis-py.

Threads: a Client may be shared by any number of threads (it keeps a pool
of connections; every operation has one to itself).  A Lock object serves
one thread at a time; a second thread that uses it while the first is
inside a call gets LockError.  Every call that waits on the network runs
without the GIL.

fork(): a child must not use its parent's connections, and does not: the
first call in the child opens its own.  A hold belongs to the process that
took it: in the child, an inherited Lock that was held is not held
(owned() is False, release() raises LockError) and the parent's hold is
untouched.  To hand a hold to another process, pass ``lock.handle()`` and
call ``client.adopt(...)`` there.
"""

import atexit as _atexit
import collections as _collections
import functools as _functools
import logging as _logging
import math as _math
import os as _os
import threading as _threading
import time as _time
import warnings as _warnings
import weakref as _weakref

from . import _tslock
from ._tslock import (LockError, LockLostError, LockNotOwnedError,
                      UnsupportedError, WrongTypeError)

__all__ = ["Client", "Lock", "ReadLock", "WriteLock", "Semaphore",
           "RedlockClient", "Redlock",
           "LockError", "LockNotOwnedError", "LockLostError",
           "WrongTypeError", "UnsupportedError", "SurveyEntry",
           "library_version", "ERRORS"]

library_version = _tslock.library_version

_log = _logging.getLogger("tslock")

# redis-py's LockError carries the lock's name (redis-py 5 and later); so
# does tslock's, None for an error that no one lock caused (a Client's).
LockError.lock_name = None

class _Codes(dict):
    """The codes by short name ("ELOST"); the full name a LockError carries
    as .errname ("TSLOCK_ELOST") finds the same code, so
    ERRORS[e.errname] works as the docs show."""

    def __missing__(self, key):
        if isinstance(key, str) and key.startswith("TSLOCK_") and \
                key[7:] in self:
            return self[key[7:]]
        raise KeyError(key)

    def __contains__(self, key):
        return dict.__contains__(self, key) or (
            isinstance(key, str) and key.startswith("TSLOCK_") and
            dict.__contains__(self, key[7:]))


#: Every TSLOCK_E* code by name ("EBUSY": -1, ...), as LockError.code holds;
#: ERRORS["TSLOCK_EBUSY"] (a LockError's .errname) gives the same code.
ERRORS = _Codes((name, getattr(_tslock, name))
                for name in dir(_tslock) if name.startswith("E") and name.isupper())

_SCHEMES = {"auto": 0, "timestamp": 1, "token": 2, "bridge": 3}
_UNITS = {"ms": 0, "s": 1, "float": 2}
# The legacy stamp dialects the library knows: preset name -> format.
DIALECTS = {name: fmt for name, fmt, _lib in _tslock.dialects()}
_RW_OFF, _RW_EXCLUSIVE, _RW_SHARED = 0, 1, 2
_DEFAULT_TTL_S = 30.0

_tslock._set_main_thread(_threading.main_thread().ident)

# Locks whose watchdog runs: stopped at exit, before the interpreter goes,
# so no watchdog thread calls into a finalizing interpreter.
_renewing = _weakref.WeakSet()


@_atexit.register
def _stop_watchdogs():
    for lock in list(_renewing):
        lock._stop_renewing()


def _ms(seconds, what):
    """Seconds (int or float) as whole milliseconds, rounded up."""
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)):
        raise TypeError("%s: expected seconds as a number, got %r"
                        % (what, seconds))
    if seconds < 0 or _math.isnan(seconds) or _math.isinf(seconds):
        raise ValueError("%s: expected a finite number of seconds >= 0, "
                         "got %r" % (what, seconds))
    return int(_math.ceil(seconds * 1000))


def _wait_ms(lock, blocking, blocking_timeout):
    """acquire()'s wait for the library: 0 tries once, -1 waits until
    taken, else milliseconds; ``blocking`` and ``blocking_timeout`` are
    the lock's own when None."""
    if blocking is None:
        blocking = lock.blocking
    if blocking_timeout is None:
        blocking_timeout = lock.blocking_timeout
    if not blocking:
        return 0
    if blocking_timeout is None:
        return -1
    return _ms(blocking_timeout, "blocking_timeout")


def _named(method):
    """Give a LockError that ``method`` raises its Lock's name as
    ``lock_name`` (as redis-py's ``LockError(..., lock_name=)``)."""
    @_functools.wraps(method)
    def call(self, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except LockError as e:
            if e.lock_name is None:
                e.lock_name = self.name
            raise
    return call


def _exit_release(lock):
    """The end of a with block: release, and when ``raise_on_release_error``
    is False, log instead of raising that the lock was no longer ours (not
    held, or lost), as redis-py 6 does.  Any other error (the server
    unreachable, the Lock in use by another thread) still raises: redis-py
    raises those too, as errors that are not LockError."""
    if lock.raise_on_release_error:
        lock.release()
        return
    why = "not held"
    try:
        if lock._is_held():
            lock.release()
            return
    except LockNotOwnedError as e:
        why = e
    _log.warning("Lock %r was unlocked or no longer owned when exiting "
                 "the with block: %s", lock.name, why)


def _choice(table, value, what):
    if value not in table:
        raise ValueError("%s: expected one of %s, got %r"
                         % (what, ", ".join(repr(k) for k in table), value))
    return table[value]


class Lock(_tslock.Lock):
    """One named lock over a Client: redis-py's ``Lock``, on libtslock.

    Made by ``Client.lock()``.  The same names as redis-py, with these
    differences in meaning:

    - ``timeout=None`` does not mean "never expires": every tslock hold
      is a lease (30 s by default); use ``auto_renew=True`` for a hold
      that lasts as long as the work does.
    - ``sleep`` is the longest delay between tries.  Waiters also wake
      at once when a tslock holder releases (a publish on the lock's
      channel), so it matters only beside clients that do not announce.
    - ``thread_local`` does not exist: a Lock object is one hold, used by
      one thread at a time (see the module docstring).
    - ``acquire(token=...)`` is not supported: the library writes the
      token (or stamp); use ``handle()``/``Client.adopt()`` to move a hold.
    """

    def __init__(self, client, name, timeout=None, sleep=0.1, blocking=True,
                 blocking_timeout=None, scheme="auto", unit="ms",
                 fair=False, fencing=False, auto_renew=False,
                 renew_interval=None, on_lost=None, release_margin=0,
                 wakeup=True, raise_on_release_error=True, dialect=None,
                 _rw=_RW_OFF, _permits=0):
        if isinstance(name, bytes):
            name = name.decode()
        ttl = _DEFAULT_TTL_S if timeout is None else timeout
        sleep_ms = max(1, _ms(sleep, "sleep"))
        super().__init__(
            client, name,
            ttl_ms=max(1, _ms(ttl, "timeout")),
            scheme=_choice(_SCHEMES, scheme, "scheme"),
            unit=_choice(_UNITS, unit, "unit"),
            rw=_rw, permits=_permits, fair=bool(fair),
            fencing=bool(fencing), wakeup=bool(wakeup),
            retry_min_ms=max(1, sleep_ms // 2), retry_max_ms=sleep_ms,
            release_margin_ms=_ms(release_margin, "release_margin"),
            auto_renew=bool(auto_renew),
            renew_interval_ms=(0 if renew_interval is None
                               else _ms(renew_interval, "renew_interval")),
            on_lost=on_lost, dialect=dialect)
        self.timeout = timeout
        self.sleep = sleep
        self.blocking = blocking
        self.blocking_timeout = blocking_timeout
        self.scheme = scheme
        self.unit = unit
        self.dialect = dialect
        self.auto_renew = bool(auto_renew)
        self.raise_on_release_error = bool(raise_on_release_error)
        # A watchdog's lost-lease report, kept for release() to raise.
        self._lost = None

    def __repr__(self):
        return "<%s %r scheme=%s held=%s>" % (
            type(self).__name__, self.name, self.scheme, self._is_held())

    # -- redis-py's interface ------------------------------------------

    @_named
    def acquire(self, blocking=None, blocking_timeout=None, token=None):
        """Take the lock; True when taken, False when not.

        blocking: wait (True) or try once (False); the Lock's own
        ``blocking`` when None.  blocking_timeout: the longest wait in
        seconds, None to wait until taken; the Lock's own when None.
        Returns False when the lock stays busy (held by another owner, or
        by a value this scheme cannot read, which is never taken over),
        or when ``cancel()`` was called from another thread.

        A Lock that already holds raises LockError at once, where
        redis-py tries again with a new token (False without blocking,
        else a wait on its own hold until the lease runs out, or for ever
        without a timeout).

        Ctrl-C during the wait raises KeyboardInterrupt promptly, with
        nothing held.  Raises LockError (already held by this object, a
        connection failure), UnsupportedError (the server cannot do what
        the Lock asks, e.g. fair mode on Redis 2.0), WrongTypeError.
        """
        if token is not None:
            raise UnsupportedError(
                "acquire(token=...): tslock writes its own token or stamp; "
                "use handle() and Client.adopt() to move a hold")
        wait_ms = _wait_ms(self, blocking, blocking_timeout)
        self._lost = None
        taken = self._acquire(wait_ms)
        if taken and self.auto_renew:
            _renewing.add(self)
        return taken

    @_named
    def release(self, at_least=None):
        """Release the lock, deleting it only while it is still ours.

        With ``at_least`` (seconds), the key stays held until that long
        after it was taken, then expires by itself, never past the lease
        (ShedLock's lockAtLeastFor; tslock_release_after() in C): hosts
        whose scheduled job fires a little later find it held.

        Raises LockError when this object does not hold it (as redis-py),
        and LockLostError (a LockNotOwnedError, redis-py's name) when the
        lease ran out or another owner took the key: nothing was deleted,
        and mutual exclusion may have been broken.  With ``auto_renew``, a
        loss the watchdog found while the lock was held is raised here
        (after ``on_lost`` was called, if given).
        """
        _renewing.discard(self)
        if at_least is None:
            self._release()
        else:
            self._release(_ms(at_least, "at_least"))

    def do_release(self, expected_token=None):
        """redis-py's internal name; the same as release()."""
        self.release()

    @_named
    def extend(self, additional_time, replace_ttl=False):
        """Add ``additional_time`` seconds to the lease left, or with
        ``replace_ttl=True`` set the lease to ``additional_time``.

        Differs from redis-py in cost, not meaning: the library sets a
        lease from now (compare-and-set, one round trip), so adding to
        what is left reads it first (one more).  Raises LockError when not
        held, LockLostError (a LockNotOwnedError) when no longer ours.
        """
        ms = _ms(additional_time, "additional_time")
        if not replace_ttl:
            left = self._time_left()
            if left is None:
                if not self._is_held():
                    raise LockError("Cannot extend an unlocked lock (%r)"
                                    % self.name)
                raise LockLostError("Cannot extend a lock that's no longer "
                                    "owned (%r)" % self.name)
            ms += left
        if ms <= 0:
            raise ValueError("extend: the new lease must be > 0 s")
        self._extend(ms)
        return True

    @_named
    def reacquire(self):
        """Reset the lease to the Lock's ``timeout`` (as redis-py)."""
        self._extend(0)
        return True

    @_named
    def locked(self):
        """Whether anyone holds the key now (any dialect, any client):
        True whenever the key exists, whatever it holds (as redis-py)."""
        _, ttl_ms = self._peek()
        return ttl_ms != -2

    @_named
    def owned(self):
        """Whether this object holds the lock, checked with the server.

        With ``auto_renew`` the watchdog's verdict is used (no round
        trip): False once a renewal found the lock lost.
        """
        if not self._is_held():
            return False
        return self._time_left() is not None

    @_named
    def __enter__(self):
        if self.acquire():
            return self
        raise LockError("Unable to acquire lock %r within the time "
                        "specified" % self.name)

    @_named
    def __exit__(self, exc_type, exc, tb):
        """Release (see release()); with ``raise_on_release_error=False`` a
        lock no longer ours (released already, or lost) is logged as a
        warning on the "tslock" logger instead of raised, as redis-py 6."""
        _exit_release(self)

    # -- beyond redis-py -------------------------------------------------

    @_named
    def time_left(self):
        """Seconds left of our lease, as the server (token) or the stored
        stamp (timestamp, bridge) says; None when not ours."""
        left = self._time_left()
        return None if left is None else left / 1000.0

    @_named
    def handle(self):
        """A printable handle of the hold ("token:...", "bridge-ms:..."),
        which ``Client.adopt()`` turns back into a held Lock in another
        process; None when not held.  A timestamp or bridge extension
        writes a new stamp, so the handle changes with it."""
        info = self._hold_info()
        return info["handle"] if info else None

    @property
    def fence(self):
        """The fencing number of the hold (``fencing=True``): it grows
        with every acquisition of the key, so a resource can refuse a
        writer whose lease ran out.  None when not held or not fenced."""
        info = self._hold_info()
        return info["fence"] if info and info["fence"] > 0 else None

    @property
    def scheme_used(self):
        """The scheme of the current hold ("token", "timestamp",
        "bridge"); None when not held."""
        info = self._hold_info()
        return info["scheme"] if info else None

    @property
    def value(self):
        """The value this hold wrote (a token or a stamp), or None."""
        info = self._hold_info()
        return info["value"] if info else None

    @property
    def expires_at(self):
        """When the hold's lease runs out by its own knowledge (Unix
        seconds), or None."""
        info = self._hold_info()
        if not info or info["expires_ms"] <= 0:
            return None
        return info["expires_ms"] / 1000.0

    @_named
    def peek(self):
        """(value, ttl_ms) of the key now, whoever wrote it: value "" when
        absent; ttl_ms -1 without a TTL, -2 when absent."""
        return self._peek()

    @_named
    def break_lock(self, value):
        """For operators: delete the key only while it holds exactly
        ``value`` (as read with peek()), whoever holds it.  True when
        deleted, False when it held something else."""
        return self._break(value)

    @_named
    def queue_length(self):
        """How many fair waiters are queued for the key."""
        return self._queue_length()

    def _stop_renewing(self):
        try:
            self._stop_watchdog()
        except LockError:
            pass


class ReadLock(Lock):
    """The shared side of a read-write lock: any number of readers hold
    it at once, each with its own lease; a waiting writer goes first."""

    def __init__(self, client, name, **kw):
        super().__init__(client, name, _rw=_RW_SHARED, **kw)

    @_named
    def holders(self):
        """How many live shared holders the key has now."""
        return self._holders()


class WriteLock(Lock):
    """The exclusive side of a read-write lock: one holder, no readers.
    While it waits, new readers are refused (writer preference)."""

    def __init__(self, client, name, **kw):
        super().__init__(client, name, _rw=_RW_EXCLUSIVE, **kw)


class Semaphore(Lock):
    """A counting semaphore: at most ``permits`` holders at once, each
    with its own lease; used like a Lock (acquire, release, with)."""

    def __init__(self, client, name, permits, **kw):
        if isinstance(permits, bool) or not isinstance(permits, int) \
                or permits < 1:
            raise ValueError("permits: expected an int >= 1, got %r"
                             % (permits,))
        super().__init__(client, name, _permits=permits, **kw)
        self.permits = permits

    @_named
    def holders(self):
        """How many live holders the semaphore has now."""
        return self._holders()


class Redlock(_tslock.Redlock):
    """One lock over several independent masters: the Redlock algorithm of
    the Redis documentation (held while a majority holds the same token,
    taken within the validity time).  Made by ``RedlockClient.lock()``;
    used like a Lock: acquire, release, extend, reacquire, owned, with.

    Differs from a Lock: ``owned()`` is this object's own knowledge (the
    validity left by this host's monotonic clock), with no round trip;
    there is no ``locked()`` (ask each master's Client).
    """

    def __init__(self, redlock_client, name, timeout=None, sleep=0.1,
                 blocking=True, blocking_timeout=None, server_timeout=None,
                 raise_on_release_error=True):
        if isinstance(name, bytes):
            name = name.decode()
        ttl = _DEFAULT_TTL_S if timeout is None else timeout
        sleep_ms = max(1, _ms(sleep, "sleep"))
        super().__init__(
            tuple(redlock_client.clients), name,
            ttl_ms=max(1, _ms(ttl, "timeout")),
            retry_min_ms=max(1, sleep_ms // 2), retry_max_ms=sleep_ms,
            server_timeout_ms=(0 if server_timeout is None
                               else _ms(server_timeout, "server_timeout")))
        self.timeout = timeout
        self.blocking = blocking
        self.blocking_timeout = blocking_timeout
        self.raise_on_release_error = bool(raise_on_release_error)

    @_named
    def acquire(self, blocking=None, blocking_timeout=None):
        """Take the lock on a majority; True when taken, False when busy
        (or taken too slowly).  Raises LockError (TSLOCK_ENOQUORUM) when
        too many masters failed for a majority."""
        return self._acquire(_wait_ms(self, blocking, blocking_timeout))

    @_named
    def release(self):
        """Delete our token from every master.  LockError when not held,
        LockLostError when it was gone from too many masters."""
        self._release()

    @_named
    def extend(self, additional_time, replace_ttl=False):
        """As Lock.extend(); without replace_ttl the validity left (by
        this host's clock) is added to."""
        ms = _ms(additional_time, "additional_time")
        if not replace_ttl:
            info = self._hold_info()
            if info is None:
                raise LockError("Cannot extend an unlocked Redlock (%r)"
                                % self.name)
            ms += max(0, info["validity_ms"])
        self._extend(ms)
        return True

    @_named
    def reacquire(self):
        """Reset the lease on every master to the Redlock's timeout."""
        self._extend(0)
        return True

    @_named
    def owned(self):
        """Whether this object holds the Redlock and its validity runs."""
        info = self._hold_info()
        return bool(info) and info["validity_ms"] != 0

    def _is_held(self):
        return self._hold_info() is not None

    def validity(self):
        """Seconds of validity left by this host's clock; None when not
        held or unknown (an adopted handle, until the first extend)."""
        info = self._hold_info()
        if not info or info["validity_ms"] < 0:
            return None
        return info["validity_ms"] / 1000.0

    @_named
    def handle(self):
        """"redlock:TOKEN", which RedlockClient.adopt() turns back into a
        held Redlock over the same masters; None when not held."""
        info = self._hold_info()
        return info["handle"] if info else None

    @_named
    def __enter__(self):
        if self.acquire():
            return self
        raise LockError("Unable to acquire Redlock %r within the time "
                        "specified" % self.name)

    @_named
    def __exit__(self, exc_type, exc, tb):
        """As Lock.__exit__ (``raise_on_release_error``)."""
        _exit_release(self)


class RedlockClient:
    """Several independent masters (an odd number, 3 to 63), one Client
    each: ``Client.from_url([url1, url2, url3])`` makes one, as the
    tslock command does for several ``-u``."""

    def __init__(self, clients):
        self.clients = list(clients)
        n = len(self.clients)
        if n < 3 or n % 2 == 0 or n > 63:
            raise ValueError("a Redlock needs an odd number of masters "
                             "from 3 to 63, got %d" % n)

    def lock(self, name, timeout=None, sleep=0.1, blocking=True,
             blocking_timeout=None, server_timeout=None,
             raise_on_release_error=True):
        """A Redlock on ``name`` (nothing is sent until acquire()).
        server_timeout: how long one master may take to answer before the
        attempt moves on (default a tenth of the lease, 5 ms - 1 s);
        raise_on_release_error: as Client.lock()."""
        return Redlock(self, name, timeout=timeout, sleep=sleep,
                       blocking=blocking, blocking_timeout=blocking_timeout,
                       server_timeout=server_timeout,
                       raise_on_release_error=raise_on_release_error)

    def adopt(self, handle, name, **kw):
        """A Redlock that holds what ``handle`` describes."""
        lock = Redlock(self, name, **kw)
        lock._adopt(handle)
        return lock


#: One key of a survey() walk.
SurveyEntry = _collections.namedtuple(
    "SurveyEntry", "key dialect state left_ms ttl_ms value stamp_dialect",
    defaults=("",))

_COMPANIONS = (b":owner", b":fence", b":queue", b":alive", b":queue-seq")
_UNIT_NAMES = {0: "ms", 1: "s", 2: "float"}


def _owner_key(key):
    """The bridge owner key's name, as tslock_lock_owner_key() makes it."""
    open_ = key.find(b"{")
    close = key.find(b"}", open_ + 1) if open_ >= 0 else -1
    if (open_ >= 0 and close > open_ + 1) or b"}" in key:
        return key + b":owner"
    return b"{" + key + b"}:owner"


class Client(_tslock.Client):
    """Where the locks live: one Redis server, or the master a set of
    Sentinels names, with a pool of connections to it.

    Safe to share between threads; after fork() the child opens its own
    connections.  Timeouts are in seconds, as in redis-py
    (``socket_timeout``, ``socket_connect_timeout``; 5 s each by default).
    ``server_time=True`` takes stamp times from the server's clock.
    ``pubsub`` says how waiters are woken (tslock_client_set_pubsub(3)):
    "auto" (the default: sharded pub/sub on a Redis 7.0+ Cluster, classic
    elsewhere), "classic" (SUBSCRIBE/PUBLISH everywhere) or "sharded"
    (SSUBSCRIBE/SPUBLISH wherever the server has them, a single 7.0
    server too); the ``pubsub`` property says which is used now
    ("sharded" or "classic": a server before 7.0, or one that refuses
    SSUBSCRIBE, falls back to classic), ``pubsub_mode`` the mode given.

    TLS as in redis-py: ``ssl=True`` (what ``rediss://`` says), with
    ``ssl_ca_certs`` (a PEM file of CAs; default the system's),
    ``ssl_ca_path``, ``ssl_certfile`` and ``ssl_keyfile`` (a client
    certificate), ``ssl_password`` (the key's passphrase),
    ``ssl_cert_reqs`` ("required", the default, "optional" or "none", or
    ssl.CERT_*), ``ssl_check_hostname`` (True by default) and
    ``ssl_server_hostname`` (the name sent in SNI and checked).  TLS is
    libtslock's own (OpenSSL), for the sentinels and the master too; a
    failed check raises LockError with errname "TSLOCK_ETLS" and
    OpenSSL's words.
    """

    def __init__(self, host="localhost", port=6379, db=0, password=None,
                 username=None, unix_socket_path=None, socket_timeout=5.0,
                 socket_connect_timeout=5.0, sentinels=None,
                 service_name=None, sentinel_username=None,
                 sentinel_password=None, server_time=False, ssl=False,
                 ssl_ca_certs=None, ssl_ca_path=None, ssl_certfile=None,
                 ssl_keyfile=None, ssl_password=None, ssl_cert_reqs="required",
                 ssl_check_hostname=True, ssl_server_hostname=None,
                 pubsub="auto"):
        self._tls = _tls_settings(
            ssl, ssl_ca_certs=ssl_ca_certs, ssl_ca_path=ssl_ca_path,
            ssl_certfile=ssl_certfile, ssl_keyfile=ssl_keyfile,
            ssl_password=ssl_password, ssl_cert_reqs=ssl_cert_reqs,
            ssl_check_hostname=ssl_check_hostname,
            ssl_server_hostname=ssl_server_hostname)
        super().__init__(
            host=host, port=port, unix_socket_path=unix_socket_path,
            sentinels=sentinels, service_name=service_name, db=db,
            username=username, password=password,
            sentinel_username=sentinel_username,
            sentinel_password=sentinel_password,
            connect_timeout_ms=_ms(socket_connect_timeout or 0,
                                   "socket_connect_timeout"),
            command_timeout_ms=_ms(socket_timeout or 0, "socket_timeout"),
            server_time=bool(server_time), tls=self._tls, pubsub=pubsub)
        self._auth = (username, password)
        self._db = db

    @classmethod
    def from_url(cls, url, **kwargs):
        """A Client from a URL, as the tslock command reads them:

        - ``redis://[[user]:password@]host[:port][/db]``
        - ``unix://[[user]:password@]/path/to/socket[?db=N]``
        - ``redis+sentinel://[[user]:password@]host[:port][,host[:port]...]
          /MASTERNAME[/db][?sentinel_password=P]``
        - ``rediss://`` and ``rediss+sentinel://``: the same over TLS, with
          redis-py's query parameters ``ssl_ca_certs``, ``ssl_certfile``,
          ``ssl_keyfile``, ``ssl_password``, ``ssl_cert_reqs``, ...

        Keyword arguments override what the URL says.  A bad URL raises
        ValueError naming the part that is wrong (never the password).
        A list of URLs (an odd number, 3 or more, of independent masters)
        gives a RedlockClient instead.
        """
        if isinstance(url, (list, tuple)):
            return RedlockClient(cls.from_url(u, **kwargs) for u in url)
        kw = _parse_url(url)
        kw.update(kwargs)
        return cls(**kw)

    def lock(self, name, timeout=None, sleep=0.1, blocking=True,
             blocking_timeout=None, lock_class=None, scheme="auto",
             unit="ms", **kw):
        """A Lock on ``name`` (nothing is sent until acquire()).

        As redis-py's ``Redis.lock()``: ``timeout`` is the lease in
        seconds (None: 30 s, not "forever"; see Lock), ``sleep`` the
        longest delay between tries, ``blocking``/``blocking_timeout`` the
        defaults of acquire().  Beyond it:

        - ``scheme``: "auto" (token where the server can, else timestamp),
          "token", "timestamp" (the classic SETNX/GETSET stamp lock),
          "bridge" (takes part in the same key as unmodified legacy
          timestamp clients; see doc/python.md, Migration);
        - ``unit``: how stamps are written, "ms", "s" or "float" (the
          redis-py 2.x Lock wrote float seconds);
        - ``dialect``: stamps as a legacy lock library writes them, a
          preset (``tslock.DIALECTS``) or a format such as
          "{s+1}:{pid}" (tslock-dialects(7)); it takes the place of
          ``unit``;
        - ``fair=True``: waiters take the lock in the order they asked;
        - ``fencing=True``: ``lock.fence`` is a number that grows with
          every acquisition;
        - ``auto_renew=True``: a watchdog renews the lease while held;
          ``renew_interval`` (s, default a third of the lease) and
          ``on_lost(exc)``, called from the watchdog's thread with a
          LockLostError when a renewal finds the lock lost (release()
          raises it too); it must not use that Lock (LockError if it
          does) and should return quickly;
        - ``release_margin``: refuse to release or extend a stamp with
          less than this many seconds of its lease left (clock skew).

        ``raise_on_release_error`` (redis-py 6): when False, the end of a
        ``with`` block logs a lock no longer ours (released already, or
        lost) as a warning on the "tslock" logger instead of raising;
        release() itself raises either way, as in redis-py.
        """
        cls = lock_class or Lock
        return cls(self, name, timeout=timeout, sleep=sleep,
                   blocking=blocking, blocking_timeout=blocking_timeout,
                   scheme=scheme, unit=unit, **kw)

    def read_lock(self, name, **kw):
        """The shared side of the read-write lock ``name`` (ReadLock)."""
        return ReadLock(self, name, **kw)

    def write_lock(self, name, **kw):
        """The exclusive side of the read-write lock ``name``."""
        return WriteLock(self, name, **kw)

    def semaphore(self, name, permits, **kw):
        """A counting semaphore of ``permits`` on ``name``."""
        return Semaphore(self, name, permits, **kw)

    def adopt(self, handle, name, lock_class=None, **kw):
        """A Lock on ``name`` that holds what ``handle`` (from
        ``Lock.handle()``, in this or another process) describes, so it
        can be released or extended here.  Nothing is sent: a hold that is
        gone is found out by the next release or extend.  Pass the same
        kind options (unit, and for a read-write lock or a semaphore the
        same class) as the Lock that took it."""
        lock = (lock_class or Lock)(self, name, **kw)
        lock._adopt(handle)
        if lock.auto_renew:
            _renewing.add(lock)
        return lock

    def survey(self, match="*", count=1000, all_keys=False):
        """Every lock in the server now, read only (SCAN, GET, PTTL).

        Returns a list of SurveyEntry(key, dialect, state, left_ms,
        ttl_ms, value, stamp_dialect): dialect "token", "timestamp-ms" /
        "-s" / "-float", "bridge-ms" / ... (a stamp with a tslock owner
        key beside it), "unknown-stamp" (looks like a lock, but no dialect
        tslock knows reads it: nothing can take it over) or "not-a-lock";
        state "live", "expired", "never" (a "never expires" sentinel),
        "no-ttl" (a token without a TTL: stuck), "unreadable" or "-";
        stamp_dialect the presets whose clients could have written the
        stamp, joined by "/" ("redis-lock-gem", "redis-py2/redis-mutex"),
        as tslock.DIALECTS names them, "unknown-stamp", or "" (the
        verdict is libtslock's, tslock_value_name(3), as the tslock
        command's survey gives it).  tslock's own companion keys are left out,
        and values that are not locks too unless ``all_keys``.  Walks the
        one server the Client connects to (not every master of a cluster;
        the tslock command's ``survey`` does that).
        """
        info = self.server_info()
        if info["port"] == 0:
            raw = _tslock.RawConnection(unix_socket_path=info["host"])
        else:
            raw = _tslock.RawConnection(host=info["host"], port=info["port"],
                                        tls=self._tls)
        setup = []
        user, password = self._auth
        if password is not None:
            setup.append(("AUTH", user, password) if user else
                         ("AUTH", password))
        if self._db:
            setup.append(("SELECT", str(self._db)))
        for reply in raw.pipeline(setup):
            if isinstance(reply, Exception):
                raise reply
        version = info["version"]
        has_pttl = version >= (2, 6, 0)
        out = []
        cursor = b"0"
        while True:
            reply = raw.pipeline([("SCAN", cursor, "MATCH", match,
                                   "COUNT", str(count))])[0]
            if isinstance(reply, Exception):
                raise reply
            cursor, keys = reply
            keys = [k for k in keys if not k.endswith(_COMPANIONS)]
            cmds = []
            for k in keys:
                cmds.append(("GET", k))
                cmds.append(("PTTL" if has_pttl else "TTL", k))
                cmds.append(("EXISTS", _owner_key(k)))
            replies = raw.pipeline(cmds)
            now_ms = int(_time.time() * 1000)
            for i, k in enumerate(keys):
                value, ttl, owned = replies[3 * i:3 * i + 3]
                if value is None:
                    continue  # gone meanwhile
                if isinstance(ttl, int) and not has_pttl and ttl > 0:
                    ttl *= 1000
                entry = _survey_entry(k, value, ttl, owned, now_ms)
                if entry.dialect != "not-a-lock" or all_keys:
                    out.append(entry)
            if cursor in (b"0", 0):
                break
        return out


def _survey_entry(key, value, ttl, owned, now_ms):
    # The verdict is libtslock's (tslock_value_name), as the tslock
    # command's survey gives it.
    ttl = ttl if isinstance(ttl, int) else -1
    name = key.decode(errors="replace")
    if isinstance(value, Exception):  # WRONGTYPE: a hash, a set ...
        return SurveyEntry(name, "not-a-lock", "-", None, ttl, None)
    kind, unit, expires_ms, dialects = _tslock.value_name(key, value)
    text = value.decode(errors="replace")
    if kind == _VALUE_NOT_A_LOCK:
        return SurveyEntry(name, "not-a-lock", "-", None, ttl, text)
    if kind == _VALUE_UNKNOWN_STAMP:
        return SurveyEntry(name, "unknown-stamp", "unreadable", None, ttl,
                           text, dialects)
    if kind == _VALUE_TOKEN:
        state = "live" if ttl >= 0 else "no-ttl"
        return SurveyEntry(name, "token", state, ttl if ttl >= 0 else None,
                           ttl, text)
    kind = "bridge" if owned == 1 else "timestamp"
    if expires_ms == _NEVER:
        return SurveyEntry(name, "%s-%s" % (kind, _UNIT_NAMES[unit]),
                           "never", None, ttl, text, dialects)
    left = expires_ms - now_ms
    return SurveyEntry(name, "%s-%s" % (kind, _UNIT_NAMES[unit]),
                       "live" if left >= 0 else "expired", left, ttl, text,
                       dialects)


# tslock_value_kind, and the "never expires" reading (INT64_MAX).
_VALUE_NOT_A_LOCK, _VALUE_TOKEN, _VALUE_STAMP, _VALUE_UNKNOWN_STAMP = range(4)
_NEVER = 2 ** 63 - 1


_CERT_REQS = {0: "none", 1: "optional", 2: "required"}  # ssl.CERT_*


def _tls_settings(on, **kw):
    """redis-py's ssl_* arguments as libtslock's TLS settings, or None."""
    if not on:
        given = [k for k, v in kw.items() if v is not None
                 and k not in ("ssl_cert_reqs", "ssl_check_hostname")]
        if given:
            raise ValueError("%s given without ssl=True (or rediss://)"
                             % ", ".join(sorted(given)))
        return None
    key = kw.get("ssl_keyfile")
    try:
        if key is not None and _os.stat(key).st_mode & 0o077:
            _warnings.warn("the key file %r is readable by its group or "
                           "others (chmod 600 it)" % (key,), stacklevel=4)
    except OSError:
        pass  # libtslock names a missing file when it loads it
    tls = {}
    for name, value in kw.items():
        if value is None:
            continue
        if name == "ssl_cert_reqs" and not isinstance(value, str):
            value = _CERT_REQS.get(int(value), str(value))
        elif name == "ssl_check_hostname":
            value = "true" if value else "false"
        tls[name] = str(value)
    return tls


def _url_tls(url):
    """The ssl_* parameters of a rediss:// URL's query, as keywords."""
    from urllib.parse import parse_qsl, urlsplit
    out = {}
    for name, value in parse_qsl(urlsplit(url).query):
        if name.startswith("ssl_"):
            out[name] = value
            if name == "ssl_check_hostname":
                out[name] = value.lower() in ("true", "1", "yes")
    return out


def _parse_url(url):
    # libtslock's parser, the one the tslock command uses, so a URL means
    # the same here; the URL is quoted without its password (logs).
    if not isinstance(url, str):
        raise TypeError("from_url: expected a URL string, got %r" % (url,))
    try:
        kw = _tslock.parse_url(url)
    except ValueError as e:
        raise ValueError("bad Redis URL %r: %s"
                         % (_tslock.scrub_url(url), e)) from None
    if kw.get("ssl"):
        # libtslock checked them; their values are read here.
        kw.update(_url_tls(url))
    return kw
    netloc = p.netloc.rsplit("@", 1)[-1]
    if scheme == "redis":
        try:
            port = p.port or 6379
        except ValueError:
            _url_fail(url, "expected a port 1..65535")
        if not p.hostname:
            _url_fail(url, "expected a host after redis://")
        kw.update(host=p.hostname, port=port)
        path = p.path.strip("/")
        if path:
            kw["db"] = _db_of(url, path, "the path")
        return kw
    sentinels = []
    for part in netloc.split(","):
        host, _, port = part.rpartition(":") if ":" in part else \
            (part, "", "26379")
        if not host or not port.isdigit() or not 0 < int(port) < 65536:
            _url_fail(url, "expected sentinels as host[:port][,host[:port]"
                      "...], got %r" % part)
        sentinels.append((host, int(port)))
    parts = [x for x in p.path.split("/") if x]
    if not parts or len(parts) > 2:
        _url_fail(url, "expected /MASTERNAME[/db] after the sentinels")
    kw.update(sentinels=sentinels, service_name=parts[0])
    if len(parts) == 2:
        kw["db"] = _db_of(url, parts[1], "the path")
    if "sentinel_password" in query:
        kw["sentinel_password"] = query["sentinel_password"][0]
    return kw

#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
# make-seeds.py - writes the hand-made seed corpora in tests/fuzz/corpus/:
# real stamps, tokens, handles of every form, URLs of every form, command
# lines, and the replies servers from 2.0 to 7.x send to each scheme's
# commands (error lines as in REDIS-VERSIONS.md).  Run it from anywhere;
# the output is committed, so the build does not need Python.
import os

here = os.path.dirname(os.path.abspath(__file__))
NOW_S = 1700000000  # the fuzz targets' fixed clock, in seconds
TOKEN = "0123456789abcdef0123456789abcdef"
OWNER = "fedcba9876543210fedcba9876543210"


def put(target, name, data):
    d = os.path.join(here, "corpus", target)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode("latin-1")
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


# ------------------------------------------------------------- stamps
stamps = {
    "ms": ["1700000030001", "946684800000", "4102444800000", "01700000030001",
           "1700000030001 ", "-1700000030001", "1.7e12", "1700000030.001",
           "99999999999999999", "1700000031"],
    "s": ["1700000031", "946684800", "4102444800", "1700000030001",
          "1700000031.5", ""],
    "float": ["1700000030.000", "1700000030.000123456", "1700000030.",
              "1700000030", ".5", "1700000030.5.5", "1700000030.0e3",
              "4102444800.000", "4102444800.001"],
}
for i, (unit, values) in enumerate(stamps.items()):
    for j, v in enumerate(values):
        # Byte 0 picks the unit; 16 bytes after it also seed the round trip.
        put("stamp", "%s-%02d" % (unit, j), bytes([i]) + v.encode())

classify = ["1700000030001", "1700000031", "1700000030.250", TOKEN,
            TOKEN.upper(), TOKEN[:31], TOKEN + "0", "hello world", "",
            "1700000030.250123", "0", "946684799999", "00000000000000000000"]
for j, v in enumerate(classify):
    put("classify", "value-%02d" % j, v)

# ------------------------------------------------------------ handles
handles = ["token:" + TOKEN, "timestamp-ms:1700000030001",
           "timestamp-s:1700000031", "timestamp-float:1700000030.000",
           "bridge-ms:1700000030123", "bridge-s:1700000034",
           "bridge-float:1700000030.000123456",
           "bridge-ms:1700000030123/" + OWNER,
           "bridge-float:1700000030.000123456/" + OWNER,
           "timestamp-ms:1700000030001/" + OWNER, "token:" + TOKEN[:31],
           "token:" + TOKEN + "/" + OWNER, "bridge-ms:1700000030123/" + TOKEN[:31],
           "timestamp-ms:", ":", "nonsense", "timestamp-h:1700000030001",
           "token:" + "0" * 80]
for j, v in enumerate(handles):
    put("handle", "handle-%02d" % j, v)

# --------------------------------------------------------------- URLs
urls = ["redis://127.0.0.1:6379", "redis://localhost", "redis://host:1/3",
        "redis://:s3cret@host:6380/2", "redis://alice:s3cret@host",
        "redis://al%40ice:p%3Ass@127.0.0.1:1", "redis://[::1]:6379/0",
        "redis://[::1]", "redis://::1", "redis://:p@ss@host",
        "redis://host:6379?db=4", "redis://host/1?db=2",
        "unix:///tmp/redis.sock", "unix:///tmp/redis.sock?db=2",
        "unix://:s3cret@/tmp/redis.sock", "unix://alice:pw@/tmp/r.sock?db=1",
        "unix://relative/path", "rediss://host", "http://host",
        "redis://host:99999", "redis://host:http", "redis://host/x",
        "redis://:s3cret%zz@host", "redis://alice@host", "redis://:%00@host",
        "REDIS://HOST:6379", "redis://", "redis://h?timeout=5&db=1"]
for j, v in enumerate(urls):
    put("url", "url-%02d" % j, v)
# Built form: SCHEME, USER, PASSWORD-TAIL, REST (a canary password).
built = [("redis", "", "", "host:6379/2"), ("redis", "alice", "x", "host"),
         ("unix", "", "", "/tmp/redis.sock?db=3"), ("redis", "", "%41", "[::1]:1"),
         ("redis", "bob", "@more", "host:99999"), ("unix", "u", "", "rel/path"),
         ("redis", "", "", "host/x"), ("rediss", "", "", "host"),
         ("redis", "", "%zz", "host")]
for j, parts in enumerate(built):
    put("url", "built-%02d" % j, "\n".join(parts))

# ---------------------------------------------------- command lines
lines = [["k", "--", "true"], ["-u", "redis://:PW@host:6380/2", "k", "--", "job"],
         ["--url=redis://alice:PW@host", "acquire", "k"],
         ["-uunix://:PW@/tmp/r.sock", "status", "k"],
         ["-u", "redis://:x@h", "-u", "redis://:PW@h", "k", "--", "true"],
         ["-m", "bridge", "--stamp", "float", "-t", "500", "-w", "-1", "-r",
          "--kill-on-loss", "k", "--", "sleep", "1"],
         ["--mode=token", "--clock", "server", "-E", "3", "-q", "release", "k",
          "token:" + TOKEN],
         ["-v", "extend", "k", "timestamp-ms:1700000030001"],
         ["--workers", "4", "--duration", "500", "demo"], ["--help"], ["-V"],
         ["-t", "0", "k", "--", "true"], ["-t"], ["--bogus"], ["-x"],
         ["-w", "-2", "k"], ["-E", "300"], ["--stamp", "min"],
         ["--no-auth-warning", "-u", "redis://:PW@h", "k", "--", "-u", "x"],
         ["k", "--", "--url", "redis://:PW@h"], ["--", "true"], []]
for j, argv in enumerate(lines):
    put("options", "argv-%02d" % j, "\0".join(argv))


# ------------------------------------------------------------ replies
def bulk(s):
    return "$%d\r\n%s\r\n" % (len(s), s) if s is not None else "$-1\r\n"


def integer(n):
    return ":%d\r\n" % n


def array(*items):
    return "*%d\r\n%s" % (len(items), "".join(items))


OK, NIL, NILARR, QUEUED = "+OK\r\n", "$-1\r\n", "*-1\r\n", "+QUEUED\r\n"


def err(line):
    return "-%s\r\n" % line


def unknown(cmd):
    return err("ERR unknown command '%s'" % cmd)


def info(v):
    return bulk("# Server\r\nredis_version:%s\r\nredis_mode:standalone" % v)


TIME = array(bulk(str(NOW_S)), bulk("123456"))
WRONG_ARGS = err("ERR wrong number of arguments for 'set' command")
probes = {
    "7.0": info("7.0.15") + OK + integer(1) + TIME + err("ERR syntax error"),
    "2.6.11": info("2.6.11") + OK + integer(1) + TIME + WRONG_ARGS,
    "2.4": info("2.4.18") + OK + unknown("EVAL") + unknown("TIME") + WRONG_ARGS,
    "2.0": info("2.0.4") + unknown("UNWATCH") + unknown("EVAL")
    + unknown("TIME") + WRONG_ARGS,
}
ALL_CAPS = 0x1F
# Byte 0: scheme (0 auto, 1 timestamp, 2 token, 3 bridge) | unit << 2 |
# fencing << 4 | release form << 5 | bridge proof << 7.  Byte 1: caps.
MS, S, FLOAT = "1700000030001", "1700000031", "1700000030.000"
NOSCRIPT = err("NOSCRIPT No matching script. Please use EVAL.")
WRONGTYPE = err("WRONGTYPE Operation against a key holding the wrong kind of value")
replies = {
    # Token, SET NX PX: acquire, PTTL script, PEXPIRE script, GET+PTTL, DEL script.
    "token-modern": (2, "7.0", OK + integer(29000) + integer(1)
                     + bulk(TOKEN) + integer(30000) + NIL + integer(1)),
    "token-modern-busy": (2, "7.0", NIL + integer(1) + integer(1) + bulk(TOKEN)
                          + integer(20000) + integer(1)),
    "token-noscript": (2, "7.0", OK + NOSCRIPT + integer(29000) + NOSCRIPT
                       + integer(1) + NIL + integer(-2) + NOSCRIPT + integer(0)),
    "token-fenced": (2 | 16, "7.0", OK + integer(42) + integer(29000)
                     + integer(1) + bulk(TOKEN) + integer(30000) + integer(1)),
    "token-wrongtype": (2, "7.0", WRONGTYPE + WRONGTYPE + WRONGTYPE
                        + WRONGTYPE),
    "token-noauth": (2, "7.0", err("NOAUTH Authentication required.")
                     + err("ERR operation not permitted")),
    # Token on 2.6.0 - 2.6.11: the SETNX+PEXPIRE script.
    "token-lua": (2, "2.6.11", array(integer(1), integer(0)) + integer(29000)
                  + integer(1) + bulk(TOKEN) + integer(29000) + integer(1)),
    "token-lua-busy": (2, "2.6.11", array(integer(0), integer(12000))
                       + integer(-3) + integer(0) + NIL + integer(-2)),
    # Token on 2.2 - 2.4: WATCH, GET; MULTI, SET, EXPIRE, EXEC.
    "token-watch": (2, "2.4", OK + NIL + OK + QUEUED + QUEUED
                    + array(OK, integer(1)) + bulk(TOKEN) + integer(29)
                    + OK + bulk(TOKEN) + OK + QUEUED + array(integer(1))
                    + bulk(TOKEN) + integer(30) + OK + bulk(TOKEN) + OK
                    + QUEUED + array(integer(1))),
    "token-watch-raced": (2, "2.4", OK + NIL + OK + QUEUED + QUEUED + NILARR
                          + OK + bulk(TOKEN) + OK + QUEUED + NILARR),
    "token-2.0": (2, "2.0", ""),
    # Timestamp, ms / s / float, best form (Lua): SETNX, GET, scripts.
    "ts-ms-lua": (1, "7.0", integer(1) + bulk(MS) + integer(1) + bulk(MS)
                  + integer(-1) + NIL + integer(1)),
    "ts-s-lua": (1 | 4, "7.0", integer(1) + bulk(S) + integer(1) + bulk(S)
                 + integer(-1) + integer(1)),
    "ts-float-lua": (1 | 8, "7.0", integer(1) + bulk(FLOAT) + integer(1)
                     + bulk(FLOAT) + integer(-1) + bulk("x") + integer(1)),
    "ts-ms-expired-takeover": (1, "7.0", integer(0) + bulk("1699999990000")
                               + bulk("1699999990000") + bulk(MS)
                               + integer(1) + bulk(MS) + integer(-1)
                               + integer(1)),
    "ts-ms-busy": (1, "7.0", integer(0) + bulk("1700000099999")),
    "ts-ms-unreadable": (1, "7.0", integer(0) + bulk("hello world")),
    "ts-ms-lost-race": (1, "7.0", integer(0) + bulk("1699999990000")
                        + bulk("1700000030999") + integer(1)),
    # Timestamp on 2.2 - 2.4: the WATCH form of release and extend.
    "ts-ms-watch": (1, "2.4", integer(1) + bulk(MS) + OK + bulk(MS) + OK
                    + QUEUED + array(OK) + bulk(MS) + integer(-1)
                    + bulk(TOKEN) + OK + bulk(MS) + OK + QUEUED
                    + array(integer(1))),
    # Timestamp on 2.0: the classic form (GET, compare, DEL / GETSET).
    "ts-ms-classic": (1, "2.0", integer(1) + bulk(MS) + bulk(MS) + bulk(MS)
                      + bulk(MS) + integer(-1) + bulk(MS) + integer(1)),
    "ts-s-classic-lost": (1 | 4, "2.0", integer(1) + NIL + bulk("x")
                          + bulk(S) + NIL + integer(-1)),
    # Bridge: the claim and guard scripts, and their WATCH forms.
    "bridge-ms-lua": (3, "7.0", integer(1) + bulk("1700000030005")
                      + integer(1) + bulk("1700000030005") + integer(30000)
                      + integer(1)),
    "bridge-ms-proof": (3 | 128, "7.0", integer(1) + integer(1) + integer(1)
                        + bulk("1700000030005") + integer(30000) + bulk(OWNER)
                        + integer(1)),
    "bridge-s-watch": (3 | 4 | 128, "2.4", OK + NIL + OK + QUEUED + QUEUED
                       + array(OK, OK) + OK + bulk("1700000031")
                       + integer(30) + bulk(OWNER) + OK),
    "token-watch-busy": (2, "2.4", OK + bulk("other") + OK + bulk(TOKEN)
                         + integer(29) + OK + bulk(TOKEN) + OK + QUEUED
                         + array(integer(1)) + bulk(TOKEN) + integer(30) + OK
                         + bulk(TOKEN) + OK + QUEUED + array(integer(1))),
    "bridge-float-2.0": (3 | 8, "2.0", integer(1) + bulk("1700000030.000123456")
                         + bulk("1700000030.000123456") + integer(-1)),
    "auto-2.0": (0, "2.0", integer(1) + bulk(MS) + bulk(MS) + integer(1)),
    "auto-lua-forced-watch": (0 | 64, "7.0", OK + integer(29000)),
}
for name, (cfg, probe, rest) in replies.items():
    put("reply", name, bytes([cfg, ALL_CAPS]) + (probes[probe] + rest).encode())
# Caps limited on a modern server: each compatibility path by force.
for caps, name in [(0x03, "caps-lua-watch"), (0x01, "caps-watch"),
                   (0x00, "caps-none"), (0x1B, "caps-no-time")]:
    put("reply", "token-" + name, bytes([2, caps])
        + (probes["7.0"] + OK + integer(29000) + integer(1) + bulk(TOKEN)
           + integer(30000) + integer(1)).encode())
# Replies that are not RESP, or cut short.
put("reply", "garbage-probe", bytes([2, ALL_CAPS]) + b"HTTP/1.1 400 Bad Request\r\n\r\n")
put("reply", "cut-short", bytes([1, ALL_CAPS]) + (probes["7.0"] + "$13\r\n17000").encode())
put("reply", "time-huge", bytes([2, ALL_CAPS]) + (info("7.0.15") + OK + integer(1)
    + array(bulk("99999999999999999999"), bulk("1")) + err("ERR syntax error")).encode())

# ------------------------------------------------ pub/sub pushes (push)
# Byte 0: bit 0 the waiter listens on its own wake channel, bit 1 on the
# classic name too.  Then what its subscriber reads, as Redis 7.0 sends it.
CHAN = "{fuzz}:released"
OWN = "{fuzz}:wake:" + TOKEN + "s"
CLASSIC = "fuzz:released"
pushes = {
    "subscribe-both": (1, array(bulk("subscribe"), bulk(CHAN), integer(1))
                       + array(bulk("subscribe"), bulk(OWN), integer(2))),
    "ssubscribe-then-classic": (3, array(bulk("ssubscribe"), bulk(CHAN), integer(1))
                                + array(bulk("ssubscribe"), bulk(OWN), integer(2))
                                + array(bulk("subscribe"), bulk(CLASSIC), integer(1))),
    "message-key": (0, array(bulk("message"), bulk(CHAN), bulk("1"))),
    "message-own": (1, array(bulk("message"), bulk(OWN), bulk(TOKEN))),
    "smessage-own": (1, array(bulk("smessage"), bulk(OWN), bulk("k"))),
    "message-classic": (3, array(bulk("message"), bulk(CLASSIC), bulk("1"))),
    "message-not-listened": (0, array(bulk("message"), bulk(OWN), bulk("1"))),
    "message-other-channel": (3, array(bulk("message"), bulk("{other}:released"),
                                       bulk("1"))),
    "sunsubscribe-migrated": (1, array(bulk("sunsubscribe"), bulk(CHAN), integer(1))
                              + array(bulk("sunsubscribe"), bulk(OWN), integer(0))),
    "unsubscribe": (3, array(bulk("unsubscribe"), bulk(CLASSIC), integer(0))),
    "pmessage": (3, array(bulk("pmessage"), bulk("{fuzz}:*"), bulk(CHAN), bulk("1"))),
    "refused": (1, err("NOPERM this user has no permissions to access one of "
                       "the channels used as arguments")
                + err("MOVED 1234 127.0.0.1:7001")),
    # Malformed: wrong types, short or long arrays, NULs, nil channels.
    "message-int-channel": (0, array(bulk("message"), integer(5), bulk("1"))),
    "message-nil-channel": (0, array(bulk("message"), NIL, bulk("1"))),
    "kind-integer": (0, array(integer(7), bulk(CHAN), bulk("1"))),
    "kind-array": (0, array(array(bulk("message")), bulk(CHAN), bulk("1"))),
    "short-array": (0, array(bulk("message"), bulk(CHAN))),
    "long-array": (0, array(bulk("message"), bulk(CHAN), bulk("1"), bulk("2"))),
    "empty-array": (0, "*0\r\n" + "*-1\r\n"),
    "kind-nul": (0, array(bulk("message\0x"), bulk(CHAN), bulk("1"))),
    "channel-nul": (1, array(bulk("message"), bulk(CHAN + "\0tail"), bulk("1"))
                    + array(bulk("smessage"), bulk(OWN[:10] + "\0" + OWN[11:]),
                            bulk("1"))),
    "channel-prefix": (0, array(bulk("message"), bulk(CHAN[:-1]), bulk("1"))),
    "kind-upper": (0, array(bulk("MESSAGE"), bulk(CHAN), bulk("1"))),
    "status-kind": (0, "*3\r\n+message\r\n+" + CHAN + "\r\n:1\r\n"),
    "nested": (0, array(array(bulk("message"), bulk(CHAN), bulk("1")),
                        bulk("x"), bulk("y"))),
    "huge-count": (0, "*4000\r\n$7\r\nmessage\r\n"),
    "huge-bulk": (0, "*3\r\n$7\r\nmessage\r\n$2147483647\r\nab"),
    "negative-count": (0, "*-5\r\n$-2\r\n"),
    "cut-short": (1, array(bulk("message"), bulk(CHAN), bulk("1"))[:-7]),
    "not-resp": (0, "HTTP/1.1 400 Bad Request\r\n\r\n"),
}
for name, (cfg, stream) in pushes.items():
    put("push", name, bytes([cfg]) + stream.encode("latin-1"))

# ------------------------------------------- MONITOR lines (monitor)
# Byte 0 even: one MONITOR line, as each generation writes it (2.0 with
# a '+', 2.2-2.4 without an address, 2.6+ "[db addr]", "lua" inside a
# script), with Redis's escapes, and lines cut short.  Byte 0 odd: the
# arguments (client first) split at 0xff, which the target writes the
# way Redis does and parses back.
monitor_lines = {
    "ok": "OK",
    "setnx-7": '1700000000.123456 [0 127.0.0.1:5000] "SETNX" "lock.foo" "1700000030001"',
    "getset-lua": '1700000000.123456 [0 lua] "getset" "lock.foo" "1700000030001"',
    "set-unix": '1700000000.123456 [0 unix:/var/run/redis/redis.sock] "SET" "lock:a" "1700000031"',
    "set-ipv6": '1700000000.123456 [3 [::1]:50000] "set" "lock:a" "1700000030.250"',
    "setnx-2.4": '1700000000.123456 "SETNX" "lock.foo" "1"',
    "getset-2.0": '+1700000000.123456 "GETSET" "k" "\\x00\\xff\\"q"',
    "escapes": '1700000000.123456 [0 127.0.0.1:5000] "SETNX" "a\\"b\\\\c\\n\\r\\t\\a\\b" "1700000030001"',
    "binary-key": '1700000000.123456 [0 127.0.0.1:5000] "SETNX" "\\x00\\x01\\xfe\\xffkey" "1700000030001"',
    "hex-upper": '1700000000.123456 [0 127.0.0.1:5000] "SET" "\\xAB\\xcD" "1700000031"',
    "hex-short": '1700000000.123456 [0 127.0.0.1:5000] "SET" "k\\x4" "1"',
    "hex-end": '1700000000.123456 [0 127.0.0.1:5000] "SET" "k" "\\x',
    "backslash-end": '1700000000.123456 [0 127.0.0.1:5000] "SET" "k" "1\\',
    "eval": '1700000000.123456 [0 127.0.0.1:5000] "EVALSHA" "07e7e3b2" "1" "lock:a" "tok"',
    "ping-unix": '1700000000.123456 [0 unix:/tmp/s] "PING"',
    "setex-2.2": '1700000000.123456 "SETEX" "lock:a" "30" "1700000030"',
    "many-args": '1700000000.123456 [0 127.0.0.1:5000] "MSET"' + ' "k" "v"' * 20,
    "long-key": '1700000000.123456 [0 127.0.0.1:5000] "SETNX" "' + "k" * 700 + '" "1700000030001"',
    "long-client": '1700000000.123456 [0 unix:/' + "d/" * 100 + 's] "SETNX" "k" "1700000030001"',
    "client-bracket": '1700000000.123456 [0 unix:/tmp/a]b c] "SETNX" "k" "1700000030001"',
    "cut-client": "1700000000.1 [0 127.0.0.1:5000",
    "cut-quote": '1700000000.1 [0 127.0.0.1:5000] "SET" "',
    "cut-time": "17000000",
    "no-space-time": "1" * 40 + ' "SET" "k" "1"',
    "unquoted": '1700000000.123456 [0 127.0.0.1:5000] SET k 1',
    "empty": "",
    # Times no double-to-integer conversion may take (found by fuzz_monitor).
    "time-huge": "1" * 30 + ' [0 127.0.0.1:5000] "SETNX" "k" "1700000030001"',
    "time-inf": 'inf [0 127.0.0.1:5000] "GETSET" "k" "1700000030001"',
    "time-nan": 'nan [0 127.0.0.1:5000] "SET" "k" "1700000030001"',
    "time-negative": '-1e300 [0 127.0.0.1:5000] "SETNX" "k" "1700000030001"',
    "nul-inside": '1700000000.123456 [0 127.0.0.1:5000] "SETNX" "k\0x" "1700000030001"',
}
for name, line in monitor_lines.items():
    put("monitor", name, b"\0" + line.encode("latin-1"))
for name, args in {
    "rt-setnx": ["127.0.0.1:5000", "SETNX", "lock:a", "1700000030001"],
    "rt-binary": ["unix:/tmp/s", "GETSET", "\0\x01\"\\\n\r\t\x07\x08\x7f\x80key",
                  "1700000030.250"],
    "rt-long": ["10.0.0.1:6000", "set", "k" * 600, "1700000031"],
    "rt-lua": ["lua", "setnx", "lock:a", "1"],
    "rt-one": ["127.0.0.1:1", "PING"],
    "rt-bracket": ["unix:/tmp/a]b c/redis.sock", "SETNX", "k", "1700000030001"],
    "rt-hex": ["127.0.0.1:2", "SET", "\x7f\x80\xfe", "1700000031"],
}.items():
    put("monitor", name, b"\1" + b"\xff".join(a.encode("latin-1") for a in args))


# ------------------------------------------------------------- dialects
# Byte 0 below 16 picks a preset (in the library's order); otherwise a
# format string follows, up to a newline, then the value.
dialect_values = [
    "1700000031.3051164", "1700000031-27118-520", "1700000031",
    'a:3:{s:3:"pid";i:8975;s:8:"hostname";s:2:"vm";s:7:"expires";'
    'i:1700000031;}', "1700000031:15131", "1700000031303", "1", "true",
    "", "1700000031-", 'a:3:{s:3:"pid";i:1;}']
for i, v in enumerate(dialect_values):
    put("dialect", "preset-%02d" % i, bytes([i % 10]) + v.encode())
formats = ["{s+1}-{pid}-{tid}", "{ms}", "{float+1};never=1,true",
           "php-array(pid=pid,hostname=host,expires=s)", "{s}:{host}:{pid}",
           "lock:{ms+1};release=compare", "{x}", "{s}{pid}", "php-array(a=s",
           "{ms};never=", "{ms};release=foo", "{{ms}}", "}"]
for i, f in enumerate(formats):
    put("dialect", "format-%02d" % i,
        b"F" + f.encode() + b"\n" + dialect_values[i % 6].encode())

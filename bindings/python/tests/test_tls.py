# SPDX-License-Identifier: BSD-3-Clause
"""TLS from Python, as redis-py spells it: rediss:// URLs with ssl_*
query parameters and Client(ssl=True, ssl_ca_certs=..., ...), against a
redis-server with --tls-port and client certificates required, with a CA
and certificates made here with openssl."""
import os
import shutil
import socket
import ssl
import subprocess
import tempfile
import time

import pytest

import tslock

OPENSSL = shutil.which("openssl")
pytestmark = pytest.mark.skipif(OPENSSL is None, reason="no openssl")


def _openssl(*args):
    subprocess.run([OPENSSL, *args], check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)


def _ec_key(path):
    _openssl("genpkey", "-algorithm", "EC", "-pkeyopt",
             "ec_paramgen_curve:P-256", "-out", path)
    os.chmod(path, 0o600)


def _cert(d, name, cn, ext, ca="ca"):
    _ec_key(os.path.join(d, name + ".key"))
    _openssl("req", "-new", "-key", os.path.join(d, name + ".key"),
             "-out", os.path.join(d, name + ".csr"), "-subj", "/CN=" + cn)
    with open(os.path.join(d, name + ".ext"), "w") as f:
        f.write(ext + "\n")
    _openssl("x509", "-req", "-in", os.path.join(d, name + ".csr"),
             "-CA", os.path.join(d, ca + ".crt"),
             "-CAkey", os.path.join(d, ca + ".key"), "-CAcreateserial",
             "-days", "2", "-out", os.path.join(d, name + ".crt"),
             "-extfile", os.path.join(d, name + ".ext"))


def _self_signed(d, name, cn):
    _ec_key(os.path.join(d, name + ".key"))
    _openssl("req", "-x509", "-new", "-key", os.path.join(d, name + ".key"),
             "-out", os.path.join(d, name + ".crt"), "-days", "2",
             "-subj", "/CN=" + cn)


def _free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class TLSServer:
    def __init__(self):
        self.dir = d = tempfile.mkdtemp(prefix="tslock-pytls.")
        _self_signed(d, "ca", "tslock test CA")
        _self_signed(d, "other", "some other CA")
        _cert(d, "server", "localhost",
              "subjectAltName=DNS:localhost,IP:127.0.0.1")
        _cert(d, "client", "tslock client", "extendedKeyUsage=clientAuth")
        self.ca = os.path.join(d, "ca.crt")
        self.other_ca = os.path.join(d, "other.crt")
        self.cert = os.path.join(d, "client.crt")
        self.key = os.path.join(d, "client.key")
        self.socket = os.path.join(d, "redis.sock")
        prog = os.environ.get("REDIS_SERVER") or shutil.which("redis-server")
        for _ in range(5):
            self.port = _free_port()
            self.log = open(os.path.join(d, "redis.log"), "w")
            self.proc = subprocess.Popen(
                [prog, "--port", "0", "--tls-port", str(self.port),
                 "--bind", "127.0.0.1", "--unixsocket", self.socket,
                 "--tls-cert-file", os.path.join(d, "server.crt"),
                 "--tls-key-file", os.path.join(d, "server.key"),
                 "--tls-ca-cert-file", self.ca, "--tls-auth-clients", "yes",
                 "--save", "", "--appendonly", "no", "--dir", d],
                stdout=self.log, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL)
            deadline = time.monotonic() + 10
            while self.proc.poll() is None and time.monotonic() < deadline:
                if os.path.exists(self.socket):
                    return
                time.sleep(0.01)
            self.stop_process()
        pytest.fail("redis-server --tls-port did not start (log in %s)" % d)

    def url(self, host="localhost", **params):
        q = {"ssl_ca_certs": self.ca, "ssl_certfile": self.cert,
             "ssl_keyfile": self.key}
        q.update(params)
        return "rediss://%s:%d/0?%s" % (
            host, self.port, "&".join("%s=%s" % kv for kv in q.items()))

    def stop_process(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(10)
        self.log.close()

    def stop(self):
        self.stop_process()
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture(scope="module")
def tls_server():
    s = TLSServer()
    yield s
    s.stop()


def test_rediss_url_locks(tls_server, key):
    client = tslock.Client.from_url(tls_server.url())
    with client.lock(key, timeout=5) as lock:
        assert lock.owned()
    assert not client.lock(key).locked()


def test_ssl_keywords_as_redis_py(tls_server, key):
    client = tslock.Client(
        host="localhost", port=tls_server.port, ssl=True,
        ssl_ca_certs=tls_server.ca, ssl_certfile=tls_server.cert,
        ssl_keyfile=tls_server.key, ssl_cert_reqs=ssl.CERT_REQUIRED)
    for scheme in ("token", "timestamp", "bridge"):
        lock = client.lock(key + scheme, scheme=scheme, timeout=5)
        assert lock.acquire(blocking=False)
        lock.release()


def test_survey_over_tls(tls_server, key):
    client = tslock.Client.from_url(tls_server.url())
    with client.lock(key, timeout=5):
        names = [e.key for e in client.survey()]
    assert key.encode() in names or key in names


def test_wrong_ca_is_tslock_etls(tls_server, key):
    client = tslock.Client.from_url(
        tls_server.url(ssl_ca_certs=tls_server.other_ca))
    with pytest.raises(tslock.LockError) as e:
        client.lock(key).acquire(blocking=False)
    assert e.value.errname == "TSLOCK_ETLS"
    assert "certificate verify failed" in str(e.value)


def test_cert_reqs_none_skips_the_check(tls_server, key):
    client = tslock.Client.from_url(
        tls_server.url(ssl_ca_certs=tls_server.other_ca,
                       ssl_cert_reqs="none"))
    with client.lock(key, timeout=5) as lock:
        assert lock.owned()


def test_no_client_certificate_is_named(tls_server, key):
    client = tslock.Client.from_url(
        "rediss://localhost:%d?ssl_ca_certs=%s"
        % (tls_server.port, tls_server.ca))
    with pytest.raises(tslock.LockError) as e:
        client.lock(key).acquire(blocking=False)
    assert e.value.errname == "TSLOCK_ETLS"
    assert "certificate required" in str(e.value)


def test_ssl_arguments_need_ssl():
    with pytest.raises(ValueError, match="without ssl=True"):
        tslock.Client(ssl_ca_certs="/x")


def test_bad_tls_parameter_is_named_and_password_hidden(tls_server):
    with pytest.raises(ValueError) as e:
        tslock.Client.from_url(tls_server.url(ssl_cert_reqs="maybe",
                                              ssl_password="KEYSECRET"))
    assert "ssl_cert_reqs" in str(e.value)
    assert "KEYSECRET" not in str(e.value)


def test_a_key_file_others_may_read_is_warned_about(tls_server, key):
    loose = os.path.join(tls_server.dir, "loose.key")
    shutil.copy(tls_server.key, loose)
    os.chmod(loose, 0o644)
    with pytest.warns(UserWarning, match="readable by its group or others"):
        client = tslock.Client.from_url(tls_server.url(ssl_keyfile=loose))
    with client.lock(key, timeout=5) as lock:
        assert lock.owned()


def test_a_forked_child_leaves_the_parents_tls_session(tls_server, key):
    # The child closes its copies of the pool's connections: that must
    # send nothing (no close_notify), or the server ends the parent's.
    import redis
    watcher = redis.Redis(unix_socket_path=tls_server.socket)
    watcher.ping()
    client = tslock.Client.from_url(tls_server.url())
    with client.lock(key, timeout=5):
        pass  # one pooled TLS connection now
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            with client.lock(key + ":child", timeout=5):
                code = 0
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    before = watcher.info("stats")["total_connections_received"]
    with client.lock(key, timeout=5):
        pass
    after = watcher.info("stats")["total_connections_received"]
    assert after == before  # the parent's pooled connection still served

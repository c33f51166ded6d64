#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# python_sdist.sh - the Python source distribution builds libtslock
# itself: python3 -m build --sdist (or setup.py sdist) in a copy of
# bindings/python makes tslock-VERSION.tar.gz carrying libtslock's
# sources; pip installs it into a fresh venv (system site packages for
# setuptools and wheel, --no-build-isolation --no-index: no package
# index is reached) on this machine, where no libtslock need be
# installed; the venv's python then takes and releases a lock on a
# private redis-server, and the module is checked to carry its own
# libtslock (no libtslock.so loaded, nothing exported but PyInit).
#
# Environment: top_srcdir, top_builddir, REDIS_SERVER; PYTHON_SYS, the
# python3 with venv, setuptools and wheel (default /usr/bin/python3).
set -u
src=$(cd "${top_srcdir:-.}" && pwd)
. "$src/tests/harness.sh"
need_server
py=${PYTHON_SYS:-/usr/bin/python3}
for m in venv setuptools wheel; do
    if ! "$py" -c "import $m" 2>/dev/null; then
        echo "python_sdist: $py has no $m (apt-get install python3-venv" \
            "python3-setuptools python3-wheel)"
        exit 77
    fi
done
dir=$(mktemp -d "${TMPDIR:-/tmp}/tslock-sdist.XXXXXX") || exit 99
pid=
cleanup() {
    [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
    rm -rf "$dir"
}
th_on_exit cleanup
trap 'exit 130' INT TERM
out=$dir/out
err=$dir/err
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INDEX=1 PIP_NO_CACHE_DIR=1
export PYTHONDONTWRITEBYTECODE=1

# 1. The sdist, from a copy of the tree's layout (the source tree may be
# read-only, and setuptools writes its egg-info beside setup.py).
mkdir -p "$dir/tree/bindings/python" "$dir/dist"
for d in include lib compat proto net COPYING; do
    ln -s "$src/$d" "$dir/tree/$d"
done
(cd "$src/bindings/python" && cp -R setup.py pyproject.toml MANIFEST.in \
    src tslock "$dir/tree/bindings/python/") || exit 99
start=$(date +%s)
if "$py" -c 'import build' 2>/dev/null; then
    how="python3 -m build --sdist --no-isolation"
    (cd "$dir/tree/bindings/python" &&
        "$py" -m build --sdist --no-isolation --outdir "$dir/dist" .)
else
    how="setup.py sdist"
    (cd "$dir/tree/bindings/python" &&
        "$py" setup.py -q sdist --dist-dir "$dir/dist")
fi >"$dir/sdist.log" 2>&1
sdist=$(ls "$dir"/dist/tslock-*.tar.gz 2>/dev/null | head -1)
if [ -z "$sdist" ]; then
    echo "FAIL - $how made no tslock-*.tar.gz:"
    tail -20 "$dir/sdist.log" | sed 's/^/    /'
    exit 1
fi
version=$(sed -n 's/^#define TSLOCK_VERSION_STRING "\(.*\)"$/\1/p' \
    "$src/include/tslock.h")
check "$how: $(basename "$sdist") in $(($(date +%s) - start)) s" \
    test "$(basename "$sdist")" = "tslock-$version.tar.gz"
listing=$(tar -tzf "$sdist")
tar -tzf "$sdist" >"$dir/listing"
for f in COPYING PKG-INFO setup.py src/pytslock.h tslock/__init__.py \
    libtslock/include/tslock.h libtslock/lib/lock.c \
    libtslock/compat/watch.c libtslock/proto/proto.h \
    libtslock/net/hiredis_compat.c libtslock/net/tls.c; do
    check "the sdist carries $f" grep -qx "tslock-$version/$f" "$dir/listing"
done
tar -xzOf "$sdist" "tslock-$version/PKG-INFO" >"$dir/PKG-INFO"
check "PKG-INFO: License: BSD-3-Clause" \
    grep -qx "License: BSD-3-Clause" "$dir/PKG-INFO"
check "PKG-INFO: Version: $version" grep -qx "Version: $version" "$dir/PKG-INFO"

# 2. A fresh venv installs it; libtslock is compiled into the extension.
start=$(date +%s)
"$py" -m venv --system-site-packages "$dir/venv" || exit 99
if ! "$dir/venv/bin/python" -m pip install --no-build-isolation \
    "$sdist" >"$dir/pip.log" 2>&1; then
    echo "FAIL - pip install the sdist:"
    tail -30 "$dir/pip.log" | sed 's/^/    /'
    exit 1
fi
echo "ok - pip install --no-build-isolation into a venv in" \
    "$(($(date +%s) - start)) s"
so=$(ls "$dir"/venv/lib/python3*/site-packages/tslock/_tslock*.so | head -1)
check "the extension loads no libtslock.so" \
    sh -c "! ldd '$so' | grep -q libtslock"
exports=$(nm -D --defined-only "$so" | awk '{print $3}' | grep -v '^_' |
    tr '\n' ' ')
check "the extension exports only PyInit__tslock (got: $exports)" \
    test "$exports" = "PyInit__tslock "

# 3. The venv's module takes and releases a lock on a private server.
start_unix_server "$dir/redis.sock" "$dir/redis.log"
pid=$started
got=$(cd "$dir" && env -u PYTHONPATH -u LD_LIBRARY_PATH \
    "$dir/venv/bin/python" - "$dir/redis.sock" "$dir/venv" <<'PY' 2>&1
import sys

import tslock

sock, venv = sys.argv[1], sys.argv[2]
assert tslock.__file__.startswith(venv), tslock.__file__
client = tslock.Client(unix_socket_path=sock)
lock = client.lock("sdist-key", timeout=5)
assert lock.acquire(blocking=False) is True
assert client.lock("sdist-key").acquire(blocking=False) is False
assert lock.owned() and lock.locked()
lock.release()
assert not lock.locked()
# Built with OpenSSL (libssl-dev is installed): TLS settings are taken;
# without it they raise UnsupportedError.
tslock.Client(host="localhost", ssl=True, ssl_cert_reqs="none")
print("libtslock", tslock.library_version())
PY
)
check "the venv's tslock took and released a lock ($got)" \
    test "$got" = "libtslock $version"
finish

#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# test_node.sh - the Node.js binding (bindings/node): builds its addon with
# node-gyp against the libtslock just built, in tests/node-addon/ of the
# build tree, and runs its node:test suite, whose files start their own
# redis-server ("test_node.sh --run SCRIPT ARGS" runs SCRIPT there
# instead: make node-bench).  Skipped (77), saying what to run, where node, the node
# headers or the binding's npm packages (npm ci in bindings/node) are
# missing; quickstart.sh test installs them all and sets
# TSLOCK_NODE_REQUIRED=1, which makes a missing piece a failure.
set -u
top_builddir=$(cd "${top_builddir:-.}" && pwd)
top_srcdir=$(cd "${top_srcdir:-.}" && pwd)
src=$top_srcdir/bindings/node
stage=$top_builddir/tests/node-addon

skip() {
    echo "SKIP: $1, so the Node.js binding was not tested."
    echo "      To run this test: $2 (quickstart.sh test does it)."
    if [ "${TSLOCK_NODE_REQUIRED:-}" = 1 ]; then
        echo "FAIL: TSLOCK_NODE_REQUIRED=1 (quickstart.sh test)"
        exit 1
    fi
    exit 77
}

node=$(command -v node || command -v nodejs) \
    || skip "no node" "apt-get install nodejs npm"
nodedir=$(cd "$(dirname "$node")/.." && pwd)
[ -f "$nodedir/include/node/node_api.h" ] \
    || skip "no node headers under $nodedir/include/node" \
        "apt-get install libnode-dev (or nodejs from NodeSource)"
modules=${TSLOCK_NODE_BINDING_MODULES:-$src/node_modules}
[ -f "$modules/node-addon-api/package.json" ] \
    && [ -f "$modules/node-gyp/bin/node-gyp.js" ] \
    || skip "no node-addon-api or node-gyp in $modules" \
        "(cd bindings/node && npm ci)"
# The published lock libraries test/peers.test.js runs tslock beside
# (redis-lock, redlock and their Redis clients), as tests/node-peers'
# lockfile pins them; without them that file says so and skips.
peers=${TSLOCK_NODE_PEERS:-$top_srcdir/tests/node-peers/node_modules}
if [ -f "$peers/redis-lock-009/package.json" ] \
    && [ -f "$peers/redlock-5/package.json" ]; then
    TSLOCK_NODE_PEERS=$peers
    export TSLOCK_NODE_PEERS
else
    [ "${TSLOCK_NODE_REQUIRED:-}" = 1 ] \
        && skip "no npm redis-lock or redlock in $peers" \
            "(cd tests/node-peers && npm ci)"
    unset TSLOCK_NODE_PEERS
fi

# The package as npm would unpack it, beside the installed node_modules.
mkdir -p "$stage" || exit 99
for f in package.json binding.gyp index.d.ts lib src scripts test bench; do
    rm -rf "${stage:?}/$f"
    cp -Rp "$src/$f" "$stage/" || exit 99
done
ln -sfn "$modules" "$stage/node_modules"
cd "$stage" || exit 99
TSLOCK_INCLUDE_DIR=$top_srcdir/include
TSLOCK_LIB_DIR=$top_builddir/.libs
export TSLOCK_INCLUDE_DIR TSLOCK_LIB_DIR
gyp="$node $modules/node-gyp/bin/node-gyp.js"
if [ ! -f build/Makefile ]; then
    $gyp configure --nodedir="$nodedir" >gyp.log 2>&1 \
        || { cat gyp.log; exit 1; }
fi
$gyp build --nodedir="$nodedir" >gyp.log 2>&1 || { cat gyp.log; exit 1; }

LD_LIBRARY_PATH=$TSLOCK_LIB_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export LD_LIBRARY_PATH
export REDIS_SERVER="${REDIS_SERVER:-redis-server}"
export TSLOCK_SRCDIR="$top_srcdir"
export TSLOCK_OLDREDIS="$top_builddir/tests/oldredis"
# A library built with the sanitizers needs their runtimes loaded first
# into a node built without them; node's own allocations are not checked.
asan=$(ldd "$TSLOCK_LIB_DIR/libtslock.so" 2>/dev/null \
    | sed -n 's/.*\(libasan\.so[^ ]*\) => \([^ ]*\).*/\2/p')
ubsan=$(ldd "$TSLOCK_LIB_DIR/libtslock.so" 2>/dev/null \
    | sed -n 's/.*\(libubsan\.so[^ ]*\) => \([^ ]*\).*/\2/p')
if [ -n "$asan" ]; then
    LD_PRELOAD="$asan${ubsan:+ $ubsan}"
    ASAN_OPTIONS=detect_leaks=0
    export LD_PRELOAD ASAN_OPTIONS
fi
if [ "${1:-}" = --run ]; then
    shift
    exec "$node" "$@"
fi
# Two files at a time: the pack test compiles while the others mostly wait.
# A file's time limit is only a hang guard: npm install compiling the
# addon took over 30 s under a load average of 20.
limit=$((90000 * ${TSLOCK_TEST_TIMEOUT_SCALE:-1}))
exec "$node" --test --test-concurrency=2 --test-timeout=$limit test/*.test.js

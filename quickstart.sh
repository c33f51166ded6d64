#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# quickstart.sh - from a fresh Debian machine to a running tslock.
#
#   ./quickstart.sh demo    install what is missing, build, run the demo
#   ./quickstart.sh test    install what is missing, build, run the suite
#
# The build goes to ./_build, so the source tree stays clean.  Set
# TSLOCK_CONFIGURE_FLAGS to pass options to configure (for example
# --enable-sanitizers).
set -eu
cd "$(dirname "$0")"
what="${1:-demo}"
case "$what" in
demo | test) ;;
*)
    echo "usage: $0 demo|test" >&2
    exit 2
    ;;
esac

# A tree configured in place (the by-hand route, ./configure in the
# source directory) cannot also be built in _build/: configure refuses a
# second build of a configured source directory.
if [ -f config.status ]; then
    echo "quickstart: this source tree was configured in place" \
        "(./config.status), so it cannot also be built in _build/." >&2
    echo "  Either run 'make distclean' here and run $0 $what again," >&2
    if [ "$what" = demo ]; then
        echo "  or go on in place: make && ./tools/tslock demo" >&2
    else
        echo "  or go on in place: make && make check" >&2
    fi
    exit 1
fi
# faketime, libfaketime: the clock-skew tests shift client wall clocks.
skew_packages="faketime libfaketime"

# tmux: the tslock top test draws it in a detached session (send-keys,
# capture-pane).
top_packages="tmux"

# clang: make fuzz, and make check replays the fuzz corpora under
# libFuzzer with ASan and UBSan (without it, only through a plain driver).
# libxml2-utils: xmllint, which checks the demo's --svg timeline.
# python3-dev, python3-setuptools, python3-pytest: the Python module
# (--enable-python) and its tests.
# abigail-tools: make check's ABI check against abi/libtslock.abi.
# dpkg-dev debhelper lintian fakeroot: make deb (the packages, tested).
# rpm rpmlint file: make rpm (the RPMs for RHEL, CentOS and Fedora, built
# with Debian's rpmbuild, tested; file is what its brp-strip asks).
# dh-python: make deb's python3-tslock (dh-sequence-python3).
# python3-venv, python3-wheel: the Python sdist test (a venv installs
# the sdist with the system setuptools and wheel, no package index).
# stress-ng: make check-stress loads every core while the tests run.
# prometheus (with promtool), curl: the exporter's test has a real
# Prometheus scrape tslock exporter and checks its output with promtool.
# ruby-dev, ruby-minitest, ruby-redis: tests/test_ruby.sh builds the Ruby
# extension with mkmf and runs its minitest suite beside legacy peers;
# ruby-rubygems: gem, with which tests/ruby_gem.sh builds and installs
# the gem;
# make deb builds ruby-tslock with ruby-dev.
# iproute2: the partition suite (make check's short case,
# tests/test_partition_short.sh, about 30 s as root; make
# check-partitions) builds its hosts from network namespaces (ip netns,
# veth pairs, bridges) and cuts the network between them; its clock
# nemesis uses faketime (skew_packages).
# The demo needs only these: a compiler and the autotools, hiredis,
# OpenSSL (TLS is built in) and the redis-server it starts for itself.
demo_packages="build-essential autoconf automake libtool pkg-config
          libhiredis-dev libssl-dev redis-server"
# Everything below is for the test suite and the packages.
packages="$demo_packages openssl libcunit1-dev
          python3-redis clang
          libxml2-utils python3-dev python3-setuptools python3-pytest
          abigail-tools dpkg-dev debhelper lintian fakeroot
          rpm rpmlint file dh-python python3-venv python3-wheel stress-ng
          prometheus curl ruby-dev ruby-minitest ruby-redis ruby-rubygems
          iproute2"
# For the tests, chromium: make check opens the race classroom pages in
# it, headless, through puppeteer-core (installed below with npm ci, no
# browser download); nodejs and npm run that test, where node is missing.
# default-jdk-headless: the Java binding (built when a JDK is found, and
# by make deb's libtslock-java); junit5: its tests' console launcher.
packages="$packages default-jdk-headless"
# php-dev, php-cli: the PHP extension, built with phpize by
# tests/test_php.sh; php-cgi runs several requests in one process for its
# FPM-style test, phpunit runs its suite, and php-redis, php-predis and
# php-symfony-lock are the PHP locks it is tested beside; php-pear: pecl
# package for make check-php-pecl.  make deb builds php-tslock with php-dev.
packages="$packages php-dev php-cli php-pear"
if [ "$what" = test ]; then
    packages="$packages chromium junit5"
    packages="$packages php-cgi phpunit php-redis php-predis php-symfony-lock"
    command -v node >/dev/null 2>&1 || packages="$packages nodejs"
    command -v npm >/dev/null 2>&1 || packages="$packages npm"
fi
if [ "$what" = demo ]; then
    packages=$demo_packages
    skew_packages=""
    top_packages=""
fi
missing=""
for p in $packages $skew_packages $top_packages; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" \
        || missing="$missing $p"
done
if [ -n "$missing" ]; then
    echo "quickstart: installing$missing"
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq $missing
fi

# The browser test's own packages, as its lockfile pins them.
if [ "$what" = test ] \
    && [ ! -f tests/browser/node_modules/puppeteer-core/package.json ]; then
    echo "quickstart: npm ci in tests/browser"
    (cd tests/browser && PUPPETEER_SKIP_DOWNLOAD=1 npm ci --no-audit --no-fund)
fi

# The Node.js binding's build tools and test packages, as its lockfile
# pins them (node-gyp, node-addon-api, typescript).
if [ "$what" = test ] \
    && [ ! -f bindings/node/node_modules/node-addon-api/package.json ]; then
    echo "quickstart: npm ci in bindings/node"
    (cd bindings/node && npm ci --ignore-scripts --no-audit --no-fund)
fi
# The published lock libraries the Node binding is tested beside (npm
# redis-lock 0.0.9, 0.1.4, 1.0.0, redlock 4 and 5, their Redis clients).
if [ "$what" = test ] \
    && [ ! -f tests/node-peers/node_modules/redlock-5/package.json ]; then
    echo "quickstart: npm ci in tests/node-peers"
    (cd tests/node-peers && npm ci --ignore-scripts --no-audit --no-fund)
fi

[ -x configure ] || autoreconf -fi
# The demo builds the library and the tool; the tests build the bindings
# too.  A _build/ configured for the demo is configured again for the
# tests (config.status remembers the options it was given).
if [ "$what" = demo ]; then
    flags="--with-tls"
else
    flags="--enable-werror --with-tls --enable-python --enable-java"
fi
flags="$flags ${TSLOCK_CONFIGURE_FLAGS:-}"
mkdir -p _build
cd _build
if [ -f Makefile ] && [ -f config.status ]; then
    had=$(./config.status --config | tr -d "'")
    for f in $flags; do
        case " $had " in
        *" $f "*) ;;
        *) rm -f Makefile ;;
        esac
    done
fi
# shellcheck disable=SC2086
[ -f Makefile ] || ../configure $flags
make -j"$(nproc)"
if [ "$what" = demo ]; then
    exec ./tools/tslock demo
fi
status=0
# Everything the browser test needs was installed above, so a missing
# piece there is a failure, not the skip of a by-hand build.
TSLOCK_CLASSROOM_REQUIRED=1 TSLOCK_NODE_REQUIRED=1 make -j2 check || status=$?
# The Debian packages, built from the release tarball and used (about a
# minute; tests/deb.sh), then the RPMs the same way (about 30 s;
# tests/rpm.sh).
make deb || status=$?
make rpm || status=$?
# The Python sdist, which builds libtslock itself, installed into a venv
# and used (over a minute of compiling; tests/python_sdist.sh).
make check-python-sdist || status=$?
# The mutation suite's short form: a seventh of tests/mutants/, chosen by
# the weekday, so that every mutant runs over a week (a copy of the tree
# built once, then a build and a test run per mutant; tests/check-mutants.sh).
MUTANTS_PICK=daily make check-mutants || status=$?
passed=$(cat tests/*.trs doc/examples/*.trs 2>/dev/null | grep -c '^:test-result: PASS' || true)
failed=$(cat tests/*.trs doc/examples/*.trs 2>/dev/null | grep -c '^:test-result: FAIL\|^:test-result: ERROR' || true)
if [ "$status" -ne 0 ]; then
    for f in tests/*.log doc/examples/*.log; do
        [ -f "$f" ] && grep -q '^:test-result: \(FAIL\|ERROR\)' "${f%.log}.trs" 2>/dev/null \
            && { echo "==== $f"; tail -50 "$f"; }
    done
fi
echo "$passed passed, $failed failed"
exit "$status"

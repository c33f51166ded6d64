#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# ruby_gem.sh - the tslock gem as a user gets it: gem build
# bindings/ruby/tslock.gemspec, then gem install --local into a scratch
# GEM_HOME, compiling the extension against libtslock installed into a
# scratch prefix (its header, library and tslock.pc, as make install puts
# them), found once by --with-tslock-dir=PREFIX and once by pkg-config;
# then the installed gem, and nothing of the source tree, takes and
# releases a lock on a private redis-server.  No gem server is reached.
# Skipped (77) without ruby, gem or the Ruby headers (ruby-dev).
set -u
src=$(cd "${top_srcdir:-.}" && pwd)
build=$(cd "${top_builddir:-.}" && pwd)
. "$src/tests/harness.sh"
need_server
ruby=${RUBY:-ruby}
gem=${GEM:-gem}
if ! command -v "$ruby" >/dev/null 2>&1 || ! command -v "$gem" >/dev/null 2>&1
then
    echo "ruby_gem: no ruby or gem (apt-get install ruby-dev ruby-rubygems)"
    exit 77
fi
if ! "$ruby" -rrbconfig -e \
    'exit File.exist?(File.join(RbConfig::CONFIG["rubyhdrdir"], "ruby.h"))'; then
    echo "ruby_gem: $ruby has no headers (apt-get install ruby-dev)"
    exit 77
fi
lib=$build/.libs/libtslock.so
[ -f "$lib" ] || { echo "ruby_gem: $lib not built"; exit 99; }
dir=$(mktemp -d "${TMPDIR:-/tmp}/tslock-gem.XXXXXX") || exit 99
out=$dir/out
err=$dir/err
pid=
cleanup() {
    [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
    rm -rf "$dir"
}
th_on_exit cleanup
trap 'exit 130' INT TERM
unset RUBYLIB RUBYOPT GEM_PATH BUNDLE_GEMFILE
export GEM_SPEC_CACHE="$dir/spec-cache" HOME="$dir"

# libtslock "installed" into a scratch prefix: header, library, tslock.pc.
prefix=$dir/prefix
mkdir -p "$prefix/include" "$prefix/lib/pkgconfig" "$dir/src"
cp "$src/include/tslock.h" "$prefix/include/"
cp -P "$build"/.libs/libtslock.so* "$prefix/lib/"
sed "s|^prefix=.*|prefix=$prefix|" "$build/tslock.pc" \
    >"$prefix/lib/pkgconfig/tslock.pc"

# A library built with the sanitizers needs their runtimes loaded first.
asan=$(ldd "$lib" 2>/dev/null \
    | sed -n 's/.*\(libasan\.so[^ ]*\) => \([^ ]*\).*/\2/p')
ubsan=$(ldd "$lib" 2>/dev/null \
    | sed -n 's/.*\(libubsan\.so[^ ]*\) => \([^ ]*\).*/\2/p')
if [ -n "$asan" ]; then
    # gem install's mkmf probes link a program against the sanitized
    # libtslock without the sanitizer runtime, so the gem cannot build
    # here; test_ruby.sh runs the extension itself under the sanitizers.
    echo "ruby_gem: skipped in a sanitizer build: the gem's mkmf probes" \
        "cannot link a sanitized libtslock (the plain build runs it)"
    exit 77
fi

# 1. gem build, in a copy (gem build writes the .gem beside the gemspec).
version=$(sed -n 's/^#define TSLOCK_VERSION_STRING "\(.*\)"$/\1/p' \
    "$src/include/tslock.h")
(cd "$src/bindings/ruby" && cp -R tslock.gemspec lib ext "$dir/src/")
t "gem build tslock.gemspec" 0 sh -c "cd '$dir/src' && '$gem' build tslock.gemspec"
check "the gem is tslock-$version.gem" test -f "$dir/src/tslock-$version.gem"
"$gem" specification "$dir/src/tslock-$version.gem" files >"$dir/files" 2>&1
for f in ext/tslock/extconf.rb ext/tslock/lock.c lib/tslock.rb; do
    check "the gem carries $f" grep -q -- "- $f\$" "$dir/files"
done

# 2. gem install --local, compiling against the prefix; then the gem is
# used with nothing of the tree on the load path.
use_gem() { # GEM_HOME
    GEM_HOME=$1 GEM_PATH=$1 LD_LIBRARY_PATH=$prefix/lib "$ruby" -w -e '
        require "tslock"
        where = $LOADED_FEATURES.grep(/tslock_ext/).first.to_s
        abort "tslock_ext loaded from #{where}" unless where.start_with?(ENV["GEM_HOME"])
        c = Tslock::Client.new(url: ARGV[0])
        l = c.lock("gem-test", ttl: 10)
        l.synchronize do
          abort "not held" unless l.owned?
          value = IO.popen([ARGV[1], "-s", ARGV[2], "get", "gem-test"], &:read).chomp
          abort "the key holds #{value.inspect}, the lock #{l.value.inspect}" \
            unless !value.empty? && value == l.value
          puts "value: #{value}"
        end
        abort "held after the block" if l.locked?
        puts "released; tslock #{Tslock::VERSION} over libtslock #{Tslock.library_version}"
    ' "unix://$dir/redis.sock" "$cli" "$dir/redis.sock"
}
start_unix_server "$dir/redis.sock" "$dir/redis.log"
pid=$started
t "gem install --local -- --with-tslock-dir=PREFIX" 0 env \
    GEM_HOME="$dir/gems1" "$gem" install --local --no-document \
    "$dir/src/tslock-$version.gem" -- --with-tslock-dir="$prefix"
t "the gem (--with-tslock-dir) takes and releases a lock" 0 use_gem "$dir/gems1"
check "the key held the lock's value while inside" has "^value: ." "$out"
check "... and the gem reports versions $version" \
    has "tslock $version over libtslock $version" "$out"
t "gem install --local, libtslock found by pkg-config" 0 env \
    GEM_HOME="$dir/gems2" PKG_CONFIG_PATH="$prefix/lib/pkgconfig" \
    "$gem" install --local --no-document "$dir/src/tslock-$version.gem"
t "the gem (pkg-config) takes and releases a lock" 0 use_gem "$dir/gems2"
t "no key is left" 0 sh -c "test -z \"\$('$cli' -s '$dir/redis.sock' keys '*')\""
finish

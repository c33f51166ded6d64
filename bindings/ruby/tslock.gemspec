# SPDX-License-Identifier: BSD-3-Clause
# tslock.gemspec - the tslock gem: the C extension (ext/tslock, mkmf) and
# lib/tslock.rb.  It compiles against an installed libtslock, found by
# pkg-config or given with
#   gem install tslock-VERSION.gem -- --with-tslock-dir=PREFIX
# (tests/ruby_gem.sh builds, installs and uses it).
version = File.read(File.join(__dir__, "lib/tslock.rb"))[/^  VERSION = "([^"]+)"$/, 1]

Gem::Specification.new do |s|
  s.name = "tslock"
  s.version = version
  s.summary = "Mutual exclusion over Redis, in every lock dialect, over libtslock"
  s.description = <<~TEXT
    A Ruby face for libtslock: token, timestamp and bridge locks over Redis,
    read-write locks, semaphores and fair mode, with the dialects of
    redis-objects, redis-mutex, the redis-lock gem and resque-lock-timeout
    for running beside them.  Every decision about a lock is libtslock's;
    waits release the GVL and end at Thread#raise, Timeout and Ctrl-C.
  TEXT
  s.authors = ["The tslock project"]
  s.email = "maintainers@tslock.example.org"
  s.license = "BSD-3-Clause"
  s.required_ruby_version = ">= 2.6"
  s.files = %w[tslock.gemspec lib/tslock.rb ext/tslock/extconf.rb
               ext/tslock/rbtslock.h ext/tslock/errors.c ext/tslock/client.c
               ext/tslock/lock.c
               ext/tslock/module.c ext/tslock/watchdog.c]
  s.extensions = ["ext/tslock/extconf.rb"]
  s.require_paths = ["lib"]
  s.requirements = ["libtslock 1.2 or later and its header (libtslock-dev)"]
end

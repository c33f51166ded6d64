# SPDX-License-Identifier: BSD-3-Clause
# extconf.rb - build the tslock extension against libtslock: an installed
# one (found by pkg-config, or --with-tslock-dir=PREFIX), or the build tree
# (tests/test_ruby.sh passes --with-tslock-include and --with-tslock-lib).
require "mkmf"

dir_config("tslock")
pkg_config("tslock") unless with_config("tslock-include")
abort "tslock.h not found (install libtslock-dev)" unless have_header("tslock.h")
abort "libtslock not found" unless have_library("tslock", "tslock_version")
have_func("rb_nogvl", "ruby/thread.h") or abort "Ruby 2.6 or later needed"
# Warnings are switched on after the checks, whose probes would trip them.
$CFLAGS << " -std=gnu99 -Wall -Wextra -Wno-unused-parameter"
$CFLAGS << " -Werror" if enable_config("werror", false)
create_makefile("tslock/tslock_ext")

dnl SPDX-License-Identifier: BSD-3-Clause
dnl config.m4 - the tslock PHP extension (phpize && ./configure && make),
dnl built against an installed libtslock found with pkg-config, or the one
dnl --with-tslock=DIR names (DIR/include/tslock.h and DIR/lib, or a build
dnl tree: DIR/include and DIR/.libs).

PHP_ARG_WITH([tslock],
  [for tslock support],
  [AS_HELP_STRING([[--with-tslock[=DIR]]],
    [tslock: mutual exclusion over Redis with libtslock (DIR: where it is)])],
  [yes])

if test "$PHP_TSLOCK" != "no"; then
  if test "$PHP_TSLOCK" = "yes"; then
    PKG_CHECK_MODULES([TSLOCK], [tslock >= 1.1])
    PHP_EVAL_INCLINE([$TSLOCK_CFLAGS])
    PHP_EVAL_LIBLINE([$TSLOCK_LIBS], [TSLOCK_SHARED_LIBADD])
  else
    dnl A build tree outside its source tree has no include/: the caller
    dnl passes CPPFLAGS=-I<srcdir>/include (tests/test_php.sh does).
    if test -r "$PHP_TSLOCK/include/tslock.h"; then
      PHP_ADD_INCLUDE([$PHP_TSLOCK/include])
    fi
    for dir in "$PHP_TSLOCK/.libs" "$PHP_TSLOCK/lib" "$PHP_TSLOCK/$PHP_LIBDIR"; do
      if test -r "$dir/libtslock.so"; then
        dnl -L only, no run path (PHP_ADD_LIBRARY_WITH_PATH would add one):
        dnl a build tree is found with LD_LIBRARY_PATH, and a package must
        dnl not point at the tree it was built in.
        TSLOCK_SHARED_LIBADD="-L$dir -ltslock $TSLOCK_SHARED_LIBADD"
        break
      fi
    done
  fi
  PHP_SUBST([TSLOCK_SHARED_LIBADD])
  PHP_NEW_EXTENSION([tslock],
    [src/module.c src/conn.c src/client.c src/lock.c src/wait.c src/error.c],
    [$ext_shared])
fi

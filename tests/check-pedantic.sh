#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# check-pedantic.sh - the library and the tool are C99 (doc/compat.md,
# "Compilers and C libraries"): every .c of lib/, compat/, proto/, net/
# and tools/ compiles with -std=c99 -pedantic -Werror, with the build's
# own include paths and definitions.  The control: a string longer than
# the 4095 characters C99 promises (as the tool's help text once was),
# planted in a copy of a file, must fail the same compile.
set -u
src=$(cd "${top_srcdir:-.}" && pwd)
build=$(cd "${top_builddir:-.}" && pwd)
cc=${CC:-cc}
flags="-std=c99 -pedantic -Werror -Wall -fsyntax-only -D_GNU_SOURCE
    -DTSLOCK_BUILDING -I$build -I$src/include -I$src/lib -I$src/compat
    -I$src/proto -I$src/net -I$src/tools -I$src/tools/common
    -I$src/tools/plumb -I$src/tools/class -I$build/tools ${HIREDIS_CFLAGS:-}"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tslock-pedantic.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT INT TERM
fail=0
n=0
for f in "$src"/lib/*.c "$src"/compat/*.c "$src"/proto/*.c "$src"/net/*.c \
    $(find "$src/tools" -name '*.c'); do
    n=$((n + 1))
    # shellcheck disable=SC2086
    if ! $cc $flags -include "$build/config.h" "$f" 2>"$tmp/err"; then
        echo "FAIL - ${f#"$src"/} is not C99 -pedantic:"
        head -5 "$tmp/err" | sed 's/^/    /'
        fail=1
    fi
done
# The control: a 5000-character string literal.
cp "$src/lib/url.c" "$tmp/url.c"
awk 'BEGIN { printf "const char *tslock_long_help = \""
             for (i = 0; i < 5000; i++) printf "x"; print "\";" }' \
    >>"$tmp/url.c"
# shellcheck disable=SC2086
if $cc $flags -I"$src/lib" -include "$build/config.h" "$tmp/url.c" \
    2>/dev/null; then
    echo "FAIL - the control: a 5000-character string passed -std=c99 -pedantic"
    fail=1
fi
[ $fail -eq 0 ] && echo "$n files of lib/, compat/, proto/, net/ and tools/" \
    "compile with $cc -std=c99 -pedantic -Werror"
exit $fail

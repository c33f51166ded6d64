#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Every C file of the project must already be as clang-format (with the
# committed .clang-format) would write it.  Skipped (77) without
# clang-format.
set -u
cf="${CLANG_FORMAT:-}"
[ -n "$cf" ] || cf=$(command -v clang-format 2>/dev/null || true)
if [ -z "$cf" ]; then
    echo "clang-format not found; skipped"
    exit 77
fi
cd "${top_srcdir:-.}" || exit 1
status=0
for f in include/*.h lib/*.c lib/*.h compat/*.c compat/*.h proto/*.c proto/*.h \
         net/*.c net/*.h tools/*.c tools/*.h tools/*/*.c tools/*/*.h \
         tests/*.c tests/*.h tests/fuzz/*.c tests/fuzz/*.h doc/examples/*.c \
         bindings/python/src/*.c bindings/python/src/*.h \
         bindings/java/jni/*.c bindings/php/src/*.c bindings/php/src/*.h \
         bindings/node/src/*.cc bindings/node/src/*.h \
         bindings/ruby/ext/tslock/*.c bindings/ruby/ext/tslock/*.h; do
    [ -f "$f" ] || continue
    if ! "$cf" --style=file --dry-run -Werror "$f" >/dev/null 2>&1; then
        echo "not formatted: $f (run: clang-format -i $f)"
        status=1
    fi
done
[ $status -eq 0 ] && echo "all C files formatted"
exit $status

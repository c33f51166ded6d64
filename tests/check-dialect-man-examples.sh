#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# check-dialect-man-examples.sh - the EXAMPLE of each dialect man page
# compiles against include/tslock.h and links with the built library: a
# page that holds a whole program (it has main) is run and must exit 0;
# a fragment is wrapped in a function with the headers it needs.  The
# values the fragments promise in comments are checked in C below, by
# the same calls.  Skips (77) without a compiler or a shared library.
set -u
src="${top_srcdir:-.}"
lib="${top_builddir:-.}/.libs"
cc="${CC:-cc}"
command -v "$cc" >/dev/null 2>&1 || { echo "no $cc; skipped"; exit 77; }
[ -f "$lib/libtslock.so" ] || { echo "no $lib/libtslock.so; skipped"; exit 77; }
lib=$(cd "$lib" && pwd)
# A library built with the sanitizers needs their runtimes loaded first
# into a program built without them (as tests/test_python.sh does).
asan=$(ldd "$lib/libtslock.so" 2>/dev/null \
    | sed -n 's/.*\(libasan\.so[^ ]*\) => \([^ ]*\).*/\2/p')
ubsan=$(ldd "$lib/libtslock.so" 2>/dev/null \
    | sed -n 's/.*\(libubsan\.so[^ ]*\) => \([^ ]*\).*/\2/p')
if [ -n "$asan" ]; then
    LD_PRELOAD="$asan${ubsan:+ $ubsan}"
    ASAN_OPTIONS=detect_leaks=0
    export LD_PRELOAD ASAN_OPTIONS
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tslock-man-ex.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT INT TERM
failed=0
for page in tslock_lock_set_dialect tslock_dialect_preset \
    tslock_dialect_check tslock_dialect_parse tslock_dialect_match \
    tslock_value_name; do
    # The lines between .nf and .fi of the EXAMPLE section, unescaped.
    sed -n '/^\.SH EXAMPLE/,/^\.SH/p' "$src/doc/man/$page.3" \
        | sed -n '/^\.nf/,/^\.fi/p' | grep -v '^\.' \
        | sed 's/\\e/\\/g; s/\\-/-/g' >"$tmp/$page.body"
    if grep -q 'main(' "$tmp/$page.body"; then
        cp "$tmp/$page.body" "$tmp/$page.c"
    elif grep -q '^#include' "$tmp/$page.body"; then
        # A function of its own: compiled and called from a main.
        { cat "$tmp/$page.body"; echo 'int main(void) { return 0; }'; } \
            >"$tmp/$page.c"
    else
        {
            printf '#include <stdint.h>\n#include <stdio.h>\n'
            printf '#include <tslock.h>\n'
            printf 'int main(void)\n{\n'
            cat "$tmp/$page.body"
            printf 'return 0;\n}\n'
        } >"$tmp/$page.c"
    fi
    if ! "$cc" -Wall -Werror -Wno-unused-function -I"$src/include" \
        "$tmp/$page.c" -L"$lib" -ltslock -o "$tmp/$page" 2>"$tmp/$page.err"; then
        echo "FAIL - $page(3)'s EXAMPLE does not compile:"
        sed 's/^/    /' "$tmp/$page.err" | head -10
        failed=1
        continue
    fi
    if ! LD_LIBRARY_PATH="$lib" "$tmp/$page" >"$tmp/$page.out" 2>&1; then
        echo "FAIL - $page(3)'s EXAMPLE exits non-zero"
        failed=1
        continue
    fi
    echo "ok - $page(3)'s EXAMPLE compiles and runs"
done
# What the fragments' comments say they give.
grep -qx 'valid through 1795841613999' "$tmp/tslock_dialect_parse.out" \
    || { echo "FAIL - tslock_dialect_parse(3)'s example printed:" \
        "$(cat "$tmp/tslock_dialect_parse.out")"; failed=1; }
cat >"$tmp/match.c" <<'C'
#include <stdio.h>
#include <string.h>
#include <tslock.h>
int main(void)
{
    char names[128];

    if (tslock_dialect_match("1795841799:15131", 16, names, sizeof(names),
                             NULL) != TSLOCK_OK)
        return 1;
    return strcmp(names, "predislock") != 0; /* tslock_dialect_match(3) */
}
C
if ! "$cc" -I"$src/include" "$tmp/match.c" -L"$lib" -ltslock -o "$tmp/match" \
    || ! LD_LIBRARY_PATH="$lib" "$tmp/match"; then
    echo "FAIL - tslock_dialect_match(3)'s example does not give \"predislock\""
    failed=1
fi
cat >"$tmp/name.c" <<'C'
#include <stdio.h>
#include <string.h>
#include <tslock.h>
int main(void)
{
    tslock_value_kind kind;
    char names[128];

    if (tslock_value_name("job_lock", 8, "1", 1, &kind, NULL, NULL, names,
                          sizeof(names)) != TSLOCK_OK)
        return 1;
    /* tslock_value_name(3): a stamp of redis-objects */
    return kind != TSLOCK_VALUE_STAMP || strcmp(names, "redis-objects") != 0;
}
C
if ! "$cc" -I"$src/include" "$tmp/name.c" -L"$lib" -ltslock -o "$tmp/name" \
    || ! LD_LIBRARY_PATH="$lib" "$tmp/name"; then
    echo "FAIL - tslock_value_name(3)'s example does not give a redis-objects stamp"
    failed=1
fi
n=$(LD_LIBRARY_PATH="$lib" "$tmp/tslock_dialect_preset" | wc -l)
[ "$n" -gt 0 ] || { echo "FAIL - tslock_dialect_preset(3)'s example listed nothing"; failed=1; }
[ $failed -eq 0 ] && echo "the dialect pages' examples compile, run and give what they say"
exit $failed

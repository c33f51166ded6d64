#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# test_doc_blocks.sh - the shell, C, Python and Java blocks of README.md
# and doc/*.md run as written, against a private redis-server on a Unix
# socket.
#
# The convention, for whoever writes a doc page: an HTML comment on the
# line just before a ```sh, ```c, ```python or ```java fence says what
# this test does with the block.
#   <!-- doc-test: run -->          run it in a fresh empty directory,
#                                   $REDIS_URL the private server: sh -e
#                                   with `tslock` the one just built; a C
#                                   block (a whole program) compiled
#                                   against the built libtslock and run;
#                                   a Python block with the built module;
#                                   a Java block (a whole class) compiled
#                                   against the built jar and run.  It
#                                   must exit 0 within 20 s
#   <!-- doc-test: skip REASON -->  not run here; REASON says why (a real
#                                   fleet, a placeholder host, root), or
#                                   "run by TEST" names the test that runs
#                                   it (counted apart)
# A block with neither is counted as unmarked and listed, so the blocks
# not yet run stay in sight; the count of each kind is printed.
set -u
src="${top_srcdir:-.}"
tool="${top_builddir:-.}/tools/tslock"
. "$src/tests/harness.sh"
need_server
[ -x "$tool" ] || { echo "no tool at $tool"; exit 1; }
tool=$(cd "$(dirname "$tool")" && pwd)/tslock
build=$(cd "${top_builddir:-.}" && pwd)
srcdir=$(cd "$src" && pwd)
jar=$build/bindings/java/tslock.jar
jni=$build/bindings/java/.libs/libtslock-jni.so

dir=$(mktemp -d /tmp/tslock-docblocks.XXXXXX) || exit 1
sock="$dir/redis.sock"
pid=
cleanup() {
    [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
    rm -rf "$dir"
}
th_on_exit cleanup
trap 'exit 130' INT TERM
start_unix_server "$sock" "$dir/redis.log"
pid=$started

mkdir "$dir/bin" "$dir/blocks"
printf '#!/bin/sh\nexec "%s" "$@"\n' "$tool" >"$dir/bin/tslock"
chmod +x "$dir/bin/tslock"

# Every block: a file per block (N.sh, N.c, N.python, N.java), and one
# line in the index: "N<TAB>FILE:LINE<TAB>run|skip|unmarked<TAB>LANGUAGE
# <TAB>REASON" (the reason last: read joins empty fields).
for md in "$src/README.md" "$src"/doc/*.md; do
    awk -v out="$dir/blocks" -v name="${md#"$src"/}" '
        /^<!-- doc-test: / {
            m = $0; sub(/^<!-- doc-test: */, "", m); sub(/ *-->.*$/, "", m)
            mark = m; markline = FNR; next
        }
        /^<!-- example: [a-z-]* -->$/ {
            m = $0; sub(/^<!-- */, "", m); sub(/ *-->.*$/, "", m)
            mark = m; markline = FNR; next
        }
        inb && /^```/ { inb = 0; close(f); next }
        inb { print > f; next }
        /^```(sh|shell|c|python|java)$/ {
            lang = substr($0, 4); if (lang == "shell") lang = "sh"
            n = 0; while ((getline c < (out "/count")) > 0) n = c
            close(out "/count"); n++
            print n > (out "/count"); close(out "/count")
            f = out "/" n "." lang; printf "" > f; inb = 1
            kind = "unmarked"; why = ""
            if (markline == FNR - 1 && mark ~ /^example: /) {
                # the named examples of doc/python.md: pytest runs them
                # (doc_example() in bindings/python/tests).
                kind = "skip"; why = "run by pytest as " mark
            }
            if (markline == FNR - 1 && mark == "run") kind = "run"
            else if (markline == FNR - 1 && mark ~ /^skip/) {
                kind = "skip"; why = mark; sub(/^skip */, "", why)
                if (why == "") why = "(no reason given)"
            }
            printf "%d\t%s:%d\t%s\t%s\t%s\n", n, name, FNR, kind, lang, \
                why >> (out "/index")
            next
        }
    ' "$md"
done

ran=0
skipped=0
elsewhere=0
unmarked=0
fail=0
# run_block N LANG: the block, as a reader would run it, in work$N.
run_block() {
    case $2 in
    sh)
        PATH="$dir/bin:$PATH" timeout 20 sh -e "$dir/blocks/$1.sh"
        ;;
    c)
        cp "$dir/blocks/$1.c" main.c &&
            ${CC:-cc} -Wall -Werror -I"$srcdir/include" main.c \
                -L"$build/.libs" -ltslock -o main &&
            LD_LIBRARY_PATH="$build/.libs" timeout 20 ./main
        ;;
    python)
        cp "$dir/blocks/$1.python" main.py &&
            top_builddir=$build top_srcdir=$srcdir timeout 20 \
                sh "$srcdir/tests/test_python.sh" --run "$PWD/main.py"
        ;;
    java)
        class=$(sed -n 's/^public class \([A-Za-z0-9_]*\).*/\1/p' \
            "$dir/blocks/$1.java" | head -1)
        [ -n "$class" ] || { echo "a Java block is a public class"; return 1; }
        cp "$dir/blocks/$1.java" "$class.java" &&
            javac -cp "$jar" -d . "$class.java" &&
            LD_LIBRARY_PATH="$build/.libs" timeout 20 \
                java -Dtslock.jni="$jni" -cp "$jar:." "$class"
        ;;
    *)
        echo "no way to run a block of language '$2'"
        return 1
        ;;
    esac
}

while IFS='	' read -r n where kind lang why; do
    if [ "$kind" = run ] && [ "$lang" = java ] && [ ! -f "$jar" ]; then
        kind=skip
        why="no Java binding in this build (./configure found no JDK)"
    fi
    case $kind in
    skip)
        case $why in
        "run by "*)
            elsewhere=$((elsewhere + 1))
            echo "elsewhere: $where: $why"
            ;;
        *)
            skipped=$((skipped + 1))
            echo "skip: $where: $why"
            ;;
        esac
        ;;
    unmarked)
        unmarked=$((unmarked + 1))
        ;;
    run)
        ran=$((ran + 1))
        mkdir "$dir/work$n"
        if (cd "$dir/work$n" && REDIS_URL="unix://$sock" \
            run_block "$n" "$lang") >"$dir/out$n" 2>&1; then
            echo "ok: $where ($lang)"
        else
            echo "FAIL: $where ($lang, exit $?):"
            sed 's/^/    /' "$dir/blocks/$n.$lang"
            echo "  output:"
            sed 's/^/    /' "$dir/out$n"
            fail=1
        fi
        ;;
    esac
done <"$dir/blocks/index"
grep '	unmarked	' "$dir/blocks/index" | cut -f2 | sed 's/^/unmarked: /'
echo "doc blocks: $ran run here, $elsewhere run by the test their marker" \
    "names, $skipped shown only (each with its reason), $unmarked unmarked"
[ "$ran" -gt 0 ] || { echo "FAIL: no block ran"; fail=1; }
exit $fail

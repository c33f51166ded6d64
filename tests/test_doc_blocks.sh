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
#   <!-- doc-test: compile -->      a C fragment: compiled only, its
#                                   statements put in a function and the
#                                   names the pages use (client, lock,
#                                   rc...) declared around it
#   <!-- doc-test: skip REASON -->  not run here; REASON says why (a real
#                                   fleet, a placeholder host, root), or
#                                   "run by TEST" names the test that runs
#                                   it (counted apart)
# A block with none is counted as unmarked and listed, so the blocks
# not yet run stay in sight; the count of each kind is printed.  The C of
# every man page's EXAMPLE section (between .nf and .fi) is compiled too
# (not run: the pages connect to 127.0.0.1:6379); a roff comment
# (.\" doc-test: skip REASON) before its .nf marks one not to.
set -u
src="${top_srcdir:-.}"
tool="${top_builddir:-.}/tools/tslock"
. "$src/tests/harness.sh"
need_server
[ -x "$tool" ] || { echo "no tool at $tool"; exit 1; }
tool=$(cd "$(dirname "$tool")" && pwd)/tslock
build=$(cd "${top_builddir:-.}" && pwd)
srcdir=$(cd "$src" && pwd)
# A library built with the sanitizers needs their runtimes loaded first
# into the programs built here without them, and into the JVM (which
# keeps SIGSEGV for itself).
asan=$(ldd "$build/.libs/libtslock.so" 2>/dev/null |
    sed -n 's/.*\(libasan\.so[^ ]*\) => \([^ ]*\).*/\2/p')
ubsan=$(ldd "$build/.libs/libtslock.so" 2>/dev/null |
    sed -n 's/.*\(libubsan\.so[^ ]*\) => \([^ ]*\).*/\2/p')
preload=${asan:+$asan${ubsan:+ $ubsan}}
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
            if (markline == FNR - 1 && (mark == "run" || mark == "compile"))
                kind = mark
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

# The EXAMPLE sections of the man pages.
for page in "$src"/doc/man/*.[0-9]; do
    awk -v out="$dir/blocks" -v name="${page#"$src"/}" '
        function deroff(t) {
            gsub(/\\-/, "-", t); gsub(/\\&/, "", t)
            gsub(/\\\(aq/, "\047", t); gsub(/\\\(dq/, "\"", t)
            gsub(/\\e/, "\\", t)
            return t
        }
        /^\.SH/ { ex = ($0 ~ /^\.SH "?EXAMPLES?"?/); next }
        !ex { next }
        /^\.\\" doc-test: / {
            m = $0; sub(/^\.\\" doc-test: */, "", m)
            mark = m; markline = FNR; next
        }
        inb && /^\.(fi|EE)/ {
            inb = 0
            if (!(txt ~ /#include/ || txt ~ /;\n/)) next  # not C
            n = 0; while ((getline c < (out "/count")) > 0) n = c
            close(out "/count"); n++
            print n > (out "/count"); close(out "/count")
            f = out "/" n ".c"; printf "%s", txt > f; close(f)
            # Compiled only: the pages connect to 127.0.0.1:6379, a
            # server this test does not own.
            kind = "compile"; why = ""
            if (markline == start - 1 && mark ~ /^skip/) {
                kind = "skip"; why = mark; sub(/^skip */, "", why)
            }
            printf "%d\t%s:%d\t%s\t%s\t%s\n", n, name, start, kind, "c", \
                why >> (out "/index")
            next
        }
        inb {
            if ($0 ~ /^\.(RS|RE|PP|br|sp)/) next
            txt = txt deroff($0) "\n"; next
        }
        /^\.(nf|EX)/ { inb = 1; txt = ""; start = FNR; next }
    ' "$page"
done

# c_prepare BLOCK OUT.c: a C fragment as a unit of its own.  Functions
# and types stay at file scope; the statements between them go into a
# function; the names the pages' fragments use are declared around it.
c_prepare() {
    {
        grep '^#define' "$1"
        printf '#ifndef _POSIX_C_SOURCE\n#define _POSIX_C_SOURCE 200809L\n#endif\n'
        grep -q 'redis[A-Z]' "$1" && printf '#include <hiredis/hiredis.h>\n'
        printf '#include <inttypes.h>\n#include <stdint.h>\n#include <stdio.h>\n'
        printf '#include <stdlib.h>\n#include <string.h>\n#include <tslock.h>\n'
        grep '^#include' "$1"
        printf 'static tslock_client *client;\nstatic tslock_lock *lock;\n'
        printf 'static tslock_tls *tls;\nstatic tslock_redlock *rl;\n'
        printf 'static tslock_stats s;\nstatic int rc;\nvoid run_job(void);\n'
        printf 'static tslock_client *c;\nstatic tslock_client *clients[3];\n'
        printf 'static void *sink;\nstatic char err[256];\n'
        printf 'void record_span(void *, int, const char *, int, int64_t);\n'
        awk '
            /^#(include|define)/ { next }
            depth == 0 && !top && /^(static|typedef) [^{]*;$/ { print; next }
            depth == 0 && !top && (/^[A-Za-z_][A-Za-z0-9_ *]*\(/ && !/;/ &&
                !/^(if|for|while|switch|return|else|do)[ (]/ ||
                /^(static |typedef |struct |enum )[^;]*\{ *$/) { top = 1 }
            {
                line = $0
                o = gsub(/\{/, "{", line); c = gsub(/\}/, "}", line)
                if (top) print; else body = body $0 "\n"
                depth += o - c
                if (top && depth == 0 && /[};] *$/) top = 0
            }
            END {
                int_ = (body ~ /return [^;]/)
                printf "%s doc_fragment(void);\n%s doc_fragment(void)\n{\n%s}\n",
                    int_ ? "int" : "void", int_ ? "int" : "void", body
            }' "$1"
    } >"$2"
}

ran=0
compiled=0
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
        if [ "$3" = compile ]; then
            c_prepare "$dir/blocks/$1.c" fragment.c &&
                ${CC:-cc} -std=c99 -Wall -Werror -Wno-unused-function \
                    -Wno-unused-variable -Wno-unused-parameter \
                    -Wno-unused-but-set-variable -Wno-return-type \
                    -I"$srcdir/include" ${HIREDIS_CFLAGS:-} -c fragment.c \
                    -o fragment.o
            return
        fi
        cp "$dir/blocks/$1.c" main.c &&
            ${CC:-cc} -Wall -Werror -I"$srcdir/include" main.c \
                -L"$build/.libs" -ltslock -o main &&
            LD_LIBRARY_PATH="$build/.libs" LD_PRELOAD="$preload" \
                ASAN_OPTIONS=detect_leaks=0 timeout 20 ./main
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
            LD_LIBRARY_PATH="$build/.libs" LD_PRELOAD="$preload" \
                ASAN_OPTIONS=detect_leaks=0:handle_segv=0:allow_user_segv_handler=1 \
                timeout 20 java -Dtslock.jni="$jni" -cp "$jar:." "$class"
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
    run | compile)
        if [ "$kind" = run ]; then ran=$((ran + 1)); else compiled=$((compiled + 1)); fi
        mkdir "$dir/work$n"
        if (cd "$dir/work$n" && REDIS_URL="unix://$sock" \
            run_block "$n" "$lang" "$kind") >"$dir/out$n" 2>&1; then
            echo "ok: $where ($lang, $kind)"
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
echo "doc blocks: $ran run here, $compiled compiled only," \
    "$elsewhere run by the test their marker" \
    "names, $skipped shown only (each with its reason), $unmarked unmarked"
[ "$ran" -gt 0 ] || { echo "FAIL: no block ran"; fail=1; }
exit $fail

#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# test_doc_blocks.sh - the shell blocks of README.md and doc/*.md run as
# written, against a private redis-server on a Unix socket.
#
# The convention, for whoever writes a doc page: an HTML comment on the
# line just before a ```sh fence says what this test does with the block.
#   <!-- doc-test: run -->          run it with sh -e in a fresh empty
#                                   directory, $REDIS_URL the private
#                                   server, `tslock` the one just built;
#                                   it must exit 0 within 10 s
#   <!-- doc-test: skip REASON -->  shown only; REASON says why (a real
#                                   fleet, a placeholder host, root)
# A ```sh block with neither is counted as unmarked and listed, so the
# blocks not yet run stay in sight; the count of each kind is printed.
set -u
src="${top_srcdir:-.}"
tool="${top_builddir:-.}/tools/tslock"
. "$src/tests/harness.sh"
need_server
[ -x "$tool" ] || { echo "no tool at $tool"; exit 1; }
tool=$(cd "$(dirname "$tool")" && pwd)/tslock

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

# Every ```sh block: a file per block, and one line in the index:
# "N<TAB>FILE:LINE<TAB>run|skip|unmarked<TAB>REASON".
for md in "$src/README.md" "$src"/doc/*.md; do
    awk -v out="$dir/blocks" -v name="${md#"$src"/}" '
        /^<!-- doc-test: / {
            m = $0; sub(/^<!-- doc-test: */, "", m); sub(/ *-->.*$/, "", m)
            mark = m; markline = FNR; next
        }
        inb && /^```/ { inb = 0; close(f); next }
        inb { print > f; next }
        /^```(sh|shell)$/ {
            n = 0; while ((getline c < (out "/count")) > 0) n = c
            close(out "/count"); n++
            print n > (out "/count"); close(out "/count")
            f = out "/" n ".sh"; printf "" > f; inb = 1
            kind = "unmarked"; why = ""
            if (markline == FNR - 1 && mark == "run") kind = "run"
            else if (markline == FNR - 1 && mark ~ /^skip/) {
                kind = "skip"; why = mark; sub(/^skip */, "", why)
                if (why == "") why = "(no reason given)"
            }
            printf "%d\t%s:%d\t%s\t%s\n", n, name, FNR, kind, why \
                >> (out "/index")
            next
        }
    ' "$md"
done

ran=0
skipped=0
unmarked=0
fail=0
while IFS='	' read -r n where kind why; do
    case $kind in
    skip)
        skipped=$((skipped + 1))
        echo "skip: $where: $why"
        ;;
    unmarked)
        unmarked=$((unmarked + 1))
        ;;
    run)
        ran=$((ran + 1))
        mkdir "$dir/work$n"
        if (cd "$dir/work$n" && PATH="$dir/bin:$PATH" \
            REDIS_URL="unix://$sock" timeout 10 sh -e "$dir/blocks/$n.sh") \
            >"$dir/out$n" 2>&1; then
            echo "ok: $where"
        else
            echo "FAIL: $where (exit $?):"
            sed 's/^/    /' "$dir/blocks/$n.sh"
            echo "  output:"
            sed 's/^/    /' "$dir/out$n"
            fail=1
        fi
        ;;
    esac
done <"$dir/blocks/index"
grep '	unmarked	' "$dir/blocks/index" | cut -f2 | sed 's/^/unmarked: /'
echo "doc blocks: $ran run, $skipped skipped, $unmarked unmarked"
[ "$ran" -gt 0 ] || { echo "FAIL: no block ran"; fail=1; }
exit $fail

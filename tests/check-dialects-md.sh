#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# check-dialects-md.sh - every ```sh block of doc/dialects.md runs, in
# order, against a private redis-server on a Unix socket, with `tslock`
# the built tool and `redis-cli` aimed at that server; a block that exits
# non-zero fails the check.  The page's survey must also name the key it
# planted as the redis-lock gem's.  Then each example value that
# tslock-dialects(7) says tslock writes in a preset is planted under a key
# of its own, and `tslock survey --json` must name that preset among the
# key's dialects.  POSIX sh.
set -u
tool="${top_builddir:-.}/tools/tslock"
page="${top_srcdir:-.}/doc/dialects.md"
man7="${top_srcdir:-.}/doc/man/tslock-dialects.7"
. "${top_srcdir:-.}/tests/harness.sh"
need_server
dir=$(mktemp -d "${TMPDIR:-/tmp}/tslock-dialects-md.XXXXXX") || exit 99
server_pid=
cleanup() {
    [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null \
        && wait "$server_pid" 2>/dev/null
    rm -rf "$dir"
}
th_on_exit cleanup
trap 'exit 130' INT TERM
out="$dir/out"
err="$dir/err"
start_unix_server "$dir/redis.sock" "$dir/redis.log"
server_pid=$started

# The two names the page uses, first on PATH (a dash shell function
# cannot be called redis-cli), then the blocks as one script.
mkdir "$dir/bin"
abs_tool=$(cd "$(dirname "$tool")" && pwd)/$(basename "$tool")
printf '#!/bin/sh\nexec "%s" "$@"\n' "$abs_tool" >"$dir/bin/tslock"
printf '#!/bin/sh\nexec "%s" -s "%s" "$@"\n' "$cli" "$dir/redis.sock" \
    >"$dir/bin/redis-cli"
chmod +x "$dir/bin/tslock" "$dir/bin/redis-cli"
{
    echo 'set -e'
    awk '/^```sh$/ { on = 1; next } /^```/ { on = 0 } on' "$page"
} >"$dir/page.sh"
if [ "$(grep -c . "$dir/page.sh")" -le 1 ]; then
    echo "FAIL - no sh block found in $page"
    exit 1
fi
t "doc/dialects.md's sh blocks run" 0 env PATH="$dir/bin:$PATH" \
    REDIS_URL="unix://$dir/redis.sock" sh "$dir/page.sh"
shown=40
check "survey names the gem's key, expired" has "redis-lock-gem.*expired" "$out"
check "the command ran under the lock" has "report ran" "$out"
last_is() { [ "$(tail -n 1 "$out")" = "$1" ]; }
check "the release left no key" last_is 0

# tslock-dialects(7)'s examples: "preset<TAB>value", roff escapes undone;
# the row "(below)" takes the .nf line after ".\" example PRESET".
sed -n '/^\.\\" examples: begin/,/^\.\\" examples: end/p' "$man7" \
    | grep -v '^\.' | grep -v '^l l\.$' | sed 's/\\-/-/g' >"$dir/examples"
n_examples=0
while IFS='	' read -r preset value; do
    if [ "$value" = "(below)" ]; then
        value=$(sed -n "/^\.\\\\\" example $preset\$/{n;p;}" "$man7")
    fi
    [ -n "$value" ] || { value="(none found)"; }
    "$cli" -s "$dir/redis.sock" SET "example.$preset" "$value" >/dev/null
    n_examples=$((n_examples + 1))
done <"$dir/examples"
t "survey reads tslock-dialects(7)'s example values" 0 env \
    REDIS_URL="unix://$dir/redis.sock" "$tool" survey --json \
    --match 'example.*'
survey="$dir/survey"
cp "$out" "$survey"
names_preset() { # PRESET: its key's stamp_dialect lists it
    grep "\"key\":\"example\.$1\"" "$survey" \
        | grep -q "\"stamp_dialect\":\"\([^\"]*/\)\{0,1\}$1\(/[^\"]*\)\{0,1\}\""
}
check "tslock-dialects(7) has examples for every preset" \
    test "$n_examples" -eq "$("$tool" dialects | awk 'NR > 1' | wc -l)"
while IFS='	' read -r preset value; do
    check "survey names tslock-dialects(7)'s $preset example" \
        names_preset "$preset"
done <"$dir/examples"
finish

#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# test_quickstart.sh - quickstart.sh's two routes ask for what they need,
# and a tree configured in place is named, not broken.  apt-get, sudo and
# dpkg-query are stand-ins on PATH that record what would be installed,
# so nothing is installed and nothing is built.
set -u
src=$(cd "${top_srcdir:-.}" && pwd)
dir=$(mktemp -d "${TMPDIR:-/tmp}/tslock-qs.XXXXXX") || exit 99
trap 'rm -rf "$dir"' EXIT INT TERM
fail=0
ok() { echo "ok - $1"; }
bad() { echo "FAIL - $1"; fail=1; }

mkdir "$dir/bin"
# Every package missing; "install" records its list and stops the script.
printf '#!/bin/sh\nexit 1\n' >"$dir/bin/dpkg-query"
printf '#!/bin/sh\n[ "$1" = update ] && exit 0\nshift\necho "$@" >"%s/asked"\nexit 1\n' \
    "$dir" >"$dir/bin/apt-get"
printf '#!/bin/sh\nexec "$@"\n' >"$dir/bin/sudo"
chmod +x "$dir/bin/"*

# asked ROUTE: the packages the route asks apt-get for.
asked() {
    rm -rf "$dir/tree" "$dir/asked"
    mkdir "$dir/tree"
    cp "$src/quickstart.sh" "$dir/tree/"
    PATH="$dir/bin:$PATH" sh "$dir/tree/quickstart.sh" "$1" >"$dir/out" 2>&1
    cat "$dir/asked" 2>/dev/null
}

demo=$(asked demo)
for p in redis-server libhiredis-dev build-essential; do
    case " $demo " in
    *" $p "*) ok "demo asks for $p" ;;
    *) bad "demo does not ask for $p: $demo" ;;
    esac
done
for p in prometheus rpm lintian clang default-jdk-headless php-dev \
    chromium stress-ng abigail-tools ruby-dev libcunit1-dev; do
    case " $demo " in
    *" $p "*) bad "demo asks for $p, which only the tests need" ;;
    *) ok "demo does without $p" ;;
    esac
done
test_pkgs=$(asked test)
for p in $demo prometheus rpm lintian clang default-jdk-headless php-dev \
    chromium libcunit1-dev; do
    case " $test_pkgs " in
    *" $p "*) ;;
    *) bad "test does not ask for $p" ;;
    esac
done
ok "test asks for everything the demo does, and the suite's own"

# A tree configured in place: said at once, with what to do.
rm -rf "$dir/tree" "$dir/asked"
mkdir "$dir/tree"
cp "$src/quickstart.sh" "$dir/tree/"
: >"$dir/tree/config.status"
PATH="$dir/bin:$PATH" sh "$dir/tree/quickstart.sh" demo >"$dir/out" 2>&1
rc=$?
[ $rc -eq 1 ] && ok "an in-place configured tree exits 1" ||
    bad "an in-place configured tree exits $rc"
grep -q "make distclean" "$dir/out" && grep -q "configured in place" "$dir/out" &&
    ok "it says what to do" || { bad "it does not say what to do:"; cat "$dir/out"; }
[ ! -f "$dir/asked" ] && ok "before installing anything" ||
    bad "it installed first"
exit $fail

#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# php_pecl.sh - make check-php-pecl: "pecl package" writes the PECL
# tarball from bindings/php/package.xml in a temp copy, and the tarball,
# unpacked elsewhere, builds with phpize && ./configure && make against
# this tree's libtslock (--with-tslock=$top_builddir); the module it makes
# is loaded by php and reports its version.  Skipped (77) without pecl.
set -u
top_builddir=$(cd "${top_builddir:-.}" && pwd)
top_srcdir=$(cd "${top_srcdir:-.}" && pwd)
for tool in pecl phpize php; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        echo "php_pecl: no $tool (apt-get install php-pear php-dev)"
        exit 77
    fi
done
dir=$(mktemp -d "${TMPDIR:-/tmp}/tslock-pecl.XXXXXX") || exit 99
trap 'rm -rf "$dir"' EXIT
cp -R "$top_srcdir/bindings/php" "$dir/src" || exit 99
(cd "$dir/src" && pecl package package.xml) >"$dir/pecl.log" 2>&1 || {
    echo "FAIL - pecl package:"
    cat "$dir/pecl.log"
    exit 1
}
tgz=$(ls "$dir"/src/tslock-*.tgz)
echo "ok - pecl package wrote ${tgz##*/}"
mkdir "$dir/x" && tar -xzf "$tgz" -C "$dir/x" || exit 1
ext=$(ls -d "$dir"/x/tslock-*)
if ! (cd "$ext" && phpize && ./configure --with-tslock="$top_builddir" \
        CPPFLAGS="-I$top_srcdir/include" && make) >"$dir/build.log" 2>&1
then
    echo "FAIL - the tarball did not build:"
    tail -30 "$dir/build.log"
    exit 1
fi
got=$(LD_LIBRARY_PATH="$top_builddir/.libs" php -n \
    -d extension="$ext/modules/tslock.so" -r 'echo phpversion("tslock");')
want=$(sed -n 's/.*<release>\([0-9.]*\)<.*/\1/p' \
    "$top_srcdir/bindings/php/package.xml" | head -1)
if [ "$got" = "$want" ]; then
    echo "ok - the tarball builds with phpize and loads: tslock $got"
else
    echo "FAIL - the module built from the tarball reports '$got', not $want"
    exit 1
fi

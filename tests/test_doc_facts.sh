#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# test_doc_facts.sh - the facts the docs state that the build knows: the
# version (configure's, in every man page footer, tslock(1)'s -V example,
# include/tslock.h and the built tool's -V), the symbol version nodes
# (lib/libtslock.map, as doc/building.md lists them), the Debian packages and
# build dependencies (debian/control, as doc/building.md lists them), the RPM build
# dependencies (the spec, as doc/building.md's dnf line lists them), and no
# release number typed into a tarball or package name.  Each check runs
# on the tree, then on a copy with one stale fact planted, which must fail.
set -u
src="${top_srcdir:-.}"
build="${top_builddir:-.}"
tool="$build/tools/tslock"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tslock-facts.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT INT TERM

version=$(sed -n 's/^#define PACKAGE_VERSION "\(.*\)"$/\1/p' "$build/config.h")
[ -n "$version" ] || { echo "no PACKAGE_VERSION in $build/config.h"; exit 99; }
fail=0
bad() { echo "FAIL: $*"; fail=1; }

# check_tree DIR: every fact of DIR's README.md and doc/ against the build.
check_tree() {
    t=$1
    ok=0
    for page in "$t"/doc/man/*.[0-9]; do
        # A page that is only ".so other.3" has no footer of its own.
        grep -q '^\.TH ' "$page" || continue
        foot=$(sed -n '1,5s/^\.TH [^"]*"[^"]*" "tslock \([^"]*\)".*/\1/p' "$page")
        [ "$foot" = "$version" ] ||
            { echo "  $page: footer says tslock '$foot', configure $version"; ok=1; }
    done
    v=$(sed -n 's/^\\fBtslock \([0-9.]*\) (libtslock \([0-9.]*\),.*/\1 \2/p' \
        "$t/doc/man/tslock.1")
    [ "$v" = "$version $version" ] ||
        { echo "  tslock.1: -V example says '$v', configure $version"; ok=1; }
    nodes=$(sed -n 's/^\(TSLOCK_[0-9.]*\) {.*/\1/p' "$src/lib/libtslock.map" | tr '\n' ' ')
    b=$t/doc/building.md
    listed=$(sed -n '/^## The ABI/,/^## /p' "$b" | tr '\n' ' ' |
        sed -n 's/.*versioned by the *release that added it, \(.*\) *(`lib\/libtslock.map`.*/\1/p' |
        grep -o 'TSLOCK_[0-9.]*[0-9]' | tr '\n' ' ')
    [ "$listed" = "$nodes" ] ||
        { echo "  doc/building.md: symbol versions '$listed', the map has '$nodes'"; ok=1; }
    pkgs=$(sed -n 's/^Package: //p' "$src/debian/control" | tr '\n' ' ' |
        sed 's/ $//')
    rpkgs=$(sed -n '/^An operator builds the packages of/,/^```/p' "$b" |
        tr '\n' ' ' | sed -n 's/.*(the packages: \([^;]*\);.*/\1/p' |
        tr -d '`,' | tr -s ' ' | sed 's/^ //')
    [ "$rpkgs" = "$pkgs" ] ||
        { echo "  doc/building.md: packages '$rpkgs', debian/control has '$pkgs'"; ok=1; }
    apt=$(sed -n '/^apt-get install build-essential/,/redis-server$/p' "$b")
    for dep in $(sed -n '/^Build-Depends:/,/^[A-Z]/p' "$src/debian/control" |
        sed 's/^Build-Depends://; /^[A-Z]/d; s/([^)]*)//g' | tr ',' '\n' |
        sed 's/^ *//; s/ *$//; /^$/d'); do
        case $dep in
        debhelper-compat) dep=debhelper ;;
        dh-sequence-python3) dep=dh-python ;;
        esac
        echo "$apt" | grep -qw -- "$dep" ||
            { echo "  doc/building.md: apt-get line lacks $dep (debian/control)"; ok=1; }
    done
    dnf=$(grep '^dnf install rpm-build' "$b")
    for dep in $(sed -n 's/^BuildRequires: *\([^ ]*\).*/\1/p' \
        "$src/packaging/rpm/tslock.spec"); do
        case $dep in
        'pkgconfig(hiredis)') dep=hiredis-devel ;;
        'pkgconfig(cunit)') dep=CUnit-devel ;;
        esac
        echo "$dnf" | grep -qw -- "$dep" ||
            { echo "  doc/building.md: dnf line lacks $dep (the spec)"; ok=1; }
    done
    # "Added in": the release of the symbol version node each later
    # function is in (lib/libtslock.map), on that function's page.
    awk '/^TSLOCK_[0-9.]* {/ { n = $1 }
         /^ *tslock_[a-z_0-9]*;/ { gsub(/[ ;]/, ""); print $0, n }' \
        "$src/lib/libtslock.map" >"$tmp/nodes"
    while read -r fn node; do
        page=$t/doc/man/$fn.3
        [ -f "$page" ] || { echo "  $fn ($node) has no man page"; ok=1; continue; }
        so=$(sed -n 's/^\.so man3\///p' "$page")
        [ -z "$so" ] || page=$t/doc/man/$so
        rel=${node#TSLOCK_}.0
        avail=$(sed -n '/^\.SH AVAILABILITY/,/^\.SH/p' "$page" | tr '\n' ' ')
        case $avail in
        *"$rel "*"$node"*) ;;
        *) echo "  ${page##*/}: AVAILABILITY of $fn does not say $rel ($node):" \
            "$avail"; ok=1 ;;
        esac
    done <"$tmp/nodes"
    typed=$(grep -n 'tslock-[0-9][0-9.]*[0-9]\.tar\.gz\|}-[0-9][0-9.]*[0-9]-\*\.rpm' \
        "$t/README.md" "$t"/doc/*.md)
    [ -z "$typed" ] ||
        { echo "  a release number typed into a file name:"; echo "$typed"; ok=1; }
    return $ok
}

mkdir -p "$tmp/tree/doc/man"
cp "$src/README.md" "$tmp/tree/"
cp "$src"/doc/*.md "$tmp/tree/doc/"
cp "$src"/doc/man/*.[0-9] "$tmp/tree/doc/man/"
check_tree "$tmp/tree" || bad "the docs disagree with the build (above)"

# The built things themselves.
"$tool" -V | grep -q "^tslock $version (libtslock $version," ||
    bad "tslock -V: '$("$tool" -V)', configure $version"
grep -q "^#define TSLOCK_VERSION_STRING \"$version\"" "$src/include/tslock.h" ||
    bad "include/tslock.h's TSLOCK_VERSION_STRING is not $version"
grep -q "^  VERSION = \"$version\"$" "$src/bindings/ruby/lib/tslock.rb" ||
    bad "bindings/ruby/lib/tslock.rb's Tslock::VERSION (the gem's) is not $version"

# Each stale fact planted in a copy must fail the same check.
plant() { # FILE SED-EXPRESSION WHAT
    rm -rf "$tmp/p" && cp -r "$tmp/tree" "$tmp/p"
    sed -i "$2" "$tmp/p/$1"
    if cmp -s "$tmp/tree/$1" "$tmp/p/$1"; then
        bad "plant $3: sed changed nothing"
        return
    fi
    if check_tree "$tmp/p" >/dev/null; then
        bad "a planted $3 passed"
    else
        echo "ok: a planted $3 fails"
    fi
}
plant doc/man/tslock.7 '2s/"tslock [0-9.]*"/"tslock 1.0.0"/' "stale man page footer"
plant doc/man/tslock.1 's/^\\fBtslock [0-9.]* (libtslock/\\fBtslock 1.0.0 (libtslock/' "stale -V example"
plant doc/building.md 's/`TSLOCK_1.0`, `TSLOCK_1.1` and `TSLOCK_1.2`/`TSLOCK_1.0`/' "stale symbol version list"
plant doc/building.md 's/`python3-tslock`, //' "package missing from the package list"
plant doc/building.md 's/ libssl-dev//' "build dependency missing from apt-get"
plant doc/building.md 's/ openssl-devel//' "build dependency missing from dnf"
plant doc/building.md 's/tslock-\*\.tar\.gz/tslock-1.0.0.tar.gz/' "typed tarball version"
plant doc/man/tslock_value_name.3 's/Added in tslock 1.2.0/Added in tslock 1.1.0/' "stale \"Added in\" release"
exit $fail

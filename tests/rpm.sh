#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# rpm.sh - make rpm: libtslock, libtslock-devel and tslock built from the
# release tarball with rpmbuild and packaging/rpm/tslock.spec, in a private
# _topdir; checked by rpmlint (no errors; warnings are listed, and the
# filters of packaging/rpm/ say why each is there); what went into which
# package checked; then unpacked with rpm2cpio into a scratch root (this
# machine's rpm database is never touched) and used from there as make
# deb does (tests/harness.sh, use_installed).
#
#   rpm.sh TARBALL        (make rpm passes the one make dist wrote)
#
# Environment: top_srcdir, top_builddir, REDIS_SERVER; TSLOCK_RPM_SPEC,
# another spec to build (to see the checks fail on a broken one).
# Output in $top_builddir/rpm/: the topdir (RPMS/, SRPMS/), build.log,
# rpmlint.log.
set -u
tarball=$1
src=$(cd "${top_srcdir:-.}" && pwd)
build=$(cd "${top_builddir:-.}" && pwd)
out="$build/rpm"
spec=${TSLOCK_RPM_SPEC:-$src/packaging/rpm/tslock.spec}
lintrc="$src/packaging/rpm/tslock.rpmlintrc"
lintconf="$src/packaging/rpm/rpmlint-on-debian.toml"
. "$src/tests/harness.sh"
need_server

for tool in rpmbuild rpmlint rpm2cpio cpio; do
    if ! command -v $tool >/dev/null 2>&1; then
        echo "rpm: $tool not found (apt-get install rpm rpmlint cpio)"
        exit 1
    fi
done
# The spec is kept by hand, as Fedora's guidelines want it: its Version
# must be the tarball's.
version=$(sed -n 's/^Version: *//p' "$spec")
case $(basename "$tarball") in
"tslock-$version.tar.gz") ;;
*)
    echo "FAIL - $spec says Version: $version, the tarball is $tarball"
    exit 1
    ;;
esac
rm -rf "$out"
top="$out/topdir"
mkdir -p "$top/SOURCES" "$top/tmp" || exit 1
cp "$tarball" "$top/SOURCES/" || exit 1

# 1. Build, binary and source packages.  --nodeps: the BuildRequires
# (gcc, make, pkgconfig(hiredis), pkgconfig(cunit)) name Fedora and RHEL
# packages, which Debian's rpm database (empty: Debian installs with dpkg)
# does not know; configure finds Debian's own libhiredis-dev and CUnit.
# Debian's brp-compress is a /bin/sh script that uses bash's 'read -d'
# and so compresses nothing under dash: run it with bash, as Fedora's
# /bin/sh is, so the man pages are gzipped as there.
brp_compress='/bin/bash %{_rpmconfigdir}/brp-compress %{?_prefix}'
start=$(date +%s)
if ! rpmbuild --define "_topdir $top" --define "_tmppath $top/tmp" \
    --define "__brp_compress $brp_compress" \
    --nodeps -ba "$spec" >"$out/build.log" 2>&1; then
    echo "FAIL - rpmbuild -ba; last lines of $out/build.log:"
    tail -30 "$out/build.log" | sed 's/^/    /'
    exit 1
fi
echo "ok - rpmbuild --nodeps -ba in $(($(date +%s) - start)) s:"
status=0
rpmfile() { # NAME: the binary package NAME (not NAME-devel)
    ls "$top"/RPMS/*/"$1-$version"-*.rpm 2>/dev/null | head -1
}
for p in libtslock libtslock-devel tslock; do
    f=$(rpmfile $p)
    if [ -z "$f" ]; then
        echo "FAIL - no $p package"
        exit 1
    fi
    echo "    $(basename "$f")"
done
grep '^# \(TOTAL\|PASS\|SKIP\|FAIL\|ERROR\):' "$out/build.log" \
    | sed 's/^# /    %check: /'
if ! grep -q '^# FAIL: *0$' "$out/build.log" \
    || ! grep -q '^# ERROR: *0$' "$out/build.log"; then
    echo "FAIL - %check's summary not found or not clean in build.log"
    status=1
fi

# 2. rpmlint: no errors; its summary line and every warning are shown.
rpmlint -c "$lintconf" -r "$lintrc" \
    "$spec" "$top"/SRPMS/*.rpm "$top"/RPMS/*/*.rpm >"$out/rpmlint.log" 2>&1
lint=$?
summary=$(grep 'packages and .* specfiles checked' "$out/rpmlint.log" \
    | sed 's/^ *//')
if [ $lint -ne 0 ] || ! printf '%s\n' "$summary" | grep -q ' 0 errors'; then
    echo "FAIL - rpmlint (exit $lint): $summary"
    status=1
else
    echo "ok - rpmlint: $summary"
fi
grep ': [EW]: ' "$out/rpmlint.log" | sed 's/^/    /'

# 3. What went where, and what must not be there.
files() { rpm -qlp "$(rpmfile "$1")" 2>/dev/null; }
check_has() {
    if files "$1" | grep -q "$2"; then
        echo "ok - $1 has $2"
    else
        echo "FAIL - $1 lacks $2"
        status=1
    fi
}
check_has libtslock 'libtslock\.so\.1$'
check_has libtslock '/licenses/.*/COPYING$'
check_has libtslock-devel 'include/tslock\.h$'
check_has libtslock-devel 'libtslock\.so$'
check_has libtslock-devel 'pkgconfig/tslock\.pc$'
check_has libtslock-devel 'man3/tslock_acquire\.3'
check_has tslock 'bin/tslock$'
check_has tslock 'man1/tslock\.1'
check_has tslock 'man7/tslock\.7'
bad=$(for p in libtslock libtslock-devel tslock; do files $p; done \
    | grep '\.a$\|\.la$')
if [ -n "$bad" ]; then
    echo "FAIL - a static library or a .la file is packaged: $bad"
    status=1
else
    echo "ok - no static library, no .la file"
fi
if rpm -qp --requires "$(rpmfile libtslock-devel)" 2>/dev/null \
    | grep -q '^pkgconfig(hiredis)'; then
    echo "ok - libtslock-devel requires pkgconfig(hiredis)"
else
    echo "FAIL - libtslock-devel does not require pkgconfig(hiredis)"
    status=1
fi

# 4. Unpack into a scratch root and use it (tests/harness.sh).
root="$out/root"
mkdir -p "$root" || exit 1
for p in libtslock libtslock-devel tslock; do
    (cd "$root" && rpm2cpio "$(rpmfile $p)" | cpio -idm --quiet) || exit 1
done
use_installed "$root" "$out" || status=1
exit $status

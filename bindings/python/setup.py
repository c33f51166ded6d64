# SPDX-License-Identifier: BSD-3-Clause
"""Build the tslock module, two ways.

From a source distribution (python3 -m build --sdist in this directory
makes dist/tslock-VERSION.tar.gz): the sdist carries libtslock's own
sources under libtslock/ and builds them into the extension, against the
system hiredis found with pkg-config; no libtslock need be installed.

    pip install --no-build-isolation dist/tslock-1.2.0.tar.gz

From the source tree (no libtslock/ here): against an installed
libtslock, found with pkg-config (set PKG_CONFIG_PATH for a libtslock
under another prefix), as before.

    pip install --no-build-isolation bindings/python

The version has one home, TSLOCK_VERSION_STRING in include/tslock.h.  The
autotools build (./configure --enable-python) builds the same module
without this file.
"""
import os
import re
import shlex
import shutil
import subprocess
import sysconfig
import tempfile

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.command.sdist import sdist

HERE = os.path.dirname(os.path.abspath(__file__))
TREE = os.path.normpath(os.path.join(HERE, "..", ".."))
BUNDLE = os.path.join(HERE, "libtslock")
BUNDLED = os.path.isdir(BUNDLE)
# The library's four layers and its public header: what the sdist carries.
LAYERS = ("lib", "compat", "proto", "net")
MODULE_SOURCES = ["src/module.c", "src/client.c", "src/lock.c",
                  "src/sigint.c", "src/redlock.c"]


def version():
    """TSLOCK_VERSION_STRING of the header beside these sources; for
    bindings/python copied out of the tree, the installed libtslock's."""
    header = os.path.join(BUNDLE if BUNDLED else TREE, "include", "tslock.h")
    if not os.path.exists(header):
        return pkg_config("--modversion", "tslock",
                          hint="no include/tslock.h at %s, and no "
                               "installed libtslock" % header)[0]
    with open(header) as f:
        m = re.search(r'^#define TSLOCK_VERSION_STRING "([^"]+)"', f.read(),
                      re.M)
    if m is None:
        raise SystemExit("tslock: no TSLOCK_VERSION_STRING in %s" % header)
    return m.group(1)


def pkg_config(*args, hint):
    try:
        out = subprocess.run(["pkg-config"] + list(args), check=True,
                             capture_output=True, text=True).stdout
    except FileNotFoundError:
        raise SystemExit("tslock: pkg-config not found "
                         "(apt-get install pkg-config)")
    except subprocess.CalledProcessError as e:
        raise SystemExit("tslock: pkg-config %s failed: %s (%s)"
                         % (" ".join(args), e.stderr.strip(), hint))
    return shlex.split(out)


def _split(flags):
    """pkg-config flags as (include dirs, library dirs, libraries, other
    compile flags)."""
    return ([f[2:] for f in flags if f.startswith("-I")],
            [f[2:] for f in flags if f.startswith("-L")],
            [f[2:] for f in flags if f.startswith("-l")],
            [f for f in flags if f[:2] not in ("-I", "-L", "-l")])


def _links(cc, code, args):
    """Whether ``code`` compiles and links with ``args`` (a configure
    check, for the bundled build's config.h)."""
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "probe.c")
        with open(src, "w") as f:
            f.write(code)
        r = subprocess.run(cc + [src, "-o", os.path.join(d, "probe")] + args,
                           capture_output=True)
        return r.returncode == 0


def _openssl_flags():
    """OpenSSL's flags where pkg-config finds 1.1.1 or later (TLS, as
    ./configure --with-tls=auto decides), else None."""
    try:
        ok = subprocess.run(["pkg-config", "--atleast-version=1.1.1",
                             "openssl"], capture_output=True).returncode == 0
    except FileNotFoundError:
        ok = False
    if not ok:
        print("tslock: OpenSSL 1.1.1 or later not found: built without TLS "
              "(rediss://); apt-get install libssl-dev for it")
        return None
    return pkg_config("--cflags", "--libs", "openssl",
                      hint="apt-get install libssl-dev")


def _config_h(path, hiredis_version, hiredis_args, tls=False):
    """What ./configure would define for libtslock's sources (the same
    checks: headers, functions, and what hiredis has after 0.11; TLS
    where OpenSSL was found)."""
    cc = shlex.split(os.environ.get("CC")
                     or sysconfig.get_config_var("CC") or "cc")
    main = "int main(void) { return 0; }\n"
    defs = {"PACKAGE_VERSION": '"%s"' % version(),
            "TSLOCK_HIREDIS_VERSION": '"%s"' % hiredis_version}
    for name, header in (("HAVE_SYS_RANDOM_H", "sys/random.h"),
                         ("HAVE_STDATOMIC_H", "stdatomic.h")):
        if _links(cc, "#include <%s>\n%s" % (header, main), []):
            defs[name] = "1"
    for func, args in (("getrandom", []), ("pipe2", []),
                       ("redisReconnect", hiredis_args),
                       ("redisFreeCommand", hiredis_args),
                       ("redisConnectFd", hiredis_args)):
        code = "char %s(void);\nint main(void) { return %s(); }\n" % (
            func, func)
        if _links(cc, code, args):
            defs["HAVE_" + func.upper()] = "1"
    if tuple(int(p) for p in hiredis_version.split(".")[:2]) < (0, 12):
        defs["TSLOCK_HIREDIS_FREE_NEEDS_NONNULL"] = "1"
    if tls:
        defs["TSLOCK_HAVE_TLS"] = "1"
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write("/* Written by bindings/python/setup.py. */\n")
        for name in sorted(defs):
            f.write("#define %s %s\n" % (name, defs[name]))


class BuildExt(build_ext):
    """Finds the libraries when the extension is built (not when the
    sdist is made): the bundled libtslock with the system hiredis, or an
    installed libtslock."""

    def build_extensions(self):
        ext = self.extensions[0]
        if BUNDLED:
            self._bundled(ext)
        else:
            self._installed(ext)
        super().build_extensions()

    def _installed(self, ext):
        flags = pkg_config("--cflags", "--libs", "tslock", "hiredis",
                           hint="is libtslock installed, and PKG_CONFIG_PATH "
                                "set for its prefix? Or install the sdist, "
                                "which builds libtslock itself")
        incs, libdirs, libs, other = _split(flags)
        ext.include_dirs += incs
        ext.library_dirs += libdirs
        ext.libraries += libs
        ext.extra_compile_args += other
        # A libtslock outside the loader's path is found where it was.
        ext.runtime_library_dirs += [d for d in libdirs
                                     if d not in ("/usr/lib", "/lib")]

    def _bundled(self, ext):
        hint = "the sdist builds libtslock against hiredis 0.11 or later: " \
               "apt-get install libhiredis-dev pkg-config"
        hv = pkg_config("--modversion", "hiredis", hint=hint)[0]
        if tuple(int(p) for p in re.findall(r"\d+", hv)[:2]) < (0, 11):
            raise SystemExit("tslock: hiredis %s is too old (%s)" % (hv, hint))
        flags = pkg_config("--cflags", "--libs", "hiredis", hint=hint)
        tls = _openssl_flags()
        conf = os.path.join(self.build_temp, "libtslock-config")
        _config_h(os.path.join(conf, "config.h"), hv, flags, tls is not None)
        incs, libdirs, libs, other = _split(flags + (tls or []))
        ext.include_dirs += [conf] + [os.path.join("libtslock", d)
                                      for d in ("include",) + LAYERS] + incs
        ext.library_dirs += libdirs
        ext.libraries += libs + ["pthread"]
        ext.runtime_library_dirs += [d for d in libdirs
                                     if d not in ("/usr/lib", "/lib")]
        # libtslock's functions stay inside the extension (no
        # TSLOCK_BUILDING: nothing is exported but PyInit__tslock), so a
        # libtslock.so loaded by another module in the process never meets
        # this copy.
        ext.define_macros += [("_GNU_SOURCE", None)]
        ext.extra_compile_args += other + ["-fvisibility=hidden", "-pthread"]


class Sdist(sdist):
    """The sdist carries libtslock's sources (libtslock/include and the
    four layers) and the license, COPYING."""

    def make_release_tree(self, base_dir, files):
        super().make_release_tree(base_dir, files)
        src = BUNDLE if BUNDLED else TREE
        for d in ("include",) + LAYERS:
            shutil.copytree(os.path.join(src, d),
                            os.path.join(base_dir, "libtslock", d),
                            ignore=lambda _, names: [
                                n for n in names
                                if not n.endswith((".c", ".h", ".map",
                                                   ".md"))])
        copying = os.path.join(HERE if BUNDLED else TREE, "COPYING")
        dest = os.path.join(base_dir, "COPYING")
        if not os.path.exists(dest):
            shutil.copyfile(copying, dest)


def _bundled_sources():
    if not BUNDLED:
        return []
    return sorted(os.path.join("libtslock", d, n)
                  for d in LAYERS
                  for n in os.listdir(os.path.join(BUNDLE, d))
                  if n.endswith(".c"))


setup(
    name="tslock",
    version=version(),
    description="Mutual exclusion over Redis in every lock dialect, "
                "shaped like redis-py's Lock (libtslock bindings)",
    license="BSD-3-Clause",
    license_files=["COPYING"] if os.path.exists(
        os.path.join(HERE, "COPYING")) else [],
    classifiers=["License :: OSI Approved :: BSD License",
                 "Programming Language :: Python :: 3",
                 "Programming Language :: C"],
    packages=["tslock"],
    ext_modules=[Extension(
        "tslock._tslock",
        sources=MODULE_SOURCES + _bundled_sources(),
        depends=["src/pytslock.h"],
    )],
    cmdclass={"build_ext": BuildExt, "sdist": Sdist},
    python_requires=">=3.7",
)

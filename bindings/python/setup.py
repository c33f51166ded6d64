# SPDX-License-Identifier: BSD-3-Clause
"""Build the tslock module against an installed libtslock.

    pip install --no-build-isolation bindings/python

libtslock and hiredis are found with pkg-config (set PKG_CONFIG_PATH for
a libtslock under another prefix).  The autotools build
(./configure --enable-python) builds the same module without this file.
"""
import shlex
import subprocess

from setuptools import Extension, setup


def pkg_config(*args):
    try:
        out = subprocess.run(["pkg-config"] + list(args), check=True,
                             capture_output=True, text=True).stdout
    except FileNotFoundError:
        raise SystemExit("tslock: pkg-config not found "
                         "(apt-get install pkg-config)")
    except subprocess.CalledProcessError as e:
        raise SystemExit("tslock: pkg-config %s failed: %s (is libtslock "
                         "installed, and PKG_CONFIG_PATH set for its prefix?)"
                         % (" ".join(args), e.stderr.strip()))
    return shlex.split(out)


cflags = pkg_config("--cflags", "tslock", "hiredis")
libs = pkg_config("--libs", "tslock", "hiredis")
libdirs = [f[2:] for f in libs if f.startswith("-L")]

setup(
    name="tslock",
    version=pkg_config("--modversion", "tslock")[0],
    description="Mutual exclusion over Redis in every lock dialect, "
                "shaped like redis-py's Lock (libtslock bindings)",
    license="BSD-3-Clause",
    classifiers=["License :: OSI Approved :: BSD License"],
    packages=["tslock"],
    ext_modules=[Extension(
        "tslock._tslock",
        sources=["src/module.c", "src/client.c", "src/lock.c",
                 "src/sigint.c", "src/redlock.c"],
        depends=["src/pytslock.h"],
        include_dirs=[f[2:] for f in cflags if f.startswith("-I")],
        extra_compile_args=[f for f in cflags if not f.startswith("-I")],
        library_dirs=libdirs,
        libraries=[f[2:] for f in libs if f.startswith("-l")],
        # A libtslock outside the loader's path is found where it was.
        runtime_library_dirs=[d for d in libdirs
                              if d not in ("/usr/lib", "/lib")],
    )],
    python_requires=">=3.7",
)

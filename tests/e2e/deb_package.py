"""The Debian package, built and read back without installing it (a test
must not touch this machine's /usr: tests/deb/check-deb.sh installs and
purges it on a fresh Debian): cpack's DEB generator into a temporary folder
from this build, then dpkg-deb -I / -c / -e: the file name, Depends (the
shared libraries dpkg-shlibdeps finds for the binary, plus python3; not
Open MPI), Recommends (Open MPI), the files (binary, hook, CRC32C, MPI
plugin when built, man page, completion, copyright) and the maintainer
scripts (postinst byte-compiles the hook, prerm removes what that wrote).

Run: /usr/bin/python3 deb_package.py PATH_TO_STALLSCOPE (in its build folder)
"""

import os
import re
import shutil
import subprocess
import tempfile
import unittest

import e2e_common as e2e


def dpkg_deb(*args):
    return subprocess.run(["dpkg-deb"] + list(args), capture_output=True, text=True,
                          check=True).stdout


class DebPackage(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if shutil.which("dpkg-shlibdeps") is None:
            raise unittest.SkipTest("dpkg-shlibdeps is missing (apt install dpkg-dev)")
        cls.build = os.path.dirname(e2e.BINARY)
        cls.tmp = tempfile.mkdtemp(prefix="stallscope-e2e-deb-")
        proc = subprocess.run(["cpack", "--config", os.path.join(cls.build, "CPackConfig.cmake"),
                               "-G", "DEB", "-B", cls.tmp], capture_output=True, text=True,
                              timeout=240)
        if proc.returncode != 0:
            shutil.rmtree(cls.tmp, ignore_errors=True)
            raise AssertionError("cpack failed:\n" + proc.stdout + proc.stderr)
        rc, version, _, _ = e2e.run(["--version"])
        cls.version = version.split()[1]
        cls.deb = os.path.join(cls.tmp, "stallscope_%s_amd64.deb" % cls.version)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def field(self, name):
        return dpkg_deb("-f", self.deb, name).strip()

    def test_name_and_control(self):
        self.assertTrue(os.path.isfile(self.deb), os.listdir(self.tmp))
        self.assertEqual(self.field("Package"), "stallscope")
        self.assertEqual(self.field("Version"), self.version)
        self.assertEqual(self.field("Architecture"), "amd64")
        depends = [d.strip().split(" ")[0] for d in self.field("Depends").split(",")]
        # What the binary links, as ldd names it: each library's package is there.
        ldd = subprocess.run(["ldd", e2e.BINARY], capture_output=True, text=True).stdout
        for lib, package in [("libsqlite3", "libsqlite3-0"), ("liburing", "liburing2"),
                             ("libarchive", "libarchive13"), ("libc.so", "libc6")]:
            if lib in ldd:
                self.assertIn(package, depends)
        # Opened on first use (dlopen), so named by hand, not found by ldd.
        self.assertIn("libarchive13", depends)
        self.assertIn("libmicrohttpd12", depends)
        # hwloc too, but the topology is read from sysfs without it.
        self.assertNotIn("libhwloc15", depends)
        self.assertIn("libhwloc15", self.field("Recommends"))
        # Linked in (static archives, libstdc++): ldd does not list them, and
        # the package does not depend on them.
        for lib, package in [("libsqlite3", "libsqlite3-0"), ("libfmt", "libfmt9"),
                             ("libstdc++", "libstdc++6")]:
            if lib not in ldd:
                self.assertNotIn(package, depends)
        self.assertIn("python3", depends)
        self.assertFalse([d for d in depends if "mpi" in d], depends)
        self.assertIn("openmpi-bin", self.field("Recommends"))

    def test_files(self):
        listing = dpkg_deb("-c", self.deb)
        files = set(re.findall(r"\./(\S+)$", listing, re.M))
        wanted = {"usr/bin/stallscope", "usr/lib/stallscope/python/stallscope/__init__.py",
                  "usr/lib/stallscope/libstallscope_crc32c.so",
                  "usr/share/man/man1/stallscope.1.gz",
                  "usr/share/bash-completion/completions/stallscope",
                  "usr/share/doc/stallscope/copyright", "usr/share/doc/stallscope/README.md",
                  "usr/share/doc/stallscope/docs/install.md",
                  "usr/share/stallscope/slurm/prolog", "usr/share/stallscope/slurm/epilog",
                  "usr/share/stallscope/slurm/task-prolog"}
        if os.path.isfile(os.path.join(self.build, "libstallscope_mpi.so")):
            wanted.add("usr/lib/stallscope/libstallscope_mpi.so")
        self.assertEqual(wanted - files, set())
        self.assertFalse([f for f in files if "__pycache__" in f or f.endswith(".pyc")])
        self.assertFalse([f for f in files if not f.startswith("usr/")], "only under /usr")
        # Stripped: no symbol table left in the packaged binary.
        extract = os.path.join(self.tmp, "root")
        dpkg_deb("-x", self.deb, extract)
        nm = subprocess.run(["nm", os.path.join(extract, "usr/bin/stallscope")],
                            capture_output=True, text=True)
        self.assertIn("no symbols", nm.stderr)
        # Slurm's scripts (docs/slurm.md) are executable as installed.
        for name in ["prolog", "epilog", "task-prolog"]:
            path = os.path.join(extract, "usr/share/stallscope/slurm", name)
            self.assertTrue(os.access(path, os.X_OK), path)

    def test_maintainer_scripts(self):
        control = os.path.join(self.tmp, "control")
        dpkg_deb("-e", self.deb, control)
        for name in ["postinst", "prerm"]:
            path = os.path.join(control, name)
            self.assertTrue(os.access(path, os.X_OK), name)
            subprocess.run(["sh", "-n", path], check=True)
        with open(os.path.join(control, "postinst")) as f:
            self.assertIn("compileall -q /usr/lib/stallscope/python/stallscope", f.read())
        with open(os.path.join(control, "prerm")) as f:
            self.assertIn("rm -rf /usr/lib/stallscope/python/stallscope/__pycache__", f.read())


if __name__ == "__main__":
    e2e.main()

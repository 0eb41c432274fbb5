"""`cmake --install` into a temporary prefix, the prefix moved, and a real
PyTorch job (examples/train_cpu.py, Debian's python3-torch) under the moved
binary's `run`: the hook the job imports is the moved prefix's (not the
checkout's), its steps are in the run file, and `hook-env` names the moved
files. Also what the install lays out: bin, lib/stallscope (hook, CRC32C,
MPI plugin when built), the man page and the bash completion the binary
writes (the same as its `help --man-page` / `--bash-completion`), the docs
and the licence.

Run: /usr/bin/python3 install_prefix.py PATH_TO_STALLSCOPE (in its build folder)
"""

import gzip
import os
import re
import shutil
import sqlite3
import subprocess
import tempfile
import unittest

import e2e_common as e2e

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLE = os.path.join(REPO, "examples", "train_cpu.py")
PYTHON = "/usr/bin/python3"
EPOCHS = 2
STEPS_PER_EPOCH = 4


def have_torch():
    return e2e.have_torch(PYTHON, "torch")


class MovedPrefix(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="stallscope-e2e-install-")
        build = os.path.dirname(e2e.BINARY)
        first = os.path.join(cls.tmp, "first")
        proc = subprocess.run(["cmake", "--install", build, "--prefix", first],
                              capture_output=True, text=True, timeout=120)
        if proc.returncode != 0:
            raise AssertionError("cmake --install failed:\n" + proc.stdout + proc.stderr)
        cls.prefix = os.path.join(cls.tmp, "moved", "elsewhere")
        os.makedirs(os.path.dirname(cls.prefix))
        shutil.move(first, cls.prefix)
        cls.binary = os.path.join(cls.prefix, "bin", "stallscope")
        cls.lib = os.path.join(cls.prefix, "lib", "stallscope")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def stallscope(self, *args, timeout=60):
        proc = subprocess.run([self.binary] + list(args), capture_output=True, text=True,
                              timeout=timeout, env=dict(os.environ, PYTHONPATH=""))
        return proc.returncode, proc.stdout, proc.stderr

    def test_layout(self):
        for rel in ["bin/stallscope", "lib/stallscope/python/stallscope/__init__.py",
                    "lib/stallscope/python/stallscope/data.py",
                    "lib/stallscope/libstallscope_crc32c.so",
                    "share/man/man1/stallscope.1.gz",
                    "share/bash-completion/completions/stallscope",
                    "share/doc/stallscope/README.md", "share/doc/stallscope/LICENSE",
                    "share/doc/stallscope/copyright",
                    "share/doc/stallscope/docs/install.md",
                    "share/doc/stallscope/docs/commands/hook-env.md"]:
            self.assertTrue(os.path.isfile(os.path.join(self.prefix, rel)), rel)
        built_plugin = os.path.join(os.path.dirname(e2e.BINARY), "libstallscope_mpi.so")
        self.assertEqual(os.path.isfile(os.path.join(self.lib, "libstallscope_mpi.so")),
                         os.path.isfile(built_plugin), "the MPI plugin is installed when built")
        # Slurm's scripts, executable, find the binary beside them: the task
        # prolog prints the installed hook's folder.
        for name in ["prolog", "epilog", "task-prolog"]:
            path = os.path.join(self.prefix, "share/stallscope/slurm", name)
            self.assertTrue(os.access(path, os.X_OK), path)
        proc = subprocess.run([os.path.join(self.prefix, "share/stallscope/slurm/task-prolog")],
                              capture_output=True, text=True, timeout=60,
                              env={"PATH": "/usr/bin:/bin", "SLURM_JOB_ID": "1",
                                   "PYTHONPATH": "/site"})
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn("export PYTHONPATH=%s:/site" % os.path.join(self.lib, "python"),
                      proc.stdout.splitlines())
        # No test files or byte code of the checkout.
        hook = sorted(os.listdir(os.path.join(self.lib, "python", "stallscope")))
        self.assertTrue(all(name.endswith(".py") for name in hook), hook)

    def test_man_page_and_completion_are_the_binarys(self):
        rc, man, err = self.stallscope("help", "--man-page")
        self.assertEqual(rc, 0, err)
        with gzip.open(os.path.join(self.prefix, "share/man/man1/stallscope.1.gz"), "rt") as f:
            self.assertEqual(f.read(), man)
        for words in ["bench io", "bench allreduce", "hook-env", "plan memory"]:
            self.assertIn('.SS "stallscope %s"' % words.replace("-", "\\-"), man)
        rc, completion, err = self.stallscope("help", "--bash-completion")
        self.assertEqual(rc, 0, err)
        with open(os.path.join(self.prefix, "share/bash-completion/completions/stallscope")) as f:
            self.assertEqual(f.read(), completion)

    def test_hook_env_names_the_moved_files(self):
        rc, out, err = self.stallscope("hook-env", "--hook-socket", "/tmp/x/hook.sock")
        self.assertEqual(rc, 0, err)
        env = dict(line.split("=", 1) for line in out.splitlines())
        self.assertEqual(env, {
            "PYTHONPATH": os.path.join(self.lib, "python"),
            "STALLSCOPE_SOCKET": "/tmp/x/hook.sock",
            "STALLSCOPE_CRC32C": os.path.join(self.lib, "libstallscope_crc32c.so")})

    def test_moved_binary_records_a_pytorch_job(self):
        if not have_torch():
            self.skipTest("%s cannot import torch (apt install python3-torch)" % PYTHON)
        data = os.path.join(self.tmp, "images")
        # The job prints which hook it imported, then trains.
        job = os.path.join(self.tmp, "job.py")
        with open(job, "w") as f:
            f.write("import runpy, sys\nimport stallscope, stallscope.crc32c\n"
                    "sys.stderr.write('hook at %%s\\n' %% stallscope.__file__)\n"
                    "sys.stderr.write('crc32c %%s\\n' %% stallscope.crc32c.IMPLEMENTATION)\n"
                    "sys.argv[0] = %r\nrunpy.run_path(%r, run_name='__main__')\n"
                    % (EXAMPLE, EXAMPLE))
        db = os.path.join(self.tmp, "run.db")
        rc, out, err = self.stallscope(
            "run", "--out", db, "--interval", "0.5", "--", PYTHON, job, "--data", data,
            "--make-images", "256", "--epochs", str(EPOCHS),
            "--steps-per-epoch", str(STEPS_PER_EPOCH), timeout=180)
        self.assertEqual(rc, 0, err[-3000:])
        hook = re.search(r"(?m)^hook at (\S+)$", err)
        self.assertIsNotNone(hook, err[-3000:])
        self.assertTrue(hook.group(1).startswith(os.path.join(self.lib, "python") + os.sep),
                        "the job imported %s, not the moved prefix's hook" % hook.group(1))
        self.assertNotIn("no Python hook", err)
        # The moved CRC32C library, loaded (not the build tree's).
        self.assertRegex(err, r"(?m)^crc32c native .*%s$" %
                         re.escape(os.path.join(self.lib, "libstallscope_crc32c.so")))
        with sqlite3.connect(db) as con:
            steps = con.execute("select count(*) from steps").fetchone()[0]
        self.assertEqual(steps, EPOCHS * STEPS_PER_EPOCH, "every step the hook timed")


if __name__ == "__main__":
    e2e.main()

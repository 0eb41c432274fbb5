"""`run`, `pack` and `diff` on a real network file system: a real PyTorch
job (tests/e2e/jobs/io_stories.py, a DataLoader with two workers) reads 2,000
small files from an sshfs mount behind a 1 ms relay (remote_fs_common.py).

- The run of the job on the mount gives one io.input_bound whose cause is
  io.remote_fs: the loader's files are on the fuse.sshfs mount, the per-file
  cost the steps show is in its evidence, and `next` is the
  `stallscope pack` command with the gain expected.
- `stallscope pack` copies the mount's files into shards on a local disk; the
  same job reading the shards is recorded too, and `diff` of the two runs
  says the steps wait less for data, with the input moved off the remote
  file system. Only directions are asserted, never times.

Needs root, FUSE, sshfs, openssh-server and python3-torch; skips without
them (fails under CI=true).

Usage: remote_fs_run.py PATH_TO_STALLSCOPE
"""

import os
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_common as e2e  # noqa: E402
import remote_fs_common  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
JOB = os.path.join(ROOT, "tests", "e2e", "jobs", "io_stories.py")
FILES = 2000
ENV = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
JOB_ARGS = ["--epochs", "1", "--batch-size", "16", "--step-ms", "5"]


def have_torch():
    return subprocess.run(["/usr/bin/python3", "-c", "import torch"],
                          capture_output=True).returncode == 0


class RemoteFsRun(unittest.TestCase):
    def setUp(self):
        if not have_torch():
            e2e.skip_or_fail("python3-torch is not installed")
        self.tmp = tempfile.mkdtemp(prefix="stallscope-rfs-run-")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def record(self, name, job_args):
        out = os.path.join(self.tmp, name + ".db")
        rc, stdout, err, _ = e2e.run(
            ["run", "--interval", "0.25", "--out", out, "--json", "--",
             "/usr/bin/python3", JOB] + JOB_ARGS + job_args, env=ENV, timeout=180)
        self.assertEqual(rc, 0, err[-3000:])
        import json
        return out, json.loads(stdout)

    def test_run_names_the_mount_and_pack_shows_the_gain(self):
        with remote_fs_common.RemoteFs(self, delay_ms=1) as fs:
            made = subprocess.run(["/usr/bin/python3", JOB, "--make-dir",
                                   os.path.join(fs.export, "imgs"), str(FILES)],
                                  env=ENV, capture_output=True, timeout=120)
            self.assertEqual(made.returncode, 0, made.stderr.decode()[-2000:])
            data = os.path.join(fs.mount, "imgs")
            remote_db, report = self.record("remote", ["--dir", data])

            bound = e2e.finding(report, "io.input_bound")
            self.assertIsNotNone(bound, [f["id"] for f in report["findings"]])
            evidence = bound["evidence"]
            self.assertEqual(evidence["cause"], "io.remote_fs")
            self.assertEqual(evidence["data_fs_type"], "fuse.sshfs")
            self.assertTrue(evidence["data_path"].startswith(fs.mount), evidence)
            self.assertGreater(evidence["per_file_ms"], 0)
            self.assertIn("stallscope pack", bound["next"])
            self.assertIn("expected gain", bound["next"])
            # One finding: the cause is inside io.input_bound.
            self.assertIsNone(e2e.finding(report, "io.remote_fs"))
            # The report names the mount as where the loader's files are.
            rc, text, err, _ = e2e.run(["report", remote_db])
            self.assertEqual(rc, 0, err[-2000:])
            self.assertIn("on a network file system, fuse.sshfs", text)

            shards = os.path.join(self.tmp, "shards")
            rc, _, err, _ = e2e.run(["pack", data, shards, "--format", "wds"], timeout=180)
            self.assertEqual(rc, 0, err[-2000:])
        local_db, _ = self.record("packed", ["--shards", shards])

        d = e2e.run_json(self, ["diff", remote_db, local_db, "--json"])
        self.assertLess(d["slowdown"], 1.0, d)  # the packed run's steps are faster
        wait = [c for c in d["changes"] if c["what"] == "data_wait"]
        self.assertEqual(len(wait), 1, d["changes"])
        self.assertLess(wait[0]["b"], wait[0]["a"])
        listed = {c["what"]: c for c in d["changes"]}
        self.assertIn("input.remote", listed, d["changes"])
        self.assertTrue(listed["input.remote"]["a"])
        self.assertFalse(listed["input.remote"]["b"])


if __name__ == "__main__":
    e2e.main()

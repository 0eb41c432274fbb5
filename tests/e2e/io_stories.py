"""Known slow-input cases replayed on real PyTorch jobs under `stallscope run`
(tests/e2e/jobs/io_stories.py, Debian's python3-torch), each given the
diagnosis its known cause calls for:

- a DataLoader whose 2 workers decompress a bzip2 zip on every read, disk
  idle, on a quiet host (the CPU, not the disk, is short): io.input_bound
  and io.cpu_bound_loader, naming the zip and saying to unpack it;
- a dataset on a loop device throttled with blkio (cgroup v1
  blkio.throttle.read_bps_device, v2 io.max rbps=), its files' cache dropped
  with posix_fadvise(DONTNEED), several epochs (only the first reads the
  device): io.cold_cache naming epoch 0 and the loop device, the epoch-0
  waits lowered to info;
- a job whose workers keep up on a quiet host, beside a separate CPU hog:
  io.cpu_contention naming the hog, and no loader finding;
- a folder of 10,000 small files read by 2 workers: the folder is named as
  what the loader read.

These judge who holds the host's CPUs, so ctest runs them alone
(RUN_SERIAL). Everything made here (files, the loop device and its mount,
the cgroup, the hog) is removed when the test ends, pass or fail. The loop
and cgroup test needs root and skips with a message without it (fails
under CI=true).

Run: /usr/bin/python3 io_stories.py PATH_TO_STALLSCOPE
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

import e2e_common as e2e

HERE = os.path.dirname(os.path.abspath(__file__))
JOB = os.path.join(HERE, "jobs", "io_stories.py")
REPO = os.path.dirname(os.path.dirname(HERE))
PYTHON = "/usr/bin/python3"
TMP = None


def setUpModule():
    global TMP
    TMP = tempfile.mkdtemp(prefix="stallscope-e2e-io-")


def tearDownModule():
    shutil.rmtree(TMP, ignore_errors=True)


def have_torch():
    return e2e.have_torch(PYTHON, "torch")


skip_or_fail = e2e.skip_or_fail


def make(*args):
    env = dict(os.environ, PYTHONPATH=os.path.join(REPO, "python"))
    proc = subprocess.run([PYTHON, JOB] + list(args), capture_output=True, env=env, timeout=300)
    if proc.returncode != 0:
        raise AssertionError("making the data failed: %s" % proc.stderr.decode()[-2000:])


def summary(report):
    return "verdict %s; findings:\n%s\ninputs: %s" % (
        json.dumps(report.get("verdict")),
        "\n".join("  %s %s: %s\n      next: %s" % (f["id"], f["severity"], f["summary"], f["next"])
                  for f in report.get("findings", [])) or "  (none)",
        json.dumps(report.get("inputs")))


def findings(report, finding_id):
    return [f for f in report["findings"] if f["id"] == finding_id]


class IoStories(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not have_torch():
            skip_or_fail("%s cannot import torch (apt install python3-torch)" % PYTHON)

    def run_job(self, name, job_args, preexec=None, timeout=240):
        db = os.path.join(TMP, name + ".db")
        args = ["run", "--json", "--interval", "0.5", "--out", db, "--", PYTHON, JOB] + job_args
        rc, out, err, seconds = e2e.run(args, timeout=timeout, preexec=preexec)
        self.assertEqual(rc, 0, "the %s job exited %d; stderr:\n%s" % (name, rc, err[-3000:]))
        report = json.loads(out)
        e2e.check_report(self, report)
        sys.stderr.write("\n  %s: %.1f s, %s\n" % (name, seconds, report["verdict"]))
        # `report` on the file says the same.
        again = e2e.run_json(self, ["report", db, "--json"])
        self.assertEqual([(f["id"], f["severity"]) for f in again["findings"]],
                         [(f["id"], f["severity"]) for f in report["findings"]])
        self.assertEqual(again["inputs"], report["inputs"])
        return report

    def test_zip_decompressed_by_the_workers(self):
        archive = os.path.join(TMP, "train.zip")
        make("--make-zip", archive, "120")
        report = self.run_job("zip", ["--zip", archive, "--epochs", "20", "--decode-ms", "4"])
        text = summary(report)
        self.assertEqual(report["inputs"][0]["path"], archive, text)
        self.assertEqual(report["inputs"][0]["kind"], "archive", text)
        self.assertEqual(report["inputs"][0]["format"], "zip", text)
        self.assertEqual(report["inputs"][0]["method"], "bzip2", text)
        self.assertEqual(report["inputs"][0]["role"], "worker", text)
        bound = findings(report, "io.input_bound")
        self.assertTrue(bound, text)
        self.assertIn(bound[0]["severity"], ("warning", "critical"), text)
        loader = findings(report, "io.cpu_bound_loader")
        self.assertEqual(len(loader), 1, text)
        f = loader[0]
        self.assertIn(f["severity"], ("warning", "critical"), text)
        self.assertEqual(f["evidence"]["input"], archive, text)
        self.assertEqual(f["evidence"]["input_format"], "zip", text)
        self.assertIs(f["evidence"]["input_compressed"], True, text)
        # The workers are on a CPU or waiting for one nearly all the time.
        self.assertGreaterEqual(f["evidence"]["worker_cpu_percent"] +
                                f["evidence"]["worker_run_delay_percent"], 80, text)
        self.assertIn("unzip -q %s" % archive, f["next"], text)
        self.assertIn("stallscope pack", f["next"], text)
        self.assertEqual(findings(report, "io.cpu_contention"), [], text)
        for g in report["findings"]:
            self.assertNotIn("DATA_DIR", g["next"], g["id"])

    def test_small_files_are_named_by_their_folder(self):
        folder = os.path.join(TMP, "small")
        make("--make-dir", folder, "10000", "--file-kib", "2")
        report = self.run_job("small-files", ["--dir", folder, "--epochs", "2", "--decode-ms", "1",
                                              "--batch-size", "32", "--shuffle"])
        text = summary(report)
        top = report["inputs"][0]
        self.assertEqual(top["kind"], "directory", text)
        self.assertEqual(top["path"], folder, text)
        self.assertEqual(top["role"], "worker", text)
        self.assertGreaterEqual(top["files"], 5, text)
        self.assertLessEqual(top["files"], 10000, text)

    def test_cpu_hog_beside_the_job_is_contention_not_the_loader(self):
        folder = os.path.join(TMP, "hogged")
        make("--make-dir", folder, "1000", "--file-kib", "4")
        # The hog: busy shells named cpuhog, outside stallscope's tree, one
        # more than the host has CPUs (3 here), so that they hold most of
        # them on any host.
        hog = os.path.join(TMP, "cpuhog")
        os.symlink("/bin/sh", hog)
        hogs = [subprocess.Popen([hog, "-c", "while :; do :; done"])
                for _ in range((os.cpu_count() or 2) + 1)]
        for p in hogs:
            self.addCleanup(e2e.stop, p)
        report = self.run_job("contention", ["--dir", folder, "--epochs", "3", "--decode-ms", "3",
                                             "--step-ms", "40"])
        text = summary(report)
        found = findings(report, "io.cpu_contention")
        self.assertEqual(len(found), 1, text)
        f = found[0]
        self.assertIn(f["severity"], ("warning", "critical"), text)
        self.assertIn("cpuhog", f["evidence"]["top_processes"], text)
        self.assertGreaterEqual(f["evidence"]["outside_cpu_share"], 0.25, text)
        self.assertIn("cpuhog", f["summary"], text)
        pids = [str(p.pid) for p in hogs]
        self.assertTrue(any(pid in f["next"] for pid in pids), text)
        self.assertEqual(findings(report, "io.cpu_bound_loader"), [], text)


class ColdCache(unittest.TestCase):
    """A dataset on a throttled loop device, its cache dropped."""

    READ_BPS = 6 << 20

    @classmethod
    def setUpClass(cls):
        if not have_torch():
            skip_or_fail("%s cannot import torch (apt install python3-torch)" % PYTHON)

    def test_first_epoch_reads_the_disk_and_the_later_ones_the_cache(self):
        mnt, loop, into_cgroup = e2e.throttled_loop_mount(self, TMP, self.READ_BPS)
        folder = os.path.join(mnt, "images")
        make("--make-dir", folder, "1200", "--file-kib", "48", "--drop-cache")

        # Later epochs: 75 steps of 40 ms, the 2 workers decoding a batch in
        # 16 ms, so they keep up with room to spare (a loaded host's
        # scheduling included); epoch 0 also waits for 56 MiB at 6 MiB/s.
        job = ["--dir", folder, "--epochs", "4", "--batch-size", "16", "--decode-ms", "2",
               "--step-ms", "40"]
        db = os.path.join(TMP, "cold.db")
        rc, out, err, seconds = e2e.run(
            ["run", "--json", "--interval", "0.5", "--out", db, "--", PYTHON, JOB] + job,
            timeout=240, preexec=into_cgroup)
        self.assertEqual(rc, 0, err[-3000:])
        report = json.loads(out)
        e2e.check_report(self, report)
        text = summary(report) + "\nepochs: %s" % json.dumps(report["epochs"])
        sys.stderr.write("\n  cold cache: %.1f s, %s\n" % (seconds, report["verdict"]))
        device = os.path.basename(loop)
        # The data disk was learnt from what the workers read.
        self.assertEqual(report["run"]["data_device"], device, text)
        found = findings(report, "io.cold_cache")
        self.assertEqual(len(found), 1, text)
        f = found[0]
        self.assertEqual(f["evidence"]["device"], device, text)
        self.assertIn("epoch 0 read", f["summary"], text)
        self.assertIn("from %s" % device, f["summary"], text)
        self.assertGreater(f["evidence"]["epoch0_s"],
                           1.5 * f["evidence"]["later_epoch_s"], text)
        # What epoch 0 read: most of the 56 MiB the files hold, at about the throttle.
        self.assertGreaterEqual(f["evidence"]["epoch0_read_bytes"], 16 << 20, text)
        self.assertLessEqual(f["evidence"]["epoch0_read_bytes_per_s"], 2 * self.READ_BPS, text)
        self.assertEqual(f["evidence"]["input"], folder, text)
        self.assertIn(folder, f["next"], text)
        # The waits of epoch 0 are the cache's, not the program's: the loader
        # findings are lowered to info when the later epochs keep up (a
        # quiet host), and judged on the later epochs alone when they wait
        # too (a loaded host's workers fall behind: 11-16% here beside two
        # busy loops), never on epoch 0's waits.
        later = max(e["data_wait_fraction"] for e in report["epochs"][1:])
        for g in findings(report, "io.input_bound") + findings(report, "io.cpu_bound_loader"):
            if g["severity"] == "info" or g["id"] == "io.input_bound":
                self.assertIn("io.cold_cache", g["summary"], text)
                self.assertEqual(g["evidence"]["explained_by"], "io.cold_cache", text)
            if g["id"] == "io.input_bound" and g["severity"] != "info":
                self.assertEqual(g["evidence"]["judged_from_epoch"], 1, text)
                self.assertLessEqual(g["evidence"]["worst_rank_wait_fraction"], later + 0.05,
                                     text)


if __name__ == "__main__":
    e2e.main()

"""End-to-end: `stallscope history` finds two changes in one job's runs, each
at its run and with its cause, and none in ten runs of the job unchanged.

One command line throughout (tests/e2e/jobs/io_stories.py: a real PyTorch
DataLoader over a folder of small files, each step mostly a sleep, a
device's step time), run under `stallscope run`; what changes between runs
changes outside the command line, as it does on a real cluster:
- runs 1 to 10: the files on this machine's disk, two workers, 2 ms of
  decode a file: unchanged, so history over them finds no change;
- runs 11 to 13: the data folder (a symlink, the same path on the command
  line) now points at a copy on a loop device read at 4 MiB/s through a
  blkio/io cgroup, its page cache dropped before each run: the data moved
  to slow storage. A change at run 11, its cause the input's device;
- runs 14 to 16: still there, and the loader's workers drop to none and
  each file takes 20 ms to decode (IO_STORIES_WORKERS, IO_STORIES_DECODE_MS:
  a changed config): a change at run 14, its cause loader.num_workers 2 -> 0.
  (The throttle is a rate over time: a process that decodes between reads
  reads faster afterwards. So a decode that costs less than the device's
  read time per step hides behind it, even without workers; at 20 ms a
  file the step's decode, 320 ms, is well above its 190 ms of reading.)

The loop device, its mount and the cgroup are removed when the test ends,
pass or fail. Needs root (skipped with a message otherwise; fails under
CI=true).
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_common as common  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
IO_JOB = os.path.join(ROOT, "tests", "e2e", "jobs", "io_stories.py")
UNCHANGED = 10
MOVED_FROM = 11
WORKERS_FROM = 14
RUNS = 16
FILES = 240


class HistoryTwoChanges(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="stallscope-history-changes-")
        self.addCleanup(shutil.rmtree, self.tmp, True)

    def make_folder(self, folder, drop_cache):
        env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
        args = ["/usr/bin/python3", IO_JOB, "--make-dir", folder, str(FILES), "--file-kib", "48"]
        proc = subprocess.run(args + (["--drop-cache"] if drop_cache else []),
                              capture_output=True, env=env, timeout=300)
        self.assertEqual(proc.returncode, 0, proc.stderr.decode()[-2000:])

    def history(self, paths):
        return common.run_json(self, ["history"] + paths + ["--json"], timeout=120)

    def test_two_changes_at_their_runs_with_their_causes(self):
        mnt, loop, into_cgroup = common.throttled_loop_mount(self, self.tmp, 4 << 20)
        local = os.path.join(self.tmp, "local-images")
        moved = os.path.join(mnt, "images")
        self.make_folder(local, drop_cache=False)
        self.make_folder(moved, drop_cache=True)
        data = os.path.join(self.tmp, "data")  # the one path the command line names
        runs_dir = os.path.join(self.tmp, "runs")
        os.makedirs(runs_dir)
        job = ["/usr/bin/python3", IO_JOB, "--dir", data, "--epochs", "1", "--batch-size", "16",
               "--decode-ms", "2", "--step-ms", "40"]
        files = []
        for i in range(1, RUNS + 1):
            if os.path.lexists(data):
                os.unlink(data)
            os.symlink(local if i < MOVED_FROM else moved, data)
            env = dict(os.environ)
            preexec = None
            if i >= MOVED_FROM:
                env["IO_STORIES_DROP_CACHE"] = "1"
                preexec = into_cgroup
            if i >= WORKERS_FROM:
                env["IO_STORIES_WORKERS"] = "0"
                env["IO_STORIES_DECODE_MS"] = "20"
            out = os.path.join(runs_dir, "run%02d.db" % i)
            rc, _, err, _ = common.run(["run", "--interval", "0.25", "--out", out, "--"] + job,
                                       env=env, timeout=180, preexec=preexec)
            self.assertEqual(rc, 0, "run %d: %s" % (i, err[-3000:]))
            files.append(out)

        with self.subTest("ten unchanged runs: no change"):
            h = self.history(files[:UNCHANGED])
            job_h = h["jobs"][0]
            self.assertEqual(len(job_h["runs"]), UNCHANGED)
            self.assertEqual(job_h["change_points"], [],
                             [r["step_median_s"] for r in job_h["runs"]])

        h = self.history([runs_dir])
        self.assertEqual(len(h["jobs"]), 1, [j["command"] for j in h["jobs"]])
        job_h = h["jobs"][0]
        self.assertTrue(all(r["complete"] for r in job_h["runs"]))
        medians = [r["step_median_s"] for r in job_h["runs"]]
        changes = job_h["change_points"]
        self.assertEqual([c["at"]["index"] for c in changes], [MOVED_FROM, WORKERS_FROM],
                         json.dumps({"medians": medians,
                                     "changes": [(c["at"]["index"], c["causes"])
                                                 for c in changes]}, indent=1))
        moved_change, workers_change = changes
        device = os.path.basename(loop)

        with self.subTest("the data moved to a throttled device"):
            c = moved_change
            self.assertEqual(c["before"]["index"], MOVED_FROM - 1)
            self.assertGreater(c["after_s_per_step"], c["before_s_per_step"])
            d = c["diff"]
            self.assertEqual(d["changes"][0]["what"], "data_wait", d["changes"])
            listed = {x["what"]: x for x in d["changes"]}
            self.assertIn("input.device", listed, d["changes"])
            self.assertEqual(listed["input.device"]["b"], device)
            self.assertNotEqual(listed["input.device"]["a"], device)
            self.assertNotIn("loader.num_workers", listed)
            self.assertIn("data_wait explains", c["causes"])
            self.assertIn(device, c["causes"])

        with self.subTest("the loader lost its workers and decodes slower"):
            c = workers_change
            self.assertEqual(c["before"]["index"], WORKERS_FROM - 1)
            self.assertGreater(c["after_s_per_step"], c["before_s_per_step"],
                               json.dumps({"medians": medians, "change": {
                                   k: v for k, v in c.items() if k != "diff"}}))
            d = c["diff"]
            listed = {x["what"]: x for x in d["changes"]}
            self.assertEqual((listed["loader.num_workers"]["a"],
                              listed["loader.num_workers"]["b"]), (2, 0), d["changes"])
            self.assertNotIn("input.device", listed)  # the data stayed where it was
            self.assertIn("loader.num_workers 2 -> 0", c["causes"])

        rc, text, err, _ = common.run(["history", runs_dir], timeout=120)
        self.assertEqual(rc, 0, err)
        self.assertIn("run %d (" % MOVED_FROM, text)
        self.assertIn("run %d (" % WORKERS_FROM, text)


if __name__ == "__main__":
    common.main()

"""End-to-end: `stallscope diff A.db B.db` on run files `stallscope run`
recorded from the example job (examples/train_cpu.py: a real PyTorch
DataLoader), one thing changed at a time.

- A loader whose two workers decode in pure Python while the step sleeps
  (a device's step time), against the same job with num_workers=0: the
  first change is the data wait, with most of the slowdown's share, and
  loader.num_workers 2 -> 0 is listed.
- A fast decode against a slow one, both with one worker: the data wait
  first, the workers' CPU up, the loader's settings not listed. One worker,
  not two: on a 2-vCPU machine two decoding workers take the step's core
  too, and the step's own compute then grows with the host's load (CI saw
  compute rise more than the data wait); one worker leaves the step a core.
- The same job twice (steps made mostly of a sleep, as a device's step
  time, so the host's load cannot make one run 10% slower): no cause, no
  share, and nothing else listed.
- The same job with an NCCL variable set: env.NCCL_P2P_DISABLE is listed,
  and still no cause.
- The data moved from the local disk (in the page cache) to a loop device
  whose reads a blkio/io cgroup throttles to 6 MiB/s, its cache dropped
  (training images moved to slower storage): the data wait
  first, the device the loader read listed as changed to the loop device.
  Needs root
  (skips with a message without it; fails under CI=true).
- GPU time from profiler traces: the same pair with HTA's trace_diff
  traces (../shared/traces/hta/trace_diff, control and test) beside the run
  files as `run --profile` leaves them (RUN.db.traces/): the GPU's parts a
  step, each equal to `stallscope trace`'s temporal breakdown over its
  steps; no cause (the step did not change); the ops that changed most
  are `trace --diff`'s top ones, in its order. Outside CI a missing
  ../shared skips this part with a message; with CI=true it fails.
- `--html F`: the page charts both runs and lists the changes; an existing
  F is not overwritten without --force.
- Bad input: a file that is not a run file names the file (exit 1); one run
  file, or a side missing, is a usage error (exit 2).
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
EXAMPLE = os.path.join(ROOT, "examples", "train_cpu.py")
IO_JOB = os.path.join(ROOT, "tests", "e2e", "jobs", "io_stories.py")


class Diff(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="stallscope-diff-e2e-")
        cls.data = os.path.join(cls.tmp, "images")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def record(self, name, job_args, env=None):
        out = os.path.join(self.tmp, name + ".db")
        rc, _, err, _ = common.run(
            ["run", "--interval", "0.25", "--out", out, "--json", "--",
             "/usr/bin/python3", EXAMPLE, "--data", self.data, "--make-images", "320"] + job_args,
            env=env, timeout=180)
        self.assertEqual(rc, 0, err)
        return out

    def diff(self, a, b):
        return common.run_json(self, ["diff", a, b, "--json"])

    def make_folder(self, folder, files, drop_cache):
        env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
        args = ["/usr/bin/python3", IO_JOB, "--make-dir", folder, str(files), "--file-kib", "48"]
        proc = subprocess.run(args + (["--drop-cache"] if drop_cache else []),
                              capture_output=True, env=env, timeout=300)
        self.assertEqual(proc.returncode, 0, proc.stderr.decode()[-2000:])

    def test_data_moved_to_throttled_storage(self):
        # B's images on a loop device read at 6 MiB/s, their cache dropped:
        # one epoch of 400 files of 48 KiB takes about 3 s to read there,
        # against 25 steps of 40 ms on A's cached copy.
        mnt, loop, into_cgroup = common.throttled_loop_mount(self, self.tmp, 6 << 20)
        local = os.path.join(self.tmp, "local-images")
        moved = os.path.join(mnt, "images")
        self.make_folder(local, 400, drop_cache=False)
        self.make_folder(moved, 400, drop_cache=True)
        job = ["--epochs", "1", "--batch-size", "16", "--decode-ms", "2", "--step-ms", "40"]

        def record(name, folder, preexec=None):
            # Samples every 0.1 s: what the loader has open is caught in a
            # sample (a fresh Debian's chroot caught nothing at 0.25 s once).
            out = os.path.join(self.tmp, name + ".db")
            rc, _, err, _ = common.run(
                ["run", "--interval", "0.1", "--data", folder, "--out", out, "--",
                 "/usr/bin/python3", IO_JOB, "--dir", folder] + job,
                timeout=180, preexec=preexec)
            self.assertEqual(rc, 0, err[-3000:])
            return out

        a = record("local", local)
        b = record("throttled", moved, preexec=into_cgroup)
        d = self.diff(a, b)
        self.assertGreater(d["slowdown"], 1.5, d)
        self.assertTrue(d["step_change_beyond_noise"])
        first = d["changes"][0]
        self.assertEqual(first["what"], "data_wait", d["changes"])
        self.assertGreater(first["share_of_slowdown"], 0.5, first)
        listed = {x["what"]: x for x in d["changes"]}
        # The device the loader read moved to the loop device. A's copy sits
        # on the VM's disk here and on a tmpfs /tmp in a fresh Debian's
        # chroot, where it has no disk (input.device null, the data disk not
        # compared, a note): the input's device is listed in both.
        device = os.path.basename(loop)
        self.assertIn("input.device", listed, d["changes"])
        self.assertEqual(listed["input.device"]["b"], device)
        self.assertNotEqual(listed["input.device"]["a"], device)
        if "disk.data_device" in listed:
            self.assertEqual(listed["disk.data_device"]["b"], device)
        self.assertNotIn("loader.num_workers", listed)

    def test_workers_two_to_zero(self):
        # Each step sleeps 60 ms (a device's step time): two workers decode
        # the next batches meanwhile; without them the step waits for it.
        job = ["--mode", "input-bound", "--batch-size", "8", "--epochs", "2",
               "--steps-per-epoch", "16", "--step-ms", "60"]
        a = self.record("workers2", job + ["--workers", "2"])
        b = self.record("workers0", job + ["--workers", "0"])
        d = self.diff(a, b)
        self.assertEqual(d["schema"], "stallscope.diff/1")
        self.assertEqual(d["a"]["files"], [a])
        self.assertGreater(d["slowdown"], 1.2, d)
        self.assertTrue(d["step_change_beyond_noise"])
        self.assertFalse(d["same_command"])
        first = d["changes"][0]
        self.assertEqual(first["what"], "data_wait", d["changes"])
        self.assertEqual(first["unit"], "s/step")
        self.assertGreater(first["b"], first["a"])
        self.assertGreater(first["share_of_slowdown"], 0.5, first)
        workers = [c for c in d["changes"] if c["what"] == "loader.num_workers"]
        self.assertEqual(len(workers), 1, d["changes"])
        self.assertEqual((workers[0]["a"], workers[0]["b"]), (2, 0))
        self.assertIsNone(workers[0]["share_of_slowdown"])
        # Changes with a share come first, largest first.
        shares = [c["share_of_slowdown"] for c in d["changes"]]
        with_share = [s for s in shares if s is not None]
        self.assertEqual(shares[:len(with_share)], with_share)
        self.assertEqual(with_share, sorted(with_share, reverse=True))
        rc, text, err, _ = common.run(["diff", a, b])
        self.assertEqual(rc, 0, err)
        self.assertIn("B is %.2fx slower than A" % d["slowdown"], text)
        self.assertRegex(text, r"data_wait .*<- a cause")
        self.assertRegex(text, r"loader\.num_workers +2 -> 0")
        # --html: one page with both runs charted; never overwritten without --force.
        page = os.path.join(self.tmp, "diff.html")
        rc, out, err, _ = common.run(["diff", a, b, "--html", page])
        self.assertEqual(rc, 0, err)
        self.assertIn("wrote " + page, err)
        with open(page) as f:
            html = f.read()
        self.assertIn("B is %.2fx slower than A" % d["slowdown"], html)
        self.assertEqual(html.count("<svg"), 2, html[:2000])
        self.assertEqual(html.count("<polyline"), 4)  # A and B on each chart
        self.assertIn("<code>loader.num_workers</code></td><td>2</td><td>0</td>", html)
        rc, _, err, _ = common.run(["diff", a, b, "--html", page])
        self.assertEqual(rc, 2)
        self.assertIn("--html", err)
        with open(page) as f:
            self.assertEqual(f.read(), html)

    def check_gpu_time_from_traces(self, a, b):
        shared = os.path.join(os.environ.get("STALLSCOPE_SHARED") or
                              os.path.join(os.path.dirname(ROOT), "shared"),
                              "traces", "hta", "trace_diff")
        if not os.path.isdir(shared):
            if os.environ.get("CI") == "true":
                self.fail("%s is missing (CI=true): the real traces are part of the test" % shared)
            sys.stderr.write("\n  %s is missing: diff's GPU time not checked (it runs in CI)\n"
                             % shared)
            return
        expected = {}
        for side, db, name in (("a", a, "control"), ("b", b, "test")):
            trace = os.path.join(shared, name, name + ".json.gz")
            os.makedirs(db + ".traces", exist_ok=True)
            shutil.copy(trace, os.path.join(db + ".traces", name + ".json.gz"))
            t = common.run_json(self, ["trace", trace, "--json", "--include-last-step"])
            r = t["ranks"][0]
            steps = len(r["steps"])
            tb = r["temporal"]
            expected[side] = {"gpu.compute": tb["compute_us"] / 1e6 / steps,
                              "gpu.communication_and_copies": tb["non_compute_us"] / 1e6 / steps,
                              "gpu.idle": tb["idle_us"] / 1e6 / steps, "steps": steps}
        try:
            d = self.diff(a, b)
            rc, text, err, _ = common.run(["diff", a, b])
            ops = common.run_json(self, ["trace", "--diff", a + ".traces", b + ".traces",
                                         "--json"])["ops"]
            page = a + ".gpu.html"
            rc_html, _, err_html, _ = common.run(["diff", a, b, "--html", page, "--force"])
            self.assertEqual(rc_html, 0, err_html)
            with open(page) as f:
                html_text = f.read()
            os.unlink(page)
        finally:
            shutil.rmtree(a + ".traces")
            shutil.rmtree(b + ".traces")
        self.assertFalse(d["step_change_beyond_noise"], d)  # the same job twice
        self.assertEqual(d["gpu_ranks"], {"a": 1, "b": 1})
        self.assertEqual(d["gpu_steps"], {"a": expected["a"]["steps"], "b": expected["b"]["steps"]})
        parts = {c["what"]: c for c in d["gpu_components"]}
        self.assertEqual(sorted(parts), ["gpu.communication_and_copies", "gpu.compute", "gpu.idle"])
        for what, c in parts.items():
            self.assertAlmostEqual(c["a"], expected["a"][what], places=9)
            self.assertAlmostEqual(c["b"], expected["b"][what], places=9)
            self.assertEqual(c["unit"], "s/step")
            self.assertIsNone(c["share_of_slowdown"])
            self.assertFalse(c["cause"])
        self.assertEqual(rc, 0, err)
        self.assertIn("the step on the GPU, from the profiler traces (1 and 1 rank(s)", text)
        self.assertRegex(text, r"gpu\.idle +[0-9.]+ ms ->")
        changed = [o for o in ops if o["diff_count"] != 0 or o["diff_us"] != 0][:8]
        self.assertEqual(len(changed), 8)
        self.assertEqual([(o["name"], o["control_count"], o["test_count"], o["diff_us"])
                          for o in changed],
                         [(o["name"], o["a_count"], o["b_count"], o["diff_us"])
                          for o in d["gpu_top_ops"]])
        self.assertIn("the ops and kernels that changed most", text)
        self.assertIn("The ops and kernels that changed most (trace diff, B - A)", html_text)
        self.assertEqual(html_text.count("</code> (kernel)") + html_text.count("</code> (op)"), 8)
        self.assertIn(changed[0]["name"][:40], text)

    def test_slower_decode(self):
        job = ["--batch-size", "16", "--epochs", "2", "--steps-per-epoch", "20", "--workers", "1",
               "--step-ms", "10"]
        a = self.record("fast_decode", job)
        b = self.record("slow_decode", job + ["--mode", "input-bound"])
        d = self.diff(a, b)
        self.assertGreater(d["slowdown"], 1.2, d)
        self.assertEqual(d["changes"][0]["what"], "data_wait", d["changes"])
        listed = {x["what"]: x for x in d["changes"]}
        self.assertNotIn("loader.num_workers", listed)
        self.assertIn("cpu.workers_percent", listed, d["changes"])
        self.assertGreater(listed["cpu.workers_percent"]["b"], listed["cpu.workers_percent"]["a"])

    def test_same_job_twice_and_an_environment_variable(self):
        job = ["--batch-size", "16", "--epochs", "2", "--steps-per-epoch", "12",
               "--step-ms", "150"]
        a = self.record("same_a", job)
        b = self.record("same_b", job)
        d = self.diff(a, b)
        self.assertFalse(d["step_change_beyond_noise"], d)
        self.assertTrue(d["same_command"])
        self.assertTrue(d["same_hosts"])
        for c in d["components"]:
            self.assertFalse(c["cause"], c)
            self.assertIsNone(c["share_of_slowdown"], c)
        self.assertEqual([c for c in d["changes"] if c["share_of_slowdown"] is not None], [])
        self.assertEqual([c["what"] for c in d["changes"] if c["what"].startswith(("loader.", "env.", "command"))], [])

        self.check_gpu_time_from_traces(a, b)

        env = dict(os.environ, NCCL_P2P_DISABLE="1")
        c = self.record("env", job, env=env)
        d = self.diff(a, c)
        listed = {x["what"]: x for x in d["changes"]}
        self.assertIn("env.NCCL_P2P_DISABLE", listed, d["changes"])
        self.assertIsNone(listed["env.NCCL_P2P_DISABLE"]["a"])
        self.assertEqual(listed["env.NCCL_P2P_DISABLE"]["b"], "1")
        self.assertFalse(any(x["share_of_slowdown"] is not None for x in d["changes"]), d)

    def test_bad_input(self):
        not_a_run = os.path.join(self.tmp, "notes.txt")
        with open(not_a_run, "w") as f:
            f.write("not a run file\n")
        rc, out, err, _ = common.run(["diff", not_a_run, not_a_run])
        self.assertEqual(rc, 1, err)
        self.assertIn(not_a_run, err)
        self.assertEqual(out, "")
        rc, _, err, _ = common.run(["diff", not_a_run])
        self.assertEqual(rc, 2)
        self.assertIn("two run files", err)
        rc, _, err, _ = common.run(["diff", "--a", not_a_run])
        self.assertEqual(rc, 2)
        self.assertIn("--b", err)


if __name__ == "__main__":
    common.main()

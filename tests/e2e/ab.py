"""End-to-end: `stallscope ab` runs a job twice, as is and degraded.

On the example job (examples/train_cpu.py, real PyTorch DataLoader with two
workers) the hook stops each run after --steps and, for the degraded run,
rebuilds the DataLoader with num_workers=0; the report must show both runs'
rates, the rebuilt loader, and a finding that agrees with the measured ratio.
With --env NCCL_DEBUG=INFO the degraded run's output is captured and read by
the nccl-log analysis (a small job prints a real NCCL log from the fixtures
when NCCL_DEBUG is set). Usage errors name their flag.
"""
import json
import os
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_common as common  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLE = os.path.join(ROOT, "examples", "train_cpu.py")
NCCL_LOG = os.path.join(ROOT, "tests", "fixtures", "nccl_logs", "v2_14_multinode_docker_bridge.log")

# Steps of 10 ms; with NCCL_DEBUG set it first prints an NCCL log, as NCCL
# does on stdout, and its steps take 20 ms.
FAKE_JOB = r"""
import os, sys, time, stallscope
slow = bool(os.environ.get("NCCL_DEBUG"))
if slow:
    sys.stdout.write(open(%r).read())
    sys.stdout.flush()
for b in stallscope.loader(range(10000)):
    time.sleep(0.02 if slow else 0.01)
""" % NCCL_LOG


class Ab(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="stallscope-ab-e2e-")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_loader_workers_zero_on_the_example_job(self):
        data = os.path.join(self.tmp, "images")
        rc, out, err, seconds = common.run(
            ["ab", "--steps", "24", "--loader-workers", "0", "--json", "--",
             "/usr/bin/python3", EXAMPLE, "--data", data, "--make-images", "320",
             "--batch-size", "16", "--workers", "2", "--epochs", "4"], timeout=120)
        self.assertEqual(rc, 0, err)
        report = json.loads(out)
        # The findings contract (ab checks the io layer only, so not the
        # whole of check_report, which wants memory checked).
        self.assertEqual(report["schema"], "stallscope.report/1")
        statuses = {l["layer"]: l["status"] for l in report["layers"]}
        self.assertNotEqual(statuses["io"], "not_checked")
        for f in report["findings"]:
            for key in ("id", "layer", "severity", "summary", "evidence", "next"):
                self.assertIn(key, f)
            self.assertTrue(f["id"].startswith(f["layer"] + "."))
        ab = report["ab"]
        for run in ("as_is", "degraded"):
            self.assertEqual(ab[run]["steps"], 24, (run, ab[run], err[-2000:]))
            self.assertEqual(ab[run]["exit_status"], 0)   # the hook's SystemExit(0)
            self.assertGreater(ab[run]["steady_steps_per_s"], 0)
        self.assertEqual(ab["as_is"]["loader_workers"], 2)
        self.assertEqual(ab["degraded"]["loader_workers"], 0)   # rebuilt by the hook
        ratio = ab["degraded"]["steady_steps_per_s"] / ab["as_is"]["steady_steps_per_s"]
        self.assertAlmostEqual(ab["speedup"], ratio, places=6)
        ids = [f["id"] for f in report["findings"]]
        if ratio >= 1.1:
            self.assertIn("io.loader_overhead", ids)
        elif ratio <= 0.9:
            self.assertIn("io.loader_needed", ids)
        else:
            self.assertFalse({"io.loader_overhead", "io.loader_needed"} & set(ids))
        for f in report["findings"]:
            if f["id"].startswith("io.loader_"):
                self.assertAlmostEqual(f["evidence"]["speedup"], ratio, places=6)
        self.assertLess(seconds, 90)

    def test_nccl_debug_log_of_the_degraded_run_is_analysed(self):
        rc, out, err, _ = common.run(
            ["ab", "--steps", "20", "--env", "NCCL_DEBUG=INFO", "--",
             "/usr/bin/python3", "-c", FAKE_JOB], timeout=60)
        self.assertEqual(rc, 0, err)
        self.assertIn("steps/s (steady)", out)
        self.assertIn("network.wrong_interface", out)   # from the nccl-log rules
        # Steps of 20 ms against 10 ms: the change made it slower.
        self.assertIn("network.env_change", out)
        self.assertIn("slower with NCCL_DEBUG=INFO", out)
        log = out.split("degraded run's output: ", 1)[1].split()[0]
        with open(log) as f:
            self.assertIn("NCCL INFO", f.read())
        shutil.rmtree(os.path.dirname(log), ignore_errors=True)

    def test_usage_errors_name_the_flag(self):
        rc, _, err, _ = common.run(["ab", "--", "/bin/true"], timeout=10)
        self.assertEqual(rc, 2)
        self.assertIn("nothing to change", err)
        rc, _, err, _ = common.run(["ab", "--env", "NOEQUALS", "--", "/bin/true"], timeout=10)
        self.assertEqual(rc, 2)
        self.assertIn("--env NOEQUALS", err)
        rc, _, err, _ = common.run(["ab", "--steps", "1", "--loader-workers", "0", "--",
                                    "/bin/true"], timeout=10)
        self.assertEqual(rc, 2)
        self.assertIn("--steps 1", err)
        # A job that never reports through the hook: said plainly, exit 1.
        rc, _, err, _ = common.run(["ab", "--loader-workers", "0", "--", "/bin/true"], timeout=20)
        self.assertEqual(rc, 1)
        self.assertIn("reported no steps through the hook", err)


if __name__ == "__main__":
    common.main()

"""`stallscope scale` end to end. A synthetic job whose step time at each
world size is known (it sleeps 40 ms a step, 20 ms more per extra rank, as
if syncing) checks the arithmetic against hand-computed figures; a real
PyTorch DDP job (examples/train_cpu.py --ddp, gloo, Debian's python3-torch)
at 1 and 2 ranks checks both rows come back with plausible numbers; and bad
usage is refused naming the flag.

Run: /usr/bin/python3 scale_cli.py PATH_TO_STALLSCOPE
"""

import json
import os
import shutil
import tempfile
import unittest

import e2e_common as e2e

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLE = os.path.join(REPO, "examples", "train_cpu.py")
PYTHON = "/usr/bin/python3"
TMP = None

# 40 ms a step at one rank; each extra rank adds 20 ms of "sync". Batch 16.
SYNTHETIC = """
import os, time, stallscope
world = int(os.environ.get("WORLD_SIZE", "1"))
class Loader:
    batch_size = 16
    num_workers = 0
    def __iter__(self):
        for i in range(1000):
            yield i
for x in stallscope.loader(Loader()):
    time.sleep(0.040 + 0.020 * (world - 1))
"""


def setUpModule():
    global TMP
    TMP = tempfile.mkdtemp(prefix="stallscope-e2e-scale-")


def tearDownModule():
    shutil.rmtree(TMP, ignore_errors=True)


def have_torch():
    return os.system("%s -c 'import importlib.util,sys; sys.exit(importlib.util.find_spec("
                     "\"torch\") is None)'" % PYTHON) == 0


def check_scale_report(test, report):
    test.assertEqual(report["schema"], "stallscope.report/1")
    for f in report["findings"]:
        for key in ("id", "layer", "severity", "summary", "evidence", "next"):
            test.assertIn(key, f)
        test.assertIn(f["id"], ("distributed.scaling_poor", "network.comm_ratio_high"))
        # The next check follows triage order: memory, then io, then network.
        nxt = f["next"]
        test.assertLess(nxt.index("stallscope doctor"), nxt.index("bench allreduce"), nxt)


class Synthetic(unittest.TestCase):
    def test_known_step_times_give_the_hand_computed_figures(self):
        report = e2e.run_json(self, ["scale", "--procs", "1,2", "--steps", "20", "--json", "--",
                                     PYTHON, "-c", SYNTHETIC], timeout=120)
        check_scale_report(self, report)
        rows = report["scale"]["rows"]
        self.assertEqual([r["procs"] for r in rows], [1, 2])
        self.assertEqual([r["ranks_reported"] for r in rows], [1, 2])
        one, two = rows
        # Steps of 40 and 60 ms (sleep granularity and a loaded host add a little).
        self.assertAlmostEqual(one["step_seconds"], 0.040, delta=0.012)
        self.assertAlmostEqual(two["step_seconds"], 0.060, delta=0.015)
        # 16 samples per step: 400 samples/s at 1 rank; 2 x 16 / 0.060 = 533 at 2.
        self.assertAlmostEqual(one["samples_per_s"], 400, delta=100)
        self.assertAlmostEqual(two["samples_per_s"], 533, delta=120)
        self.assertAlmostEqual(two["speedup"], two["samples_per_s"] / one["samples_per_s"],
                               places=9)
        self.assertAlmostEqual(two["efficiency"], two["speedup"] / 2, places=9)
        # (60 - 40) / 60 = 0.33: over 30%, and efficiency 0.67 under 0.7.
        self.assertAlmostEqual(two["comm_ratio"],
                               (two["step_seconds"] - one["step_seconds"]) / two["step_seconds"],
                               places=9)
        self.assertAlmostEqual(two["comm_ratio"], 1 / 3, delta=0.12)
        s = report["scale"]["amdahl_serial_fraction"]
        # One size besides the base: 1/S - 1/2 = s/2.
        self.assertAlmostEqual(s, 2 * (1 / two["speedup"] - 0.5), places=9)
        acc = {a["k"]: a["comm_ratio"] for a in report["scale"]["gradient_accumulation"]}
        c = two["step_seconds"] - one["step_seconds"]
        for k in (2, 4, 8):
            self.assertAlmostEqual(acc[k], c / (k * one["step_seconds"] + c), places=9)
        ids = [f["id"] for f in report["findings"]]
        if two["comm_ratio"] > 0.30:
            self.assertIn("network.comm_ratio_high", ids)
        if two["efficiency"] < 0.7:
            self.assertIn("distributed.scaling_poor", ids)

    def test_text_output_shows_every_size(self):
        rc, out, err, _ = e2e.run(["scale", "--procs", "2,1", "--steps", "8", "--",
                                   PYTHON, "-c", SYNTHETIC], timeout=120)
        self.assertEqual(rc, 0, err)
        lines = out.splitlines()
        header = next(i for i, line in enumerate(lines) if line.split()[:2] == ["procs", "ranks"])
        self.assertEqual([lines[header + 1].split()[0], lines[header + 2].split()[0]],
                         ["1", "2"])
        self.assertIn("Amdahl fit", out)
        self.assertIn("gradient accumulation at 2 procs", out)
        self.assertIn("stallscope scale: 2 procs", err)  # progress on stderr


class Refused(unittest.TestCase):
    def test_bad_usage_names_the_flag(self):
        for args, flag in ((["--procs", "1,x"], "--procs"), (["--procs", "0"], "--procs"),
                           (["--steps", "3"], "--steps"), (["--launcher", "srun"], "--launcher")):
            rc, out, err, _ = e2e.run(["scale"] + args + ["--", "true"])
            self.assertEqual(rc, 2, (args, err))
            self.assertIn(flag, err)
            self.assertEqual(out, "")

    def test_a_job_without_the_hook_or_that_fails(self):
        rc, out, err, _ = e2e.run(["scale", "--procs", "1", "--steps", "8", "--", "true"])
        self.assertEqual(rc, 1)
        self.assertIn("no steps", err)
        self.assertEqual(out, "", "no table that looks complete")
        rc, _, err, _ = e2e.run(["scale", "--procs", "1,2", "--steps", "8", "--",
                                 "sh", "-c", "exit 3"])
        self.assertEqual(rc, 1)
        self.assertIn("at 1 procs", err)
        self.assertIn("status 3", err)
        rc, _, err, _ = e2e.run(["scale", "--procs", "1", "--", "no-such-command-xyz"])
        self.assertEqual(rc, 127)
        self.assertIn("no-such-command-xyz", err)


@e2e.needs(have_torch(), "python3-torch is not installed")
class RealDdp(unittest.TestCase):
    def test_one_and_two_gloo_ranks(self):
        report = e2e.run_json(self, [
            "scale", "--procs", "1,2", "--steps", "10", "--json", "--",
            PYTHON, EXAMPLE, "--ddp", "--epochs", "20", "--batch-size", "16", "--workers", "0",
            "--make-images", "400", "--data", os.path.join(TMP, "images")], timeout=300)
        check_scale_report(self, report)
        rows = report["scale"]["rows"]
        self.assertEqual([(r["procs"], r["ranks_reported"]) for r in rows], [(1, 1), (2, 2)])
        for r in rows:
            self.assertEqual(r["steps"], r["procs"] * (10 - 3))  # --steps less 3 warm-up steps
            self.assertGreater(r["samples_per_s"], 1)
            self.assertLess(r["samples_per_s"], 100000)
            self.assertGreater(r["step_seconds"], 0.0005)
            self.assertLess(r["step_seconds"], 10)
            self.assertGreaterEqual(r["comm_ratio"], 0)
            self.assertLess(r["comm_ratio"], 1)
        self.assertIsNone(rows[0]["sync_wait_seconds"])     # one rank: nothing to sync with
        self.assertIsNotNone(rows[1]["sync_wait_seconds"])  # measured by stallscope.ddp
        self.assertEqual(rows[0]["speedup"], 1)


if __name__ == "__main__":
    e2e.main()

"""GPUs end to end through a fake NVML: `snapshot --json`, `doctor --json`
and a short `run` load tests/fake_nvml (built beside the binary as
libstallscope_fake_nvml.so) through the same dlopen path as
libnvidia-ml.so.1, named by STALLSCOPE_NVML_LIBRARY, with values scripted in
FAKE_NVML_SCRIPT. Then once with no NVML library at all: one line "no NVIDIA
GPU found" and everything else still works.

Run: /usr/bin/python3 gpu_fake.py PATH_TO_STALLSCOPE
"""

import json
import os
import sqlite3
import tempfile
import unittest

import e2e_common as e2e

GIB = 1 << 30


def fake_library():
    path = os.path.join(os.path.dirname(e2e.BINARY), "libstallscope_fake_nvml.so")
    if not os.path.exists(path):
        raise AssertionError("%s missing: build the stallscope_fake_nvml target" % path)
    return path


def script(me):
    # GPU 0: an H100 with GPM whose utilization says 97% while its SMs are
    # 30% active, 96% of its memory held by this test process, power capped.
    # GPU 1: an A100 without GPM at 95% that falls off the bus at sample 3.
    return "\n".join([
        "gpus 2",
        "gpu.0.name NVIDIA H100 80GB HBM3",
        "gpu.0.uuid GPU-11111111-2222-3333-4444-555555555555",
        "gpu.0.bus 00000000:3B:00.0",
        "gpu.0.numa 1",
        "gpu.0.mem_total %d" % (80 * GIB),
        "gpu.0.mem_used %d" % int(0.96 * 80 * GIB),
        "gpu.0.util 97",
        "gpu.0.mem_util 35",
        "gpu.0.sm_clock 1500",
        "gpu.0.sm_clock_max 1980",
        "gpu.0.throttle 4",
        "gpu.0.temp 74",
        "gpu.0.power_mw 698000",
        "gpu.0.power_limit_mw 700000",
        "gpu.0.pcie_tx 1000",
        "gpu.0.pcie_rx 250000",
        "gpu.0.ecc_corrected 0",
        "gpu.0.ecc_uncorrected 0",
        "gpu.0.remapped 0",
        "gpu.0.procs %d:%d" % (me, int(0.95 * 80 * GIB)),
        "gpu.0.gpm 1",
        "gpu.0.gpm.sm_util 30",
        "gpu.0.gpm.sm_occupancy 18",
        "gpu.0.gpm.tensor 4",
        "gpu.0.gpm.dram_bw 22",
        "gpu.1.name NVIDIA A100-SXM4-40GB",
        "gpu.1.uuid GPU-66666666-7777-8888-9999-000000000000",
        "gpu.1.bus 00000000:86:00.0",
        "gpu.1.mem_total %d" % (40 * GIB),
        "gpu.1.mem_used %d" % (2 * GIB),
        "gpu.1.util 95",
        "gpu.1.gpm 0",
        "gpu.1.lost_after 3",
        "",
    ])


class FakeGpus(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.TemporaryDirectory(prefix="stallscope_gpu_e2e_")
        path = os.path.join(cls.dir.name, "script")
        with open(path, "w") as f:
            f.write(script(os.getpid()))
        cls.env = dict(os.environ, STALLSCOPE_NVML_LIBRARY=fake_library(),
                       FAKE_NVML_SCRIPT=path)

    @classmethod
    def tearDownClass(cls):
        cls.dir.cleanup()

    def test_snapshot_json_has_the_gpu_section(self):
        snap = e2e.run_json(self, ["snapshot", "--json", "--interval", "0.2"], env=self.env)
        gpus = snap["gpus"]
        self.assertTrue(gpus["available"])
        self.assertEqual(len(gpus["devices"]), 2)
        h100, a100 = gpus["devices"]
        self.assertEqual(h100["name"], "NVIDIA H100 80GB HBM3")
        self.assertEqual(h100["pci_bus_id"], "00000000:3B:00.0")
        self.assertEqual(h100["numa_node"], 1)
        self.assertEqual(h100["memory_total_bytes"], 80 * GIB)
        self.assertEqual(h100["utilization_gpu_percent"], 97)
        self.assertEqual(h100["sm_clock_mhz"], 1500)
        self.assertEqual(h100["throttle_reason_names"], ["sw_power_cap"])
        self.assertAlmostEqual(h100["power_w"], 698.0)
        self.assertEqual(h100["processes"], [{"pid": os.getpid(),
                                              "used_bytes": int(0.95 * 80 * GIB)}])
        # GPM over the snapshot's interval: two samples were taken.
        self.assertIsNotNone(h100["gpm"], h100.get("gpm_note"))
        self.assertEqual(h100["gpm"]["sm_active_percent"], 30)
        self.assertEqual(h100["gpm"]["dram_bw_percent"], 22)
        self.assertIsNone(a100["gpm"])
        self.assertIn("not supported", a100["gpm_note"])
        self.assertIsNone(a100["sm_clock_mhz"])  # not scripted: absent, not 0
        self.assertFalse(a100["lost"])

    def test_snapshot_text_shows_the_gpus(self):
        rc, out, err, _ = e2e.run(["snapshot", "--interval", "0.2"], env=self.env)
        self.assertEqual(rc, 0, err)
        self.assertIn("gpu (2 GPUs, NVML)", out)
        self.assertIn("GPM: SM active 30.0%", out)
        self.assertNotIn("no NVIDIA GPU found", out)

    def test_doctor_raises_the_gpu_findings(self):
        report = e2e.run_json(self, ["doctor", "--json", "--quick"], env=self.env)
        e2e.check_report(self, report)
        by_id = {}
        for f in report["findings"]:
            by_id.setdefault(f["id"], []).append(f)
        util = by_id["code.util_misleading"][0]
        self.assertEqual(util["evidence"]["utilization_gpu_percent"], 97)
        self.assertEqual(util["evidence"]["gpm_sm_active_percent"], 30)
        self.assertEqual(len(by_id["code.util_misleading"]), 1)  # not the A100: no GPM
        full = by_id["memory.gpu_near_full"][0]
        self.assertAlmostEqual(full["evidence"]["memory_used_fraction"], 0.96, places=3)
        self.assertEqual(full["evidence"]["top_process_pid"], os.getpid())
        self.assertIn("pid %d" % os.getpid(), full["summary"])
        throttled = by_id["code.gpu_throttled"][0]
        self.assertEqual(throttled["evidence"]["sm_clock_mhz"], 1500)
        self.assertEqual(throttled["evidence"]["sm_clock_max_mhz"], 1980)
        self.assertIn("nvidia-smi", throttled["next"])
        self.assertTrue(any("not judged on GPU 1" in n for n in report["notes"]),
                        report["notes"])

    def test_run_records_gpu_samples_and_a_lost_gpu(self):
        out_db = os.path.join(self.dir.name, "run.db")
        rc, out, err, _ = e2e.run(["run", "--interval", "0.2", "--out", out_db, "--json",
                                   "--", "sleep", "1.5"], env=self.env, timeout=60)
        self.assertEqual(rc, 0, err)
        report = json.loads(out)
        ids = {f["id"] for f in report["findings"]}
        self.assertIn("code.util_misleading", ids)
        self.assertIn("memory.gpu_near_full", ids)
        self.assertIn("code.gpu_throttled", ids)
        self.assertTrue(any("GPU 1 (NVIDIA A100-SXM4-40GB" in n and "was lost" in n
                            for n in report["notes"]), report["notes"])
        db = sqlite3.connect(out_db)
        rows = db.execute("SELECT interval, gpu_index, lost, utilization_gpu_percent, "
                          "gpm_sm_active_percent, processes FROM gpu_samples "
                          "ORDER BY interval, rowid").fetchall()
        db.close()
        self.assertGreaterEqual(len(rows), 10, rows)
        h100 = [r for r in rows if r[1] == 0]
        a100 = [r for r in rows if r[1] == 1]
        self.assertTrue(all(r[2] == 0 and r[3] == 97 and r[4] == 30 for r in h100), h100)
        self.assertEqual(h100[0][5], "%d:%d" % (os.getpid(), int(0.95 * 80 * GIB)))
        # The A100 answered the baseline sample and two intervals, then was lost.
        self.assertEqual([r[2] for r in a100[:2]], [0, 0], a100)
        self.assertTrue(all(r[2] == 1 for r in a100[2:]), a100)
        self.assertGreater(len(a100), 2)
        # Each interval lists every GPU once.
        intervals = {}
        for r in rows:
            intervals.setdefault(r[0], []).append(r[1])
        self.assertTrue(all(sorted(v) == [0, 1] for v in intervals.values()), intervals)


class NoGpu(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory(prefix="stallscope_nogpu_e2e_")
        self.env = dict(os.environ, STALLSCOPE_NVML_LIBRARY=os.path.join(
            self.dir.name, "libnvidia-ml.so.1"))
        self.env.pop("FAKE_NVML_SCRIPT", None)

    def tearDown(self):
        self.dir.cleanup()

    def test_one_line_and_everything_else_works(self):
        rc, out, err, _ = e2e.run(["snapshot", "--interval", "0.2"], env=self.env)
        self.assertEqual(rc, 0, err)
        lines = [l for l in (out + err).splitlines() if "GPU" in l or "gpu" in l.split(" ")[0:1]]
        self.assertEqual([l for l in lines if "no NVIDIA GPU found" in l], lines, lines)
        self.assertEqual(len(lines), 1, lines)
        self.assertIn("memory", out)  # the rest of the snapshot is there
        snap = e2e.run_json(self, ["snapshot", "--json", "--interval", "0.2"], env=self.env)
        self.assertFalse(snap["gpus"]["available"])
        self.assertTrue(snap["gpus"]["reason"].startswith("no NVIDIA GPU found"))
        self.assertEqual(snap["gpus"]["devices"], [])
        report = e2e.run_json(self, ["doctor", "--json", "--quick"], env=self.env)
        e2e.check_report(self, report)
        gpu_notes = [n for n in report["notes"] if "GPU" in n]
        self.assertEqual(len(gpu_notes), 1, gpu_notes)
        self.assertIn("no NVIDIA GPU found", gpu_notes[0])
        self.assertFalse([f for f in report["findings"] if "gpu" in f["id"]
                          or f["id"] == "code.util_misleading"])
        out_db = os.path.join(self.dir.name, "run.db")
        rc, out, err, _ = e2e.run(["run", "--interval", "0.2", "--out", out_db, "--json",
                                   "--", "true"], env=self.env)
        self.assertEqual(rc, 0, err)
        db = sqlite3.connect(out_db)
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        samples = db.execute("SELECT COUNT(*) FROM samples").fetchone()[0]
        db.close()
        self.assertNotIn("gpu_samples", tables)
        self.assertGreaterEqual(samples, 1)


if __name__ == "__main__":
    e2e.main()

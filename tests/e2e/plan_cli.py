"""End-to-end: `stallscope plan memory`, `plan loader` and `bench h2d` over
the real binary.

plan memory is checked against the ZeRO paper's figure 1 (7.5B parameters,
64 GPUs), plan loader against this host's own cores and MemAvailable, and
bench h2d three ways: this host's real libcudart (a CUDA install without a
GPU: one line, exit 3), a missing library, and the fake CUDA runtime built
beside the binary (libstallscope_fake_cudart.so) for the measuring path.
Bad flags must name the flag and exit 2. The GPU check script must say
"no NVIDIA GPU" and exit 0 on a host without one.
"""

import json
import os
import subprocess
import unittest

import e2e_common as e2e
from e2e_common import GIB, MIB

HERE = os.path.dirname(os.path.abspath(__file__))
EXIT_USAGE, EXIT_NO_GPU = 2, 3


def has_nvidia_gpu():
    return any(name.startswith("nvidia") and name[6:].isdigit() for name in os.listdir("/dev"))


class PlanMemory(unittest.TestCase):
    def states(self, layout):
        return layout["weights_bytes"] + layout["gradients_bytes"] + layout["optimizer_bytes"]

    def test_zero_paper_figure_one(self):
        # ZeRO (Rajbhandari et al. 2020) figure 1: 7.5B params, 64 GPUs, mixed
        # precision Adam: 120 GB, stage 1 31.4 GB, stage 2 16.6 GB, stage 3 1.9 GB.
        expected = {0: 120.0, 1: 31.4, 2: 16.6, 3: 1.9}
        for zero, gb in expected.items():
            plan = e2e.run_json(self, ["plan", "memory", "--params", "7.5B", "--gpus", "64",
                                       "--gpu-mem", "80GiB", "--dtype", "fp16", "--tp", "1",
                                       "--pp", "1", "--zero", str(zero), "--layers", "32",
                                       "--hidden", "4096", "--json"])
            self.assertEqual(plan["schema"], "stallscope.plan_memory/1")
            self.assertEqual(len(plan["layouts"]), 1)
            layout = plan["layouts"][0]
            self.assertEqual((layout["tp"], layout["pp"], layout["dp"], layout["zero"]),
                             (1, 1, 64, zero))
            self.assertAlmostEqual(self.states(layout) / 1e9, gb, delta=0.05, msg="zero %d" % zero)
            # Megatron's selective recompute: 34*s*b*h per layer, 32 layers.
            self.assertEqual(layout["activations_bytes"], 34 * 2048 * 4096 * 32)

    def test_seventy_b_on_64_gpus_text(self):
        rc, out, err, _ = e2e.run(["plan", "memory", "--params", "70B", "--gpus", "64",
                                   "--gpu-mem", "80GiB", "--dtype", "bf16", "--optimizer", "adam",
                                   "--seq", "4096", "--layers", "80", "--hidden", "8192",
                                   "--heads", "64"])
        self.assertEqual(rc, 0, err)
        self.assertIn("layouts fit, best first", out)
        self.assertIn("assumptions:", out)
        self.assertIn("16 bytes", out)
        rows = [l.split() for l in out.splitlines() if l.strip().endswith(("yes", "no"))
                and l.split()[0].isdigit()]
        self.assertTrue(rows, out)
        self.assertEqual(rows[0][-1], "yes")
        tp, pp, dp = (int(x) for x in rows[0][:3])
        self.assertEqual(tp * pp * dp, 64)

    def test_plain_data_parallel_and_model_states_are_shown(self):
        # A 70B model: plain data parallel, which cannot fit, is listed with why.
        plan = e2e.run_json(self, ["plan", "memory", "--params", "70B", "--gpus", "64",
                                   "--gpu-mem", "80GiB", "--json"])
        self.assertEqual(plan["model_states_bytes"], 70e9 * 16)
        dp = plan["data_parallel"]
        self.assertEqual((dp["tp"], dp["pp"], dp["dp"], dp["zero"]), (1, 1, 64, 0))
        self.assertIs(dp["fits"], False)
        self.assertEqual(dp["over_budget"], "weights")
        self.assertGreater(dp["total_bytes"], 80 * 2**30)
        for layout in plan["layouts"]:
            self.assertEqual(layout["over_budget"] is None, layout["fits"], layout)
        rc, out, err, _ = e2e.run(["plan", "memory", "--params", "70B", "--gpus", "64",
                                   "--gpu-mem", "80GiB"])
        self.assertEqual(rc, 0, err)
        self.assertIn("model states: 70B parameters x 16 bytes = 1.0 TiB in all", out)
        self.assertIn("plain data parallel (tp 1, pp 1, dp 64, ZeRO 0): ", out)
        self.assertIn("does not fit: the weights alone (130.4 GiB) pass the 72.0 GiB usable", out)

    def test_nothing_fits_is_said(self):
        plan = e2e.run_json(self, ["plan", "memory", "--params", "70B", "--gpus", "8",
                                   "--gpu-mem", "24GiB", "--json"])
        self.assertTrue(plan["layouts"])
        self.assertFalse(any(l["fits"] for l in plan["layouts"]))
        self.assertTrue(plan["input"]["shape_assumed"])
        rc, out, _, _ = e2e.run(["plan", "memory", "--params", "70B", "--gpus", "8",
                                 "--gpu-mem", "24GiB"])
        self.assertEqual(rc, 0)
        self.assertIn("no layout fits", out)

    def test_bad_flags_name_the_flag(self):
        cases = [
            (["--params", "70Q", "--gpus", "8", "--gpu-mem", "80GiB"], "--params 70Q"),
            (["--params", "70B", "--gpus", "8", "--gpu-mem", "lots"], "--gpu-mem lots"),
            (["--params", "70B", "--gpus", "64", "--gpu-mem", "80GiB", "--tp", "3"], "--tp 3"),
            (["--params", "70B", "--gpus", "64", "--gpu-mem", "80GiB", "--zero", "5"], "--zero 5"),
            (["--params", "70B", "--gpus", "64", "--gpu-mem", "80GiB", "--dtype", "int8"],
             "--dtype int8"),
            (["--params", "70B", "--gpus", "0", "--gpu-mem", "80GiB"], "--gpus 0"),
            (["--params", "70B", "--gpu-mem", "80GiB"], "--gpus"),
            (["--params", "70B", "--gpus", "x", "--gpu-mem", "80GiB"], "--gpus"),
        ]
        for args, needle in cases:
            rc, out, err, _ = e2e.run(["plan", "memory"] + args)
            self.assertEqual(rc, EXIT_USAGE, "%s: %s" % (args, err))
            self.assertIn(needle, err, args)
            self.assertEqual(out, "", "no partial output on bad flags")


class PlanLoader(unittest.TestCase):
    def test_usual_start_fits(self):
        plan = e2e.run_json(self, ["plan", "loader", "--batch-bytes", "96MiB", "--cores", "16",
                                   "--available", "64GiB", "--batch-size", "64", "--json"])
        self.assertEqual(plan["schema"], "stallscope.plan_loader/1")
        self.assertEqual(plan["num_workers"], 8)
        self.assertEqual(plan["prefetch_factor"], 4)
        self.assertTrue(plan["persistent_workers"] and plan["pin_memory"] and plan["fits"])
        self.assertEqual(plan["queue_bytes"], 8 * 4 * 96 * MIB)
        self.assertEqual(plan["dataloader"],
                         "DataLoader(dataset, batch_size=64, num_workers=8, prefetch_factor=4, "
                         "persistent_workers=True, pin_memory=True)")

    def test_too_big_a_queue_is_cut_and_warned(self):
        rc, out, err, _ = e2e.run(["plan", "loader", "--batch-size", "256", "--sample-bytes",
                                   "4MiB", "--cores", "16", "--available", "16GiB"])
        self.assertEqual(rc, 0, err)
        # 8 x 4 x 1 GiB = 32 GiB against 8 GiB: prefetch 2, then 4 workers.
        self.assertIn("warning: the usual start (8 workers x prefetch 4) would queue 32.0 GiB", out)
        self.assertIn("num_workers=4, prefetch_factor=2", out)

    def test_this_hosts_cores_and_memory(self):
        plan = e2e.run_json(self, ["plan", "loader", "--batch-bytes", "1MiB", "--json"])
        cores = len(os.sched_getaffinity(0))
        self.assertEqual(plan["input"]["cores"], cores)
        self.assertEqual(plan["num_workers"], max(1, cores // 2))
        available = e2e.meminfo()["MemAvailable"]
        got = plan["input"]["available_bytes"]
        self.assertGreater(got, 0)
        # MemAvailable moves a little between the two reads; a cgroup only lowers it.
        self.assertLessEqual(got, available * 1.1 + 64 * MIB)
        if plan["input"]["available_source"] == "MemAvailable":
            self.assertGreaterEqual(got, available * 0.9 - 64 * MIB)

    def test_bad_flags_name_the_flag(self):
        cases = [
            (["--batch-bytes", "lots"], "--batch-bytes lots"),
            (["--sample-bytes", "1MiB"], "--sample-bytes needs --batch-size"),
            (["--batch-bytes", "1MiB", "--sample-bytes", "1MiB", "--batch-size", "2"],
             "--batch-bytes and --sample-bytes"),
            (["--batch-bytes", "1MiB", "--cores", "0"], "--cores 0"),
            (["--batch-bytes", "1MiB", "--gpus", "0"], "--gpus 0"),
            (["--batch-bytes", "1MiB", "--available", "0"], "--available 0"),
            (["--batch-size", "-3", "--sample-bytes", "1MiB"], "--batch-size"),
        ]
        for args, needle in cases:
            rc, out, err, _ = e2e.run(["plan", "loader"] + args)
            self.assertEqual(rc, EXIT_USAGE, "%s: %s" % (args, err))
            self.assertIn(needle, err, args)
            self.assertEqual(out, "")

    def test_plan_alone_names_the_plans(self):
        rc, _, err, _ = e2e.run(["plan"])
        self.assertEqual(rc, EXIT_USAGE)
        self.assertIn("memory, loader", err)


class BenchH2d(unittest.TestCase):
    def fake(self):
        path = os.path.join(os.path.dirname(e2e.BINARY), "libstallscope_fake_cudart.so")
        if not os.path.exists(path):
            self.skipTest("%s not built (ninja stallscope_fake_cudart)" % path)
        return path

    def env(self, **extra):
        env = dict(os.environ)
        env.pop("STALLSCOPE_CUDART_LIBRARY", None)
        env.update(extra)
        return env

    def test_real_cuda_runtime_without_gpu_is_one_line_and_exit_3(self):
        if has_nvidia_gpu():
            self.skipTest("this host has an NVIDIA GPU: bench/gpu-check.sh covers it")
        rc, out, err, _ = e2e.run(["bench", "h2d"], env=self.env())
        self.assertEqual(rc, EXIT_NO_GPU, err)
        self.assertEqual(out, "")
        self.assertEqual(len(err.strip().splitlines()), 1, err)
        self.assertTrue("no CUDA GPU found" in err or "CUDA runtime not found" in err, err)

    def test_missing_library_names_it(self):
        rc, out, err, _ = e2e.run(["bench", "h2d"],
                                  env=self.env(STALLSCOPE_CUDART_LIBRARY="/nonexistent/libcudart.so"))
        self.assertEqual(rc, EXIT_NO_GPU)
        self.assertIn("/nonexistent/libcudart.so", err)
        self.assertEqual(out, "")

    def test_fake_runtime_measures_and_reports(self):
        env = self.env(STALLSCOPE_CUDART_LIBRARY=self.fake(), FAKE_CUDART_DEVICES="1")
        rc, out, err, _ = e2e.run(["bench", "h2d", "--min-size", "256KiB", "--max-size", "4MiB",
                                   "--json"], env=env)
        self.assertEqual(rc, 0, err)
        report = json.loads(out)
        self.assertEqual(report["schema"], "stallscope.report/1")
        bench = report["bench"]
        self.assertEqual(bench["schema"], "stallscope.bench_h2d/1")
        self.assertEqual(bench["sizes_bytes"], [256 << 10, 1 << 20, 4 << 20])
        gpu = bench["gpus"][0]
        self.assertEqual(gpu["name"], "stallscope fake GPU")
        kinds = {(s["direction"], s["memory"]) for s in gpu["samples"]}
        self.assertEqual(kinds, {("h2d", "pinned"), ("h2d", "pageable"), ("d2h", "pinned"),
                                 ("d2h", "pageable")})
        for s in gpu["samples"]:
            self.assertGreater(s["bytes_per_second"], 0)
        # The fake's virtual clock: pinned 25 GB/s, pageable 10 GB/s.
        for s in gpu["samples"]:
            want = 25e9 if s["memory"] == "pinned" else 10e9
            self.assertAlmostEqual(s["bytes_per_second"] / want, 1.0, delta=0.01)
        self.assertAlmostEqual(gpu["pinned_over_pageable_h2d"], 2.5, delta=0.02)
        self.assertIn("2.5x faster than pageable", gpu["verdict"][0])
        self.assertIn("pin_memory=True", gpu["verdict"][0])
        # Equal rates: the verdict says pinning buys little.
        env2 = dict(env, FAKE_CUDART_PAGEABLE_GBPS="25")
        report = e2e.run_json(self, ["bench", "h2d", "--max-size", "1MiB", "--json"], env=env2)
        self.assertIn("as fast as pinned", report["bench"]["gpus"][0]["verdict"][0])
        rc, out, err, _ = e2e.run(["bench", "h2d", "--max-size", "1MiB"], env=env)
        self.assertEqual(rc, 0, err)
        self.assertIn("GPU 0  stallscope fake GPU", out)
        self.assertIn("h2d pinned", out)
        self.assertIn("pinned/pageable h2d", out)

    def test_fake_without_devices_is_exit_3(self):
        env = self.env(STALLSCOPE_CUDART_LIBRARY=self.fake(), FAKE_CUDART_DEVICES="0")
        rc, out, err, _ = e2e.run(["bench", "h2d"], env=env)
        self.assertEqual(rc, EXIT_NO_GPU)
        self.assertIn("no CUDA GPU found (cudaGetDeviceCount: no CUDA-capable device is detected",
                      err)
        self.assertEqual(out, "")

    def test_bad_flags(self):
        for args, needle in [(["--min-size", "0"], "--min-size 0"),
                             (["--min-size", "4MiB", "--max-size", "1MiB"], "--max-size"),
                             (["--max-size", "big"], "--max-size big"),
                             (["--gpu", "-1"], "--gpu -1")]:
            rc, out, err, _ = e2e.run(["bench", "h2d"] + args, env=self.env())
            self.assertEqual(rc, EXIT_USAGE, "%s: %s" % (args, err))
            self.assertIn(needle, err)

    def test_gpu_check_script_without_gpu(self):
        if has_nvidia_gpu():
            self.skipTest("this host has an NVIDIA GPU")
        script = os.path.join(HERE, "..", "..", "bench", "gpu-check.sh")
        proc = subprocess.run(["bash", script], capture_output=True, timeout=60,
                              env=dict(os.environ, STALLSCOPE_BIN=e2e.BINARY))
        self.assertEqual(proc.returncode, 0, proc.stderr)
        lines = proc.stdout.decode().strip().splitlines()
        self.assertEqual(len(lines), 1, lines)
        self.assertIn("no NVIDIA GPU found", lines[0])


if __name__ == "__main__":
    e2e.main()

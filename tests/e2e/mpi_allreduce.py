"""End-to-end: `stallscope bench allreduce` under real Open MPI (mpirun from
Debian's openmpi-bin) on this host: the nccl-tests columns and arithmetic,
#wrong from the element check, the text table, the message outside a
launcher, and the NCCL backend's clear failure where there is no GPU.

Run: /usr/bin/python3 mpi_allreduce.py PATH_TO_STALLSCOPE
"""

import json
import os
import re
import shutil
import subprocess
import unittest

import e2e_common as e2e

MPIRUN = shutil.which("mpirun")
LAUNCHER_VARS = ("OMPI_", "PMIX_", "PMI_", "SLURM_")


def clean_env():
    """This environment without any launcher's or NCCL's variables."""
    return {k: v for k, v in os.environ.items()
            if not k.startswith(LAUNCHER_VARS) and not k.startswith("NCCL_")}


def mpirun(np, args, timeout=60):
    cmd = [MPIRUN, "--allow-run-as-root", "--oversubscribe", "-np", str(np), e2e.BINARY] + args
    proc = subprocess.run(cmd, capture_output=True, env=clean_env(), timeout=timeout)
    return (proc.returncode, proc.stdout.decode("utf-8", "replace"),
            proc.stderr.decode("utf-8", "replace"))


@e2e.needs(MPIRUN is not None, "mpirun not installed (apt-get install openmpi-bin)")
class BenchAllreduce(unittest.TestCase):
    def test_json_four_ranks(self):
        rc, out, err = mpirun(4, ["bench", "allreduce", "-b", "8", "-e", "1M", "-f", "4",
                                  "--json"])
        self.assertEqual(rc, 0, err)
        report = json.loads(out)  # one document: only rank 0 prints
        self.assertEqual(report["schema"], "stallscope.report/1")
        bench = report["bench"]
        self.assertEqual(bench["schema"], "stallscope.bench_allreduce/1")
        self.assertEqual(bench["backend"], "mpi")
        self.assertIn("Open MPI", bench["library"])
        self.assertEqual(bench["ranks"], 4)
        self.assertEqual(len(bench["hosts"]), 1)
        sizes = [r["size_bytes"] for r in bench["rows"]]
        self.assertEqual(sizes, [8 * 4 ** k for k in range(9)])  # 8 .. 512 KiB, <= 1 MiB
        for r in bench["rows"]:
            self.assertEqual(r["count"], r["size_bytes"] // 4)
            self.assertEqual((r["type"], r["redop"]), ("float", "sum"))
            self.assertGreater(r["time_us"], 0)
            # algbw = size / time (GB/s = bytes per microsecond / 1e3)
            self.assertAlmostEqual(r["algbw_gbps"], r["size_bytes"] / r["time_us"] / 1e3,
                                   delta=1e-9 + 1e-6 * r["algbw_gbps"])
            # busbw = algbw * 2(n-1)/n with n = 4
            self.assertAlmostEqual(r["busbw_gbps"], r["algbw_gbps"] * 2 * 3 / 4,
                                   delta=1e-12 + 1e-9 * r["busbw_gbps"])
            self.assertEqual(r["wrong"], 0, r)
        self.assertGreater(bench["rows"][-1]["algbw_gbps"], bench["rows"][0]["algbw_gbps"])
        # One host: shared memory, no line-rate verdict and no finding.
        self.assertFalse(bench["line_rate"]["applies"])
        self.assertIn("shared memory or loopback", bench["line_rate"]["note"])
        self.assertEqual(report["findings"], [])
        self.assertEqual(report["verdict"]["layer"], "none")

    def test_text_table(self):
        rc, out, err = mpirun(2, ["bench", "allreduce", "-b", "1K", "-e", "64K", "-f", "4",
                                  "--iters", "5", "--warmup", "1"])
        self.assertEqual(rc, 0, err)
        self.assertRegex(out, r"2 ranks on 1 host\(s\)")
        self.assertRegex(out, r"#\s+size\s+count\s+type\s+redop\s+time\s+algbw\s+busbw\s+#wrong")
        rows = re.findall(r"^\s+(\d+)\s+(\d+)\s+float\s+sum\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+(\d+)$",
                          out, re.M)
        self.assertEqual([int(r[0]) for r in rows], [1024, 4096, 16384, 65536], out)
        for size, count, _, algbw, busbw, wrong in rows:
            self.assertEqual(int(count), int(size) // 4)
            self.assertEqual(wrong, "0")
            self.assertAlmostEqual(float(busbw), float(algbw), delta=0.011)  # 2(n-1)/n = 1
        self.assertIn("# Out of bounds values : 0 OK", out)
        self.assertIn("is this bandwidth normal?", out)
        self.assertEqual(out.count("# Avg bus bandwidth"), 1, "only rank 0 prints")

    def test_nccl_backend_without_gpu(self):
        # /usr/local/cuda has libcudart and libnccl here but the host has no GPU.
        rc, out, err = mpirun(2, ["bench", "allreduce", "--backend", "nccl", "-e", "1K"])
        self.assertNotEqual(rc, 0)
        self.assertEqual(out.strip(), "", "nothing on stdout that looks like a result")
        if "no CUDA runtime" in err or "libnccl.so.2 could not be loaded" in err:
            self.assertIn("--backend nccl", err)
            return
        self.assertIn("no GPU found", err)
        self.assertIn("--backend mpi", err)
        self.assertEqual(err.count("no GPU found"), 1, "one message from rank 0: " + err)
        self.assertRegex(err, r"ranks 0-1 \(")

    def test_not_under_a_launcher(self):
        rc, out, err, _ = e2e.run(["bench", "allreduce"], env=clean_env(), timeout=20)
        self.assertEqual(rc, 2)
        self.assertIn("not started by mpirun or srun", err)
        self.assertIn("mpirun -np 4 stallscope bench allreduce", err)
        self.assertIn("srun -N2 --ntasks-per-node=8 stallscope bench allreduce", err)
        self.assertEqual(out, "")

    def test_bad_flags_named(self):
        rc, _, err, _ = e2e.run(["bench", "allreduce", "-f", "1"], env=clean_env(), timeout=20)
        self.assertEqual(rc, 2)
        self.assertIn("-f 1", err)
        rc, _, err, _ = e2e.run(["bench", "allreduce", "-e", "12Q"], env=clean_env(), timeout=20)
        self.assertEqual(rc, 2)
        self.assertIn("-e 12Q: not a size", err)


if __name__ == "__main__":
    e2e.main()

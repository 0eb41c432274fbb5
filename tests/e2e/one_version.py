#!/usr/bin/python3
"""One version, in the user's words.

Every command's --json, run on fixtures and small real inputs, carries
"version" beside "schema", equal to what `stallscope --version` prints; the
run file names the version that wrote it. And no output, help or JSON key
says "seed" for the practitioner's guide the product grew from (a random
seed, `pack --seed`, "seeded", is fine).

usage: one_version.py PATH_TO_STALLSCOPE
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

import e2e_common as e2e

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIXTURES = os.path.join(ROOT, "tests", "fixtures")
NCCL_LOG = os.path.join(FIXTURES, "nccl_logs", "v2_18_socket_while_ib_found.log")
MPIRUN = shutil.which("mpirun")

# A random seed is fine; every other "seed" is the guide's word.
RANDOM_SEED = re.compile(
    r"--seed|seeded|random seed|\"seed\": \d+|seed=\d+|with seed \d+|seed of --shuffle",
    re.IGNORECASE)


def words_seed(text):
    """The lines of `text` that say "seed" other than a random seed."""
    return [line for line in text.splitlines()
            if re.search(r"seed", RANDOM_SEED.sub("", line), re.IGNORECASE)]


class OneVersion(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        rc, out, err, _ = e2e.run(["--version"])
        assert rc == 0, err
        # "stallscope 0.1.0 (git abc1234)" or "stallscope 0.1.0"
        cls.version = out.split()[1]
        cls.tmp = tempfile.mkdtemp(prefix="one-version-")
        cls.runs = []
        for name in ("a.db", "b.db"):
            path = os.path.join(cls.tmp, name)
            rc, _, err, _ = e2e.run(["run", "--out", path, "--interval", "0.2", "--",
                                     "/bin/sleep", "0.6"])
            assert rc == 0, err
            cls.runs.append(path)
        cls.data = os.path.join(cls.tmp, "data")
        os.makedirs(os.path.join(cls.data, "class_0"))
        for i in range(20):
            with open(os.path.join(cls.data, "class_0", "%02d.bin" % i), "wb") as f:
                f.write(os.urandom(1000 + i))
        cls.bench_dir = os.path.join(cls.tmp, "bench")
        os.makedirs(cls.bench_dir)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def commands(self):
        """(name, args) of every command's --json on inputs it can read here."""
        host = ["--root", os.path.join(FIXTURES, "swap_host")]
        return [
            ("doctor", ["doctor", "--quick", "--json"] + host),
            ("doctor --rules", ["doctor", "--rules", "--json"]),
            ("snapshot", ["snapshot", "--json", "--interval", "0.2"]),
            ("report", ["report", self.runs[0], "--json"]),
            ("diff", ["diff", self.runs[0], self.runs[1], "--json"]),
            ("nccl-log", ["nccl-log", NCCL_LOG, "--json"]),
            ("trace", ["trace", os.path.join(FIXTURES, "traces", "trace-kineto-small.json"),
                       "--json"]),
            ("dataset", ["dataset", self.data, "--json"]),
            ("plan memory", ["plan", "memory", "--params", "7.5B", "--gpus", "8", "--gpu-mem",
                             "80GiB", "--dtype", "fp16", "--layers", "32", "--json"]),
            ("plan loader", ["plan", "loader", "--batch-bytes", "96MiB", "--cores", "16",
                             "--available", "64GiB", "--batch-size", "64", "--json"]),
            ("bench io", ["bench", "io", self.bench_dir, "--json", "--size", "16M", "--runtime",
                          "1", "--jobs", "1", "--iodepth", "1", "--files", "20"]),
            ("pack", ["pack", self.data, os.path.join(self.tmp, "packed-%d" % os.getpid()),
                      "--format", "wds", "--json"]),
        ]

    def test_every_json_carries_the_version(self):
        seen = set()
        for name, args in self.commands():
            with self.subTest(command=name):
                rc, out, err, _ = e2e.run(args, timeout=120)
                self.assertIn(rc, (0, 4), "%s: %s" % (name, err))
                j = json.loads(out)
                self.assertIn("schema", j, name)
                self.assertEqual(j.get("version"), self.version, name)
                self.assertEqual(list(j)[:2], ["schema", "version"], name)
                self.assertEqual(words_seed(out), [], name)
                seen.add(j["schema"])
        self.assertGreaterEqual(len(seen), 7, seen)

    def test_scale_json_carries_the_version(self):
        from scale_cli import PYTHON, SYNTHETIC
        j = e2e.run_json(self, ["scale", "--procs", "1", "--steps", "10", "--json", "--",
                                PYTHON, "-c", SYNTHETIC], timeout=120)
        self.assertEqual(j["version"], self.version)

    @e2e.needs(MPIRUN is not None, "mpirun not installed (apt-get install openmpi-bin)")
    def test_cluster_json_carries_the_version(self):
        from mpi_cluster import mpirun
        rc, out, err = mpirun([(2, [], ["cluster", "--json"])])
        self.assertEqual(rc, 0, err)
        self.assertEqual(json.loads(out)["version"], self.version)

    def test_the_run_file_names_its_writer(self):
        j = e2e.run_json(self, ["report", self.runs[0], "--json"])
        self.assertEqual(j["run"]["written_by"], self.version)
        rc, out, err, _ = e2e.run(["report", self.runs[0]])
        self.assertEqual(rc, 0, err)
        self.assertIn("written by: stallscope " + self.version, out)

    def test_no_seed_in_help_or_text(self):
        rc, top, err, _ = e2e.run(["--help"])
        self.assertEqual(rc, 0, err)
        self.assertEqual(words_seed(top), [])
        commands = [["bench", "io"], ["bench", "h2d"], ["bench", "allreduce"], ["net", "serve"],
                    ["net", "probe"], ["plan", "memory"], ["plan", "loader"]]
        for line in top.splitlines():
            m = re.match(r"^  ([a-z-]+)\s", line)
            if m:
                commands.append([m.group(1)])
        self.assertGreaterEqual(len(commands), 20, commands)
        for command in commands:
            with self.subTest(help=command):
                rc, out, err, _ = e2e.run(command + ["--help"])
                self.assertEqual(words_seed(out + err), [], command)
        for name, args in self.commands():
            text = [a for a in args if a != "--json"]
            if name == "pack":
                text[2] += "-text"
            with self.subTest(text=name):
                rc, out, err, _ = e2e.run(text, timeout=120)
                self.assertIn(rc, (0, 4), "%s: %s" % (name, err))
                self.assertEqual(words_seed(out + err), [], name)


if __name__ == "__main__":
    e2e.main()

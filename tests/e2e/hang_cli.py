#!/usr/bin/env python3
"""End-to-end: `stallscope hang` on PyTorch Flight Recorder dumps: those
bench/gen_fr_dumps.py writes (every format version it knows, pickle and
JSON, a rank missing, sizes and dtypes that differ, a coalesced group, a
ring buffer that wrapped, a point-to-point op with no match), as a folder and
as files; the files it must refuse (a GLOBAL, a newer major version, a file
cut short) with the file and byte named; its JSON contract
(stallscope.hang/1); and the real dumps of a 16-rank job, read in place,
whose fault_injection.log names the ranks it must name.

usage: hang_cli.py PATH_TO_STALLSCOPE
"""

import glob
import json
import os
import re
import shutil
import subprocess
import tempfile
import unittest

import e2e_common as e2e

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
GENERATOR = os.path.join(ROOT, "bench", "gen_fr_dumps.py")
SHARED = os.path.join(os.environ.get("STALLSCOPE_SHARED") or
                      os.path.join(os.path.dirname(ROOT), "shared"), "flight-recorder")
INCIDENTS = ["gpu_error_1st", "gpu_error_2nd", "lock_gil_1st", "lock_gil_2nd"]


def fault_ranks(incident_dir):
    with open(os.path.join(incident_dir, "fault_injection.log")) as f:
        for line in f:
            if line.startswith("Fault ranks:"):
                return sorted(int(r) for r in re.findall(r"\d+", line))
    return []


class Generated(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="stallscope-hang-")
        subprocess.run(["/usr/bin/python3", GENERATOR, cls.dir], check=True)
        with open(os.path.join(cls.dir, "expect.json")) as f:
            cls.expect = json.load(f)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def scenarios(self):
        return [(n, w) for n, w in sorted(self.expect.items()) if n != "refused"]

    def test_every_scenario_as_json(self):
        for name, want in self.scenarios():
            with self.subTest(name):
                out = e2e.run_json(self, ["hang", os.path.join(self.dir, name), "--json"])
                self.assertEqual(out["schema"], "stallscope.hang/1")
                self.assertEqual(out["command"], "hang")
                hang = out["hang"]
                self.assertEqual(hang["culprits"], want["culprits"])
                self.assertEqual(hang["format_version"], want["version"])
                findings = [f for f in out["findings"] if f["id"] == "distributed.hang"]
                if want["severity"] is None:
                    self.assertEqual(findings, [])
                    self.assertEqual(out["verdict"]["layer"], "none")
                    continue
                self.assertEqual(len(findings), 1)
                self.assertEqual(findings[0]["severity"], want["severity"])
                self.assertEqual(findings[0]["layer"], "distributed")
                if want["severity"] == "critical":
                    self.assertEqual(out["verdict"]["finding"], "distributed.hang")
                if "seq" in want:
                    group = [g for g in hang["groups"] if g["name"] == want["group"]][0]
                    self.assertEqual(group["collective_seq_id"], want["seq"])
                    self.assertEqual(group["missing"], want["missing"])
                    evidence = findings[0]["evidence"]
                    self.assertEqual(evidence["collective_seq_id"], want["seq"])
                    if want["missing"]:
                        self.assertEqual(evidence["ranks_missing"],
                                         ",".join(map(str, want["missing"])))

    def test_text_names_the_rank_and_the_collective(self):
        rc, out, err, _ = e2e.run(["hang", os.path.join(self.dir, "missing_rank_v2.9")])
        self.assertEqual(rc, 0, err)
        self.assertIn("the others wait for rank(s) 2\n", out)
        self.assertIn("collective #10 nccl:all_reduce (input [[2048]] Float)", out)
        self.assertIn("never entered:  2 (last completed #9)", out)
        self.assertIn("[critical] distributed.hang", out)
        rc, out, err, _ = e2e.run(["hang", os.path.join(self.dir, "size_mismatch")])
        self.assertEqual(rc, 0, err)
        self.assertIn("size differs at #10: rank 0 against rank 3: input sizes [[2048]] "
                      "against [[1024]]", out)
        self.assertIn("#1 train_step at train.py:88", out)  # the stack the dump holds

    def test_files_as_arguments(self):
        files = sorted(glob.glob(os.path.join(self.dir, "coalesced", "nccl_trace_rank_*")))
        out = e2e.run_json(self, ["hang"] + files + ["--json"])
        self.assertEqual(out["hang"]["culprits"], [1])
        self.assertEqual(out["hang"]["ranks_dumped"], [0, 1, 2, 3])

    def test_refused_files_name_file_and_reason(self):
        for name, text in self.expect["refused"].items():
            with self.subTest(name):
                rc, out, err, _ = e2e.run(["hang", os.path.join(self.dir, name)])
                self.assertEqual(rc, 1, err)
                self.assertEqual(out, "")
                self.assertIn(os.path.join(self.dir, name, "nccl_trace_rank_0") + ": ", err)
                self.assertIn(text, err)
        rc, _, err, _ = e2e.run(["hang", os.path.join(self.dir, "refused_global")])
        self.assertRegex(err, r"byte \d+: opcode GLOBAL \(0x63\)")

    def test_usage_and_missing_paths(self):
        rc, _, err, _ = e2e.run(["hang"])
        self.assertEqual(rc, 2, err)
        rc, _, err, _ = e2e.run(["hang", os.path.join(self.dir, "no-such-folder")])
        self.assertEqual(rc, 1)
        self.assertIn("no-such-folder", err)
        empty = tempfile.mkdtemp(dir=self.dir)
        rc, _, err, _ = e2e.run(["hang", empty])
        self.assertEqual(rc, 1)
        self.assertIn("no Flight Recorder dump", err)
        rc, _, err, _ = e2e.run(["hang", os.path.join(self.dir, "wrapped"),
                                 os.path.join(self.dir, "coalesced")])
        self.assertEqual(rc, 1)
        self.assertIn("two dumps of rank 0", err)


class RealDumps(unittest.TestCase):
    def test_names_the_ranks_fault_injection_names(self):
        e2e.need_shared_dir(self, SHARED, "the real Flight Recorder dumps")
        for incident in INCIDENTS:
            with self.subTest(incident):
                path = os.path.join(SHARED, incident)
                want = fault_ranks(path)
                self.assertEqual(len(want), 2)
                out = e2e.run_json(self, ["hang", path, "--json"])
                self.assertEqual(out["hang"]["culprits"], want)
                self.assertEqual(out["hang"]["ranks_dumped"], list(range(16)))
                self.assertEqual(out["verdict"]["finding"], "distributed.hang")
                finding = out["findings"][0]
                evidence = finding["evidence"]
                self.assertEqual(evidence["culprit_ranks"], ",".join(map(str, want)))
                if incident.startswith("lock_gil"):
                    self.assertEqual(out["hang"]["ranks_without_entries"], want)
                    self.assertIn("dumped nothing in flight", finding["summary"])
                else:
                    self.assertEqual(out["hang"]["ranks_without_entries"], [])
                    self.assertEqual(evidence["completion_stalled_ranks"],
                                     ",".join(map(str, want)))
                rc, text, err, _ = e2e.run(["hang", path])
                self.assertEqual(rc, 0, err)
                self.assertIn("the others wait for rank(s) %s\n" % ",".join(map(str, want)),
                              text)


if __name__ == "__main__":
    e2e.main()

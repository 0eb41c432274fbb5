"""`stallscope trace` end to end.

- Every real GPU trace under ../shared/traces/hta/ (HTA's own test data,
  read in place): the idle / compute / non-compute percentages and the
  comm/compute overlap agree with HTA's own output within 0.05 percentage
  points, with and without the last step. HTA's figures were produced by
  HTA itself (bench/trace_vs_hta.py --write-reference) and are kept in
  tests/fixtures/traces/hta_reference.json; no HTA code is here.
- A real PyTorch job (Debian's torch 1.13, CPU, legacy autograd-profiler
  format) profiled with torch.profiler's schedule: a slow data loader and an
  .item() each step are found, with the steps the schedule recorded.
- Bad input: a cut .json.gz, a file that is not JSON, two traces of one
  rank, a step range with no step in it, a bad --step-range.
- `trace --diff CONTROL TEST` on HTA's trace_diff pair: the JSON's rows
  ranked by the time they explain, each side's temporal breakdown the one
  `stallscope trace` gives, the text listing what was added and removed;
  bad input named by side and file. (Its figures are checked against HTA's
  own in tests/analyze/trace/diff_test.cc.)

Outside CI a missing ../shared skips the real-trace tests with a message;
with CI=true it fails.
"""

import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import e2e_common as common

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SHARED_TRACES = os.path.join(os.environ.get("STALLSCOPE_SHARED") or
                             os.path.join(os.path.dirname(ROOT), "shared"), "traces", "hta")
REFERENCE = os.path.join(ROOT, "tests", "fixtures", "traces", "hta_reference.json")
TOLERANCE_PP = 0.05


def need_shared(test):
    common.need_shared_dir(test, SHARED_TRACES, "the real traces")


def trace_dirs():
    """Every directory under the shared traces that holds trace files."""
    out = []
    for dirpath, _, files in os.walk(SHARED_TRACES):
        if any(f.endswith(".json.gz") or f.endswith(".json") for f in files):
            out.append(os.path.relpath(dirpath, SHARED_TRACES))
    return sorted(out)


class AgreesWithHta(unittest.TestCase):
    def setUp(self):
        need_shared(self)

    def test_every_trace_every_rank_within_0_05_points(self):
        with open(REFERENCE) as f:
            self.reference = json.load(f)
        compared = 0
        for rel in trace_dirs():
            ref = self.reference["traces"].get(rel)
            self.assertIsNotNone(ref, "no HTA reference for %s" % rel)
            for setting, flags in (("last_step_dropped", []),
                                   ("last_step_included", ["--include-last-step"])):
                got = common.run_json(self, ["trace", os.path.join(SHARED_TRACES, rel), "--json"]
                                      + flags)
                self.assertEqual(got["schema"], "stallscope.trace/1")
                ours = {r["rank"]: r for r in got["ranks"]}
                theirs = ref[setting]
                temporal = theirs.get("temporal")
                if temporal is None or "error" in temporal:
                    # HTA fails on this trace (no GPU rows): we say so instead.
                    for r in ours.values():
                        self.assertIsNone(r["temporal"], rel)
                    self.assertTrue(any("no GPU rows" in n for n in got["notes"]), got["notes"])
                    continue
                for rank_text, hta in temporal.items():
                    rank = int(rank_text)
                    self.assertIn(rank, ours, "%s %s: rank %d missing" % (rel, setting, rank))
                    mine = ours[rank]["temporal"]
                    for key in ("idle_pct", "compute_pct", "non_compute_pct"):
                        self.assertLessEqual(
                            abs(mine[key] - hta[key]), TOLERANCE_PP,
                            "%s %s rank %d %s: stallscope %s, HTA %s"
                            % (rel, setting, rank, key, mine[key], hta[key]))
                        compared += 1
                overlap = theirs.get("overlap") or {}
                for rank_text, hta in overlap.items():
                    mine = ours[int(rank_text)]["comm_comp_overlap_pct"]
                    if hta is None:
                        self.assertIsNone(mine, "%s %s rank %s" % (rel, setting, rank_text))
                    else:
                        self.assertIsNotNone(mine, "%s %s rank %s" % (rel, setting, rank_text))
                        self.assertLessEqual(abs(mine - hta), TOLERANCE_PP,
                                             "%s %s rank %s overlap: stallscope %s, HTA %s"
                                             % (rel, setting, rank_text, mine, hta))
                    compared += 1
                # The steps kept are HTA's.
                steps = theirs.get("steps") or {}
                for rank_text, hta_steps in steps.items():
                    if isinstance(hta_steps, list):
                        self.assertEqual(sorted(ours[int(rank_text)]["steps"]), sorted(hta_steps),
                                         "%s %s rank %s" % (rel, setting, rank_text))
        self.assertGreater(compared, 60)

    def test_one_thread_reads_what_three_read(self):
        """--threads 1 (a file's text in one part) and --threads 3 (a text of 8
        MiB or more in two or three parts, read at once): the same ranks,
        figure for figure, on every real trace; 0 threads is a usage error."""
        for rel in trace_dirs():
            path = os.path.join(SHARED_TRACES, rel)
            one = common.run_json(self, ["trace", path, "--json", "--threads", "1"])
            three = common.run_json(self, ["trace", path, "--json", "--threads", "3"])
            self.assertEqual(one["ranks"], three["ranks"], rel)
            self.assertEqual(one.get("potential_stragglers"), three.get("potential_stragglers"), rel)
            self.assertEqual(one["findings"], three["findings"], rel)
        rc, out, err, _ = common.run(["trace", os.path.join(SHARED_TRACES, "amd_trace"),
                                      "--threads", "0"])
        self.assertEqual(rc, 2, err)
        self.assertIn("--threads", err)
        self.assertEqual(out, "")

    def test_findings_name_rank_step_and_event(self):
        got = common.run_json(self, ["trace", os.path.join(SHARED_TRACES, "trace_diff", "control"),
                                     "--json"])
        ids = {f["id"]: f for f in got["findings"]}
        sync = ids.get("code.sync_in_step")
        self.assertIsNotNone(sync, ids.keys())
        self.assertEqual(sync["evidence"]["rank"], 3)  # distributedInfo.rank of the file
        self.assertEqual(sync["evidence"]["op"], "aten::item")
        self.assertIn(sync["evidence"]["worst_step"], got["ranks"][0]["steps"])
        # A launch-bound rank: most kernels tiny, the GPU mostly idle.
        got = common.run_json(self, ["trace", os.path.join(
            SHARED_TRACES, "negative_queue_length_values_check"), "--json"])
        ids = {f["id"]: f for f in got["findings"]}
        self.assertEqual(ids["code.gpu_idle"]["severity"], "critical")
        self.assertGreater(ids["code.gpu_idle"]["evidence"]["host_launch_share"], 0.5)
        launch = ids["code.launch_bound"]["evidence"]
        self.assertEqual(launch["source"], "trace")
        self.assertNotIn("code.util_misleading", ids)  # one id per finding
        rank = got["ranks"][0]
        self.assertEqual(launch["launches"], rank["launches"]["launches"])
        delays = {k["name"]: k for k in rank["launches"]["kernels"]}
        self.assertIn(launch["top_kernel_1"], delays)
        self.assertEqual(max(delays.values(), key=lambda k: k["delay_sum_us"])["name"],
                         launch["top_kernel_1"])
        # Two ranks of one job: both read, both listed.
        got = common.run_json(self, ["trace", os.path.join(SHARED_TRACES, "trace_filter"),
                                     "--json"])
        self.assertEqual([r["rank"] for r in got["ranks"]], [0, 1])
        self.assertEqual(got["ranks"][0]["world_size"], 128)
        one = common.run_json(self, ["trace", os.path.join(SHARED_TRACES, "trace_filter"),
                                     "--json", "--rank", "1"])
        self.assertEqual([r["rank"] for r in one["ranks"]], [1])

    def test_bad_input_names_the_file_and_the_byte(self):
        tmp = tempfile.mkdtemp(prefix="stallscope-trace-")
        try:
            src = os.path.join(SHARED_TRACES, "trace_diff", "control", "control.json.gz")
            with open(src, "rb") as f:
                data = f.read()
            cut = os.path.join(tmp, "cut.json.gz")
            with open(cut, "wb") as f:
                f.write(data[: len(data) // 2])
            rc, out, err, _ = common.run(["trace", cut])
            self.assertEqual(rc, 1, err)
            self.assertEqual(out, "")
            self.assertIn(cut, err)
            self.assertRegex(err, r"the gzip stream ends early, at byte \d+")
            # Valid gzip, JSON cut mid-way.
            text = gzip.decompress(data)
            half = os.path.join(tmp, "half.json.gz")
            with open(half, "wb") as f:
                f.write(gzip.compress(text[: len(text) // 3]))
            rc, out, err, _ = common.run(["trace", half])
            self.assertEqual(rc, 1, err)
            self.assertIn("at byte %d of the uncompressed JSON" % (len(text) // 3), err)
            # Two traces of one rank in one directory.
            two = os.path.join(tmp, "two")
            os.mkdir(two)
            shutil.copy(src, os.path.join(two, "a.json.gz"))
            shutil.copy(src, os.path.join(two, "b.json.gz"))
            rc, _, err, _ = common.run(["trace", two])
            self.assertEqual(rc, 1, err)
            self.assertIn("two traces of rank 3", err)
            self.assertIn("a.json.gz", err)
            self.assertIn("b.json.gz", err)
            rc, _, err, _ = common.run(["trace", src, "--step-range", "1:5"])
            self.assertEqual(rc, 1, err)
            self.assertIn("no step in --step-range 1:5 (it has ProfilerStep#1009 to #1014)", err)
            for bad in ("5", "9:3", "a:b"):
                rc, _, err, _ = common.run(["trace", src, "--step-range", bad])
                self.assertEqual(rc, 2, err)
                self.assertIn("--step-range", err)
            ranged = common.run_json(self, ["trace", src, "--step-range", "1010:1012", "--json"])
            self.assertEqual(ranged["ranks"][0]["steps"], [1010, 1011, 1012])
        finally:
            shutil.rmtree(tmp)


class TraceDiffCli(unittest.TestCase):
    def setUp(self):
        need_shared(self)
        self.control = os.path.join(SHARED_TRACES, "trace_diff", "control")
        self.test_dir = os.path.join(SHARED_TRACES, "trace_diff", "test")

    def test_json_ranks_ops_and_gives_both_temporal_breakdowns(self):
        got = common.run_json(self, ["trace", "--diff", self.control, self.test_dir, "--json"])
        self.assertEqual(got["schema"], "stallscope.trace_diff/1")
        self.assertTrue(got["version"])
        ops = got["ops"]
        self.assertGreater(len(ops), 100)
        diffs = [abs(o["diff_us"]) for o in ops]
        self.assertEqual(diffs, sorted(diffs, reverse=True))
        for o in ops:
            self.assertAlmostEqual(o["diff_us"], o["test_us"] - o["control_us"], places=6)
            self.assertEqual(o["diff_count"], o["test_count"] - o["control_count"])
        added = {o["name"] for o in ops if o["control_count"] == 0}
        self.assertEqual(set(got["ops_diff"]["added"]), added)
        self.assertTrue(added)
        for side, path in (("control", self.control), ("test", self.test_dir)):
            plain = common.run_json(self, ["trace", path, "--json"])
            self.assertEqual(got[side]["temporal"], plain["ranks"][0]["temporal"], side)
            self.assertEqual(got[side]["rank"], plain["ranks"][0]["rank"])
            self.assertEqual(got[side]["steps"], [min(plain["ranks"][0]["steps"])])
        text = common.run(["trace", "--diff", self.control, self.test_dir])
        self.assertEqual(text[0], 0, text[2])
        self.assertIn("changed, by the time they explain", text[1])
        self.assertIn(ops[0]["name"][:40], text[1])
        self.assertIn("added (%d" % len(added), text[1])

    def test_bad_input_names_the_side_and_the_file(self):
        tmp = tempfile.mkdtemp(prefix="stallscope-tdiff-")
        try:
            cut = os.path.join(tmp, "cut.json.gz")
            with open(os.path.join(self.test_dir, "test.json.gz"), "rb") as f:
                data = f.read()
            with open(cut, "wb") as f:
                f.write(data[: len(data) // 2])
            rc, out, err, _ = common.run(["trace", "--diff", self.control, cut])
            self.assertEqual(rc, 1, err)
            self.assertEqual(out, "")
            self.assertIn("test side", err)
            self.assertIn(cut, err)
            rc, _, err, _ = common.run(["trace", "--diff", os.path.join(tmp, "none"),
                                        self.test_dir])
            self.assertEqual(rc, 1, err)
            self.assertIn("control side", err)
            self.assertIn(os.path.join(tmp, "none"), err)
            rc, _, err, _ = common.run(["trace", "--diff", self.control])
            self.assertEqual(rc, 2, err)
            self.assertIn("two traces", err)
            rc, _, err, _ = common.run(["trace", "--diff", self.control, self.test_dir,
                                        "--step-range", "1:2"])
            self.assertEqual(rc, 1, err)
            self.assertIn("control side", err)
            self.assertIn("no ProfilerStep#1 to #2", err)
        finally:
            shutil.rmtree(tmp)


JOB = r"""
import sys, time, torch
from torch.profiler import profile, schedule, ProfilerActivity

class Slow(torch.utils.data.Dataset):
    def __len__(self):
        return 64
    def __getitem__(self, i):
        time.sleep(0.03)  # a slow decode, in the main process (num_workers=0)
        return torch.randn(32, 64)

model = torch.nn.Linear(64, 64)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
loader = torch.utils.data.DataLoader(Slow(), batch_size=2, num_workers=0)
with profile(activities=[ProfilerActivity.CPU], schedule=schedule(wait=1, warmup=1, active=5, repeat=1),
             on_trace_ready=lambda p: p.export_chrome_trace(sys.argv[1])) as prof:
    for step, batch in enumerate(loader):
        loss = model(batch).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        print(loss.item())  # a sync each step
        prof.step()
        if step == 8:
            break
"""


HOOKED_JOB = r"""
import time, torch, stallscope
class Slow(torch.utils.data.Dataset):
    def __len__(self):
        return 24
    def __getitem__(self, i):
        time.sleep(0.02)
        return torch.randn(32, 64)
model = torch.nn.Linear(64, 64)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
loader = torch.utils.data.DataLoader(Slow(), batch_size=2, num_workers=0)
for epoch in range(2):
    stallscope.epoch(epoch)
    for batch in stallscope.loader(loader):
        loss = model(batch).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        loss.item()
"""


class RealTorchJob(unittest.TestCase):
    def test_run_profile_writes_one_trace_and_judges_it_with_the_hook(self):
        tmp = tempfile.mkdtemp(prefix="stallscope-profile-")
        try:
            script = os.path.join(tmp, "job.py")
            with open(script, "w") as f:
                f.write(HOOKED_JOB)
            db = os.path.join(tmp, "r.db")
            # 12 steps an epoch: 9..14 spans the epoch boundary.
            rc, out, err, _ = common.run(["run", "--profile", "9:14", "--out", db, "--json",
                                          "--", "/usr/bin/python3", script], timeout=240)
            self.assertEqual(rc, 0, err[-3000:])
            trace = os.path.join(db + ".traces", "rank0.json")
            self.assertTrue(os.path.isfile(trace), os.listdir(tmp))
            got = common.run_json(self, ["trace", trace, "--json", "--include-last-step"])
            self.assertEqual(got["ranks"][0]["steps"], list(range(9, 15)))
            for report in (json.loads(out), common.run_json(self, ["report", db, "--json"])):
                ids = {}
                for f in report["findings"]:
                    self.assertNotIn(f["id"], ids, "one finding per id: %s" % f["id"])
                    ids[f["id"]] = f
                bound = ids["io.input_bound"]
                self.assertEqual(bound["evidence"]["sources"], "hook, trace")
                self.assertGreater(bound["evidence"]["trace.data_wait_fraction"], 0.5)
                self.assertIn(bound["evidence"]["trace.worst_step"], range(9, 15))
                self.assertEqual(ids["code.sync_in_step"]["evidence"]["source"], "trace")
                self.assertTrue(any("--profile 9:14: 1 rank trace(s)" in n
                                    for n in report["notes"]), report["notes"])
            # A bad window is a usage error before anything starts.
            rc, _, err, _ = common.run(["run", "--profile", "9", "--out", db + "2", "--",
                                        "/bin/true"])
            self.assertEqual(rc, 2, err)
            self.assertIn("--profile 9", err)
            self.assertFalse(os.path.exists(db + "2"))
        finally:
            shutil.rmtree(tmp)

    def test_a_slow_loader_and_an_item_each_step(self):
        tmp = tempfile.mkdtemp(prefix="stallscope-trace-job-")
        try:
            path = os.path.join(tmp, "rank0.json")
            proc = subprocess.run(["/usr/bin/python3", "-c", JOB, path], capture_output=True,
                                  timeout=240, env=dict(os.environ, OMP_NUM_THREADS="1"))
            self.assertEqual(proc.returncode, 0, proc.stderr.decode()[-2000:])
            got = common.run_json(self, ["trace", path, "--json"])
            rank = got["ranks"][0]
            self.assertEqual(rank["format"], "autograd_legacy")
            self.assertIsNone(rank["temporal"])
            # wait=1, warmup=1, active=5: five steps recorded, the last dropped.
            self.assertEqual(len(rank["steps"]), 4, rank["steps"])
            self.assertTrue(rank["last_step_dropped"])
            ids = {f["id"]: f for f in got["findings"]}
            self.assertIn("io.input_bound", ids, ids.keys())
            self.assertEqual(ids["io.input_bound"]["severity"], "critical")
            self.assertEqual(ids["io.input_bound"]["evidence"]["source"], "trace")
            self.assertIn(ids["io.input_bound"]["evidence"]["worst_step"], rank["steps"])
            self.assertIn("code.sync_in_step", ids)
            self.assertEqual(ids["code.sync_in_step"]["evidence"]["op"], "aten::item")
            self.assertEqual(ids["code.sync_in_step"]["evidence"]["steps_with_sync"], 4)
            self.assertNotIn("code.gpu_idle", ids)  # no GPU figures in this format
            self.assertTrue(any("legacy autograd-profiler format" in n for n in got["notes"]))
            # All five with --include-last-step, and a range of two.
            all5 = common.run_json(self, ["trace", path, "--json", "--include-last-step"])
            self.assertEqual(len(all5["ranks"][0]["steps"]), 5)
            first = rank["steps"][0]
            two = common.run_json(self, ["trace", path, "--json", "--step-range",
                                         "%d:%d" % (first, first + 1)])
            self.assertEqual(two["ranks"][0]["steps"], [first, first + 1])
            # The text names the finding in the triage's order.
            rc, out, err, _ = common.run(["trace", path])
            self.assertEqual(rc, 0, err)
            self.assertLess(out.index("io.input_bound"), out.index("code.sync_in_step"))
        finally:
            shutil.rmtree(tmp)


if __name__ == "__main__":
    common.main()

"""End-to-end: where the time went. Real runs of examples/train_cpu.py
(Debian's python3-torch) under `stallscope run`, and `report`'s time
breakdown of each:

- every run: the rows of its rank add up to its wall time, which is the
  run's own duration within one sample interval;
- a run that saves a checkpoint after each of its 3 epochs (64 MiB, fsync'd,
  inside `stallscope.checkpoint()`): 3 checkpoint spans and a checkpoints
  row the healthy run does not have, the same steps;
- a run that evaluates 5 batches after each epoch through
  `stallscope.loader(dl, phase="eval")`: 3 evaluation loops, an evaluation
  row, and no more training steps than the healthy run;
- the same saves without `stallscope.checkpoint()`, after each epoch and
  (another run) inside the loop every 10 steps: 3 checkpoints found by the
  rank's writes, a checkpoints row, the same steps;
- a loop that waits 30 ms a step for its "GPU" (torch.cuda.synchronize,
  a stand-in: tests/e2e/jobs/host_syncs.py): a host-syncs row of 30 ms or
  more a step, one call a step, taken from compute;
- an input-bound run (a pure-Python decode, no workers): a data-wait share
  far above the healthy run's;
- 2 gloo ranks, rank 1 sleeping 100 ms a step: rank 0's wait for it in the
  all-reduces is its own row (`rank_wait`), apart from communication;
- the text and HTML reports show the rows; `diff` of the healthy and the
  checkpointing runs compares them, the checkpoints row the one that grew;
- a run file written before the spans (committed fixtures) still breaks
  down, with a note that says what it cannot tell.

Run: /usr/bin/python3 time_breakdown.py PATH_TO_STALLSCOPE
"""
import json
import os
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_common as e2e  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLE = os.path.join(ROOT, "examples", "train_cpu.py")
OLD = os.path.join(ROOT, "tests", "fixtures", "history_old", "a1.db")
PYTHON = "/usr/bin/python3"
INTERVAL = 0.5
TMP = None
RUNS = {}


DISK = None                  # a folder on a disk, for the saves found by their writes


def setUpModule():
    global TMP, DISK
    TMP = tempfile.mkdtemp(prefix="stallscope-e2e-time-")
    # /tmp may be a tmpfs (the fresh Debian check's is), whose writes never
    # reach a storage layer: the saves go beside the binary, in the build.
    DISK = tempfile.mkdtemp(prefix="e2e-time-", dir=os.path.dirname(os.path.abspath(e2e.BINARY)))


def tearDownModule():
    shutil.rmtree(TMP, ignore_errors=True)
    shutil.rmtree(DISK, ignore_errors=True)


def storage_writes_counted(folder):
    """Whether this process's writes to `folder` show in /proc/self/io's
    write_bytes (not on tmpfs, nor where the kernel keeps no task IO
    accounting)."""
    def written():
        with open("/proc/self/io") as f:
            return int(dict(ln.split(": ") for ln in f.read().splitlines())["write_bytes"])
    before = written()
    path = os.path.join(folder, "probe")
    with open(path, "wb") as f:
        f.write(b"x" * (1 << 20))
        f.flush()
        os.fsync(f.fileno())
    os.unlink(path)
    return written() - before >= (1 << 20)


def record(name, *extra):
    """One run of the example, 3 epochs; its run file and report JSON."""
    db = os.path.join(TMP, name + ".db")
    rc, out, err, _ = e2e.run(
        ["run", "--json", "--interval", str(INTERVAL), "--out", db, "--", PYTHON, EXAMPLE,
         "--data", os.path.join(TMP, "images"), "--make-images", "400", "--epochs", "3",
         "--batch-size", "32", "--workers", "1"] + list(extra), timeout=180)
    if rc != 0:
        raise AssertionError("%s: stallscope run exited %d: %s" % (name, rc, err[-3000:]))
    return db, json.loads(out)


def rows(report):
    """Rank 0's rows (seconds by key) and its breakdown entry."""
    ranks = report["time_breakdown"]["ranks"]
    assert ranks, report["time_breakdown"]
    return ranks[0]["seconds"], ranks[0]


class TimeBreakdown(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not e2e.have_torch(PYTHON):
            e2e.skip_or_fail("%s cannot import torch (apt install python3-torch)" % PYTHON)
        if not storage_writes_counted(DISK):
            e2e.skip_or_fail("%s: writes there do not reach /proc/self/io write_bytes" % DISK)
        saves = ("--checkpoint-mib", "64", "--checkpoint-unmarked", "--checkpoint-dir", DISK)
        for name, extra in (("healthy", ()), ("checkpoint", ("--checkpoint-mib", "64")),
                            ("unmarked", saves),
                            ("in_loop", saves + ("--checkpoint-every", "10")),
                            ("eval", ("--eval-batches", "5")),
                            ("input", ("--mode", "input-bound", "--epochs", "3",
                                       "--workers", "0"))):
            RUNS[name] = record(name, *extra)

    def test_every_run_adds_up_to_its_wall_time(self):
        for name, (_, report) in RUNS.items():
            seconds, rank = rows(report)
            text = "%s: %s" % (name, json.dumps(report["time_breakdown"]))
            self.assertAlmostEqual(sum(seconds.values()), rank["wall_seconds"], delta=1e-6,
                                   msg=text)
            self.assertAlmostEqual(rank["wall_seconds"], report["run"]["duration_seconds"],
                                   delta=INTERVAL, msg=text)
            self.assertGreater(seconds["startup"], 0, text)    # python and torch start
            self.assertGreater(seconds["compute"], 0, text)
            for key, value in seconds.items():
                self.assertGreaterEqual(value, 0, "%s %s" % (key, text))

    def test_a_checkpoint_each_epoch_is_its_own_row(self):
        healthy, _ = rows(RUNS["healthy"][1])
        seconds, rank = rows(RUNS["checkpoint"][1])
        text = json.dumps(RUNS["checkpoint"][1]["time_breakdown"])
        self.assertEqual(rank["checkpoints"], 3, text)
        self.assertGreater(seconds["checkpoints"], 0.03, text)  # 3 x 64 MiB written and synced
        self.assertEqual(healthy["checkpoints"], 0)
        self.assertEqual(rank["steps"], rows(RUNS["healthy"][1])[1]["steps"], text)

    def test_saves_without_checkpoint_are_found_by_their_writes(self):
        healthy, healthy_rank = rows(RUNS["healthy"][1])
        self.assertEqual(healthy_rank["checkpoints_by_writes"], 0)
        for name in ("unmarked", "in_loop"):
            seconds, rank = rows(RUNS[name][1])
            text = "%s: %s" % (name, json.dumps(RUNS[name][1]["time_breakdown"]))
            self.assertEqual(rank["checkpoints"], 0, text)              # no span
            self.assertEqual(rank["checkpoints_by_writes"], 3, text)    # 3 saves of 64 MiB
            self.assertGreater(seconds["checkpoints"], 0.03, text)
            self.assertEqual(rank["steps"], healthy_rank["steps"], text)
            self.assertTrue(any("found by their writes" in n
                                for n in RUNS[name][1]["time_breakdown"]["notes"]), text)

    def test_a_loop_that_waits_for_the_gpu_has_a_host_syncs_row(self):
        job = os.path.join(ROOT, "tests", "e2e", "jobs", "host_syncs.py")
        db = os.path.join(TMP, "host_syncs.db")
        rc, out, err, _ = e2e.run(
            ["run", "--json", "--interval", str(INTERVAL), "--out", db, "--", PYTHON, job,
             "--steps", "40", "--sync-ms", "30"], timeout=180)
        self.assertEqual(rc, 0, err[-3000:])
        report = json.loads(out)
        seconds, rank = rows(report)
        text = json.dumps(report["time_breakdown"])
        self.assertEqual(rank["steps"], 40, text)
        self.assertEqual(rank["host_sync_calls"], 40, text)    # the CPU loss's .item() is none
        self.assertGreaterEqual(seconds["host_syncs"], 40 * 0.030, text)
        self.assertLess(seconds["host_syncs"], 40 * 0.030 + 1.0, text)
        self.assertAlmostEqual(sum(seconds.values()), rank["wall_seconds"], delta=1e-6)
        self.assertEqual(rows(RUNS["healthy"][1])[0]["host_syncs"], 0)
        rc, out, err, _ = e2e.run(["report", db])
        self.assertEqual(rc, 0, err)
        self.assertRegex(out, r"\n  host syncs +[0-9.]+ s +[0-9]+%")

    def test_an_evaluation_loop_is_its_own_row_and_no_steps(self):
        seconds, rank = rows(RUNS["eval"][1])
        text = json.dumps(RUNS["eval"][1]["time_breakdown"])
        self.assertEqual(rank["eval_loops"], 3, text)
        self.assertGreater(seconds["evaluation"], 0, text)
        self.assertEqual(rows(RUNS["healthy"][1])[0]["evaluation"], 0)
        self.assertEqual(rank["steps"], rows(RUNS["healthy"][1])[1]["steps"], text)

    def test_an_input_bound_run_waits_for_data(self):
        def share(report):
            seconds, rank = rows(report)
            return seconds["data_wait"] / rank["wall_seconds"]

        self.assertGreater(share(RUNS["input"][1]), share(RUNS["healthy"][1]) + 0.2,
                           json.dumps([RUNS[n][1]["time_breakdown"] for n in ("input",
                                                                              "healthy")]))

    def test_the_text_report_and_diff_show_the_rows(self):
        rc, out, err, _ = e2e.run(["report", RUNS["checkpoint"][0]])
        self.assertEqual(rc, 0, err)
        self.assertIn("where the time went", out)
        self.assertRegex(out, r"\n  checkpoints +[0-9.]+ s +[0-9]+%")
        self.assertRegex(out, r"\n  wall time +[0-9.]+ s +100%")
        diff = e2e.run_json(self, ["diff", "--json", RUNS["healthy"][0], RUNS["checkpoint"][0]])
        by_row = {r["row"]: r for r in diff["time_breakdown"]}
        self.assertEqual(by_row["checkpoints"]["a_seconds"], 0)
        self.assertGreater(by_row["checkpoints"]["change_seconds"], 0.03)
        rc, out, _, _ = e2e.run(["diff", RUNS["healthy"][0], RUNS["checkpoint"][0]])
        self.assertIn("where the time went (rank 0)", out)
        page = os.path.join(TMP, "checkpoint.html")
        rc, _, err, _ = e2e.run(["report", "--html", page, RUNS["checkpoint"][0]])
        self.assertEqual(rc, 0, err)
        with open(page) as f:
            html = f.read()
        self.assertIn("<h2>Where the time went</h2>", html)
        self.assertRegex(html, r"<tr><td>checkpoints</td><td>[0-9.]+ s \([0-9]+%\)</td></tr>")

    def test_ranks_that_wait_for_a_late_rank_show_it_apart_from_communication(self):
        # 2 gloo ranks on this host, rank 1 sleeping 100 ms before each
        # backward: rank 0 waits for it in every all-reduce.
        db = os.path.join(TMP, "ddp.db")
        rc, out, err, _ = e2e.run(
            ["run", "--json", "--procs", "2", "--interval", str(INTERVAL), "--out", db, "--",
             PYTHON, EXAMPLE, "--ddp", "--data", os.path.join(TMP, "images"), "--make-images",
             "400", "--epochs", "1", "--steps-per-epoch", "12", "--batch-size", "16",
             "--workers", "0", "--slow-rank", "1", "--slow-ms", "100"], timeout=180)
        self.assertEqual(rc, 0, err[-3000:])
        report = json.loads(out)
        ranks = {r["rank"]: r for r in report["time_breakdown"]["ranks"]}
        text = json.dumps(report["time_breakdown"])
        self.assertEqual(sorted(ranks), [0, 1], text)
        self.assertEqual(report["time_breakdown"]["notes"], [], text)
        for r in ranks.values():
            self.assertAlmostEqual(sum(r["seconds"].values()), r["wall_seconds"], delta=1e-6)
        waited = ranks[0]["seconds"]["rank_wait"]
        self.assertGreater(waited, 0.05 * ranks[0]["steps"], text)
        self.assertLess(ranks[1]["seconds"]["rank_wait"], waited / 2, text)

    def test_a_run_file_from_before_the_spans_says_what_it_cannot_tell(self):
        if not os.path.exists(OLD):
            self.fail("%s: the committed fixture is missing" % OLD)
        report = e2e.run_json(self, ["report", "--json", OLD])
        seconds, rank = rows(report)
        self.assertAlmostEqual(sum(seconds.values()), rank["wall_seconds"], delta=1e-6)
        self.assertTrue(any("predates checkpoint and evaluation spans" in n
                            for n in report["time_breakdown"]["notes"]),
                        report["time_breakdown"])


if __name__ == "__main__":
    e2e.main()

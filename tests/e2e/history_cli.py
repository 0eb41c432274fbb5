"""End-to-end: `stallscope history` over 12 run files that `stallscope run`
recorded from the example job (examples/train_cpu.py: a real PyTorch
DataLoader whose pure-Python decode costs milliseconds a sample, each step
mostly a sleep, a device's step time). The runs without workers decode on
the training process, half of each step: a neighbour's load would slow
some of them and not others, so the test runs alone (RUN_SERIAL).

- Runs 1 to 6 load with two workers; from run 7 on, TRAIN_CPU_WORKERS=0
  (the same command line, the loader changed by the environment, as a
  changed config does it): the step now waits for its data. One change
  point, at run 7, its representatives runs 6 and 7, the data wait first
  in its diff and loader.num_workers 2 -> 0 among its causes; the verdict
  names it.
- The unchanged runs (1 to 6, then 7 to 12, each the same job recorded
  again): no change point.
- --since: a date (run 7's start) keeps runs 7 to 12; an age (1h) keeps
  them all; a value that is not a date is a usage error naming the flag
  and the value.
- --html: one self-contained page (no URL, no script), a chart per figure
  with the change at run 7 marked on each; a run whose command line holds
  <script> is escaped; an existing page is refused without --force.
- The page in headless Chromium (skipped with a message where it is not
  installed), at the 12 runs and at 200 (copies of two of them, start times
  shifted 3 hours apart): no two axis labels and no two change labels
  overlap, the axis is in dates or times, every chart draws its line.
- A run of the same job killed mid-run (SIGKILL to the training process,
  recorded after run 12): listed as incomplete, never a change; the change
  stays at run 7.
- Bad input: a file that is not a run file is skipped with a note naming
  it; an empty folder is a usage error that says so; a run file of a newer
  schema is an error naming the file.

The 12 runs are recorded once (about 4 s each) and read by every case.
"""
import json
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_common as common  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLE = os.path.join(ROOT, "examples", "train_cpu.py")
RUNS = 12
CHANGED_FROM = 7
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")

# Run in Chromium on a copy of the page (the page itself has no script):
# per chart, the boxes of the axis labels and of the change labels must not
# intersect, and its line must be drawn. The result lands on <body>.
LAYOUT_CHECKS = r"""
<script>
window.addEventListener('load', function () {
  var overlaps = 0, ticks = [], empty = [];
  function count(boxes) {
    for (var i = 0; i < boxes.length; i++) {
      for (var j = i + 1; j < boxes.length; j++) {
        var a = boxes[i], b = boxes[j];
        if (a.x < b.x + b.width && b.x < a.x + a.width &&
            a.y < b.y + b.height && b.y < a.y + a.height) overlaps++;
      }
    }
  }
  document.querySelectorAll('svg.chart').forEach(function (svg) {
    var axis = [], marks = [];
    svg.querySelectorAll('text.xlabel').forEach(function (t) {
      axis.push(t.getBBox()); ticks.push(t.textContent);
    });
    svg.querySelectorAll('g.marker text').forEach(function (t) { marks.push(t.getBBox()); });
    count(axis); count(marks);
    var drawn = false;
    svg.querySelectorAll('polyline').forEach(function (l) {
      if (l.getBBox().width > 0) drawn = true;
    });
    if (!drawn) empty.push(svg.id);
  });
  document.body.setAttribute('data-overlaps', String(overlaps));
  document.body.setAttribute('data-ticks', ticks.join('|'));
  document.body.setAttribute('data-empty-charts', empty.join(' ') || 'none');
});
</script>
"""


class History(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="stallscope-history-e2e-")
        cls.runs_dir = os.path.join(cls.tmp, "runs")
        os.makedirs(cls.runs_dir)
        data = os.path.join(cls.tmp, "images")
        job = ["/usr/bin/python3", EXAMPLE, "--data", data, "--make-images", "320",
               "--mode", "input-bound", "--batch-size", "8", "--epochs", "1",
               "--steps-per-epoch", "20", "--step-ms", "60"]
        cls.job = job
        cls.files = []
        for i in range(1, RUNS + 1):
            env = dict(os.environ)
            env.pop("TRAIN_CPU_WORKERS", None)
            env["TRAIN_CPU_WORKERS"] = "2" if i < CHANGED_FROM else "0"
            out = os.path.join(cls.runs_dir, "run%02d.db" % i)
            rc, _, err, _ = common.run(["run", "--interval", "0.25", "--out", out, "--json",
                                        "--"] + job, env=env, timeout=180)
            if rc != 0:
                raise AssertionError("run %d: exit %d: %s" % (i, rc, err[-3000:]))
            cls.files.append(out)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def history(self, args):
        return common.run_json(self, ["history"] + args + ["--json"], timeout=120)

    def test_change_found_at_run_7_with_its_cause(self):
        h = self.history([self.runs_dir])
        self.assertEqual(h["schema"], "stallscope.history/1")
        self.assertEqual(len(h["jobs"]), 1, h["jobs"])
        job = h["jobs"][0]
        self.assertEqual([r["index"] for r in job["runs"]], list(range(1, RUNS + 1)))
        self.assertEqual([r["files"] for r in job["runs"]], [[f] for f in self.files])
        self.assertTrue(all(r["complete"] for r in job["runs"]))
        changes = job["change_points"]
        self.assertEqual(len(changes), 1, json.dumps(changes, indent=1)[:3000])
        c = changes[0]
        self.assertEqual(c["at"]["index"], CHANGED_FROM)
        self.assertEqual(c["before"]["index"], CHANGED_FROM - 1)
        self.assertEqual(c["at"]["files"], [self.files[CHANGED_FROM - 1]])
        self.assertGreater(c["ratio"], 1.2, c)
        self.assertGreater(c["after_s_per_step"], c["before_s_per_step"])
        d = c["diff"]
        self.assertEqual(d["schema"], "stallscope.diff/1")
        self.assertEqual(d["changes"][0]["what"], "data_wait", d["changes"])
        self.assertGreater(d["changes"][0]["share_of_slowdown"], 0.5, d["changes"][0])
        workers = [x for x in d["changes"] if x["what"] == "loader.num_workers"]
        self.assertEqual([(x["a"], x["b"]) for x in workers], [(2, 0)], d["changes"])
        self.assertIn("loader.num_workers 2 -> 0", c["causes"])
        self.assertIn("data_wait explains", c["causes"])
        rc, text, err, _ = common.run(["history", self.runs_dir], timeout=120)
        self.assertEqual(rc, 0, err)
        self.assertRegex(text, r"run 7 \(\d{4}-\d\d-\d\dT\d\d:\d\d\): step .*loader\.num_workers 2 -> 0")
        self.assertIn("verdict: the change at run 7 matters most", text)

    def test_unchanged_runs_make_no_change(self):
        for part in (self.files[:CHANGED_FROM - 1], self.files[CHANGED_FROM - 1:]):
            h = self.history(part)
            job = h["jobs"][0]
            self.assertEqual(len(job["runs"]), len(part))
            self.assertEqual(job["change_points"], [], [r["step_median_s"] for r in job["runs"]])
            rc, text, err, _ = common.run(["history"] + part, timeout=120)
            self.assertIn("no change beyond the run-to-run noise", text)

    def test_since(self):
        full = self.history([self.runs_dir])
        started = full["jobs"][0]["runs"][CHANGED_FROM - 1]["started_utc"]
        h = self.history([self.runs_dir, "--since", started])
        runs = h["jobs"][0]["runs"]
        self.assertEqual([r["files"][0] for r in runs], self.files[CHANGED_FROM - 1:])
        self.assertEqual(h["jobs"][0]["change_points"], [])
        self.assertEqual(len(self.history([self.runs_dir, "--since", "1h"])["jobs"][0]["runs"]),
                         RUNS)
        for bad in ("tomorrow", "2026-02-30", "7y"):
            rc, out, err, _ = common.run(["history", self.runs_dir, "--since", bad])
            self.assertEqual(rc, 2, err)
            self.assertIn("--since '%s'" % bad, err)
            self.assertEqual(out, "")
        rc, _, err, _ = common.run(["history", self.runs_dir, "--since", "2999-01-01"])
        self.assertEqual(rc, 1, err)
        self.assertIn("--since 2999-01-01", err)

    def test_html_page(self):
        # A run whose command line holds markup: the page must show it as text.
        odd_dir = os.path.join(self.tmp, "odd")
        os.makedirs(odd_dir, exist_ok=True)
        odd = os.path.join(odd_dir, "odd.db")
        rc, _, err, _ = common.run(["run", "--interval", "0.25", "--out", odd, "--",
                                    "/bin/sh", "-c", "echo '<script>alert(1)</script>' >/dev/null"],
                                   timeout=60)
        self.assertEqual(rc, 0, err)
        page = os.path.join(self.tmp, "history.html")
        rc, text, err, _ = common.run(["history", self.runs_dir, odd_dir, "--html", page],
                                      timeout=120)
        self.assertEqual(rc, 0, err)
        self.assertIn("wrote " + page, err)
        self.assertIn("2 jobs", text)
        with open(page) as f:
            html = f.read()
        self.assertNotIn("<script", html)
        self.assertIn("&lt;script&gt;alert(1)&lt;/script&gt;", html)
        self.assertIsNone(re.search(r"(src|href)=|https?://|@import|url\(", html))
        # The training job: step, data wait, steps/s charted, the change on each.
        for chart in ("step", "data-wait", "steps-per-s"):
            self.assertIn('id="chart-job1-%s"' % chart, html)
        self.assertEqual(html.count('<g class="marker"><title>run 7: step +'), html.count("<svg"))
        self.assertGreaterEqual(html.count("<svg"), 3)
        self.assertIn("the change at run 7 matters most", html)
        self.assertIn("loader.num_workers 2 -&gt; 0", html)
        rc, _, err, _ = common.run(["history", self.runs_dir, "--html", page])
        self.assertEqual(rc, 2)
        self.assertIn("--html", err)
        with open(page) as f:
            self.assertEqual(f.read(), html)
        rc, _, err, _ = common.run(["history", self.runs_dir, "--html", page, "--force"],
                                   timeout=120)
        self.assertEqual(rc, 0, err)

    def record_killed(self):
        """The job of runs 7 to 12, its training process killed after 2 s of steps."""
        out = os.path.join(self.tmp, "killed", "killed.db")
        os.makedirs(os.path.dirname(out), exist_ok=True)
        env = dict(os.environ, TRAIN_CPU_WORKERS="0")
        proc = subprocess.Popen([common.BINARY, "run", "--interval", "0.25", "--out", out,
                                 "--"] + self.job, env=env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        try:
            child = None
            for _ in range(200):
                child = self.child_of(proc.pid)
                if child:
                    break
                time.sleep(0.05)
            self.assertIsNotNone(child, "the training process did not start")
            # Killed once the run file holds a few of its steps: mid-run,
            # whatever the host's pace.
            while proc.poll() is None and self.steps_in(out) < 3:
                time.sleep(0.05)
            self.assertIsNone(proc.poll(), "the job ended before it could be killed")
            os.kill(child, signal.SIGKILL)
            proc.wait(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        return out

    @staticmethod
    def steps_in(path):
        try:
            con = sqlite3.connect("file:%s?mode=ro" % path, uri=True, timeout=1)
            try:
                return con.execute("SELECT count(*) FROM steps").fetchone()[0]
            finally:
                con.close()
        except sqlite3.Error:
            return 0

    @staticmethod
    def child_of(pid):
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open("/proc/%s/stat" % entry) as f:
                    stat = f.read()
                with open("/proc/%s/cmdline" % entry, "rb") as f:
                    cmdline = f.read()
            except OSError:
                continue
            ppid = int(stat[stat.rindex(")") + 2:].split()[1])
            if ppid == pid and b"train_cpu.py" in cmdline:
                return int(entry)
        return None

    def test_killed_run_is_incomplete_and_never_a_change(self):
        killed = self.record_killed()
        h = self.history([self.runs_dir, killed])
        self.assertEqual(len(h["jobs"]), 1, h["jobs"])
        runs = h["jobs"][0]["runs"]
        self.assertEqual(len(runs), RUNS + 1)
        self.assertEqual(runs[-1]["files"], [killed])
        self.assertFalse(runs[-1]["complete"])
        self.assertTrue(all(r["complete"] for r in runs[:-1]))
        self.assertEqual([c["at"]["index"] for c in h["jobs"][0]["change_points"]],
                         [CHANGED_FROM])
        rc, text, err, _ = common.run(["history", self.runs_dir, killed], timeout=120)
        self.assertRegex(text, r"\n +13 .*incomplete")

    def test_bad_input(self):
        folder = os.path.join(self.tmp, "bad")
        os.makedirs(folder, exist_ok=True)
        notes = os.path.join(folder, "notes.db")
        with open(notes, "w") as f:
            f.write("not a run file\n")
        shutil.copy(self.files[0], os.path.join(folder, "run01.db"))
        h = self.history([folder])
        self.assertEqual(len(h["jobs"][0]["runs"]), 1)
        self.assertTrue(any(n.startswith("skipped " + notes) for n in h["notes"]), h["notes"])
        empty = os.path.join(self.tmp, "empty")
        os.makedirs(empty, exist_ok=True)
        rc, out, err, _ = common.run(["history", empty])
        self.assertEqual(rc, 2, err)
        self.assertIn(empty + ": no run file (*.db) in this folder", err)
        newer = os.path.join(self.tmp, "newer.db")
        shutil.copy(self.files[0], newer)
        con = sqlite3.connect(newer)
        con.execute("PRAGMA user_version = 999")
        con.close()
        rc, out, err, _ = common.run(["history", self.files[0], newer])
        self.assertEqual(rc, 1, err)
        self.assertIn(newer, err)
        self.assertIn("newer stallscope", err)
        self.assertEqual(out, "")

    def check_layout(self, page, name):
        with open(page, encoding="utf-8") as f:
            html = f.read()
        checked = os.path.join(self.tmp, name + "-checked.html")
        with open(checked, "w", encoding="utf-8") as f:
            f.write(html.replace("</body>", LAYOUT_CHECKS + "</body>"))
        profile = os.path.join(self.tmp, "chromium-" + name)
        proc = subprocess.run(
            [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--user-data-dir=" + profile, "--host-resolver-rules=MAP * ~NOTFOUND",
             "--virtual-time-budget=3000", "--dump-dom", "file://" + checked],
            capture_output=True, timeout=90)
        self.assertEqual(proc.returncode, 0, proc.stderr.decode(errors="replace")[-2000:])
        body = re.search(r"<body[^>]*>", proc.stdout.decode("utf-8", "replace"))
        self.assertIsNotNone(body)
        attrs = dict(re.findall(r'(data-[a-z-]+)="([^"]*)"', body.group(0)))
        self.assertIn("data-overlaps", attrs, "the checks did not run: %s" % body.group(0))
        self.assertEqual(attrs["data-overlaps"], "0", body.group(0))
        self.assertEqual(attrs["data-empty-charts"], "none")
        ticks = attrs["data-ticks"].split("|")
        self.assertGreaterEqual(len(ticks), 3 * 3, ticks)  # 3 charts at least, 3 ticks each
        for t in ticks:
            self.assertRegex(t, r"^(\d\d:\d\d:\d\d|\d\d-\d\d \d\d:\d\d|\d{4}-\d\d-\d\d)$")

    def test_page_layout_in_chromium(self):
        if not CHROMIUM:
            self.skipTest("chromium is not installed (apt install chromium): the page's layout "
                          "is not checked, only its structure")
        page = os.path.join(self.tmp, "twelve.html")
        rc, _, err, _ = common.run(["history", self.runs_dir, "--html", page], timeout=120)
        self.assertEqual(rc, 0, err)
        self.check_layout(page, "twelve")
        # 200 runs, 3 hours apart: the first 100 copies of run 1, then of run 12.
        many = os.path.join(self.tmp, "many")
        os.makedirs(many, exist_ok=True)
        base = 1767225600  # 2026-01-01T00:00:00Z
        for i in range(200):
            path = os.path.join(many, "run%03d.db" % i)
            shutil.copy(self.files[0] if i < 100 else self.files[-1], path)
            start = base + 3 * 3600 * i
            con = sqlite3.connect(path)
            with con:
                con.execute("UPDATE run SET started_utc = strftime('%Y-%m-%dT%H:%M:%SZ', ?, "
                            "'unixepoch')", (start,))
                con.execute("UPDATE node SET start_realtime_seconds = ?", (float(start),))
            con.close()
        page = os.path.join(self.tmp, "many.html")
        rc, text, err, _ = common.run(["history", many, "--html", page], timeout=120)
        self.assertEqual(rc, 0, err)
        self.assertIn("run 101 (2026-01-13T12:00)", text)
        self.check_layout(page, "many")


if __name__ == "__main__":
    common.main()

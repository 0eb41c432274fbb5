"""`stallscope report RUN.db --html F` and `doctor --html F` end to end: a
short real training run (examples/train_cpu.py under `stallscope run`, Debian's
python3-torch), its HTML page checked for structure (one SVG per chart, the
epochs marked, the findings, no URL of any kind), its refusal to overwrite,
and the page rendered in headless Chromium, whose DOM after the page's own
script ran must say that every chart laid out a non-empty drawing.

Run: /usr/bin/python3 html_report.py PATH_TO_STALLSCOPE
"""

import html.parser
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

import e2e_common as e2e

PYTHON = "/usr/bin/python3"
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLE = os.path.join(REPO, "examples", "train_cpu.py")
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


class Page(html.parser.HTMLParser):
    """The parts of the page the tests look at."""

    def __init__(self):
        super().__init__()
        self.svgs = []          # (id, attrs) of each <svg class="chart">
        self.polylines = {}     # svg id -> count
        self.markers = {}       # svg id -> count of epoch markers
        self.scripts = 0
        self.finding_ids = []
        self.attrs_with_urls = []
        self.body = {}
        self._svg = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        for name, value in attrs:
            if name in ("src", "href", "xlink:href", "action", "data") or \
                    (value and re.search(r"(?i)\b(https?|ftp|wss?):|^//", value)):
                self.attrs_with_urls.append((tag, name, value))
        if tag == "body":
            self.body = a
        if tag == "svg" and "chart" in a.get("class", ""):
            self._svg = a.get("id")
            self.svgs.append((self._svg, a))
            self.polylines[self._svg] = 0
            self.markers[self._svg] = 0
        if tag == "polyline" and self._svg:
            self.polylines[self._svg] += 1
        if tag == "g" and a.get("class") == "marker" and self._svg:
            self.markers[self._svg] += 1
        if tag == "script":
            self.scripts += 1
        if tag == "div" and "finding" in a.get("class", "").split():
            self.finding_ids.append(a.get("data-id"))

    def handle_endtag(self, tag):
        if tag == "svg":
            self._svg = None


def parse(text):
    p = Page()
    p.feed(text)
    return p


class HtmlReport(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not os.path.isfile(EXAMPLE):
            raise unittest.SkipTest("%s is missing" % EXAMPLE)
        if subprocess.run([PYTHON, "-c", "import torch"], capture_output=True).returncode != 0:
            raise unittest.SkipTest("%s cannot import torch (apt install python3-torch)" % PYTHON)
        cls.tmp = tempfile.mkdtemp(prefix="stallscope-html-", dir=os.path.dirname(e2e.BINARY))
        cls.db = os.path.join(cls.tmp, "run.db")
        # A short healthy run: three epochs of a few steps, sampled every 0.2 s.
        rc, out, err, seconds = e2e.run(
            ["run", "--interval", "0.2", "--out", cls.db, "--",
             PYTHON, EXAMPLE, "--data", os.path.join(cls.tmp, "images"), "--make-images", "256",
             "--epochs", "3", "--steps-per-epoch", "6", "--batch-size", "16", "--workers", "1"],
            timeout=120)
        if rc != 0:
            raise AssertionError("the training run exited %d: %s" % (rc, err[-3000:]))

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def report_html(self, name, *extra):
        path = os.path.join(self.tmp, name)
        rc, out, err, _ = e2e.run(["report", self.db, "--html", path] + list(extra))
        self.assertEqual(rc, 0, err)
        self.assertIn(path, err)
        with open(path, encoding="utf-8") as f:
            return path, f.read()

    def test_structure(self):
        path, text = self.report_html("structure.html")
        self.assertTrue(text.startswith("<!DOCTYPE html>"))
        self.assertTrue(text.rstrip().endswith("</html>"), "the page is cut short")
        page = parse(text)
        ids = [i for i, _ in page.svgs]
        for chart in ("chart-memory", "chart-swap", "chart-disk-util", "chart-disk-await",
                      "chart-cpu", "chart-step-time", "chart-data-wait"):
            self.assertIn(chart, ids)
        self.assertEqual(len(ids), len(set(ids)), "duplicate chart ids: %s" % ids)
        for i in ids:
            self.assertGreaterEqual(page.polylines[i], 1, "chart %s draws no line" % i)
            # Three epochs: each chart marks them.
            self.assertEqual(page.markers[i], 3, "chart %s marks %d epochs" % (i, page.markers[i]))
        # The run had one rank: one step-time series.
        self.assertEqual(page.polylines["chart-step-time"], 1)
        self.assertIn("rank 0 step", text)
        self.assertEqual(page.scripts, 1, "only the page's own script")
        # Nothing leaves the page.
        self.assertEqual(page.attrs_with_urls, [])
        self.assertIsNone(re.search(r"(?i)(https?|ftp|wss?)://", text), "a URL in the page")
        self.assertNotIn("url(", text)
        self.assertNotIn("@import", text)
        # The layers, the baseline snapshot, the triage table.
        self.assertIn('data-layer="memory"', text)
        self.assertIn("stallscope.snapshot/1", text)
        self.assertIn('class="triage"', text)

    def test_findings_match_report_json(self):
        _, text = self.report_html("findings.html")
        report = e2e.run_json(self, ["report", self.db, "--json"])
        self.assertEqual(parse(text).finding_ids, [f["id"] for f in report["findings"]])

    def test_refuses_to_overwrite(self):
        path = os.path.join(self.tmp, "kept.html")
        with open(path, "w") as f:
            f.write("precious")
        rc, out, err, _ = e2e.run(["report", self.db, "--html", path])
        self.assertEqual(rc, 2, err)
        self.assertIn(path, err)
        self.assertIn("--force", err)
        with open(path) as f:
            self.assertEqual(f.read(), "precious")
        _, text = self.report_html("kept.html", "--force")
        self.assertIn("<svg", text)
        leftovers = [n for n in os.listdir(self.tmp) if ".tmp-" in n]
        self.assertEqual(leftovers, [], "temporary files left behind")

    def test_bad_run_file(self):
        bogus = os.path.join(self.tmp, "not-a-run.db")
        with open(bogus, "w") as f:
            f.write("hello\n")
        out_path = os.path.join(self.tmp, "never.html")
        rc, out, err, _ = e2e.run(["report", bogus, "--html", out_path])
        self.assertEqual(rc, 1, err)
        self.assertIn(bogus, err)
        self.assertFalse(os.path.exists(out_path), "a page written for a bad run file")

    def test_doctor_html_with_run(self):
        path = os.path.join(self.tmp, "doctor.html")
        rc, out, err, _ = e2e.run(["doctor", "--quick", "--run", self.db, "--html", path])
        self.assertEqual(rc, 0, err)
        self.assertIn("html report: " + path, out)
        with open(path, encoding="utf-8") as f:
            page = parse(f.read())
        self.assertIn("chart-memory", [i for i, _ in page.svgs])
        self.assertEqual(page.attrs_with_urls, [])

    def test_chromium_draws_every_chart(self):
        if not CHROMIUM:
            self.skipTest("chromium is not installed (apt install chromium): the page is not "
                          "rendered, only its structure checked")
        path, text = self.report_html("render.html")
        charts = len(parse(text).svgs)
        profile = tempfile.mkdtemp(prefix="chromium-", dir=self.tmp)
        # No network at all for the browser: any request would fail, not hang.
        proc = subprocess.run(
            [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--user-data-dir=" + profile, "--host-resolver-rules=MAP * ~NOTFOUND",
             "--virtual-time-budget=3000", "--dump-dom", "file://" + path],
            capture_output=True, timeout=60)
        dom = proc.stdout.decode("utf-8", "replace")
        self.assertEqual(proc.returncode, 0, proc.stderr.decode(errors="replace")[-2000:])
        body = re.search(r"<body[^>]*>", dom)
        self.assertIsNotNone(body, "no <body> in the DOM chromium dumped: %r" % dom[:500])
        self.assertIn('data-charts="%d"' % charts, body.group(0),
                      "the page's script did not run: %s" % body.group(0))
        self.assertIn('data-drawn="%d"' % charts, body.group(0),
                      "not every chart drew: %s" % body.group(0))
        self.assertEqual(len(re.findall(r'<svg[^>]*data-drawn="1"', dom)), charts)


if __name__ == "__main__":
    e2e.main()

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


def need_the_example():
    """Skips the class unless the example job and Debian's torch are here."""
    if not os.path.isfile(EXAMPLE):
        raise unittest.SkipTest("%s is missing" % EXAMPLE)
    if subprocess.run([PYTHON, "-c", "import torch"], capture_output=True).returncode != 0:
        raise unittest.SkipTest("%s cannot import torch (apt install python3-torch)" % PYTHON)


class HtmlReport(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        need_the_example()
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


# Checks run in Chromium's layout, appended to a copy of the report: in every
# chart no two epoch labels' boxes intersect, every chart draws a non-empty
# line, and the job's tree RSS spans its chart (its own axis, not a flat
# line at zero on the host's memory).
LAYOUT_CHECKS = r"""
<script>
window.addEventListener('load', function () {
  var overlaps = 0, labels = 0, empty = [];
  document.querySelectorAll('svg.chart').forEach(function (svg) {
    var boxes = [];
    svg.querySelectorAll('g.marker text').forEach(function (t) { boxes.push(t.getBBox()); });
    labels += boxes.length;
    for (var i = 0; i < boxes.length; i++) {
      for (var j = i + 1; j < boxes.length; j++) {
        var a = boxes[i], b = boxes[j];
        if (a.x < b.x + b.width && b.x < a.x + a.width &&
            a.y < b.y + b.height && b.y < a.y + a.height) overlaps++;
      }
    }
    var drawn = false;
    svg.querySelectorAll('polyline').forEach(function (l) {
      var box = l.getBBox();
      if (box.width > 0 && l.getAttribute('points').trim().length > 0) drawn = true;
    });
    if (!drawn) empty.push(svg.id);
  });
  var tree = document.querySelector('#chart-memory g.series[data-series="tree RSS"] polyline');
  var body = document.body;
  body.setAttribute('data-epoch-labels', String(labels));
  body.setAttribute('data-label-overlaps', String(overlaps));
  body.setAttribute('data-empty-charts', empty.join(' ') || 'none');
  body.setAttribute('data-tree-height', tree ? String(Math.round(tree.getBBox().height)) : '-1');
});
</script>
"""


def chromium_dom(test, page, tmp):
    """The DOM of `page` after its scripts ran in headless Chromium, with no network."""
    profile = tempfile.mkdtemp(prefix="chromium-", dir=tmp)
    proc = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
         "--user-data-dir=" + profile, "--host-resolver-rules=MAP * ~NOTFOUND",
         "--virtual-time-budget=3000", "--dump-dom", "file://" + page],
        capture_output=True, timeout=60)
    test.assertEqual(proc.returncode, 0, proc.stderr.decode(errors="replace")[-2000:])
    return proc.stdout.decode("utf-8", "replace")


class ManyEpochs(unittest.TestCase):
    """A 40-epoch run's page: the epoch labels readable, the tree on its axis,
    the per-process CPU chart."""

    EPOCHS = 40

    @classmethod
    def setUpClass(cls):
        need_the_example()
        cls.tmp = tempfile.mkdtemp(prefix="stallscope-html40-", dir=os.path.dirname(e2e.BINARY))
        cls.db = os.path.join(cls.tmp, "run.db")
        rc, out, err, seconds = e2e.run(
            ["run", "--interval", "0.25", "--out", cls.db, "--",
             PYTHON, EXAMPLE, "--data", os.path.join(cls.tmp, "images"), "--make-images", "128",
             "--epochs", str(cls.EPOCHS), "--steps-per-epoch", "2", "--batch-size", "16",
             "--workers", "1"], timeout=180)
        if rc != 0:
            raise AssertionError("the training run exited %d: %s" % (rc, err[-3000:]))
        cls.page = os.path.join(cls.tmp, "report.html")
        rc, out, err, _ = e2e.run(["report", cls.db, "--html", cls.page])
        if rc != 0:
            raise AssertionError("report --html exited %d: %s" % (rc, err[-3000:]))
        with open(cls.page, encoding="utf-8") as f:
            cls.text = f.read()

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_structure(self):
        page = parse(self.text)
        ids = [i for i, _ in page.svgs]
        for chart in ("chart-memory", "chart-host-memory", "chart-process-cpu"):
            self.assertIn(chart, ids)
        for i in ids:
            self.assertEqual(page.markers[i], self.EPOCHS, "chart %s marks %d epochs" %
                             (i, page.markers[i]))
        # The tree's chart holds the tree only; the host's memory has its own.
        memory = self.text[self.text.index('id="chart-memory"'):]
        memory = memory[:memory.index("</svg>")]
        self.assertIn('data-series="tree RSS"', memory)
        self.assertNotIn('data-series="host available"', memory)
        # The ranks against the worker: the training process and its loader.
        cpu = self.text[self.text.index('id="chart-process-cpu"'):]
        cpu = cpu[:cpu.index("</svg>")]
        self.assertRegex(cpu, r'data-series="rank 0 \(pid \d+\)"')  # the hook's hello
        self.assertRegex(cpu, r'data-series="worker [^"]+ \(pid \d+\)"')

    def test_chromium_layout(self):
        if not CHROMIUM:
            self.skipTest("chromium is not installed (apt install chromium): the layout is not "
                          "checked, only the page's structure")
        checked = os.path.join(self.tmp, "checked.html")
        with open(checked, "w", encoding="utf-8") as f:
            f.write(self.text.replace("</body>", LAYOUT_CHECKS + "</body>"))
        dom = chromium_dom(self, checked, self.tmp)
        body = re.search(r"<body[^>]*>", dom)
        self.assertIsNotNone(body, "no <body> in the DOM chromium dumped: %r" % dom[:500])
        attrs = dict(re.findall(r'(data-[a-z-]+)="([^"]*)"', body.group(0)))
        self.assertIn("data-label-overlaps", attrs, "the checks did not run: %s" % body.group(0))
        self.assertEqual(attrs["data-label-overlaps"], "0", body.group(0))
        self.assertGreater(int(attrs["data-epoch-labels"]), 0, body.group(0))
        self.assertEqual(attrs["data-empty-charts"], "none", body.group(0))
        # The plot is 168 px high: a tree that grows from the interpreter's
        # first megabytes to torch's hundreds spans most of it.
        self.assertGreater(int(attrs["data-tree-height"]), 60, body.group(0))
        self.assertEqual(attrs.get("data-drawn"), attrs.get("data-charts"), body.group(0))


if __name__ == "__main__":
    e2e.main()

"""Tests of the hook's leak placement (python/stallscope/_leak.py): when it
starts tracing, what it reports, that it stops, and that a failure inside
never reaches the job. RSS readings are scripted; tracemalloc, the census of
tensors (Debian's python3-torch) and the source scan are real.

    PYTHONPATH=python /usr/bin/python3 -m unittest discover -s python/tests -v
"""
import os
import sys
import tempfile
import tracemalloc
import types
import unittest

from stallscope import _leak

SECOND = 1_000_000_000
MIB = 1 << 20

import importlib.util

# The census needs torch; the trigger does not. Imported by the tests that
# use it, not here: test_hook checks that the hook itself never imports it.
HAVE_TORCH = importlib.util.find_spec("torch") is not None
torch = None


class Readings:
    """A scripted /proc/self/statm: one RSS a call."""

    def __init__(self, values):
        self.values = list(values)

    def __call__(self):
        return self.values.pop(0) if len(self.values) > 1 else self.values[0]


class LeakWatchTest(unittest.TestCase):
    def setUp(self):
        self.saved_rss = _leak._rss_bytes
        self.saved_env = os.environ.get("STALLSCOPE_TRACE_ALLOC")
        os.environ.pop("STALLSCOPE_TRACE_ALLOC", None)

    def tearDown(self):
        _leak._rss_bytes = self.saved_rss
        if self.saved_env is None:
            os.environ.pop("STALLSCOPE_TRACE_ALLOC", None)
        else:
            os.environ["STALLSCOPE_TRACE_ALLOC"] = self.saved_env
        if tracemalloc.is_tracing():
            tracemalloc.stop()

    def ticks(self, watch, n, start=1):
        out = []
        for i in range(start, start + n):
            out.extend(watch.tick(i * SECOND))
        return out

    def test_flat_or_noisy_rss_never_starts_tracing(self):
        _leak._rss_bytes = Readings([500 * MIB, 501 * MIB, 500 * MIB, 502 * MIB, 501 * MIB] * 20)
        watch = _leak.LeakWatch(10, 0)
        self.assertEqual(self.ticks(watch, 100), [])
        self.assertEqual(watch.state, "watch")
        self.assertFalse(tracemalloc.is_tracing())

    def test_slow_rise_below_the_threshold_never_starts(self):
        _leak._rss_bytes = Readings([500 * MIB + i * MIB // 4 for i in range(1000)])  # 256 KiB/s
        watch = _leak.LeakWatch(10, 0)
        self.assertEqual(self.ticks(watch, 30), [])

    def test_a_slow_leak_is_caught_on_the_30_s_scale(self):
        # 1 MiB/s: 5 MiB over six readings a second apart (too little), 30
        # MiB a reading 30 s apart: the slow window has 150 MiB in it.
        _leak._rss_bytes = Readings([500 * MIB + i * MIB for i in range(1000)])
        watch = _leak.LeakWatch(10, 0)
        out = self.ticks(watch, 200)
        self.assertTrue(out and "readings 30 s or more apart" in out[0], out[:1])

    def test_warm_up_growth_is_not_judged(self):
        # Start-up grows fast for three readings, then the job is flat.
        _leak._rss_bytes = Readings([100 * MIB, 400 * MIB, 700 * MIB] + [800 * MIB] * 100)
        self.assertEqual(self.ticks(_leak.LeakWatch(10, 0), 60), [])

    def test_steady_rise_starts_then_stops_tracing(self):
        _leak._rss_bytes = Readings([500 * MIB + i * 40 * MIB for i in range(100)])
        watch = _leak.LeakWatch(10, 3)
        out = self.ticks(watch, 8)
        self.assertEqual(out, [], "three warm-up readings, then five are not yet a window of six")
        out = watch.tick(9 * SECOND)
        self.assertEqual(len(out), 1)
        self.assertTrue(out[0].startswith("alloc_note 10 3 %d tracing started: RSS rose at each of "
                                          "5 readings 1 s" % (9 * SECOND)), out)
        self.assertTrue(tracemalloc.is_tracing())
        # Readings closer than a second apart are not readings.
        self.assertEqual(watch.tick(9 * SECOND + 1), [])
        out = self.ticks(watch, 20, start=10)
        self.assertEqual(watch.state, "done")
        self.assertFalse(tracemalloc.is_tracing(), "tracing must stop after its snapshots")
        self.assertTrue(out[-1].startswith("alloc_note 10 3 "), out)
        self.assertIn("tracing stopped after 4 snapshots", out[-1])
        for line in out[:-1]:
            self.assertRegex(line, r"^alloc_(site|holder) 10 3 \d+ ")
        self.assertEqual(self.ticks(watch, 10, start=40), [], "once done, never again")

    def test_off_never_traces_and_on_starts_at_once(self):
        _leak._rss_bytes = Readings([500 * MIB + i * 40 * MIB for i in range(100)])
        os.environ["STALLSCOPE_TRACE_ALLOC"] = "off"
        self.assertEqual(self.ticks(_leak.LeakWatch(1, 0), 30), [])
        os.environ["STALLSCOPE_TRACE_ALLOC"] = "on"
        _leak._rss_bytes = Readings([500 * MIB])  # flat: on does not wait for growth
        out = _leak.LeakWatch(1, 0).tick(SECOND)
        self.assertEqual(len(out), 1)
        self.assertIn("tracing started: STALLSCOPE_TRACE_ALLOC=on", out[0])

    def test_a_job_that_traces_already_keeps_its_tracing(self):
        tracemalloc.start(2)
        os.environ["STALLSCOPE_TRACE_ALLOC"] = "on"
        watch = _leak.LeakWatch(1, 0)
        self.ticks(watch, 20)
        self.assertEqual(watch.state, "done")
        self.assertTrue(tracemalloc.is_tracing(), "the job's own tracemalloc was stopped")

    def test_a_worker_forked_while_tracing_stops_its_copy(self):
        os.environ["STALLSCOPE_TRACE_ALLOC"] = "on"
        watch = _leak.LeakWatch(1, 0)
        self.assertEqual(len(watch.tick(SECOND)), 1)
        self.assertTrue(tracemalloc.is_tracing())
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # the worker
            try:
                watch.forget_in_child()
                os.write(write, b"1" if tracemalloc.is_tracing() else b"0")
            finally:
                os._exit(0)
        os.close(write)
        self.assertEqual(os.read(read, 1), b"0", "the forked worker kept tracing")
        os.close(read)
        os.waitpid(pid, 0)
        self.assertTrue(tracemalloc.is_tracing(), "the parent's tracing goes on")

    def test_a_failure_is_a_note_never_an_exception(self):
        def broken():
            raise OSError(2, "No such file or directory: '/proc/self/statm'")
        _leak._rss_bytes = broken
        watch = _leak.LeakWatch(7, 1)
        out = watch.tick(SECOND)
        self.assertEqual(len(out), 1)
        self.assertTrue(out[0].startswith("alloc_note 7 1 %d tracing failed: FileNotFoundError" % SECOND), out)
        self.assertEqual(watch.state, "done")
        self.assertEqual(self.ticks(watch, 5, start=2), [])


@unittest.skipIf(not HAVE_TORCH, "python3-torch is not installed: the tensor census is not tested")
class CensusTest(unittest.TestCase):
    """A module of the job's own with a list that keeps tensors, as
    examples/train_cpu.py --mode leak does."""

    @classmethod
    def setUpClass(cls):
        global torch
        import torch as imported
        torch = imported

    SOURCE = (
        "import torch\n"
        "feats = []\n"
        "cache = {}\n"
        "def step(i):\n"
        "    x = torch.zeros(256, 1024)\n"
        "    feats.append(x[:128])  # a view: its storage is counted once\n"
        "    feats.append(x)\n"
        "    cache[i] = torch.ones(16)\n"
    )

    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.path = os.path.join(self.dir.name, "mytrain.py")
        with open(self.path, "w") as f:
            f.write(self.SOURCE)
        self.module = types.ModuleType("mytrain")
        self.module.__file__ = self.path
        exec(compile(self.SOURCE, self.path, "exec"), self.module.__dict__)
        sys.modules["mytrain"] = self.module

    def tearDown(self):
        sys.modules.pop("mytrain", None)
        self.dir.cleanup()
        if tracemalloc.is_tracing():
            tracemalloc.stop()

    def test_holders_their_bytes_and_the_line_that_grows_them(self):
        for i in range(10):
            self.module.step(i)
        census = _leak._Census(torch.Tensor)
        found = census.take()
        where = "the module-level list 'feats' in mytrain.py"
        self.assertIn(where, found)
        n, b, obj, name, path = found[where]
        self.assertEqual(n, 20)
        self.assertEqual(b, 10 * 256 * 1024 * 4, "ten storages of 1 MiB, views not counted twice")
        self.assertIs(obj, self.module.feats)
        self.assertEqual(census.made_at(obj, name, path, []), "%s:6" % _leak._short(self.path))
        # Two lines add to it: the one among the growth sites wins.
        self.assertEqual(census.made_at(obj, name, path, ["%s:7" % _leak._short(self.path)]),
                         "%s:7" % _leak._short(self.path))
        cache = found["the module-level dict 'cache' in mytrain.py"]
        self.assertEqual(cache[0], 10)
        self.assertEqual(census.made_at(cache[2], cache[3], cache[4], []),
                         "%s:8" % _leak._short(self.path))
        # The standard library's and the hook's own modules are not looked at.
        self.assertFalse(any("in _leak.py" in w or "in os.py" in w for w in found), found)

    def test_a_whole_tracing_names_the_holder_and_its_line(self):
        os.environ["STALLSCOPE_TRACE_ALLOC"] = "on"
        try:
            watch = _leak.LeakWatch(5, 0)
            out = []
            for i in range(1, 20):
                self.module.step(i)
                out.extend(watch.tick(i * SECOND))
        finally:
            os.environ.pop("STALLSCOPE_TRACE_ALLOC", None)
        holders = [l for l in out if l.startswith("alloc_holder ")]
        self.assertTrue(holders, out)
        fields = holders[0].split(" ", 8)
        self.assertEqual(fields[8], "the module-level list 'feats' in mytrain.py")
        self.assertGreater(int(fields[6]), 0, "it grew while traced")
        self.assertRegex(fields[7], r"mytrain\.py:[67]$")
        sites = [l for l in out if l.startswith("alloc_site ")]
        self.assertTrue(sites, out)
        self.assertFalse(tracemalloc.is_tracing())


if __name__ == "__main__":
    unittest.main()

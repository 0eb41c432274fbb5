"""`run --profile A:B` in the hook (python/stallscope/_profile.py), against a
stand-in for torch that records what the hook asked of it: the profiler
starts as step A begins, each of A..B is one ProfilerStep#N mark around the
whole step (the fetch of its batch included), a loader that runs out does
not count a step, the trace is written once, under its final name, after
B, and a job that ends inside the window writes what it has at exit.
Standard library only; the real torch profiler is exercised by
tests/e2e/trace_cli.py.

    PYTHONPATH=python python3 -m unittest discover -s python/tests -v
"""
import os
import socket
import sys
import types
import unittest

import stallscope
from receiver import ReceiverTest



def fake_torch(log):
    """A `torch` module with just what _profile.Window uses."""
    torch = types.ModuleType("torch")

    class Profile:
        def __init__(self, activities):
            log.append(("profile", tuple(activities)))

        def start(self):
            log.append(("start",))

        def stop(self):
            log.append(("stop",))

        def export_chrome_trace(self, path):
            log.append(("export", os.path.basename(path)))
            with open(path, "w") as f:
                f.write("[]")

    class Mark:
        def __init__(self, name):
            self.name = name

        def __enter__(self):
            log.append(("enter", self.name))

        def __exit__(self, *a):
            log.append(("exit", self.name))

    torch.profiler = types.SimpleNamespace(
        profile=Profile, ProfilerActivity=types.SimpleNamespace(CPU="CPU", CUDA="CUDA"))
    torch.autograd = types.SimpleNamespace(profiler=types.SimpleNamespace(record_function=Mark))
    torch.cuda = types.SimpleNamespace(is_available=lambda: False)
    return torch


class ProfileWindow(ReceiverTest):
    ENV_KEYS = ("STALLSCOPE_SOCKET", "STALLSCOPE_PROFILE", "STALLSCOPE_PROFILE_DIR", "RANK")

    def setUp(self):
        super().setUp()
        self.log = []
        self.saved_torch = sys.modules.get("torch")
        sys.modules["torch"] = fake_torch(self.log)
        self.enable(RANK=3, STALLSCOPE_PROFILE_DIR=self.dir.name)

    def tearDown(self):
        stallscope._window[0] = None
        if self.saved_torch is None:
            sys.modules.pop("torch", None)
        else:
            sys.modules["torch"] = self.saved_torch
        super().tearDown()

    def marks(self):
        return [e[1] for e in self.log if e[0] == "enter"]

    def test_steps_a_to_b_over_an_epoch_boundary(self):
        os.environ["STALLSCOPE_PROFILE"] = "3:6"
        for epoch in range(2):
            stallscope.epoch(epoch)
            for _ in stallscope.loader([1, 2, 3, 4, 5]):   # steps 0-4, then 5-9
                pass
        self.assertEqual(self.marks(), ["ProfilerStep#3", "ProfilerStep#4", "ProfilerStep#5",
                                        "ProfilerStep#5", "ProfilerStep#6"])
        kinds = [e[0] for e in self.log]
        self.assertEqual(kinds.count("start"), 1)
        self.assertEqual(self.log[-2:], [("stop",), ("export", "rank3.json.tmp")])
        self.assertTrue(os.path.isfile(os.path.join(self.dir.name, "rank3.json")))
        self.assertFalse(os.path.exists(os.path.join(self.dir.name, "rank3.json.tmp")))
        # Every mark opened is closed before the trace is written.
        self.assertEqual(kinds.count("enter"), kinds.count("exit"))
        self.assertIsNone(stallscope._window[0])

    def test_the_traces_writing_is_a_profile_span(self):
        os.environ["STALLSCOPE_PROFILE"] = "1:2"
        for _ in stallscope.loader([1, 2, 3, 4, 5]):
            pass
        spans = [ln.split(" ") for d in self.datagrams() for ln in d.decode().splitlines()
                 if ln.startswith("span ")]
        self.assertEqual([s[3] for s in spans], ["profile"])
        self.assertLessEqual(int(spans[0][4]), int(spans[0][5]))

    def test_a_job_that_ends_inside_the_window_writes_at_exit(self):
        os.environ["STALLSCOPE_PROFILE"] = "1:100"
        for _ in stallscope.loader([1, 2, 3]):
            pass
        self.assertNotIn(("stop",), self.log)
        stallscope._at_exit()
        self.assertIn(("export", "rank3.json.tmp"), self.log)
        self.assertEqual(self.marks(), ["ProfilerStep#1", "ProfilerStep#2", "ProfilerStep#3"])

    def test_no_window_no_torch(self):
        for i, spec in enumerate(("", "5", "7:3", "a:b")):
            os.environ["STALLSCOPE_PROFILE"] = spec
            self.rx.close()
            self.rx = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
            path = os.path.join(self.dir.name, "hook-%d.sock" % i)
            self.rx.bind(path)
            os.environ["STALLSCOPE_SOCKET"] = path
            self.assertEqual(list(stallscope.loader([1, 2, 3])), [1, 2, 3])
            self.assertEqual(self.log, [], spec)


if __name__ == "__main__":
    unittest.main()

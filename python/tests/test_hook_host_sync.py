"""Tests of the hook's host syncs (python/stallscope/_host_sync.py) against a
real receiver. This machine has no GPU, so torch here is a stand-in module
with what the hook touches: torch.cuda.is_available(), synchronize(), Event,
Stream and a Tensor class whose CUDA tensors block in .item() as a GPU's
would. Standard library only.

    PYTHONPATH=python python3 -m unittest discover -s python/tests -v
"""
import sys
import threading
import time
import types
import unittest

import stallscope
from stallscope import _host_sync
from receiver import ReceiverTest

SYNC_S = 0.02


def fake_torch(cuda=True):
    """A module standing for torch on a machine with (or without) CUDA."""
    class Tensor:
        def __init__(self, on_gpu):
            self.on_gpu = on_gpu

        @property
        def is_cuda(self):
            return self.on_gpu

        def item(self):
            if self.on_gpu:
                time.sleep(SYNC_S)    # the kernels that made it still run
            return 1.0

        def __bool__(self):
            return bool(self.item())

    class Event:
        def synchronize(self):
            time.sleep(SYNC_S)

    class Stream(Event):
        pass

    def synchronize(device=None):
        time.sleep(SYNC_S)

    torch = types.ModuleType("torch")
    torch.Tensor = Tensor
    torch.cuda = types.SimpleNamespace(is_available=lambda: cuda, synchronize=synchronize,
                                       Event=Event, Stream=Stream)
    return torch


class HostSyncTest(ReceiverTest):
    def setUp(self):
        super().setUp()
        self.had_torch = sys.modules.get("torch")
        _host_sync._done[0] = None
        del _host_sync.spans[:]

    def tearDown(self):
        if self.had_torch is None:
            sys.modules.pop("torch", None)
        else:
            sys.modules["torch"] = self.had_torch
        _host_sync._done[0] = None
        _host_sync._loop[0] = None
        del _host_sync.spans[:]
        super().tearDown()

    def use(self, torch):
        sys.modules["torch"] = torch
        return torch

    def records(self, kind):
        out = []
        for d in self.datagrams():
            out += [ln.split(" ")[1:] for ln in d.decode().splitlines() if ln.split(" ")[0] == kind]
        return out

    def test_each_step_says_how_long_it_waited_for_the_gpu(self):
        torch = self.use(fake_torch())
        self.enable()
        for i in stallscope.loader(range(6)):
            if i % 2 == 0:
                torch.cuda.synchronize()
            loss = torch.Tensor(True)
            loss.item()                       # a CUDA tensor: it waits
            torch.Tensor(False).item()        # a CPU tensor: not a sync
        recs = [ln for d in self.datagrams() for ln in d.decode().splitlines()]
        steps = [r.split(" ")[1:] for r in recs if r.startswith("step ")]
        syncs = [r.split(" ")[1:] for r in recs if r.startswith("hostsync ")]
        self.assertEqual(len(steps), 6)
        self.assertEqual([s[2] for s in syncs], [str(i) for i in range(6)])
        for s in syncs:
            step, ns, calls = int(s[2]), int(s[3]), int(s[4])
            want = 2 if step % 2 == 0 else 1
            self.assertEqual(calls, want)
            self.assertGreaterEqual(ns, want * SYNC_S * 1e9)
            length = int(steps[step][5])
            self.assertLessEqual(ns, length)
        # Each hostsync line follows its step's line.
        for i, r in enumerate(recs):
            if r.startswith("hostsync "):
                self.assertTrue(recs[i - 1].startswith("step "))
                self.assertEqual(recs[i - 1].split(" ")[3], r.split(" ")[3])

    def test_events_streams_and_bool_are_syncs_too(self):
        torch = self.use(fake_torch())
        self.enable()
        for _ in stallscope.loader(range(2)):
            torch.cuda.Event().synchronize()
            torch.cuda.Stream().synchronize()
            if torch.Tensor(True):           # __bool__, whose item() is not counted again
                pass
        syncs = self.records("hostsync")
        self.assertEqual([int(s[4]) for s in syncs], [3, 3])

    def test_other_threads_and_the_time_between_loops_are_not_a_step(self):
        torch = self.use(fake_torch())
        self.enable()
        for _ in stallscope.loader(range(3)):
            t = threading.Thread(target=torch.cuda.synchronize)
            t.start()
            t.join()
        torch.cuda.synchronize()              # between two loops
        for _ in stallscope.loader(range(2)):
            pass
        self.assertEqual(self.records("hostsync"), [])
        self.assertEqual(_host_sync.spans, [])

    def test_a_sync_inside_next_is_data_wait_not_a_host_sync(self):
        torch = self.use(fake_torch())
        self.enable()

        def prefetched():
            for i in range(3):
                torch.cuda.synchronize()      # a GPU prefetcher waiting in next()
                yield i

        for _ in stallscope.loader(prefetched()):
            pass
        self.assertEqual(self.records("hostsync"), [])

    def test_without_cuda_nothing_is_wrapped(self):
        torch = self.use(fake_torch(cuda=False))
        sync, item = torch.cuda.synchronize, torch.Tensor.item
        self.enable()
        for _ in stallscope.loader(range(2)):
            torch.cuda.synchronize()
        self.assertIs(torch.cuda.synchronize, sync)
        self.assertIs(torch.Tensor.item, item)
        self.assertEqual(self.records("hostsync"), [])

    def test_outside_stallscope_nothing_is_wrapped(self):
        torch = self.use(fake_torch())
        sync = torch.cuda.synchronize
        for _ in stallscope.loader(range(2)):
            torch.cuda.synchronize()
        self.assertIs(torch.cuda.synchronize, sync)

    def test_per_step_places_each_sync_in_its_step(self):
        _host_sync.spans[:] = [(5, 8), (12, 14), (15, 30), (31, 33), (40, 41)]
        # Steps [10, 20) and [20, 35); (5, 8) is before any, (40, 41) after.
        got = _host_sync.per_step([(10, 20), (20, 35)])
        self.assertEqual(got, [(2 + 5, 2), (2, 1)])        # (15, 30) is cut at its step's end
        self.assertEqual(_host_sync.spans, [(40, 41)])     # left for the next steps
        self.assertIsNone(_host_sync.per_step([(50, 60)]))
        self.assertEqual(_host_sync.spans, [])


if __name__ == "__main__":
    unittest.main()

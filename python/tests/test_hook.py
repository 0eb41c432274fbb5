"""Tests of the Python hook (python/stallscope) against a real receiver: an
AF_UNIX SOCK_DGRAM socket bound in a temporary folder, read as
`stallscope run` reads it (docs/hook-protocol.md). Standard library only.

    PYTHONPATH=python python3 -m unittest discover -s python/tests -v
"""
import os
import socket
import sys
import time
import unittest

import stallscope
from receiver import ReceiverTest



class FakeLoader:
    """Looks like a torch DataLoader: its settings and a dataset with len()."""

    def __init__(self, items, wait_s=0.0):
        self.items = items
        self.wait_s = wait_s
        self.batch_size = 8
        self.num_workers = 2
        self.pin_memory = True
        self.prefetch_factor = 4
        self.persistent_workers = True
        self.dataset = list(range(100))

    def __iter__(self):
        for x in self.items:
            if self.wait_s:
                time.sleep(self.wait_s)
            yield x

    def __len__(self):
        return len(self.items)


class HookTest(ReceiverTest):
    def records(self, wait_s=0.2):
        lines = []
        for d in self.datagrams(wait_s):
            self.assertLessEqual(len(d), 16 * 1024)
            text = d.decode()
            self.assertTrue(text.endswith("\n"))
            lines += [ln.split(" ") for ln in text.splitlines()]
        return lines

    def of(self, recs, kind):
        return [r[1:] for r in recs if r[0] == kind]

    # --- outside stallscope -------------------------------------------------

    def test_disabled_is_identity_and_noop(self):
        items = [1, 2, 3]
        self.assertIs(stallscope.loader(items), items)
        self.assertIsNone(stallscope.epoch(0))
        self.assertFalse(stallscope.enabled())
        os.environ["STALLSCOPE_SOCKET"] = ""
        self.assertIs(stallscope.loader(items), items)
        self.assertEqual(self.datagrams(0.05), [])

    def test_missing_socket_never_raises_and_counts(self):
        os.environ["STALLSCOPE_SOCKET"] = os.path.join(self.dir.name, "nobody")
        self.assertTrue(stallscope.enabled())
        stallscope.epoch(0)
        got = list(stallscope.loader(range(200)))
        stallscope.epoch(1)
        self.assertEqual(got, list(range(200)))
        self.assertGreater(stallscope._state.dropped, 0)

    def test_receiver_gone_never_raises(self):
        self.enable()
        wrapped = stallscope.loader(list(range(100)))
        self.rx.close()                           # the path stays: ECONNREFUSED
        self.assertEqual(list(wrapped), list(range(100)))
        dropped = stallscope._state.dropped
        self.assertGreater(dropped, 0)
        os.unlink(self.path)                      # now ENOENT
        self.assertEqual(list(wrapped), list(range(100)))
        self.assertGreater(stallscope._state.dropped, dropped)
        stallscope.epoch(1)
        stallscope._at_exit()
        # Something else now owns the path (not a datagram socket).
        with open(self.path, "w"):
            pass
        self.assertEqual(list(stallscope.loader([7])), [7])
        self.assertGreater(stallscope._state.dropped, 0)

    # --- records and fields -------------------------------------------------

    def test_records_and_fields(self):
        self.enable(RANK=3, LOCAL_RANK=1, WORLD_SIZE=4)
        self.assertTrue(stallscope.enabled())
        items = [object() for _ in range(10)]
        stallscope.epoch(0)
        wrapped = stallscope.loader(FakeLoader(items))
        self.assertEqual(len(wrapped), 10)
        self.assertEqual(wrapped.batch_size, 8)  # attributes pass through
        before = time.monotonic_ns()
        got = list(wrapped)
        after = time.monotonic_ns()
        self.assertEqual(len(got), 10)
        for a, b in zip(got, items):
            self.assertIs(a, b)

        recs = self.records()
        pid = str(os.getpid())
        self.assertEqual(recs[0], ["hello", pid, "3", "1", "4"])
        self.assertEqual(recs[1], ["host", pid, "3", socket.gethostname()])
        self.assertEqual(self.of(recs, "epoch")[0][:3], [pid, "3", "0"])
        self.assertEqual(self.of(recs, "loader"),
                         [[pid, "3", "8", "2", "1", "4", "1", "100", "0"]])
        self.assertEqual(list(stallscope.loader(wrapped._inner)), items)
        self.assertEqual(self.of(self.records(), "loader"), [])  # once per loader
        steps = self.of(recs, "step")
        self.assertEqual([s[2] for s in steps], [str(i) for i in range(10)])
        for s in steps:
            self.assertEqual(s[:2], [pid, "3"])
            t_end, wait, step = int(s[3]), int(s[4]), int(s[5])
            self.assertTrue(before <= t_end <= after)
            self.assertTrue(0 <= wait <= step)
        # Each step ends where the next one starts.
        for a, b in zip(steps, steps[1:]):
            self.assertEqual(int(b[3]) - int(b[5]), int(a[3]))
        self.assertNotIn("torch", sys.modules)  # the hook never imports it

    def test_plain_iterable_sends_zeros(self):
        self.enable(LOCAL_RANK=2)
        gen = (i * i for i in range(5))
        wrapped = stallscope.loader(gen)
        with self.assertRaises(TypeError):
            len(wrapped)
        self.assertEqual(list(wrapped), [0, 1, 4, 9, 16])
        recs = self.records()
        pid = str(os.getpid())
        self.assertEqual(recs[0], ["hello", pid, "2", "2", "1"])
        self.assertEqual(self.of(recs, "loader"),
                         [[pid, "2", "0", "0", "0", "0", "0", "-1", "0"]])
        self.assertEqual(len(self.of(recs, "step")), 5)

    def test_no_workers_means_no_prefetch(self):
        self.enable()
        fl = FakeLoader([1])
        fl.num_workers, fl.batch_size, fl.dataset = 0, None, object()
        list(stallscope.loader(fl))
        loader_rec = self.of(self.records(), "loader")[0]
        self.assertEqual(loader_rec[2:], ["0", "0", "1", "0", "1", "-1", "0"])

    def test_epoch_marks_and_step_numbers_continue(self):
        self.enable()
        for e in range(3):
            stallscope.epoch(e)
            list(stallscope.loader(range(4)))
        recs = [r for r in self.records() if r[0] in ("epoch", "step")]
        kinds = [r[0] for r in recs]
        self.assertEqual(kinds, (["epoch"] + ["step"] * 4) * 3)
        self.assertEqual([r[3] for r in recs if r[0] == "epoch"], ["0", "1", "2"])
        self.assertEqual([int(r[3]) for r in recs if r[0] == "step"], list(range(12)))

    def test_batching_64_records_per_datagram(self):
        self.enable()
        list(stallscope.loader(range(300)))
        grams = self.datagrams()
        counts = [d.count(b"\nstep ") + d.startswith(b"step ") for d in grams]
        self.assertEqual(sum(counts), 300)
        self.assertLessEqual(max(counts), 64)
        self.assertGreaterEqual(len(grams), 5)

    def test_half_second_flush(self):
        self.enable()
        it = iter(stallscope.loader(range(3)))
        next(it)
        self.datagrams(0.05)                    # the hello and loader records
        next(it)                                # step 0 ends: not sent yet
        self.assertEqual(self.datagrams(0.05), [])
        time.sleep(0.55)
        next(it)                                # step 1 ends, 0.5 s later
        steps = self.of(self.records(), "step")
        self.assertEqual([s[2] for s in steps], ["0", "1"])

    # --- timing -------------------------------------------------------------

    def test_wait_and_step_times(self):
        self.enable()
        # Far enough apart that a wait holding the body (or a step missing
        # it) shows, with room for a busy machine's scheduling delays.
        wait_s, body_s = 0.05, 0.1
        for _ in stallscope.loader(FakeLoader(list(range(5)), wait_s=wait_s)):
            time.sleep(body_s)
        steps = self.of(self.records(), "step")
        self.assertEqual(len(steps), 5)
        for s in steps:
            wait, step = int(s[4]) / 1e9, int(s[5]) / 1e9
            self.assertGreaterEqual(wait, wait_s)
            self.assertLess(wait, wait_s + 0.04)
            self.assertGreaterEqual(step, wait_s + body_s)
            self.assertLess(step, wait_s + body_s + 0.06)

    def test_break_records_the_last_step(self):
        self.enable()
        for i in stallscope.loader(range(100)):
            time.sleep(0.01)
            if i == 4:
                break
        steps = self.of(self.records(), "step")
        self.assertEqual(len(steps), 5)
        self.assertGreaterEqual(int(steps[-1][5]), 10_000_000)

    def test_loader_exception_reaches_the_job(self):
        self.enable()

        def broken():
            yield 1
            raise ValueError("bad sample")

        with self.assertRaises(ValueError):
            for _ in stallscope.loader(broken()):
                pass

    # --- spans: evaluation loops and checkpoints ------------------------------

    def test_an_eval_loop_is_one_span_and_no_steps(self):
        self.enable()
        list(stallscope.loader(range(3)))
        t0 = time.monotonic_ns()
        for _ in stallscope.loader(FakeLoader(list(range(4))), phase="eval"):
            time.sleep(0.02)
        t1 = time.monotonic_ns()
        recs = self.records()
        self.assertEqual(len(self.of(recs, "step")), 3)       # the training loop's only
        spans = self.of(recs, "span")
        self.assertEqual(len(spans), 1)
        pid, rank, kind, start, end = spans[0]
        self.assertEqual((int(pid), kind), (os.getpid(), "eval"))
        self.assertGreaterEqual(int(start), t0)
        self.assertLessEqual(int(end), t1)
        self.assertGreaterEqual(int(end) - int(start), 4 * 20_000_000)
        # The eval loader's settings are no training loader's.
        self.assertEqual(len(self.of(recs, "loader")), 1)

    def test_an_eval_loop_left_by_break_or_an_exception_still_ends_its_span(self):
        self.enable()
        for i in stallscope.loader(range(100), phase="eval"):
            if i == 2:
                break

        def broken():
            yield 1
            raise ValueError("bad sample")

        with self.assertRaises(ValueError):
            for _ in stallscope.loader(broken(), phase="eval"):
                pass
        recs = self.records()
        self.assertEqual([s[2] for s in self.of(recs, "span")], ["eval", "eval"])
        self.assertEqual(len(self.of(recs, "exception")), 1)

    def test_checkpoint_is_a_span_and_passes_exceptions_through(self):
        self.enable()
        with stallscope.checkpoint():
            time.sleep(0.03)
        with self.assertRaises(OSError):
            with stallscope.checkpoint():
                raise OSError("disk full")
        spans = self.of(self.records(), "span")
        self.assertEqual([s[2] for s in spans], ["checkpoint", "checkpoint"])
        self.assertGreaterEqual(int(spans[0][4]) - int(spans[0][3]), 30_000_000)

    def test_checkpoint_and_eval_outside_stallscope_do_nothing(self):
        items = [1, 2]
        self.assertIs(stallscope.loader(items, phase="eval"), items)
        with stallscope.checkpoint():
            pass
        self.assertEqual(self.datagrams(0.05), [])

    # --- full socket, fork --------------------------------------------------

    def test_full_socket_drops_and_counts(self):
        self.enable()
        # Nobody reads: the receiver's queue fills (net.unix.max_dgram_qlen).
        wrapped = stallscope.loader(range(64 * 100))
        t0 = time.monotonic()
        self.assertEqual(sum(1 for _ in wrapped), 64 * 100)
        self.assertLess(time.monotonic() - t0, 2.0)  # never blocked
        dropped = stallscope._state.dropped
        self.assertGreater(dropped, 0)
        received = self.records()
        self.assertEqual(self.of(received, "dropped"), [])
        stallscope.epoch(1)                       # the next send reports drops
        later = self.records()
        self.assertEqual(self.of(later, "dropped"),
                         [[str(os.getpid()), "0", str(dropped)]])
        self.assertEqual(len(self.of(later, "epoch")), 1)
        self.assertLess(len(self.of(received, "step")), 64 * 100)
        # Counts are deltas: nothing new dropped, nothing more reported.
        stallscope.epoch(2)
        self.assertEqual(self.of(self.records(), "dropped"), [])
        # Steps lost with their datagrams leave gaps in the step numbers.
        numbers = [int(s[2]) for s in self.of(received, "step")]
        self.assertEqual(numbers, sorted(numbers))

    def test_fork_does_not_double_send(self):
        self.enable()
        it = iter(stallscope.loader(range(10)))
        for _ in range(5):
            next(it)                              # 4 steps wait in the buffer
        pid = os.fork()
        if pid == 0:                              # a DataLoader worker, say
            code = 0
            try:
                stallscope._flush()
                stallscope._at_exit()
                stallscope.epoch(7)               # its own hello, its own pid
            except BaseException:
                code = 1
            os._exit(code)
        _, status = os.waitpid(pid, 0)
        self.assertEqual(status, 0)
        list(it)
        recs = self.records()
        steps = self.of(recs, "step")
        self.assertEqual([s[2] for s in steps], [str(i) for i in range(10)])
        self.assertTrue(all(s[0] == str(os.getpid()) for s in steps))
        self.assertIn(["hello", str(pid), "0", "0", "1"], recs)
        self.assertEqual([r[0] for r in self.of(recs, "epoch")], [str(pid)])


if __name__ == "__main__":
    unittest.main()

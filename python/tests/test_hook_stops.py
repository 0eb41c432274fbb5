"""Tests of what the hook keeps for a rank that stops (python/stallscope/_stops.py):
the step ring a killed process leaves behind, the exception records, Python's
exit, and the stacks faulthandler writes on the signal `run` sends at a hang.
Against a real receiver socket, as test_hook.py. Standard library only.

    PYTHONPATH=python python3 -m unittest discover -s python/tests -v
"""
import io
import os
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
import unittest
from contextlib import redirect_stderr

import stallscope
from stallscope import _stops
from receiver import ReceiverTest

HERE = os.path.dirname(os.path.abspath(__file__))


def read_ring(path):
    with open(path, "rb") as f:
        data = f.read()
    words = struct.unpack("<%dq" % (len(data) // 8), data)
    header = words[:_stops.HEADER_WORDS]
    slots = [words[i:i + 3] for i in range(_stops.HEADER_WORDS, len(words), 3)]
    steps = sorted((s for s in slots if s[2] > 0), key=lambda s: s[2])
    return header, steps


class StopsTest(ReceiverTest):
    ENV_KEYS = ("STALLSCOPE_SOCKET", "RANK", "LOCAL_RANK", "WORLD_SIZE", "STALLSCOPE_RING",
                "STALLSCOPE_STACKS", "STALLSCOPE_STACK_SIGNAL")

    def lines(self, wait_s=0.2):
        return [ln for d in self.datagrams(wait_s) for ln in d.decode().splitlines()]

    def test_the_ring_holds_every_step(self):
        self.enable(RANK=2)
        self.assertEqual(list(stallscope.loader(range(10))), list(range(10)))
        header, steps = read_ring(os.path.join(self.dir.name, "ring-%d" % os.getpid()))
        self.assertEqual(header[_stops.W_MAGIC], _stops.MAGIC)
        self.assertEqual(header[_stops.W_VERSION], 1)
        self.assertEqual(header[_stops.W_PID], os.getpid())
        self.assertEqual(header[_stops.W_RANK], 2)
        self.assertEqual(header[_stops.W_MAIN_THREAD], threading.main_thread().ident)
        self.assertEqual(len(steps), 10)
        for t0, t1, t2 in steps:
            self.assertLessEqual(t0, t1)
            self.assertLessEqual(t1, t2)
        sent = [ln.split() for ln in self.lines() if ln.startswith("step ")]
        self.assertEqual([int(s[4]) for s in sent], [s[2] for s in steps])

    def test_no_ring_when_turned_off(self):
        self.enable(STALLSCOPE_RING=0)
        list(stallscope.loader(range(3)))
        self.assertFalse(os.path.exists(os.path.join(self.dir.name, "ring-%d" % os.getpid())))

    def test_a_killed_process_leaves_its_steps_in_the_ring(self):
        # 20 steps in well under 500 ms: none sent as a datagram before the kill.
        code = ("import os, signal, stallscope\n"
                "it = iter(stallscope.loader(range(100)))\n"
                "for _ in range(21):\n"
                "    next(it)\n"
                "os.kill(os.getpid(), signal.SIGKILL)\n")
        env = dict(os.environ, STALLSCOPE_SOCKET=self.path, RANK="1",
                   PYTHONPATH=os.path.dirname(HERE))
        proc = subprocess.run([sys.executable, "-c", code], env=env, timeout=60)
        self.assertEqual(proc.returncode, -signal.SIGKILL)
        steps_sent = [ln for ln in self.lines() if ln.startswith("step ")]
        self.assertEqual(steps_sent, [])
        rings = [n for n in os.listdir(self.dir.name) if n.startswith("ring-")]
        self.assertEqual(len(rings), 1, rings)
        header, steps = read_ring(os.path.join(self.dir.name, rings[0]))
        self.assertEqual(header[_stops.W_RANK], 1)
        self.assertEqual(len(steps), 20)   # the 21st was in progress

    def test_an_exception_through_the_loader_is_told_and_passed_on(self):
        self.enable()

        def broken():
            yield 1
            raise RuntimeError("DataLoader worker (pid 4242) is killed by signal: Killed.")

        with self.assertRaises(RuntimeError):
            for _ in stallscope.loader(broken()):
                pass
        rec = [ln for ln in self.lines() if ln.startswith("exception ")]
        self.assertEqual(len(rec), 1, rec)
        head, detail = rec[0].split(" ", 4)[:4], rec[0].split(" ", 4)[4]
        self.assertEqual(int(head[1]), os.getpid())
        where, thread, kind, message, frame = detail.split("\t")
        self.assertEqual((where, thread, kind), ("loader", "MainThread", "RuntimeError"))
        self.assertIn("pid 4242", message)
        self.assertIn("test_hook_stops.py:", frame)
        self.assertTrue(frame.endswith(" in broken"), frame)

    def test_excepthooks_report_then_chain(self):
        self.enable()
        stallscope.enabled()
        try:
            raise ValueError("bad\nshard\t7")
        except ValueError:
            exc_type, exc, tb = sys.exc_info()
        err = io.StringIO()
        with redirect_stderr(err):
            sys.excepthook(exc_type, exc, tb)       # ours, then Python's own
        self.assertIn("ValueError: bad", err.getvalue())
        t = threading.Thread(target=lambda: 1 / 0, name="prefetcher")
        with redirect_stderr(io.StringIO()):
            t.start()
            t.join()
        recs = [ln.split(" ", 4)[4].split("\t") for ln in self.lines()
                if ln.startswith("exception ")]
        self.assertEqual(len(recs), 2, recs)
        self.assertEqual(recs[0][:4], ["main", "MainThread", "ValueError", "bad shard 7"])
        self.assertEqual(recs[1][:3], ["thread", "prefetcher", "ZeroDivisionError"])
        self.assertIn("test_hook_stops.py:", recs[1][4])

    def test_bye_at_exit(self):
        self.enable()
        stallscope.enabled()
        stallscope._at_exit()
        bye = [ln.split() for ln in self.lines() if ln.startswith("bye ")]
        self.assertEqual(len(bye), 1)
        self.assertEqual(int(bye[0][1]), os.getpid())

    def test_stacks_on_the_signal_and_never_over_a_handler(self):
        stacks = os.path.join(self.dir.name, "stacks")
        os.mkdir(stacks)
        sig = signal.SIGRTMIN + 6
        self.enable(STALLSCOPE_STACKS=stacks, STALLSCOPE_STACK_SIGNAL=sig)
        list(stallscope.loader(range(2)))
        header, _ = read_ring(os.path.join(self.dir.name, "ring-%d" % os.getpid()))
        self.assertEqual(header[_stops.W_STACK_SIGNAL], sig)
        os.kill(os.getpid(), sig)
        time.sleep(0.1)
        name = os.path.join(stacks, "rank-0.%d.txt" % os.getpid())
        with open(name) as f:
            text = f.read()
        self.assertIn("(most recent call first)", text)
        self.assertIn("test_stacks_on_the_signal_and_never_over_a_handler", text)
        import faulthandler
        faulthandler.unregister(sig)
        # A job that handles the signal itself keeps it: nothing armed.
        previous = signal.signal(sig, lambda *a: None)
        try:
            self.rx.close()
            os.unlink(self.path)
            self.rx = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
            self.path = os.path.join(self.dir.name, "hook2.sock")
            self.rx.bind(self.path)
            self.enable(STALLSCOPE_STACKS=stacks, STALLSCOPE_STACK_SIGNAL=sig)
            list(stallscope.loader(range(2)))
            header, _ = read_ring(os.path.join(self.dir.name, "ring-%d" % os.getpid()))
            self.assertEqual(header[_stops.W_STACK_SIGNAL], 0)
        finally:
            signal.signal(sig, previous)

    def test_collective_words(self):
        self.enable()
        stallscope.enabled()
        ring = stallscope._ring[0]
        w = ring.words
        base_launched, base_done = w[_stops.W_LAUNCHED], w[_stops.W_DONE]
        ring.collective_entered(1000)
        ring.collective_entered(2000)            # a second bucket: the first's time stays
        self.assertEqual(w[_stops.W_WAIT_SINCE], 1000)
        ring.collective_done()
        ring.collective_done()
        self.assertEqual(w[_stops.W_LAUNCHED] - base_launched, 2)
        self.assertEqual(w[_stops.W_DONE] - base_done, 2)
        ring.collective_entered(3000)
        self.assertEqual(w[_stops.W_WAIT_SINCE], 3000)


if __name__ == "__main__":
    unittest.main()

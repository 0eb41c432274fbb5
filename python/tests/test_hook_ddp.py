"""Tests of the hook's distributed parts (python/stallscope): the host
record, STALLSCOPE_MAX_STEPS, the all-reduce span arithmetic and
stallscope.ddp(model) on a real DistributedDataParallel model (Debian's
python3-torch, gloo, one process), read from a real receiving socket.

    PYTHONPATH=python python3 -m unittest discover -s python/tests -v
"""
import os
import socket
import subprocess
import sys
import textwrap
import time
import unittest

import stallscope
from receiver import ReceiverTest

HERE = os.path.dirname(os.path.abspath(__file__))
PYDIR = os.path.dirname(HERE)

try:
    import importlib.util
    HAVE_TORCH = importlib.util.find_spec("torch") is not None
except Exception:
    HAVE_TORCH = False


class Receiver(ReceiverTest):
    ENV_KEYS = ReceiverTest.ENV_KEYS + ("STALLSCOPE_MAX_STEPS", "MASTER_ADDR", "MASTER_PORT")

    def tearDown(self):
        stallscope._ddp_on[0] = False
        del stallscope._sync[:]
        super().tearDown()

    def records(self, wait_s=0.3):
        return [ln.split(" ") for d in self.datagrams(wait_s) for ln in d.decode().splitlines()]


@unittest.skipUnless(HAVE_TORCH, "needs torch (apt install python3-torch)")
class EvalLoops(Receiver):
    def test_a_loop_under_no_grad_is_an_eval_loop_unless_told_train(self):
        import torch
        os.environ["STALLSCOPE_SOCKET"] = self.path
        stallscope._trained[0] = False
        with torch.no_grad():              # before any training: a job that infers
            list(stallscope.loader(range(4)))
        list(stallscope.loader(range(3)))  # training
        with torch.no_grad():
            list(stallscope.loader(range(5)))
            list(stallscope.loader(range(2), phase="train"))
        with torch.inference_mode():
            list(stallscope.loader(range(5)))
        recs = self.records()
        self.assertEqual([r[3] for r in recs if r[0] == "span"], ["eval", "eval"])
        self.assertEqual(len([r for r in recs if r[0] == "step"]), 4 + 3 + 2)


class HostAndLimits(Receiver):
    def test_host_record_follows_hello(self):
        os.environ.update(STALLSCOPE_SOCKET=self.path, RANK="5", WORLD_SIZE="8")
        stallscope.epoch(0)
        recs = self.records()
        pid = str(os.getpid())
        kinds = [r[0] for r in recs]
        self.assertIn("hello", kinds)
        host = recs[kinds.index("host")]
        self.assertEqual(host, ["host", pid, "5", socket.gethostname()])
        self.assertGreater(kinds.index("host"), kinds.index("hello"))

    def test_max_steps_ends_the_process_after_n_steps(self):
        script = textwrap.dedent("""
            import stallscope
            for epoch in range(3):
                stallscope.epoch(epoch)
                for x in stallscope.loader(list(range(4))):
                    pass
            print("never reached")
        """)
        env = dict(os.environ, STALLSCOPE_SOCKET=self.path, STALLSCOPE_MAX_STEPS="6",
                   PYTHONPATH=PYDIR)
        done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                              text=True, timeout=60)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertNotIn("never reached", done.stdout)
        steps = [r for r in self.records() if r[0] == "step"]
        self.assertEqual([s[3] for s in steps], [str(i) for i in range(6)])  # all sent

    def test_no_limit_outside_stallscope_or_when_zero(self):
        os.environ["STALLSCOPE_MAX_STEPS"] = "2"
        self.assertEqual(list(stallscope.loader(range(5))), list(range(5)))  # hook off
        os.environ.update(STALLSCOPE_SOCKET=self.path, STALLSCOPE_MAX_STEPS="0")
        self.assertEqual(list(stallscope.loader(range(5))), list(range(5)))

    def test_sync_spans_overlap_once_and_stop_at_the_step_end(self):
        # [0,10] and [5,20] overlap: 20; [30,40] apart: 10; [45,200] cut at 60: 15.
        stallscope._sync[:] = [(30, 40, 2), (0, 10, 0), (5, 20, 1), (45, 200, 3)]
        total, spans = stallscope._sync_ns(60)
        self.assertEqual(total, 45)
        # each bucket's own span, as it was: the bucket records carry them
        self.assertEqual(spans, [(0, 10, 0), (5, 20, 1), (30, 40, 2), (45, 200, 3)])
        self.assertEqual(stallscope._sync, [])  # taken
        self.assertEqual(stallscope._sync_ns(60), (0, []))

    def test_ddp_is_a_no_op_without_stallscope_or_torch_distributed(self):
        sentinel = object()
        self.assertIs(stallscope.ddp(sentinel), sentinel)       # hook off
        os.environ["STALLSCOPE_SOCKET"] = self.path
        self.assertIs(stallscope.ddp(sentinel), sentinel)       # no process group
        self.assertFalse(stallscope._ddp_on[0])


@unittest.skipUnless(HAVE_TORCH, "python3-torch is not installed")
class RealDdp(Receiver):
    def test_timed_allreduce_reports_sync_and_keeps_gradients(self):
        import torch
        import torch.distributed as dist
        from torch.nn.parallel import DistributedDataParallel

        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        os.environ.update(STALLSCOPE_SOCKET=self.path, RANK="0", WORLD_SIZE="1",
                          MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
        dist.init_process_group("gloo", rank=0, world_size=1)
        try:
            torch.manual_seed(0)
            plain = torch.nn.Linear(16, 4)
            twin = torch.nn.Linear(16, 4)
            twin.load_state_dict(plain.state_dict())
            model = stallscope.ddp(DistributedDataParallel(twin))
            self.assertTrue(stallscope._ddp_on[0])
            batches = [torch.randn(8, 16) for _ in range(5)]
            for x in stallscope.loader(batches):
                model.zero_grad()
                model(x).square().sum().backward()
            plain(batches[-1]).square().sum().backward()
            # Sum then divide by the world size (1): DDP's own result.
            self.assertTrue(torch.allclose(plain.weight.grad, twin.weight.grad))
            # The bucket buffer handed to all_reduce is held from Python
            # while the model lives (see _bucket_buffers): its gradients'
            # storage, so Python, not a gloo worker, frees it.
            live = [held for m, held in stallscope._bucket_buffers if m() is model]
            self.assertEqual(len(live), 1)
            self.assertEqual(sorted(live[0]), [0])
            self.assertEqual(live[0][0].numel(), 16 * 4 + 4)
        finally:
            dist.destroy_process_group()
        recs = self.records()
        steps = {r[3]: r for r in recs if r[0] == "step"}
        syncs = [r for r in recs if r[0] == "sync"]
        self.assertEqual(sorted(steps), [str(i) for i in range(5)])
        self.assertEqual([s[3] for s in syncs], [str(i) for i in range(5)])
        for s in syncs:
            pid, rank, step, sync_ns, cpu_ns = s[1], s[2], s[3], int(s[4]), int(s[5])
            self.assertEqual((pid, rank), (str(os.getpid()), "0"))
            self.assertGreater(sync_ns, 0)                  # an all-reduce ran
            self.assertLessEqual(sync_ns, int(steps[step][6]))
            self.assertGreater(cpu_ns, 0)
        # One bucket record per bucket and step (a Linear(16, 4) is one
        # bucket), after its step's sync record: launch before done.
        buckets = [r for r in recs if r[0] == "bucket"]
        self.assertEqual([b[3] for b in buckets], [str(i) for i in range(5)])
        for b in buckets:
            self.assertEqual((b[1], b[2], b[4]), (str(os.getpid()), "0", "0"))
            self.assertLess(int(b[5]), int(b[6]))
        order = [r[0] + r[3] for r in recs if r[0] in ("sync", "bucket")]
        self.assertEqual(order, [kind + str(i) for i in range(5) for kind in ("sync", "bucket")])


# Two gloo ranks, each timing its all-reduces through stallscope.ddp and
# ending right after its last backward (STALLSCOPE_MAX_STEPS): the moment a
# communication thread may still be freeing the last bucket callback.
TWO_RANK_JOB = textwrap.dedent("""
    import torch, torch.distributed as dist, stallscope
    from torch.nn.parallel import DistributedDataParallel
    dist.init_process_group("gloo")
    model = stallscope.ddp(DistributedDataParallel(torch.nn.Linear(64, 64)))
    for x in stallscope.loader([torch.randn(8, 64) for _ in range(100)]):
        model(x).sum().backward()
    raise SystemExit(3)   # not reached: the limit ends the process first
""")


@unittest.skipUnless(HAVE_TORCH, "python3-torch is not installed")
class ExitAfterLastStep(Receiver):
    def test_ranks_exit_cleanly_right_after_the_last_all_reduce(self):
        # Before the hook drained its callbacks at exit, about half of these
        # runs aborted one rank ("terminate called without an active
        # exception", status 134) as the interpreter finalized.
        job = os.path.join(self.dir.name, "job.py")
        with open(job, "w") as f:
            f.write(TWO_RANK_JOB)
        for attempt in range(6):
            with socket.socket() as s:
                s.bind(("127.0.0.1", 0))
                port = s.getsockname()[1]
            procs = []
            for rank in range(2):
                env = dict(os.environ, STALLSCOPE_SOCKET=self.path, RANK=str(rank),
                           WORLD_SIZE="2", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
                           STALLSCOPE_MAX_STEPS="3", OMP_NUM_THREADS="1", PYTHONPATH=PYDIR)
                procs.append(subprocess.Popen([sys.executable, job], env=env,
                                              stderr=subprocess.PIPE, text=True))
            for rank, p in enumerate(procs):
                try:
                    _, err = p.communicate(timeout=120)
                except subprocess.TimeoutExpired:
                    for q in procs:
                        q.kill()
                    self.fail("run %d: rank %d still running after 120 s" % (attempt, rank))
                self.assertEqual(p.returncode, 0, "run %d: rank %d exited %d; stderr: %s"
                                 % (attempt, rank, p.returncode, err[-2000:]))
            steps = sorted((r[2], r[3]) for r in self.records(0.1) if r[0] == "step")
            self.assertEqual(steps, [(str(rank), str(i)) for rank in range(2) for i in range(3)],
                             "run %d: 3 steps per rank" % attempt)

    def test_a_forked_worker_does_not_wait_for_inherited_callbacks(self):
        # A DataLoader worker forked while a bucket callback was live: no
        # communication thread exists in it to free that callback.
        stallscope._ddp_on[0] = True
        stallscope._live_callbacks.add(-2)
        try:
            pid = os.fork()
            if pid == 0:
                code = 1
                try:
                    t = time.monotonic()
                    stallscope._at_exit()
                    code = 0 if time.monotonic() - t < 0.5 else 1
                finally:
                    os._exit(code)
            _, status = os.waitpid(pid, 0)
        finally:
            stallscope._live_callbacks.discard(-2)
        self.assertEqual(status, 0, "the worker waited at exit for its parent's callbacks")

    def test_drain_is_bounded_when_a_callback_is_never_freed(self):
        stallscope._live_callbacks.add(-1)       # a collective that never completes
        try:
            t = time.monotonic()
            stallscope._drain_callbacks(0.05)
            waited = time.monotonic() - t
        finally:
            stallscope._live_callbacks.discard(-1)
        self.assertGreaterEqual(waited, 0.05)
        self.assertLess(waited, 1.0)


if __name__ == "__main__":
    unittest.main()

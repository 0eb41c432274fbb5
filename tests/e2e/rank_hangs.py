"""A job that hangs, end to end, and one that only pauses: real two-rank
PyTorch DDP jobs (examples/train_cpu.py --ddp, gloo on the CPU) under
`stallscope run --procs 2 --hang-after S`:
- rank 1 asleep for good at a step while rank 0 waits in its gradient
  all-reduce: `run` must say so while it happens, name rank 1's own frame
  (file:line in function, from its Python stack) and rank 0 as waiting in a
  collective, write both ranks' stacks beside the run file, and with
  --hang-action kill end the job (SIGTERM: status 143);
- rank 0 evaluating for several --hang-after periods while rank 1 waits in a
  barrier: not a hang (rank 0's stack moves and it uses a CPU);
- a rank SIGKILLed in a job started by Open MPI's mpirun (not stallscope's
  launcher): the rank that vanished first is named.

Run: /usr/bin/python3 rank_hangs.py PATH_TO_STALLSCOPE
"""

import json
import os
import shutil
import signal
import socket
import tempfile
import unittest

import e2e_common as e2e

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLE = os.path.join(REPO, "examples", "train_cpu.py")
PYTHON = "/usr/bin/python3"
MPIRUN = shutil.which("mpirun")
TMP = None


def setUpModule():
    global TMP
    TMP = tempfile.mkdtemp(prefix="stallscope-e2e-hangs-")


def tearDownModule():
    shutil.rmtree(TMP, ignore_errors=True)


def have_torch():
    return e2e.have_torch(PYTHON, "torch.distributed")


def job(*extra):
    return [PYTHON, EXAMPLE, "--ddp", "--data", os.path.join(TMP, "images"), "--make-images",
            "160", "--batch-size", "4", "--epochs", "1", "--steps-per-epoch", "30",
            "--step-ms", "20", "--workers", "0"] + list(extra)


# A rank of test_a_hang_asks_the_flight_recorder_for_a_dump: argv[1] is the
# prefix of the dumps to hand over, as the rank's Flight Recorder would.
PIPE_RANK = r"""
import os, shutil, sys, threading, time
import stallscope
rank = int(os.environ["RANK"])
pipe = os.environ["TORCH_NCCL_DEBUG_INFO_PIPE_FILE"] + str(rank) + ".pipe"
os.mkfifo(pipe)
def watchdog():
    fd = os.open(pipe, os.O_RDONLY | os.O_NONBLOCK)
    while True:
        try:
            asked = os.read(fd, 64)
        except BlockingIOError:
            asked = b""
        if asked:
            shutil.copy(sys.argv[1] + str(rank), os.environ["TORCH_FR_DUMP_TEMP_FILE"] + str(rank))
            return
        time.sleep(0.05)
threading.Thread(target=watchdog, daemon=True).start()
for _ in stallscope.loader(range(5)):
    time.sleep(0.05)
while True:
    time.sleep(3600)
"""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@e2e.needs(have_torch(), "needs Debian's python3-torch")
class Hang(unittest.TestCase):
    def test_a_rank_asleep_for_good(self):
        db = os.path.join(TMP, "hang.db")
        rc, out, err, _ = e2e.run(["run", "--json", "--procs", "2", "--interval", "0.5",
                                   "--hang-after", "5", "--hang-action", "kill", "--out", db,
                                   "--"] + job("--fail-rank", "1", "--fail-step", "6",
                                               "--fail-how", "sleep"), timeout=120)
        # --hang-action kill ends the job with SIGTERM: the launcher's status.
        self.assertEqual(rc, 128 + signal.SIGTERM, err[-3000:])
        self.assertIn("no rank finished a step for", err)
        self.assertIn("stallscope: hang: rank 1 stopped at", err)
        report = json.loads(out)
        e2e.check_report(self, report)
        self.assertEqual(report["verdict"]["finding"], "distributed.hang", report["verdict"])
        f = e2e.finding(report, "distributed.hang")
        ev = f["evidence"]
        self.assertEqual(ev["stopped_ranks"], "1", ev)
        self.assertEqual(ev["waiting_ranks"], "0", ev)
        self.assertIn("train_cpu.py:", ev["rank1_frame"])
        self.assertTrue(ev["rank1_frame"].endswith(" in fail"), ev)
        self.assertIn("rank0_collective_since_s", ev)
        self.assertLess(ev["rank1_cpu_s"], 0.5, ev)
        self.assertIn("rank 0 waits in a gradient all-reduce", f["summary"])
        # The ranks the hang-kill ended are not a death of their own.
        self.assertIsNone(e2e.finding(report, "distributed.rank_died"))
        stacks = os.path.join(TMP, "hang.db.stacks")
        files = sorted(os.listdir(stacks))
        self.assertEqual(len(files), 2, files)
        rank1 = [n for n in files if n.startswith("rank-1.")][0]
        with open(os.path.join(stacks, rank1)) as fh:
            text = fh.read()
        self.assertIn("(most recent call first)", text)
        self.assertIn("in fail", text)

    def test_an_evaluation_pause_is_not_a_hang(self):
        # Rank 0 evaluates 14 s after step 5 (forward passes), rank 1 waits in
        # a barrier: nearly three --hang-after periods without a step.
        db = os.path.join(TMP, "eval.db")
        rc, out, err, _ = e2e.run(["run", "--json", "--procs", "2", "--interval", "0.5",
                                   "--hang-after", "5", "--out", db, "--"] +
                                  job("--eval-step", "5", "--eval-s", "14"), timeout=120)
        self.assertEqual(rc, 0, err[-3000:])
        self.assertIn("no rank finished a step for", err)
        self.assertIn("not a hang: rank 0 still works", err)
        report = json.loads(out)
        self.assertIsNone(e2e.finding(report, "distributed.hang"), report["findings"])
        self.assertIsNone(e2e.finding(report, "distributed.rank_died"), report["findings"])
        self.assertFalse(os.path.exists(os.path.join(TMP, "eval.db.stacks")) and
                         any(os.path.getsize(os.path.join(TMP, "eval.db.stacks", n)) == 0
                             for n in os.listdir(os.path.join(TMP, "eval.db.stacks"))))

    def test_flight_recorder_dumps_the_ranks_wrote(self):
        # Debian's torch has no Flight Recorder: four shell ranks put the
        # dumps bench/gen_fr_dumps.py writes as torch's writer would (rank 1
        # missing from an all-reduce) where `run` told them to, as NCCL's
        # watchdog does at a timeout, and fail.
        gen = os.path.join(TMP, "fr")
        rc = os.system("%s %s %s >/dev/null" % (PYTHON, os.path.join(REPO, "bench",
                                                                       "gen_fr_dumps.py"), gen))
        self.assertEqual(rc, 0)
        src = os.path.join(gen, "missing_rank_v2.9", "nccl_trace_rank_")
        script = ('test "$TORCH_NCCL_TRACE_BUFFER_SIZE" = 2000 && '
                  'test "$TORCH_NCCL_DUMP_ON_TIMEOUT" = 1 && '
                  'test "$TORCH_FR_DUMP_TEMP_FILE" = "$TORCH_NCCL_DEBUG_INFO_TEMP_FILE" && '
                  'cp "%s$RANK" "$TORCH_FR_DUMP_TEMP_FILE$RANK" && '
                  'while [ "$(ls "$(dirname "$TORCH_FR_DUMP_TEMP_FILE")" | wc -l)" -lt 4 ]; '
                  'do sleep 0.05; done; exit 6' % src)
        db = os.path.join(TMP, "fr.db")
        rc, out, err, _ = e2e.run(["run", "--json", "--procs", "4", "--interval", "0.2",
                                   "--out", db, "--", "sh", "-c", script], timeout=60)
        self.assertEqual(rc, 6, err[-3000:])
        report = json.loads(out)
        f = e2e.finding(report, "distributed.hang")
        self.assertIsNotNone(f, report)
        self.assertEqual(f["evidence"]["source"], "flight-recorder", f)
        self.assertIn("1", f["summary"])
        self.assertEqual(sorted(os.listdir(db + ".stacks")),
                         ["flight_recorder_rank_%d" % r for r in range(4)])
        # Kept in the run file: report reads it again.
        again = json.loads(e2e.run(["report", "--json", db])[1])
        self.assertEqual(e2e.finding(again, "distributed.hang")["summary"], f["summary"])

    def test_a_hang_asks_the_flight_recorder_for_a_dump(self):
        # Each rank makes the named pipe ProcessGroupNCCL makes under
        # TORCH_NCCL_DEBUG_INFO_PIPE_FILE and reads it as its watchdog does
        # (non-blocking, polled); a line there writes its dump (here the one
        # bench/gen_fr_dumps.py wrote for it). The main thread steps, then
        # stops for good.
        gen = os.path.join(TMP, "fr-pipe")
        self.assertEqual(os.system("%s %s %s >/dev/null" % (
            PYTHON, os.path.join(REPO, "bench", "gen_fr_dumps.py"), gen)), 0)
        rank_script = os.path.join(TMP, "pipe_rank.py")
        with open(rank_script, "w") as f:
            f.write(PIPE_RANK)
        db = os.path.join(TMP, "pipe.db")
        env = dict(os.environ, PYTHONPATH=os.path.join(REPO, "python"))
        rc, out, err, _ = e2e.run(
            ["run", "--json", "--procs", "4", "--interval", "0.5", "--hang-after", "3",
             "--hang-action", "kill", "--out", db, "--", PYTHON, rank_script,
             os.path.join(gen, "missing_rank_v2.9", "nccl_trace_rank_")], env=env, timeout=120)
        self.assertEqual(rc, 128 + signal.SIGTERM, err[-3000:])
        self.assertIn("asked 4 rank(s) for a Flight Recorder dump", err)
        report = json.loads(out)
        f = e2e.finding(report, "distributed.hang")
        self.assertIn("flight-recorder", f["evidence"]["sources"], f)
        stacks = os.listdir(db + ".stacks")
        self.assertEqual(sorted(n for n in stacks if n.startswith("flight_recorder_")),
                         ["flight_recorder_rank_%d" % r for r in range(4)])
        self.assertFalse([n for n in stacks if n.endswith(".pipe")], stacks)

    @e2e.needs(MPIRUN is not None, "mpirun not installed (apt-get install openmpi-bin)")
    def test_a_rank_killed_under_mpirun(self):
        # Open MPI starts the ranks; a wrapper maps its variables to torch's.
        wrapper = ('RANK=$OMPI_COMM_WORLD_RANK LOCAL_RANK=$OMPI_COMM_WORLD_LOCAL_RANK '
                   'WORLD_SIZE=$OMPI_COMM_WORLD_SIZE exec "$@"')
        env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()))
        db = os.path.join(TMP, "mpi.db")
        rc, out, err, _ = e2e.run(
            ["run", "--json", "--interval", "0.5", "--out", db, "--", MPIRUN,
             "--allow-run-as-root", "--oversubscribe", "-np", "2", "sh", "-c", wrapper, "sh"] +
            job("--fail-rank", "1", "--fail-step", "5", "--fail-how", "kill"),
            env=env, timeout=120)
        self.assertNotEqual(rc, 0, err[-3000:])
        report = json.loads(out)
        f = e2e.finding(report, "distributed.rank_died")
        self.assertIsNotNone(f, report["findings"])
        self.assertEqual(report["verdict"]["finding"], "distributed.rank_died")
        self.assertEqual(f["evidence"]["rank"], 1, f)
        self.assertEqual(f["evidence"]["steps_done"], 4, f)
        self.assertIn("vanished without Python's exit", f["summary"])


if __name__ == "__main__":
    e2e.main()

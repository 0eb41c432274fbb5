"""A rank that dies, end to end: real two- and four-rank PyTorch DDP jobs
(examples/train_cpu.py --ddp, gloo on the CPU, Debian's python3-torch) under
`stallscope run --procs K`, one rank stopped on purpose at a step: SIGKILLed,
raising an exception, its DataLoader worker SIGKILLed, OOM-killed in a memory
cgroup. Each time the verdict must name that rank, how it ended and its step;
the others as ended by the launcher; and the steps it finished before it died
must all be in the run file (the hook's ring keeps those it had not sent).

Run: /usr/bin/python3 rank_stops.py PATH_TO_STALLSCOPE
"""

import json
import os
import shutil
import sqlite3
import subprocess
import tempfile
import unittest

import e2e_common as e2e

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLE = os.path.join(REPO, "examples", "train_cpu.py")
PYTHON = "/usr/bin/python3"
MIB = 1 << 20
TMP = None


def setUpModule():
    global TMP
    TMP = tempfile.mkdtemp(prefix="stallscope-e2e-stops-")


def tearDownModule():
    shutil.rmtree(TMP, ignore_errors=True)


def have_torch():
    return e2e.have_torch(PYTHON, "torch.distributed")


def job(fail_rank, fail_step, how, workers=0, extra=()):
    return [PYTHON, EXAMPLE, "--ddp", "--data", os.path.join(TMP, "images"), "--make-images",
            "160", "--batch-size", "4", "--epochs", "1", "--steps-per-epoch", "30",
            "--step-ms", "20", "--workers", str(workers), "--fail-rank", str(fail_rank),
            "--fail-step", str(fail_step), "--fail-how", how] + list(extra)


def run(test, name, procs, command, timeout=120):
    db = os.path.join(TMP, name + ".db")
    rc, out, err, _ = e2e.run(["run", "--json", "--procs", str(procs), "--interval", "0.5",
                               "--out", db, "--"] + command, timeout=timeout)
    test.assertNotEqual(rc, 0, err[-3000:])
    report = json.loads(out)
    e2e.check_report(test, report)
    return report, db, err


def steps_of(db, rank):
    with sqlite3.connect(db) as c:
        return c.execute("select count(*), max(step) from steps where rank = ?", (rank,)).fetchone()


@e2e.needs(have_torch(), "needs Debian's python3-torch")
class RankDied(unittest.TestCase):
    def died(self, report, rank, step):
        f = e2e.finding(report, "distributed.rank_died")
        self.assertIsNotNone(f, json.dumps(report["findings"], indent=1)[-3000:])
        self.assertEqual(report["verdict"]["finding"], "distributed.rank_died", report["verdict"])
        self.assertEqual(f["severity"], "critical")
        ev = f["evidence"]
        self.assertEqual(ev["rank"], rank, f)
        self.assertEqual(ev["steps_done"], step, f)
        self.assertIn("after %d steps" % step, f["summary"])
        return f

    def test_a_rank_sigkilled_at_a_step(self):
        # Rank 1 kills itself after its 6th step's body: 5 steps ended (0..4).
        report, db, err = run(self, "kill", 2, job(1, 6, "kill"))
        f = self.died(report, 1, 5)
        self.assertEqual(f["evidence"]["signal"], "SIGKILL", f)
        self.assertIs(f["evidence"]["oom_killed"], False)
        self.assertIn("rank 0", f["summary"])
        self.assertIn("the launcher then ended it (SIGTERM)", f["summary"])
        # Every step it finished is in the file, though it never sent them
        # (64 records or 500 ms a datagram): the ring kept them.
        self.assertEqual(steps_of(db, 1), (5, 4))
        with sqlite3.connect(db) as c:
            hows = {(r, h) for r, h in c.execute("select rank, how from rank_stops")}
        self.assertIn((1, "signal"), hows)
        self.assertIn((0, "sent_signal"), hows)

    def test_a_rank_that_raises(self):
        # The step the exception left ends there, as a `break` would: 4 steps.
        report, db, _ = run(self, "raise", 2, job(0, 4, "raise"))
        f = self.died(report, 0, 4)
        ev = f["evidence"]
        self.assertEqual(ev["exception_type"], "RuntimeError", ev)
        self.assertEqual(ev["exception_message"], "injected failure at step 4", ev)
        self.assertIn("train_cpu.py:", ev["exception_frame"])
        self.assertIn(" in fail", ev["exception_frame"])
        self.assertEqual(ev["exit_code"], 1, ev)
        self.assertIn("train_cpu.py", f["next"])

    def test_four_ranks_one_killed(self):
        report, db, _ = run(self, "four", 4, job(2, 3, "kill"), timeout=180)
        f = self.died(report, 2, 2)
        for other in (0, 1, 3):
            self.assertIn("rank %d " % other, f["summary"])
        self.assertEqual(steps_of(db, 2)[0], 2)

    def test_a_dataloader_worker_killed(self):
        report, db, _ = run(self, "worker", 2, job(1, 3, "worker-kill", workers=1))
        f = e2e.finding(report, "distributed.rank_died")
        self.assertIsNotNone(f, report["findings"])
        ev = f["evidence"]
        self.assertEqual(ev["rank"], 1, f)
        self.assertEqual(ev["raised_in"], "loader", ev)
        # PyTorch's "DataLoader worker (pid N) is killed by signal" or the
        # queue's ConnectionResetError, whichever the loader met first.
        self.assertIn("DataLoader", f["summary"])
        self.assertIn("num_workers=0", f["next"])

    def test_ranks_a_dead_launcher_left_are_ended(self):
        # A launcher of its own (a shell) starts two ranks of the hook's loop
        # and dies: run ends them, SIGTERM, then SIGKILL 10 s later for the
        # one that ignores SIGTERM.
        steps = os.path.join(REPO, "tests", "fixtures", "steps_job.py")
        ignore = ("import signal, runpy, sys; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
                  "sys.argv = sys.argv[1:]; runpy.run_path(sys.argv[0], run_name='__main__')")
        launcher = ('WORLD_SIZE=2 RANK=0 %s %s --steps 100000 --step-ms 10 & '
                    'WORLD_SIZE=2 RANK=1 %s -c "%s" %s --steps 100000 --step-ms 10 & '
                    'sleep 3; kill -9 $$' % (PYTHON, steps, PYTHON, ignore, steps))
        db = os.path.join(TMP, "orphans.db")
        rc, out, err, _ = e2e.run(["run", "--json", "--interval", "0.5", "--out", db, "--",
                                   "sh", "-c", launcher], timeout=120)
        self.assertEqual(rc, 137, err[-3000:])
        self.assertIn("left 2 rank(s) running", err)
        with sqlite3.connect(db) as c:
            sent = sorted(c.execute("select rank, signal from rank_stops where how = "
                                    "'sent_signal' and source = 'recorder'").fetchall())
            gone = {r for (r,) in c.execute("select rank from rank_stops where how = 'gone'")}
        self.assertEqual(sent, [(0, 15), (1, 9), (1, 15)])
        self.assertEqual(gone, {0, 1})
        with sqlite3.connect(db) as c:
            pids = [p for (p,) in c.execute("select pid from ranks")]
        self.assertEqual(len(pids), 2)
        for pid in pids:
            try:
                with open("/proc/%d/stat" % pid) as f:
                    self.assertEqual(f.read().rsplit(")", 1)[1].split()[0], "Z", pid)
            except FileNotFoundError:
                pass

    def test_a_rank_oom_killed_in_a_memory_cgroup(self):
        try:
            cgroup = e2e.MemoryCgroup("stallscope-e2e-rank-oom-%d" % os.getpid(), 1400 * MIB)
        except e2e.CgroupUnavailable as e:
            self.skipTest("no memory cgroup for the test: %s" % e)
        self.addCleanup(cgroup.remove)
        prefix = ["sh", "-c", 'echo $$ > "$0" && exec "$@"', cgroup.procs_file, e2e.BINARY]
        db = os.path.join(TMP, "oom.db")
        proc = subprocess.run(prefix + ["run", "--json", "--procs", "2", "--interval", "0.5",
                                        "--out", db, "--"] + job(1, 4, "oom"),
                              capture_output=True, timeout=180)
        err = proc.stderr.decode(errors="replace")
        self.assertEqual(proc.returncode, 137, err[-3000:])
        report = json.loads(proc.stdout)
        e2e.check_report(self, report)
        with sqlite3.connect(db) as c:
            victims = [p for (p,) in c.execute(
                "select pid from memory_peaks where source = 'oom_kill'")]
            rank1 = c.execute("select pid from rank_stops where rank = 1 and how = 'signal'"
                              ).fetchone()
        self.assertIsNotNone(rank1, err[-2000:])
        if rank1[0] in victims:
            f = e2e.finding(report, "memory.oom_killed")
            self.assertEqual(report["verdict"]["finding"], "memory.oom_killed")
            self.assertEqual(f["evidence"]["rank"], 1, f)
            self.assertIn("OOM killer", f["summary"])
        else:
            # The kernel's log unreadable here: a SIGKILL, said as such.
            f = e2e.finding(report, "distributed.rank_died")
            self.assertEqual(f["evidence"]["signal"], "SIGKILL", f)


if __name__ == "__main__":
    e2e.main()

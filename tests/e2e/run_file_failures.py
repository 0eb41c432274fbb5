"""Nothing is lost when things fail around `stallscope run`:

- `run` killed with SIGKILL at 50 moments drawn from a schedule (a random
  generator with a fixed seed, STALLSCOPE_KILL_SEED to draw another) of a
  hooked job without PyTorch, and at 3 moments of a real PyTorch job. Each
  time the run file opens, holds every interval and every epoch mark the job
  sent up to one interval before the kill (plus a scheduling allowance), and
  `report` reads it; the orphaned job goes on, its hook's sends failing
  quietly; the next `run` removes the socket folder the killed one left.
- The run file's file system fills mid-run (a small tmpfs the test mounts):
  the job goes on, `run` exits with its status, says once that recording
  stopped and why, and `report` reads what was recorded.
- --out in a missing or read-only folder, or a run file another `run` is
  recording: an error naming the path before the job starts.
- `report` and `diff` on a run file of a newer schema: an error saying so.

Run as /usr/bin/python3 run_file_failures.py PATH_TO_STALLSCOPE; root for
the tmpfs mounts (skips without, fails under CI=true).
"""
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_common as e2e  # noqa: E402

PYTHON = "/usr/bin/python3"
JOB = os.path.join(os.path.dirname(os.path.abspath(__file__)), "jobs", "hooked_steps.py")
INTERVAL = 0.1
# What a loaded machine may add between a datagram's arrival and its commit
# beyond the interval itself (the sampler woken late, the commit's write).
ALLOWANCE = 0.3
KILLS, TORCH_KILLS = 50, 3


def query(db, sql):
    con = sqlite3.connect("file:%s?mode=ro" % db, uri=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def read_log(path):
    """(start, {epoch: monotonic time sent}, done line or None) of a job's log."""
    start, epochs, done = None, {}, None
    with open(path) as f:
        for line in f:
            fields = line.split()
            if fields[:1] == ["start"]:
                start = float(fields[1])
            elif fields[:1] == ["epoch"] and len(fields) == 3:
                epochs[int(fields[1])] = float(fields[2])
            elif fields[:1] == ["done"] and len(fields) == 2:
                done = int(fields[1])
    return start, epochs, done


def wait_for(predicate, seconds, what):
    deadline = time.monotonic() + seconds
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting for " + what)
        time.sleep(0.01)


class Trial:
    """One `run` of the hooked job, writing into folder `tmp` as NAME.*"""

    def __init__(self, test, tmp, name, seconds=60, torch=False, exit_status=0, out=None,
                 extra_env=None):
        self.db = out or os.path.join(tmp, name + ".db")
        self.log = os.path.join(tmp, name + ".log")
        self.err = os.path.join(tmp, name + ".err")
        self.stop = os.path.join(tmp, name + ".stop")  # the job ends 0.5 s after it appears
        env = dict(os.environ, TMPDIR=os.path.join(tmp, "sockets"))
        env.update(extra_env or {})
        job = [PYTHON, JOB, "--log", self.log, "--err", self.err, "--seconds", str(seconds),
               "--stop", self.stop,
               "--exit", str(exit_status)] + (["--torch"] if torch else [])
        # run's stderr goes to a file: a pipe would stay open in the orphan.
        self.stderr = os.path.join(tmp, name + ".stderr")
        with open(self.stderr, "w") as err:
            self.proc = subprocess.Popen(
                [e2e.BINARY, "run", "--interval", str(INTERVAL), "--out", self.db, "--"] + job,
                stdout=subprocess.DEVNULL, stderr=err, env=env)
        test.addCleanup(self.end)

    def end(self):
        self.proc.kill()
        self.proc.wait()

    def wait(self, timeout=60):
        """Waits for run to end; its stderr."""
        self.proc.wait(timeout=timeout)
        with open(self.stderr, errors="replace") as f:
            return f.read()

    def started(self):
        return os.path.exists(self.log) and read_log(self.log)[0] is not None


class KillNine(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="stallscope-e2e-kill-")
        os.mkdir(os.path.join(self.tmp, "sockets"))
        self.addCleanup(subprocess.run, ["rm", "-rf", self.tmp])

    def trial(self, name, moment, torch=False):
        return Trial(self, self.tmp, name, torch=torch)

    def kill_at(self, trial, moment, start_next=lambda: None):
        """Kills `run` `moment` s after its job started, starts the next
        trial (its start overlaps this one's checks), checks the file this
        one left; returns the trial (its job still running, for 0.5 s)."""
        wait_for(trial.started, 60, trial.log + "'s job to start")
        time.sleep(max(0.0, read_log(trial.log)[0] + moment - time.monotonic()))
        killed_at = time.monotonic()
        trial.proc.send_signal(signal.SIGKILL)
        open(trial.stop, "w").close()
        trial.wait(timeout=30)  # reaped: its pid is gone
        start_next()
        self.assertEqual(trial.proc.returncode, -signal.SIGKILL)
        self.check_file(trial, killed_at)
        return trial

    def check_file(self, trial, killed_at):
        where = "%s (killed %.3f s after the job started)" % (
            trial.db, killed_at - read_log(trial.log)[0])
        intervals = [r[0] for r in query(trial.db, "select interval from samples order by 1")]
        self.assertEqual(intervals, list(range(len(intervals))), "gaps in " + where)
        # Every interval that ended an interval before the kill is there.
        start = query(trial.db, "select start_monotonic_seconds from run")
        if start:
            last = query(trial.db, "select max(t_seconds) from samples")[0][0] or 0.0
            self.assertGreaterEqual(last, killed_at - start[0][0] - INTERVAL - ALLOWANCE,
                                    "samples missing in " + where)
        # Every epoch mark the job sent an interval before the kill is there,
        # with every step before it (the mark sends the steps pending).
        _, sent, _ = read_log(trial.log)
        kept = {r[0] for r in query(trial.db, "select epoch from epochs")}
        due = [e for e, t in sent.items() if t <= killed_at - INTERVAL - ALLOWANCE]
        self.assertEqual(sorted(set(due) - kept), [], "epoch marks missing in " + where)
        steps = sorted(r[0] for r in query(trial.db, "select step from steps"))
        self.assertEqual(steps, list(range(len(steps))), "gaps in the steps of " + where)
        if due:
            self.assertGreaterEqual(len(steps), max(due) * 5, "steps missing in " + where)
        rc, out, err, _ = e2e.run(["report", trial.db, "--json"])
        self.assertEqual(rc, 0, "report on %s: %s" % (where, err))
        self.assertIn('"samples"', out)

    def check_orphan(self, trial):
        """The job outlived `run`, its sends failing quietly."""
        wait_for(lambda: read_log(trial.log)[2] is not None, 60, trial.log + " to end")
        dropped = read_log(trial.log)[2]
        self.assertGreater(dropped, 0, "the orphan's sends after the kill did not fail")
        with open(trial.err) as f:
            self.assertEqual(f.read(), "", "the orphaned job printed something")

    def test_kill_9_at_drawn_moments(self):
        seed = int(os.environ.get("STALLSCOPE_KILL_SEED", "43"))
        rng = random.Random(seed)
        moments = [round(rng.uniform(0.0, 0.5), 3) for _ in range(KILLS)]
        print("kill moments (seed %d): %s" % (seed, moments), file=sys.stderr)
        trials = [self.trial("hooked-00", moments[0])]

        def start_next():
            if len(trials) < KILLS:
                trials.append(self.trial("hooked-%02d" % len(trials), moments[len(trials)]))

        for i, moment in enumerate(moments):
            self.kill_at(trials[i], moment, start_next)
        for trial in trials:
            self.check_orphan(trial)
        # Each run removed the socket folders the killed ones before it left;
        # one more run removes the last one's.
        sockets = os.path.join(self.tmp, "sockets")
        self.assertLessEqual(len(os.listdir(sockets)), 1, os.listdir(sockets))
        rc, _, err, _ = e2e.run(["run", "--out", os.path.join(self.tmp, "last.db"), "--", "true"],
                                env=dict(os.environ, TMPDIR=sockets))
        self.assertEqual(rc, 0, err)
        self.assertEqual(os.listdir(sockets), [])

    def test_kill_9_of_a_pytorch_job(self):
        if subprocess.run([PYTHON, "-c", "import torch"], capture_output=True).returncode:
            e2e.skip_or_fail("python3-torch is not installed")
        for i, moment in enumerate(random.Random(44).uniform(0.1, 0.8) for _ in range(TORCH_KILLS)):
            trial = self.trial("torch-%d" % i, moment, torch=True)
            self.check_orphan(self.kill_at(trial, moment))


def mount_tmpfs(test, where, options):
    if os.geteuid() != 0:
        e2e.skip_or_fail("mounting a tmpfs needs root")
    os.makedirs(where, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", where], check=True)
    test.addCleanup(subprocess.run, ["umount", "-l", where])


class Failures(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="stallscope-e2e-fail-")
        os.mkdir(os.path.join(self.tmp, "sockets"))
        self.addCleanup(subprocess.run, ["rm", "-rf", self.tmp])

    def fill(self, folder):
        fd = os.open(os.path.join(folder, "filler"), os.O_WRONLY | os.O_CREAT, 0o644)
        try:
            while os.write(fd, b"\0" * 4096) > 0:  # until ENOSPC
                pass
        except OSError:
            pass
        os.close(fd)

    def test_disk_full_mid_run(self):
        full = os.path.join(self.tmp, "full")
        mount_tmpfs(self, full, "size=8m")
        trial = Trial(self, self.tmp, "full", seconds=2.5, exit_status=7,
                      out=os.path.join(full, "run.db"))
        wait_for(trial.started, 60, "the job to start")
        time.sleep(0.6)
        fill_began = time.monotonic()
        self.fill(full)
        err = trial.wait()
        # The disk stays full: the run's end is in run.db-wal, and run says
        # to copy both files.
        self.assertIn(trial.db + "-wal beside it; copy both files together", err)
        alone = os.path.join(self.tmp, "alone")
        pair = os.path.join(self.tmp, "pair")
        os.mkdir(alone)
        os.mkdir(pair)
        shutil.copy(trial.db, alone)
        shutil.copy(trial.db, pair)
        shutil.copy(trial.db + "-wal", pair)
        rc, _, rerr, _ = e2e.run(["report", os.path.join(alone, "run.db")])
        self.assertEqual(rc, 1, rerr)
        self.assertIn("its last part may be in its -wal", rerr)
        rc, _, rerr, _ = e2e.run(["report", os.path.join(pair, "run.db"), "--json"])
        self.assertEqual(rc, 0, rerr)
        self.assertEqual(trial.proc.returncode, 7, err[-2000:])  # the job's own status
        self.assertEqual(err.count("recording stopped"), 1, err[-2000:])
        line = [l for l in err.splitlines() if "recording stopped" in l][0]
        self.assertIn("full", line)
        self.assertIn(trial.db, line)
        self.assertIsNotNone(read_log(trial.log)[2], "the job did not run to its end")
        with open(trial.err) as f:
            self.assertEqual(f.read(), "")
        rc, text, rerr, _ = e2e.run(["report", trial.db, "--json"])
        self.assertEqual(rc, 0, rerr)
        start = query(trial.db, "select start_monotonic_seconds from run")[0][0]
        last = query(trial.db, "select max(t_seconds) from samples")[0][0]
        # What was recorded before the disk filled is there.
        self.assertGreaterEqual(start + last, fill_began - INTERVAL - ALLOWANCE,
                                (start, last, fill_began))

    def test_space_freed_before_the_end_leaves_one_file(self):
        # The filler removed while the job still runs: the run's end folds
        # into run.db, which then reads copied alone.
        full = os.path.join(self.tmp, "freed")
        mount_tmpfs(self, full, "size=8m")
        trial = Trial(self, self.tmp, "freed", seconds=60, out=os.path.join(full, "run.db"))
        wait_for(trial.started, 60, "the job to start")
        time.sleep(0.6)
        self.fill(full)
        def stopped():
            with open(trial.stderr, errors="replace") as f:
                return "recording stopped" in f.read()

        wait_for(stopped, 30, "the recording to stop")
        os.remove(os.path.join(full, "filler"))
        open(trial.stop, "w").close()
        err = trial.wait()
        self.assertNotIn("-wal beside it", err)
        self.assertFalse(os.path.exists(trial.db + "-wal") and
                         os.path.getsize(trial.db + "-wal") > 0, "the -wal was not folded")
        alone = os.path.join(self.tmp, "alone.db")
        shutil.copy(trial.db, alone)
        rc, _, rerr, _ = e2e.run(["report", alone, "--json"])
        self.assertEqual(rc, 0, rerr)

    def refused_before_the_job(self, out, expect, extra=()):
        marker = os.path.join(self.tmp, "job-ran")
        rc, _, err, _ = e2e.run(["run"] + list(extra) + ["--out", out, "--", "touch", marker])
        self.assertEqual(rc, 1, err)
        self.assertIn(out, err)
        self.assertIn(expect, err)
        self.assertFalse(os.path.exists(marker), "the job ran")

    def test_missing_and_read_only_folders(self):
        self.refused_before_the_job(os.path.join(self.tmp, "absent", "r.db"),
                                    "No such file or directory")
        ro = os.path.join(self.tmp, "ro")
        mount_tmpfs(self, ro, "ro,size=1m")
        self.refused_before_the_job(os.path.join(ro, "r.db"), "Read-only file system")

    def test_a_file_another_run_records(self):
        trial = Trial(self, self.tmp, "held", seconds=2)
        wait_for(trial.started, 60, "the first run's job")
        for extra in ((), ("--force",)):
            self.refused_before_the_job(trial.db, "another stallscope run", extra)
        err = trial.wait()
        self.assertEqual(trial.proc.returncode, 0, err[-2000:])
        rc, _, err, _ = e2e.run(["report", trial.db])
        self.assertEqual(rc, 0, err)

    def test_a_newer_schema_is_named(self):
        db = os.path.join(self.tmp, "future.db")
        rc, _, err, _ = e2e.run(["run", "--out", db, "--", "true"])
        self.assertEqual(rc, 0, err)
        con = sqlite3.connect(db)
        con.execute("update meta set value = 'stallscope.timeline/2' where key = 'schema'")
        con.execute("pragma user_version = 2")
        con.commit()
        con.close()
        for args in (["report", db], ["diff", db, db]):
            rc, _, err, _ = e2e.run(args)
            self.assertNotEqual(rc, 0, args)
            self.assertIn(db, err)
            self.assertIn("written by a newer stallscope", err)
            self.assertIn("stallscope.timeline/2", err)


if __name__ == "__main__":
    e2e.main()

"""`stallscope run`, `watch` and `report` end to end, with real processes: the
example training job (examples/train_cpu.py, Debian's python3-torch) healthy,
input-bound and leaking; a command that is not found; an unwritable and an
existing --out; exit codes and forwarded signals; stallscope killed with -9
in the middle of a run; a job ended by the OOM killer in a memory-limited
cgroup (root only); `watch` on a process tree that forks.

Every process a test starts carries this run's temporary directory in its
command line (or is tracked by pid) and is killed when the test ends, pass
or fail; the directory and any cgroup are removed.

Run: /usr/bin/python3 run_job.py PATH_TO_STALLSCOPE
"""

import json
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
import unittest

import e2e_common as e2e
from e2e_common import MIB

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLE = os.path.join(REPO, "examples", "train_cpu.py")
PYTHON = "/usr/bin/python3"

# The example's dataset: 2000 images make 32 steps of 64 an epoch, enough
# for the first batch of each epoch (which always waits) to weigh little.
IMAGES = 2000
BATCH = 64
STEPS_PER_EPOCH = -(-IMAGES // BATCH)

TMP = None  # this run's directory: run files, markers, the dataset


def setUpModule():
    global TMP
    TMP = tempfile.mkdtemp(prefix="stallscope-e2e-run-")


def tearDownModule():
    kill_matching(TMP)
    shutil.rmtree(TMP, ignore_errors=True)


# ---------------------------------------------------------------------------
# Processes

def cmdline(pid):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            return f.read().replace(b"\0", b" ").decode("utf-8", "replace")
    except OSError:
        return None


def is_zombie(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except (OSError, IndexError):
        return True


def alive(pid):
    return cmdline(pid) is not None and not is_zombie(pid)


def kill_matching(token):
    """SIGKILLs every process (but this one) whose command line holds token;
    returns their pids."""
    killed = []
    if not token:
        return killed
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        line = cmdline(int(name))
        if line and token in line:
            try:
                os.kill(int(name), signal.SIGKILL)
                killed.append(int(name))
            except ProcessLookupError:
                pass
    return killed


def kill_pid_if(pid, expected_cmdline):
    """Kills pid if it still runs expected_cmdline (not a reused pid)."""
    line = cmdline(pid)
    if line is not None and line.strip() == expected_cmdline:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def children(pid):
    try:
        with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
            return [int(p) for p in f.read().split()]
    except OSError:
        return []


def wait_for_child(test, proc, expected_cmdline, seconds=20):
    """The pid of proc's child once it runs expected_cmdline (exec done)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        for pid in children(proc.pid):
            line = cmdline(pid)
            if line is not None and line.strip() == expected_cmdline:
                return pid
        if proc.poll() is not None:
            test.fail("stallscope exited (%d) before its job started: %s" %
                      (proc.returncode, proc.stderr.read().decode(errors="replace")))
        time.sleep(0.05)
    test.fail("no child running %r under stallscope (pid %d) after %d s" %
              (expected_cmdline, proc.pid, seconds))


def start(test, args):
    """Starts stallscope ARGS in the background; killed at cleanup."""
    proc = subprocess.Popen([e2e.BINARY] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    test.addCleanup(proc.stderr.close)
    test.addCleanup(proc.stdout.close)
    test.addCleanup(e2e.stop, proc)
    return proc


# ---------------------------------------------------------------------------
# Run files

def path(name):
    return os.path.join(TMP, name)


def side_files(db):
    return [db + s for s in ("-wal", "-shm", "-journal") if os.path.exists(db + s)]


def query(db, sql, args=()):
    """Rows of a query on a run file, opened read-only (no sqlite3 tool)."""
    conn = sqlite3.connect("file:%s?mode=ro" % db, uri=True)
    try:
        return conn.execute(sql, args).fetchall()
    finally:
        conn.close()


def scalar(db, sql, args=()):
    return query(db, sql, args)[0][0]


def summary(report):
    """The findings in one line each, for failure messages."""
    return "verdict %s; findings:\n%s" % (
        json.dumps(report.get("verdict")),
        "\n".join("  %s %s: %s %s" % (f["id"], f["severity"], f["summary"],
                                      json.dumps(f["evidence"]))
                  for f in report.get("findings", [])) or "  (none)")


def load():
    with open("/proc/loadavg") as f:
        return f.read().strip()


def parse_json(test, out, what):
    try:
        return json.loads(out)
    except ValueError as e:
        test.fail("%s: stdout is not one JSON document (%s); the job's own output must not "
                  "be mixed into it: %r" % (what, e, out[:800]))


def check_same_report(test, run_report, db):
    """`report DB --json` gives what `run --json` gave at the end."""
    again = e2e.run_json(test, ["report", db, "--json"])
    e2e.check_report(test, again)
    test.assertEqual(again["verdict"], run_report["verdict"])
    test.assertEqual([(f["id"], f["severity"]) for f in again["findings"]],
                     [(f["id"], f["severity"]) for f in run_report["findings"]])
    test.assertEqual(again["epochs"], run_report["epochs"])
    for key in ("exit_code", "exit_signal", "oom_killed", "samples", "command"):
        test.assertEqual(again["run"][key], run_report["run"][key], key)
    return again


# ---------------------------------------------------------------------------
# The example training job

def have_torch():
    proc = subprocess.run([PYTHON, "-c", "import torch"], capture_output=True)
    return proc.returncode == 0


class TrainingJob(unittest.TestCase):
    """examples/train_cpu.py under `stallscope run --json`."""

    @classmethod
    def setUpClass(cls):
        if not os.path.isfile(EXAMPLE):
            raise unittest.SkipTest("%s is missing" % EXAMPLE)
        if not have_torch():
            raise unittest.SkipTest("%s cannot import torch (apt install python3-torch)" % PYTHON)
        # The dataset, made once (outside stallscope) for all three modes.
        cls.data = path("images")
        proc = subprocess.run([PYTHON, EXAMPLE, "--data", cls.data, "--make-images", str(IMAGES),
                               "--epochs", "1", "--steps-per-epoch", "1"],
                              capture_output=True, timeout=120)
        if proc.returncode != 0:
            raise AssertionError("making the dataset failed: %s" % proc.stderr.decode())

    def tearDown(self):
        kill_matching(TMP)  # a job a failed test left behind, and its workers

    def run_job(self, name, mode, *flags, timeout=120, interval=0.5):
        """Runs the example under `run --json`; (report, stderr, seconds, db)."""
        db = path(name + ".db")
        args = ["run", "--json", "--interval", str(interval), "--out", db, "--",
                PYTHON, EXAMPLE, "--mode", mode, "--data", self.data] + list(flags)
        rc, out, err, seconds = e2e.run(args, timeout=timeout)
        self.assertEqual(rc, 0, "the %s job exited %d after %.1f s; stderr:\n%s" %
                         (mode, rc, seconds, err[-3000:]))
        report = parse_json(self, out, "run --json (%s)" % mode)
        e2e.check_report(self, report)
        run = report["run"]
        self.assertEqual(run["exit_code"], 0)
        self.assertIsNone(run["exit_signal"])
        self.assertIs(run["oom_killed"], False)
        self.assertEqual(run["file"], db)
        self.assertTrue(os.path.isfile(db), "no run file at %s" % db)
        self.assertEqual(side_files(db), [], "a clean exit leaves RUN.db alone")
        self.assertEqual(scalar(db, "select count(*) from samples"), run["samples"])
        sys.stderr.write("\n  %s job: %.1f s, %d samples, %s (load %s)\n" %
                         (mode, seconds, run["samples"], report["verdict"], load()))
        return report, err, seconds, db

    def test_healthy(self):
        epochs = 4
        report, err, seconds, db = self.run_job("healthy", "healthy", "--epochs", str(epochs))
        # Healthy: nothing critical. A warning (io.input_bound on a loaded
        # machine) is allowed.
        critical = [f["id"] for f in report["findings"] if f["severity"] == "critical"]
        self.assertEqual(critical, [], "critical findings on the healthy job (load %s):\n%s" %
                         (load(), summary(report)))
        self.assertEqual(report["verdict"], {"layer": "none"}, summary(report))
        # A job that does not grow never starts the hook's allocation tracing.
        self.assertEqual(query(db, "select name from sqlite_master where name = 'allocations'"),
                         [], "the healthy job was traced")
        self.assertFalse(any(n.startswith("allocation tracing") for n in report["notes"]))

        # Epochs: as many as the job ran, each with the steps the job itself
        # counted (its stdout goes to stderr under --json).
        printed = {int(e): int(n) for e, n in re.findall(r"(?m)^epoch (\d+): (\d+) steps in", err)}
        self.assertEqual(printed, {e: STEPS_PER_EPOCH for e in range(epochs)},
                         "the job's own epoch lines:\n%s" % err[-3000:])
        got = report["epochs"]
        self.assertEqual([e["epoch"] for e in got], list(range(epochs)))
        for e in got:
            self.assertEqual(e["steps"], printed[e["epoch"]], e)
            self.assertGreater(e["steps_per_s"], 0, e)
            self.assertGreater(e["duration_seconds"], 0, e)
            self.assertGreaterEqual(e["data_wait_fraction"], 0, e)
            self.assertLess(e["data_wait_fraction"], 1, e)
            self.assertGreater(e["peak_tree_rss_bytes"], 50 * MIB, e)
        for a, b in zip(got, got[1:]):
            self.assertLessEqual(a["start_seconds"] + a["duration_seconds"],
                                 b["start_seconds"] + 1e-6, "epochs overlap: %s %s" % (a, b))

        # The summary lines on stderr: one per interval, and one per epoch.
        self.assertRegex(err, r"(?m)^\[\s*\d+s\] rss\s+[0-9.]+ [KMG]iB \| avail")
        self.assertRegex(err, r"(?m)^\[\s*\d+s\] .*steps/s, data wait \d+%")
        for e in range(epochs):
            self.assertRegex(err, r"(?m)^epoch %d: [0-9.]+ s, %d steps" % (e, STEPS_PER_EPOCH))

        # The run file, read with Python's sqlite3 (no sqlite3 tool needed).
        self.assertEqual(scalar(db, "select value from meta where key = 'schema'"),
                         "stallscope.timeline/1")
        self.assertEqual(scalar(db, "pragma user_version"), 1)
        n = scalar(db, "select count(*) from samples")
        self.assertGreaterEqual(n, 4)
        self.assertEqual([r[0] for r in query(db, "select interval from samples order by 1")],
                         list(range(n)), "intervals must be numbered 0.. without gaps")
        self.assertEqual(scalar(db, "select count(*) from steps"), epochs * STEPS_PER_EPOCH,
                         "every step the hook timed is in the run file")
        self.assertEqual(scalar(db, "select count(*) from epochs"), epochs)
        # The DataLoader's two workers are in the tree with the training process.
        self.assertGreaterEqual(scalar(db, "select max(processes) from samples"), 3)
        loader = query(db, "select num_workers, persistent_workers, batch_size from loaders")
        self.assertTrue(loader, "the hook reported no DataLoader settings")
        self.assertEqual(loader[0], (2, 1, BATCH))
        command, exit_code, root_pid = query(db, "select command, exit_code, root_pid from run")[0]
        self.assertEqual(exit_code, 0)
        self.assertIn(EXAMPLE, command)
        self.assertGreater(root_pid, 1)

        check_same_report(self, report, db)

    def test_input_bound(self):
        report, err, seconds, db = self.run_job(
            "input-bound", "input-bound", "--epochs", "2", "--steps-per-epoch", "8",
            "--batch-size", "16")
        self.assertEqual(report["verdict"].get("layer"), "io", summary(report))
        self.assertEqual(report["verdict"].get("finding"), "io.input_bound", summary(report))
        f = e2e.finding(report, "io.input_bound")
        self.assertEqual(f["severity"], "critical")
        self.assertGreaterEqual(f["evidence"]["data_wait_fraction"], 0.3, f)
        self.assertLessEqual(f["evidence"]["data_wait_fraction"], 1.0, f)
        self.assertEqual(f["evidence"]["ranks"], 1, f)
        self.assertGreater(f["impact"]["wall_fraction"], 0.3, f)
        # The cause is named too: the loader runs in the training process.
        configs = [x for x in report["findings"] if x["id"] == "io.loader_config"]
        self.assertIn("num_workers_zero", [x["evidence"].get("problem") for x in configs],
                      summary(report))
        self.assertEqual([e["steps"] for e in report["epochs"]], [8, 8])
        for e in report["epochs"]:
            self.assertGreater(e["data_wait_fraction"], 0.3, e)
        check_same_report(self, report, db)

    def test_leak(self):
        # Every batch keeps 4 MiB: ~3 GiB over 24 epochs of 32 steps, in
        # 35-150 s on two shared cores. Sampled every 0.25 s, a machine twice
        # as fast still gives the rule more than its 12 samples of training,
        # and the hook the 15 s it needs to see the growth and trace it.
        report, err, seconds, db = self.run_job("leak", "leak", "--epochs", "24", timeout=300,
                                                interval=0.25)
        f = e2e.finding(report, "memory.rss_growth")
        self.assertIsNotNone(f, "no memory.rss_growth for the leaking job:\n%s" % summary(report))
        ev = f["evidence"]
        self.assertGreater(ev["slope_bytes_per_s"], 1 * MIB, ev)  # 4 MiB a step, ~10 steps/s
        self.assertGreater(ev["judged_growth_bytes"], 256 * MIB, ev)
        # The process that grows is the training process, the run's root.
        root_pid = scalar(db, "select root_pid from run")
        self.assertRegex(ev["top_process"], r"^python3(\.\d+)? \(pid \d+\)$", ev)
        self.assertEqual(ev["top_process"], "%s (pid %d)" % (ev["top_process"].split()[0],
                                                             root_pid), ev)
        self.assertIn("pid %d" % root_pid, f["summary"])
        self.assertGreater(ev["top_process_slope_bytes_per_s"], 1 * MIB, ev)
        self.assertGreater(ev["projected_oom_s"], 0, ev)
        # Placed by the hook's own tracing: the line that keeps the batches,
        # and the list that holds them.
        with open(EXAMPLE) as src:
            keep = [i for i, l in enumerate(src, 1) if "KEPT.append(" in l]
        self.assertEqual(len(keep), 1, keep)
        # The hook names a file relative to the job's folder when it is inside it.
        shown = os.path.relpath(EXAMPLE)
        shown = EXAMPLE if shown.startswith("..") else shown
        self.assertEqual(ev.get("leak_line"), "%s:%d" % (shown, keep[0]), ev)
        self.assertRegex(ev.get("leak_holder", ""),
                         r"^the module-level list 'KEPT' in train_cpu\.py holds \d+ tensors, ", ev)
        self.assertIn("it grows at %s:%d" % (shown, keep[0]), f["summary"])
        self.assertTrue(f["next"].startswith("look at "), f["next"])
        kinds = [r[0] for r in query(db, "select kind from allocations order by rowid")]
        self.assertEqual(kinds[0], "note")
        self.assertEqual(kinds[-1], "note", "tracing must say it stopped")
        self.assertIn("holder", kinds)
        self.assertTrue(any(n.startswith("allocation tracing, rank 0") and "stopped" in n
                            for n in report["notes"]), report["notes"])
        if f["severity"] == "critical":
            self.assertEqual(report["verdict"]["layer"], "memory", summary(report))
            self.assertEqual(report["verdict"]["finding"], "memory.rss_growth", summary(report))
        else:
            self.assertEqual(f["severity"], "warning", f)
        # The timeline itself shows the growth the finding is about.
        first, peak = query(db, "select (select tree_rss_bytes from samples order by interval "
                                "limit 1), max(tree_rss_bytes) from samples")[0]
        self.assertGreater(peak - first, 512 * MIB, "tree RSS %d -> peak %d" % (first, peak))
        self.assertGreater(report["epochs"][-1]["peak_tree_rss_bytes"],
                           report["epochs"][0]["peak_tree_rss_bytes"] + 512 * MIB,
                           report["epochs"])
        check_same_report(self, report, db)


# ---------------------------------------------------------------------------
# Starting the job: what fails before anything runs

class Starting(unittest.TestCase):
    def test_command_not_found(self):
        db = path("not-found.db")
        rc, out, err, seconds = e2e.run(["run", "--out", db, "--", "no-such-command-xyz", "a"])
        self.assertEqual(rc, 127, "stdout %r stderr %r" % (out, err))
        self.assertIn("command not found", err)
        self.assertIn("no-such-command-xyz", err)
        self.assertFalse(os.path.exists(db), "a run file was left behind for a job that never ran")
        self.assertEqual(side_files(db), [])
        self.assertEqual(out, "")
        self.assertLess(seconds, 10)

    def test_not_executable(self):
        script = path("not-executable.sh")
        with open(script, "w") as f:
            f.write("#!/bin/sh\nexit 0\n")
        os.chmod(script, 0o644)
        db = path("not-executable.db")
        rc, out, err, _ = e2e.run(["run", "--out", db, "--", script])
        if os.geteuid() == 0 and rc == 0:
            self.skipTest("root may execute a file without x bits here")
        self.assertEqual(rc, 126, err)
        self.assertIn(script, err)
        self.assertFalse(os.path.exists(db))

    def test_unwritable_out(self):
        marker = path("marker-unwritable")
        out_path = "/nonexistent-dir-%d/x.db" % os.getpid()
        rc, out, err, seconds = e2e.run(["run", "--out", out_path, "--", "touch", marker])
        self.assertIn(rc, (1, 2), "stdout %r stderr %r" % (out, err))
        self.assertIn(out_path, err)
        self.assertFalse(os.path.exists(marker), "the command ran although --out is unwritable")
        self.assertFalse(os.path.exists(os.path.dirname(out_path)))
        self.assertLess(seconds, 10)

    def test_existing_out_needs_force(self):
        db = path("existing.db")
        original = b"not a run file, and it must stay as it is\n"
        with open(db, "wb") as f:
            f.write(original)
        marker = path("marker-existing")
        rc, out, err, _ = e2e.run(["run", "--out", db, "--", "touch", marker])
        self.assertNotEqual(rc, 0)
        self.assertIn(rc, (1, 2), err)
        self.assertIn(db, err)
        self.assertIn("--force", err)
        with open(db, "rb") as f:
            self.assertEqual(f.read(), original, "the existing file was changed")
        self.assertEqual(side_files(db), [])
        self.assertFalse(os.path.exists(marker), "the command ran although --out was refused")

        rc, out, err, _ = e2e.run(["run", "--force", "--json", "--out", db, "--",
                                   "touch", marker])
        self.assertEqual(rc, 0, err)
        self.assertTrue(os.path.exists(marker))
        with open(db, "rb") as f:
            self.assertEqual(f.read(16), b"SQLite format 3\0")
        report = parse_json(self, out, "run --force --json")
        self.assertEqual(report["run"]["exit_code"], 0)
        self.assertEqual(report["run"]["command"], "touch " + marker)
        check_same_report(self, report, db)


# ---------------------------------------------------------------------------
# What the job's environment carries

class HookEnvironment(unittest.TestCase):
    def test_the_job_checks_tfrecords_with_the_native_crc32c(self):
        # `run` names the native CRC32C library (python/native/crc32c.c) for
        # the job's stallscope.data; a value the user set is kept (empty: the
        # pure-Python code).
        out = path("crc-impl.txt")
        code = ("import stallscope.crc32c as c; open(%r, 'w').write(c.IMPLEMENTATION + "
                "'\\n' + str(c.crc32c(b'123456789')))" % out)
        rc, _, err, _ = e2e.run(["run", "--out", path("crc-native.db"), "--", PYTHON, "-c", code])
        self.assertEqual(rc, 0, err)
        with open(out) as f:
            impl, value = f.read().split("\n")
        self.assertTrue(impl.startswith("native "), impl)
        self.assertTrue(os.path.isfile(impl.split()[-1]), impl)
        self.assertEqual(int(value), 0xE3069283)
        env = dict(os.environ, STALLSCOPE_CRC32C="")
        rc, _, err, _ = e2e.run(["run", "--out", path("crc-python.db"), "--", PYTHON, "-c", code],
                                env=env)
        self.assertEqual(rc, 0, err)
        with open(out) as f:
            impl, value = f.read().split("\n")
        self.assertEqual(impl, "python")
        self.assertEqual(int(value), 0xE3069283)


# ---------------------------------------------------------------------------
# How the job ends

class Ending(unittest.TestCase):
    def test_exit_code_is_the_jobs(self):
        db = path("exit7.db")
        rc, out, err, _ = e2e.run(["run", "--json", "--out", db, "--", "sh", "-c", "exit 7"])
        self.assertEqual(rc, 7, err)
        report = parse_json(self, out, "run --json -- sh -c 'exit 7'")
        e2e.check_report(self, report)
        self.assertEqual(report["run"]["exit_code"], 7)
        self.assertIsNone(report["run"]["exit_signal"])
        self.assertIs(report["run"]["oom_killed"], False)
        self.assertEqual(scalar(db, "select exit_code from run"), 7)
        rc, text, err, _ = e2e.run(["report", db])
        self.assertEqual(rc, 0, err)  # report's own status: it ran
        self.assertIn("exited 7", text)

    def test_sigterm_is_forwarded(self):
        db = path("sigterm.db")
        proc = start(self, ["run", "--json", "--interval", "0.5", "--out", db, "--",
                            "sleep", "30"])
        child = wait_for_child(self, proc, "sleep 30")
        self.addCleanup(kill_pid_if, child, "sleep 30")
        time.sleep(1.0)  # a couple of intervals
        sent = time.monotonic()
        os.kill(proc.pid, signal.SIGTERM)  # stallscope alone, not its group
        try:
            out, err = proc.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            self.fail("stallscope did not end within 20 s of SIGTERM")
        self.assertLess(time.monotonic() - sent, 10, "it waited for the job instead")
        err = err.decode(errors="replace")
        self.assertEqual(proc.returncode, 128 + signal.SIGTERM, err)
        self.assertFalse(alive(child), "the job (pid %d) still runs: SIGTERM not forwarded" % child)
        report = parse_json(self, out.decode(errors="replace"), "run --json -- sleep 30")
        e2e.check_report(self, report)
        self.assertEqual(report["run"]["exit_signal"], signal.SIGTERM)
        self.assertIsNone(report["run"]["exit_code"])
        self.assertIs(report["run"]["oom_killed"], False)
        self.assertGreaterEqual(report["run"]["samples"], 2)
        again = e2e.run_json(self, ["report", db, "--json"])
        self.assertEqual(again["run"]["exit_signal"], signal.SIGTERM)
        rc, text, err, _ = e2e.run(["report", db])
        self.assertEqual(rc, 0, err)
        self.assertIn("SIGTERM", text)

    def test_kill_9_leaves_a_readable_run(self):
        token = "stallscope-e2e-kill9-%d" % os.getpid()
        script = "import time; time.sleep(30)  # " + token
        db = path("kill9.db")
        proc = start(self, ["run", "--interval", "0.5", "--out", db, "--", PYTHON, "-c", script])
        self.addCleanup(kill_matching, token)
        job = wait_for_child(self, proc, "%s -c %s" % (PYTHON, script))
        time.sleep(4)
        if proc.poll() is not None:
            self.fail("stallscope ended early (%d): %s" % (proc.returncode, proc.stderr.read()))
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        self.assertEqual(proc.returncode, -signal.SIGKILL)
        # The job outlives stallscope: an orphan, found by its unique argv.
        self.assertTrue(alive(job), "the job died with stallscope")
        self.assertIn(job, kill_matching(token))
        deadline = time.monotonic() + 10
        while alive(job) and time.monotonic() < deadline:
            time.sleep(0.05)
        self.assertFalse(alive(job))

        self.assertTrue(os.path.isfile(db))
        report = e2e.run_json(self, ["report", db, "--json"])
        e2e.check_report(self, report)
        run = report["run"]
        # ~7 intervals in 4 s; the one being written at the kill may be lost.
        self.assertGreaterEqual(run["samples"], 2, run)
        self.assertIsNone(run["duration_seconds"], run)
        self.assertIsNone(run["exit_code"], run)
        self.assertIsNone(run["exit_signal"], run)
        n = scalar(db, "select count(*) from samples")
        self.assertEqual(n, run["samples"])
        self.assertEqual([r[0] for r in query(db, "select interval from samples order by 1")],
                         list(range(n)), "committed intervals must have no gaps")
        self.assertGreaterEqual(scalar(db, "select min(processes) from samples"), 1)
        rc, text, err, _ = e2e.run(["report", db])
        self.assertEqual(rc, 0, err)
        self.assertIn("did not finish recording", text)


# A job that allocates and touches 16 MiB at a time, PAUSE seconds apart; it
# gives up (exit 3) at 2 GiB, should the limit not hold.
ALLOCATE = r"""
import sys, time
pause = float(sys.argv[1])
held = []
for _ in range(128):
    b = bytearray(16 << 20)
    for i in range(0, len(b), 4096):
        b[i] = 1
    held.append(b)
    time.sleep(pause)
raise SystemExit(3)
"""


def kernel_log_readable():
    """The kernel's OOM report can be matched here: /dev/kmsg opens, and this
    is the kernel's own pid namespace (in a container's, the kernel prints
    pids that are not ours)."""
    try:
        with open("/proc/self/status") as f:
            nspid = [l.split()[1:] for l in f if l.startswith("NSpid:")]
        if nspid and len(nspid[0]) > 1:
            return False
        os.close(os.open("/dev/kmsg", os.O_RDONLY | os.O_NONBLOCK))
        return True
    except OSError:
        return False


class OomKill(unittest.TestCase):
    """The OOM killer ends the job inside a 300 MiB memory cgroup (root only):
    once before the first sample, where the peak can only come from what the
    kernel kept, and once after several samples."""

    LIMIT = 300 * MIB

    def setUp(self):
        try:
            self.cgroup = e2e.MemoryCgroup("stallscope-e2e-oom-%d" % os.getpid(), self.LIMIT)
        except e2e.CgroupUnavailable as e:
            self.skipTest("no memory cgroup for the test: %s" % e)
        self.addCleanup(self.cgroup.remove)
        if self.cgroup.version == 1:
            # No swap to escape to: the limit is the job's.
            try:
                with open(self.cgroup.file("memory.swappiness"), "w") as f:
                    f.write("0")
            except OSError:
                pass

    def run_killed(self, name, interval, pause):
        """The allocating job under `run --json` in the cgroup: (report, db, finding)."""
        db = path(name + ".db")
        before = e2e.vmstat_counter("oom_kill")
        # stallscope and its job both join the cgroup; the job is the big one.
        command = ["sh", "-c", 'echo $$ > "$0" && exec "$@"', self.cgroup.procs_file,
                   e2e.BINARY, "run", "--json", "--interval", str(interval), "--out", db, "--",
                   PYTHON, "-c", ALLOCATE, str(pause)]
        proc = subprocess.run(command, capture_output=True, timeout=120)
        err = proc.stderr.decode(errors="replace")
        if proc.returncode == -signal.SIGKILL:
            self.fail("the OOM killer chose stallscope, not its job (stderr: %s)" % err[-2000:])
        self.assertEqual(proc.returncode, 128 + signal.SIGKILL,
                         "expected the job to be OOM-killed; stderr:\n%s" % err[-2000:])
        self.assertGreater(e2e.vmstat_counter("oom_kill"), before, "the kernel counted no OOM kill")
        report = parse_json(self, proc.stdout.decode(errors="replace"), "run --json (OOM)")
        e2e.check_report(self, report)
        run = report["run"]
        self.assertIs(run["oom_killed"], True, run)
        self.assertEqual(run["exit_signal"], signal.SIGKILL, run)
        self.assertIsNone(run["exit_code"], run)
        f = e2e.finding(report, "memory.oom_killed")
        self.assertIsNotNone(f, summary(report))
        self.assertEqual(f["severity"], "critical", f)
        self.assertEqual(report["verdict"]["layer"], "memory", summary(report))
        self.assertEqual(report["verdict"]["finding"], "memory.oom_killed", summary(report))
        ev = f["evidence"]
        self.assertEqual(ev["memory_limit_bytes"], self.LIMIT, ev)
        self.assertIs(ev["cgroup_limited"], True, ev)
        # The peak is known, and never 0. The tree's RSS is a sum over its
        # processes: a page two of them map (the interpreter) counts twice
        # there and once against the cgroup's limit, so the peak may pass the
        # limit by a little.
        self.assertIs(ev["peak_known"], True, ev)
        self.assertLessEqual(ev["peak_bytes"], self.LIMIT * 1.25, ev)
        self.assertGreater(ev["peak_bytes"], 128 * MIB, ev)
        self.assertNotIn("0 B", f["summary"])
        # What the kernel kept: the cgroup's peak rose in the run, and the
        # kernel log's report names the job itself.
        root_pid = scalar(db, "select root_pid from run")
        peaks = query(db, "select source, pid, bytes, detail from memory_peaks")
        cgroup = [p for p in peaks if p[0] == "cgroup"]
        peak_file = "memory.max_usage_in_bytes" if self.cgroup.version == 1 else "memory.peak"
        if os.path.exists(self.cgroup.file(peak_file)):  # v2 has it from 5.19 on
            self.assertEqual(len(cgroup), 1, peaks)
            self.assertGreater(cgroup[0][2], self.LIMIT * 0.9, peaks)
            # A dying task's last charge may pass the limit by a few pages.
            self.assertLessEqual(cgroup[0][2], self.LIMIT + 8 * MIB, peaks)
            self.assertEqual(ev["cgroup_peak_bytes"], cgroup[0][2], ev)
        else:
            self.assertEqual(cgroup, [], peaks)
        if kernel_log_readable():
            victims = [p for p in peaks if p[0] == "oom_kill"]
            self.assertEqual([p[1] for p in victims], [root_pid], peaks)
            self.assertIn("Killed process %d " % root_pid, victims[0][3])
            self.assertEqual(ev["oom_victim_pid"], root_pid, ev)
            self.assertGreater(ev["oom_victim_rss_bytes"], 128 * MIB, ev)
        else:
            sys.stderr.write("\n  /dev/kmsg unreadable or another pid namespace's here: the OOM "
                             "report is not checked\n")
        self.assertEqual(scalar(db, "select oom_killed from run"), 1)
        self.assertEqual(scalar(db, "select cgroup_limit_bytes from run"), self.LIMIT)
        again = check_same_report(self, report, db)
        self.assertIs(again["run"]["oom_killed"], True)
        self.assertEqual(e2e.finding(again, "memory.oom_killed")["evidence"], ev)
        rc, text, err, _ = e2e.run(["report", db])
        self.assertEqual(rc, 0, err)
        self.assertIn("OOM killer", text)
        return report, db, ev

    def test_oom_killed_before_the_first_sample(self):
        # The first sample is 30 s in; 300 MiB is reached in well under that
        # however loaded the machine (nothing in the job waits).
        report, db, ev = self.run_killed("oom-early", 30, 0)
        self.assertEqual(scalar(db, "select max(tree_rss_bytes) from samples"), 0,
                         "a sample saw the tree: the job lived past the first interval")
        self.assertNotIn("peak_tree_rss_bytes", ev)
        self.assertIn(ev["peak_source"], ("oom_kill", "cgroup"), ev)
        if kernel_log_readable():
            self.assertEqual(ev["peak_source"], "oom_kill", ev)
            self.assertEqual(ev["peak_bytes"], ev["oom_victim_rss_bytes"], ev)

    def test_oom_killed_after_several_samples(self):
        # 16 MiB every 0.15 s: the limit in about 3 s, sampled every 0.2 s.
        # Load only makes the job slower, so there are more samples, not fewer.
        report, db, ev = self.run_killed("oom-late", 0.2, 0.15)
        sampled = scalar(db, "select count(*) from samples where tree_rss_bytes > 0")
        self.assertGreaterEqual(sampled, 5, "samples that saw the tree")
        self.assertGreater(ev["peak_tree_rss_bytes"], 128 * MIB, ev)
        self.assertGreaterEqual(ev["peak_bytes"], ev["peak_tree_rss_bytes"], ev)
        self.assertIn(ev["peak_source"], ("samples", "oom_kill"), ev)


# A parent that forks two children holding 24 MiB each, says "ready", and
# ends with them after about 3 s.
FORKS = r"""
import os, sys, time
kids = []
for _ in range(2):
    pid = os.fork()
    if pid == 0:
        b = bytearray(24 << 20)
        for i in range(0, len(b), 4096):
            b[i] = 1
        time.sleep(3)
        os._exit(0)
    kids.append(pid)
mine = bytearray(8 << 20)
print("ready", flush=True)
for pid in kids:
    os.waitpid(pid, 0)
"""


class Watch(unittest.TestCase):
    def test_watch_until_the_tree_exits(self):
        token = "stallscope-e2e-watch-%d" % os.getpid()
        job = subprocess.Popen([PYTHON, "-c", FORKS + "# " + token], stdout=subprocess.PIPE)
        self.addCleanup(job.stdout.close)
        self.addCleanup(e2e.stop, job)
        self.addCleanup(kill_matching, token)
        self.assertEqual(e2e.wait_for_line(job, 20), "ready")
        self.assertEqual(len(children(job.pid)), 2)
        db = path("watch.db")
        # The job is not reaped here until watch is done: watch must see a
        # zombie as ended.
        rc, out, err, seconds = e2e.run(["watch", "--pid", str(job.pid), "--out", db,
                                         "--interval", "0.5", "--json"], timeout=30)
        self.assertEqual(rc, 0, err)
        self.assertLess(seconds, 15, "watch did not end with the tree")
        self.assertEqual(job.wait(timeout=10), 0)
        report = parse_json(self, out, "watch --json")
        e2e.check_report(self, report)
        self.assertEqual(report["run"]["command"], "watch pid %d" % job.pid)
        self.assertGreater(report["run"]["duration_seconds"], 1.0)
        self.assertLess(report["run"]["duration_seconds"], 10)
        self.assertRegex(err, r"(?m)^\[\s*\d+s\] rss")

        self.assertGreaterEqual(scalar(db, "select max(processes) from samples"), 3)
        self.assertGreaterEqual(scalar(db, "select max(tree_rss_bytes) from samples"), 56 * MIB)
        self.assertEqual(scalar(db, "select root_pid from run"), job.pid)
        kids = query(db, "select distinct pid from processes where ppid = ?", (job.pid,))
        self.assertEqual(len(kids), 2, kids)
        again = e2e.run_json(self, ["report", db, "--json"])
        self.assertEqual(again["run"]["samples"], report["run"]["samples"])

    def test_watch_missing_pid(self):
        # A pid that is not running: an error naming it, no run file.
        pid = 4194304 + 1  # above any pid_max
        db = path("watch-missing.db")
        rc, out, err, _ = e2e.run(["watch", "--pid", str(pid), "--out", db])
        self.assertIn(rc, (1, 2), err)
        self.assertIn(str(pid), err)
        self.assertFalse(os.path.exists(db))


if __name__ == "__main__":
    e2e.main()

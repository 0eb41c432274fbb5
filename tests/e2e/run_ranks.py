"""`stallscope run --procs K` end to end: the launcher (torchrun's variables,
exit status, a failing rank ending the others, a command that is not found)
with plain shell ranks, and a real two-rank PyTorch DDP job
(examples/train_cpu.py --ddp, gloo, Debian's python3-torch) whose rank 1 is
slowed on purpose: distributed.straggler must name rank 1 and its host, and
the same job without the slow rank must raise no distributed finding.

Run: /usr/bin/python3 run_ranks.py PATH_TO_STALLSCOPE
"""

import json
import os
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
import unittest

import e2e_common as e2e

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLE = os.path.join(REPO, "examples", "train_cpu.py")
PYTHON = "/usr/bin/python3"
TMP = None


def setUpModule():
    global TMP
    TMP = tempfile.mkdtemp(prefix="stallscope-e2e-ranks-")


def tearDownModule():
    shutil.rmtree(TMP, ignore_errors=True)


def have_torch():
    return e2e.have_torch(PYTHON, "torch")


class Launcher(unittest.TestCase):
    def test_ranks_get_torchruns_variables(self):
        out = os.path.join(TMP, "env")
        os.makedirs(out, exist_ok=True)
        script = ('echo "$RANK $LOCAL_RANK $WORLD_SIZE $LOCAL_WORLD_SIZE $MASTER_ADDR '
                  '$MASTER_PORT $STALLSCOPE_SOCKET" > %s/rank_$RANK' % out)
        rc, _, err, _ = e2e.run(["run", "--procs", "3", "--interval", "0.2", "--out",
                                 os.path.join(TMP, "env.db"), "--", "sh", "-c", script])
        self.assertEqual(rc, 0, err)
        rows = []
        for r in range(3):
            with open(os.path.join(out, "rank_%d" % r)) as f:
                rows.append(f.read().split())
        ports = set()
        for r, row in enumerate(rows):
            self.assertEqual(row[:5], [str(r), str(r), "3", "3", "127.0.0.1"])
            ports.add(row[5])
            self.assertTrue(row[6].endswith("hook.sock"))
        self.assertEqual(len(ports), 1, "one MASTER_PORT for all ranks")
        port = int(ports.pop())
        self.assertTrue(1024 <= port <= 65535)

    def test_a_failing_rank_ends_the_others_and_sets_the_exit_code(self):
        # Rank 1 fails at once; rank 0 would sleep 60 s: it must be ended.
        script = 'if [ "$RANK" = 1 ]; then exit 5; fi; exec sleep 60'
        rc, _, err, seconds = e2e.run(["run", "--procs", "2", "--interval", "0.2", "--out",
                                       os.path.join(TMP, "fail.db"), "--", "sh", "-c", script],
                                      timeout=50)
        self.assertEqual(rc, 5, err)
        self.assertLess(seconds, 20, "the other rank was not ended")

    def test_a_rank_that_ignores_sigterm_is_killed_after_the_grace(self):
        # Rank 1 fails; rank 0 ignores SIGTERM (a handler that never returns
        # stands for a rank stuck in a collective): SIGKILL after 10 s.
        marker = os.path.join(TMP, "ignored_term")
        child = os.path.join(TMP, "child_pid")
        # Its work in a child, as a rank started through a wrapper has it.
        script = ('if [ "$RANK" = 1 ]; then sleep 1; exit 3; fi; '
                  'sleep 300 & echo $! > %s; '
                  'trap "touch %s" TERM; while true; do sleep 0.2; done' % (child, marker))
        rc, _, err, seconds = e2e.run(["run", "--procs", "2", "--interval", "0.2", "--out",
                                       os.path.join(TMP, "ignore.db"), "--", "sh", "-c", script],
                                      timeout=60)
        self.assertEqual(rc, 3, err)
        self.assertTrue(os.path.exists(marker), "rank 0 never saw the SIGTERM")
        # Not before the grace (it ignored SIGTERM), and not much after it.
        self.assertGreaterEqual(seconds, 10)
        self.assertLess(seconds, 40)
        # The rank's child went with it.
        with open(child) as f:
            pid = int(f.read())
        deadline = time.monotonic() + 5
        while os.path.exists("/proc/%d" % pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        self.assertFalse(os.path.exists("/proc/%d" % pid), "the rank's child outlived the kill")

    def test_a_stop_the_user_asked_for_waits_for_a_rank_that_saves(self):
        # SIGTERM to stallscope: rank 0 ends at once (143), rank 1 takes 13 s
        # to save its checkpoint: no SIGKILL after 10 s cuts it short.
        saved = os.path.join(TMP, "saved1")
        ready = os.path.join(TMP, "ready1")
        script = ('if [ "$RANK" = 1 ]; then trap "sleep 13; touch %s; exit 0" TERM; '
                  'touch %s; while true; do sleep 0.2; done; fi; '
                  'trap "exit 143" TERM; while true; do sleep 0.2; done' % (saved, ready))
        proc = subprocess.Popen([e2e.BINARY, "run", "--procs", "2", "--interval", "0.2", "--out",
                                 os.path.join(TMP, "save.db"), "--", "sh", "-c", script],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            deadline = time.monotonic() + 30
            while not os.path.exists(ready) and time.monotonic() < deadline:
                time.sleep(0.05)
            self.assertTrue(os.path.exists(ready), "rank 1 did not start")
            time.sleep(0.5)
            proc.send_signal(signal.SIGTERM)
            proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        self.assertTrue(os.path.exists(saved), "rank 1 was killed while saving")

    def test_command_not_found_and_bad_procs(self):
        db = os.path.join(TMP, "missing.db")
        rc, _, err, _ = e2e.run(["run", "--procs", "2", "--out", db, "--",
                                 "no-such-command-xyz"])
        self.assertEqual(rc, 127)
        self.assertIn("no-such-command-xyz", err)
        self.assertFalse(os.path.exists(db), "a run that never started leaves no run file")
        rc, _, err, _ = e2e.run(["run", "--procs", "0", "--", "true"])
        self.assertEqual(rc, 2)
        self.assertIn("--procs", err)


@e2e.needs(have_torch(), "python3-torch is not installed")
class DdpJob(unittest.TestCase):
    """Two gloo ranks of the example, 14 steps each (batch 32 over 900
    images: each rank's shard is 450 images, 15 batches)."""

    def ddp(self, name, *extra, procs=2, steps=14, wrap=None):
        # A 2-rank gloo job of 14 steps takes 4-30 s here. Once in CI (a
        # loaded 2-CPU machine) a healthy run hung past 240 s with nothing to
        # show why; the cause is not found yet. So: the run gets its own
        # session, a hung one is killed whole (stallscope, its launcher and
        # both ranks, not left to load the next tests), its stderr is printed
        # for the log, and it is tried once more. A second hang fails.
        # (A related exit-time race in the hook's all-reduce callbacks, which
        # aborted ranks with status 134, was found and fixed since: see
        # _live_callbacks in python/stallscope. Its deadlock form, a
        # communication thread waiting for the GIL while the main thread
        # joins it, may have been this hang.)
        for attempt in (1, 2):
            db = os.path.join(TMP, "%s-%d.db" % (name, attempt))
            args = ["run", "--procs", str(procs), "--interval", "0.5", "--json", "--out", db,
                    "--"] + (wrap or []) + [PYTHON, EXAMPLE, "--ddp", "--epochs", "1",
                                            "--steps-per-epoch", str(steps),
                    "--batch-size", "32", "--workers", "0", "--make-images", "900",
                    "--data", os.path.join(TMP, "images")] + list(extra)
            proc = subprocess.Popen([e2e.BINARY] + args, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, start_new_session=True)
            try:
                out, err = proc.communicate(timeout=100)
                break
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                out, err = proc.communicate()
                tail = err.decode("utf-8", "replace")[-3000:]
                if attempt == 2:
                    self.fail("%s: hung twice (100 s each); stderr tail:\n%s" % (name, tail))
                print("run_ranks: %s hung for 100 s (attempt 1), killed; stderr tail:\n%s"
                      % (name, tail), file=sys.stderr)
        out, err, rc = out.decode("utf-8", "replace"), err.decode("utf-8", "replace"), \
            proc.returncode
        self.assertEqual(rc, 0, err[-3000:])
        report = json.loads(out)
        e2e.check_report(self, report)
        return report, db, err

    def test_straggler_is_named(self):
        report, db, _ = self.ddp("straggler", "--slow-rank", "1", "--slow-ms", "200")
        f = e2e.finding(report, "distributed.straggler")
        self.assertIsNotNone(f, json.dumps(report["findings"], indent=1))
        self.assertEqual(f["evidence"]["rank"], 1)
        self.assertEqual(f["evidence"]["host"], socket.gethostname())
        self.assertEqual(f["evidence"]["cause"], "compute")
        # The others wait about the 200 ms rank 1 sleeps (less its own sync).
        self.assertGreater(f["evidence"]["wait_for_it_seconds_per_step"], 0.12)
        self.assertLess(f["evidence"]["wait_for_it_seconds_per_step"], 1.5)
        ranks = {r["rank"]: r for r in report["ranks"]}
        self.assertEqual(sorted(ranks), [0, 1])
        self.assertGreater(ranks[0]["sync_wait_seconds"], ranks[1]["sync_wait_seconds"] + 0.1)
        self.assertGreater(ranks[1]["compute_seconds"], ranks[0]["compute_seconds"] + 0.1)
        # The run file keeps what the report was made of.
        with sqlite3.connect(db) as con:
            hosts = con.execute("SELECT rank, hostname FROM ranks ORDER BY rank").fetchall()
            syncs = con.execute("SELECT rank, count(*) FROM step_sync GROUP BY rank").fetchall()
        self.assertEqual([h[0] for h in hosts], [0, 1])
        self.assertEqual({h[1] for h in hosts}, {socket.gethostname()})
        self.assertEqual(dict(syncs), {0: 14, 1: 14})
        # `report` prints the per-rank table from the file.
        rc, text, err, _ = e2e.run(["report", db])
        self.assertEqual(rc, 0, err)
        self.assertIn("per rank", text)
        self.assertIn("distributed.straggler", text)
        table = text[text.index("per rank"):].splitlines()[2:4]
        self.assertEqual([int(line.split()[0]) for line in table], [0, 1])

    def test_four_ranks_the_sleeping_one_named_with_its_cause(self):
        """4 gloo ranks, 12 steps of batch 16: rank 2 sleeps 50 ms before its
        backward (a sleep, not a busy loop: this machine has 2 CPUs), then
        rank 3's loader hands each batch over 50 ms late instead. Every rank
        also sleeps 100 ms a step (--step-ms, a device's step time): the 4
        ranks' few ms of compute then rarely contend for the 2 CPUs, so the
        others' wait stays near the 50 ms however loaded the machine."""
        for slow, flag, cause in ((2, "--slow-rank", "compute"),
                                  (3, "--slow-loader-rank", "input")):
            report, _, _ = self.ddp("four-%s" % cause, flag, str(slow), "--slow-ms", "50",
                                    "--step-ms", "100", "--batch-size", "16", procs=4, steps=12)
            f = e2e.finding(report, "distributed.straggler")
            self.assertIsNotNone(f, json.dumps(report["findings"], indent=1))
            self.assertEqual(f["evidence"]["rank"], slow)
            self.assertEqual(f["evidence"]["cause"], cause)
            wait = f["evidence"]["wait_for_it_seconds_per_step"]
            self.assertGreater(wait, 0.035, cause)
            self.assertLess(wait, 0.065, cause)
            # Bucket by bucket: it enters the all-reduce last, the others
            # wait about its 50 ms there.
            self.assertGreaterEqual(f["evidence"]["last_into_bucket_share"], 0.8, cause)
            self.assertGreaterEqual(f["evidence"]["buckets_compared"], 8)
            bucket_wait = f["evidence"]["others_bucket_wait_seconds_per_step"]
            self.assertGreater(bucket_wait, 0.035, cause)
            self.assertLess(bucket_wait, 0.065, cause)
            self.assertEqual(f["evidence"]["bucket_clock"], "one file's clock")
            self.assertEqual(sorted(r["rank"] for r in report["ranks"]), [0, 1, 2, 3])

    @unittest.skipUnless(shutil.which("taskset") and len(os.sched_getaffinity(0)) >= 2
                         and os.geteuid() == 0, "needs taskset, two CPUs and root (nice -10)")
    def test_a_rank_that_waits_for_a_cpu_is_named_host_cpu(self):
        """Rank 2 runs on CPU 1 beside three busy loops pinned there at nice -10; the other
        three ranks share CPU 0, where they spend most of each step blocked in
        the all-reduce that waits for rank 2: rank 2 computes longer because
        it waits for a CPU, which its run delay shows."""
        cpus = sorted(os.sched_getaffinity(0))[:2]
        # The images first, by one process (4 ranks would each start making them).
        data = os.path.join(TMP, "images-host-cpu")
        subprocess.run([PYTHON, "-c", "import sys; sys.path.insert(0, %r); import train_cpu; "
                        "train_cpu.make_images(%r, 1000)" % (os.path.dirname(EXAMPLE), data)],
                       check=True, capture_output=True)
        # At nice -10 (root), in a session of their own whose autogroup is at
        # nice -10 too: with autogroups (kernel.sched_autogroup_enabled) CPU
        # time is shared between sessions first, and run starts the job in
        # its own.
        hogs = subprocess.Popen(
            ["sh", "-c", "for i in 1 2 3; do nice -n -10 taskset -c %d sh -c 'while :; do :; done' "
             "& done; wait" % cpus[1]], start_new_session=True)
        try:
            if os.path.exists("/proc/%d/autogroup" % hogs.pid):
                with open("/proc/%d/autogroup" % hogs.pid, "w") as f:
                    f.write("-10")
            wrap = ["sh", "-c", 'exec taskset -c "$([ "$RANK" = 2 ] && echo %d || echo %d)" "$@"'
                    % (cpus[1], cpus[0]), "pin"]
            # Batch 32: each step takes about 15 ms of CPU. No --step-ms: a rank
            # that sleeps in each step gets the scheduler's credit for a waking
            # task, which hid most of rank 2's wait beside the hogs (a CI
            # machine found rank 2 only 45 ms a step late at --step-ms 60);
            # always runnable, it waits 150-300 ms a step.
            report, _, _ = self.ddp("host-cpu", "--batch-size", "32",
                                    "--data", data, procs=4, steps=12, wrap=wrap)
        finally:
            os.killpg(hogs.pid, signal.SIGKILL)
            hogs.wait()
        f = e2e.finding(report, "distributed.straggler")
        sys.stderr.write("\n  host_cpu: %s\n" % json.dumps(f and f["evidence"]))
        self.assertIsNotNone(f, json.dumps(report["ranks"], indent=1))
        self.assertEqual(f["evidence"]["rank"], 2)
        self.assertEqual(f["evidence"]["cause"], "host_cpu", f["evidence"])
        self.assertGreater(f["evidence"]["its_run_delay_pct"],
                           f["evidence"]["others_run_delay_pct"] + 10)

    def test_healthy_run_raises_no_distributed_finding(self):
        # Each step sleeps 400 ms in both ranks (a device's step time, the
        # CPU free meanwhile), so a rank slowed by a busy CPU (the other
        # tests, another job) stays well under the straggler's 15%: the
        # assertion below does not depend on this VM's load.
        report, _, _ = self.ddp("healthy", "--step-ms", "400")
        ids = [f["id"] for f in report["findings"]]
        # No straggler in a healthy run. load_imbalance (a warning) can fire
        # on a 2-CPU box whose other tests load one rank's core more.
        self.assertNotIn("distributed.straggler", ids)
        self.assertEqual([f["id"] for f in report["findings"] if f["id"].startswith(
            "distributed.") and f["severity"] == "critical"], [], ids)
        self.assertEqual(len(report["ranks"]), 2)
        for r in report["ranks"]:
            self.assertEqual(r["steps"], 12)  # 14 less the 2 warm-up steps
            self.assertIsNotNone(r["sync_wait_seconds"])
            self.assertGreater(r["cpu_seconds_per_step"], 0)
        layers = {l["layer"]: l["status"] for l in report["layers"]}
        self.assertIn(layers["distributed"], ("ok", "warning"))


if __name__ == "__main__":
    e2e.main()

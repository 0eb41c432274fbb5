"""`run` and the exporter with a job whose files sit on a network file
system that dies under it (an sshfs mount, remote_fs_common.py).

The job opens three files on the mount; the link is cut; the job then makes
new descriptors of the same files with dup() (no call on the mount, but
each is a descriptor the samplers have not seen, so they look at its file:
a stat that waits in the kernel for good on the dead mount). Its own exit
waits too (close flushes through FUSE), so the test aborts the FUSE
connection after a dead spell of several seconds, and then the job ends.

- `run`: the sampling loop goes on through the dead spell (samples are
  recorded in it), the run ends with the job, and one note names the mount
  and the call that did not answer.
- The exporter: /metrics answers every scrape during the dead spell, its
  children stay at most kMaxRemoteProbeChildren (4), and it notes the mount.
- `doctor --data` on the live mount, with its storage bench: both run in a
  child process and come back through its pipe (census and bench figures).

The deadline is lowered to 2 s for the test (a test-only environment
variable). Needs root, FUSE, sshfs and openssh-server; skips without them
(fails under CI=true).

Usage: remote_fs_probes.py PATH_TO_STALLSCOPE
"""

import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_common as e2e  # noqa: E402
import remote_fs_common  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEADLINE = "2"
DEAD_SECONDS = 8  # the dead spell: several deadlines
MAX_CHILDREN = 4  # kMaxRemoteProbeChildren

# argv: mount, ready file, go file. Reports through the hook when it is set.
JOB = r"""
import os, sys, time
mount, ready, go = sys.argv[1:4]
if os.environ.get("STALLSCOPE_SOCKET"):
    import stallscope
    stallscope.epoch(0)
    for _ in stallscope.loader(iter(range(3))):
        pass
def busy(seconds):  # the samplers look at the files of a process that ran
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass
fds = [os.open(os.path.join(mount, "train", "%05d.bin" % i), os.O_RDONLY) for i in range(3)]
open(ready, "w").close()
while not os.path.exists(go):
    busy(0.02)
    time.sleep(0.05)
for k in range(40):  # new descriptors of the same files, no call on the mount
    fds.append(os.dup(fds[k % 3]))
    busy(0.05)
    time.sleep(0.05)
while True:  # until the test aborts the mount: then the exit's close returns
    try:
        os.fstat(fds[0])
        time.sleep(0.2)
    except OSError:
        os._exit(0)
"""


def write_files(folder):
    os.makedirs(os.path.join(folder, "train"))
    for i in range(3):
        with open(os.path.join(folder, "train", "%05d.bin" % i), "wb") as f:
            f.write(os.urandom(4096))


def children_of(pid):
    out = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open("/proc/%s/stat" % name) as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                out.append(int(name))
    return out


def wait_for(path, proc, seconds=30):
    deadline = time.monotonic() + seconds
    while not os.path.exists(path):
        if proc.poll() is not None or time.monotonic() > deadline:
            raise AssertionError("the job did not start (%s)" % path)
        time.sleep(0.05)


class DeadMountProbes(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="stallscope-remote-probes-")
        self.job = os.path.join(self.tmp, "job.py")
        with open(self.job, "w") as f:
            f.write(JOB)
        self.ready = os.path.join(self.tmp, "ready")
        self.go = os.path.join(self.tmp, "go")
        self.env = dict(os.environ, STALLSCOPE_TEST_REMOTE_DEADLINE_S=DEADLINE)

    def test_run_goes_on_through_a_dead_mount(self):
        db = os.path.join(self.tmp, "run.db")
        with remote_fs_common.RemoteFs(self, delay_ms=1) as fs:
            write_files(fs.export)
            started = time.monotonic()
            proc = subprocess.Popen(
                [e2e.BINARY, "run", "--interval", "0.5", "--out", db, "--", "/usr/bin/python3",
                 self.job, fs.mount, self.ready, self.go],
                env=self.env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            try:
                wait_for(self.ready, proc)
                time.sleep(1.5)  # sampled while the mount answers
                fs.cut_link()
                cut = time.monotonic()
                open(self.go, "w").close()
                time.sleep(DEAD_SECONDS)
                aborted = time.monotonic()
                remote_fs_common.abort_fuse(fs.mount)
                _, err = proc.communicate(timeout=60)
            finally:
                if proc.poll() is None:
                    proc.kill()
            self.assertEqual(proc.returncode, 0, err)
        # The sampling loop went on through the dead spell. Run time starts a
        # little after `started`, so the window is taken inside the spell.
        conn = sqlite3.connect("file:%s?mode=ro" % db, uri=True)
        try:
            in_spell = conn.execute(
                "select count(*) from samples where t_seconds between ? and ?",
                (cut - started, aborted - started - 1.5)).fetchone()[0]
        finally:
            conn.close()
        self.assertGreaterEqual(in_spell, 4, "samples stopped while the mount was dead")
        report = e2e.run_json(self, ["report", db, "--json"])
        notes = [n for n in report["notes"]
                 if "no answer from the fuse.sshfs mount %s" % fs.mount in n]
        self.assertEqual(len(notes), 1, report["notes"])
        self.assertIn("within 2 s to the stat of %s/train/" % fs.mount, notes[0])

    def test_doctor_census_and_bench_come_back_from_the_child(self):
        with remote_fs_common.RemoteFs(self, delay_ms=1) as fs:
            write_files(fs.export)
            report = e2e.run_json(self, ["doctor", "--data", fs.mount, "--json",
                                         "--interval", "0.5"], timeout=180)
        self.assertEqual(report["data"]["files"], 3, report["notes"])
        self.assertTrue(report["data"]["remote"])
        benches = [f["fact"] for f in report["facts"] if f["fact"].startswith("bench ")]
        self.assertEqual(len(benches), 1, report["facts"])
        self.assertIn(fs.mount, benches[0])
        self.assertIn("random 4 KiB", benches[0])

    def test_exporter_serves_through_a_dead_mount(self):
        sock = os.path.join(self.tmp, "hook.sock")
        exporter = subprocess.Popen(
            [e2e.BINARY, "exporter", "--listen", "127.0.0.1:0", "--interval", "0.5",
             "--hook-socket", sock],
            env=self.env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        lines, ready = [], threading.Event()
        port = []

        def drain():
            for line in exporter.stderr:
                lines.append(line)
                if "serving http://" in line:
                    port.append(int(line.split("serving http://", 1)[1].split("/")[0]
                                    .rsplit(":", 1)[1]))
                    ready.set()
        threading.Thread(target=drain, daemon=True).start()
        job = None
        try:
            self.assertTrue(ready.wait(10), "".join(lines))
            hook_env = subprocess.run([e2e.BINARY, "hook-env", "--hook-socket", sock],
                                      capture_output=True, text=True, check=True).stdout
            env = dict(self.env, **dict(l.split("=", 1) for l in hook_env.splitlines()))
            env["STALLSCOPE_JOB"] = "e2e-remote"

            def scrape():
                url = "http://127.0.0.1:%d/metrics" % port[0]
                with urllib.request.urlopen(url, timeout=5) as r:  # a hang fails here
                    return r.read().decode()

            with remote_fs_common.RemoteFs(self, delay_ms=1) as fs:
                write_files(fs.export)
                job = subprocess.Popen(["/usr/bin/python3", self.job, fs.mount, self.ready,
                                        self.go], env=env)
                wait_for(self.ready, job)
                for _ in range(3):  # the job's files seen while the mount answers
                    scrape()
                    time.sleep(0.5)
                fs.cut_link()
                open(self.go, "w").close()
                most = 0
                end = time.monotonic() + DEAD_SECONDS
                while time.monotonic() < end:
                    body = scrape()
                    self.assertIn("stallscope_memory_available_bytes", body)
                    most = max(most, len(children_of(exporter.pid)))
                    served = [l for l in body.splitlines()
                              if l.startswith("stallscope_exporter_remote_file_children ")]
                    self.assertEqual(len(served), 1)
                    self.assertLessEqual(float(served[0].split()[1]), MAX_CHILDREN)
                    time.sleep(0.3)
                self.assertLessEqual(most, MAX_CHILDREN)
                self.assertGreaterEqual(most, 1, "no child asked the dead mount: " + "".join(lines))
                noted = [l for l in lines
                         if "no answer from the fuse.sshfs mount %s" % fs.mount in l]
                self.assertEqual(len(noted), 1, "".join(lines))
                remote_fs_common.abort_fuse(fs.mount)
                self.assertEqual(job.wait(30), 0)
        finally:
            if job is not None and job.poll() is None:
                job.kill()
            exporter.terminate()
            try:
                exporter.wait(10)
            except subprocess.TimeoutExpired:
                exporter.kill()


if __name__ == "__main__":
    e2e.main()

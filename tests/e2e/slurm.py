#!/usr/bin/env python3
"""End-to-end: every job of a real Slurm (Debian's slurmctld, slurmd and
munge) recorded by stallscope's prolog, epilog and task prolog, without a
wrapper in the job script.

The test starts its own munged (its own key and socket), slurmctld and
slurmd on free ports with a private slurm.conf (proctrack/linuxproc,
task/none, no accounting, MpiDefault=pmix, one node), never a system
Slurm, and stops them by pid, also when a test fails. A test user
(useradd) submits the jobs from a folder of its own. Skips with a message
where the daemons cannot start outside CI; fails with CI=true.

usage: slurm.py PATH_TO_STALLSCOPE
"""

import json
import os
import pwd
import shutil
import signal
import socket
import sqlite3
import subprocess
import tempfile
import time
import unittest

import e2e_common as e2e

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SCRIPTS = os.path.join(ROOT, "deploy", "slurm")
USER = "stallscope-slurm"
DAEMONS = ["/usr/sbin/munged", "/usr/sbin/slurmctld", "/usr/sbin/slurmd", "/usr/bin/sbatch",
           "/usr/bin/scontrol", "/usr/bin/sinfo", "/usr/bin/scancel", "/usr/bin/srun"]

# A DataLoader job with num_workers=0 whose only stallscope lines are the
# import and the loader's wrapper: its steps reach the recorder through the
# task prolog's environment alone.
TRAIN = """\
import time
import torch
import stallscope


class Slow(torch.utils.data.Dataset):
    def __len__(self):
        return 30

    def __getitem__(self, i):
        time.sleep(0.04)  # a decode in the training process
        return torch.ones(8) * i


loader = torch.utils.data.DataLoader(Slow(), batch_size=2, num_workers=0)
model = torch.nn.Linear(8, 1)
for epoch in range(2):
    for batch in stallscope.loader(loader):
        model(batch).sum().backward()
"""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def read_pid(path):
    try:
        with open(path) as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def end_pid(pid, seconds=10):
    if not pid:
        return
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def processes_naming(text):
    """Pids whose command line holds TEXT (what a failed test may leave)."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % entry, "rb") as f:
                if text.encode() in f.read():
                    pids.append(int(entry))
        except OSError:
            pass
    return pids


class PrivateSlurm:
    """munged, slurmctld and slurmd of this test's own, on free ports."""

    def __init__(self, binary):
        if os.geteuid() != 0:
            e2e.skip_or_fail("a private Slurm needs root (slurmd, useradd)")
        missing = [d for d in DAEMONS if not os.access(d, os.X_OK)]
        if missing:
            e2e.skip_or_fail("Slurm or munge is not installed (%s): scripts/setup.sh installs "
                             "slurmd, slurmctld, slurm-client and munge" % ", ".join(missing))
        if not e2e.have_torch():
            e2e.skip_or_fail("/usr/bin/python3 has no torch (Debian's python3-torch)")
        self.binary = binary
        self.tmp = tempfile.mkdtemp(prefix="stallscope-slurm-")
        os.chmod(self.tmp, 0o755)  # the test user walks through it
        self.made_user = False
        self.node = socket.gethostname().split(".")[0]
        self.conf = os.path.join(self.tmp, "slurm.conf")
        self.env = dict(os.environ, SLURM_CONF=self.conf)
        self.state = os.path.join(self.tmp, "stallscope-state")
        try:
            self._start()
        except BaseException:
            self.stop()
            raise

    def path(self, *parts):
        return os.path.join(self.tmp, *parts)

    def _start(self):
        try:
            pwd.getpwnam(USER)
        except KeyError:
            subprocess.run(["useradd", "--create-home", "--shell", "/bin/sh", USER], check=True)
            self.made_user = True
        self.user = pwd.getpwnam(USER)
        munge = self.path("munge")
        os.makedirs(munge, mode=0o755)
        os.chmod(munge, 0o755)  # users reach the socket; munged checks it is not writable
        with open(self.path("munge", "munge.key"), "wb") as f:
            f.write(os.urandom(1024))
        os.chmod(self.path("munge", "munge.key"), 0o600)
        for d in ("ctld", "spool", "log"):
            os.makedirs(self.path(d))
        # The scripts as a site installs them, pointed at this build's binary
        # and at a settings file of the test's.
        with open(self.path("stallscope-slurm.conf"), "w") as f:
            f.write("state_dir = %s\nmerge_wait = 20\n" % self.state)
        for name in ("prolog", "epilog", "task-prolog"):
            wrapper = self.path(name)
            with open(wrapper, "w") as f:
                f.write("#!/bin/sh\nSTALLSCOPE=%s STALLSCOPE_SLURM_CONF=%s exec %s\n" %
                        (self.binary, self.path("stallscope-slurm.conf"),
                         os.path.join(SCRIPTS, name)))
            os.chmod(wrapper, 0o755)
        ctld_port, slurmd_port = free_port(), free_port()
        with open(self.conf, "w") as f:
            f.write("\n".join([
                "ClusterName=stallscope-test",
                "SlurmctldHost=%s(127.0.0.1)" % self.node,
                "SlurmctldPort=%d" % ctld_port,
                "SlurmdPort=%d" % slurmd_port,
                "SlurmUser=root",
                "SlurmdUser=root",
                "AuthType=auth/munge",
                "AuthInfo=socket=%s" % self.path("munge", "munge.sock"),
                "CredType=cred/munge",
                "ProctrackType=proctrack/linuxproc",
                "TaskPlugin=task/none",
                "AccountingStorageType=accounting_storage/none",
                "JobAcctGatherType=jobacct_gather/none",
                "JobCompType=jobcomp/none",
                "MpiDefault=pmix",
                "StateSaveLocation=%s" % self.path("ctld"),
                "SlurmdSpoolDir=%s" % self.path("spool"),
                "SlurmctldPidFile=%s" % self.path("slurmctld.pid"),
                "SlurmdPidFile=%s" % self.path("slurmd.pid"),
                "SlurmctldLogFile=%s" % self.path("log", "slurmctld.log"),
                "SlurmdLogFile=%s" % self.path("log", "slurmd.log"),
                "SchedulerType=sched/builtin",
                "SelectType=select/cons_tres",
                "SelectTypeParameters=CR_Core",
                "ReturnToService=2",
                "PrologFlags=Alloc",
                "Prolog=%s" % self.path("prolog"),
                "Epilog=%s" % self.path("epilog"),
                "TaskProlog=%s" % self.path("task-prolog"),
                "NodeName=%s NodeAddr=127.0.0.1 CPUs=%d RealMemory=1000 State=UNKNOWN" %
                (self.node, os.cpu_count()),
                "PartitionName=debug Nodes=%s Default=YES MaxTime=INFINITE State=UP" % self.node,
                ""]))
        subprocess.run(["/usr/sbin/munged", "--key-file", self.path("munge", "munge.key"),
                        "--socket", self.path("munge", "munge.sock"),
                        "--pid-file", self.path("munge", "munged.pid"),
                        "--log-file", self.path("munge", "munged.log"),
                        "--seed-file", self.path("munge", "seed"), "--force"],
                       check=True, capture_output=True, timeout=30)
        subprocess.run(["/usr/sbin/slurmctld", "-c"], env=self.env, check=True,
                       capture_output=True, timeout=30)
        subprocess.run(["/usr/sbin/slurmd"], env=self.env, check=True, capture_output=True,
                       timeout=30)
        deadline = time.monotonic() + 60
        while self.node_state() != "idle":
            if time.monotonic() > deadline:
                e2e.skip_or_fail("the private Slurm did not come up (node state %r); logs in %s"
                                 % (self.node_state(), self.path("log")))
            time.sleep(0.5)

    def node_state(self):
        proc = subprocess.run(["sinfo", "-h", "-N", "-o", "%t"], env=self.env,
                              capture_output=True, timeout=30)
        return proc.stdout.decode().strip()

    def submit_folder(self, name, writable=True):
        folder = self.path(name)
        os.makedirs(folder)
        if writable:
            os.chown(folder, self.user.pw_uid, self.user.pw_gid)
        with open(os.path.join(folder, "train.py"), "w") as f:
            f.write(TRAIN)
        return folder

    def as_user(self, args, cwd):
        """Runs ARGS as the test user in CWD; (rc, stdout, stderr)."""
        u = self.user

        def drop():
            os.setgroups([])
            os.setgid(u.pw_gid)
            os.setuid(u.pw_uid)

        env = {"PATH": "/usr/bin:/bin", "HOME": u.pw_dir, "USER": USER, "LOGNAME": USER,
               "SLURM_CONF": self.conf}
        proc = subprocess.run(args, cwd=cwd, env=env, preexec_fn=drop, capture_output=True,
                              timeout=60)
        return proc.returncode, proc.stdout.decode(), proc.stderr.decode()

    def sbatch(self, folder, script, *flags):
        with open(os.path.join(folder, "job.sh"), "w") as f:
            f.write("#!/bin/sh\n" + script)
        rc, out, err = self.as_user(["sbatch", "--parsable"] + list(flags) + ["job.sh"], folder)
        if rc != 0:
            raise AssertionError("sbatch: %s" % err)
        return out.strip().split(";")[0]

    def job(self, job_id):
        """scontrol's fields of the job, as a dict."""
        proc = subprocess.run(["scontrol", "-o", "show", "job", job_id], env=self.env,
                              capture_output=True, timeout=30)
        fields = {}
        for word in proc.stdout.decode().split():
            key, _, value = word.partition("=")
            fields.setdefault(key, value)
        return fields

    def wait_for_state(self, job_id, states, seconds=120):
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            fields = self.job(job_id)
            if fields.get("JobState") in states:
                return fields
            time.sleep(0.5)
        raise AssertionError("job %s not in %s after %d s: %s; slurmd's log ends:\n%s" % (
            job_id, states, seconds, self.job(job_id), self.log_tail("slurmd.log")))

    def log_tail(self, name):
        try:
            with open(self.path("log", name), errors="replace") as f:
                return "".join(f.readlines()[-20:])
        except OSError:
            return "(none)"

    def stop(self):
        for pid_file in ("slurmd.pid", "slurmctld.pid"):
            end_pid(read_pid(self.path(pid_file)))
        for pid in processes_naming(self.tmp):  # a job's steps, a recorder left by a failure
            end_pid(pid, seconds=2)
        end_pid(read_pid(self.path("munge", "munged.pid")))
        if self.made_user:
            subprocess.run(["userdel", "--remove", USER], capture_output=True)
        shutil.rmtree(self.tmp, ignore_errors=True)


SLURM = None


def setUpModule():
    # One private Slurm for every test here (it takes a few seconds to come up).
    global SLURM
    SLURM = PrivateSlurm(e2e.BINARY)


def tearDownModule():
    if SLURM:
        SLURM.stop()


class SlurmJobs(unittest.TestCase):
    def setUp(self):
        self.slurm = SLURM

    def wait_for_file(self, path, seconds=60):
        deadline = time.monotonic() + seconds
        while not os.path.exists(path):
            if time.monotonic() > deadline:
                self.fail("%s did not appear in %d s; the folder holds %s" % (
                    path, seconds, os.listdir(os.path.dirname(path))
                    if os.path.isdir(os.path.dirname(path)) else "nothing"))
            time.sleep(0.25)

    def assert_node_up(self):
        # An epilog or prolog that failed would drain the node.
        deadline = time.monotonic() + 30
        while self.slurm.node_state() not in ("idle", "mix", "alloc"):
            if time.monotonic() > deadline:
                self.fail("node state %r after the job" % self.slurm.node_state())
            time.sleep(0.5)

    def test_a_two_task_job_is_recorded_and_reported_without_a_wrapper(self):
        s = self.slurm
        folder = s.submit_folder("two_tasks")
        job_id = s.sbatch(folder, "srun /usr/bin/python3 train.py\n", "--ntasks", "2",
                          "--job-name", "two-tasks")
        fields = s.wait_for_state(job_id, {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT"})
        self.assertEqual(fields.get("JobState"), "COMPLETED", fields)
        self.assertEqual(fields.get("ExitCode"), "0:0")
        job_folder = os.path.join(folder, "stallscope-" + job_id)
        # The batch host's epilog merges, detached, once the node's file is
        # closed: report.json appears by itself.
        self.wait_for_file(os.path.join(job_folder, "report.json"))
        st = os.stat(job_folder)
        self.assertEqual((st.st_uid, st.st_gid), (s.user.pw_uid, s.user.pw_gid),
                         "the job's folder is its user's")
        run_file = os.path.join(job_folder, s.node + ".db")
        self.assertEqual(os.stat(run_file).st_uid, s.user.pw_uid, "the recorder ran as the user")
        # The job's name, for `history`, from the task prolog (the prolog lacks it).
        with sqlite3.connect("file:%s?mode=ro" % run_file, uri=True) as db:
            identity = db.execute("SELECT job_name, job_name_from, uid FROM job_identity").fetchone()
        self.assertEqual(identity, ("two-tasks", "SLURM_JOB_NAME", s.user.pw_uid))
        # The user's own report, in the submit folder, says what the epilog's says.
        rc, out, err = s.as_user([e2e.BINARY, "report", "--slurm-job", job_id, "--json"], folder)
        self.assertEqual(rc, 0, err)
        report = json.loads(out)
        self.assertEqual(report["schema"], "stallscope.report/1")
        e2e.check_report(self, report)
        ranks = {r["rank"]: r for r in report["ranks"]}
        self.assertEqual(sorted(ranks), [0, 1], "both tasks' steps (SLURM_PROCID 0 and 1)")
        for rank in ranks.values():
            self.assertGreaterEqual(rank["steps"], 25, rank)
        input_bound = e2e.finding(report, "io.input_bound")
        self.assertIsNotNone(input_bound, [f["id"] for f in report["findings"]])
        self.assertEqual(input_bound["evidence"]["ranks"], 2)
        # What the detached merge wrote is the same job.
        with open(os.path.join(job_folder, "report.json")) as f:
            merged = json.load(f)
        self.assertEqual(sorted(r["rank"] for r in merged["ranks"]), [0, 1])
        self.assertIn("io.input_bound", [f["id"] for f in merged["findings"]])
        with open(os.path.join(job_folder, "report.txt")) as f:
            self.assertIn("io.input_bound", f.read())
        # Nothing is left running or listed once the epilog ran.
        self.assertFalse(os.path.exists(os.path.join(s.state, "jobs", job_id)))
        self.assertFalse(os.path.exists(os.path.join(s.state, "job-" + job_id)))
        self.assertEqual(processes_naming("--slurm-job\0" + job_id + "\0"), [])
        self.assert_node_up()

    def test_a_failed_and_a_cancelled_job_keep_their_state_and_the_node(self):
        s = self.slurm
        folder = s.submit_folder("failing")
        failed = s.sbatch(folder, "srun /usr/bin/python3 train.py\nexit 3\n", "--ntasks", "1")
        fields = s.wait_for_state(failed, {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT"})
        self.assertEqual(fields.get("JobState"), "FAILED", fields)
        self.assertEqual(fields.get("ExitCode"), "3:0")
        self.assert_node_up()
        job_folder = os.path.join(folder, "stallscope-" + failed)
        self.wait_for_file(os.path.join(job_folder, "report.json"))
        with open(os.path.join(job_folder, "report.json")) as f:
            report = json.load(f)
        self.assertEqual([r["rank"] for r in report["ranks"]], [0], "the steps it had")
        # A job cancelled while it runs: its recorder stops at the epilog.
        cancelled = s.sbatch(folder, "sleep 300\n", "--ntasks", "1")
        s.wait_for_state(cancelled, {"RUNNING"})
        self.wait_for_file(os.path.join(s.state, "jobs", cancelled))
        subprocess.run(["scancel", cancelled], env=s.env, check=True, timeout=30)
        fields = s.wait_for_state(cancelled, {"CANCELLED", "COMPLETED", "FAILED"})
        self.assertEqual(fields.get("JobState"), "CANCELLED", fields)
        self.wait_for_file(os.path.join(folder, "stallscope-" + cancelled, "report.json"))
        self.assertEqual(processes_naming("--slurm-job\0" + cancelled + "\0"), [])
        self.assert_node_up()

    def test_a_submit_folder_the_user_cannot_write_costs_the_recording_only(self):
        s = self.slurm
        folder = s.submit_folder("read_only", writable=False)  # root's, 0755
        out = s.path("read_only.out")
        open(out, "w").close()
        os.chown(out, s.user.pw_uid, s.user.pw_gid)
        job_id = s.sbatch(folder, "srun /usr/bin/python3 train.py\n", "--ntasks", "1",
                          "--output", out)
        fields = s.wait_for_state(job_id, {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT"})
        with open(out, errors="replace") as f:
            said = f.read()[-3000:]
        self.assertEqual(fields.get("JobState"), "COMPLETED", said)
        self.assertEqual(fields.get("ExitCode"), "0:0")
        self.assert_node_up()
        self.assertFalse(os.path.exists(os.path.join(folder, "stallscope-" + job_id)))
        self.assertFalse(os.path.exists(os.path.join(s.state, "jobs", job_id)))
        self.assertEqual(processes_naming("--slurm-job\0" + job_id + "\0"), [])


    def test_cluster_under_srun(self):
        # `srun stallscope cluster`: the MPI plugin's ranks from Slurm's PMIx.
        s = self.slurm
        folder = s.submit_folder("cluster")
        job_id = s.sbatch(folder, "srun --ntasks 2 %s cluster --json > cluster.json\n" % e2e.BINARY,
                          "--ntasks", "2")
        fields = s.wait_for_state(job_id, {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT"})
        with open(os.path.join(folder, "slurm-%s.out" % job_id), errors="replace") as f:
            said = f.read()[-3000:]
        self.assertEqual(fields.get("JobState"), "COMPLETED", said)
        with open(os.path.join(folder, "cluster.json")) as f:
            report = json.load(f)
        self.assertEqual(report["schema"], "stallscope.report/1")
        cluster = report["cluster"]
        self.assertEqual(sorted(r["rank"] for r in cluster["per_rank"]), [0, 1])
        self.assertEqual([row["ranks"] for row in cluster["rows"]], [[0, 1]], "one node, two ranks")
        self.assertEqual(cluster["differing_columns"], [])

class SlurmExporter(unittest.TestCase):
    """The exporter knows the node's Slurm jobs from the prolog's lines."""

    def setUp(self):
        self.slurm = SLURM

    def read_textfile(self, path):
        try:
            with open(path) as f:
                return f.read()
        except OSError:
            return ""

    def wait_for_text(self, path, present, text, seconds=60):
        deadline = time.monotonic() + seconds
        while (text in self.read_textfile(path)) != present:
            if time.monotonic() > deadline:
                self.fail("%r %s %s after %d s:\n%s" % (
                    text, "not in" if present else "still in", path, seconds,
                    self.read_textfile(path)[-3000:]))
            time.sleep(0.25)

    def test_job_info_while_the_job_runs_in_a_textfile_promtool_reads(self):
        s = self.slurm
        textdir = s.path("textfile")
        os.makedirs(textdir)
        exporter = subprocess.Popen(
            [e2e.BINARY, "exporter", "--listen", "127.0.0.1:0", "--interval", "0.5",
             "--hook-socket", s.path("exporter-hook.sock"), "--slurm-state", s.state,
             "--textfile", textdir],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        textfile = os.path.join(textdir, "stallscope.prom")
        try:
            folder = s.submit_folder("held")
            job_id = s.sbatch(folder, "srun sleep 300\n", "--ntasks", "1", "--job-name", "held")
            s.wait_for_state(job_id, {"RUNNING"})
            # job_name comes from the task prolog (the prolog has no SLURM_JOB_NAME).
            # No cpuset under task/none; no GPUs on this node.
            info = ('stallscope_job_info{job_id="%s",user="%s",partition="debug",'
                    'job_name="held",cpus="",gpus=""} 1' % (job_id, USER))
            self.wait_for_text(textfile, True, info)
            check = subprocess.run(["/usr/bin/promtool", "check", "metrics"],
                                   input=self.read_textfile(textfile), capture_output=True,
                                   text=True, timeout=60)
            self.assertEqual(check.returncode, 0, check.stdout + check.stderr)
            self.assertEqual(check.stdout + check.stderr, "", "promtool found problems")
            self.assertEqual([n for n in os.listdir(textdir) if n != "stallscope.prom"], [],
                             "only the finished file is in the collector's folder")
            subprocess.run(["scancel", job_id], env=s.env, check=True, timeout=30)
            s.wait_for_state(job_id, {"CANCELLED", "COMPLETED", "FAILED"})
            # The epilog removed its line: the series ends.
            self.wait_for_text(textfile, False, 'job_id="%s"' % job_id)
        finally:
            exporter.send_signal(signal.SIGTERM)
            try:
                exporter.wait(timeout=30)
            except subprocess.TimeoutExpired:
                exporter.kill()
                exporter.wait()
        said = exporter.stderr.read().decode()[-2000:]
        exporter.stderr.close()
        self.assertEqual(exporter.returncode, 0, said)
        self.assertFalse(os.path.exists(textfile), "a stopped exporter leaves no stale series")


if __name__ == "__main__":
    e2e.main()

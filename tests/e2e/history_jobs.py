"""End-to-end: what `history` calls one job. Runs that `stallscope run`
recorded of tests/fixtures/steps_job.py (the hook's loader over steps that
sleep: no load on the CPUs, so the step times hold whatever runs beside):

- Ten runs of one script, `--workers 2` for five and `--workers 0` from the
  sixth (the steps now decode their batch: slower): one job, grouped by its
  script, one change point at run 6, and among its causes the argument that
  changed, `argv --workers 2 -> --workers 0`; `diff` of runs 5 and 6 names
  it the same way instead of the whole command line.
- The same command under `run --job alpha` and `run --job beta`: two jobs,
  and `history --job beta` reports that one; a name no job has is a usage
  error that lists the jobs.
- Run files recorded before runs kept the job's identity (committed
  fixtures, tests/fixtures/history_old: two commands that differ in a flag)
  group as they did: by their whole command line, two jobs.

Run: /usr/bin/python3 history_jobs.py PATH_TO_STALLSCOPE
"""
import json
import os
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_common as common  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
JOB = os.path.join(ROOT, "tests", "fixtures", "steps_job.py")
OLD = os.path.join(ROOT, "tests", "fixtures", "history_old")
TMP = None


def setUpModule():
    global TMP
    TMP = tempfile.mkdtemp(prefix="stallscope-e2e-jobs-")


def tearDownModule():
    shutil.rmtree(TMP, ignore_errors=True)


def record(folder, name, args, run_flags=()):
    os.makedirs(folder, exist_ok=True)
    out = os.path.join(folder, name + ".db")
    rc, _, err, _ = common.run(["run", "--interval", "0.2", "--out", out] + list(run_flags) +
                               ["--", "/usr/bin/python3", JOB, "--steps", "25"] + args,
                               timeout=120)
    if rc != 0:
        raise AssertionError("stallscope run exited %d: %s" % (rc, err[-2000:]))
    return out


def history(test, paths, *flags):
    rc, out, err, _ = common.run(["history", "--json"] + list(flags) + list(paths), timeout=120)
    test.assertEqual(rc, 0, err[-2000:])
    return json.loads(out)


class OneScriptChangedFlags(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.folder = os.path.join(TMP, "flags")
        cls.files = [record(cls.folder, "run%02d" % i, ["--workers", "2" if i < 6 else "0"])
                     for i in range(1, 11)]

    def test_one_job_and_the_argument_named(self):
        h = history(self, [self.folder])
        self.assertEqual(len(h["jobs"]), 1, [j["name"] for j in h["jobs"]])
        job = h["jobs"][0]
        self.assertEqual(job["grouped_by"], "script")
        self.assertEqual(job["name"], JOB)
        self.assertEqual(len(job["runs"]), 10)
        self.assertEqual(len(job["change_points"]), 1, job["change_points"])
        change = job["change_points"][0]
        self.assertEqual(change["at"]["index"], 6)
        argv = [c for c in change["diff"]["changes"] if c["what"] == "argv"]
        self.assertEqual(argv, [{"what": "argv", "a": "--workers 2", "b": "--workers 0",
                                 "share_of_slowdown": None}], change["diff"]["changes"])
        self.assertNotIn("command", [c["what"] for c in change["diff"]["changes"]])
        rc, text, err, _ = common.run(["history", self.folder])
        self.assertEqual(rc, 0, err)
        self.assertIn("by its script", text)
        self.assertIn("argv --workers 2 -> --workers 0", text)

    def test_diff_names_the_argument(self):
        rc, out, err, _ = common.run(["diff", "--json", self.files[4], self.files[5]])
        self.assertEqual(rc, 0, err)
        d = json.loads(out)
        argv = [c for c in d["changes"] if c["what"] == "argv"]
        self.assertEqual([(c["a"], c["b"]) for c in argv], [("--workers 2", "--workers 0")])


class NamedJobs(unittest.TestCase):
    def test_two_names_two_jobs(self):
        folder = os.path.join(TMP, "named")
        for name in ("alpha", "beta"):
            for i in range(3):
                record(folder, "%s%d" % (name, i), ["--workers", "2"], ["--job", name])
        h = history(self, [folder])
        self.assertEqual(sorted(j["name"] for j in h["jobs"]), ["alpha", "beta"])
        self.assertEqual({j["grouped_by"] for j in h["jobs"]}, {"name"})
        beta = history(self, [folder], "--job", "beta")
        self.assertEqual([j["name"] for j in beta["jobs"]], ["beta"])
        self.assertEqual(len(beta["jobs"][0]["runs"]), 3)
        rc, _, err, _ = common.run(["history", "--job", "gamma", folder])
        self.assertEqual(rc, 2, err)
        self.assertIn("--job gamma", err)
        self.assertIn("alpha", err)


class OlderFiles(unittest.TestCase):
    def test_files_before_the_identity_group_by_command(self):
        h = history(self, [OLD])
        self.assertEqual(len(h["jobs"]), 2, [j["command"] for j in h["jobs"]])
        for job in h["jobs"]:
            self.assertEqual(job["grouped_by"], "command")
            self.assertEqual(len(job["runs"]), 2)
            self.assertIn("steps_job.py", job["command"])
        self.assertEqual(len({j["command"] for j in h["jobs"]}), 2)


if __name__ == "__main__":
    common.main()

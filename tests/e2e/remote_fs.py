"""`dataset` and `doctor --data` on a real network file system: an sshfs
mount of an sshd in a network namespace, behind a relay that delays each
chunk 1 ms (remote_fs_common.py).

- On the live mount, `dataset` names it remote (fuse.sshfs, its server) and
  counts every file; open and stat each cross the link, so their p50 is at
  least the round trip and above the local copy's.
- With the link cut, a stat on the mount waits in the kernel for good. Both
  commands give the mount up after their deadline, name it and the call
  that did not answer, and exit 0 with the rest of their report.
- The deadline is an idle one: with it lowered to 1 s (a test-only
  environment variable) and a 5 ms link, a one-thread walk that takes several
  seconds in all completes in `dataset` and in `doctor --data`, since every
  entry answered restarts it; the same mount, its link cut, is still given
  up.

Needs root, FUSE, sshfs and openssh-server; skips without them (fails under
CI=true).

Usage: remote_fs.py PATH_TO_STALLSCOPE
"""

import json
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_common as e2e  # noqa: E402
import remote_fs_common  # noqa: E402

FILES = 200
# The commands' deadline is 10 s; this leaves room for a loaded machine and
# the rest of doctor. Not a timing assertion: a hang would run to the
# subprocess timeout below.
SLACK_SECONDS = 30


def write_files(folder, count):
    os.makedirs(os.path.join(folder, "train"))
    for i in range(count):
        with open(os.path.join(folder, "train", "%05d.jpg" % i), "wb") as f:
            f.write(os.urandom(2048))


class RemoteFs(unittest.TestCase):
    def test_live_mount_is_remote_and_pays_the_round_trip(self):
        with remote_fs_common.RemoteFs(self, delay_ms=1) as fs:
            write_files(fs.export, FILES)
            remote = e2e.run_json(self, ["dataset", fs.mount, "--json"], timeout=120)
            local = e2e.run_json(self, ["dataset", fs.export, "--json"], timeout=120)
        census, local_census = remote["dataset"], local["dataset"]
        self.assertEqual(census["files"], FILES)
        self.assertEqual(census["file_system"]["type"], "fuse.sshfs")
        self.assertTrue(census["file_system"]["remote"])
        self.assertIn(fs.export, census["file_system"]["source"])
        self.assertFalse(local_census["file_system"]["remote"])
        round_trip_us = 2 * 1000  # 1 ms each way
        for key in ("open_p50_us", "stat_p50_us"):
            on_mount = census["metadata_latency"][key]
            self.assertGreaterEqual(on_mount, round_trip_us, key)
            self.assertGreater(on_mount, local_census["metadata_latency"][key], key)

    def test_dead_mount_is_given_up_and_named(self):
        with remote_fs_common.RemoteFs(self, delay_ms=1) as fs:
            write_files(fs.export, 20)
            fs.cut_link()
            rc, out, err, seconds = e2e.run(["dataset", fs.mount], timeout=120)
            self.assertEqual(rc, 0, err)
            self.assertLess(seconds, SLACK_SECONDS)
            for text in (out, err):
                self.assertIn("no answer from the fuse.sshfs mount %s" % fs.mount, text)
            self.assertIn("stat of %s" % fs.mount, out)  # the call that did not answer
            self.assertIn("census", out)

            rc, out, err, seconds = e2e.run(["doctor", "--data", fs.mount, "--json",
                                             "--interval", "0.5"], timeout=120)
            self.assertEqual(rc, 0, err)
            self.assertLess(seconds, SLACK_SECONDS)
            report = json.loads(out)
            notes = [n for n in report["notes"]
                     if "no answer from the fuse.sshfs mount %s" % fs.mount in n]
            self.assertEqual(len(notes), 1, report["notes"])
            self.assertIn("stat", notes[0])
            self.assertIn("storage bench are missing", notes[0])
            # The rest of the report is there.
            self.assertIn("memory", [layer["layer"] for layer in report["layers"]])

    def test_idle_deadline_lets_a_slow_live_walk_finish(self):
        files = 200  # one thread, each stat at least one 10 ms round trip: over 2 s
        env = dict(os.environ, STALLSCOPE_TEST_REMOTE_DEADLINE_S="1")
        with remote_fs_common.RemoteFs(self, delay_ms=5) as fs:
            write_files(fs.export, files)
            rc, out, err, seconds = e2e.run(["dataset", fs.mount, "--json", "--threads", "1"],
                                            env=env, timeout=180)
            self.assertEqual(rc, 0, err)
            # Not a timing assertion: the walk cannot be faster than its round
            # trips; this says the test outlasted the deadline, as it means to.
            self.assertGreater(seconds, 1.0)
            self.assertEqual(json.loads(out)["dataset"]["files"], files)

            rc, out, err, _ = e2e.run(["doctor", "--data", fs.mount, "--json", "--quick",
                                       "--interval", "0.5"], env=env, timeout=180)
            self.assertEqual(rc, 0, err)
            report = json.loads(out)
            self.assertEqual(report["data"]["files"], files, report["notes"])
            self.assertFalse([n for n in report["notes"] if "no answer" in n], report["notes"])

            fs.cut_link()
            rc, out, err, seconds = e2e.run(["dataset", fs.mount], env=env, timeout=120)
            self.assertEqual(rc, 0, err)
            self.assertLess(seconds, SLACK_SECONDS)
            self.assertIn("no answer from the fuse.sshfs mount %s" % fs.mount, err)
            self.assertIn("within 1 s to the stat of %s" % fs.mount, err)


if __name__ == "__main__":
    e2e.main()

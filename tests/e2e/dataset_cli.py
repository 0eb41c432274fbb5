"""`stallscope dataset` end to end on real trees in a temp dir on the real
disk: the count and bytes against find and du, the findings on a
small-files tree (12,000 files, dropped from the page cache) and their
absence on a tree of a few large cached files, the JSON shape, a bad path,
an unreadable directory (as nobody when run as root) and a symlink loop.

Run: /usr/bin/python3 dataset_cli.py PATH_TO_STALLSCOPE
"""

import json
import os
import shutil
import subprocess
import tempfile
import unittest

import e2e_common as e2e
from e2e_common import MIB

SMALL_FILES = 12000


def find_count_and_bytes(path):
    """What the classic tools say: find -type f | wc -l and find -printf %s."""
    count = int(subprocess.run("find '%s' -type f | wc -l" % path, shell=True, check=True,
                               capture_output=True).stdout)
    sizes = subprocess.run(["find", path, "-type", "f", "-printf", "%s\n"], check=True,
                           capture_output=True).stdout.split()
    return count, sum(int(s) for s in sizes)


def du_apparent_bytes(path):
    """du -b --apparent-size counts directories too; -S -a lets us keep files only."""
    out = subprocess.run(["du", "-a", "-b", "--apparent-size", path], check=True,
                         capture_output=True).stdout.decode()
    total = 0
    for line in out.splitlines():
        size, name = line.split("\t", 1)
        if os.path.isfile(name) and not os.path.islink(name):
            total += int(size)
    return total


class Trees(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        # /tmp is on the real disk here (not a tmpfs), so DONTNEED can drop pages.
        cls.base = tempfile.mkdtemp(prefix="stallscope-dataset-e2e-", dir="/var/tmp")
        os.chmod(cls.base, 0o755)
        cls.small = os.path.join(cls.base, "small imgs")  # a space: the pack command quotes it
        blob = os.urandom(64 * 1024)
        for d in range(40):
            sub = os.path.join(cls.small, "class%02d" % d)
            os.makedirs(sub)
            for i in range(SMALL_FILES // 40):
                with open(os.path.join(sub, "img%05d.jpg" % i), "wb") as f:
                    f.write(blob[: 1000 + (i * 7919) % 60000])
        os.symlink("..", os.path.join(cls.small, "class00", "loop"))
        os.sync()
        for root, _, files in os.walk(cls.small):
            for name in files:
                e2e.drop_file_from_cache(os.path.join(root, name))
        cls.large = os.path.join(cls.base, "large")
        os.makedirs(os.path.join(cls.large, "shards"))
        for i in range(4):
            with open(os.path.join(cls.large, "shards", "shard-%d.tar" % i), "wb") as f:
                f.write(os.urandom(8 * MIB))
            with open(os.path.join(cls.large, "shards", "shard-%d.tar" % i), "rb") as f:
                f.read()  # cached

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.base, ignore_errors=True)

    def dataset(self, path, *extra):
        report = e2e.run_json(self, ["dataset", path, "--json"] + list(extra))
        return report

    def test_counts_match_find_and_du(self):
        for path in (self.small, self.large):
            report = self.dataset(path)
            count, size = find_count_and_bytes(path)
            self.assertEqual(report["dataset"]["files"], count, path)
            self.assertEqual(report["dataset"]["bytes"], size, path)
            self.assertEqual(report["dataset"]["bytes"], du_apparent_bytes(path), path)
            dirs = int(subprocess.run("find '%s' -mindepth 1 -type d | wc -l" % path, shell=True,
                                      check=True, capture_output=True).stdout)
            self.assertEqual(report["dataset"]["directories"], dirs, path)
            hist = report["dataset"]["size_histogram"]
            self.assertEqual(sum(b["files"] for b in hist), count)
            self.assertEqual(sum(b["bytes"] for b in hist), size)

    def test_small_files_tree_fires(self):
        report = self.dataset(self.small)
        self.check_contract(report)
        census = report["dataset"]
        self.assertEqual(census["files"], SMALL_FILES)
        self.assertEqual(census["small_files"], SMALL_FILES)
        self.assertEqual(census["symlinks_not_followed"], 1)  # the loop, counted, not walked
        self.assertEqual(census["max_depth"], 2)
        small = e2e.finding(report, "io.small_files")
        self.assertIsNotNone(small, report["findings"])
        self.assertEqual(small["evidence"]["small_files"], SMALL_FILES)
        self.assertAlmostEqual(small["evidence"]["small_files_share"], 1.0)
        self.assertIn("stallscope pack '%s' '%s-wds' --format wds" % (self.small, self.small),
                      small["next"])
        cold = e2e.finding(report, "io.cold_cache")
        if census["page_cache"]["resident_fraction"] > 0.5:
            self.skipTest("this file system kept the pages after DONTNEED")
        self.assertIsNotNone(cold, report["findings"])
        self.assertLess(cold["evidence"]["resident_fraction"], 0.2)
        self.assertIsNone(e2e.finding(report, "io.remote_fs"))  # a local disk

    def test_large_files_tree_is_quiet(self):
        report = self.dataset(self.large)
        self.check_contract(report)
        self.assertEqual(report["findings"], [])
        self.assertEqual(report["verdict"]["layer"], "none")
        census = report["dataset"]
        self.assertEqual(census["files"], 4)
        self.assertEqual(census["size_histogram"][3]["files"], 4)  # 1M-16M
        self.assertGreater(census["page_cache"]["resident_fraction"], 0.9)
        self.assertFalse(census["page_cache"]["sampled"])
        self.assertEqual(census["deepest_path"].rsplit("/", 2)[-2], "shards")

    def test_file_system_matches_findmnt(self):
        report = self.dataset(self.large)
        fs = report["dataset"]["file_system"]
        out = e2e.tool(["findmnt", "-n", "-o", "FSTYPE,SOURCE,TARGET", "-T", self.large])
        if out is None:
            self.skipTest("findmnt is not installed")
        fstype, source, target = out.split()[:3]
        self.assertEqual(fs["type"], fstype)
        self.assertEqual(fs["mount_point"], target)
        self.assertFalse(fs["remote"])
        stat = e2e.tool(["stat", "-f", "-c", "%t", self.large])
        self.assertEqual(fs["statfs_magic"], int(stat.strip(), 16))

    def test_text_output(self):
        rc, out, err, _ = e2e.run(["dataset", self.small])
        self.assertEqual(rc, 0, err)
        self.assertIn("files        %d " % SMALL_FILES, out)
        self.assertRegex(out, r"(?m)^\s+64K-1M\s+\d+")
        self.assertIn("io.small_files", out)
        self.assertIn("page cache", out)

    def test_sampled_residency_says_so(self):
        # More files than the residency sample: the census says it sampled.
        report = self.dataset(self.small)
        pc = report["dataset"]["page_cache"]
        self.assertEqual(pc["files_checked"] + pc["files_failed"], 10000)
        self.assertTrue(pc["sampled"])
        self.assertTrue(any("random sample" in n for n in report["notes"]), report["notes"])

    def check_contract(self, report):
        self.assertEqual(report["schema"], "stallscope.report/1")
        self.assertEqual(report["command"], "dataset")
        self.assertEqual([l["layer"] for l in report["layers"]], e2e.LAYERS)
        statuses = {l["layer"]: l["status"] for l in report["layers"]}
        self.assertNotEqual(statuses["io"], "not_checked")
        for f in report["findings"]:
            for key in ("id", "layer", "severity", "summary", "evidence", "next"):
                self.assertIn(key, f)
            self.assertEqual(f["layer"], "io")
            self.assertTrue(f["evidence"])
        for key in ("files", "bytes", "directories", "size_histogram", "max_depth",
                    "deepest_path", "file_system", "page_cache", "metadata_latency",
                    "unreadable"):
            self.assertIn(key, report["dataset"])
        self.assertEqual(len(report["dataset"]["size_histogram"]), 6)


class Errors(unittest.TestCase):
    def test_missing_path_is_named(self):
        rc, out, err, _ = e2e.run(["dataset", "/nonexistent/stallscope-data", "--json"])
        self.assertEqual(rc, 2, err)
        self.assertEqual(out, "")
        self.assertIn("/nonexistent/stallscope-data", err)
        self.assertIn("No such file or directory", err)

    def test_no_path_is_usage(self):
        rc, out, err, _ = e2e.run(["dataset"])
        self.assertEqual(rc, 2)
        self.assertIn("PATH", err)

    def test_bad_threads_flag(self):
        rc, out, err, _ = e2e.run(["dataset", "/tmp", "--threads", "0"])
        self.assertEqual(rc, 2)
        self.assertIn("--threads", err)

    def test_unreadable_directory_is_reported_not_fatal(self):
        base = tempfile.mkdtemp(prefix="stallscope-dataset-locked-", dir="/var/tmp")
        try:
            os.chmod(base, 0o755)
            os.makedirs(os.path.join(base, "ok"))
            os.makedirs(os.path.join(base, "locked"))
            for name in ("ok/a", "ok/b", "locked/c"):
                with open(os.path.join(base, name), "wb") as f:
                    f.write(b"x" * 10)
            os.chmod(os.path.join(base, "locked"), 0)
            preexec = None
            if os.geteuid() == 0:  # root reads anything: walk as nobody
                def preexec():
                    os.setgid(65534)
                    os.setuid(65534)
            rc, out, err, _ = e2e.run(["dataset", base, "--json"], preexec=preexec)
            self.assertEqual(rc, 0, err)
            report = json.loads(out)
            self.assertEqual(report["dataset"]["files"], 2)
            self.assertEqual(report["dataset"]["unreadable"], 1)
            self.assertIn(os.path.join(base, "locked") + ": Permission denied",
                          report["dataset"]["unreadable_examples"][0])
            self.assertTrue(any("could not be read" in n for n in report["notes"]))
        finally:
            os.chmod(os.path.join(base, "locked"), 0o755)
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    e2e.main()

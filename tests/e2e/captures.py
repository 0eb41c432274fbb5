"""Captures end to end: `snapshot --capture` of a fixture host (the GPU
health host with the fake NVML answering, the congestion host's ethtool
files) and of this machine, read back with `doctor --from` and
`snapshot --from`: the same findings (ids, severities, evidence) as
`doctor --root` on the original, the node's host and time in the header,
what only a live node can measure said "not checked: not in the capture",
`--capture F --json` printing exactly what `--from F --json` prints.
The archive holds no file outside the allowed places, no environment
variable but the training ones, no command line; an existing file needs
--force; a truncated archive and a hand-made bad one are errors naming the
file and the entry; a fixture tree tarred by hand (no first sample, a newer
format) reads with notes.

Run: /usr/bin/python3 captures.py PATH_TO_STALLSCOPE
"""

import io
import json
import os
import re
import shutil
import socket
import subprocess
import tarfile
import tempfile
import unittest

import e2e_common as e2e

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "..", "fixtures")
GPU_HOST = os.path.join(FIXTURES, "gpu_health_host")
CONGESTION_HOST = os.path.join(FIXTURES, "congestion_host")

# What a capture may hold (docs/captures.md), as archive names.
ALLOWED = re.compile(r"^(manifest\.json|(before|node)(/(proc|sys|ethtool)(/.*)?|/dev|/dev/kmsg|"
                     r"/\.dockerenv|/run|/run/\.containerenv|"
                     r"/stallscope|/stallscope/nvml\.json|/stallscope/addresses\.json)?)$")
NEVER = {"cmdline", "environ", "mem", "maps", "smaps", "fd", "fdinfo", "auxv", "stack"}


def fake_nvml_env(script):
    library = os.path.join(os.path.dirname(e2e.BINARY), "libstallscope_fake_nvml.so")
    if not os.path.exists(library):
        raise AssertionError("%s missing: build the stallscope_fake_nvml target" % library)
    return dict(os.environ, STALLSCOPE_NVML_LIBRARY=library, FAKE_NVML_SCRIPT=script)


def no_nvml_env():
    env = dict(os.environ)
    env.pop("STALLSCOPE_NVML_LIBRARY", None)
    env.pop("FAKE_NVML_SCRIPT", None)
    return env


def findings(report):
    return [(f["id"], f["severity"], json.dumps(f["evidence"], sort_keys=True))
            for f in report["findings"]]


def capture(path, args, env=None):
    """snapshot --capture PATH ARGS --json: the printed snapshot."""
    rc, out, err, _ = e2e.run(["snapshot", "--json", "--interval", "0.3", "--capture", path] + args,
                              env=env)
    if rc != 0 or "capture written: " + path not in err:
        raise AssertionError("snapshot --capture exited %d: %s" % (rc, err))
    return out


def without_source(nic_stats):
    """The NIC statistics less the file they were read from (the fixture's
    path, or the capture's entry)."""
    return [{k: v for k, v in n.items() if k != "source"} for n in nic_stats]


def check_names(test, path):
    with tarfile.open(path) as tar:
        names = tar.getnames()
        test.assertEqual(names[0], "manifest.json")
        for name in names:
            test.assertRegex(name, ALLOWED)
            parts = name.split("/")
            bad = NEVER.intersection(parts)
            if name.endswith("/proc/self/environ"):
                bad.discard("environ")
            test.assertFalse(bad, name)
        return tar.getmembers(), json.load(tar.extractfile("manifest.json"))


class FixtureCapture(unittest.TestCase):
    """The GPU health host, NVML's answers from the fake library."""

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="capture-e2e-")
        cls.path = os.path.join(cls.dir, "gpu-node.tar.gz")
        env = fake_nvml_env(os.path.join(GPU_HOST, "fake_nvml_script"))
        cls.printed = capture(cls.path, ["--root", GPU_HOST], env=env)
        rc, out, err, _ = e2e.run(["doctor", "--json", "--quick", "--root", GPU_HOST], env=env)
        assert rc == 0, err
        cls.on_node = json.loads(out)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir)

    # Read back without the fake NVML: the GPUs' facts travel in the capture.
    def test_doctor_from_gives_the_findings_of_the_node(self):
        report = e2e.run_json(self, ["doctor", "--json", "--from", self.path], env=no_nvml_env())
        e2e.check_report(self, report)
        self.assertEqual(findings(report), findings(self.on_node))
        ids = {f[0] for f in findings(report)}
        for rule_id in ("memory.gpu_ecc", "memory.gpu_remap", "io.pcie_degraded", "code.gpu_xid",
                        "network.link_degraded", "code.gpu_persistence_off"):
            self.assertIn(rule_id, ids)
        self.assertEqual(report["verdict"], self.on_node["verdict"])
        self.assertEqual(report["host"], "gpu-node-07")
        self.assertTrue(any("not checked: not in the capture" in n for n in report["notes"]))

    def test_snapshot_capture_prints_what_from_prints(self):
        rc, out, err, _ = e2e.run(["snapshot", "--json", "--from", self.path], env=no_nvml_env())
        self.assertEqual(rc, 0, err)
        self.assertEqual(out, self.printed)
        snap = json.loads(out)
        self.assertEqual(len(snap["gpus"]["devices"]), 3)
        self.assertNotIn(tempfile.gettempdir() + "/stallscope-capture-", out)

    def test_text_header_names_the_node_and_its_time(self):
        _, manifest = check_names(self, self.path)
        rc, out, err, _ = e2e.run(["doctor", "--from", self.path], env=no_nvml_env())
        self.assertEqual(rc, 0, err)
        first = out.splitlines()[0]
        self.assertIn("gpu-node-07", first)
        self.assertIn(manifest["time_utc"], first)

    def test_html_page_names_the_node_not_a_temporary_directory(self):
        page = os.path.join(self.dir, "node.html")
        rc, out, err, _ = e2e.run(["doctor", "--from", self.path, "--html", page],
                                  env=no_nvml_env())
        self.assertEqual(rc, 0, err)
        html = open(page, encoding="utf-8").read()
        self.assertIn("gpu-node-07", html)
        self.assertIn("memory.gpu_ecc", html)
        self.assertNotIn("stallscope-capture-", html)

    def test_manifest(self):
        members, manifest = check_names(self, self.path)
        self.assertEqual(manifest["format"], "stallscope.capture/1")
        self.assertEqual(manifest["host"], "gpu-node-07")
        self.assertRegex(manifest["time_utc"], r"^\d{4}-\d\d-\d\dT")
        self.assertTrue(manifest["stallscope_version"])
        self.assertGreater(manifest["interval_seconds"], 0.2)
        self.assertTrue(any("NVML" in c for c in manifest["captured"]), manifest["captured"])
        self.assertTrue(manifest["redacted"])
        names = {m.name for m in members}
        self.assertIn("node/stallscope/nvml.json", names)
        self.assertIn("node/dev/kmsg", names)
        self.assertIn("before/proc/stat", names)

    def test_existing_file_needs_force(self):
        before = os.path.getmtime(self.path), os.path.getsize(self.path)
        rc, out, err, _ = e2e.run(["snapshot", "--capture", self.path, "--root", GPU_HOST])
        self.assertEqual(rc, 2, err)
        self.assertIn(self.path, err)
        self.assertIn("--force", err)
        self.assertEqual((os.path.getmtime(self.path), os.path.getsize(self.path)), before)

    def test_truncated_archive_names_the_file_and_the_entry(self):
        data = open(self.path, "rb").read()
        cut = os.path.join(self.dir, "cut.tar.gz")
        with open(cut, "wb") as f:
            f.write(data[:len(data) * 2 // 3])
        for command in (["doctor", "--from", cut], ["snapshot", "--from", cut]):
            rc, out, err, _ = e2e.run(command)
            self.assertNotEqual(rc, 0)
            self.assertIn(cut, err)
            self.assertRegex(err, r"entry [\w./:-]+")
            self.assertEqual(out, "")

    def test_repacked_by_gnu_tar_with_its_dot_entry_reads(self):
        # A user unpacks the capture, removes a file they will not share, and
        # packs the folder again with GNU tar, which writes "./" first.
        tree = os.path.join(self.dir, "repack")
        os.makedirs(tree)
        subprocess.run(["tar", "-C", tree, "-xzf", self.path], check=True)
        os.remove(os.path.join(tree, "node", "dev", "kmsg"))  # the kernel log, not shared
        repacked = os.path.join(self.dir, "repacked.tar.gz")
        subprocess.run(["tar", "-C", tree, "-czf", repacked, "."], check=True)
        names = subprocess.run(["tar", "-tzf", repacked], capture_output=True, text=True,
                               check=True).stdout.split()
        self.assertEqual(names[0], "./")  # what GNU tar writes, which was refused
        report = e2e.run_json(self, ["doctor", "--json", "--from", repacked], env=no_nvml_env())
        e2e.check_report(self, report)
        # The node's findings but those the kernel log gave (Xid errors, port
        # errors): the rest alike, evidence and all.
        got, on_node = findings(report), findings(self.on_node)
        self.assertTrue(got)
        self.assertTrue(set(got) < set(on_node), got)
        self.assertNotIn("code.gpu_xid", {f[0] for f in got})
        for rule_id in ("io.pcie_degraded", "network.link_degraded", "memory.gpu_ecc"):
            self.assertEqual([f for f in got if f[0] == rule_id],
                             [f for f in on_node if f[0] == rule_id], rule_id)
        rc, out, err, _ = e2e.run(["snapshot", "--json", "--from", repacked], env=no_nvml_env())
        self.assertEqual(rc, 0, err)
        # A bare "/" or ".." entry stays refused.
        bad = os.path.join(self.dir, "dotdot.tar.gz")
        with tarfile.open(bad, "w:gz") as tar:
            add_bytes(tar, "manifest.json", b'{"format": "stallscope.capture/1"}')
            up = tarfile.TarInfo("..")
            up.type = tarfile.DIRTYPE
            tar.addfile(up)
        rc, out, err, _ = e2e.run(["doctor", "--from", bad])
        self.assertEqual(rc, 1, err)
        self.assertIn("entry ..", err)

    def test_hand_made_link_out_of_the_tree_is_refused(self):
        bad = os.path.join(self.dir, "bad.tar.gz")
        with tarfile.open(bad, "w:gz") as tar:
            add_bytes(tar, "manifest.json", b'{"format": "stallscope.capture/1"}')
            link = tarfile.TarInfo("node/proc/meminfo")
            link.type = tarfile.SYMTYPE
            link.linkname = "../../../../etc/shadow"
            tar.addfile(link)
        rc, out, err, _ = e2e.run(["doctor", "--from", bad])
        self.assertEqual(rc, 1, err)  # could not run: the input is bad, not the usage
        self.assertIn(bad + ": entry node/proc/meminfo", err)
        self.assertIn("leaves its tree", err)


def add_bytes(tar, name, data):
    info = tarfile.TarInfo(name)
    info.size = len(data)
    tar.addfile(info, io.BytesIO(data))


class HandTarredFixture(unittest.TestCase):
    """A fixture tree tarred by hand as node/: no first sample, no NVML file,
    a newer format: reads, with notes for each."""

    def test_reads_with_notes(self):
        d = tempfile.mkdtemp(prefix="capture-e2e-")
        try:
            path = os.path.join(d, "by-hand.tar.gz")
            with tarfile.open(path, "w:gz") as tar:
                add_bytes(tar, "manifest.json", json.dumps({
                    "format": "stallscope.capture/7", "stallscope_version": "7.0.0",
                    "host": "gpu-node-07",
                    "node_notes": ["pressure: /proc/pressure/cpu: Operation not permitted",
                                   "disks: /proc/diskstats: No such file or directory"]}).encode())
                tar.add(GPU_HOST, arcname="node")
            on_node = e2e.run_json(self, ["doctor", "--json", "--quick", "--root", GPU_HOST],
                                   env=no_nvml_env())
            # This machine's NVML (the fake one here) is never asked about
            # the node's GPUs: the capture holds no NVML answers.
            fake = fake_nvml_env(os.path.join(GPU_HOST, "fake_nvml_script"))
            report = e2e.run_json(self, ["doctor", "--json", "--from", path], env=fake)
            self.assertEqual(findings(report), findings(on_node))
            notes = " | ".join(report["notes"])
            self.assertIn("the capture holds no NVML answers", notes)
            self.assertIn("stallscope 7.0.0", notes)
            self.assertIn("stallscope.capture/7", notes)
            self.assertIn("no first sample", notes)
            # A probe that failed on the node says so; one the read-back notes
            # itself (disks) is not said twice.
            self.assertIn("on the node: pressure: /proc/pressure/cpu: Operation not permitted",
                          report["notes"])
            self.assertNotIn("on the node: disks", notes)
        finally:
            shutil.rmtree(d)


class HandTarredTwoSamples(unittest.TestCase):
    """before/ and node/ by hand, no sampling clock in the manifest: the
    rates are taken over its interval, and a note says so."""

    def test_rates_over_the_stated_interval(self):
        d = tempfile.mkdtemp(prefix="capture-e2e-")
        try:
            path = os.path.join(d, "two.tar.gz")
            stat = open(os.path.join(GPU_HOST, "proc", "stat")).read()
            with tarfile.open(path, "w:gz") as tar:
                add_bytes(tar, "manifest.json", json.dumps({
                    "format": "stallscope.capture/1", "interval_seconds": 2.0}).encode())
                tar.add(GPU_HOST, arcname="node")
                tar.add(GPU_HOST, arcname="before",
                        filter=lambda t: None if t.name == "before/proc/stat" else t)
                # 200 ticks more of user time on the first CPU line.
                fields = stat.splitlines()[0].split()
                fields[1] = str(int(fields[1]) - 200)
                add_bytes(tar, "before/proc/stat",
                          ("\n".join([" ".join(fields)] + stat.splitlines()[1:]) + "\n").encode())
            snap = e2e.run_json(self, ["snapshot", "--json", "--from", path], env=no_nvml_env())
            self.assertAlmostEqual(snap["interval_seconds"], 2.0)
            self.assertIn("capture: the manifest has no sampling clock; rates are taken over 2.0 s",
                          snap["notes"])
        finally:
            shutil.rmtree(d)


class CongestionCapture(unittest.TestCase):
    """ethtool files under the root travel as they are."""

    def test_nic_statistics_and_findings_travel(self):
        d = tempfile.mkdtemp(prefix="capture-e2e-")
        try:
            path = os.path.join(d, "c.tar.gz")
            env = no_nvml_env()
            printed = json.loads(capture(path, ["--root", CONGESTION_HOST], env=env))
            direct = e2e.run_json(self, ["snapshot", "--json", "--interval", "0.1",
                                         "--root", CONGESTION_HOST], env=env)
            self.assertTrue(direct["nic_stats"])
            self.assertEqual(without_source(printed["nic_stats"]),
                             without_source(direct["nic_stats"]))
            self.assertIn(path + ":node/ethtool/", printed["nic_stats"][0]["source"])
            on_node = e2e.run_json(self, ["doctor", "--json", "--quick", "--root",
                                          CONGESTION_HOST], env=env)
            report = e2e.run_json(self, ["doctor", "--json", "--from", path], env=env)
            self.assertEqual(findings(report), findings(on_node))
            check_names(self, path)
        finally:
            shutil.rmtree(d)


class LiveCapture(unittest.TestCase):
    """This machine captured and read back on it."""

    def test_live_capture_reads_back(self):
        d = tempfile.mkdtemp(prefix="capture-e2e-")
        try:
            path = os.path.join(d, "live.tar.gz")
            env = dict(no_nvml_env(), NCCL_DEBUG="INFO", STALLSCOPE_TEST_SECRET="hunter2-secret")
            printed = capture(path, [], env=env)
            rc, out, err, _ = e2e.run(["snapshot", "--json", "--from", path])
            self.assertEqual(rc, 0, err)
            self.assertEqual(out, printed)
            snap = json.loads(out)
            self.assertEqual(snap["host"], socket.gethostname())
            self.assertGreater(snap["memory"]["total_bytes"], 0)
            self.assertGreater(snap["processes"]["count"], 1)
            self.assertEqual(snap["environment"].get("NCCL_DEBUG"), "INFO")
            self.assertNotIn("STALLSCOPE_TEST_SECRET", snap["environment"])
            live = e2e.run_json(self, ["snapshot", "--json", "--interval", "0.1"])
            self.assertEqual(snap["container"], live["container"])
            self.assertEqual(sorted((i["name"], json.dumps(i.get("addresses"))) for i in
                                    snap["interfaces"]),
                             sorted((i["name"], json.dumps(i.get("addresses"))) for i in
                                    live["interfaces"]))
            report = e2e.run_json(self, ["doctor", "--json", "--from", path])
            e2e.check_report(self, report)
            self.assertEqual(report["host"], socket.gethostname())
            members, _ = check_names(self, path)
            names = {m.name for m in members}
            # Both ends of every rate: CPU, memory activity, disks, NICs.
            for counters in ("proc/stat", "proc/vmstat", "proc/diskstats"):
                self.assertIn("before/" + counters, names)
                self.assertIn("node/" + counters, names)
            # /proc/net is a link to self/net: kept as the link and the file.
            for tree in ("before/", "node/"):
                self.assertTrue({tree + "proc/net/dev", tree + "proc/self/net/dev"} & names)
            self.assertIn("node/stallscope/addresses.json", names)
            self.assertIn("node/stallscope/nvml.json", names)  # "no GPU", and why
            with tarfile.open(path) as tar:
                for m in members:
                    if m.isfile():
                        data = tar.extractfile(m).read()
                        self.assertNotIn(b"hunter2-secret", data, m.name)
                        self.assertNotIn(b"STALLSCOPE_TEST_SECRET", data, m.name)
        finally:
            shutil.rmtree(d)


if __name__ == "__main__":
    e2e.main()

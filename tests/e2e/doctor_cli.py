"""`stallscope doctor` end to end: the report contract on this host, the rule
catalog, bad usage, and two real memory problems made on purpose (root
only): a memory-limited cgroup nearly full, and a cgroup that swaps.

Run: /usr/bin/python3 doctor_cli.py PATH_TO_STALLSCOPE
"""

import json
import os
import re
import subprocess
import sys
import tempfile
import time
import unittest

import e2e_common as e2e
from e2e_common import MIB

RULE_IDS = ["memory.available_low", "memory.swap_active", "memory.pinned_excess"]


class HostReport(unittest.TestCase):
    def test_doctor_json_contract(self):
        rc, out, err, seconds = e2e.run(["doctor", "--json", "--interval", "0.5"])
        self.assertEqual(rc, 0, err)
        report = json.loads(out)
        e2e.check_report(self, report)
        self.assertEqual(report["command"], "doctor")
        self.assertEqual(report["host"], os.uname().nodename)
        # --interval is the sampling window.
        self.assertGreaterEqual(report["window_seconds"], 0.45)
        self.assertLess(report["window_seconds"], 2.0)
        self.assertGreaterEqual(seconds, 0.45)

    def test_doctor_text(self):
        rc, out, err, _ = e2e.run(["doctor", "--interval", "0.2"])
        self.assertEqual(rc, 0, err)
        for layer in e2e.LAYERS:
            self.assertRegex(out, r"(?m)^%s\s" % layer)
        self.assertRegex(out, r"(?m)^verdict: ")


class Rules(unittest.TestCase):
    def test_rules_json(self):
        rc, out, err, seconds = e2e.run(["doctor", "--rules", "--json"])
        self.assertEqual(rc, 0, err)
        self.assertLess(seconds, 0.9, "--rules must print the catalog without sampling")
        catalog = json.loads(out)
        self.assertEqual(catalog["schema"], "stallscope.rules/1")
        rules = catalog["rules"]
        self.assertIsInstance(rules, list)
        ids = [r["id"] for r in rules]
        self.assertEqual(len(ids), len(set(ids)), "duplicate rule ids: %s" % ids)
        for rule_id in RULE_IDS:
            self.assertIn(rule_id, ids)
        for r in rules:
            self.assertRegex(r["id"], r"^(memory|io|network|distributed|code)\.[a-z0-9_]+$")
            self.assertEqual(r["layer"], r["id"].split(".")[0], r["id"])
            for key in ("checks", "threshold", "reasoning"):
                self.assertTrue(r.get(key, "").strip(), "%s has no %s" % (r["id"], key))
            self.assertNotIn("source", r)
            self.assertTrue(r["reference"] is None or "https://" in r["reference"], r["id"])
        available = next(r for r in rules if r["id"] == "memory.available_low")
        self.assertIn("20%", available["threshold"])
        self.assertIn("10%", available["threshold"])

    def test_rules_text_matches_json(self):
        rc, out, err, _ = e2e.run(["doctor", "--rules"])
        self.assertEqual(rc, 0, err)
        rules = json.loads(e2e.run(["doctor", "--rules", "--json"])[1])["rules"]
        blocks = {}
        preface, _, body = out.partition("\n\n" + rules[0]["id"])
        for term in ("layer", "evidence", "the hook", "next step"):
            self.assertIn(term, preface)
        for block in re.split(r"\n\s*\n", (rules[0]["id"] + body).strip()):
            blocks[block.split()[0]] = block
        self.assertEqual(sorted(blocks), sorted(r["id"] for r in rules))
        for r in rules:
            flat = " ".join(blocks[r["id"]].split())
            self.assertIn(" ".join(r["threshold"].split()), flat, r["id"])
            self.assertIn(" ".join(r["reasoning"].split()), flat, r["id"])
            self.assertNotIn("fires: fires", flat, r["id"])
            self.assertNotIn("prometheus: none", flat.lower(), r["id"])


class FailOn(unittest.TestCase):
    """--fail-on LEVEL: a pre-flight gate, exit 4 when a finding reaches LEVEL."""

    FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures")

    def doctor(self, host, *args):
        return e2e.run(["doctor", "--quick", "--json", "--root",
                        os.path.join(self.FIXTURES, host)] + list(args))

    def test_gate_on_a_host_with_a_warning(self):
        rc, out, err, _ = self.doctor("swap_host")
        self.assertEqual(rc, 0, err)
        severities = {f["severity"] for f in json.loads(out)["findings"]}
        self.assertIn("warning", severities)
        self.assertNotIn("critical", severities)
        rc, out, err, _ = self.doctor("swap_host", "--fail-on", "warning")
        self.assertEqual(rc, 4, err)
        self.assertIn("memory.available_low", out, "the report is printed before the gate")
        rc, _, err, _ = self.doctor("swap_host", "--fail-on", "critical")
        self.assertEqual(rc, 0, err)

    def test_gate_on_a_healthy_host(self):
        rc, out, err, _ = self.doctor("live_debian12", "--fail-on", "warning")
        self.assertEqual(json.loads(out)["findings"], [])
        self.assertEqual(rc, 0, err)

    def test_bad_level_is_bad_usage(self):
        for args in (["--fail-on", "info"], ["--fail-on", "bogus"], ["--rules", "--fail-on", "warning"]):
            rc, out, err, _ = e2e.run(["doctor"] + args)
            self.assertEqual(rc, 2, (args, err))
            self.assertIn("--fail-on", err)
            self.assertEqual(out, "")


class BadUsage(unittest.TestCase):
    def usage_error(self, args, *names):
        rc, out, err, seconds = e2e.run(args)
        self.assertEqual(rc, 2, "%s: exit %d (stdout %r, stderr %r)" % (args, rc, out, err))
        self.assertEqual(out, "", "%s printed on stdout" % args)
        for name in names:
            self.assertIn(name, err, "%s: stderr does not name %r: %r" % (args, name, err))
        self.assertLess(seconds, 0.9, "%s: a usage error must come before any sampling" % args)
        return err

    def test_unknown_flag(self):
        self.usage_error(["doctor", "--bogus"], "--bogus")

    def test_bad_intervals(self):
        for value in ("-1", "0", "3601"):
            self.usage_error(["doctor", "--interval", value], "--interval", value)
        self.usage_error(["doctor", "--interval", "abc"], "--interval", "abc")
        self.usage_error(["snapshot", "--interval", "-1"], "--interval", "-1")

    def test_unknown_subcommand(self):
        self.usage_error(["frobnicate"], "frobnicate")

    def test_no_subcommand(self):
        err = self.usage_error([])
        self.assertIn("doctor", err)

    def test_help_lists_commands(self):
        rc, out, err, _ = e2e.run(["--help"])
        self.assertEqual(rc, 0, err)
        self.assertRegex(out, r"(?m)^\s+doctor\s")
        self.assertRegex(out, r"(?m)^\s+snapshot\s")


class NotUtf8(unittest.TestCase):
    """Bytes a host hands over that are not UTF-8 (an environment value, a
    command line) come out of --json as U+FFFD, not as an abort with no
    output (nlohmann's strict dump threw, and the command died with 134)."""

    def test_snapshot_and_run_json(self):
        env = dict(os.environb)
        env[b"NCCL_SOCKET_IFNAME"] = b"eth\xfe"
        proc = subprocess.run([e2e.BINARY, "snapshot", "--json"], capture_output=True, env=env,
                              timeout=60)
        self.assertEqual(proc.returncode, 0, proc.stderr[-2000:])
        snap = json.loads(proc.stdout.decode("utf-8"))
        self.assertIn("eth\ufffd", json.dumps(snap, ensure_ascii=False))
        with tempfile.TemporaryDirectory() as tmp:
            proc = subprocess.run([e2e.BINARY.encode(), b"run", b"--interval", b"0.1", b"--json",
                                   b"--out", os.path.join(tmp, "r.db").encode(), b"--",
                                   b"/bin/echo", b"\xff"], capture_output=True, timeout=60)
            self.assertEqual(proc.returncode, 0, proc.stderr[-2000:])
            report = json.loads(proc.stdout.decode("utf-8"))
            self.assertEqual(report["run"]["command"], "/bin/echo \ufffd")


class Quick(unittest.TestCase):
    def test_quick_contract_and_why_not_checked(self):
        report = e2e.run_json(self, ["doctor", "--quick", "--json"])
        e2e.check_report(self, report)
        # --quick samples a 0.25 s window, not the default 1 s (a loaded
        # host stretches it; its speed is measured by bench/doctor_quick.sh,
        # not timed here).
        self.assertLess(report["window_seconds"], 0.9)
        layers = {l["layer"]: l for l in report["layers"]}
        for layer in ("memory", "io", "network"):
            self.assertNotEqual(layers[layer]["status"], "not_checked", layer)
        for layer in ("distributed", "code"):
            self.assertEqual(layers[layer]["status"], "not_checked", layer)
            self.assertIn("--run", layers[layer]["why"], layer)
        self.assertNotIn("bench", report, "--quick ran the storage bench")
        # The suspects-and-quick-checks table, every layer in it.
        self.assertEqual(sorted({r["layer"] for r in report["triage"]}), sorted(e2e.LAYERS))
        facts = [f["fact"] for f in report["facts"] if f["layer"] == "memory"]
        self.assertTrue(facts and "available" in facts[0], report["facts"])

    def test_text_order_and_table(self):
        rc, out, err, _ = e2e.run(["doctor", "--quick"])
        self.assertEqual(rc, 0, err)
        positions = [re.search(r"(?m)^%s\s" % layer, out).start() for layer in e2e.LAYERS]
        self.assertEqual(positions, sorted(positions), "layers out of triage order:\n" + out)
        self.assertRegex(out, r"(?m)^distributed\s+not checked: ")
        self.assertIn("suspects and quick checks", out)
        self.assertIn("iostat -x 1", out)
        self.assertLess(out.index("verdict: "), out.index("suspects and quick checks"))


class DataFolder(unittest.TestCase):
    """--data on a small real folder on the build's disk: census and bench."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="stallscope-doctor-data-",
                                    dir=os.path.dirname(e2e.BINARY))
        self.addCleanup(lambda: subprocess.run(["rm", "-rf", self.dir]))
        for i in range(120):
            sub = os.path.join(self.dir, "class_%d" % (i % 3))
            os.makedirs(sub, exist_ok=True)
            with open(os.path.join(sub, "img_%04d.bin" % i), "wb") as f:
                f.write(os.urandom(3000 + i))

    def test_census_and_bench(self):
        rc, out, err, seconds = e2e.run(["doctor", "--json", "--data", self.dir], timeout=90)
        self.assertEqual(rc, 0, err)
        report = json.loads(out)
        e2e.check_report(self, report)
        self.assertEqual(report["data"]["files"], 120)
        self.assertEqual(report["data"]["bytes"], sum(3000 + i for i in range(120)))
        bench = report.get("bench")
        self.assertIsNotNone(bench, "no bench: %s" % report["notes"])
        self.assertGreater(bench["sequential_bytes_per_s"], 0)
        self.assertGreater(bench["random_iops"], 0)
        self.assertLess(seconds, 30, "the full doctor must stay under 30 s")
        # The bench cleaned up after itself; the data is untouched.
        self.assertEqual(sorted(os.listdir(self.dir)), ["class_0", "class_1", "class_2"])
        self.assertTrue(any("dataset " + self.dir in f["fact"] for f in report["facts"]))

    def test_quick_census_without_bench(self):
        report = e2e.run_json(self, ["doctor", "--quick", "--json", "--data", self.dir])
        self.assertEqual(report["data"]["files"], 120)
        self.assertNotIn("bench", report)
        self.assertTrue(any("--quick" in n for n in report["notes"]), report["notes"])

    def test_missing_data_is_bad_usage(self):
        missing = os.path.join(self.dir, "nope")
        rc, out, err, _ = e2e.run(["doctor", "--data", missing])
        self.assertEqual(rc, 2)
        self.assertEqual(out, "")
        self.assertIn(missing, err)


class Baseline(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="stallscope-baseline-")
        self.addCleanup(lambda: subprocess.run(["rm", "-rf", self.dir]))
        self.path = os.path.join(self.dir, "host.json")

    def save(self):
        rc, out, err, _ = e2e.run(["doctor", "--quick", "--save-baseline", self.path])
        self.assertEqual(rc, 0, err)
        self.assertIn("baseline saved: " + self.path, out)
        with open(self.path) as f:
            return json.load(f)

    def test_save_then_unchanged_host_has_no_drift(self):
        saved = self.save()
        self.assertEqual(saved["schema"], "stallscope.baseline/1")
        self.assertEqual(saved["host"], os.uname().nodename)
        metrics = {m["name"]: m for m in saved["metrics"]}
        self.assertEqual(metrics["memory.total_bytes"]["value"], e2e.meminfo()["MemTotal"])
        report = e2e.run_json(self, ["doctor", "--quick", "--json", "--baseline", self.path])
        e2e.check_report(self, report)
        drift = [f for f in report["findings"] if f["id"].endswith(".baseline_drift")]
        self.assertEqual(drift, [])
        self.assertEqual(report["baseline"]["file"], self.path)

    def test_doctored_baseline_shows_drift(self):
        saved = self.save()
        total = next(m for m in saved["metrics"] if m["name"] == "memory.total_bytes")
        total["value"] *= 2          # the host "had" twice the memory: now 50% below
        saved["metrics"].append({"name": "network.ethX9.speed_mbps", "layer": "network",
                                 "value": 100000, "unit": "Mb/s"})  # a NIC since gone
        with open(self.path, "w") as f:
            json.dump(saved, f)
        report = e2e.run_json(self, ["doctor", "--quick", "--json", "--baseline", self.path])
        e2e.check_report(self, report)
        memory = e2e.finding(report, "memory.baseline_drift")
        self.assertIsNotNone(memory, json.dumps(report["findings"], indent=1))
        self.assertEqual(memory["severity"], "critical")
        ev = memory["evidence"]
        self.assertEqual(ev["metric"], "memory.total_bytes")
        self.assertEqual(ev["baseline"], total["value"])
        self.assertEqual(ev["now"], e2e.meminfo()["MemTotal"])
        self.assertAlmostEqual(ev["drop_fraction"], 0.5, places=6)
        self.assertEqual(report["verdict"]["finding"], "memory.baseline_drift")
        gone = e2e.finding(report, "network.baseline_drift")
        self.assertEqual(gone["evidence"]["now"], "absent")
        self.assertIn("network.ethX9.speed_mbps", gone["summary"])

    def test_drift_share_flag(self):
        saved = self.save()
        total = next(m for m in saved["metrics"] if m["name"] == "memory.total_bytes")
        total["value"] = int(total["value"] * 1.05)   # 4.8% below now
        with open(self.path, "w") as f:
            json.dump(saved, f)
        args = ["doctor", "--quick", "--json", "--baseline", self.path]
        self.assertIsNone(e2e.finding(e2e.run_json(self, args), "memory.baseline_drift"))
        f = e2e.finding(e2e.run_json(self, args + ["--drift", "2"]), "memory.baseline_drift")
        self.assertIsNotNone(f)
        self.assertEqual(f["severity"], "warning")
        self.assertEqual(f["evidence"]["threshold_fraction"], 0.02)

    def bad(self, content, *names):
        if content is not None:
            with open(self.path, "w") as f:
                f.write(content)
        rc, out, err, seconds = e2e.run(["doctor", "--quick", "--baseline", self.path])
        self.assertEqual(rc, 2, err)
        self.assertEqual(out, "")
        self.assertIn(self.path, err)
        for n in names:
            self.assertIn(n, err)
        self.assertLess(seconds, 0.9, "a bad baseline must be refused before any sampling")

    def test_bad_baseline_files(self):
        self.bad(None, "No such file")
        self.bad("{not json", "not JSON")
        self.bad('{"schema": "stallscope.report/1", "metrics": []}', "stallscope.report/1")
        self.bad('{"schema": "stallscope.baseline/1", "metrics": [{"name": "m", '
                 '"layer": "memory"}]}', "metrics[0]", "value")

    def test_save_refuses_to_overwrite_other_files(self):
        with open(self.path, "w") as f:
            f.write("my notes\n")
        rc, out, err, _ = e2e.run(["doctor", "--quick", "--save-baseline", self.path])
        self.assertEqual(rc, 2, err)
        self.assertIn(self.path, err)
        self.assertIn("not a stallscope baseline", err)
        with open(self.path) as f:
            self.assertEqual(f.read(), "my notes\n")
        # A baseline it may replace.
        os.unlink(self.path)
        self.save()
        self.save()
        self.assertEqual(os.listdir(self.dir), ["host.json"], "temporary files left behind")


class RunAndHtml(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="stallscope-doctor-run-")
        self.addCleanup(lambda: subprocess.run(["rm", "-rf", self.dir]))

    def test_run_folds_in_and_html(self):
        db = os.path.join(self.dir, "run.db")
        rc, out, err, _ = e2e.run(["run", "--interval", "0.1", "--out", db, "--",
                                   "sleep", "0.6"])
        self.assertEqual(rc, 0, err)
        page = os.path.join(self.dir, "doctor.html")
        report = e2e.run_json(self, ["doctor", "--quick", "--json", "--run", db,
                                     "--html", page])
        e2e.check_report(self, report)
        self.assertEqual(report["run_file"], db)
        with open(page) as f:
            text = f.read()
        self.assertIn("<svg", text)
        self.assertIn(db, text)
        # The page exists now: doctor refuses to overwrite it without --force.
        rc, out, err, _ = e2e.run(["doctor", "--quick", "--html", page])
        self.assertEqual(rc, 2)
        self.assertIn(page, err)
        self.assertIn("--force", err)
        rc, out, err, _ = e2e.run(["doctor", "--quick", "--html", page, "--force"])
        self.assertEqual(rc, 0, err)

    def test_bad_run_file_is_named(self):
        bogus = os.path.join(self.dir, "bogus.db")
        with open(bogus, "w") as f:
            f.write("not sqlite at all, just text\n" * 10)
        rc, out, err, _ = e2e.run(["doctor", "--quick", "--run", bogus])
        self.assertEqual(rc, 2)
        self.assertEqual(out, "")
        self.assertIn(bogus, err)


# A child that joins the cgroup before it allocates, then fills memory up to
# a target usage of the cgroup (or a size), says "ready", and sleeps. It dies
# by itself after a while, should the test die without killing it.
FILL = r"""
import os, sys, time
procs, usage_file, base, target_usage, cap = sys.argv[1], sys.argv[2], *map(int, sys.argv[3:6])
with open(procs, "w") as f:
    f.write(str(os.getpid()))
def usage():
    with open(usage_file) as f:
        return int(f.read())
blocks = [bytearray(base)]
for i in range(0, base, 4096):
    blocks[0][i] = 1
total = base
while usage() < target_usage and total < cap:
    b = bytearray(1 << 20)
    for i in range(0, len(b), 4096):
        b[i] = 1
    blocks.append(b)
    total += len(b)
print("ready", total, usage(), flush=True)
time.sleep(90)
"""

# A child that joins the cgroup, allocates SIZE and keeps touching every page
# so that they go out to swap and come back, for at most SECONDS.
CHURN = r"""
import os, sys, time
procs, size, seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
with open(procs, "w") as f:
    f.write(str(os.getpid()))
b = bytearray(size)
print("ready", flush=True)
end = time.monotonic() + seconds
n = 0
while time.monotonic() < end:
    n = (n + 1) & 255
    for i in range(0, size, 4096):
        b[i] = n
"""


def in_cgroup_command(cgroup, args):
    return ["sh", "-c", 'echo $$ > "$0" && exec "$@"', cgroup.procs_file, e2e.BINARY] + args


class ContainerLimit(unittest.TestCase):
    """A real memory-limited cgroup, 256 MiB, with ~235 MiB in use."""

    LIMIT = 256 * MIB

    def setUp(self):
        try:
            self.cgroup = e2e.MemoryCgroup("stallscope-e2e-%d" % os.getpid(), self.LIMIT)
        except e2e.CgroupUnavailable as e:
            self.skipTest("no memory cgroup for the test: %s" % e)
        self.addCleanup(self.cgroup.remove)

    def test_available_low_in_limited_cgroup(self):
        # 220 MiB, then topped up until the cgroup uses 94% of its limit:
        # under 10% stays available, so the finding must be critical.
        fill = subprocess.Popen(
            [sys.executable, "-c", FILL, self.cgroup.procs_file, self.cgroup.usage_file,
             str(220 * MIB), str(int(self.LIMIT * 0.94)), str(246 * MIB)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.addCleanup(e2e.stop, fill)
        self.addCleanup(fill.stdout.close)
        self.addCleanup(fill.stderr.close)
        line = e2e.wait_for_line(fill, 30)
        self.assertIsNotNone(line, "the filler did not get ready (exit %s): %s" %
                             (fill.poll(), fill.stderr.read().decode() if fill.poll() is not None
                              else "still running"))
        self.assertIn(fill.pid, self.cgroup.pids(), "the filler is not in the cgroup")

        proc = subprocess.run(in_cgroup_command(self.cgroup, ["doctor", "--json",
                                                              "--interval", "0.5"]),
                              capture_output=True, timeout=60)
        self.assertEqual(proc.returncode, 0, proc.stderr.decode())
        report = json.loads(proc.stdout)
        e2e.check_report(self, report)
        f = e2e.finding(report, "memory.available_low")
        self.assertIsNotNone(f, "no memory.available_low inside a %d MiB cgroup with %s "
                                "(filler: %s): %s" % (self.LIMIT // MIB, "94% used", line,
                                                      json.dumps(report, indent=1)))
        ev = f["evidence"]
        self.assertIs(ev["cgroup_limited"], True, ev)
        self.assertEqual(ev["total_bytes"], self.LIMIT, ev)
        self.assertLess(ev["available_bytes"], self.LIMIT * 0.10, ev)
        self.assertAlmostEqual(ev["available_fraction"], ev["available_bytes"] / self.LIMIT,
                               places=6)
        self.assertEqual(f["severity"], "critical", f)
        self.assertEqual(report["verdict"]["layer"], "memory")
        self.assertEqual(report["verdict"]["finding"], "memory.available_low")

        # The snapshot inside the same cgroup shows that cgroup and its limit.
        proc = subprocess.run(in_cgroup_command(self.cgroup, ["snapshot", "--json",
                                                              "--interval", "0.1"]),
                              capture_output=True, timeout=60)
        self.assertEqual(proc.returncode, 0, proc.stderr.decode())
        cg = json.loads(proc.stdout)["memory"]["cgroup"]
        self.assertIsNotNone(cg, "the snapshot sees no cgroup")
        self.assertEqual(cg["version"], self.cgroup.version)
        self.assertEqual(cg["path"], self.cgroup.relative_path())
        self.assertEqual(cg["limit_bytes"], self.LIMIT)
        self.assertGreater(cg["usage_bytes"], 200 * MIB)
        self.assertLess(cg["effective_available_bytes"], self.LIMIT * 0.10)

        # Outside that cgroup, on a host with memory to spare, nothing is low.
        mem = e2e.meminfo()
        if mem["MemAvailable"] < 0.3 * mem["MemTotal"]:
            sys.stderr.write("note: the host itself is short of memory; "
                             "the run outside the cgroup is not checked\n")
            return
        outside = e2e.run_json(self, ["doctor", "--json", "--interval", "0.5"])
        e2e.check_report(self, outside)
        self.assertIsNone(e2e.finding(outside, "memory.available_low"),
                          "memory.available_low outside the limited cgroup: %s" %
                          json.dumps(outside, indent=1))


class Swapping(unittest.TestCase):
    """A real swapping case: a swap file, and a 128 MiB cgroup whose process
    keeps touching 300 MiB."""

    LIMIT = 128 * MIB
    SWAP = 512 * MIB

    def setUp(self):
        if os.geteuid() != 0:
            self.skipTest("needs root to swapon and to make a cgroup (euid %d)" % os.geteuid())
        for program in ("mkswap", "swapon", "swapoff"):
            if not any(os.access(os.path.join(d, program), os.X_OK)
                       for d in os.environ.get("PATH", "").split(":") + ["/sbin", "/usr/sbin"]):
                self.skipTest("%s is not installed" % program)
        # The swap file goes on the local disk the build lives on.
        directory = tempfile.mkdtemp(prefix="stallscope-e2e-swap-",
                                     dir=os.path.dirname(e2e.BINARY))
        self.addCleanup(os.rmdir, directory)
        self.swapfile = os.path.join(directory, "swapfile")
        self.addCleanup(lambda: os.path.exists(self.swapfile) and os.unlink(self.swapfile))
        subprocess.run(["dd", "if=/dev/zero", "of=" + self.swapfile, "bs=1M",
                        "count=%d" % (self.SWAP // MIB), "status=none"], check=True)
        os.chmod(self.swapfile, 0o600)
        subprocess.run(["mkswap", "-q", self.swapfile], check=True, capture_output=True)
        on = subprocess.run(["swapon", self.swapfile], capture_output=True)
        if on.returncode != 0:
            self.skipTest("swapon refused a swap file here: %s" % on.stderr.decode().strip())
        self.addCleanup(self.swapoff)
        try:
            self.cgroup = e2e.MemoryCgroup("stallscope-e2e-swap-%d" % os.getpid(), self.LIMIT)
        except e2e.CgroupUnavailable as e:
            self.skipTest("no memory cgroup for the test: %s" % e)
        self.addCleanup(self.cgroup.remove)  # runs before swapoff: cleanups are LIFO
        if self.cgroup.version == 1:
            try:
                with open(self.cgroup.file("memory.swappiness"), "w") as f:
                    f.write("60")
            except OSError as e:
                self.skipTest("cannot allow swap in the cgroup: %s" % e)

    def swapoff(self):
        off = subprocess.run(["swapoff", self.swapfile], capture_output=True)
        if off.returncode != 0:
            raise AssertionError("swapoff %s: %s" % (self.swapfile, off.stderr.decode()))

    def test_swap_active(self):
        churn = subprocess.Popen(
            [sys.executable, "-c", CHURN, self.cgroup.procs_file, str(300 * MIB), "45"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.addCleanup(e2e.stop, churn)
        self.addCleanup(churn.stdout.close)
        self.addCleanup(churn.stderr.close)
        self.assertEqual(e2e.wait_for_line(churn, 20), "ready",
                         "the swapping process did not start: %s" %
                         (churn.stderr.read().decode() if churn.poll() is not None else ""))
        # Wait until pages go out to swap.
        first = e2e.vmstat_counter("pswpout")
        deadline = time.monotonic() + 25
        while e2e.vmstat_counter("pswpout") < first + 256:
            if churn.poll() is not None:
                self.fail("the swapping process died (exit %d): %s" %
                          (churn.returncode, churn.stderr.read().decode()))
            if time.monotonic() > deadline:
                self.skipTest("the kernel did not swap within 25 s (pswpout %d -> %d)" %
                              (first, e2e.vmstat_counter("pswpout")))
            time.sleep(0.2)

        report = e2e.run_json(self, ["doctor", "--json", "--interval", "2"])
        self.assertIsNone(churn.poll(), "the swapping process ended during the sample")
        e2e.check_report(self, report)
        f = e2e.finding(report, "memory.swap_active")
        self.assertIsNotNone(f, "no memory.swap_active while swapping: %s" %
                             json.dumps(report, indent=1))
        self.assertIn(f["severity"], ("warning", "critical"), f)
        ev = f["evidence"]
        self.assertGreater(ev["swap_out_pages_per_s"] + ev["swap_in_pages_per_s"], 0, ev)
        self.assertGreaterEqual(ev["swap_total_bytes"], self.SWAP - MIB, ev)
        self.assertGreater(ev["swap_used_bytes"], 0, ev)
        self.assertLessEqual(ev["swap_used_bytes"], ev["swap_total_bytes"], ev)
        self.assertGreater(ev["window_seconds"], 1.5, ev)
        if f["severity"] == "critical":
            self.assertEqual(report["verdict"]["layer"], "memory")


if __name__ == "__main__":
    e2e.main()

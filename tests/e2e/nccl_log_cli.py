#!/usr/bin/env python3
"""End-to-end: `stallscope nccl-log` on the fixture logs, from a file and from
stdin, its JSON contract, its text table, the host RDMA ports under --root,
and its errors (missing file, a directory, no FILE); and the same logs
joined to `doctor --nccl-log` and to `run` (NCCL_DEBUG_FILE, --nccl-log).

usage: nccl_log_cli.py PATH_TO_STALLSCOPE
"""

import json
import os
import random
import sqlite3
import subprocess
import tempfile
import unittest

import e2e_common as e2e

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures",
                        "nccl_logs")


def fixture(name):
    return os.path.join(FIXTURES, name)


def ids(report):
    return [f["id"] for f in report["findings"]]


class NcclLogCli(unittest.TestCase):
    @staticmethod
    def rank_contradictions(nccl):
        """A log a job could have printed runs each rank on one host: the ranks
        of the Init lines and those a proxy's WARN names (the proxy's own, and
        the asking rank, which runs on the proxy's host)."""
        hosts = {}
        for r in nccl["ranks"]:
            if r["rank"] >= 0:
                hosts.setdefault(r["rank"], set()).add(r["host"])
        for f in nccl.get("proxy_failures", []):
            for rank in (f["proxy_of_rank"], f["from_rank"]):
                if rank >= 0:
                    hosts.setdefault(rank, set()).add(f["host"])
        return ["rank %d on hosts %s" % (rank, sorted(h)) for rank, h in sorted(hosts.items())
                if len(h) > 1]

    def check_contract(self, report):
        self.assertEqual(report["schema"], "stallscope.report/1")
        self.assertEqual(report["command"], "nccl-log")
        statuses = {l["layer"]: l["status"] for l in report["layers"]}
        self.assertEqual([l["layer"] for l in report["layers"]], e2e.LAYERS)
        self.assertEqual(statuses["memory"], "not_checked")
        self.assertEqual(statuses["io"], "not_checked")
        for f in report["findings"]:
            for key in ("id", "layer", "severity", "summary", "evidence", "next"):
                self.assertIn(key, f)
            self.assertTrue(f["evidence"], f["id"])
            self.assertTrue(f["id"].startswith(f["layer"] + "."), f["id"])
            # code: NCCL refused how it was called (code.nccl_usage_error)
            self.assertIn(f["layer"], ("network", "distributed", "code"))
        order = [e2e.LAYERS.index(f["layer"]) for f in report["findings"]]
        self.assertEqual(order, sorted(order))
        critical = [f for f in report["findings"] if f["severity"] == "critical"]
        if critical:
            # A critical finding, the cause before its consequences (not the
            # first by layer): CauseFixtures checks which.
            self.assertIn(report["verdict"]["finding"], [c["id"] for c in critical])
        else:
            self.assertEqual(report["verdict"]["layer"], "none")
        self.assertIn("nccl", report)

    def test_file_json(self):
        report = e2e.run_json(self, ["nccl-log", fixture("v2_14_multinode_docker_bridge.log"),
                                     "--json"])
        self.check_contract(report)
        self.assertEqual(report["verdict"]["layer"], "network")
        found = ids(report)
        for expected in ("network.wrong_interface", "network.connect_failed",
                         "distributed.init_incomplete"):
            self.assertIn(expected, found)
        connect = e2e.finding(report, "network.connect_failed")
        self.assertIn("172.17.0.2<41527> (Connection timed out, 2x)", connect["evidence"]["peers"])
        nccl = report["nccl"]
        self.assertEqual(nccl["hosts"], 2)
        self.assertEqual(len(nccl["ranks"]), 4)
        self.assertEqual(nccl["warn_lines"], 4)
        self.assertEqual(nccl["errors"]["unhandled_system_error"], 1)
        by_pid = {p["pid"]: p for p in nccl["processes"]}
        self.assertEqual(by_pid[61]["version"], "2.14.3+cuda11.7")
        self.assertEqual(by_pid[58]["bootstrap"], [{"name": "eth0", "address": "172.17.0.3"}])

    def test_stdin_equals_file(self):
        path = fixture("v2_21_version_mismatch_init_hang.log")
        from_file = e2e.run_json(self, ["nccl-log", path, "--json"])
        with open(path, "rb") as f:
            rc, out, err, _ = e2e.run(["nccl-log", "-", "--json"], input_bytes=f.read())
        self.assertEqual(rc, 0, err)
        from_stdin = json.loads(out)
        self.check_contract(from_stdin)
        self.assertEqual(from_stdin["nccl"]["source"], "stdin")
        self.assertEqual(ids(from_stdin), ids(from_file))
        self.assertEqual(from_stdin["nccl"]["ranks"], from_file["nccl"]["ranks"])
        self.assertIn("distributed.nccl_version_mismatch", ids(from_stdin))

    def test_text_table_healthy_ib(self):
        rc, out, err, _ = e2e.run(["nccl-log", fixture("v2_18_multinode_ib_healthy.log")])
        self.assertEqual(rc, 0, err)
        header = [l for l in out.splitlines() if l.startswith("host:pid")]
        self.assertEqual(len(header), 1, out)
        row = [l for l in out.splitlines() if l.startswith("gpu-a:4101 ")]
        self.assertEqual(len(row), 1, out)
        for text in ("2.18.3+cuda12.2", "0/4", "IB", "P2P 2, NET/IB 2 (GDR 2)", "done",
                     "ens1f0np0:192.168.50.11", "mlx5_0:1/IB"):
            self.assertIn(text, row[0])
        self.assertIn("rings (as rank 0 printed them): 00/02: 0 1 2 3", out)
        self.assertIn("verdict: none", out)
        # IB devices, sockets and the OOB interface in columns of their own.
        self.assertEqual(header[0].split()[5:9], ["bootstrap", "IB", "devices", "sockets"], header)

    def test_text_columns_say_why_there_is_no_ib_and_group_alike_ranks(self):
        rc, out, err, _ = e2e.run(["nccl-log", os.path.join(REAL, "v2_26_ib_disabled_no_subnet_mixed.log")])
        self.assertEqual(rc, 0, err)
        row = [l for l in out.splitlines() if l.startswith("node-07:31337 ")]
        self.assertEqual(len(row), 1, out)
        self.assertIn(" disabled ", row[0])
        self.assertIn(" (empty) ", row[0])
        rc, out, err, _ = e2e.run(["nccl-log", os.path.join(REAL,
                                                              "v2_7_pdsh_deepspeed_socket_refused.log")])
        self.assertIn(" none found ", [l for l in out.splitlines() if l.startswith("gpu-node-a:2001 ")][0])
        # 64 alike ranks: a few rows, each naming how many ranks it stands for.
        lines = []
        for h in range(8):
            for d in range(8):
                p = "node%d:%d:%d [%d] NCCL INFO " % (h, 100 + h * 8 + d, 900, d)
                lines.append(p + "Bootstrap : Using eth0:10.0.0.%d<0>" % (h + 1))
                lines.append(p + "comm 0x1 rank %d nranks 64 cudaDev %d busId 1000 - Init COMPLETE"
                             % (h * 8 + d, d))
        rc, out, err, _ = e2e.run(["nccl-log", "-"], input_bytes=("\n".join(lines) + "\n").encode())
        self.assertEqual(rc, 0, err)
        grouped = [l for l in out.splitlines() if " ranks: node" in l]
        self.assertEqual(len(grouped), 8, out)  # one per host: the bootstrap address differs
        self.assertTrue(all(l.startswith("8 ranks: node") for l in grouped), grouped)

    def test_host_rdma_ports_under_root(self):
        log = fixture("v2_18_socket_while_ib_found.log")
        report = e2e.run_json(self, ["nccl-log", log, "--json", "--root",
                                     fixture("ib_node_gpu_a")])
        rdma = e2e.finding(report, "network.rdma_unused")
        self.assertIsNotNone(rdma, report["findings"])
        self.assertEqual(rdma["severity"], "warning")
        self.assertEqual(rdma["evidence"]["host_active_ports"],
                         "mlx5_0:1 InfiniBand 200 Gb/sec (4X HDR)")  # mlx5_1 is DOWN
        self.assertEqual(report["host"], "gpu-a")
        # A host that is not in the log: its ports are not compared, a note says so.
        other = e2e.run_json(self, ["nccl-log", fixture("v2_10_single_node_healthy.log"),
                                    "--json", "--root", fixture("ib_node_gpu_a")])
        self.assertEqual(other["findings"], [])
        self.assertTrue(any("not in the log" in n for n in other["notes"]), other["notes"])

    def test_generated_log_through_stdin(self):
        # 64 ranks on 8 hosts, 30 communicators, non-NCCL lines between.
        rng = random.Random(7)
        lines = []
        for comm in range(30):
            for h in range(8):
                for d in range(8):
                    p = "node%d:%d:%d [%d] NCCL INFO " % (h, 100 + h * 8 + d, 900 + comm, d)
                    rank = h * 8 + d
                    lines.append(p + "Channel 00/0 : %d[%d] -> %d[%d] [send] via NET/IB/0/GDRDMA"
                                 % (rank, d, (rank + 8) % 64, d))
                    lines.append(p + "comm 0x%x rank %d nranks 64 cudaDev %d busId 1000 - Init "
                                 "COMPLETE" % (comm, rank, d))
                    lines.append("step %d loss %.3f" % (comm, rng.random()))
        rng.shuffle(lines)
        data = ("\n".join(lines) + "\n").encode()
        rc, out, err, seconds = e2e.run(["nccl-log", "-", "--json"], input_bytes=data)
        self.assertEqual(rc, 0, err)
        nccl = json.loads(out)["nccl"]
        self.assertEqual(len(nccl["ranks"]), 64)
        self.assertEqual(nccl["hosts"], 8)
        self.assertTrue(all(r["init_completed"] == 30 for r in nccl["ranks"]))
        self.assertTrue(all(r["transports"]["net_ib"] == 30 for r in nccl["ranks"]))
        self.assertEqual(nccl["nccl_lines"], 64 * 30 * 2)
        self.assertEqual(nccl["bytes"], len(data))

    def test_missing_file_names_it(self):
        missing = os.path.join(tempfile.gettempdir(), "no-such-nccl-%d.log" % os.getpid())
        rc, out, err, _ = e2e.run(["nccl-log", missing])
        self.assertEqual(rc, 1)
        self.assertEqual(out, "")
        self.assertIn(missing, err)
        self.assertIn("No such file or directory", err)

    def test_directory_is_an_error(self):
        rc, out, err, _ = e2e.run(["nccl-log", FIXTURES, "--json"])
        self.assertEqual(rc, 1)
        self.assertEqual(out, "")
        self.assertIn(FIXTURES, err)
        self.assertIn("Is a directory", err)

    def test_no_file_is_usage_error(self):
        rc, out, err, _ = e2e.run(["nccl-log"])
        self.assertEqual(rc, 2)
        self.assertIn("FILE", err)


# The job `run` starts in the NCCL_DEBUG_FILE test: it writes a log as NCCL
# would, to NCCL_DEBUG_FILE with %h and %p expanded (host cut at the first
# '.', its own pid).
WRITE_NCCL_LOG = """
import os, shutil, socket, sys
host = socket.gethostname().split('.')[0]
path = os.environ['NCCL_DEBUG_FILE'].replace('%h', host).replace('%p', str(os.getpid()))
shutil.copyfile(sys.argv[1], path)
print(path)
"""


class NcclLogInDoctorAndRun(unittest.TestCase):
    """doctor --nccl-log, run with NCCL_DEBUG_FILE / --nccl-log, cuda_runtime."""

    def test_doctor_nccl_log_sockets_while_log_shows_ib(self):
        # The log's own NET/IB lines show RDMA devices, yet every channel is
        # "via NET/Socket": network.rdma_unused holds whatever this host has.
        log = fixture("v2_18_socket_while_ib_found.log")
        report = e2e.run_json(self, ["doctor", "--quick", "--json", "--nccl-log", log])
        self.assertEqual(report["command"], "doctor")
        rdma = e2e.finding(report, "network.rdma_unused")
        self.assertIsNotNone(rdma, [f["id"] for f in report["findings"]])
        self.assertEqual(rdma["layer"], "network")
        ev = rdma["evidence"]
        self.assertEqual(ev["nccl_log"], log)
        self.assertEqual(ev["nccl_log_line"], log + ":41 (first 'via NET/Socket')")
        self.assertEqual(ev["nccl_ib_line"], log + ":17 (first 'NET/IB : Using')")
        self.assertEqual(ev["rdma_devices_in_log"], "mlx5_0:1/IB, mlx5_1:1/IB")
        self.assertIn("gpu-b:3878", ev["processes_on_sockets"])
        with open(log) as f:
            self.assertIn("via NET/Socket", f.read().splitlines()[40])
        network = [l for l in report["layers"] if l["layer"] == "network"][0]
        self.assertNotEqual(network["status"], "ok")
        facts = [x["fact"] for x in report["facts"] if x["layer"] == "network"]
        self.assertTrue(any(log in x and "CUDA runtime 12.2" in x for x in facts), facts)
        # The loopback log: the id nccl-log gives it, in doctor's network layer.
        lo = fixture("v2_28_multinode_lo_refused.log")
        rc, out, err, _ = e2e.run(["doctor", "--quick", "--nccl-log", lo, log])
        self.assertEqual(rc, 0, err)
        self.assertIn("network.wrong_interface", out)
        self.assertIn("nccl_log=" + lo, out)
        self.assertIn("network.rdma_unused", out)

    def test_doctor_missing_nccl_log_is_usage_error(self):
        missing = os.path.join(tempfile.gettempdir(), "no-such-nccl-%d.log" % os.getpid())
        rc, out, err, _ = e2e.run(["doctor", "--quick", "--json", "--nccl-log",
                                   fixture("v2_18_socket_while_ib_found.log"), missing])
        self.assertEqual(rc, 2)
        self.assertEqual(out, "")
        self.assertIn("--nccl-log " + missing, err)
        self.assertIn("No such file or directory", err)

    def test_run_reads_the_jobs_nccl_debug_file(self):
        with tempfile.TemporaryDirectory() as tmp:
            pattern = os.path.join(tmp, "nccl.%h.%p.log")
            host = os.uname().nodename.split(".")[0]
            # An older run's file matches the pattern, written just now (the
            # same clock tick as the run's start, as like as not): it must not
            # be read, because the job leaves it as it was.
            stale = os.path.join(tmp, "nccl.%s.1.log" % host)
            with open(stale, "w") as f, open(fixture("v2_28_multinode_lo_refused.log")) as lo:
                f.write(lo.read())
            env = dict(os.environ, NCCL_DEBUG_FILE=pattern)
            command = ["python3", "-c", WRITE_NCCL_LOG, fixture("v2_18_socket_while_ib_found.log")]
            report = e2e.run_json(self, ["run", "--interval", "0.1", "--json", "--out",
                                         os.path.join(tmp, "r.db"), "--"] + command, env=env)
            written = [p for p in os.listdir(tmp) if p.startswith("nccl.") and p != os.path.basename(stale)]
            self.assertEqual(len(written), 1, os.listdir(tmp))
            written = os.path.join(tmp, written[0])
            rdma = e2e.finding(report, "network.rdma_unused")
            self.assertIsNotNone(rdma, [f["id"] for f in report["findings"]])
            self.assertEqual(rdma["evidence"]["nccl_log"], written)
            self.assertEqual(rdma["evidence"]["nccl_log_line"],
                             written + ":41 (first 'via NET/Socket')")
            self.assertIsNone(e2e.finding(report, "network.wrong_interface"))  # not the stale one
            self.assertEqual([l["file"] for l in report["nccl_logs"]], [written])
            # The run file keeps them: `report` later prints the same finding and note.
            later = e2e.run_json(self, ["report", os.path.join(tmp, "r.db"), "--json"])
            self.assertEqual(e2e.finding(later, "network.rdma_unused"), rdma)
            self.assertEqual(later["verdict"], report["verdict"])
            self.assertIn([n for n in report["notes"] if n.startswith("nccl log ")][0],
                          later["notes"])
            # A pattern without %p: the job overwrites an older run's file at
            # the same path (same inode, other content): it is the job's.
            fixed = os.path.join(tmp, "fixed.%h.log")
            fixed_file = fixed.replace("%h", host)
            with open(fixed_file, "w") as f, open(fixture("v2_28_multinode_lo_refused.log")) as lo:
                f.write(lo.read())
            inode = os.stat(fixed_file).st_ino
            over = e2e.run_json(self, ["run", "--interval", "0.1", "--json", "--out",
                                       os.path.join(tmp, "r-fixed.db"), "--"] + command,
                                env=dict(env, NCCL_DEBUG_FILE=fixed))
            self.assertEqual(os.stat(fixed_file).st_ino, inode, "the job wrote another file")
            self.assertEqual([l["file"] for l in over["nccl_logs"]], [fixed_file])
            self.assertIsNotNone(e2e.finding(over, "network.rdma_unused"))
            self.assertIsNone(e2e.finding(over, "network.wrong_interface"))  # the old content
            # The same stale file, left alone by a job that writes no log: not read.
            with open(fixed_file, "w") as f, open(fixture("v2_28_multinode_lo_refused.log")) as lo:
                f.write(lo.read())
            quiet = e2e.run_json(self, ["run", "--interval", "0.1", "--json", "--out",
                                        os.path.join(tmp, "r-quiet.db"), "--", "true"],
                                 env=dict(env, NCCL_DEBUG_FILE=fixed))
            self.assertNotIn("nccl_logs", quiet)
            self.assertIsNone(e2e.finding(quiet, "network.wrong_interface"))
            self.assertTrue(any("NCCL_DEBUG_FILE=" + fixed in n and "wrote no such file" in n
                                for n in quiet["notes"]), quiet["notes"])
            # Without NCCL_DEBUG_FILE nothing is read; --nccl-log names a file instead.
            env.pop("NCCL_DEBUG_FILE")
            own = os.path.join(tmp, "own.log")
            command = ["sh", "-c", "cat %s > %s" % (fixture("v2_28_multinode_lo_refused.log"), own)]
            plain = e2e.run_json(self, ["run", "--interval", "0.1", "--json", "--out",
                                        os.path.join(tmp, "r2.db"), "--"] + command, env=env)
            self.assertNotIn("nccl_logs", plain)
            self.assertIsNone(e2e.finding(plain, "network.rdma_unused"))
            self.assertIsNone(e2e.finding(plain, "network.wrong_interface"))
            named = e2e.run_json(self, ["run", "--interval", "0.1", "--json", "--out",
                                        os.path.join(tmp, "r3.db"), "--nccl-log", own, "--"]
                                 + command, env=env)
            wrong = e2e.finding(named, "network.wrong_interface")
            self.assertIsNotNone(wrong, [f["id"] for f in named["findings"]])
            self.assertEqual(wrong["evidence"]["nccl_log"], own)
            self.assertEqual(wrong["evidence"]["interface"], "lo:127.0.0.1")
            r3 = os.path.join(tmp, "r3.db")
            # doctor with the run and the same log: the finding once, not twice.
            rc, out, err, _ = e2e.run(["doctor", "--quick", "--json", "--run", r3,
                                       "--nccl-log", own])
            both = json.loads(out)
            self.assertEqual([f["id"] for f in both["findings"]].count("network.wrong_interface"),
                             1, err)
            # The log is gone by the time of the report: the run file remembers.
            os.unlink(own)
            later = e2e.run_json(self, ["report", r3, "--json"])
            self.assertEqual(e2e.finding(later, "network.wrong_interface"), wrong)
            rc, text, err, _ = e2e.run(["doctor", "--quick", "--run", r3])
            self.assertIn("network.wrong_interface", text + err)
            # A stored row edited into nonsense costs that row, not the report.
            with sqlite3.connect(r3) as db:
                db.execute("UPDATE findings SET severity = 'dire'")
            broken = e2e.run_json(self, ["report", r3, "--json"])
            self.assertIsNone(e2e.finding(broken, "network.wrong_interface"))
            self.assertTrue(any(n.startswith("stored findings: " + r3 + ": findings row 1")
                                for n in broken["notes"]), broken["notes"])

    def test_cuda_runtime_beside_the_driver(self):
        log = fixture("v2_21_version_mismatch_init_hang.log")
        report = e2e.run_json(self, ["nccl-log", log, "--json"])
        runtimes = {p["pid"]: (p["cuda_runtime"], p["cuda_driver"])
                    for p in report["nccl"]["processes"]}
        self.assertEqual(runtimes[9120], ("12.4", 12040))
        self.assertEqual(runtimes[5531], ("12.2", 12020))
        rc, out, err, _ = e2e.run(["nccl-log", log])
        self.assertEqual(rc, 0, err)
        self.assertIn("CUDA: runtime 12.4 (NCCL's +cuda suffix), driver 12.4 on 2 process(es)", out)


REAL = os.path.join(FIXTURES, "real")


def interface_names(listed):
    return [i["name"] + (":" + i["address"] if i["address"] else "") for i in listed]


def init_state(rank):
    if rank["init_completed"] > 0:
        return "complete"
    return "started" if rank["init_started"] > 0 else "none"


def compare_facts(expected, nccl):
    """Every fact a careful engineer reads off the log (the .expect.json
    beside it), against what `nccl-log --json` read: the list of misses, and
    how many facts were checked."""
    misses = []
    checked = 0

    def check(what, want, got):
        nonlocal checked
        checked += 1
        if want != got:
            misses.append("%s: expected %r, got %r" % (what, want, got))

    for key in ("hosts", "attributed_lines", "other_lines", "warn_lines", "connect_retries",
                "folded_repeats", "rings", "unattributed_versions"):
        if key in expected:
            check(key, expected[key], nccl[key])
    for key, got_key in (("system_errors", "unhandled_system_error"),
                         ("remote_errors", "remote_error")):
        if key in expected:
            check(key, expected[key], nccl["errors"][got_key])
    processes = {"%s:%d" % (p["host"], p["pid"]): p for p in nccl["processes"]}
    check("processes", sorted(expected["processes"]), sorted(processes))
    for name, want in expected["processes"].items():
        got = processes.get(name)
        if got is None:
            continue
        for key, value in want.items():
            value_got = got[key]
            if key in ("bootstrap", "net_socket", "ib_devices", "ib_oob"):
                value_got = interface_names(value_got)
            check("%s %s" % (name, key), value, value_got)
    ranks = {("%s:%d" % (r["host"], r["pid"]), r["cuda_dev"]): r for r in nccl["ranks"]}
    check("ranks", sorted((r["process"], r["cuda_dev"]) for r in expected["ranks"]), sorted(ranks))
    for want in expected["ranks"]:
        got = ranks.get((want["process"], want["cuda_dev"]))
        if got is None:
            continue
        where = "%s [%d]" % (want["process"], want["cuda_dev"])
        for key in ("rank", "nranks"):
            if key in want:
                check("%s %s" % (where, key), want[key], got[key])
        check("%s init" % where, want["init"], init_state(got))
    for name, want in expected.get("transports", {}).items():
        got = [r for (process, _), r in ranks.items() if process == name]
        for key, value in want.items():
            check("%s transports.%s" % (name, key), value,
                  sum(r["transports"][key] for r in got))
    if "peer_failures" in expected:
        got = {f["peer"]: f for f in nccl["peer_failures"]}
        check("peer_failures", sorted(f["peer"] for f in expected["peer_failures"]), sorted(got))
        for want in expected["peer_failures"]:
            if "reason" in want and want["peer"] in got:
                check("peer %s reason" % want["peer"], want["reason"], got[want["peer"]]["reason"])
    if "connect_retry" in expected:
        for key, value in expected["connect_retry"].items():
            check("connect_retry.%s" % key, value, nccl["connect_retry"][key])
    if "nccl_tests_ranks" in expected:
        got = [{k: r[k] for k in ("rank", "host", "pid", "device")} for r in nccl["nccl_tests_ranks"]]
        check("nccl_tests_ranks", expected["nccl_tests_ranks"], got)
    if "pytorch_groups" in expected:
        got = [{k: g[k] for k in ("process", "global_rank", "size", "nccl_version")}
               for g in nccl["pytorch_groups"]]
        check("pytorch_groups", expected["pytorch_groups"], got)
    if "libfabric_empty_providers" in expected:
        check("libfabric_empty_providers", expected["libfabric_empty_providers"],
              nccl["libfabric"]["empty_providers"])
    return misses, checked


class RealJobLogs(unittest.TestCase):
    """Logs in the forms real jobs leave them (launcher prefixes, timestamps,
    consoles, NCCL 2.3 to 2.28, other programs' lines): every fact in each
    .expect.json, and no process or rank that is not in the log."""

    def test_every_fact_of_every_real_log(self):
        names = sorted(n[:-4] for n in os.listdir(REAL) if n.endswith(".log"))
        self.assertGreaterEqual(len(names), 8)
        all_misses = []
        total = 0
        for name in names:
            with open(os.path.join(REAL, name + ".expect.json")) as f:
                expected = json.load(f)
            report = e2e.run_json(self, ["nccl-log", os.path.join(REAL, name + ".log"), "--json"])
            misses, checked = compare_facts(expected, report["nccl"])
            total += checked
            all_misses += ["%s: %s" % (name, m) for m in misses]
        print("\nreal logs: %d of %d facts right" % (total - len(all_misses), total))
        self.assertEqual(all_misses, [])

    def test_the_same_log_behind_every_prefix_reads_the_same(self):
        # One fixture's NCCL lines under each launcher's prefix, stripped of
        # the one it had: the same processes, ranks and interfaces.
        plain = fixture("v2_18_multinode_ib_healthy.log")
        base = e2e.run_json(self, ["nccl-log", plain, "--json"])["nccl"]
        with open(plain) as f:
            lines = f.read().splitlines()
        fronts = ["[1,%d]<stdout>:", "%d: ", "[rank%d]:", "[default%d]:",
                  "2024-03-04 05:06:07 [1,%d]<stdout>:", "05:06:07 node%d: ", "nodeZ: ", "(pid=%d) ",
                  "\u2502 2024-03-04T05:06:07.%03dZ ", "  | 2025-05-16T16:39:51.%03d-07:00 | "]
        for front in fronts:
            # The launcher tags each process's lines with its own index; a
            # line NCCL printed bare is the previous process's, as in the log.
            index = {}
            current = 0
            with tempfile.NamedTemporaryFile("w", suffix=".log", delete=False) as out:
                for line in lines:
                    first = line.split(" ", 1)[0]
                    if first.count(":") == 2:
                        current = index.setdefault(first.rsplit(":", 1)[0], len(index))
                    out.write((front % current if "%" in front else front) + line + "\n")
                path = out.name
            try:
                got = e2e.run_json(self, ["nccl-log", path, "--json"])["nccl"]
            finally:
                os.unlink(path)
            for key in ("processes", "ranks", "rings", "hosts", "warn_lines", "info_lines"):
                self.assertEqual(got[key], base[key], "%s under %r" % (key, front))

    def test_a_log_a_terminal_wrapped_reads_the_same(self):
        # Every terminal width: each long line cut into rows of exactly that
        # width (three rows and more at 80), the first cut line the first of
        # its width, rows that open with a space or a "word: ".
        plain = fixture("v2_18_multinode_ib_healthy.log")
        base = e2e.run_json(self, ["nccl-log", plain, "--json"])["nccl"]
        with open(plain) as f:
            lines = f.read().splitlines()
        for width in (80, 100, 120, 132):
            rows = []
            for line in lines:
                while len(line) > width:
                    rows.append(line[:width])
                    line = line[width:]
                rows.append(line)
            self.assertGreater(len(rows), len(lines))
            with tempfile.NamedTemporaryFile("w", suffix=".log", delete=False) as out:
                out.write("\n".join(rows) + "\n")
                path = out.name
            try:
                got = e2e.run_json(self, ["nccl-log", path, "--json"])["nccl"]
            finally:
                os.unlink(path)
            self.assertEqual(got["joined_lines"], len(rows) - len(lines), width)
            for key in ("processes", "ranks", "rings", "hosts", "warn_lines", "info_lines",
                        "other_lines", "attributed_lines"):
                self.assertEqual(got[key], base[key], "%s at %d columns" % (key, width))

    def test_a_binary_file_is_refused_naming_the_offset(self):
        with tempfile.NamedTemporaryFile("wb", suffix=".log", delete=False) as out:
            out.write(b"gpu:1:1 [0] NCCL INFO Using network IB\n" + b"\x1f\x8b\x08\x00\x00")
            path = out.name
        try:
            rc, out_text, err, _ = e2e.run(["nccl-log", path, "--json"])
        finally:
            os.unlink(path)
        self.assertEqual(rc, 1)
        self.assertEqual(out_text, "")
        self.assertIn(path, err)
        self.assertIn("NUL byte at offset 42", err)


CAUSES = os.path.join(FIXTURES, "causes")


class CauseFixtures(unittest.TestCase):
    """One log per rule of part 2 and per false alarm it must not raise
    (tests/fixtures/nccl_logs/causes/*.log): the findings each raises, with
    their severity, and no other; the verdict; the notes; evidence that
    names the file and line; `next` texts with the log's own peers and pids,
    not placeholders."""

    def test_every_cause_fixture(self):
        names = sorted(n[:-4] for n in os.listdir(CAUSES) if n.endswith(".log"))
        self.assertGreaterEqual(len(names), 20)
        problems = []
        for name in names:
            path = os.path.join(CAUSES, name + ".log")
            with open(os.path.join(CAUSES, name + ".expect.json")) as f:
                expected = json.load(f)
            report = e2e.run_json(self, ["nccl-log", path, "--json"])
            NcclLogCli.check_contract(self, report)
            # A misconfigured job claims one rank on two hosts: that is its fault.
            if not expected.get("misconfigured"):
                problems += ["%s: %s" % (name, c)
                             for c in NcclLogCli.rank_contradictions(report["nccl"])]
            got = {f["id"]: f for f in report["findings"]}
            raised = {i: f["severity"] for i, f in got.items()}
            if raised != expected["raises"]:
                problems.append("%s: raised %s, expected %s" % (name, raised, expected["raises"]))
            verdict = report["verdict"].get("finding") or "none"
            if verdict != expected["verdict"]:
                problems.append("%s: verdict %s, expected %s" % (name, verdict, expected["verdict"]))
            for note in expected.get("notes", []):
                if not any(note in n for n in report["notes"]):
                    problems.append("%s: no note with %r in %s" % (name, note, report["notes"]))
            for fid, keys in expected.get("evidence", {}).items():
                for key, part in keys.items():
                    value = str(got.get(fid, {}).get("evidence", {}).get(key, ""))
                    if part not in value:
                        problems.append("%s: %s evidence %s=%r lacks %r" % (name, fid, key, value, part))
            for fid, part in expected.get("next", {}).items():
                if part not in got.get(fid, {}).get("next", ""):
                    problems.append("%s: %s next lacks %r: %r" % (name, fid, part, got.get(fid, {}).get("next")))
            for fid, f in got.items():
                places = [v for v in f["evidence"].values()
                          if isinstance(v, str) and (path + ":") in v]
                if not places:
                    problems.append("%s: %s names no FILE:LINE: %s" % (name, fid, f["evidence"]))
                for placeholder in ("PEER_IP", " PORT", "--pid PID", "DATA_DIR"):
                    if placeholder in f["next"]:
                        problems.append("%s: %s next has %r" % (name, fid, placeholder))
        self.assertEqual(problems, [], "\n".join(problems))

    def test_the_header_counts_nccls_lines_and_names_libfabrics(self):
        # PyTorch's lines naming NCCL are other lines; libfabric's own lines
        # are counted in the text, not only in the JSON.
        rc, out, err, _ = e2e.run(["nccl-log", os.path.join(CAUSES, "v2_19_torch_error_names_other_version.log")])
        self.assertIn(" 14 NCCL lines (", out.splitlines()[0])
        self.assertIn("7 other line(s)", out)
        rc, out, err, _ = e2e.run(["nccl-log", os.path.join(CAUSES, "v2_23_efa_ofi_init_failed_excerpt.log")])
        self.assertIn("libfabric: 2 line(s) of its own", out)
        # A peer the connects name that printed nothing counts as a host, marked inferred.
        rc, out, err, _ = e2e.run(["nccl-log", os.path.join(CAUSES, "v2_14_one_host_excerpt_peer_unreachable.log")])
        self.assertIn("on 2 host(s) (1 inferred from network peers", out.splitlines()[0])

    def test_a_redacted_bootstrap_address_shows_as_the_log_wrote_it(self):
        # "Bootstrap : Using eth0:<ip><0>": the column says eth0:<ip>, as the
        # redacted peer "<ip><43211>" is shown, never a bare eth0.
        path = os.path.join(CAUSES, "v2_19_connect_refused_redacted_peer_placeholder.log")
        rc, out, err, _ = e2e.run(["nccl-log", path])
        rows = [l for l in out.splitlines() if l.startswith("gpu-f0")]
        self.assertEqual(len(rows), 2, out)
        for row in rows:
            self.assertEqual(row.split()[5], "eth0:<ip>", row)
        report = e2e.run_json(self, ["nccl-log", path, "--json"])
        for p in report["nccl"]["processes"]:
            self.assertEqual(p["bootstrap"], [{"name": "eth0", "address": "<ip>"}])
        # No finding takes the placeholder for an address two hosts share.
        self.assertNotIn("network.duplicate_address", [f["id"] for f in report["findings"]])

    def test_a_line_in_evidence_is_the_line_that_says_it(self):
        # The FILE:LINE of each finding points at a line that holds its fact.
        path = os.path.join(CAUSES, "v2_17_duplicate_address_nat.log")
        with open(path) as f:
            lines = f.read().splitlines()
        report = e2e.run_json(self, ["nccl-log", path, "--json"])
        dup = [f for f in report["findings"] if f["id"] == "network.duplicate_address"][0]
        places = dup["evidence"]["bootstrap_lines"].split("; ")
        self.assertEqual(len(places), 2, places)
        for place, host in zip(places, ("gpu-a01", "gpu-a02")):
            number = int(place.split(" ")[0].rsplit(":", 1)[1])
            self.assertIn("Bootstrap : Using eth0:172.17.0.2", lines[number - 1])
            self.assertTrue(lines[number - 1].startswith(host + ":"), lines[number - 1])



class FailureForms(unittest.TestCase):
    """The forms of issue 57 as the binary reads them: a WARN judged by what
    followed it, NCCL 2.3's bare rank line, the network before 2.6, a bare
    version under a "> " quote, a launcher's echo of the job's world, and a
    CUDA runtime newer than the driver within one major."""

    def json_of(self, name):
        return e2e.run_json(self, ["nccl-log", os.path.join(CAUSES, name), "--json"])

    def test_a_failure_quotes_its_warn_with_who_and_when(self):
        report = self.json_of("v2_21_ib_completion_error_peer_lost.log")
        self.assertEqual(report["verdict"]["finding"], "network.nccl_error")
        f = {f["id"]: f for f in report["findings"]}["network.nccl_error"]
        for part in ("gpu-n18", "rank 1", "gpu-n18:30911", "2024-11-02 14:21:40",
                     "Got completion from peer"):
            self.assertIn(part, f["summary"])
        returns = {p["host"]: p["error_returns"] for p in report["nccl"]["processes"]}
        self.assertEqual(returns, {"gpu-n17": 1, "gpu-n18": 3})
        rc, out, err, _ = e2e.run(["nccl-log", os.path.join(CAUSES, "v2_21_ib_completion_error_peer_lost.log")])
        self.assertEqual(rc, 0, err)
        self.assertIn("verdict: network", out)

    def test_2_3s_bare_rank_line_gives_rank_and_world(self):
        nccl = self.json_of("v2_3_bare_rank_lines_excerpt.log")["nccl"]
        ranks = {(r["host"], r["pid"]): (r["rank"], r["nranks"]) for r in nccl["ranks"]}
        self.assertEqual(ranks[("dgx07", 31020)], (0, 16))
        self.assertEqual(ranks[("dgx07", 31021)], (1, 16))

    def test_before_2_6_listed_ib_is_the_network_and_sockets_serve_the_bootstrap(self):
        for name in ("v2_4_ib_and_sockets_listed.log", "v2_5_ib_and_sockets_listed_excerpt.log"):
            report = self.json_of(name)
            self.assertNotIn("network.rdma_unused", ids(report), name)

    def test_a_bare_version_under_a_quote_prefix(self):
        nccl = self.json_of("v2_4_quoted_in_an_issue.log")["nccl"]
        versions = {p["version"] for p in nccl["processes"]} | set(nccl.get("unattributed_versions", []))
        self.assertIn("2.4.8+cuda10.1", versions)

    def test_the_launchers_echo_is_its_own_fact(self):
        nccl = self.json_of("v2_21_launcher_echo.log")["nccl"]
        self.assertEqual(nccl["launcher"]["world_size"], 4)
        self.assertEqual(nccl["launcher"]["ranks"], [0, 1, 2, 3])
        self.assertEqual(nccl["launcher"]["local_ranks"], [0, 1])
        self.assertEqual(nccl["launcher"]["first_line"], 1)
        rc, out, err, _ = e2e.run(["nccl-log", os.path.join(CAUSES, "v2_21_launcher_echo.log")])
        self.assertIn("launcher's echo (line 1, 4 line(s)): WORLD_SIZE 4", out)

    def test_a_runtime_newer_within_its_major_runs(self):
        nccl = self.json_of("v2_24_runtime_newer_minor_healthy.log")["nccl"]
        compat = {p["cuda_compatibility"] for p in nccl["processes"] if p["version"]}
        self.assertEqual(len(compat), 1)
        self.assertIn("minor-version compatibility", compat.pop())
        rc, out, err, _ = e2e.run(["nccl-log", os.path.join(CAUSES, "v2_24_runtime_newer_minor_healthy.log")])
        self.assertIn("runtime 12.6 (NCCL's +cuda suffix), driver 12.2", out)
        self.assertIn("minor-version compatibility", out)

if __name__ == "__main__":
    e2e.main()

"""End-to-end: `stallscope cluster` under real Open MPI on this host. Three
ranks on one node: one row, nothing differs, no finding, and the JSON
matches the host (hostname, kernel, MTUs from /sys). Two ranks started with
different NCCL_SOCKET_IFNAME (mpirun's MPMD form, -x per app context): the
rank whose interface does not exist is named in network.wrong_interface.

Run: /usr/bin/python3 mpi_cluster.py PATH_TO_STALLSCOPE
"""

import json
import os
import shutil
import socket
import subprocess
import tempfile
import unittest

import e2e_common as e2e

MPIRUN = shutil.which("mpirun")
LAUNCHER_VARS = ("OMPI_", "PMIX_", "PMI_", "SLURM_")


def clean_env():
    return {k: v for k, v in os.environ.items()
            if not k.startswith(LAUNCHER_VARS) and not k.startswith(("NCCL_", "GLOO_"))}


def mpirun(app_contexts, timeout=60):
    cmd = [MPIRUN, "--allow-run-as-root", "--oversubscribe"]
    for i, (np, extra, args) in enumerate(app_contexts):
        if i:
            cmd.append(":")
        cmd += ["-np", str(np)] + extra + [e2e.BINARY] + args
    proc = subprocess.run(cmd, capture_output=True, env=clean_env(), timeout=timeout)
    return (proc.returncode, proc.stdout.decode("utf-8", "replace"),
            proc.stderr.decode("utf-8", "replace"))


def real_interface():
    """An up, non-loopback interface of this host (eth0 here)."""
    for name in sorted(os.listdir("/sys/class/net")):
        if name == "lo":
            continue
        with open("/sys/class/net/%s/operstate" % name) as f:
            if f.read().strip() == "up":
                return name
    return None


@e2e.needs(MPIRUN is not None, "mpirun not installed (apt-get install openmpi-bin)")
class Cluster(unittest.TestCase):
    def test_one_node_three_ranks_json(self):
        rc, out, err = mpirun([(3, [], ["cluster", "--json"])])
        self.assertEqual(rc, 0, err)
        report = json.loads(out)
        self.assertEqual(report["schema"], "stallscope.report/1")
        self.assertEqual(report["findings"], [], "no false findings on one healthy node")
        self.assertEqual(report["verdict"]["layer"], "none")
        c = report["cluster"]
        self.assertEqual(c["schema"], "stallscope.cluster/1")
        self.assertEqual((c["ranks"], c["nodes"]), (3, 1))
        self.assertEqual(c["differing_columns"], [])
        self.assertEqual(len(c["rows"]), 1)
        self.assertEqual(c["rows"][0]["ranks"], [0, 1, 2])
        self.assertEqual(c["rows"][0]["differs"], [])
        for col in ("gpus", "driver", "cuda", "cpu", "kernel", "nic mtu", "in use",
                    "nccl/gloo env", "clock"):
            self.assertIn(col, c["rows"][0]["values"])
        self.assertEqual([r["rank"] for r in c["per_rank"]], [0, 1, 2])
        for r in c["per_rank"]:
            self.assertEqual(r["host"], socket.gethostname())
            self.assertEqual(r["kernel"], os.uname().release)
            self.assertEqual(r["cpus"], os.cpu_count())
            mtus = {i["name"]: i["mtu"] for i in r["interfaces"]}
            for name in os.listdir("/sys/class/net"):
                with open("/sys/class/net/%s/mtu" % name) as f:
                    self.assertEqual(mtus.get(name), int(f.read()), name)
            self.assertEqual(r["environment"], {})
            # Same host, same clock: the offset is within the round trip.
            self.assertLess(abs(r["clock_offset_ms"]), 5 + r["clock_round_trip_ms"])

    def test_one_node_text(self):
        rc, out, err = mpirun([(3, [], ["cluster"])])
        self.assertEqual(rc, 0, err)
        self.assertIn("3 rank(s) on 1 node(s)", out)
        self.assertIn("every rank reports the same facts", out)
        self.assertRegex(out, r"\n%s\s+0-2\s" % socket.gethostname())
        self.assertEqual(out.count("stallscope cluster:"), 1, "only rank 0 prints")

    def test_missing_interface_names_the_rank(self):
        good = real_interface()
        if good is None:
            self.skipTest("no up, non-loopback interface")
        rc, out, err = mpirun([
            (1, ["-x", "NCCL_SOCKET_IFNAME=" + good], ["cluster", "--json"]),
            (1, ["-x", "NCCL_SOCKET_IFNAME=nosuch0"], ["cluster", "--json"]),
        ])
        self.assertEqual(rc, 0, err)
        report = json.loads(out)
        wrong = [f for f in report["findings"] if f["id"] == "network.wrong_interface"]
        self.assertEqual(len(wrong), 1, report["findings"])
        f = wrong[0]
        self.assertEqual(f["severity"], "critical")
        self.assertIn("rank 1 on %s" % socket.gethostname(), f["summary"])
        self.assertEqual(f["evidence"]["rank"], 1)
        self.assertEqual(f["evidence"]["missing"], "nosuch0")
        self.assertIn(good, f["evidence"]["interfaces_on_host"].split(","))
        self.assertEqual(report["verdict"]["finding"], "network.wrong_interface")
        c = report["cluster"]
        self.assertEqual(c["nodes"], 1)
        self.assertEqual(len(c["rows"]), 2)
        self.assertIn("nccl/gloo env", c["differing_columns"])
        by_rank = {tuple(r["ranks"]): r for r in c["rows"]}
        # Rank 1's variable selects nothing, so its interface in use differs too.
        self.assertEqual(set(by_rank[(1,)]["differs"]), {"nccl/gloo env", "in use"})
        self.assertEqual(by_rank[(1,)]["values"]["in use"], "-")
        self.assertEqual(by_rank[(0,)]["differs"], [])
        self.assertEqual(c["per_rank"][1]["environment"], {"NCCL_SOCKET_IFNAME": "nosuch0"})
        # No false MTU finding: one node.
        self.assertFalse([f for f in report["findings"] if f["id"] == "network.mtu_mismatch"])

    def test_topology_compared_across_per_rank_roots(self):
        # Ranks on one host share one topology, so each rank reads its own
        # fixture tree (--root with {rank}): ranks 0 and 1 an NVSwitch node,
        # rank 2 a PCIe node with its HCA on the far socket.
        trees = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures",
                             "topology")
        with tempfile.TemporaryDirectory() as tmp:
            for rank, tree in enumerate(["nvswitch8", "nvswitch8", "pcie_far_nic"]):
                os.symlink(os.path.join(trees, tree), os.path.join(tmp, "rank%d" % rank))
            rc, out, err = mpirun([(3, [], ["cluster", "--json", "--interval", "0.1", "--root",
                                            os.path.join(tmp, "rank{rank}")])])
        self.assertEqual(rc, 0, err)
        c = json.loads(out)["cluster"]
        self.assertIn("topology", c["differing_columns"])
        by_rank = {tuple(r["ranks"]): r for r in c["rows"]}
        self.assertEqual(by_rank[(0, 1)]["values"]["topology"],
                         "8 GPUs PIX/NODE/SYS, 5 NICs, closest PIX")
        self.assertEqual(by_rank[(2,)]["values"]["topology"],
                         "4 GPUs PIX/PXB/NODE, 2 NICs, closest SYS")
        self.assertIn("topology", by_rank[(2,)]["differs"])

    def test_not_under_a_launcher(self):
        rc, out, err, _ = e2e.run(["cluster"], env=clean_env(), timeout=20)
        self.assertEqual(rc, 2)
        self.assertIn("mpirun -np 4 stallscope cluster", err)
        self.assertEqual(out, "")


if __name__ == "__main__":
    e2e.main()

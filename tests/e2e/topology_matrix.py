"""The GPU/NIC path matrix end to end: `snapshot` and `snapshot --json` on
the topology fixture roots, and `doctor`'s network.nic_far_from_gpu from
them (the HCA on the far socket; an NCCL log naming one rail for all) (tests/fixtures/topology, sysfs PCI trees written
by make_trees.py there), as `nvidia-smi topo -m` would print them.

Run: /usr/bin/python3 topology_matrix.py PATH_TO_STALLSCOPE
"""

import os
import re
import tempfile
import unittest

import e2e_common as e2e

TREES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures", "topology")


def env():
    # No NVML library: the paths come from sysfs alone.
    return dict(os.environ, STALLSCOPE_NVML_LIBRARY="/nonexistent/libnvidia-ml.so.1")


def matrix_rows(text):
    """{"GPU0": ["X", "PIX", ...], ...} from the printed matrix."""
    rows = {}
    lines = text.splitlines()
    start = next(i for i, l in enumerate(lines) if "paths (as nvidia-smi topo -m)" in l)
    header = lines[start + 1].split()
    for line in lines[start + 2:]:
        cells = line.split()
        if not cells or not re.fullmatch(r"(GPU|NIC)\d+", cells[0]):
            break
        rows[cells[0]] = cells[1:len(header)]
    return header, rows


class SnapshotMatrix(unittest.TestCase):
    def test_pcie_node_text_names_each_path(self):
        rc, out, err, _ = e2e.run(["snapshot", "--root", os.path.join(TREES, "pcie_far_nic")],
                                  env=env())
        self.assertEqual(rc, 0, err)
        header, rows = matrix_rows(out)
        self.assertEqual(header, ["GPU0", "GPU1", "GPU2", "GPU3", "NIC0", "NIC1", "NUMA"])
        self.assertEqual(rows["GPU0"], ["X", "PIX", "PXB", "NODE", "SYS", "SYS"])
        self.assertEqual(rows["GPU3"], ["NODE", "NODE", "NODE", "X", "SYS", "SYS"])
        self.assertIn("NIC0: mlx5_0 (ens5f0) RDMA", out)
        self.assertIn("closest NIC of GPU2: NIC0 mlx5_0 (SYS)", out)
        self.assertIn("PIX  = through at most one PCIe switch", out)

    def test_nvswitch_node_json_has_the_matrix(self):
        report = e2e.run_json(self, ["snapshot", "--json", "--root",
                                     os.path.join(TREES, "nvswitch8")], env=env())
        matrix = report["topology"]["matrix"]
        devices = {d["label"]: d for d in matrix["devices"]}
        self.assertEqual(len(devices), 13)
        self.assertEqual([d["kind"] for d in matrix["devices"]].count("gpu"), 8)
        self.assertEqual(devices["GPU0"]["paths"]["GPU1"], "PIX")
        self.assertEqual(devices["GPU0"]["paths"]["GPU4"], "SYS")
        for g in range(8):
            gpu = devices["GPU%d" % g]
            self.assertEqual(devices[gpu["closest_nic"]]["name"], "mlx5_%d" % (g // 2))
            self.assertEqual(gpu["closest_nic_path"], "PIX")
        self.assertEqual(devices["NIC0"]["kind"], "hca")
        self.assertEqual(devices["NIC4"]["name"], "eno1")
        self.assertTrue(report["topology"]["gpus"][0]["pci_path"].startswith("pci0000:15/"))



class SnapshotNvLinks(unittest.TestCase):
    """The NVSwitch node with the fake NVML's NVLink answers (its script,
    nvswitch8.nvml, is written beside the tree by make_trees.py)."""

    def env(self):
        lib = os.path.join(os.path.dirname(e2e.BINARY), "libstallscope_fake_nvml.so")
        if not os.path.exists(lib):
            raise AssertionError("%s missing: build the stallscope_fake_nvml target" % lib)
        return dict(os.environ, STALLSCOPE_NVML_LIBRARY=lib,
                    FAKE_NVML_SCRIPT=os.path.join(TREES, "nvswitch8.nvml"))

    def test_gpus_over_nvswitches_show_nv18_and_a_down_link_shows(self):
        root = os.path.join(TREES, "nvswitch8")
        rc, out, err, _ = e2e.run(["snapshot", "--root", root], env=self.env())
        self.assertEqual(rc, 0, err)
        _, rows = matrix_rows(out)
        self.assertEqual(rows["GPU0"][:8], ["X"] + ["NV18"] * 6 + ["NV17"])
        self.assertEqual(rows["GPU7"][:8], ["NV17"] * 7 + ["X"])
        self.assertEqual(rows["GPU0"][8:], ["PIX", "NODE", "SYS", "SYS", "NODE"])
        report = e2e.run_json(self, ["snapshot", "--json", "--root", root], env=self.env())
        links = report["topology"]["nvlinks"]
        self.assertEqual(len(links), 32)  # 8 GPUs x 4 NVSwitches
        self.assertTrue(all(l["peer_is_switch"] for l in links))
        gpu7 = sum(l["links"] for l in links if l["gpu"] == "0000:bb:00.0")
        self.assertEqual(gpu7, 17)

    def test_a_capture_carries_the_matrix_to_snapshot_and_doctor_from(self):
        root = os.path.join(TREES, "nvswitch8")
        with tempfile.TemporaryDirectory() as tmp:
            capture = os.path.join(tmp, "node.tar.gz")
            rc, live, err, _ = e2e.run(["snapshot", "--root", root, "--capture", capture,
                                        "--interval", "0.1"], env=self.env())
            self.assertEqual(rc, 0, err)
            # Read back where no NVML exists: the answers come from the capture.
            rc, again, err, _ = e2e.run(["snapshot", "--from", capture], env=env())
            self.assertEqual(rc, 0, err)
            self.assertEqual(matrix_rows(again), matrix_rows(live))
            self.assertEqual(matrix_rows(again)[1]["GPU3"][7], "NV17")
            far = os.path.join(tmp, "far.tar.gz")
            rc, _, err, _ = e2e.run(["snapshot", "--root", os.path.join(TREES, "pcie_far_nic"),
                                     "--capture", far, "--interval", "0.1"], env=env())
            self.assertEqual(rc, 0, err)
            report = e2e.run_json(self, ["doctor", "--json", "--from", far], env=env())
        ids = [f["id"] for f in report["findings"]]
        self.assertIn("network.nic_far_from_gpu", ids)


class DoctorNicFarFromGpu(unittest.TestCase):
    def finding(self, args):
        report = e2e.run_json(self, ["doctor", "--json", "--interval", "0.1"] + args, env=env())
        found = [f for f in report["findings"] if f["id"] == "network.nic_far_from_gpu"]
        return found[0] if found else None

    def test_hca_on_the_far_socket(self):
        f = self.finding(["--root", os.path.join(TREES, "pcie_far_nic")])
        self.assertIsNotNone(f)
        self.assertEqual(f["severity"], "warning")
        self.assertIn("across the link between sockets (SYS)", f["summary"])
        self.assertEqual(f["evidence"]["GPU0_closest_nic"], "mlx5_0")

    def test_rail_per_gpu_is_quiet_and_an_nccl_log_with_one_rail_is_not(self):
        root = os.path.join(TREES, "nvswitch8")
        self.assertIsNone(self.finding(["--root", root]))
        with tempfile.TemporaryDirectory() as tmp:
            log = os.path.join(tmp, "nccl.log")
            with open(log, "w") as out:
                out.write("node1:4242:4242 [0] NCCL INFO NCCL version 2.18.3+cuda12.2\n"
                          "node1:4242:4242 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; "
                          "OOB ibp26s0:10.0.0.1<0>\n")
            f = self.finding(["--root", root, "--nccl-log", log])
        self.assertIsNotNone(f)
        self.assertIn("6 GPU(s) talk through a NIC further than their closest", f["summary"])
        self.assertEqual(f["evidence"]["nics_from"], log)
        self.assertEqual(f["evidence"]["GPU7_nic_path"], "SYS")


if __name__ == "__main__":
    e2e.main()

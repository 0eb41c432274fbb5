"""The GPU/NIC path matrix end to end: `snapshot` and `snapshot --json` on
the topology fixture roots (tests/fixtures/topology, sysfs PCI trees written
by make_trees.py there), as `nvidia-smi topo -m` would print them.

Run: /usr/bin/python3 topology_matrix.py PATH_TO_STALLSCOPE
"""

import os
import re
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


if __name__ == "__main__":
    e2e.main()

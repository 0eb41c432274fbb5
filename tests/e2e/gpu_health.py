"""GPU and link health end to end: `doctor --root` and `snapshot --root` on
tests/fixtures/gpu_health_host (its sysfs PCIe links, its /dev/kmsg records)
with the fake NVML answering for its three GPUs (the fixture's
fake_nvml_script), the same host with every fault mended as the control,
and the live kernel log of this machine.

Run: /usr/bin/python3 gpu_health.py PATH_TO_STALLSCOPE
"""

import json
import os
import shutil
import tempfile
import unittest

import e2e_common as e2e

HERE = os.path.dirname(os.path.abspath(__file__))
HOST = os.path.join(HERE, "..", "fixtures", "gpu_health_host")


def fake_env(script):
    library = os.path.join(os.path.dirname(e2e.BINARY), "libstallscope_fake_nvml.so")
    if not os.path.exists(library):
        raise AssertionError("%s missing: build the stallscope_fake_nvml target" % library)
    return dict(os.environ, STALLSCOPE_NVML_LIBRARY=library, FAKE_NVML_SCRIPT=script)


def all_findings(report, finding_id):
    return [f for f in report["findings"] if f["id"] == finding_id]


def evidence(f):
    return f["evidence"]  # an object: name -> value 


class SickNode(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.env = fake_env(os.path.join(HOST, "fake_nvml_script"))
        rc, out, err, _ = e2e.run(["doctor", "--json", "--quick", "--interval", "0.2",
                                   "--root", HOST], env=cls.env)
        if rc != 0:
            raise AssertionError("doctor exited %d: %s" % (rc, err))
        cls.report = json.loads(out)

    def test_report_contract_and_verdict(self):
        e2e.check_report(self, self.report)
        # Memory first: GPU 0's uncorrectable ECC errors decide.
        self.assertEqual(self.report["verdict"]["layer"], "memory")
        self.assertEqual(self.report["verdict"]["finding"], "memory.gpu_ecc")

    def test_pcie_links_of_the_gpus_and_the_idle_one_is_a_note(self):
        pcie = all_findings(self.report, "io.pcie_degraded")
        self.assertEqual(sorted(evidence(f)["pci_address"] for f in pcie),
                         ["0000:17:00.0", "0000:b1:00.0"])
        for f in pcie:
            self.assertEqual(f["layer"], "io")
            self.assertEqual(f["severity"], "warning")  # half the ceiling
            self.assertAlmostEqual(evidence(f)["ceiling_share"], 0.5)
        x8 = [f for f in pcie if evidence(f)["pci_address"] == "0000:17:00.0"][0]
        self.assertIn("x8 of x16", x8["summary"])
        gen3 = [f for f in pcie if evidence(f)["pci_address"] == "0000:b1:00.0"][0]
        self.assertIn("8 GT/s (Gen3) of 16 GT/s (Gen4)", gen3["summary"])
        idle = [n for n in self.report["notes"] if "0000:3b:00.0" in n and "save power" in n]
        self.assertEqual(len(idle), 1, self.report["notes"])

    def test_the_hca_at_a_quarter_of_its_lanes(self):
        link = all_findings(self.report, "network.link_degraded")
        self.assertEqual(len(link), 1, link)
        self.assertEqual(link[0]["severity"], "critical")
        self.assertEqual(evidence(link[0])["pci_address"], "0000:ca:00.0")
        ports = all_findings(self.report, "network.port_errors")
        self.assertEqual(len(ports), 1)
        self.assertIn("0000:ca:00.0 (1x)", ports[0]["summary"])

    def test_ecc_and_remaps_per_gpu(self):
        ecc = {evidence(f)["gpu_index"]: f for f in all_findings(self.report, "memory.gpu_ecc")}
        self.assertEqual(sorted(ecc), [0, 1, 2])
        self.assertEqual(ecc[0]["severity"], "critical")  # volatile uncorrectable
        self.assertEqual(ecc[1]["severity"], "warning")   # lifetime only
        self.assertEqual(ecc[2]["severity"], "warning")   # correctable growing
        self.assertEqual(evidence(ecc[2])["ecc_corrected_during_interval"], 15)
        remap = {evidence(f)["gpu_index"]: f for f in all_findings(self.report, "memory.gpu_remap")}
        self.assertEqual(remap[0]["severity"], "warning")   # pending
        self.assertEqual(remap[1]["severity"], "critical")  # failed
        self.assertNotIn(2, remap)
        off = all_findings(self.report, "code.gpu_persistence_off")
        self.assertEqual([evidence(f)["gpu_index"] for f in off], [1])
        self.assertEqual(off[0]["severity"], "info")

    def test_xids_per_gpu_by_bus(self):
        xids = {evidence(f)["bus_id"]: f for f in all_findings(self.report, "code.gpu_xid")}
        self.assertEqual(sorted(xids), ["0000:17:00", "0000:3b:00", "0000:b1:00"])
        self.assertEqual(xids["0000:b1:00"]["severity"], "critical")
        self.assertIn("fallen off the bus", xids["0000:b1:00"]["summary"])
        self.assertEqual(xids["0000:17:00"]["severity"], "critical")
        self.assertEqual(evidence(xids["0000:17:00"])["worst_xid"], 48)
        self.assertEqual(xids["0000:3b:00"]["severity"], "warning")
        self.assertEqual(evidence(xids["0000:3b:00"])["xid_13_count"], 2)
        self.assertEqual(evidence(xids["0000:3b:00"])["gpu_index"], 2)

    def test_snapshot_carries_links_log_and_gpu_state(self):
        snap = e2e.run_json(self, ["snapshot", "--json", "--interval", "0.2", "--root", HOST],
                            env=self.env)
        links = {l["pci_address"]: l for l in snap["pcie_links"]}
        self.assertEqual(len(links), 5)
        self.assertEqual(links["0000:17:00.0"]["current"], {"speed_gts": 16.0, "width": 8})
        self.assertEqual(links["0000:17:00.0"]["port_address"], "0000:16:01.0")
        self.assertEqual(links["0000:ca:00.0"]["name"], "mlx5_0/ens1f0np0")
        self.assertEqual([x["xid"] for x in snap["kernel_log"]["xids"]], [13, 13, 43, 63, 48, 94, 79])
        self.assertEqual(len(snap["kernel_log"]["port_events"]), 1)
        gpus = snap["gpus"]["devices"]
        self.assertEqual([g["persistence_mode"] for g in gpus], [True, False, True])
        self.assertEqual([g["mig_mode"] for g in gpus], [False, False, True])
        self.assertEqual([g["remap_failed"] for g in gpus], [False, True, False])
        self.assertEqual(gpus[1]["ecc_aggregate_uncorrected"], 3)
        rc, out, err, _ = e2e.run(["snapshot", "--interval", "0.2", "--root", HOST], env=self.env)
        self.assertEqual(rc, 0, err)
        self.assertIn("gpu 0000:17:00.0 (0000:17:00.0): x8 16 GT/s (Gen4) / x16 16 GT/s (Gen4)", out)
        self.assertIn("kernel log since boot: 7 Xid error(s), 1 port link-down message(s)", out)
        self.assertIn("Xid 79 on 0000:b1:00: GPU has fallen off the bus", out)

    def test_every_new_id_is_in_the_catalog(self):
        rules = {r["id"]: r for r in e2e.run_json(self, ["doctor", "--rules", "--json"])["rules"]}
        for rule_id, layer in [("io.pcie_degraded", "io"), ("network.link_degraded", "network"),
                               ("memory.gpu_ecc", "memory"), ("memory.gpu_remap", "memory"),
                               ("code.gpu_persistence_off", "code"), ("code.gpu_xid", "code")]:
            self.assertIn(rule_id, rules)
            rule = rules[rule_id]
            self.assertEqual(rule["layer"], layer, rule_id)
            for field in ("checks", "threshold", "reasoning", "reference", "prometheus"):
                self.assertTrue(rule.get(field), "%s has no %s" % (rule_id, field))


class MendedNode(unittest.TestCase):
    """The same node with full-width links, healthy GPUs and a clean log:
    none of the health findings."""

    def test_nothing_to_find(self):
        with tempfile.TemporaryDirectory(prefix="stallscope_gpu_health_") as tmp:
            host = os.path.join(tmp, "host")
            shutil.copytree(HOST, host, symlinks=True)
            for address, width in [("pci0000:16/0000:16:01.0/0000:17:00.0", "16"),
                                   ("pci0000:c9/0000:c9:01.0/0000:ca:00.0", "16")]:
                with open(os.path.join(host, "sys/devices", address, "current_link_width"),
                          "w") as f:
                    f.write(width + "\n")
            with open(os.path.join(host, "sys/devices/pci0000:b0/0000:b0:01.0/0000:b1:00.0/"
                                   "current_link_speed"), "w") as f:
                f.write("16.0 GT/s PCIe\n")
            with open(os.path.join(host, "dev/kmsg"), "w") as f:
                f.write("6,1,0,-;Linux version 6.1.0-27-amd64\n"
                        "6,1391,22817441,-;mlx5_core 0000:ca:00.0 ens1f0np0: Link up\n")
            script = os.path.join(tmp, "script")
            with open(os.path.join(HOST, "fake_nvml_script")) as f:
                healthy = [l for l in f.read().splitlines()
                           if not any(k in l for k in ("ecc_", "remap_", "persistence"))]
            with open(script, "w") as f:
                f.write("\n".join(healthy) + "\n")
            report = e2e.run_json(self, ["doctor", "--json", "--quick", "--interval", "0.2",
                                         "--root", host], env=fake_env(script))
            e2e.check_report(self, report)
            ids = {f["id"] for f in report["findings"]}
            for rule_id in ("io.pcie_degraded", "network.link_degraded", "memory.gpu_ecc",
                            "memory.gpu_remap", "code.gpu_persistence_off", "code.gpu_xid",
                            "network.port_errors"):
                self.assertNotIn(rule_id, ids)


class LiveKernelLog(unittest.TestCase):
    def test_read_or_said_why_not(self):
        snap = e2e.run_json(self, ["snapshot", "--json", "--interval", "0.1"])
        notes = [n for n in snap["notes"] if n.startswith("kernel log:")]
        if snap["kernel_log"] is None:
            self.assertEqual(len(notes), 1, snap["notes"])
            self.assertIn("Xid errors and port link-down messages not checked", notes[0])
        else:
            self.assertEqual(notes, [])
            self.assertIsInstance(snap["kernel_log"]["xids"], list)


if __name__ == "__main__":
    e2e.main()

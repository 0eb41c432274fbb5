"""`stallscope snapshot` against the classic tools on this machine: free,
ip, iostat, df/findmnt, nproc, lscpu. The numbers must agree.

Run: /usr/bin/python3 snapshot_vs_classic_tools.py PATH_TO_STALLSCOPE
"""

import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
import unittest

import e2e_common as e2e
from e2e_common import MIB


def free_bytes():
    """free -b: {'Mem': {total, used, free, shared, buff/cache, available}, 'Swap': {...}}."""
    text = e2e.tool(["free", "-b"])
    if text is None:
        raise unittest.SkipTest("free (procps) is not installed")
    lines = text.splitlines()
    header = lines[0].split()
    out = {}
    for line in lines[1:]:
        name, *values = line.split()
        out[name.rstrip(":")] = dict(zip(header, (int(v) for v in values)))
    return out


def tolerance(value):
    # free and the snapshot read /proc/meminfo a moment apart.
    return max(64 * MIB, value // 100)


class SnapshotOnce:
    """One default snapshot shared by the tests that only read it."""
    json = None


def snapshot(test):
    if SnapshotOnce.json is None:
        SnapshotOnce.json = e2e.run_json(test, ["snapshot", "--json", "--interval", "0.5"])
    return SnapshotOnce.json


class Schema(unittest.TestCase):
    def test_schema_and_sections(self):
        s = snapshot(self)
        self.assertEqual(s["schema"], "stallscope.snapshot/1")
        for key in ("host", "kernel", "time", "interval_seconds", "memory", "cpu", "disks",
                    "interfaces", "environment", "processes", "notes"):
            self.assertIn(key, s)
        self.assertEqual(s["host"], os.uname().nodename)
        self.assertEqual(s["kernel"], os.uname().release)
        self.assertGreaterEqual(s["interval_seconds"], 0.45)
        self.assertLess(s["interval_seconds"], 5)


class Memory(unittest.TestCase):
    def test_memory_agrees_with_free(self):
        # free, snapshot, free: ours must sit within the two readings of free
        # (widened by the tolerance), whatever else the machine does meanwhile.
        before = free_bytes()
        ours = e2e.run_json(self, ["snapshot", "--json", "--interval", "0.1"])["memory"]
        after = free_bytes()

        self.assertEqual(ours["total_bytes"], before["Mem"]["total"], "MemTotal")
        self.assertEqual(ours["swap_total_bytes"], before["Swap"]["total"], "SwapTotal")

        def between(name, value, column, row="Mem"):
            low = min(before[row][column], after[row][column])
            high = max(before[row][column], after[row][column])
            slack = tolerance(high)
            self.assertTrue(low - slack <= value <= high + slack,
                            "%s: ours %d, free -b %s %d..%d (tolerance %d)" %
                            (name, value, column, low, high, slack))

        between("available", ours["available_bytes"], "available")
        between("used", ours["used_bytes"], "used")
        between("free", ours["free_bytes"], "free")
        between("shared", ours["shared_bytes"], "shared")
        # procps 4: buff/cache = Buffers + Cached + SReclaimable; we print
        # buffers apart and cached_bytes = Cached + SReclaimable.
        between("buff/cache", ours["buffers_bytes"] + ours["cached_bytes"], "buff/cache")
        between("swap used", ours["swap_used_bytes"], "used", "Swap")
        between("swap free", ours["swap_free_bytes"], "free", "Swap")
        # And the internal arithmetic.
        self.assertEqual(ours["used_bytes"], ours["total_bytes"] - ours["available_bytes"])
        self.assertEqual(ours["swap_used_bytes"] + ours["swap_free_bytes"],
                         ours["swap_total_bytes"])


class Interfaces(unittest.TestCase):
    def ip(self, what):
        text = e2e.tool(["ip", "-j", what])
        if text is None:
            self.skipTest("ip (iproute2) is not installed")
        return {i["ifname"]: i for i in json.loads(text)}

    def test_links_agree_with_ip_link(self):
        links = self.ip("link")
        ours = {i["name"]: i for i in snapshot(self)["interfaces"]}
        self.assertEqual(sorted(ours), sorted(links), "interface names")
        for name, link in links.items():
            mine = ours[name]
            self.assertEqual(mine["mtu"], link["mtu"], "%s mtu" % name)
            if "address" in link and link.get("link_type") != "none":
                self.assertEqual(mine["mac"], link["address"], "%s MAC" % name)
            self.assertEqual(mine["operstate"], link["operstate"].lower(),
                             "%s operstate (ip says %s)" % (name, link["operstate"]))
            if link.get("master"):
                self.assertEqual(mine["master"], link["master"], "%s master" % name)

    def test_addresses_agree_with_ip_addr(self):
        addrs = self.ip("addr")
        ours = {i["name"]: i for i in snapshot(self)["interfaces"]}
        for name, info in addrs.items():
            expected = sorted("%s/%d" % (a["local"], a["prefixlen"])
                              for a in info.get("addr_info", []) if "local" in a)
            self.assertIn(name, ours)
            self.assertEqual(sorted(ours[name]["addresses"]), expected, "%s addresses" % name)


def iostat_disks():
    text = e2e.tool(["iostat", "-x", "-d", "-o", "JSON"])
    if text is None:
        raise unittest.SkipTest("iostat (sysstat) is not installed")
    data = json.loads(text)
    return [d["disk_device"] for d in data["sysstat"]["hosts"][0]["statistics"][0]["disk"]]


def device_of(path):
    """The block device name (sysfs spelling, e.g. 'vda', 'dm-0') holding PATH."""
    source = e2e.tool(["findmnt", "-no", "SOURCE", "-T", path])
    if source is None:
        source = e2e.tool(["df", "--output=source", path]).splitlines()[-1]
    source = source.strip().split("[")[0]  # btrfs subvolumes: /dev/sda2[/@home]
    if not source.startswith("/dev/"):
        return None, source
    return os.path.basename(os.path.realpath(source)), source


class Disks(unittest.TestCase):
    def test_every_iostat_disk_is_listed(self):
        ours = {d["name"]: d for d in snapshot(self)["disks"]}
        listed = iostat_disks()
        self.assertTrue(listed, "iostat lists no disk on this host")
        for name in listed:
            self.assertIn(name, ours, "iostat lists %s, the snapshot does not" % name)
            self.assertFalse(ours[name]["is_partition"], "%s is a whole disk" % name)
            self.assertEqual(ours[name]["disk"], name)

    def test_direct_writes_show_on_their_device(self):
        # The build's file system (a local disk), else the temporary directory.
        writable = [d for d in (os.path.dirname(e2e.BINARY), tempfile.gettempdir())
                    if os.access(d, os.W_OK)]
        if not writable:
            self.skipTest("no writable directory for the dd file")
        directory = writable[0]
        device, source = device_of(directory)
        if device is None:
            self.skipTest("%s is on %s, not a block device" % (directory, source))
        fd, target = tempfile.mkstemp(prefix="stallscope-e2e-dd-", dir=directory)
        os.close(fd)
        self.addCleanup(lambda: os.path.exists(target) and os.unlink(target))
        interval = 2.0
        start = time.monotonic()
        snap = subprocess.Popen([e2e.BINARY, "snapshot", "--json", "--interval", str(interval)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.addCleanup(e2e.stop, snap)
        # The snapshot takes its first sample at once; start writing inside
        # its window so that the whole 256 MiB lands between its two samples.
        time.sleep(0.3)
        dd = subprocess.Popen(["dd", "if=/dev/zero", "of=" + target, "bs=1M", "count=256",
                               "oflag=direct", "status=none"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self.addCleanup(e2e.stop, dd)
        dd_err = dd.communicate(timeout=60)[1]
        dd_done = time.monotonic() - start
        out, err = snap.communicate(timeout=60)
        if dd.returncode != 0 and b"Invalid argument" in dd_err:
            self.skipTest("this file system refuses O_DIRECT: %s" % dd_err.decode().strip())
        self.assertEqual(dd.returncode, 0, dd_err.decode())
        self.assertEqual(snap.returncode, 0, err.decode())
        s = json.loads(out)
        disks = {d["name"]: d for d in s["disks"]}
        self.assertIn(device, disks, "%s (holding %s) is not in the snapshot" % (device, source))
        d = disks[device]
        self.assertGreater(d["wkB_s"], 0, "%s: no write throughput while dd wrote" % device)
        self.assertGreater(d["w_s"], 0, "%s: no write requests while dd wrote" % device)
        if dd_done < 0.8 * interval and not d["is_partition"] and not d["virtual"]:
            # dd ran wholly inside the window: all its 256 MiB must show.
            written_kib = d["wkB_s"] * s["interval_seconds"]
            self.assertGreater(written_kib, 0.9 * 256 * 1024,
                               "%s: %.0f KiB written in the window, dd wrote 262144" %
                               (device, written_kib))
            self.assertLess(d["wkB_s"], 1e8, "%s: absurd write rate" % device)


class Cpus(unittest.TestCase):
    def test_cpu_count(self):
        online = int(e2e.tool(["getconf", "_NPROCESSORS_ONLN"]).strip())
        s = snapshot(self)
        self.assertEqual(s["cpu"]["count"], online)
        self.assertEqual(len(s["cpu"]["per_cpu"]), online)
        offline = ""
        if os.path.exists("/sys/devices/system/cpu/offline"):
            with open("/sys/devices/system/cpu/offline") as f:
                offline = f.read().strip()
        if not offline:
            self.assertEqual(s["cpu"]["count"], int(e2e.tool(["nproc", "--all"]).strip()))
        for c in s["cpu"]["per_cpu"]:
            total = sum(v for k, v in c.items() if k.endswith("_percent") and k != "guest_percent")
            self.assertAlmostEqual(total, 100, delta=1.5, msg="cpu %s shares" % c["cpu"])

    def test_numa_nodes_agree_with_lscpu_and_sysfs(self):
        topology = snapshot(self)["topology"]
        self.assertIsNotNone(topology, "no topology in the snapshot")
        ours = {n["id"]: e2e.cpu_list(n["cpus"]) for n in topology["numa_nodes"]}
        node_dir = "/sys/devices/system/node"
        if os.path.isdir(node_dir):
            sysfs = [n for n in os.listdir(node_dir) if re.fullmatch(r"node[0-9]+", n)]
            self.assertEqual(len(ours), len(sysfs), "NUMA nodes vs %s" % node_dir)
        text = e2e.tool(["lscpu"])
        if text is None:
            return
        m = re.search(r"^NUMA node\(s\):\s+(\d+)", text, re.M)
        if m:
            self.assertEqual(len(ours), int(m.group(1)), "NUMA nodes vs lscpu")
        for node, cpus in re.findall(r"^NUMA node(\d+) CPU\(s\):\s*(.*)$", text, re.M):
            self.assertIn(int(node), ours)
            self.assertEqual(ours[int(node)], e2e.cpu_list(cpus), "node%s CPUs" % node)


class Environment(unittest.TestCase):
    def test_training_variables_only(self):
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": "/nonexistent",
               "NCCL_SOCKET_IFNAME": "eth0", "RANK": "3", "WORLD_SIZE": "8",
               "SECRET_TOKEN": "xyz"}
        s = e2e.run_json(self, ["snapshot", "--json", "--interval", "0.1"], env=env)
        self.assertEqual(s["environment"],
                         {"NCCL_SOCKET_IFNAME": "eth0", "RANK": "3", "WORLD_SIZE": "8"})
        self.assertNotIn("xyz", json.dumps(s), "a secret's value leaked into the snapshot")


class Text(unittest.TestCase):
    def test_text_headings_interfaces_and_total(self):
        rc, out, err, _ = e2e.run(["snapshot", "--interval", "0.1"])
        self.assertEqual(rc, 0, err)
        lines = out.splitlines()
        for heading in ("memory", "cpu", "disks", "network", "topology"):
            self.assertTrue(any(l.startswith(heading) for l in lines),
                            "no '%s' section in:\n%s" % (heading, out))
        network = out[out.index("\nnetwork"):]
        links = e2e.tool(["ip", "-j", "link"])
        if links is not None:
            for link in json.loads(links):
                self.assertRegex(network, r"(?m)^%s\s" % re.escape(link["ifname"]))
        # The Mem: row's total, in our 1024-based units, against free -b and free -h.
        mem_row = next(l for l in lines if l.startswith("Mem:"))
        total_text = " ".join(mem_row.split()[1:3])  # "23.5 GiB"
        total = e2e.parse_size(total_text)
        true_total = free_bytes()["Mem"]["total"]
        unit = e2e.parse_size("1 " + total_text.split()[1])
        self.assertLessEqual(abs(total - true_total), 0.05 * unit + 1,
                             "text total %s vs free -b %d" % (total_text, true_total))
        human = e2e.tool(["free", "-h"])
        if human is not None:
            free_h = next(l for l in human.splitlines() if l.startswith("Mem:")).split()[1]
            self.assertLess(abs(total - e2e.parse_size(free_h)), unit,
                            "text total %s vs free -h %s" % (total_text, free_h))


class BrokenPipe(unittest.TestCase):
    def test_head_gets_a_clean_prefix(self):
        proc = subprocess.run(["sh", "-c", '"$0" snapshot --json --interval 0.1 | head -c 100',
                               e2e.BINARY], capture_output=True, timeout=60)
        self.assertEqual(proc.returncode, 0)
        self.assertEqual(len(proc.stdout), 100)
        self.assertTrue(proc.stdout.startswith(b'{\n  "schema": "stallscope.snapshot/1"'),
                        proc.stdout)

    def test_reader_gone_before_the_write(self):
        # The reader closes before stallscope writes: the write meets a
        # broken pipe. Dying of SIGPIPE, or exiting with at most a note about
        # the pipe, is fine; a crash or another error is not.
        proc = subprocess.Popen([e2e.BINARY, "snapshot", "--json", "--interval", "0.3"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.addCleanup(e2e.stop, proc)
        proc.stdout.close()
        err = proc.stderr.read().decode("utf-8", "replace")
        proc.stderr.close()
        rc = proc.wait(timeout=60)
        self.assertIn(rc, (0, 1, -signal.SIGPIPE, 128 + signal.SIGPIPE),
                      "exit %d, stderr: %s" % (rc, err))
        for line in err.splitlines():
            self.assertRegex(line.lower(), r"pipe", "unexpected stderr: %s" % err)


if __name__ == "__main__":
    e2e.main()

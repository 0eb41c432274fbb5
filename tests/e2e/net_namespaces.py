"""net serve / net probe / doctor between hosts this test builds itself: two
network namespaces joined by a veth pair, made for each case with unique
names and always removed (in a finally, also when a case fails).

Needs root (CI runs as root); without it, or where the kernel refuses new
network namespaces, every case skips and says why.

Usage: net_namespaces.py PATH_TO_STALLSCOPE
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_common  # noqa: E402

PORT = 9419
# Short tests: the whole file stays within tens of seconds.
PROBE_FLAGS = ["--duration", "0.4", "--streams", "2", "--pings", "100"]


def ip(*args, check=True):
    proc = subprocess.run(["ip"] + list(args), capture_output=True, timeout=30)
    if check and proc.returncode != 0:
        raise RuntimeError("ip %s: %s" % (" ".join(args),
                                          proc.stderr.decode(errors="replace").strip()))
    return proc


def skip_reason():
    if os.geteuid() != 0:
        return "needs root to create network namespaces and veth pairs (CI runs as root)"
    try:
        name = "ssprobe-%s" % uuid.uuid4().hex[:8]
        ip("netns", "add", name)
        ip("netns", "del", name)
    except FileNotFoundError:
        return "the `ip` tool (iproute2) is not installed"
    except RuntimeError as e:
        return "this kernel/container refuses network namespaces: %s" % e
    return None


class VethPair:
    """Namespaces A and B, veth A<->B, 10.X.Y.1/24 in A and .2 in B."""

    def __init__(self, mtu_a=1500, mtu_b=1500):
        tag = uuid.uuid4().hex[:6]
        self.ns_a, self.ns_b = "ss-%s-a" % tag, "ss-%s-b" % tag
        self.if_a, self.if_b = "ssa%s" % tag, "ssb%s" % tag  # <= 15 characters
        octet = int(tag[:2], 16) % 200 + 20
        self.addr_a, self.addr_b = "10.%d.%d.1" % (octet, int(tag[2:4], 16)), \
            "10.%d.%d.2" % (octet, int(tag[2:4], 16))
        self.mtu_a, self.mtu_b = mtu_a, mtu_b
        self.servers = []

    def __enter__(self):
        try:
            ip("netns", "add", self.ns_a)
            ip("netns", "add", self.ns_b)
            ip("link", "add", self.if_a, "type", "veth", "peer", "name", self.if_b)
            for ns, dev, addr, mtu in ((self.ns_a, self.if_a, self.addr_a, self.mtu_a),
                                       (self.ns_b, self.if_b, self.addr_b, self.mtu_b)):
                ip("link", "set", dev, "netns", ns)
                ip("-n", ns, "link", "set", dev, "mtu", str(mtu))
                ip("-n", ns, "addr", "add", addr + "/24", "dev", dev)
                ip("-n", ns, "link", "set", dev, "up")
                ip("-n", ns, "link", "set", "lo", "up")
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc):
        for proc in self.servers:
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
            proc.stdout.close()
            proc.stderr.close()
        # Deleting a namespace deletes the veth end inside it, and so the pair.
        for ns in (self.ns_a, self.ns_b):
            ip("netns", "del", ns, check=False)
        ip("link", "del", self.if_a, check=False)
        return False

    def exec_args(self, ns, args):
        return ["ip", "netns", "exec", ns] + list(args)

    def serve(self, ns, bind):
        """Starts `net serve` in namespace NS; returns once it listens."""
        proc = subprocess.Popen(
            self.exec_args(ns, [e2e_common.BINARY, "net", "serve", "--bind", bind,
                                "--port", str(PORT)]),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.servers.append(proc)
        line = proc.stdout.readline().decode()
        if "listening on %s port %d" % (bind, PORT) not in line:
            raise AssertionError("net serve did not start: %r %r" %
                                 (line, proc.stderr.read(2000)))
        return proc

    def run(self, ns, args, env=None, timeout=60):
        full_env = dict(os.environ)
        full_env.update(env or {})
        proc = subprocess.run(self.exec_args(ns, [e2e_common.BINARY] + list(args)),
                              capture_output=True, timeout=timeout, env=full_env)
        return proc.returncode, proc.stdout.decode(), proc.stderr.decode()

    def probe(self, test, ns, host):
        rc, out, err = self.run(ns, ["net", "probe", host, "--port", str(PORT), "--json"] +
                                PROBE_FLAGS)
        test.assertEqual(rc, 0, "net probe failed: %s" % err)
        return json.loads(out)

    def python_in(self, ns, code):
        proc = subprocess.run(self.exec_args(ns, ["/usr/bin/python3", "-c", code]),
                              capture_output=True, timeout=30)
        return proc.returncode, proc.stdout.decode(), proc.stderr.decode()


def evidence(finding):
    return finding["evidence"]


class NetNamespaces(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        reason = skip_reason()
        if reason:
            raise unittest.SkipTest(reason)

    def check_measurements(self, report, pair):
        probe = report["probe"]
        self.assertEqual(probe["route"]["interface"], pair.if_a)
        self.assertEqual(probe["route"]["local_address"], pair.addr_a)
        self.assertEqual(probe["peer"]["interface"], pair.if_b)
        lat = probe["latency_us"]
        self.assertEqual(lat["samples"], 100)
        # A veth round trip through two namespaces: microseconds, not seconds.
        self.assertGreater(lat["p50"], 0)
        self.assertLessEqual(lat["p50"], lat["p99"])
        self.assertLess(lat["p50"], 50000)
        for kind, streams in (("single", 1), ("parallel", 2)):
            t = probe["throughput"][kind]
            self.assertEqual(t["streams"], streams)
            self.assertGreaterEqual(t["seconds"], 0.4)
            # veth moves at least 100 Mbit/s even on a loaded CI machine,
            # and nothing in software moves a terabit per second.
            self.assertGreater(t["bits_per_second"], 1e8, kind)
            self.assertLess(t["bits_per_second"], 1e12, kind)
            self.assertAlmostEqual(t["bits_per_second"], t["bytes"] * 8 / t["seconds"],
                                   delta=t["bits_per_second"] * 1e-6)

    def test_snapshot_reads_the_veths_statistics_as_ethtool_does(self):
        """The SIOCETHTOOL reader against `ethtool -S` on a real veth: the
        same counter names in the same order, and the same values for the
        counters that do not move while nothing is sent."""
        if shutil.which("ethtool") is None:
            e2e_common.skip_or_fail("ethtool is not installed (scripts/setup.sh installs it)")
        with VethPair(1500, 1500) as pair:
            rc, out, err = pair.run(pair.ns_a, ["snapshot", "--json", "--interval", "0.2"])
            self.assertEqual(rc, 0, err)
            readings = {r["interface"]: r for r in json.loads(out)["nic_stats"]}
            self.assertIn(pair.if_a, readings, sorted(readings))
            self.assertNotIn("lo", readings)  # lo's driver gives no statistics
            ours = readings[pair.if_a]
            self.assertEqual(ours["source"], "SIOCETHTOOL")
            shown = subprocess.run(pair.exec_args(pair.ns_a, ["ethtool", "-S", pair.if_a]),
                                   capture_output=True, text=True, check=True).stdout
            theirs = []
            for line in shown.splitlines()[1:]:
                name, _, value = line.strip().rpartition(":")
                theirs.append((name.strip(), int(value)))
            self.assertGreater(len(theirs), 0)
            self.assertEqual(list(ours["raw"]), [n for n, _ in theirs])
            self.assertEqual(ours["counters"], len(theirs))
            # veth's peer_ifindex names the other end: fixed for the pair.
            self.assertEqual(ours["raw"]["peer_ifindex"], dict(theirs)["peer_ifindex"])
            self.assertFalse(ours["has_pause"])  # veth sends no pause frames

    def test_equal_mtus_measure_and_find_nothing(self):
        with VethPair(1500, 1500) as pair:
            pair.serve(pair.ns_b, pair.addr_b)
            report = pair.probe(self, pair.ns_a, pair.addr_b)
            self.check_measurements(report, pair)
            mtu = report["probe"]["path_mtu"]
            self.assertTrue(mtu["measured"], mtu["note"])
            self.assertEqual(mtu["path_mtu"], 1500)
            self.assertEqual(mtu["largest_payload_bytes"], 1472)
            self.assertEqual(report["probe"]["route"]["mtu"], 1500)
            self.assertEqual(report["probe"]["peer"]["mtu"], 1500)
            self.assertIsNone(e2e_common.finding(report, "network.mtu_mismatch"))
            self.assertEqual(report["verdict"]["layer"], "none")
            # The text output says the same for people.
            rc, out, err = pair.run(pair.ns_a, ["net", "probe", pair.addr_b, "--port", str(PORT)]
                                    + PROBE_FLAGS)
            self.assertEqual(rc, 0, err)
            self.assertIn("path MTU:    1500", out)
            self.assertIn("via %s from %s, MTU 1500" % (pair.if_a, pair.addr_a), out)

    def test_jumbo_against_standard_mtu_is_found_from_both_sides(self):
        with VethPair(9000, 1500) as pair:
            pair.serve(pair.ns_b, pair.addr_b)
            pair.serve(pair.ns_a, pair.addr_a)
            # From the 9000 side: datagrams above 1500 vanish at the peer.
            report = pair.probe(self, pair.ns_a, pair.addr_b)
            f = e2e_common.finding(report, "network.mtu_mismatch")
            self.assertIsNotNone(f, report["findings"])
            self.assertEqual(f["severity"], "critical")
            self.assertEqual(evidence(f)["local_mtu_bytes"], 9000)
            # A veth takes frames up to its MTU plus a VLAN tag's 4 bytes
            # (the kernel's is_skb_forwardable), so the path measures 1500..1504.
            self.assertGreaterEqual(evidence(f)["path_mtu_bytes"], 1500)
            self.assertLessEqual(evidence(f)["path_mtu_bytes"], 1504)
            self.assertEqual(evidence(f)["peer_mtu_bytes"], 1500)
            self.assertEqual(evidence(f)["local_interface"], pair.if_a)
            self.assertIn("9000", f["summary"])
            self.assertIn("1500", f["summary"])
            self.assertEqual(report["verdict"]["finding"], "network.mtu_mismatch")
            # From the 1500 side: everything arrives, but the peer says 9000.
            back = pair.probe(self, pair.ns_b, pair.addr_a)
            f = e2e_common.finding(back, "network.mtu_mismatch")
            self.assertIsNotNone(f, back["findings"])
            self.assertEqual(f["severity"], "warning")
            self.assertEqual(evidence(f)["local_mtu_bytes"], 1500)
            self.assertEqual(evidence(f)["peer_mtu_bytes"], 9000)

    def test_doctor_in_a_namespace_names_a_missing_nccl_interface(self):
        with VethPair() as pair:
            env = {"NCCL_SOCKET_IFNAME": "eth9", "MASTER_ADDR": pair.addr_b,
                   "WORLD_SIZE": "2"}
            rc, out, err = pair.run(pair.ns_a, ["doctor", "--json", "--interval", "0.2"], env=env)
            self.assertEqual(rc, 0, err)
            report = json.loads(out)
            e2e_common.check_report(self, report)
            f = e2e_common.finding(report, "network.wrong_interface")
            self.assertIsNotNone(f, report["findings"])
            self.assertEqual(f["severity"], "critical")
            self.assertEqual(evidence(f)["value"], "eth9")
            self.assertIn("no interface starts with 'eth9' exists", f["summary"])
            # The route to MASTER_ADDR leaves through the namespace's veth.
            self.assertIn("the kernel routes to MASTER_ADDR=%s (%s) through %s"
                          % (pair.addr_b, pair.addr_b, pair.if_a), f["summary"])
            self.assertEqual(evidence(f)["route_" + pair.addr_b], pair.if_a)
            self.assertIn(pair.if_a, f["next"])
            # Told the right interface, doctor is quiet about it.
            env["NCCL_SOCKET_IFNAME"] = pair.if_a
            rc, out, err = pair.run(pair.ns_a, ["doctor", "--json", "--interval", "0.2"], env=env)
            self.assertEqual(rc, 0, err)
            self.assertIsNone(e2e_common.finding(json.loads(out), "network.wrong_interface"))

    # Datagrams larger than the peer's MTU: the 9000-byte veth end sends
    # them and the 1500-byte end drops them, counted as tx_dropped on the
    # sender's interface (and rx_dropped on the peer's) in /proc/net/dev.
    # The sender waits half a second first so the run's first counter
    # reading comes before the drops.
    SENDER = """
import socket, sys, time
count, size = int(sys.argv[1]), int(sys.argv[2])
time.sleep(0.5)
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
i = 0
while count < 0 or i < count:
    s.sendto(b"x" * size, (%r, 9))
    i += 1
    if count < 0:
        time.sleep(0.002)
time.sleep(0.5)
"""

    def test_port_drops_during_a_run_and_during_doctor(self):
        with VethPair(9000, 1500) as pair:
            sender = self.SENDER % pair.addr_b
            out_dir = tempfile.mkdtemp(prefix="ss-net5-")
            try:
                # run: 400 oversized datagrams, every one dropped.
                rc, out, err = pair.run(pair.ns_a, [
                    "run", "--json", "--interval", "0.2", "--out", out_dir + "/drops.db", "--",
                    "/usr/bin/python3", "-c", sender, "400", "8000"])
                self.assertEqual(rc, 0, err)
                report = json.loads(out)
                f = e2e_common.finding(report, "network.port_errors")
                self.assertIsNotNone(f, report["findings"])
                self.assertEqual(evidence(f)["interface"], pair.if_a)
                # The datagrams are the namespace's only traffic of that size.
                self.assertGreaterEqual(evidence(f)["tx_drops"], 400)
                self.assertLess(evidence(f)["tx_drops"], 420)
                self.assertEqual(evidence(f)["rx_errors"] + evidence(f)["tx_errors"], 0)
                self.assertEqual(f["severity"], "critical")  # all of them lost
                self.assertIn(pair.if_a, f["next"])
                # The same run with datagrams that fit: nothing dropped, no finding.
                rc, out, err = pair.run(pair.ns_a, [
                    "run", "--json", "--interval", "0.2", "--out", out_dir + "/fits.db", "--",
                    "/usr/bin/python3", "-c", sender, "400", "1000"])
                self.assertEqual(rc, 0, err)
                self.assertIsNone(e2e_common.finding(json.loads(out), "network.port_errors"))
            finally:
                shutil.rmtree(out_dir, ignore_errors=True)
            # doctor: the drops grow while it samples (a sender in the background).
            background = subprocess.Popen(
                pair.exec_args(pair.ns_a, ["/usr/bin/python3", "-c", sender, "-1", "8000"]),
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            try:
                time.sleep(0.7)
                rc, out, err = pair.run(pair.ns_a, ["doctor", "--json", "--interval", "0.5"])
            finally:
                background.kill()
                background.wait()
            self.assertEqual(rc, 0, err)
            report = json.loads(out)
            f = e2e_common.finding(report, "network.port_errors")
            self.assertIsNotNone(f, report["findings"])
            self.assertEqual(evidence(f)["interface"], pair.if_a)
            self.assertGreaterEqual(evidence(f)["tx_drops"], 10)
            self.assertGreater(evidence(f)["window_seconds"], 0.3)

    def test_server_survives_garbage_and_vanishing_peers(self):
        with VethPair() as pair:
            server = pair.serve(pair.ns_b, pair.addr_b)
            attack = """
import socket, struct
addr = (%r, %d)
s = socket.create_connection(addr, timeout=5)
s.sendall(b"\\x00garbage, not a stallscope peer\\r\\n" * 4)
reply = s.recv(512)
assert reply[:4] == b"SSNP" and reply[5] == 8, reply  # an Error message
print("error:", reply[10:].decode())
s.close()
# A header that promises a body, then gone.
s = socket.create_connection(addr, timeout=5)
s.sendall(b"SSNP\\x01\\x01\\x00\\x08\\x02")
s.close()
# A sink stream cut by a reset in the middle.
s = socket.create_connection(addr, timeout=5)
s.sendall(b"SSNP\\x01\\x01\\x00\\x08" + struct.pack(">BBHI", 2, 0, 0, 5000))
assert s.recv(64)[5] == 2  # Welcome
s.sendall(b"x" * (1 << 20))
s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
s.close()
# UDP junk and a datagram too short for its header.
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
u.sendto(b"\\xff" * 3000, addr)
u.sendto(b"SSNP\\x01\\x06\\x00\\x08", addr)
u.settimeout(0.5)
try:
    u.recv(100)
    raise SystemExit("the server answered junk")
except socket.timeout:
    print("udp junk ignored")
""" % (pair.addr_b, PORT)
            rc, out, err = pair.python_in(pair.ns_a, attack)
            self.assertEqual(rc, 0, "attack script: %s %s" % (out, err))
            self.assertIn("bad magic", out)
            self.assertIn("udp junk ignored", out)
            self.assertIsNone(server.poll(), "net serve died")
            report = pair.probe(self, pair.ns_a, pair.addr_b)
            self.check_measurements(report, pair)
            self.assertTrue(report["probe"]["path_mtu"]["measured"])
            self.assertIsNone(server.poll(), "net serve died")

    def test_bad_usage_and_no_server(self):
        with VethPair() as pair:
            rc, out, err = pair.run(pair.ns_a, ["net", "probe", pair.addr_b, "--port", str(PORT)]
                                    + PROBE_FLAGS)
            self.assertEqual(rc, 1)
            self.assertIn("%s port %d: cannot connect" % (pair.addr_b, PORT), err)
            self.assertEqual(out, "")
            rc, out, err = pair.run(pair.ns_a, ["net", "serve", "--bind", "10.255.255.1",
                                                "--port", str(PORT)])
            self.assertEqual(rc, 1)
            self.assertIn("bind TCP 10.255.255.1 port %d" % PORT, err)
            rc, _, err = pair.run(pair.ns_a, ["net", "probe", pair.addr_b, "--streams", "0"])
            self.assertEqual(rc, 2)
            self.assertIn("--streams 0", err)


if __name__ == "__main__":
    e2e_common.main()

"""`net serve` is no amplifier: its caps, --allow and UDP limits, met as a
client (or an abuser) would meet them.

Runs the real server on loopback, where 127.0.0.1 and 127.0.0.2 are two
source addresses of one host, and talks to it with the real `net probe`
and with raw sockets speaking the protocol of docs/net-protocol.md: a
stream that asks for an hour is cut at --max-seconds and told so, one past
--max-bytes likewise; 10,000 UDP probes from one source get no more
answers than --udp-rate allows, and no answer is larger than its probe;
an address outside --allow is refused (TCP with a reason, UDP with
silence) and logged once; `net probe --streams 4` still works.

Usage: net_serve_limits.py PATH_TO_STALLSCOPE
"""
import os
import select
import socket
import struct
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_common as common  # noqa: E402

HELLO, WELCOME, MTU_PROBE, MTU_ACK, ERROR = 1, 2, 6, 7, 8
SINK = 2
MIN_PROBE = 64  # kMinMtuProbeBytes


def message(kind, body):
    return b"SSNP" + struct.pack(">BBH", 1, kind, len(body)) + body


def hello_sink(duration_ms):
    return message(HELLO, struct.pack(">BBHI", SINK, 0, 0, duration_ms))


def mtu_probe(sequence, size):
    datagram = message(MTU_PROBE, struct.pack(">II", sequence, 77))
    return datagram + b"\0" * max(0, size - len(datagram))


def read_message(sock, timeout=5.0):
    """(type, body) of the next message; None when the peer closed first."""
    sock.settimeout(timeout)
    data = b""
    while len(data) < 8 or len(data) < 8 + struct.unpack(">H", data[6:8])[0]:
        try:
            chunk = sock.recv(4096)
        except ConnectionResetError:
            return None
        if not chunk:
            return None
        data += chunk
    return data[5], data[8:8 + struct.unpack(">H", data[6:8])[0]]


def error_text(body):
    return body[2:2 + struct.unpack(">H", body[:2])[0]].decode()


class NetServeLimits(unittest.TestCase):
    def serve(self, *flags, bind="127.0.0.1"):
        proc = subprocess.Popen([common.BINARY, "net", "serve", "--bind", bind, "--port", "0"] +
                                list(flags), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True)
        self.addCleanup(self.stop, proc)
        line = proc.stdout.readline()
        self.assertIn("listening on", line, proc.stderr.read() if proc.poll() is not None else "")
        return proc, int(line.split(" port ")[1].split()[0])

    def stop(self, proc):
        if proc.poll() is None:
            proc.terminate()
            proc.wait(10)
        proc.stdout.close()
        proc.stderr.close()

    def stop_and_log(self, proc):
        proc.terminate()
        _, err = proc.communicate(timeout=10)
        return err

    def stream_until_cut(self, port, duration_ms):
        """Streams as fast as it can until the server speaks; (seconds, text)."""
        start = time.monotonic()
        with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
            s.sendall(hello_sink(duration_ms))
            kind, _ = read_message(s)
            self.assertEqual(kind, WELCOME)
            chunk = b"x" * 65536
            s.setblocking(False)
            while time.monotonic() - start < 30:
                readable, writable, _ = select.select([s], [s], [], 1.0)
                if readable:
                    break
                if writable:
                    try:
                        s.send(chunk)
                    except BlockingIOError:
                        pass
            s.setblocking(True)
            reply = read_message(s)
            seconds = time.monotonic() - start
        self.assertIsNotNone(reply, "the server closed without saying why")
        self.assertEqual(reply[0], ERROR)
        return seconds, error_text(reply[1])

    def test_a_stream_asking_for_an_hour_is_cut_at_max_seconds(self):
        proc, port = self.serve("--max-seconds", "2")
        seconds, text = self.stream_until_cut(port, 3600 * 1000)
        self.assertIn("the server's cap of 2 s (--max-seconds; 3600 s asked)", text)
        self.assertGreaterEqual(seconds, 2.0)
        self.assertLess(seconds, 9.0)  # well before the 10 s idle timeout, let alone an hour
        self.assertIn("sink stream cut at the server's cap of 2 s", self.stop_and_log(proc))

    def test_a_stream_past_max_bytes_is_cut(self):
        proc, port = self.serve("--max-bytes", "1000000")
        _, text = self.stream_until_cut(port, 30 * 1000)
        self.assertIn("--max-bytes 1000000", text)

    def test_net_probe_asking_more_than_max_seconds_is_told_before_streaming(self):
        _, port = self.serve("--max-seconds", "2")
        rc, _, err, _ = common.run(["net", "probe", "127.0.0.1", "--port", str(port),
                                    "--duration", "3", "--pings", "10"], timeout=60)
        self.assertEqual(rc, 2, err)
        self.assertIn("at most 2 s (its --max-seconds)", err)

    def test_udp_answers_are_rate_limited_and_never_larger_than_the_probe(self):
        proc, port = self.serve("--udp-rate", "20")
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect(("127.0.0.1", port))
            s.settimeout(0.5)
            s.send(mtu_probe(1, 16))  # a bare probe, smaller than its answer: none
            with self.assertRaises(socket.timeout):
                s.recv(2048)
            s.send(mtu_probe(2, MIN_PROBE))
            self.assertLessEqual(len(s.recv(2048)), MIN_PROBE)
            start = time.monotonic()
            for i in range(10000):
                s.send(mtu_probe(100 + i, MIN_PROBE))
            answers, largest = 0, 0
            s.settimeout(0.5)
            while True:
                try:
                    largest = max(largest, len(s.recv(2048)))
                    answers += 1
                except socket.timeout:
                    break
            seconds = time.monotonic() - start
        # The burst left after the single probe above, then 20 a second.
        self.assertGreater(answers, 0)
        self.assertLessEqual(answers, 20 + 20 * seconds + 1)
        self.assertLessEqual(largest, MIN_PROBE)
        log = self.stop_and_log(proc)
        self.assertIn("over --udp-rate 20 answers a second", log)
        self.assertEqual(log.count("over --udp-rate 20 answers a second"), 1, log)

    def test_an_address_outside_allow_is_refused(self):
        proc, port = self.serve("--allow", "127.0.0.2/32", bind="0.0.0.0")
        # net probe from 127.0.0.1: refused, and it says why.
        for _ in range(2):
            rc, _, err, _ = common.run(["net", "probe", "127.0.0.1", "--port", str(port)],
                                       timeout=30)
            self.assertEqual(rc, 1, err)
            self.assertIn("127.0.0.1 is not in this server's --allow list", err)
        # UDP from 127.0.0.1: no answer at all.
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as u:
            u.connect(("127.0.0.1", port))
            u.settimeout(0.5)
            u.send(mtu_probe(1, MIN_PROBE))
            with self.assertRaises((socket.timeout, ConnectionRefusedError)):
                u.recv(2048)
        # From 127.0.0.2, inside the list: welcomed, and its probe answered.
        with socket.socket() as s:
            s.bind(("127.0.0.2", 0))
            s.settimeout(5)
            s.connect(("127.0.0.1", port))
            s.sendall(hello_sink(100))
            self.assertEqual(read_message(s)[0], WELCOME)
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as u:
            u.bind(("127.0.0.2", 0))
            u.connect(("127.0.0.1", port))
            u.settimeout(2)
            u.send(mtu_probe(1, MIN_PROBE))
            self.assertEqual(u.recv(2048)[5], MTU_ACK)
        log = self.stop_and_log(proc)
        self.assertEqual(log.count("127.0.0.1: not in --allow, connections refused"), 1, log)
        self.assertEqual(log.count("127.0.0.1: not in --allow, datagrams refused"), 1, log)
        self.assertIn("refused 2 connections and 1 datagrams from outside --allow", log)

    def test_bad_allow_is_a_usage_error_naming_the_entry(self):
        rc, _, err, _ = common.run(["net", "serve", "--port", "0", "--allow",
                                    "127.0.0.1,10.0.0.0/40"], timeout=10)
        self.assertEqual(rc, 2)
        self.assertIn("--allow 10.0.0.0/40", err)

    def test_net_probe_with_four_streams_still_works(self):
        _, port = self.serve("--allow", "127.0.0.0/8,::1", "--max-seconds", "5")
        report = common.run_json(self, ["net", "probe", "127.0.0.1", "--port", str(port), "--json",
                                        "--duration", "0.5", "--streams", "4", "--pings", "50"])
        probe = report["probe"]
        self.assertGreater(probe["throughput"]["parallel"]["bytes"], 0, probe)
        self.assertEqual(probe["throughput"]["parallel"]["streams"], 4, probe)
        self.assertTrue(probe["path_mtu"]["measured"], probe)


if __name__ == "__main__":
    common.main()

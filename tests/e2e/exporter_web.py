"""End-to-end: the exporter's HTTP side, as a scraper and an attacker meet it.

- --web-config in the exporter-toolkit's format: TLS with a certificate this
  test makes with openssl, basic auth with a hash `htpasswd -B` (Debian's
  apache2-utils) made; curl gets 200 with the right password, 401 with a
  wrong one or none, and plain HTTP to the TLS port gets no metrics. A bad
  file is refused naming file and line.
- Hostile requests get the status RFC 9110/9112 gives them (431, 413, 405,
  400) or are closed, never a crash or a stall: a 1 MB header line, a 10 MB
  body, HTTP/0.9, pipelining, other methods, 10,000 requests on one
  keep-alive connection.
"""
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_common as common  # noqa: E402


def start_exporter(tmp, extra):
    """Starts the exporter on a free loopback port; returns (proc, url)."""
    proc = subprocess.Popen(
        [common.BINARY, "exporter", "--listen", "127.0.0.1:0", "--interval", "1",
         "--hook-socket", os.path.join(tmp, "hook-%d.sock" % len(os.listdir(tmp)))] + extra,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    found = {}
    ready = threading.Event()

    def drain():
        for line in proc.stderr:
            if "serving " in line and "url" not in found:
                found["url"] = line.split("serving ", 1)[1].split(" ", 1)[0]
                ready.set()
    threading.Thread(target=drain, daemon=True).start()
    if not ready.wait(10):
        proc.kill()
        raise AssertionError("the exporter did not start")
    return proc, found["url"]


def stop(proc):
    proc.terminate()
    try:
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()


def curl(args):
    """curl's HTTP status (000 when there was no HTTP answer) and exit code."""
    p = subprocess.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "10"]
                       + args, capture_output=True, text=True, timeout=30)
    return p.stdout.strip(), p.returncode


class WebConfig(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        for tool in ("curl", "openssl", "htpasswd"):
            if shutil.which(tool) is None:
                raise unittest.SkipTest("%s is missing (scripts/setup.sh --test installs it)" % tool)
        cls.tmp = tempfile.mkdtemp(prefix="stallscope-exporter-web-")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                        "-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1",
                        "-keyout", os.path.join(cls.tmp, "server.key"),
                        "-out", os.path.join(cls.tmp, "server.crt")],
                       check=True, capture_output=True, timeout=60)
        line = subprocess.run(["htpasswd", "-nbB", "-C", "5", "alice", "right horse"],
                              check=True, capture_output=True, text=True).stdout.strip()
        cls.config = os.path.join(cls.tmp, "web.yml")
        with open(cls.config, "w") as f:
            f.write("# as node_exporter reads it\ntls_server_config:\n"
                    "  cert_file: server.crt\n  key_file: server.key\n"
                    "basic_auth_users:\n  alice: %s\n" % line.split(":", 1)[1])
        cls.proc, cls.url = start_exporter(cls.tmp, ["--web-config", cls.config])
        cls.ca = ["--cacert", os.path.join(cls.tmp, "server.crt")]

    @classmethod
    def tearDownClass(cls):
        stop(cls.proc)
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_tls_and_basic_auth(self):
        self.assertTrue(self.url.startswith("https://127.0.0.1:"), self.url)
        self.assertEqual(curl(self.ca + ["-u", "alice:right horse", self.url])[0], "200")
        self.assertEqual(curl(self.ca + ["-u", "alice:wrong horse", self.url])[0], "401")
        self.assertEqual(curl(self.ca + ["-u", "bob:right horse", self.url])[0], "401")
        self.assertEqual(curl(self.ca + [self.url])[0], "401")
        # Plain HTTP to the TLS port: no metrics.
        code, rc = curl(["-u", "alice:right horse", self.url.replace("https://", "http://")])
        self.assertNotEqual(code, "200")
        self.assertNotEqual(rc, 0)
        self.assertIsNone(self.proc.poll())

    def test_bad_web_config_names_file_and_line(self):
        bad = os.path.join(self.tmp, "bad.yml")
        with open(bad, "w") as f:
            f.write("basic_auth_users:\n  alice: not-a-hash\n")
        rc, _, err, _ = common.run(["exporter", "--listen", "127.0.0.1:0", "--web-config", bad],
                                   timeout=10)
        self.assertNotEqual(rc, 0)
        self.assertIn("--web-config %s:2: " % bad, err)
        rc, _, err, _ = common.run(["exporter", "--web-config", os.path.join(self.tmp, "none.yml")],
                                   timeout=10)
        self.assertNotEqual(rc, 0)
        self.assertIn("none.yml", err)


def exchange(port, data, wait=10.0):
    """Sends bytes (ignoring a reset once the server answered), returns all it answers."""
    with socket.create_connection(("127.0.0.1", port), timeout=wait) as s:
        try:
            s.sendall(data)
        except (BrokenPipeError, ConnectionResetError):
            pass
        out = b""
        while True:
            try:
                chunk = s.recv(65536)
            except ConnectionResetError:
                return out
            if not chunk:
                return out
            out += chunk


class HostileRequests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="stallscope-exporter-hostile-")
        cls.proc, url = start_exporter(cls.tmp, [])
        cls.port = int(url.rsplit(":", 1)[1].split("/")[0])

    @classmethod
    def tearDownClass(cls):
        stop(cls.proc)
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def assertStatusOrClosed(self, answer, status):
        if answer:
            self.assertTrue(answer.startswith(b"HTTP/1.1 %d " % status), answer[:80])

    def tearDown(self):
        # After each attack a scrape still works.
        out = exchange(self.port, b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        self.assertTrue(out.startswith(b"HTTP/1.1 200 "), out[:80])
        self.assertIsNone(self.proc.poll(), "the exporter died")

    def test_a_1_mb_header_line_is_431(self):
        out = exchange(self.port, b"GET /metrics HTTP/1.1\r\nX: " + b"a" * (1 << 20) + b"\r\n\r\n")
        self.assertStatusOrClosed(out, 431)
        self.assertTrue(out, "closed without a 431")

    def test_a_10_mb_body_is_413(self):
        out = exchange(self.port, b"GET /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 10485760"
                       b"\r\n\r\n" + b"b" * (10 << 20))
        self.assertStatusOrClosed(out, 413)

    def test_other_methods_are_405_with_allow(self):
        for method in (b"POST", b"PUT", b"DELETE", b"OPTIONS", b"PATCH"):
            out = exchange(self.port, method + b" /metrics HTTP/1.1\r\nHost: x\r\n"
                           b"Connection: close\r\n\r\n")
            self.assertTrue(out.startswith(b"HTTP/1.1 405 "), out[:80])
            self.assertIn(b"\r\nAllow: GET, HEAD\r\n", out)

    def test_http_0_9_and_garbage_are_400_or_closed(self):
        for data in (b"GET /metrics\r\n\r\n", b"\x16\x03\x01\x02\x00\x01\x00\r\n\r\n",
                     b"GET /metrics HTTP/1.1\r\nNo colon\r\n\r\n"):
            out = exchange(self.port, data)
            if out:
                self.assertRegex(out[:12], rb"^HTTP/1\.[01] [45]\d\d", data)

    def test_pipelined_requests_are_answered_in_order(self):
        out = exchange(self.port, b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"
                       b"GET /nope HTTP/1.1\r\nHost: x\r\n\r\n"
                       b"HEAD /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        statuses = re.findall(rb"HTTP/1\.1 (\d\d\d) ", out)
        self.assertEqual(statuses, [b"200", b"404", b"200"])

    def test_10000_requests_on_one_keep_alive_connection(self):
        request = b"GET /nope HTTP/1.1\r\nHost: x\r\n\r\n"
        marker = b"HTTP/1.1 404 "
        answered = 0
        with socket.create_connection(("127.0.0.1", self.port), timeout=10) as s:
            pending = b""
            for batch in range(100):
                s.sendall(request * 100)
                while answered < (batch + 1) * 100:
                    chunk = s.recv(65536)
                    self.assertTrue(chunk, "closed after %d answers" % answered)
                    pending += chunk
                    found = pending.count(marker)
                    answered += found
                    if found:
                        pending = pending[pending.rfind(marker) + len(marker):]
                    pending = pending[-(len(marker) - 1):]
        self.assertEqual(answered, 10000)


if __name__ == "__main__":
    common.main()

"""End-to-end: `stallscope exporter` serves Prometheus /metrics.

Starts the real exporter on a free loopback port with its hook socket in a
temporary folder, and checks what a user would meet: the body passes
`promtool check metrics` with no problems; host figures agree with
/proc/meminfo; a job using python/stallscope with STALLSCOPE_SOCKET set
appears as per-rank series; a real Prometheus (Debian's /usr/bin/prometheus)
scrapes it every second and answers a query for its series; garbage
requests, wrong methods and paths, oversized heads, idle clients and many
open connections get their answer and never stop the server; a
bad --listen names the flag and a non-loopback one warns.
"""
import http.client
import json
import os
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_common as common  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PYTHON_DIR = os.path.join(ROOT, "python")

# A job as a user writes one: a loader whose batches take 20 ms to arrive,
# 10 ms of "compute" per step, 30 steps.
JOB = r"""
import time, stallscope
def batches():
    for i in range(30):
        time.sleep(0.02)
        yield i
for epoch in range(1):
    stallscope.epoch(epoch)
    for b in stallscope.loader(batches()):
        time.sleep(0.01)
"""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def sample_value(body, prefix):
    """The value of the first sample line starting with prefix."""
    for line in body.splitlines():
        if line.startswith(prefix):
            return float(line.rsplit(" ", 1)[1])
    return None


def raw_request(port, data, wait=5.0):
    """Sends bytes, returns everything the server answers before closing."""
    with socket.create_connection(("127.0.0.1", port), timeout=wait) as s:
        s.sendall(data)
        out = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                return out
            out += chunk


class Exporter(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="stallscope-exporter-e2e-")
        cls.sock = os.path.join(cls.tmp, "hook.sock")
        cls.proc = subprocess.Popen(
            [common.BINARY, "exporter", "--listen", "127.0.0.1:0", "--interval", "0.5",
             "--hook-socket", cls.sock],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        cls.stderr = []
        ready = threading.Event()

        def drain():
            for line in cls.proc.stderr:
                cls.stderr.append(line)
                if "serving http://" in line:
                    cls.port = int(line.split("serving http://", 1)[1].split("/")[0].rsplit(":", 1)[1])
                    ready.set()
        threading.Thread(target=drain, daemon=True).start()
        if not ready.wait(10):
            cls.proc.kill()
            raise AssertionError("exporter did not start: %s" % "".join(cls.stderr))
        # Two ranks of one job report through the hook, as the docs say: with
        # the environment `hook-env` prints for the exporter's socket.
        hook_env = subprocess.run([common.BINARY, "hook-env", "--hook-socket", cls.sock],
                                  capture_output=True, text=True, check=True).stdout
        cls.hook_env_lines = hook_env.splitlines()
        env = dict(os.environ, **dict(line.split("=", 1) for line in cls.hook_env_lines))
        assert env["PYTHONPATH"] == PYTHON_DIR, env["PYTHONPATH"]
        env["STALLSCOPE_JOB"] = "e2e-job"
        jobs = [subprocess.Popen(["/usr/bin/python3", "-c", JOB], env=dict(env, RANK=str(r)))
                for r in (0, 1)]
        for j in jobs:
            assert j.wait(30) == 0
        cls.hostname = socket.gethostname()

    @classmethod
    def tearDownClass(cls):
        cls.proc.terminate()
        try:
            cls.proc.wait(5)
            cls.proc.stderr.close()
        finally:
            if cls.proc.poll() is None:
                cls.proc.kill()
            shutil.rmtree(cls.tmp, ignore_errors=True)

    def fetch(self, path="/metrics", method="GET"):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        c.request(method, path)
        r = c.getresponse()
        body = r.read().decode()
        c.close()
        return r.status, r.getheader("Content-Type"), body

    def test_start_prints_the_hook_environment(self):
        # The exporter prints at start what `hook-env --hook-socket` prints.
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not all(
                line + "\n" in self.stderr for line in self.hook_env_lines):
            time.sleep(0.05)
        self.assertIn("STALLSCOPE_SOCKET=" + self.sock, self.hook_env_lines)
        for line in self.hook_env_lines:
            self.assertIn(line + "\n", self.stderr)

    def test_metrics_pass_promtool_and_match_proc(self):
        status, ctype, body = self.fetch()
        self.assertEqual(status, 200)
        self.assertIn("version=0.0.4", ctype)
        check = subprocess.run(["/usr/bin/promtool", "check", "metrics"], input=body,
                               capture_output=True, text=True, timeout=30)
        self.assertEqual(check.returncode, 0, check.stdout + check.stderr)
        self.assertEqual((check.stdout + check.stderr).strip(), "",
                         "promtool found problems: " + check.stdout + check.stderr)
        mem_total = common.meminfo()["MemTotal"]
        self.assertEqual(sample_value(body, "stallscope_memory_total_bytes "), mem_total)
        for family in ("stallscope_memory_available_bytes", "stallscope_swap_used_bytes",
                       "stallscope_swap_in_bytes_total", "stallscope_network_receive_bytes_total",
                       "stallscope_network_mtu_bytes", "stallscope_exporter_http_requests_total"):
            self.assertIn("# TYPE %s " % family, body)
        self.assertIn('stallscope_network_mtu_bytes{interface="lo"} 65536', body)
        # Disks: counters agree with /proc/diskstats, and after an interval
        # the iostat gauges exist. The counters are read at the scrape, so
        # diskstats read just before and just after it bracket them (other
        # work on the host moves them meanwhile). Scrapes within 100 ms of
        # each other share one read of the host: this one comes later.
        def diskstats():
            with open("/proc/diskstats") as f:
                return [l.split() for l in f
                        if not l.split()[2].startswith(("loop", "ram", "zram"))]
        disks = diskstats()
        if disks:
            time.sleep(0.15)
            name, before = disks[0][2], int(disks[0][3])
            _, _, body = self.fetch()
            after = next(int(d[3]) for d in diskstats() if d[2] == name)
            got = sample_value(body, 'stallscope_disk_reads_completed_total{device="%s"}' % name)
            self.assertIsNotNone(got, body)
            self.assertGreaterEqual(got, before)
            self.assertLessEqual(got, after)
            time.sleep(1.1)
            _, _, body = self.fetch()
            self.assertIn('stallscope_disk_utilization_ratio{device="%s"}' % name, body)

    def test_hook_job_appears_per_rank(self):
        _, _, body = self.fetch()
        for rank in (0, 1):
            labels = '{job_name="e2e-job",rank="%d",host="%s",uid="%d"}' % (
                rank, self.hostname, os.geteuid())
            self.assertEqual(sample_value(body, "stallscope_job_steps_total" + labels), 30, body)
            wait = sample_value(body, "stallscope_job_data_wait_seconds_total" + labels)
            self.assertGreater(wait, 0.45)     # 30 x 20 ms
            self.assertLess(wait, 3.0)
            step_sum = sample_value(body, "stallscope_job_step_seconds_sum" + labels)
            self.assertGreater(step_sum, wait + 0.25)  # plus 30 x 10 ms of compute
            self.assertEqual(sample_value(body, "stallscope_job_step_seconds_count" + labels), 30)
            self.assertEqual(sample_value(body, "stallscope_job_epoch" + labels), 0)

    def test_prometheus_scrapes_and_answers_queries(self):
        prom_port = free_port()
        data = os.path.join(self.tmp, "tsdb")
        config = os.path.join(self.tmp, "prometheus.yml")
        with open(config, "w") as f:
            f.write("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
                    "scrape_configs:\n  - job_name: stallscope\n    static_configs:\n"
                    "      - targets: ['127.0.0.1:%d']\n" % self.port)
        prom = subprocess.Popen(
            ["/usr/bin/prometheus", "--config.file", config, "--storage.tsdb.path", data,
             "--web.listen-address", "127.0.0.1:%d" % prom_port],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            def query(q):
                url = "http://127.0.0.1:%d/api/v1/query?query=%s" % (prom_port, urllib.parse.quote(q))
                try:
                    with urllib.request.urlopen(url, timeout=2) as r:
                        return json.load(r)["data"]["result"]
                except OSError:
                    return []
            deadline = time.monotonic() + 20
            memory = jobs = []
            while time.monotonic() < deadline and not (memory and jobs):
                memory = query("stallscope_memory_total_bytes")
                jobs = query('stallscope_job_steps_total{job_name="e2e-job"}')
                time.sleep(0.5)
            self.assertTrue(memory, "Prometheus never stored stallscope_memory_total_bytes")
            self.assertEqual(float(memory[0]["value"][1]), common.meminfo()["MemTotal"])
            self.assertEqual(memory[0]["metric"]["job"], "stallscope")
            self.assertEqual(sorted(s["metric"]["rank"] for s in jobs), ["0", "1"])
            up = query('up{job="stallscope"}')
            self.assertEqual(up[0]["value"][1], "1")
        finally:
            prom.terminate()
            prom.wait(10)

    def test_bad_and_slow_clients_do_not_stop_it(self):
        # Garbage (a TLS hello): a 400 or closed without an answer.
        garbage = raw_request(self.port, b"\x16\x03\x01\x02\x00\x01\x00\r\n\r\n")
        self.assertTrue(garbage == b"" or garbage.startswith(b"HTTP/1.1 400 "), garbage[:80])
        self.assertTrue(raw_request(self.port, b"POST /metrics HTTP/1.1\r\nConnection: close\r\n\r\n").startswith(
            b"HTTP/1.1 405 "))
        self.assertTrue(raw_request(self.port, b"GET /nope HTTP/1.1\r\nConnection: close\r\n\r\n").startswith(
            b"HTTP/1.1 404 "))
        self.assertTrue(raw_request(
            self.port, b"GET /metrics HTTP/1.1\r\nX: " + b"a" * 20000 + b"\r\n\r\n").startswith(
                b"HTTP/1.1 431 "))
        self.assertTrue(raw_request(self.port, b"GET /metrics HTTP/9.9\r\n\r\n").startswith(
            b"HTTP/1.1 505 "))
        # A client that starts a head and goes quiet is cut after 5 s idle;
        # scrapes and many more open connections go on meanwhile.
        slow = socket.create_connection(("127.0.0.1", self.port))
        slow.sendall(b"GET /metrics HTTP/1.1\r\n")
        start = time.monotonic()
        idle = [socket.create_connection(("127.0.0.1", self.port)) for _ in range(70)]
        status, _, body = self.fetch()
        self.assertEqual(status, 200)
        self.assertIn("stallscope_memory_total_bytes", body)
        for s in idle:
            s.close()
        slow.settimeout(10)
        try:
            rest = slow.recv(100)
        except OSError:
            rest = b""
        cut = time.monotonic() - start
        self.assertEqual(rest, b"")
        self.assertLess(cut, 8, "the idle client was not cut off at the idle timeout")
        self.assertGreater(cut, 3)
        slow.close()
        self.assertIsNone(self.proc.poll(), "the exporter died: %s" % "".join(self.stderr))
        _, _, body = self.fetch()
        self.assertGreaterEqual(sample_value(body, "stallscope_exporter_http_bad_requests_total "), 2)
        self.assertIsNotNone(
            sample_value(body, "stallscope_exporter_http_refused_connections_total "))
        self.assertEqual(self.fetch(method="HEAD")[0], 200)

    def test_bad_listen_names_the_flag_and_open_listen_warns(self):
        rc, _, err, _ = common.run(["exporter", "--listen", "nowhere"], timeout=10)
        self.assertEqual(rc, 2)
        self.assertIn("--listen nowhere", err)
        rc, _, err, _ = common.run(["exporter", "--interval", "0"], timeout=10)
        self.assertEqual(rc, 2)
        self.assertIn("--interval", err)
        # The hook socket is taken by the running exporter: refused, not stolen.
        rc, _, err, _ = common.run(["exporter", "--listen", "127.0.0.1:0", "--hook-socket",
                                    self.sock], timeout=10)
        self.assertEqual(rc, 1)
        self.assertIn("another receiver", err)
        p = subprocess.Popen([common.BINARY, "exporter", "--listen", "0.0.0.0:0", "--hook-socket",
                              os.path.join(self.tmp, "other.sock")],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            first = p.stderr.readline()
            self.assertIn("warning: --listen 0.0.0.0:0 is not a loopback address", first)
        finally:
            p.terminate()
            p.wait(5)
            p.stderr.close()
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "other.sock")))


class HookSocketDirectory(unittest.TestCase):
    """The hook socket's directory is refused unless only the exporter's user can change it."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="stallscope-hookdir-e2e-")
        os.chmod(self.tmp, 0o755)

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def refused(self, directory):
        rc, _, err, _ = common.run(["exporter", "--listen", "127.0.0.1:0", "--hook-socket",
                                    os.path.join(directory, "hook.sock")], timeout=10)
        self.assertEqual(rc, 1, err)
        self.assertIn(directory + ": ", err)
        self.assertFalse(os.path.exists(os.path.join(directory, "hook.sock")))
        return err

    def test_planted_symlink_is_refused(self):
        target = os.path.join(self.tmp, "elsewhere")
        os.mkdir(target, 0o755)
        link = os.path.join(self.tmp, "planted")
        os.symlink(target, link)
        err = self.refused(link)
        self.assertIn("a symlink owned by uid %d" % os.geteuid(), err)
        self.assertFalse(os.path.exists(os.path.join(target, "hook.sock")))

    def test_directory_of_another_user_or_writable_by_others_is_refused(self):
        writable = os.path.join(self.tmp, "writable")
        os.mkdir(writable)
        os.chmod(writable, 0o777)
        self.assertIn("a directory owned by uid %d with mode 0777" % os.geteuid(),
                      self.refused(writable))
        if os.geteuid() != 0:
            self.skipTest("chown to another uid needs root")
        other = os.path.join(self.tmp, "other")
        os.mkdir(other, 0o755)
        os.chown(other, 65534, 65534)
        err = self.refused(other)
        self.assertIn("a directory owned by uid 65534 with mode 0755", err)
        self.assertIn("owned by uid %d (the exporter's user)" % os.geteuid(), err)

    def test_sticky_directory_of_root_or_the_user_is_accepted(self):
        # /tmp's shape: sticky and world-writable; nobody else can remove the socket.
        sticky = os.path.join(self.tmp, "sticky")
        os.mkdir(sticky)
        os.chmod(sticky, 0o1777)
        self.assert_serves(os.path.join(sticky, "hook.sock"))
        if os.geteuid() != 0:
            self.skipTest("chown to another uid needs root")
        os.chown(sticky, 65534, 65534)
        err = self.refused(sticky)
        self.assertIn("a directory owned by uid 65534 with mode 1777", err)
        self.assertIn("a sticky directory such as /tmp owned by root", err)

    def assert_serves(self, sock):
        p = subprocess.Popen([common.BINARY, "exporter", "--listen", "127.0.0.1:0",
                              "--hook-socket", sock],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            line = p.stderr.readline()
            while line and "serving http://" not in line:
                line = p.stderr.readline()
            self.assertIn("serving http://", line)
            self.assertTrue(stat.S_ISSOCK(os.lstat(sock).st_mode))
        finally:
            p.terminate()
            p.wait(5)
            p.stderr.close()

    def test_good_directory_is_used_and_stays_enterable(self):
        good = os.path.join(self.tmp, "good")  # created by the exporter, 0755
        sock = os.path.join(good, "hook.sock")
        p = subprocess.Popen([common.BINARY, "exporter", "--listen", "127.0.0.1:0",
                              "--hook-socket", sock],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            deadline = time.monotonic() + 10
            while not os.path.exists(sock) and time.monotonic() < deadline:
                self.assertIsNone(p.poll(), p.stderr.read() if p.poll() is not None else "")
                time.sleep(0.05)
            self.assertTrue(os.path.exists(sock))
            self.assertEqual(os.stat(good).st_mode & 0o777, 0o755)
            self.assertEqual(os.stat(good).st_uid, os.geteuid())
        finally:
            p.terminate()
            p.wait(5)
            p.stdout.close()
            p.stderr.close()


class HookEnvDefaultSocket(unittest.TestCase):
    """`hook-env` gives a job the socket its user's exporter (or the system's) binds."""

    def test_a_missing_socket_is_warned_about(self):
        missing = "/tmp/stallscope-no-such-dir-%d/hook.sock" % os.getpid()
        rc, out, err, _ = common.run(["hook-env", "--hook-socket", missing], timeout=10)
        self.assertEqual(rc, 0, err)
        self.assertIn("STALLSCOPE_SOCKET=" + missing, out)
        self.assertIn("warning: no socket at " + missing, err)

    def test_a_non_root_user_gets_its_own_socket(self):
        if os.geteuid() != 0 or shutil.which("setpriv") is None:
            self.skipTest("running as another uid needs root and setpriv")
        if os.path.exists("/run/stallscope/hook.sock"):
            self.skipTest("a system exporter is bound here; that socket is the right answer")
        env = {k: v for k, v in os.environ.items() if k != "XDG_RUNTIME_DIR"}
        r = subprocess.run(["setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups",
                            common.BINARY, "hook-env"], capture_output=True, text=True,
                           env=env, timeout=10)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("STALLSCOPE_SOCKET=/tmp/stallscope-65534/hook.sock\n", r.stdout)
        self.assertNotIn("/run/stallscope", r.stdout)
        self.assertIn("warning: no socket at /tmp/stallscope-65534/hook.sock", r.stderr)


class HookSenders(unittest.TestCase):
    """--allow-uid: the kernel's SCM_CREDENTIALS decide who may report; the
    uid they carry labels each job's series."""

    def start_exporter(self, extra=()):
        """An exporter whose hook socket anyone may write; (socket, address)."""
        if os.geteuid() != 0 or shutil.which("setpriv") is None:
            self.skipTest("sending as another uid needs root and setpriv")
        tmp = tempfile.mkdtemp(prefix="stallscope-senders-e2e-")
        self.addCleanup(shutil.rmtree, tmp, True)
        os.chmod(tmp, 0o755)
        sock = os.path.join(tmp, "hook.sock")
        p = subprocess.Popen([common.BINARY, "exporter", "--listen", "127.0.0.1:0",
                              "--hook-socket", sock] + list(extra),
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self.addCleanup(p.stderr.close)
        self.addCleanup(p.wait, 5)
        self.addCleanup(p.terminate)
        line = p.stderr.readline()
        while line and "serving http://" not in line:
            line = p.stderr.readline()
        self.assertIn("serving http://", line)
        address = line.split("http://")[1].split("/metrics")[0]
        os.chmod(sock, 0o777)  # anyone may write it; --allow-uid alone decides
        return sock, address

    def test_each_users_job_carries_its_uid(self):
        sock, address = self.start_exporter()
        # Both name their job "shared", rank 0: two users' series, not one.
        send = ("import os, socket; s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); "
                "p = os.getpid(); s.sendto(('hello %%d 0 0 1\\njob %%d 0 shared\\n"
                "step %%d 0 0 1 1 1\\n' %% (p, p, p)).encode(), %r)" % sock)
        other = subprocess.run(["setpriv", "--reuid", "65534", "--regid", "65534",
                                "--clear-groups", "/usr/bin/python3", "-c", send],
                               capture_output=True, text=True, timeout=30)
        self.assertEqual(other.returncode, 0, other.stderr)
        subprocess.run(["/usr/bin/python3", "-c", send], check=True, timeout=30)
        with urllib.request.urlopen("http://%s/metrics" % address, timeout=10) as r:
            body = r.read().decode()
        for uid in (65534, os.geteuid()):
            series = 'stallscope_job_steps_total{job_name="shared",rank="0",host="%s",uid="%d"} ' % (
                socket.gethostname().split(".")[0], uid)
            self.assertEqual(sample_value(body, series), 1, body)

    def test_allow_uid_drops_and_counts_other_users(self):
        sock, address = self.start_exporter(["--allow-uid", str(os.geteuid())])
        send = ("import socket; s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); "
                "s.sendto(b'not a hook record\\n', %r)" % sock)
        other = subprocess.run(["setpriv", "--reuid", "65534", "--regid", "65534",
                                "--clear-groups", "/usr/bin/python3", "-c", send],
                               capture_output=True, text=True, timeout=30)
        self.assertEqual(other.returncode, 0, other.stderr)
        subprocess.run(["/usr/bin/python3", "-c", send], check=True, timeout=30)
        with urllib.request.urlopen("http://%s/metrics" % address, timeout=10) as r:
            body = r.read().decode()
        # Uid 65534's garbage never reached the parser; our own did.
        self.assertEqual(sample_value(body, "stallscope_exporter_hook_refused_senders_total "), 1)
        self.assertEqual(sample_value(body, "stallscope_exporter_hook_malformed_lines_total "), 1)

    def test_bad_allow_uid_names_the_entry(self):
        rc, _, err, _ = common.run(["exporter", "--allow-uid", "0,bob"], timeout=10)
        self.assertEqual(rc, 2)
        self.assertIn("--allow-uid bob: not a numeric uid", err)


if __name__ == "__main__":
    common.main()

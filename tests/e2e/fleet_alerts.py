"""End-to-end: the fleet's rules on a real Prometheus, fed by a real
`stallscope exporter` while a real PyTorch job reports through the hook.

- Debian's Prometheus (loopback, a temporary folder) loads the short-window
  variant of the rules (`doctor --rules --format prometheus --window 5s`,
  the same code as deploy/prometheus/stallscope.rules.yml) and scrapes the
  exporter every second;
- the job: 2 gloo DDP ranks with stallscope.ddp(model), a DataLoader with
  num_workers=0 whose dataset reads a real file and decodes slowly (40 ms a
  sample), and rank 1 slower by 80 ms a step before its backward pass;
- the alerts' state is read from the HTTP API until StallscopeIoInputBound
  (critical), StallscopeIoLoaderConfig (num_workers_zero) and
  StallscopeDistributedStraggler naming rank 1 fire (bounded: 150 s), and
  StallscopeDistributedLoadImbalance never fires (the straggler explains
  the compute spread); the fake NVML's GPU (97% utilization, 30% SMs
  active) raises StallscopeCodeUtilMisleading;
- every metric the rules file and deploy/grafana/stallscope.json name is in
  a real scrape: the live exporter's, or the same exporter run over the
  fixture trees that have what this VM lacks (InfiniBand ports, a memory
  cgroup limit); every dashboard expression passes `promtool check rules`
  and the live Prometheus answers each one.
"""
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.parse
import urllib.error
import urllib.request

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_common as common  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PYTHON_DIR = os.path.join(ROOT, "python")
RULES_FILE = os.path.join(ROOT, "deploy", "prometheus", "stallscope.rules.yml")
DASHBOARD = os.path.join(ROOT, "deploy", "grafana", "stallscope.json")
FIXTURES = os.path.join(ROOT, "tests", "fixtures")
PROMETHEUS = "/usr/bin/prometheus"
PROMTOOL = "/usr/bin/promtool"
TORCH_PYTHON = "/usr/bin/python3"
JOB_NAME = "fleet-e2e"
FIRE_WITHIN_S = 150

JOB = r"""
import os, sys, time
import torch, torch.distributed as dist
import stallscope
from torch.utils.data import DataLoader, Dataset

rank = int(os.environ["RANK"])
dist.init_process_group("gloo")

class SlowDecode(Dataset):
    # Reads 4 KiB of a real file per sample and "decodes" for 40 ms.
    def __init__(self, path):
        self.f = open(path, "rb")
    def __len__(self):
        return 100000
    def __getitem__(self, i):
        self.f.seek((i * 4096) % (1 << 20))
        self.f.read(4096)
        time.sleep(0.04)
        return torch.ones(8)

model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(8, 1))
model = stallscope.ddp(model)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
loader = DataLoader(SlowDecode(sys.argv[1]), batch_size=1, num_workers=0)
deadline = time.monotonic() + float(sys.argv[2])
for x in stallscope.loader(loader):
    if rank == 1:
        time.sleep(0.08)          # the straggler: slower before its all-reduce
    loss = model(x).sum()
    opt.zero_grad()
    loss.backward()
    opt.step()
    if time.monotonic() > deadline:
        break
dist.destroy_process_group()
"""

FAKE_GPU = "\n".join([
    "gpus 1",
    "gpu.0.name NVIDIA H100 80GB HBM3",
    "gpu.0.uuid GPU-11111111-2222-3333-4444-555555555555",
    "gpu.0.bus 00000000:3B:00.0",
    "gpu.0.mem_total %d" % (80 << 30),
    "gpu.0.mem_used %d" % (10 << 30),
    "gpu.0.util 97",
    "gpu.0.sm_clock 1500",
    "gpu.0.sm_clock_max 1980",
    "gpu.0.temp 60",
    "gpu.0.power_mw 400000",
    "gpu.0.power_limit_mw 700000",
    "gpu.0.gpm 1",
    "gpu.0.gpm.sm_util 30",
    "",
])


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def have_torch():
    return common.have_torch(TORCH_PYTHON, "torch")


def metric_names(body):
    """Names of the sample lines of an exposition (histogram parts too)."""
    names = set()
    for line in body.splitlines():
        if line and not line.startswith("#"):
            names.add(re.match(r"[a-zA-Z_:][a-zA-Z0-9_:]*", line).group(0))
    return names


def named_in(expr):
    return set(re.findall(r"stallscope[_:][a-zA-Z0-9_:]+", expr))


def dashboard_exprs():
    with open(DASHBOARD) as f:
        dash = json.load(f)
    exprs = [t["expr"] for p in dash["panels"] for t in p.get("targets", [])]
    exprs += [a["expr"] for a in dash["annotations"]["list"] if "expr" in a]
    return dash, exprs


def grafana_to_promql(expr):
    """The dashboard's variables as Grafana fills them (All: .*)."""
    return (expr.replace("$__rate_interval", "1m").replace("$job_name", ".*")
            .replace("$instance", ".*"))


class Exporter:
    def __init__(self, tmp, name, root="/", env=None):
        self.port = free_port()
        self.proc = subprocess.Popen(
            [common.BINARY, "exporter", "--listen", "127.0.0.1:%d" % self.port, "--interval",
             "0.5", "--hook-socket", os.path.join(tmp, name + ".sock"), "--root", root],
            stderr=subprocess.PIPE, env=env)
        self.socket = os.path.join(tmp, name + ".sock")
        for _ in range(100):
            if os.path.exists(self.socket):
                break
            time.sleep(0.05)

    def scrape(self):
        # The hook socket exists before the HTTP listener does: a refused
        # connection is retried while the exporter runs (not the clock's
        # business: a loaded machine starts it later).
        deadline = time.monotonic() + 30
        while True:
            try:
                with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % self.port,
                                            timeout=10) as r:
                    return r.read().decode()
            except urllib.error.URLError as e:
                refused = isinstance(e.reason, ConnectionRefusedError)
                if not refused or self.proc.poll() is not None or time.monotonic() > deadline:
                    if self.proc.poll() is not None:
                        raise AssertionError("the exporter exited %d: %s" % (
                            self.proc.returncode, self.proc.stderr.read().decode()[-2000:]))
                    raise
                time.sleep(0.1)

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=10)
        self.proc.stderr.close()


@common.needs(os.access(PROMETHEUS, os.X_OK) and os.access(PROMTOOL, os.X_OK),
              "no Prometheus (Debian package prometheus)")
@common.needs(have_torch(), "no PyTorch (Debian package python3-torch)")
class FleetAlerts(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="stallscope-fleet-e2e-")
        fake_nvml = os.path.join(os.path.dirname(common.BINARY), "libstallscope_fake_nvml.so")
        script = os.path.join(cls.tmp, "gpu-script")
        with open(script, "w") as f:
            f.write(FAKE_GPU)
        env = dict(os.environ, STALLSCOPE_NVML_LIBRARY=fake_nvml, FAKE_NVML_SCRIPT=script)
        cls.live = Exporter(cls.tmp, "live", env=env)
        # The job's data: a real 1 MiB file on a real disk (not tmpfs).
        data_dir = tempfile.mkdtemp(prefix="stallscope-fleet-data-", dir="/var/tmp")
        cls.data_dir = data_dir
        data = os.path.join(data_dir, "samples.bin")
        with open(data, "wb") as f:
            f.write(os.urandom(1 << 20))

        rc, rules, err, _ = common.run(["doctor", "--rules", "--format", "prometheus",
                                        "--window", "5s"])
        assert rc == 0, err
        cls.short_rules = os.path.join(cls.tmp, "short.rules.yml")
        with open(cls.short_rules, "w") as f:
            f.write(rules)
        cls.prom_port = free_port()
        config = os.path.join(cls.tmp, "prometheus.yml")
        with open(config, "w") as f:
            f.write("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
                    "rule_files: [%s]\n"
                    "scrape_configs:\n  - job_name: stallscope\n    static_configs:\n"
                    "      - targets: ['127.0.0.1:%d']\n" % (cls.short_rules, cls.live.port))
        cls.prom = subprocess.Popen(
            [PROMETHEUS, "--config.file", config, "--storage.tsdb.path",
             os.path.join(cls.tmp, "data"), "--web.listen-address",
             "127.0.0.1:%d" % cls.prom_port],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

        master = free_port()
        cls.ranks = []
        for rank in range(2):
            env = dict(os.environ, PYTHONPATH=PYTHON_DIR, STALLSCOPE_SOCKET=cls.live.socket,
                       STALLSCOPE_JOB=JOB_NAME, RANK=str(rank), LOCAL_RANK=str(rank),
                       WORLD_SIZE="2", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(master),
                       OMP_NUM_THREADS="1")
            cls.ranks.append(subprocess.Popen(
                [TORCH_PYTHON, "-c", JOB, data, str(FIRE_WITHIN_S + 60)], env=env,
                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE))
        cls.seen = {}  # (alertname, severity, rank, problem) -> last state
        cls.fired = {}  # the same key -> the alert as the API gave it when firing
        cls.fired_at = None
        cls.live_body = cls.wait_for_alerts()

    @classmethod
    def tearDownClass(cls):
        for p in cls.ranks:
            if p.poll() is None:
                p.kill()
            p.wait()
            p.stderr.close()
        cls.prom.terminate()
        cls.prom.wait(timeout=20)
        cls.live.stop()
        shutil.rmtree(cls.tmp, ignore_errors=True)
        shutil.rmtree(cls.data_dir, ignore_errors=True)

    @classmethod
    def api(cls, path, **params):
        url = "http://127.0.0.1:%d/api/v1/%s" % (cls.prom_port, path)
        if params:
            url += "?" + urllib.parse.urlencode(params)
        with urllib.request.urlopen(url, timeout=10) as r:
            return json.loads(r.read())

    WANTED = [("StallscopeIoInputBound", "critical"), ("StallscopeIoLoaderConfig", "warning"),
              ("StallscopeDistributedStraggler", "warning"),
              ("StallscopeCodeUtilMisleading", "warning")]

    @classmethod
    def firing(cls):
        return {k for k, state in cls.seen.items() if state == "firing"}

    @classmethod
    def wait_for_alerts(cls):
        """Polls the alerts until the wanted ones fire; returns a scrape of
        the live exporter taken while the job runs."""
        body = ""
        deadline = time.monotonic() + FIRE_WITHIN_S
        while time.monotonic() < deadline:
            time.sleep(1)
            if any(p.poll() is not None for p in cls.ranks):
                break
            try:
                alerts = cls.api("alerts")["data"]["alerts"]
            except OSError:
                continue  # Prometheus still starting
            for a in alerts:
                lab = a["labels"]
                if lab.get("job_name", JOB_NAME) != JOB_NAME:
                    continue
                key = (lab["alertname"], lab["severity"], lab.get("rank"), lab.get("problem"))
                if cls.seen.get(key) != "firing":
                    cls.seen[key] = a["state"]
                if a["state"] == "firing":
                    cls.fired[key] = a
            names = {(k[0], k[1]) for k in cls.firing()}
            if all(w in names for w in cls.WANTED):
                cls.fired_at = time.monotonic()
                body = cls.live.scrape()
                sys.stderr.write("fired after %.0f s: %s\n" % (
                    FIRE_WITHIN_S - (deadline - cls.fired_at), sorted(
                        cls.firing(), key=str)))
                break
        return body

    def test_the_alerts_fire_from_the_jobs_series(self):
        for p in self.ranks:
            if p.poll() is not None:
                self.fail("a rank ended early (%s): %s" % (p.returncode,
                                                          p.stderr.read().decode()[-2000:]))
        self.assertIsNotNone(self.fired_at, "not all of %s fired within %d s; seen: %s"
                             % (self.WANTED, FIRE_WITHIN_S, self.seen))
        fired = self.firing()
        # The straggler is rank 1, the one that sleeps before its all-reduce.
        stragglers = {k[2] for k in fired if k[0] == "StallscopeDistributedStraggler"}
        self.assertEqual(stragglers, {"1"}, fired)
        self.assertTrue(any(k[0] == "StallscopeIoLoaderConfig" and k[3] == "num_workers_zero"
                            for k in fired))
        # The compute spread is the straggler's own: no imbalance fires (it
        # may be pending for a scrape while the first steps' rates settle;
        # the rule's `for:` is what keeps that from reaching anyone).
        self.assertFalse(any(k[0] == "StallscopeDistributedLoadImbalance" for k in fired),
                         self.seen)
        # The annotations reach the API with the labels filled in. Read off
        # the alert as the API gave it while firing: by the time this test
        # runs the input-bound share may have dipped under the threshold and
        # the alert resolved, which says nothing about its annotations.
        bound = [a for k, a in sorted(self.fired.items(), key=lambda kv: str(kv[0]))
                 if k[0] == "StallscopeIoInputBound"]
        self.assertTrue(bound, self.seen)
        self.assertRegex(bound[0]["annotations"]["summary"],
                         r"^job fleet-e2e rank [01] \(\S+\) waits [\d.]+% of its steps for data$")
        self.assertEqual(bound[0]["labels"]["id"], "io.input_bound")

    def test_the_exporter_serves_the_new_series(self):
        self.assertTrue(self.live_body, "no scrape taken while the job ran")
        lines = self.live_body.splitlines()

        def samples(name):
            return [l for l in lines if l.startswith(name + "{") and JOB_NAME in l]
        self.assertEqual(len(samples("stallscope_job_sync_wait_seconds_total")), 2)
        self.assertEqual(len(samples("stallscope_job_processes")), 4)  # 2 ranks x 2 roles
        rss = [float(l.rsplit(" ", 1)[1]) for l in samples("stallscope_job_rss_bytes")
               if 'role="rank"' in l]
        self.assertTrue(rss and all(r > 50 * common.MIB for r in rss), rss)  # torch loaded
        cpu = [float(l.rsplit(" ", 1)[1]) for l in samples("stallscope_job_cpu_seconds_total")
               if 'role="rank"' in l]
        self.assertTrue(cpu and all(c > 0.5 for c in cpu), cpu)
        # The data device: the disk under /var/tmp, as the disk series name it.
        info = samples("stallscope_job_data_device_info")
        self.assertTrue(info, "no data device found")
        device = re.search(r'device="([^"]+)"', info[0]).group(1)
        self.assertIn('stallscope_disk_utilization_ratio{device="%s"}' % device, self.live_body)

    def test_every_metric_named_is_in_a_real_scrape(self):
        self.assertTrue(self.live_body)
        scraped = metric_names(self.live_body)
        for fixture in ("ib_host", "container_v2"):
            e = Exporter(self.tmp, fixture, root=os.path.join(FIXTURES, fixture))
            try:
                scraped |= metric_names(e.scrape())
            finally:
                e.stop()
        with open(RULES_FILE) as f:
            rules = [r for g in yaml.safe_load(f)["groups"] for r in g["rules"]]
        recorded = {r["record"] for r in rules if "record" in r}
        _, exprs = dashboard_exprs()
        for expr in [r["expr"] for r in rules] + exprs:
            for name in named_in(expr):
                if ":" in name:
                    self.assertIn(name, recorded, "%s: no such recording rule" % name)
                else:
                    self.assertIn(name, scraped, "%s (in %s) is in no scrape" % (name, expr))

    def test_dashboard_expressions_parse_and_answer(self):
        dash, exprs = dashboard_exprs()
        self.assertEqual(dash["uid"], "stallscope")
        self.assertTrue(any("ALERTS" in a["expr"] for a in dash["annotations"]["list"]))
        self.assertGreaterEqual(len(exprs), 20)
        scratch = os.path.join(self.tmp, "dashboard.rules.yml")
        with open(scratch, "w") as f:
            yaml.safe_dump({"groups": [{"name": "dashboard", "rules": [
                {"record": "dashboard:panel_%d" % i, "expr": grafana_to_promql(e)}
                for i, e in enumerate(exprs)]}]}, f)
        p = subprocess.run([PROMTOOL, "check", "rules", scratch], capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        answered = 0
        for e in exprs:
            r = self.api("query", query=grafana_to_promql(e))
            self.assertEqual(r["status"], "success", e)
            answered += bool(r["data"]["result"])
        # The job and node panels have data (not InfiniBand, not cgroups).
        self.assertGreaterEqual(answered, len(exprs) - 6, answered)


if __name__ == "__main__":
    common.main()

"""End-to-end: the triage as Prometheus rules (`doctor --rules --format
prometheus`), checked by Debian's promtool.

- the committed deploy/prometheus/stallscope.rules.yml is the binary's
  output, and `promtool check rules` accepts it (and the short-window
  variant the live test uses);
- `promtool test rules` unit tests with synthetic series for every alert:
  each (alert, severity, problem) fires just past its threshold and stays
  quiet just short of it; the straggler is found among 8 ranks; the
  expected labels are written here, and the annotations are the rule's own
  templates filled with the value worked out by hand here (so a rule whose
  value is not the one we expect fails);
- a few summaries are checked word for word;
- bad --format / --window values are refused, naming the flag.

The thresholds below are the catalog's, written out again on purpose: a
change of a constant in the C++ must fail here until this file agrees.
"""
import os
import re
import subprocess
import sys
import tempfile
import unittest

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_common as common  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RULES_FILE = os.path.join(ROOT, "deploy", "prometheus", "stallscope.rules.yml")
PROMTOOL = "/usr/bin/promtool"

NODE = {"instance": "n1:9400", "job": "node"}
MIB = 1 << 20
GIB = 1 << 30


def go_g4(v):
    """Go's fmt %.4g (the same as C's for finite values)."""
    return "%.4g" % v


def humanize1024(v):
    if abs(v) <= 1:
        return go_g4(v)
    prefix = ""
    for p in ["ki", "Mi", "Gi", "Ti", "Pi", "Ei"]:
        if abs(v) < 1024:
            break
        prefix = p
        v /= 1024
    return go_g4(v) + prefix


def expand(template, labels, value):
    """The subset of Prometheus's alert templates the rules use."""
    def one(m):
        body = m.group(1).strip()
        if body.startswith("$labels."):
            return labels.get(body[len("$labels."):], "")
        if body == "$value | humanizePercentage":
            return go_g4(value * 100) + "%"
        if body == "$value | humanize1024":
            return humanize1024(value)
        pm = re.fullmatch(r'printf "(%\.\d+f)" \$value', body)
        if pm:
            return pm.group(1) % value
        raise AssertionError("template the test cannot expand: {{%s}}" % body)
    return re.sub(r"\{\{(.*?)\}\}", one, template)


def series(name, labels, values):
    inner = ",".join('%s="%s"' % (k, v) for k, v in sorted(labels.items()))
    return {"series": "%s{%s}" % (name, inner), "values": values}


def rank_labels(rank, job_name="train", host="n1"):
    return dict(NODE, job_name=job_name, rank=str(rank), host=host)


def rank_series(rank, wait_per_min, step_per_min=60, steps_per_min=60, sync_per_min=None,
                **kw):
    """A rank's counters growing linearly: per minute, seconds of data wait,
    seconds of steps, steps, seconds of sync wait."""
    labels = rank_labels(rank, **kw)
    out = [series("stallscope_job_data_wait_seconds_total", labels, "0+%gx40" % wait_per_min),
           series("stallscope_job_step_seconds_sum", labels, "0+%gx40" % step_per_min),
           series("stallscope_job_step_seconds_count", labels, "0+%gx40" % steps_per_min),
           series("stallscope_job_steps_total", labels, "0+%gx40" % steps_per_min)]
    if sync_per_min is not None:
        out.append(series("stallscope_job_sync_wait_seconds_total", labels,
                          "0+%gx40" % sync_per_min))
    return out


def memory(available, total=100, limit=None, swap_pages_per_s=0):
    out = [series("stallscope_memory_effective_available_bytes", NODE, "%gx40" % available),
           series("stallscope_memory_total_bytes", NODE, "%gx40" % total),
           series("stallscope_swap_in_bytes_total", NODE,
                  "0+%gx40" % (swap_pages_per_s * 4096 * 60)),
           series("stallscope_swap_out_bytes_total", NODE, "0x40")]
    if limit is not None:
        out.append(series("stallscope_memory_cgroup_limit_bytes", NODE, "%gx40" % limit))
    return out


# Each case: (name, alertname, id, input series, eval time, expected), where
# expected is a list of (severity, problem or None, labels, value).
def cases():
    c = []
    A = "StallscopeMemoryAvailableLow"
    c += [
        ("available 21%", A, "memory.available_low", memory(21), "15m", []),
        ("available 19%", A, "memory.available_low", memory(19), "15m",
         [("warning", None, NODE, 0.19)]),
        ("available 9%", A, "memory.available_low", memory(9), "15m",
         [("warning", None, NODE, 0.09), ("critical", None, NODE, 0.09)]),
        ("available 15% swapping 1 page/s", A, "memory.available_low",
         memory(15, swap_pages_per_s=1), "15m",
         [("warning", None, NODE, 0.15), ("critical", None, NODE, 0.15)]),
        ("available 15% swapping 0.9 page/s", A, "memory.available_low",
         memory(15, swap_pages_per_s=0.9), "15m", [("warning", None, NODE, 0.15)]),
        ("19% of the cgroup limit", A, "memory.available_low", memory(19, total=1000, limit=100),
         "15m", [("warning", None, NODE, 0.19)]),
        ("21% of the cgroup limit", A, "memory.available_low", memory(21, total=1000, limit=100),
         "15m", []),
    ]
    A = "StallscopeMemorySwapActive"
    c += [
        ("swap 0.9 page/s", A, "memory.swap_active", memory(50, swap_pages_per_s=0.9), "15m", []),
        ("swap 1 page/s", A, "memory.swap_active", memory(50, swap_pages_per_s=1), "15m",
         [("warning", None, NODE, 1)]),
        ("swap 255 pages/s", A, "memory.swap_active", memory(50, swap_pages_per_s=255), "15m",
         [("warning", None, NODE, 255)]),
        ("swap 256 pages/s", A, "memory.swap_active", memory(50, swap_pages_per_s=256), "15m",
         [("warning", None, NODE, 256), ("critical", None, NODE, 256)]),
    ]
    A = "StallscopeMemoryPinnedExcess"

    def pinned(p):
        return [series("stallscope_memory_mlocked_bytes", NODE, "%gx40" % p),
                series("stallscope_memory_total_bytes", NODE, "100x40")]
    c += [
        ("pinned 25%", A, "memory.pinned_excess", pinned(25), "15m", []),
        ("pinned 26%", A, "memory.pinned_excess", pinned(26), "15m",
         [("warning", None, NODE, 0.26)]),
        ("pinned 51%", A, "memory.pinned_excess", pinned(51), "15m",
         [("warning", None, NODE, 0.51), ("critical", None, NODE, 0.51)]),
    ]
    A = "StallscopeMemoryRssGrowth"

    def rss(mib_per_min, available):
        out = [series("stallscope_memory_effective_available_bytes", NODE, "%dx60" % available)]
        for role, base in (("rank", 2 * GIB), ("workers", GIB)):
            out.append(series("stallscope_job_rss_bytes",
                              dict(rank_labels(0), role=role),
                              "%d+%dx60" % (base, mib_per_min * MIB if role == "rank" else 0)))
        return out
    job = {"instance": NODE["instance"], "job_name": "train"}
    c += [
        # 1 MiB/min: 1440 MiB in 24 h against 1 GiB available: warning.
        ("rss +1 MiB/min, 1 GiB left", A, "memory.rss_growth", rss(1, GIB), "45m",
         [("warning", None, job, 1440 * MIB)]),
        ("rss +1 MiB/min, 2 GiB left", A, "memory.rss_growth", rss(1, 2 * GIB), "45m", []),
        # 25 MiB/min: 1500 MiB within the hour: critical too.
        ("rss +25 MiB/min, 1 GiB left", A, "memory.rss_growth", rss(25, GIB), "45m",
         [("warning", None, job, 36000 * MIB), ("critical", None, job, 1500 * MIB)]),
        ("rss flat", A, "memory.rss_growth", rss(0, 1), "45m", []),
    ]
    A = "StallscopeMemoryGpuNearFull"
    gpu = dict(NODE, gpu="0")

    def gpumem(used):
        return [series("stallscope_gpu_memory_used_bytes", gpu, "%gx40" % used),
                series("stallscope_gpu_memory_total_bytes", gpu, "100x40")]
    c += [
        ("gpu memory 94%", A, "memory.gpu_near_full", gpumem(94), "15m", []),
        ("gpu memory 95%", A, "memory.gpu_near_full", gpumem(95), "15m",
         [("warning", None, gpu, 0.95)]),
        ("gpu memory 99%", A, "memory.gpu_near_full", gpumem(99), "15m",
         [("warning", None, gpu, 0.99), ("critical", None, gpu, 0.99)]),
    ]
    A = "StallscopeMemoryOomKilled"
    oom = [series("stallscope_memory_oom_kills_total", NODE, "0x10 1x20")]
    c += [
        ("an OOM kill 2 minutes ago", A, "memory.oom_killed", oom, "12m",
         [("critical", None, NODE, 1)]),
        ("an OOM kill 20 minutes ago", A, "memory.oom_killed", oom, "30m", []),
    ]
    A = "StallscopeIoDeviceSaturated"
    disk = dict(NODE, device="vda")

    def saturated(util, await_s="0.05x40"):
        return [series("stallscope_disk_utilization_ratio", disk, util),
                series("stallscope_disk_await_seconds", disk, await_s)]
    c += [
        # Saturated since it started: every point of the long window.
        ("util 90% await 20 ms", A, "io.device_saturated", saturated("0.9x40", "0.02x40"), "15m",
         [("warning", None, disk, 0.9), ("critical", None, disk, 1.0)]),
        ("util 89%", A, "io.device_saturated", saturated("0.89x40"), "15m", []),
        ("await 19 ms", A, "io.device_saturated", saturated("0.95x40", "0.019x40"), "15m", []),
        # 10 of the 31 points of the last 30 minutes: 32%, critical.
        ("saturated 10 of 31 minutes", A, "io.device_saturated",
         saturated("0.5x30 0.95x9"), "40m",
         [("warning", None, disk, 0.95), ("critical", None, disk, 10 / 31)]),
        ("saturated 9 of 31 minutes", A, "io.device_saturated",
         saturated("0.5x31 0.95x8"), "40m", [("warning", None, disk, 0.95)]),
    ]
    A = "StallscopeIoInputBound"
    c += [
        ("data wait 9%", A, "io.input_bound", rank_series(0, 5.4), "15m", []),
        ("data wait 11%", A, "io.input_bound", rank_series(0, 6.6), "15m",
         [("warning", None, rank_labels(0), 0.11)]),
        ("data wait 31%", A, "io.input_bound", rank_series(0, 18.6), "15m",
         [("warning", None, rank_labels(0), 0.31), ("critical", None, rank_labels(0), 0.31)]),
        ("data wait 35% over 2.5 steps", A, "io.input_bound",
         rank_series(0, 21, steps_per_min=0.5), "15m", []),
        ("the worst of two ranks", A, "io.input_bound",
         rank_series(0, 12) + rank_series(1, 21), "15m",
         [("warning", None, rank_labels(1), 0.35), ("critical", None, rank_labels(1), 0.35)]),
    ]
    A = "StallscopeIoLoaderConfig"

    def workers(n, wait):
        return rank_series(0, wait) + [
            series("stallscope_job_loader_workers", rank_labels(0), "%dx40" % n)]
    c += [
        ("num_workers=0, wait 11%", A, "io.loader_config", workers(0, 6.6), "15m",
         [("warning", "num_workers_zero", rank_labels(0), 0.11)]),
        ("num_workers=0, wait 9%", A, "io.loader_config", workers(0, 5.4), "15m", []),
        ("num_workers=2, wait 40%", A, "io.loader_config", workers(2, 24), "15m", []),
        ("num_workers=0, wait 40%", A, "io.loader_config", workers(0, 24), "15m",
         [("warning", "num_workers_zero", rank_labels(0), 0.4),
          ("critical", "num_workers_zero", rank_labels(0), 0.4)]),
    ]
    A = "StallscopeIoCpuBoundLoader"

    def loader(cpu_per_min, delay_per_min, disk_util, wait=12):
        w = dict(rank_labels(0), role="workers")
        return rank_series(0, wait) + [
            series("stallscope_job_processes", w, "2x40"),
            series("stallscope_job_cpu_seconds_total", w, "0+%gx40" % cpu_per_min),
            series("stallscope_job_run_delay_seconds_total", w, "0+%gx40" % delay_per_min),
            series("stallscope_job_data_device_info", dict(rank_labels(0), device="vda",
                                                           fs_type="ext4"), "1x40"),
            series("stallscope_disk_utilization_ratio", dict(NODE, device="vda"),
                   "%gx40" % disk_util)]
    wl = dict(rank_labels(0), role="workers")
    c += [
        # 2 workers: 72 + 30 CPU-seconds a minute: 85% busy each, 60% on a CPU.
        ("workers 85% busy, disk 30%", A, "io.cpu_bound_loader", loader(72, 30, 0.3), "15m",
         [("warning", None, wl, 0.85)]),
        ("workers 85% busy, disk 60%", A, "io.cpu_bound_loader", loader(72, 30, 0.6), "15m", []),
        ("workers 75% busy", A, "io.cpu_bound_loader", loader(72, 18, 0.3), "15m", []),
        ("workers 45% on a CPU", A, "io.cpu_bound_loader", loader(54, 54, 0.3), "15m", []),
        ("workers 85% busy, wait 40%", A, "io.cpu_bound_loader", loader(72, 30, 0.3, wait=24),
         "15m", [("warning", None, wl, 0.85), ("critical", None, wl, 0.85)]),
    ]
    A = "StallscopeNetworkPortErrors"
    nic = dict(NODE, interface="eth0")

    def port(errors, drops, packets_per_min=1000):
        return [
            series("stallscope_network_receive_errors_total", nic, errors),
            series("stallscope_network_transmit_errors_total", nic, "0x40"),
            series("stallscope_network_receive_drops_total", nic, drops),
            series("stallscope_network_transmit_drops_total", nic, "0x40"),
            series("stallscope_network_receive_packets_total", nic, "0+%dx40" % packets_per_min),
            series("stallscope_network_transmit_packets_total", nic, "0x40")]
    ib = dict(NODE, device="mlx5_0", port="1")
    c += [
        ("no errors", A, "network.port_errors", port("0x40", "0x40"), "8m", []),
        ("one error", A, "network.port_errors", port("0x5 1x35", "0x40"), "8m",
         [("warning", "errors", nic, 1)]),
        ("errors 0.2% of packets", A, "network.port_errors", port("0+2x40", "0x40"), "8m",
         [("warning", "errors", nic, 10), ("critical", "errors", nic, 0.002)]),
        ("10 drops, 0.2%", A, "network.port_errors", port("0x40", "0+2x40"), "8m",
         [("warning", "drops", nic, 0.002)]),
        ("5 drops", A, "network.port_errors", port("0x40", "0+1x40"), "8m", []),
        ("100 drops, 2%", A, "network.port_errors", port("0x40", "0+20x40"), "8m",
         [("warning", "drops", nic, 0.02), ("critical", "drops", nic, 0.02)]),
        ("an InfiniBand symbol error", A, "network.port_errors",
         [series("stallscope_infiniband_port_symbol_errors_total", ib, "0x5 1x35"),
          series("stallscope_infiniband_port_receive_errors_total", ib, "0x40"),
          series("stallscope_infiniband_port_link_downed_total", ib, "0x40")], "8m",
         [("warning", "infiniband", ib, 1)]),
        ("a quiet InfiniBand port", A, "network.port_errors",
         [series("stallscope_infiniband_port_symbol_errors_total", ib, "3x40"),
          series("stallscope_infiniband_port_receive_errors_total", ib, "0x40"),
          series("stallscope_infiniband_port_link_downed_total", ib, "1x40")], "8m", []),
    ]
    A = "StallscopeDistributedStraggler"

    def ranks(straggler_sync, others_sync, n=8, straggler=5):
        out = []
        for r in range(n):
            out += rank_series(r, 0, sync_per_min=60 * (straggler_sync if r == straggler
                                                        else others_sync),
                               host="n%d" % (r // 4 + 1))
        return out
    s5 = rank_labels(5, host="n2")
    c += [
        # The others wait 30% of a step, rank 5 10%: 20 points more.
        ("8 ranks, rank 5 waited for by 20%", A, "distributed.straggler", ranks(0.1, 0.3), "15m",
         [("warning", None, s5, 0.2)]),
        ("8 ranks, rank 5 waited for by 10%", A, "distributed.straggler", ranks(0.2, 0.3),
         "15m", []),
        ("8 ranks, rank 5 waited for by 33%", A, "distributed.straggler", ranks(0.02, 0.35),
         "15m", [("warning", None, s5, 0.33), ("critical", None, s5, 0.33)]),
        ("8 ranks alike", A, "distributed.straggler", ranks(0.3, 0.3), "15m", []),
        ("one rank", A, "distributed.straggler", ranks(0.0, 0.3, n=1, straggler=0), "15m", []),
    ]
    A = "StallscopeDistributedLoadImbalance"
    j = {"job_name": "train"}
    c += [
        ("data waits 5% and 17%", A, "distributed.load_imbalance",
         rank_series(0, 3) + rank_series(1, 10.2), "15m", [("warning", "data_wait", j, 0.12)]),
        ("data waits 5% and 14%", A, "distributed.load_imbalance",
         rank_series(0, 3) + rank_series(1, 8.4), "15m", []),
        # Rank 0 waits 30% for data, rank 1 nothing and 5% in sync: compute
        # 70% against 95%, and rank 1 is no straggler (5% < 15%).
        ("compute 70% and 95%", A, "distributed.load_imbalance",
         rank_series(0, 18, sync_per_min=0) + rank_series(1, 0, sync_per_min=3), "15m",
         [("warning", "data_wait", j, 0.3), ("warning", "compute", j, 0.25)]),
        # Sync waits 10% and 28%: rank 0 is a straggler; no compute finding.
        ("compute spread of a straggler", A, "distributed.load_imbalance",
         rank_series(0, 0, sync_per_min=6) + rank_series(1, 0, sync_per_min=16.8) +
         rank_series(2, 0, sync_per_min=16.8), "15m", []),
    ]
    A = "StallscopeCodeUtilMisleading"

    def util(u, sm):
        return [series("stallscope_gpu_utilization_ratio", gpu, "%gx40" % u),
                series("stallscope_gpu_sm_active_ratio", gpu, "%gx40" % sm)]
    c += [
        ("util 80%, SM 49%", A, "code.util_misleading", util(0.8, 0.49), "15m",
         [("warning", None, gpu, 0.8)]),
        ("util 80%, SM 50%", A, "code.util_misleading", util(0.8, 0.5), "15m", []),
        ("util 79%, SM 10%", A, "code.util_misleading", util(0.79, 0.1), "15m", []),
        ("util 95%, SM 20%", A, "code.util_misleading", util(0.95, 0.2), "15m",
         [("warning", None, gpu, 0.95), ("critical", None, gpu, 0.95)]),
    ]
    return c


def load_rules(path):
    with open(path) as f:
        doc = yaml.safe_load(f)
    return [r for g in doc["groups"] for r in g["rules"]]


class PrometheusRules(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not os.access(PROMTOOL, os.X_OK):
            raise unittest.SkipTest("no %s (Debian package prometheus)" % PROMTOOL)
        cls.tmp = tempfile.mkdtemp(prefix="stallscope-rules-e2e-")
        rc, cls.generated, err, _ = common.run(["doctor", "--rules", "--format", "prometheus"])
        assert rc == 0, err
        cls.rules = load_rules(RULES_FILE)

    def promtool(self, *args):
        p = subprocess.run([PROMTOOL] + list(args), capture_output=True, text=True, timeout=120,
                           cwd=self.tmp)
        return p.returncode, p.stdout + p.stderr

    def test_committed_file_is_the_output(self):
        with open(RULES_FILE) as f:
            committed = f.read()
        self.assertEqual(committed, self.generated,
                         "deploy/prometheus/stallscope.rules.yml is stale: regenerate it with "
                         "`stallscope doctor --rules --format prometheus > %s`" % RULES_FILE)

    def test_promtool_checks_both_variants(self):
        rc, out = self.promtool("check", "rules", RULES_FILE)
        self.assertEqual(rc, 0, out)
        rc, short, err, _ = common.run(["doctor", "--rules", "--format", "prometheus",
                                        "--window", "5s"])
        self.assertEqual(rc, 0, err)
        self.assertIn("[5s]", short)
        self.assertIn("[30s:1s]", short)  # the long window and its step scale too
        self.assertNotIn("[5m]", short)
        path = os.path.join(self.tmp, "short.yml")
        with open(path, "w") as f:
            f.write(short)
        rc, out = self.promtool("check", "rules", path)
        self.assertEqual(rc, 0, out)

    def test_alerts_are_named_and_labelled_from_the_catalog(self):
        catalog = common.run_json(self, ["doctor", "--rules", "--json"])["rules"]
        ids = {r["id"] for r in catalog}
        alerts = [r for r in self.rules if "alert" in r]
        self.assertGreaterEqual(len(alerts), 30)
        for a in alerts:
            self.assertIn(a["labels"]["id"], ids)
            camel = "Stallscope" + "".join(
                w[:1].upper() + w[1:] for w in re.split(r"[._]", a["labels"]["id"]))
            self.assertEqual(a["alert"], camel)
            self.assertIn(a["labels"]["severity"], ("warning", "critical"))
            self.assertTrue(a["annotations"]["summary"] and a["annotations"]["next"])
        # Every catalog entry says where it stands in the fleet's rules.
        with_alert = {a["labels"]["id"] for a in alerts}
        for r in catalog:
            if r["id"] in with_alert:
                self.assertTrue(r["prometheus"].startswith(
                    "Stallscope"), r)
            else:
                self.assertTrue(r["prometheus"].startswith("none: "), r)
                self.assertIn("#   %s: " % r["id"], self.generated)
        for must in ("StallscopeIoInputBound", "StallscopeMemoryAvailableLow",
                     "StallscopeDistributedStraggler"):
            self.assertIn(must, {a["alert"] for a in alerts})
        # rss_growth uses predict_linear; the thresholds appear as the catalog's.
        growth = [a for a in alerts if a["labels"]["id"] == "memory.rss_growth"]
        self.assertTrue(all("predict_linear(" in a["expr"] for a in growth))
        self.assertIn("86400", growth[0]["expr"] + growth[1]["expr"])
        self.assertIn("3600", growth[0]["expr"] + growth[1]["expr"])

    def rule_for(self, alertname, severity, problem):
        found = [r for r in self.rules if r.get("alert") == alertname
                 and r["labels"]["severity"] == severity
                 and r["labels"].get("problem") == problem]
        self.assertTrue(found, "no rule %s %s %s" % (alertname, severity, problem))
        return found[0]

    def test_every_alert_fires_and_stays_quiet_at_its_edges(self):
        tests = []
        fired, quiet = set(), set()
        for name, alertname, rule_id, input_series, at, expected in cases():
            exp = []
            for severity, problem, labels, value in expected:
                rule = self.rule_for(alertname, severity, problem)
                full = dict(labels, id=rule_id, severity=severity)
                if problem:
                    full["problem"] = problem
                exp.append({"exp_labels": full, "exp_annotations": {
                    k: expand(v, full, value) for k, v in rule["annotations"].items()}})
                fired.add((alertname, severity, problem))
            if not expected:
                quiet.add(alertname)
            tests.append({"name": name, "interval": "1m", "input_series": input_series,
                          "alert_rule_test": [{"eval_time": at, "alertname": alertname,
                                               "exp_alerts": exp}]})
        # Coverage: each rule of the file fires in some case; each alert
        # name has a case where it does not.
        for r in self.rules:
            if "alert" in r:
                key = (r["alert"], r["labels"]["severity"], r["labels"].get("problem"))
                self.assertIn(key, fired, "no firing case for %s" % (key,))
                self.assertIn(r["alert"], quiet, "no quiet case for %s" % r["alert"])
        path = os.path.join(self.tmp, "stallscope_test.yml")
        with open(path, "w") as f:
            yaml.safe_dump({"rule_files": [RULES_FILE], "evaluation_interval": "1m",
                            "tests": tests}, f, sort_keys=False)
        rc, out = self.promtool("test", "rules", path)
        self.assertEqual(rc, 0, out[-6000:])
        self.assertIn("SUCCESS", out)

    def test_summaries_word_for_word(self):
        rule = self.rule_for("StallscopeIoInputBound", "critical", None)
        self.assertEqual(
            expand(rule["annotations"]["summary"], rank_labels(3, host="gpu07"), 0.48),
            "job train rank 3 (gpu07) waits 48% of its steps for data")
        rule = self.rule_for("StallscopeDistributedStraggler", "warning", None)
        self.assertEqual(
            expand(rule["annotations"]["summary"], rank_labels(5, host="n2"), 0.2),
            "job train: the other ranks wait 20% of a step longer than rank 5 (n2) in gradient "
            "synchronization: they wait for it")
        rule = self.rule_for("StallscopeMemoryAvailableLow", "warning", None)
        self.assertEqual(expand(rule["annotations"]["summary"], NODE, 0.123),
                         "n1:9400: 12.3% of memory available")

    def test_bad_flags_are_refused(self):
        for args, flag in ((["--format", "yaml"], "--format yaml"),
                           (["--format", "prometheus", "--window", "5x"], "--window 5x"),
                           (["--format", "prometheus", "--window", "0s"], "--window 0s"),
                           (["--window", "5m"], "--window"),
                           (["--json", "--format", "prometheus"], "--json")):
            rc, out, err, _ = common.run(["doctor", "--rules"] + args)
            self.assertEqual(rc, 2, (args, out, err))
            self.assertIn(flag, err)
            self.assertEqual(out, "")
        rc, out, err, _ = common.run(["doctor", "--format", "prometheus"])
        self.assertEqual(rc, 2, err)
        self.assertIn("--format is for --rules", err)


if __name__ == "__main__":
    common.main()

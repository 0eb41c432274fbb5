#!/usr/bin/env python3
"""The exporter under load, overload and slowloris, beside node_exporter.

usage: bench/exporter_load.py BUILD_DIR [--seconds 60]

1. Load: wrk with 32 connections for --seconds against GET /metrics: p50
   and p99 latency, scrapes/s, errors (socket errors and non-2xx), and the
   exporter's RSS (VmRSS) idle, after a 5 s warm-up with the same load (the
   connections' threads and their malloc arenas) and after the run. The same wrk run against
   Prometheus' node_exporter (Debian: prometheus-node-exporter), when
   installed, and the ratios. The exporter samples the host every second
   (--interval 1) and counts its own samples: those taken during the run,
   the longest gap between two, and how many came more than 1.5 intervals
   after the one before (goal: none).
2. Overload: wrk with 200 connections for 10 s: how many answers were 503
   (the excess over the 64 requests in flight), socket errors, p99 (a 503
   comes at once), then one scrape that must be 200.
3. Slowloris: 300 connections from 127.0.0.1, each trickling a header byte
   a second for 15 s, while curl scrapes from 127.0.0.2 every second: each
   scrape's status and time (goal: 200 within 1 s).
Prints the machine's load average beside the figures: they move with it.
"""
import argparse
import os
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def load_average():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def wait_ready(url):
    for _ in range(100):
        if subprocess.run(["curl", "-sf", "-o", "/dev/null", url]).returncode == 0:
            return
        time.sleep(0.1)
    sys.exit("%s did not answer" % url)


def to_ms(text):
    m = re.match(r"([\d.]+)(us|ms|s)", text)
    value, unit = float(m.group(1)), m.group(2)
    return value / 1000 if unit == "us" else value * 1000 if unit == "s" else value


def self_series(url):
    """The exporter's own sample counters, from one scrape."""
    out = subprocess.run(["curl", "-sf", url], capture_output=True, text=True).stdout
    fig = {}
    for name in ("stallscope_exporter_samples_total", "stallscope_exporter_late_samples_total",
                 "stallscope_exporter_sample_gap_max_seconds"):
        m = re.search(r"^%s (\S+)$" % name, out, re.M)
        fig[name] = float(m.group(1)) if m else float("nan")
    return fig


def wrk(url, connections, seconds):
    out = subprocess.run(["wrk", "-t", "4", "-c", str(connections), "-d", "%ds" % seconds,
                          "--latency", url], capture_output=True, text=True, check=True).stdout
    # The distribution's rows only: "73.50%" in the Req/Sec row also ends in "50%".
    fig = {"p50": to_ms(re.search(r"^\s+50%\s+(\S+)", out, re.M).group(1)),
           "p99": to_ms(re.search(r"^\s+99%\s+(\S+)", out, re.M).group(1)),
           "rate": float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1)),
           "requests": int(re.search(r"(\d+) requests in", out).group(1)),
           "non2xx": 0, "socket_errors": 0}
    m = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    if m:
        fig["non2xx"] = int(m.group(1))
    m = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
    if m:
        fig["socket_errors"] = sum(int(x) for x in m.groups())
    return fig


def show(name, f):
    print("  %-14s p50 %.2f ms  p99 %.2f ms  %.0f scrapes/s  non-2xx %d  socket errors %d"
          % (name, f["p50"], f["p99"], f["rate"], f["non2xx"], f["socket_errors"]))


def scrape_from(address, url):
    start = time.monotonic()
    p = subprocess.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "--interface",
                        address, "--max-time", "5", url], capture_output=True, text=True)
    return p.stdout.strip(), time.monotonic() - start


def slowloris(port, url, connections=300, seconds=15):
    socks, refused = [], 0
    for _ in range(connections):
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=2)
            s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: ")
            socks.append(s)
        except OSError:
            refused += 1
    stop = threading.Event()

    def trickle():
        while not stop.is_set():
            for s in list(socks):
                try:
                    s.send(b"a")
                except OSError:
                    socks.remove(s)
            stop.wait(1)
    t = threading.Thread(target=trickle, daemon=True)
    t.start()
    scrapes = []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        scrapes.append(scrape_from("127.0.0.2", url))
        time.sleep(1)
    alive = len(socks)
    stop.set()
    t.join()
    for s in socks:
        s.close()
    return refused, alive, scrapes


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--seconds", type=int, default=60)
    args = ap.parse_args()
    binary = os.path.join(os.path.abspath(args.build), "stallscope")
    tmp = tempfile.mkdtemp(prefix="stallscope-exporter-load-")
    port = free_port()
    url = "http://127.0.0.1:%d/metrics" % port
    exporter = subprocess.Popen([binary, "exporter", "--listen", "127.0.0.1:%d" % port,
                                 "--hook-socket", os.path.join(tmp, "hook.sock"), "--interval", "1"],
                                stderr=subprocess.DEVNULL)
    procs = [exporter]
    try:
        wait_ready(url)
        print("machine: %d CPUs, load average %s at start" % (os.cpu_count(), load_average()))
        print("1. load: wrk -t 4 -c 32 -d %ds --latency" % args.seconds)
        rss_start = rss_kib(exporter.pid)
        wrk(url, 32, 5)  # warm-up: the connections' threads and malloc arenas come into being
        rss_before = rss_kib(exporter.pid)
        samples_before = self_series(url)
        ours = wrk(url, 32, args.seconds)
        samples_after = self_series(url)
        rss_after = rss_kib(exporter.pid)
        show("stallscope", ours)
        taken = (samples_after["stallscope_exporter_samples_total"]
                 - samples_before["stallscope_exporter_samples_total"])
        late = (samples_after["stallscope_exporter_late_samples_total"]
                - samples_before["stallscope_exporter_late_samples_total"])
        print("  host samples every 1 s during the load: %d taken, %d later than 1.5 intervals "
              "(goal 0), longest gap since start %.3f s"
              % (taken, late, samples_after["stallscope_exporter_sample_gap_max_seconds"]))
        print("  stallscope RSS %d KiB idle, %d KiB after a 5 s warm-up, %d KiB after the load "
              "(%+.1f%%)  [load %s]"
              % (rss_start, rss_before, rss_after, 100.0 * (rss_after - rss_before) / rss_before,
                 load_average()))
        node = "/usr/bin/prometheus-node-exporter"
        if os.access(node, os.X_OK):
            node_port = free_port()
            peer = subprocess.Popen([node, "--web.listen-address=127.0.0.1:%d" % node_port],
                                    stderr=subprocess.DEVNULL)
            procs.append(peer)
            node_url = "http://127.0.0.1:%d/metrics" % node_port
            wait_ready(node_url)
            theirs = wrk(node_url, 32, args.seconds)
            show("node_exporter", theirs)
            print("  ratio stallscope/node_exporter: p99 %.2f, scrapes/s %.2f  [load %s]"
                  % (ours["p99"] / theirs["p99"], ours["rate"] / theirs["rate"], load_average()))
        print("2. overload: wrk -t 4 -c 200 -d 10s")
        over = wrk(url, 200, 10)
        show("stallscope", over)
        status, took = scrape_from("127.0.0.1", url)
        print("  503 answers %d of %d; right after: one scrape %s in %.3f s  [load %s]"
              % (over["non2xx"], over["requests"], status, took, load_average()))
        print("3. slowloris: 300 connections from 127.0.0.1 trickling a byte a second, 15 s; "
              "curl from 127.0.0.2 every second")
        refused, alive, scrapes = slowloris(port, url)
        codes = [c for c, _ in scrapes]
        worst = max(t for _, t in scrapes)
        print("  slow connections refused at connect %d, still open at the end %d; scrapes "
              "from 127.0.0.2: %d, %d answered 200, slowest %.3f s  [load %s]"
              % (refused, alive, len(scrapes), codes.count("200"), worst, load_average()))
        print("  exporter RSS at the end %d KiB; still running: %s"
              % (rss_kib(exporter.pid), exporter.poll() is None))
    finally:
        for p in procs:
            p.terminate()
            p.wait(10)


if __name__ == "__main__":
    main()

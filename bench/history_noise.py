#!/usr/bin/env python3
"""The run-to-run noise of an unchanged job, and what `history` makes of it.

usage: bench/history_noise.py --binary build/stallscope [--runs 10] [--steps 40]
                              [--dir DIR] [--keep]

Records --runs runs of the same job with nothing changed between them: the
example job (examples/train_cpu.py, Debian's PyTorch on the CPU, input-bound
with two DataLoader workers, as tests/e2e/history_cli.py runs it), each
under `stallscope run`. Then `stallscope history DIR --json` on them, and
prints, per run, the median step time; over the runs, the spread of those
medians (min, max, max/min, the coefficient of variation, the median
absolute deviation scaled to a standard deviation); the noise `history`
computed for the series; the least change it would report (4 x noise, and
at least 10% of the level: docs/commands/history.md); and how many change
points it found, which for an unchanged job must be none. The machine's
load average is printed at the start and the end: the spread moves with it.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def load_average():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", required=True)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--dir")
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    work = args.dir or tempfile.mkdtemp(prefix="stallscope-history-noise-")
    runs_dir = os.path.join(work, "runs")
    os.makedirs(runs_dir, exist_ok=True)
    job = ["/usr/bin/python3", os.path.join(ROOT, "examples", "train_cpu.py"),
           "--data", os.path.join(work, "images"), "--make-images", "320",
           "--mode", "input-bound", "--batch-size", "8", "--epochs", "1",
           "--steps-per-epoch", str(args.steps), "--step-ms", "60"]
    env = dict(os.environ, TRAIN_CPU_WORKERS="2")
    print("%d runs of the unchanged job (%d steps of 60 ms, 2 workers), 2 CPUs, load %s at start"
          % (args.runs, args.steps, load_average()))
    try:
        for i in range(1, args.runs + 1):
            out = os.path.join(runs_dir, "run%02d.db" % i)
            if os.path.exists(out):
                os.unlink(out)
            p = subprocess.run([args.binary, "run", "--interval", "0.25", "--out", out, "--"] + job,
                               env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               text=True, timeout=600)
            if p.returncode != 0:
                sys.exit("run %d: exit %d: %s" % (i, p.returncode, p.stderr[-2000:]))
        p = subprocess.run([args.binary, "history", runs_dir, "--json"], capture_output=True,
                           text=True, timeout=300)
        if p.returncode != 0:
            sys.exit("history: exit %d: %s" % (p.returncode, p.stderr))
        h = json.loads(p.stdout)
        if len(h["jobs"]) != 1:
            sys.exit("history saw %d jobs, not one: %s" % (len(h["jobs"]), h["jobs"]))
        job_h = h["jobs"][0]
        medians = [r["step_median_s"] for r in job_h["runs"] if r["complete"]]
        for r in job_h["runs"]:
            print("  run %2d  step median %.4f s  p90 %.4f s  data wait %.4f s%s" % (
                r["index"], r["step_median_s"], r["step_p90_s"], r["data_wait_s"] or 0,
                "  (outlier)" if r.get("outlier") else ""))
        level = statistics.median(medians)
        mad = statistics.median(abs(m - level) for m in medians) * 1.4826
        cv = statistics.pstdev(medians) / statistics.mean(medians)
        noise = job_h["noise"]
        least = max(4 * noise, 0.10 * level)
        print("spread of the %d medians: min %.4f s, max %.4f s (max/min %.3f), CV %.1f%%, "
              "scaled MAD %.4f s (%.1f%% of the level %.4f s)"
              % (len(medians), min(medians), max(medians), max(medians) / min(medians),
                 100 * cv, mad, 100 * mad / level, level))
        print("history's noise for the series: %.4f s (%.1f%% of the level); the least change "
              "it reports: %.4f s (%.1f%%: max of 4 x noise and 10%%)"
              % (noise, 100 * noise / level, least, 100 * least / level))
        print("change points found: %d (an unchanged job: 0 expected); outliers marked: %d"
              % (len(job_h["change_points"]), sum(1 for r in job_h["runs"] if r.get("outlier"))))
        print("load %s at the end" % load_average())
    finally:
        if not args.keep and not args.dir:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""What the hook's allocation tracing costs the job while it runs.

Runs examples/train_cpu.py (healthy, CPU) under `stallscope run` ROUNDS times
each way, alternating: with STALLSCOPE_TRACE_ALLOC=on (tracing from the first
steps until its snapshots are taken, about 8 s) and =off. For each traced run
it takes the hook's own notes (when tracing started and stopped) from the run
file, and compares the mean step time inside that window with the mean step
time over the same seconds of the untraced run beside it. Prints every round
and the median ratio (traced / untraced; 1.0 = free).

    bench/trace_alloc_cost.py BUILD_DIR [ROUNDS]
"""
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLE = os.path.join(ROOT, "examples", "train_cpu.py")


def run(binary, tmp, name, mode):
    db = os.path.join(tmp, name + ".db")
    env = dict(os.environ, STALLSCOPE_TRACE_ALLOC=mode)
    subprocess.run([binary, "run", "--interval", "0.5", "--force", "--out", db, "--",
                    "/usr/bin/python3", EXAMPLE, "--data", os.path.join(tmp, "images"),
                    "--epochs", "6"], env=env, check=True, capture_output=True)
    return db


def window(db):
    rows = sqlite3.connect(db).execute(
        "select t_seconds, text from allocations where kind = 'note' order by rowid").fetchall()
    start = [t for t, text in rows if text.startswith("tracing started")]
    stop = [t for t, text in rows if text.startswith("tracing stopped")]
    return (start[0], stop[0]) if start and stop else None


def mean_step(db, lo, hi):
    steps = [s for (s,) in sqlite3.connect(db).execute(
        "select step_seconds from steps where t_seconds between ? and ?", (lo, hi))]
    return statistics.mean(steps) if steps else None


def main():
    binary = os.path.join(os.path.abspath(sys.argv[1]), "stallscope")
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    ratios = []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(rounds):
            traced = run(binary, tmp, "on-%d" % i, "on")
            plain = run(binary, tmp, "off-%d" % i, "off")
            w = window(traced)
            if not w:
                print("round %d: the traced run reported no tracing window" % i)
                continue
            a, b = mean_step(traced, *w), mean_step(plain, *w)
            if not a or not b:
                print("round %d: no steps in %.1f-%.1f s" % (i, *w))
                continue
            ratios.append(a / b)
            print("round %d: traced %.1f-%.1f s: step %.1f ms traced, %.1f ms untraced: %.2fx"
                  % (i, w[0], w[1], a * 1e3, b * 1e3, a / b))
    if ratios:
        print("median step time while tracing / untraced: %.2fx over %d rounds"
              % (statistics.median(ratios), len(ratios)))


if __name__ == "__main__":
    main()

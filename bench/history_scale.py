"""`stallscope history` over many run files: how long it takes to read N
run files and how much memory it holds as N grows, against reading the
same step rows with the sqlite3 command-line tool (the floor: what any
reader pays to get the steps off the disk; no other tool finds a job's
change points).

    /usr/bin/python3 bench/history_scale.py --binary build/stallscope \
        [--dir /tmp/stallscope-history-scale] [--runs 250,1000] [--steps 300]

Two real runs of examples/train_cpu.py are recorded once under --dir by
`stallscope run` (two loader workers, then none, --steps steps each), or
taken from --from DIR (any two run files). The N copies are those two
files, the first half of A and the second of B, each with its start time
shifted (run.started_utc and node.start_realtime_seconds) an hour after the
one before, so that they read as one job run N times with one change in
the middle. For each N it prints, from /usr/bin/time, the wall time and
peak RSS of `history DIR --json`, the same for sqlite3 reading every steps
row of the N files (in groups of 10 attached databases, its limit), the
ratio, and whether history found the one change at run N/2 + 1. The goal:
1,000 files in under 10 s on a 2-vCPU machine, RSS flat in N apart from
each run's summary.
"""
import argparse
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLE = os.path.join(ROOT, "examples", "train_cpu.py")


def timed(cmd, stdout=subprocess.DEVNULL):
    """(wall seconds, peak RSS bytes, stdout) of cmd: the wall time measured
    here (finer than /usr/bin/time's 10 ms), the RSS from /usr/bin/time."""
    out = tempfile.NamedTemporaryFile(delete=False)
    out.close()
    try:
        start = time.monotonic()
        p = subprocess.run(["/usr/bin/time", "-f", "%e %M", "-o", out.name] + cmd,
                           stdout=stdout, stderr=subprocess.PIPE)
        if p.returncode != 0:
            sys.exit("failed (%d): %s\n%s" % (p.returncode, " ".join(cmd[:3]),
                                              p.stderr.decode(errors="replace")[-2000:]))
        wall = time.monotonic() - start
        rss_kib = open(out.name).read().split()[-1]
        return wall, int(rss_kib) * 1024, p.stdout
    finally:
        os.unlink(out.name)


def record_two(binary, folder, steps):
    """Two real run files of the example job: A with two workers, B with none."""
    data = os.path.join(folder, "images")
    job = ["/usr/bin/python3", EXAMPLE, "--data", data, "--make-images", str(8 * steps),
           "--mode", "input-bound", "--batch-size", "8", "--epochs", "1",
           "--steps-per-epoch", str(steps), "--step-ms", "60"]
    files = []
    for name, workers in (("a", "2"), ("b", "0")):
        out = os.path.join(folder, name + ".db")
        if not os.path.exists(out):
            env = dict(os.environ, TRAIN_CPU_WORKERS=workers)
            subprocess.run([binary, "run", "--interval", "0.25", "--out", out, "--"] + job,
                           env=env, check=True, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
        files.append(out)
    return files


def make_copies(sources, folder, n):
    """n copies, the first half of sources[0], an hour apart."""
    if os.path.isdir(folder) and len(os.listdir(folder)) == n:
        return
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    base = 1767225600  # 2026-01-01T00:00:00Z
    for i in range(n):
        path = os.path.join(folder, "run%05d.db" % i)
        shutil.copy(sources[0] if i < n // 2 else sources[1], path)
        start = base + 3600 * i
        with sqlite3.connect(path) as con:
            utc = subprocess.run(["date", "-u", "-d", "@%d" % start, "+%Y-%m-%dT%H:%M:%SZ"],
                                 capture_output=True, text=True, check=True).stdout.strip()
            con.execute("UPDATE run SET started_utc = ?", (utc,))
            con.execute("UPDATE node SET start_realtime_seconds = ?", (float(start),))
        con.close()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--binary", required=True)
    p.add_argument("--dir", default=os.path.join(tempfile.gettempdir(),
                                                 "stallscope-history-scale"))
    p.add_argument("--from", dest="source", help="a folder with two run files, a.db and b.db")
    p.add_argument("--runs", default="250,1000")
    p.add_argument("--steps", type=int, default=300)
    args = p.parse_args()
    binary = os.path.abspath(args.binary)
    os.makedirs(args.dir, exist_ok=True)
    if args.source:
        sources = [os.path.join(args.source, "a.db"), os.path.join(args.source, "b.db")]
    else:
        sources = record_two(binary, args.dir, args.steps)
    size = sum(os.path.getsize(s) for s in sources) / 2
    print("run files: %s (%.0f KiB on average); %d CPUs" % (
        " ".join(sources), size / 1024, os.cpu_count()))
    print("%6s %10s %12s %10s %12s %7s  %s" % ("runs", "history s", "history RSS",
                                               "sqlite3 s", "sqlite3 RSS", "ratio", "change"))
    for n in [int(x) for x in args.runs.split(",")]:
        folder = os.path.join(args.dir, "runs-%d" % n)
        make_copies(sources, folder, n)
        wall, rss, out = timed([binary, "history", folder, "--json"], stdout=subprocess.PIPE)
        job = json.loads(out)["jobs"][0]
        found = [c["at"]["index"] for c in job["change_points"]]
        files = sorted(os.path.join(folder, f) for f in os.listdir(folder))
        s_wall, s_rss = 0.0, 0
        for k in range(0, len(files), 10):
            group = files[k:k + 10]
            sql = "".join("ATTACH '%s' AS n%d;" % (f, i) for i, f in enumerate(group))
            union = " UNION ALL ".join(
                "SELECT rank, step, wait_seconds, step_seconds FROM n%d.steps" % i
                for i in range(len(group)))
            w, r, _ = timed(["sqlite3", ":memory:", sql + union + ";"])
            s_wall += w
            s_rss = max(s_rss, r)
        print("%6d %10.2f %9.1f MiB %10.2f %8.1f MiB %6.1fx  at run %s (expected %d)" % (
            n, wall, rss / 2**20, s_wall, s_rss / 2**20, wall / max(s_wall, 1e-3),
            ",".join(map(str, found)) or "none", n // 2 + 1))


if __name__ == "__main__":
    main()

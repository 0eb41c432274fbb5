"""A day's job compressed: `stallscope run` sampling at the 50 ms floor for
--minutes (30 by default, about 36,000 samples) a hooked job that keeps
--procs processes (64) coming and going (each lives 0.5 to 5 s), reporting
20 steps a second and an epoch every 30 s. Every --every seconds it prints
run's RSS and the run file's size (with its -wal) and the bytes per sample;
at the end, the growth of both from the first tenth of the run to its end
(linear: bytes per sample stays flat, RSS stays put), then the time of
`report` on the file against sqlite3 reading its samples and processes
rows (the floor: what any reader pays to get the rows off the disk), and
the ratio. When the run was shorter than 36,000 samples, the file is also
grown to 36,000 by repeating its rows (intervals and times shifted, one
SQL statement per table) and `report` is timed on that copy too.

    /usr/bin/python3 bench/long_run.py build/stallscope [--minutes M] [--procs N]
        [--interval S] [--dir DIR] [--every S]

The machine is shared: the figures vary with its load; run it alone.
"""
import argparse
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time

TARGET_SAMPLES = 36000

JOB = r"""
import os, random, sys, time
import stallscope
procs, seconds = int(sys.argv[1]), float(sys.argv[2])
rng = random.Random(1)
children = {}
end = time.monotonic() + seconds
def spawn():
    life = rng.uniform(0.5, 5.0)
    pid = os.fork()
    if pid == 0:
        t = time.monotonic() + life
        while time.monotonic() < t:
            sum(range(2000)); time.sleep(0.05)
        os._exit(0)
    children[pid] = True
epoch = 0
while time.monotonic() < end:
    stallscope.epoch(epoch); epoch += 1
    epoch_end = min(end, time.monotonic() + 30)
    for _ in stallscope.loader(iter(lambda: time.monotonic() < epoch_end, False)):
        while len(children) < procs:
            spawn()
        while True:
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            children.pop(pid, None)
        time.sleep(0.05)
for pid in list(children):
    os.waitpid(pid, 0)
"""


def rss_kib(pid):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def file_bytes(db, suffixes=("", "-wal")):
    return sum(os.path.getsize(db + s) for s in suffixes if os.path.exists(db + s))


def samples_in(db):
    con = sqlite3.connect("file:%s?mode=ro" % db, uri=True)
    try:
        return con.execute("select count(*) from samples").fetchone()[0]
    finally:
        con.close()


def timed(argv):
    """Wall seconds and peak RSS KiB of argv, from /usr/bin/time."""
    out = subprocess.run(["/usr/bin/time", "-f", "%e %M"] + argv, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True)
    if out.returncode != 0:
        sys.exit("%s failed: %s" % (" ".join(argv), out.stderr[-2000:]))
    wall, rss = out.stderr.strip().splitlines()[-1].split()
    return float(wall), int(rss)


def compare_report(binary, db, label):
    ours = min(timed([binary, "report", db, "--json"]) for _ in range(3))
    peer = min(timed(["sqlite3", db, "select * from samples; select * from processes"])
               for _ in range(3))
    print("%s: report %.2f s (peak RSS %.1f MiB); sqlite3 reading samples and processes "
          "%.2f s; ratio %.1f" % (label, ours[0], ours[1] / 1024, peer[0],
                                  ours[0] / max(peer[0], 0.01)))


def grow(db, target):
    """A copy of db with its rows repeated until `target` samples."""
    big = db[:-3] + "-%d.db" % target
    shutil.copy(db, big)
    con = sqlite3.connect(big)
    n, span = con.execute("select count(*), max(t_seconds) + min(t_seconds) from samples").fetchone()
    tables = [r[0] for r in con.execute(
        "select name from sqlite_master where type = 'table' and sql like '%interval INTEGER%'")]
    copies = 1
    while n * copies < target:
        for table in tables:
            cols = [r[1] for r in con.execute("pragma table_info(%s)" % table)]
            shifted = ["interval + %d" % (n * copies) if c == "interval"
                       else "t_seconds + %f" % (span * copies) if c == "t_seconds" else c
                       for c in cols]
            con.execute("insert into %s (%s) select %s from %s where interval < %d" % (
                table, ",".join(cols), ",".join(shifted), table, n))
        copies += 1
    con.commit()
    total = con.execute("select count(*) from samples").fetchone()[0]
    con.close()
    return big, total


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("binary")
    parser.add_argument("--minutes", type=float, default=30)
    parser.add_argument("--procs", type=int, default=64)
    parser.add_argument("--interval", type=float, default=0.05)
    parser.add_argument("--every", type=float, default=30)
    parser.add_argument("--dir", default=None)
    args = parser.parse_args()
    work = args.dir or tempfile.mkdtemp(prefix="stallscope-long-run-")
    os.makedirs(work, exist_ok=True)
    db = os.path.join(work, "long.db")
    for s in ("", "-wal", "-shm"):
        if os.path.exists(db + s):
            os.unlink(db + s)
    seconds = args.minutes * 60
    run = subprocess.Popen([args.binary, "run", "--interval", str(args.interval), "--out", db,
                            "--", "/usr/bin/python3", "-c", JOB, str(args.procs), str(seconds)],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    print("run --interval %s for %.1f min, %d processes coming and going; machine shared, "
          "load %s" % (args.interval, args.minutes, args.procs, os.getloadavg()))
    # The -wal is reused after each checkpoint (at most a few MiB): the file
    # itself is what grows with the run.
    print("%8s %9s %10s %10s %10s %14s" % ("t s", "samples", "RSS MiB", "file MiB", "wal MiB",
                                            "bytes/sample"))
    start = time.monotonic()
    rows = []
    while run.poll() is None:
        time.sleep(min(args.every, max(1.0, seconds / 20)))
        rss = rss_kib(run.pid)
        if rss is None or not os.path.exists(db):
            continue
        n, size, wal = samples_in(db), file_bytes(db, ("",)), file_bytes(db, ("-wal",))
        rows.append((time.monotonic() - start, n, rss, size + wal))
        print("%8.0f %9d %10.1f %10.2f %10.2f %14.0f" % (
            rows[-1][0], n, rss / 1024, size / 2**20, wal / 2**20, (size + wal) / max(n, 1)))
    if run.returncode != 0:
        sys.exit("run exited %d" % run.returncode)
    n, size = samples_in(db), file_bytes(db)  # closed: the -wal folded in
    first = next(r for r in rows if r[0] >= rows[-1][0] / 10)
    print("samples %d; file %.2f MiB, %.0f bytes per sample (from the first tenth to the end: "
          "%.0f bytes per sample)" % (n, size / 2**20, size / n,
                                      (rows[-1][3] - first[3]) / max(rows[-1][1] - first[1], 1)))
    print("run's RSS: %.1f MiB at %.0f s, %.1f MiB at the end (%.0f s)" % (
        first[2] / 1024, first[0], rows[-1][2] / 1024, rows[-1][0]))
    compare_report(args.binary, db, "%d samples" % n)
    if n < TARGET_SAMPLES:
        big, total = grow(db, TARGET_SAMPLES)
        print("grown copy: %d samples, %.2f MiB" % (total, file_bytes(big) / 2**20))
        compare_report(args.binary, big, "%d samples (grown)" % total)


if __name__ == "__main__":
    main()

"""`stallscope report` over a large job's run files: how long it takes and
how much memory it holds as the node count grows, against reading the same
rows with the sqlite3 command-line tool (the floor: what any reader pays to
get the step records off the disk).

    /usr/bin/python3 bench/report_scale.py --binary build/stallscope \
        [--dir /tmp/stallscope-report-scale] [--nodes 8,16,32,64] [--ranks 8] \
        [--hours 1] [--steps-per-s 5]

The files are made once under --dir (and reused when they are there and of
the same shape): the schema is the one `stallscope run` writes (a real run
of `python3 -c pass` under this binary is the template, its rows deleted),
then each node's file is filled as the recorder fills it: a sample a
second for --hours (host figures, realtime, the job interface's rates),
--ranks ranks each ending --steps-per-s steps a second with their data and
sync waits (stallscope.ddp's records), each rank's process and 2 loader
workers in every sample, the node table, the ranks' hello and loader
records. Node 5's ranks compute 30% longer, so the straggler rule has a
straggler to find. For each node count N the first N files are the job
(their node table says N nodes), and it prints, from /usr/bin/time, the
wall time and peak RSS of `report F1 ... FN --json`, the same for sqlite3
reading every steps and step_sync row of the N files, the ratio, and time
and memory per node, and the per-node-hour file size. (It measures; it does
not extrapolate to job sizes it did not run.)
"""
import argparse
import os
import random
import sqlite3
import subprocess
import sys
import tempfile
import time

WORKERS_PER_RANK = 2


def template_schema(binary):
    """The CREATE statements of a run file the binary writes."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "t.db")
        subprocess.run([binary, "run", "--out", path, "--", sys.executable, "-c", "pass"],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        with sqlite3.connect(path) as con:
            rows = con.execute("SELECT sql FROM sqlite_master WHERE type = 'table' "
                               "AND name NOT LIKE 'sqlite_%'").fetchall()
            meta = con.execute("SELECT key, value FROM meta").fetchall()
            version = con.execute("PRAGMA user_version").fetchone()[0]
    return [r[0] for r in rows], (meta, version)


def make_node(path, schema, meta, node, args):
    rng = random.Random(node)
    ranks = args.ranks
    seconds = int(args.hours * 3600)
    step_s = 1.0 / args.steps_per_s
    slow = node == 5
    start_realtime = 1796000000.0
    tmp = path + ".part"
    if os.path.exists(tmp):
        os.unlink(tmp)
    con = sqlite3.connect(tmp)
    con.execute("PRAGMA journal_mode = OFF")
    con.execute("PRAGMA synchronous = OFF")
    for sql in schema:
        con.execute(sql)
    con.executemany("INSERT INTO meta VALUES (?, ?)", meta[0])
    con.execute("PRAGMA user_version = %d" % meta[1])
    con.execute("INSERT INTO run VALUES (1, ?, ?, ?, 100.0, 1.0, 1000, 64, ?, NULL, 'nvme0n1', "
                "?, 0, NULL, 0)",
                ("torchrun-stand-in python train.py", "node%03d" % node,
                 "2026-12-01T10:00:00Z", 1 << 40, float(seconds)))
    con.execute("INSERT INTO node VALUES (1, ?, ?, ?, ?, '10.0.0.1', 29500, '', 'flags', ?, "
                "?, 0.0001, 'ib0')",
                (node, args.max_nodes, ranks, args.max_nodes * ranks, start_realtime,
                 0.0 if node == 0 else rng.uniform(-0.002, 0.002)))
    samples, processes, steps, syncs = [], [], [], []
    for i in range(1, seconds + 1):
        samples.append((i, float(i), ranks * (1 + WORKERS_PER_RANK), 40 << 30, 38 << 30,
                        ranks * 300.0, ranks * 150.0, 900 << 30, 0, 0.0, 0.0, 55.0, 1.0,
                        rng.uniform(10, 30), rng.uniform(0.2, 1.0), rng.uniform(1e4, 5e4),
                        ranks * args.steps_per_s, 0.02, start_realtime + i,
                        rng.uniform(9e9, 1.1e10), rng.uniform(9e9, 1.1e10)))
        for r in range(ranks):
            pid = 10000 + r * 10
            processes.append((i, float(i), pid, 1000, "python3", 6 << 30, 100.0, 1.0, 0.0,
                              50.0))
            for w in range(WORKERS_PER_RANK):
                processes.append((i, float(i), pid + 1 + w, pid, "pt_data_worker", 2 << 30,
                                  25.0, 3.0, 4000.0, 4000.0))
    for r in range(ranks):
        g = node * ranks + r
        compute = step_s * (0.78 if not slow else 1.0)
        t = 0.0
        for s in range(seconds * args.steps_per_s):
            t += step_s
            wait = rng.uniform(0.001, 0.006)
            sync = max(0.0005, step_s - compute - wait) if not slow else 0.0008
            steps.append((int(t) + 1, g, s, t, wait, step_s))
            syncs.append((int(t) + 1, g, s, sync, compute * 0.9))
    # In the order the recorder appends them: each interval's records in
    # time order, the ranks' records of one moment together.
    steps.sort(key=lambda row: (row[3], row[1]))
    syncs.sort(key=lambda row: (row[2], row[1]))
    con.executemany("INSERT INTO samples VALUES (%s)" % ",".join("?" * 21), samples)
    con.executemany("INSERT INTO processes VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", processes)
    con.executemany("INSERT INTO steps VALUES (?, ?, ?, ?, ?, ?)", steps)
    con.executemany("INSERT INTO step_sync VALUES (?, ?, ?, ?, ?)", syncs)
    con.executemany("INSERT INTO ranks VALUES (1, ?, ?, ?, ?, ?)",
                    [(10000 + r * 10, node * ranks + r, r, args.max_nodes * ranks,
                      "node%03d" % node) for r in range(ranks)])
    con.executemany("INSERT INTO loaders VALUES (1, ?, ?, 256, ?, 1, 4, 1, 1281167, 1)",
                    [(node * ranks + r, 10000 + r * 10, WORKERS_PER_RANK) for r in range(ranks)])
    con.commit()
    con.close()
    os.replace(tmp, path)


def timed(cmd):
    """(wall seconds, peak RSS bytes) of cmd, from /usr/bin/time."""
    out = tempfile.NamedTemporaryFile(delete=False)
    out.close()
    try:
        p = subprocess.run(["/usr/bin/time", "-f", "%e %M", "-o", out.name] + cmd,
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        if p.returncode != 0:
            sys.exit("failed (%d): %s\n%s" % (p.returncode, " ".join(cmd[:3]),
                                              p.stderr.decode(errors="replace")[-2000:]))
        wall, rss_kib = open(out.name).read().split()[-2:]
        return float(wall), int(rss_kib) * 1024
    finally:
        os.unlink(out.name)


def set_nodes(files, n, ranks):
    for f in files:
        with sqlite3.connect(f) as con:
            con.execute("UPDATE node SET nnodes = ?, world_size = ?", (n, n * ranks))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--binary", default="build/stallscope")
    ap.add_argument("--dir", default=os.path.join(tempfile.gettempdir(),
                                                  "stallscope-report-scale"))
    ap.add_argument("--nodes", default="8,16,32,64")
    ap.add_argument("--ranks", type=int, default=8)
    ap.add_argument("--hours", type=float, default=1.0)
    ap.add_argument("--steps-per-s", type=int, default=5)
    args = ap.parse_args()
    counts = sorted(int(x) for x in args.nodes.split(","))
    args.max_nodes = counts[-1]
    binary = os.path.abspath(args.binary)
    shape = "%d ranks, %g h, %d steps/s, records in time order, schema of %s" % (
        args.ranks, args.hours, args.steps_per_s, binary)
    os.makedirs(args.dir, exist_ok=True)
    stamp = os.path.join(args.dir, "shape")
    schema, meta = template_schema(binary)
    shape += "\nuser_version %d\n" % meta[1] + "\n".join(schema)
    if not os.path.exists(stamp) or open(stamp).read() != shape:
        for name in os.listdir(args.dir):
            os.unlink(os.path.join(args.dir, name))
    files = [os.path.join(args.dir, "node%03d.db" % n) for n in range(args.max_nodes)]
    started = time.monotonic()
    made = 0
    for n, f in enumerate(files):
        if not os.path.exists(f):
            make_node(f, schema, meta, n, args)
            made += 1
    with open(stamp, "w") as s:
        s.write(shape)
    if made:
        print("made %d run files in %.0f s" % (made, time.monotonic() - started))
    size = os.path.getsize(files[0])
    rows = args.ranks * args.steps_per_s * int(args.hours * 3600)
    print("each node: %d ranks x %g h at 1 s, %d steps/s a rank: %d step rows, %d samples; "
          "file %.1f MiB (%.1f MiB per node-hour)"
          % (args.ranks, args.hours, args.steps_per_s, rows, int(args.hours * 3600),
             size / 2**20, size / 2**20 / args.hours))
    print("%s, %d CPUs, load average %s" % (binary, os.cpu_count(),
                                            " ".join("%.2f" % x for x in os.getloadavg())))
    print("%6s %12s %12s %14s %14s %10s %12s" % ("nodes", "report s", "report RSS",
                                               "sqlite3 s", "sqlite3 RSS", "ratio",
                                               "s / node"))
    for n in counts:
        job = files[:n]
        set_nodes(job, n, args.ranks)
        # Warm the page cache so both read from memory, as a second look does.
        for f in job:
            with open(f, "rb") as fh:
                while fh.read(1 << 20):
                    pass
        wall, rss = timed([binary, "report"] + job + ["--json"])
        # sqlite3 attaches at most 10 databases: read in groups.
        peer_wall, peer_rss = 0.0, 0
        for g in range(0, n, 10):
            group = job[g:g + 10]
            sql = "".join("ATTACH '%s' AS n%d;" % (f, i) for i, f in enumerate(group))
            union = " UNION ALL ".join(
                "SELECT (SELECT sum(step_seconds) + sum(wait_seconds) FROM n%d.steps) + "
                "(SELECT sum(sync_seconds) FROM n%d.step_sync)" % (i, i)
                for i in range(len(group)))
            w, r = timed(["sqlite3", ":memory:", sql + union + ";"])
            peer_wall += w
            peer_rss = max(peer_rss, r)
        print("%6d %12.2f %9.0f MiB %14.2f %10.0f MiB %9.1fx %12.3f"
              % (n, wall, rss / 2**20, peer_wall, peer_rss / 2**20,
                 wall / peer_wall if peer_wall else float("nan"), wall / n))
    print("goal at 64 nodes: under 10 s and 1 GiB")


if __name__ == "__main__":
    main()

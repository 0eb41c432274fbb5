#!/usr/bin/python3
"""The critical path's cost as traces grow, against HTA's on the same files.

Writes synthetic traces of growing size with bench/gen_trace.py (the size is
the trace file as written: uncompressed JSON), runs `stallscope trace FILE
--json --critical-path-instance 0:N` (the critical path over every step: the
largest graph) and, with --hta-src, HTA's own TraceAnalysis load and
critical_path_analysis over the same window, and prints per size: events,
stallscope's wall seconds, peak RSS and µs per event (flat when the work is
linear in the events), the path's graph alone (the run less one with an
annotation the trace lacks, which stops before the window), HTA's seconds (after
its import where it finished, else the child's wall time) and peak RSS, the
ratio, and what HTA did: finished, ran out of memory (the cap)
or hit the time limit; where it finished, its path against stallscope's
(nodes, total, largest share difference). stallscope: best of --runs; HTA:
one run. Both run under `nice -n 19`; HTA also under `prlimit --as=CAP`
(--hta-memory, so it cannot take the machine) and `timeout` (--hta-timeout).
Peak RSS is /usr/bin/time's maximum resident set size. The machine may run
other work: say so beside the figures.

  bench/critical_path_scale.py --binary build/stallscope [--hta-src DIR]
      [--sizes 64M,256M,512M,1G,2G] [--dir /var/tmp/cp-scale] [--keep]
      [--hta-memory 14G] [--hta-timeout 1800] [--runs 3]

The traces go under --dir (never the repository) and each is deleted after
its size is measured unless --keep.
"""
import argparse
import contextlib
import io
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time

HERE = os.path.abspath(__file__)
UNITS = {"": 1, "K": 1e3, "M": 1e6, "G": 1e9}


def size_arg(text):
    """64M, 1G, 2e9 or 2000000 as bytes (decimal units, as the file sizes)."""
    m = re.fullmatch(r"([0-9.e+]+)([KMG]?)B?", text.strip().upper())
    if not m:
        raise argparse.ArgumentTypeError("not a size: %r (say 64M, 1G or 2e9)" % text)
    return float(m.group(1)) * UNITS[m.group(2)]


def gen(path, size):
    """Writes the trace; its events and steps as gen_trace.py reports them."""
    out = subprocess.run([sys.executable, os.path.join(os.path.dirname(HERE), "gen_trace.py"),
                          path, "--bytes", str(size)], check=True, capture_output=True, text=True)
    m = re.search(r"(\d+) events, (\d+) steps", out.stdout)
    return int(m.group(1)), int(m.group(2))


def timed(args, timeout=None):
    """Runs args under /usr/bin/time: (return code, wall s, peak RSS bytes, stdout)."""
    with tempfile.NamedTemporaryFile("r") as t:
        p = subprocess.run(["/usr/bin/time", "-f", "%e %M", "-o", t.name] + args,
                           capture_output=True, text=True, timeout=timeout)
        fields = (t.read().strip().splitlines() or ["nan 0"])[-1].split()
    return p.returncode, float(fields[0]), int(fields[1]) * 1024, p.stdout


def stallscope(binary, path, steps, runs, annotation=None):
    """Best wall seconds and largest peak RSS of `stallscope trace` and its
    critical path; with an annotation the trace lacks, the run without the
    path's graph."""
    args = ["nice", "-n", "19", binary, "trace", path, "--json",
            "--critical-path-instance", "0:%d" % (steps - 1)]
    if annotation:
        args += ["--critical-path-annotation", annotation]
    best, rss = float("inf"), 0
    for _ in range(runs):
        rc, wall, peak, out = timed(args)
        if rc not in (0, 2, 3):
            sys.exit("stallscope failed (exit %d) on %s" % (rc, path))
        best, rss = min(best, wall), max(rss, peak)
    return best, rss, json.loads(out)["ranks"][0].get("critical_path", {})


def hta_child(src, folder, steps):
    """In a child process under the caps: HTA's load + critical path; prints
    its outcome as one JSON line."""
    sys.path.insert(0, src)
    t0 = time.perf_counter()
    try:
        from hta.trace_analysis import TraceAnalysis
        t0 = time.perf_counter()  # after the import, as bench/trace_vs_hta.py times HTA
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            ta = TraceAnalysis(trace_dir=folder)
            g, ok = ta.critical_path_analysis(rank=0, annotation="ProfilerStep",
                                              instance_id=(0, steps - 1),
                                              data_load_events=["enumerate(DataLoader)"])
        edges = g.get_critical_path_breakdown() if ok else None
        path = None if edges is None else {
            "total": float(edges.duration.sum()), "nodes": len(g.critical_path_nodes),
            "by_bound": {k: float(v) for k, v in edges.groupby("bound_by").duration.sum().items()}}
        result = {"outcome": "finished" if path else "failed", "path": path}
    except MemoryError:
        result = {"outcome": "out of memory (cap)"}
    result["seconds"] = time.perf_counter() - t0
    result["peak_rss"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(json.dumps(result), flush=True)


def hta(src, folder, steps, memory, limit):
    """HTA in a child under nice, the address-space cap and the time limit:
    its outcome, seconds, peak RSS and path."""
    args = ["nice", "-n", "19", "prlimit", "--as=%d" % memory, "timeout", str(int(limit)),
            sys.executable, HERE, "--hta-child", src, folder, str(steps)]
    rc, wall, peak, out = timed(args)
    lines = [line for line in out.splitlines() if line.startswith("{")]
    got = json.loads(lines[-1]) if lines else {}
    if rc == 124:
        got["outcome"] = "time limit (%ds)" % limit
    elif not lines:  # killed or aborted before it could say (an allocation outside Python)
        got["outcome"] = "out of memory (cap)" if rc in (-6, 134, -9, 137, -11, 139) else \
            "failed (exit %d)" % rc
    got["peak_rss"] = max(peak, got.get("peak_rss", 0))
    got["wall"] = got["seconds"] if got["outcome"] == "finished" else wall
    return got


def differences(cp, theirs):
    """Largest difference in percentage points between the two paths' shares
    (the loader's time folded into cpu_bound, where HTA counts it)."""
    if not theirs or not cp or not theirs["total"]:
        return float("nan")
    ours = dict(cp.get("by_bound_us", {}))
    ours["cpu_bound"] = ours.get("cpu_bound", 0) + ours.pop("data_loading", 0)
    keys = set(ours) | set(theirs["by_bound"])
    return max(abs(ours.get(k, 0) / cp["total_us"] - theirs["by_bound"].get(k, 0) /
                   theirs["total"]) * 100 for k in keys if k)


def measure(a, size):
    """One size: generate, run both sides, print its lines, delete the trace."""
    folder = os.path.join(a.dir, "%d" % size)
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, "rank0.json")
    events, steps = gen(path, size)
    steps -= 1  # HTA's TraceAnalysis cuts the last step off (gen_trace writes no GPU steps)
    file_bytes = os.path.getsize(path)
    ours, rss, cp = stallscope(a.binary, path, steps, a.runs)
    without, _, _ = stallscope(a.binary, path, steps, a.runs, "no such annotation")
    theirs = hta(a.hta_src, folder, steps, a.hta_memory, a.hta_timeout) if a.hta_src else {
        "outcome": "not run", "wall": float("nan"), "peak_rss": 0}
    ratio = "%.1fx" % (theirs["wall"] / ours) if theirs["outcome"] == "finished" else "-"
    print("%9.0fM %10d %9.2fs %7.0fM %6.2f %9.1fs %7.0fM %7s  %s" % (
        file_bytes / 1e6, events, ours, rss / 2**20, ours / events * 1e6, theirs["wall"],
        theirs["peak_rss"] / 2**20, ratio, theirs["outcome"]), flush=True)
    print("%10s stallscope: path %d nodes, total %.0f us; the path's graph %.2fs, %.3f us/ev; "
          "peak RSS %.1fx the file" % ("", cp.get("nodes", 0), cp.get("total_us", 0),
                                       ours - without, (ours - without) / events * 1e6,
                                       rss / file_bytes), flush=True)
    if theirs.get("path"):
        print("%10s HTA's path: %d nodes, total %.0f us; largest share difference %.3f points"
              % ("", theirs["path"]["nodes"], theirs["path"]["total"],
                 differences(cp, theirs["path"])), flush=True)
    if not a.keep:
        os.remove(path)
        os.rmdir(folder)


def main():
    if len(sys.argv) == 5 and sys.argv[1] == "--hta-child":
        return hta_child(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--binary", required=True)
    p.add_argument("--hta-src", help="HTA's source checkout (holds hta/)")
    p.add_argument("--sizes", default="2M,4M,8M,16M", help="trace file sizes, comma-separated")
    p.add_argument("--dir", default="/var/tmp/cp-scale", help="where the traces are written")
    p.add_argument("--keep", action="store_true", help="keep the traces")
    p.add_argument("--runs", type=int, default=3, help="stallscope runs per size (best kept)")
    p.add_argument("--hta-memory", type=size_arg, default=size_arg("14G"),
                   help="HTA's address-space cap (prlimit --as)")
    p.add_argument("--hta-timeout", type=float, default=1800, help="HTA's time limit, seconds")
    a = p.parse_args()
    a.hta_src = a.hta_src and os.path.abspath(a.hta_src)
    sizes = [size_arg(s) for s in a.sizes.split(",")]
    print("%10s %10s %10s %8s %6s %10s %8s %7s  %s" % (
        "file", "events", "stallscope", "RSS", "us/ev", "hta", "RSS", "ratio", "HTA's outcome"))
    print("(stallscope best of %d, HTA one run capped at %.0f GB of address space and %.0f s, "
          "both nice 19, on a machine others share: the load varies)"
          % (a.runs, a.hta_memory / 1e9, a.hta_timeout))
    for size in sizes:
        measure(a, size)


if __name__ == "__main__":
    sys.exit(main())

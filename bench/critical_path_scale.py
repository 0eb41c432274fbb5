#!/usr/bin/python3
"""The critical path's cost as traces grow, against HTA's on the same files.

Writes synthetic traces of growing size with bench/gen_trace.py, runs
`stallscope trace FILE --json --critical-path-instance 0:N` (the critical path over every step:
the largest graph) and, with --hta-src, HTA's own critical_path_analysis
over the same window, and prints per size: events, stallscope's wall
seconds and µs per event (flat when the work is linear in the events), the
same for the path's graph alone (the run less one with an annotation the trace
lacks, which stops before the window), HTA's seconds for load + critical path
and the ratio, and HTA's path against stallscope's (nodes, total, largest
share difference). stallscope: best of 3 runs; HTA: one. The machine may run
other work: say so beside the figures.

  bench/critical_path_scale.py --binary build/stallscope [--hta-src DIR]
      [--sizes 2e6,4e6,8e6,16e6] [--dir /tmp/cp-scale]
"""
import argparse
import contextlib
import io
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def gen(path, size):
    out = subprocess.run([sys.executable, os.path.join(HERE, "gen_trace.py"), path,
                          "--bytes", str(size)], check=True, capture_output=True, text=True)
    return out.stdout.strip()


def steps_of(path):
    """The ProfilerStep rows HTA keeps: those before the last CPU step's start
    (HTA's TraceAnalysis cuts the last step off), GPU annotations included."""
    with open(path) as f:
        rows = [e for e in json.load(f)["traceEvents"]
                if str(e.get("name", "")).startswith("ProfilerStep#") and "dur" in e]
    last = max(e["ts"] for e in rows if e.get("cat") != "gpu_user_annotation")
    return sum(1 for e in rows if e["ts"] < last)


def stallscope(binary, path, steps, annotation=None):
    """Seconds of `stallscope trace` (best of 3) and its critical path; with an
    annotation the trace lacks, the same run without the path's graph."""
    args = [binary, "trace", path, "--json", "--critical-path-instance", "0:%d" % (steps - 1)]
    if annotation:
        args += ["--critical-path-annotation", annotation]
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        out = subprocess.run(args, capture_output=True, text=True)
        best = min(best, time.perf_counter() - t0)
        if out.returncode not in (0, 2, 3):
            sys.exit("stallscope failed: " + out.stderr)
    cp = json.loads(out.stdout)["ranks"][0].get("critical_path", {})
    return best, cp


def hta(src, folder, steps):
    """HTA's seconds (load + critical path) and its path: total and µs by bound."""
    sys.path.insert(0, src)
    from hta.trace_analysis import TraceAnalysis
    t0 = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        ta = TraceAnalysis(trace_dir=folder)
        g, ok = ta.critical_path_analysis(rank=0, annotation="ProfilerStep",
                                          instance_id=(0, steps - 1),
                                          data_load_events=["enumerate(DataLoader)"])
    seconds = time.perf_counter() - t0
    edges = g.get_critical_path_breakdown() if ok else None
    if edges is None:
        return seconds, None
    return seconds, {"total": float(edges.duration.sum()), "nodes": len(g.critical_path_nodes),
                     "by_bound": {k: float(v) for k, v in
                                  edges.groupby("bound_by").duration.sum().items()}}


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


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--binary", required=True)
    p.add_argument("--hta-src")
    p.add_argument("--sizes", default="2e6,4e6,8e6,16e6")
    p.add_argument("--dir", default="/tmp/cp-scale")
    a = p.parse_args()
    print("%10s %9s %10s %8s %10s %7s" % ("bytes", "events", "stallscope", "us/ev", "hta", "ratio"))
    print("(stallscope best of 3, HTA one run, on a machine others share: the load varies)")
    for size in [float(s) for s in a.sizes.split(",")]:
        folder = os.path.join(a.dir, "%d" % size)
        os.makedirs(folder, exist_ok=True)
        path = os.path.join(folder, "rank0.json")
        gen(path, size)
        with open(path) as f:
            events = len(json.load(f)["traceEvents"])
        steps = steps_of(path)
        ours, cp = stallscope(a.binary, path, steps)
        without, _ = stallscope(a.binary, path, steps, "no such annotation")
        theirs, path = hta(a.hta_src, folder, steps) if a.hta_src else (float("nan"), None)
        print("%10d %9d %9.2fs %8.2f %9.2fs %6.1fx  path %d nodes, total %.0f us; "
              "the path's graph %.3fs, %.3f us/ev" %
              (size, events, ours, ours / events * 1e6, theirs, theirs / ours,
               cp.get("nodes", 0), cp.get("total_us", 0), ours - without,
               (ours - without) / events * 1e6), flush=True)
        if path:
            print("%10s HTA's path: %d nodes, total %.0f us; largest share difference %.3f points"
                  % ("", path["nodes"], path["total"], differences(cp, path)), flush=True)


if __name__ == "__main__":
    main()

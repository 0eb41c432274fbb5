"""HTA's memory bandwidth, launch statistics, user annotations and
potential stragglers, written as a test fixture.

For each directory of traces under --traces, runs HTA's own source (--hta-src,
a checkout of github.com/facebookresearch/HolisticTraceAnalysis; nothing of
HTA is in this repository) `get_memory_bw_summary`,
`get_cuda_kernel_launch_stats` (cut-offs 50 us and 100 us),
`get_gpu_user_annotation_breakdown` (duration_ratio 0.8) and
`get_potential_stragglers` (num_candidates 2), and writes them as JSON
(tests/fixtures/traces/hta_launch_reference.json, which
tests/analyze/trace/launches_test.cc compares with). HTA's launch statistics
are one row per launch; the per-kernel-name launch delay p50/p99 are those
rows' delays grouped by the GPU row's name (pandas' quantile). Needs Debian's
python3-pandas, python3-plotly, python3-networkx and python3-psutil.

  bench/hta_launch_reference.py --hta-src DIR --commit SHA --out FILE [--traces DIR]
  bench/hta_launch_reference.py --hta-src DIR --commit SHA --generated \
      --out tests/fixtures/traces/hta_generated_reference.json

--generated writes 8-rank traces with bench/gen_trace.py (rank 3 late by
3 ms each step; and none late) into a temporary directory and takes HTA's figures of them;
tests/analyze/trace/stragglers_test.cc writes the same traces again.
"""
import contextlib
import io
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hta_reference  # noqa: E402

RUNTIME_CUTOFF = 50
DELAY_CUTOFF = 100
RESIDUE_GBPS = 1e-9


def guarded(f):
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            return f()
    except Exception as e:  # HTA's own failure is a figure too
        return {"error": "%s: %s" % (type(e).__name__, e)}


def describe_bw(df):
    import pandas as pd
    parts = []
    for rank, series in df.items():
        # the value after every change at one time: HTA's sort of the
        # starts and ends by time alone is not stable, so its series also
        # holds passing sums (an op ending as another starts counts both)
        series = series.drop_duplicates(["name", "ts"], keep="last")
        series = series[series.memory_bw_gbps > RESIDUE_GBPS]
        series = series.assign(rank=rank)[["rank", "name", "memory_bw_gbps"]]
        parts.append(series.groupby(["rank", "name"]).describe())
    return pd.concat(parts) if parts else None


def memory_bw(ta, ranks, by_definition=False):
    # by_definition: HTA's own time series, one value per time, leaving out
    # the values its float running sum leaves above zero where nothing runs
    # (1e-17 GB/s, ...)
    if by_definition:
        df = describe_bw(ta.get_memory_bw_time_series(ranks))
    else:
        df = ta.get_memory_bw_summary(ranks)
    out = {}
    if df is None:
        return out
    for (rank, name), row in df.iterrows():
        q = row["memory_bw_gbps"]
        out.setdefault(str(int(rank)), []).append({
            "kind": name, "count": int(q["count"]), "mean": hta_reference.number(q["mean"]),
            "std": hta_reference.number(q["std"]), "min": hta_reference.number(q["min"]), "p25": hta_reference.number(q["25%"]),
            "p50": hta_reference.number(q["50%"]), "p75": hta_reference.number(q["75%"]), "max": hta_reference.number(q["max"])})
    return out


def launches(ta, ranks):
    out = {}
    stats = ta.get_cuda_kernel_launch_stats(ranks, RUNTIME_CUTOFF, DELAY_CUTOFF, visualize=False)
    for rank, df in stats.items():
        trace = ta.t.get_trace(rank)
        gpu = trace[trace["stream"].ne(-1)][["correlation", "name"]].drop_duplicates("correlation")
        named = df.merge(gpu, on="correlation", how="left")
        named["kernel"] = named["name"].map(lambda i: ta.t.symbol_table.sym_table[int(i)])
        short = df[(df["cpu_duration"] <= RUNTIME_CUTOFF) & (df["gpu_duration"] < df["cpu_duration"])]
        per_name = {}
        for name, g in named.groupby("kernel"):
            per_name[name] = {"count": int(len(g)),
                              "p50": hta_reference.number(g["launch_delay"].quantile(0.5)),
                              "p99": hta_reference.number(g["launch_delay"].quantile(0.99))}
        out[str(int(rank))] = {
            "launches": int(len(df)), "short_gpu": int(len(short)),
            "runtime_outliers": int((df["cpu_duration"] > RUNTIME_CUTOFF).sum()),
            "delay_outliers": int((df["launch_delay"] > DELAY_CUTOFF).sum()),
            "kernels": per_name}
    return out


def annotations(ta):
    df = ta.get_gpu_user_annotation_breakdown(visualize=False)
    out = {}
    if df is None:
        return out
    for _, row in df.iterrows():
        out.setdefault(str(int(row["rank"])), []).append({
            "name": row["name"], "sum": hta_reference.number(row["sum (us)"]), "max": hta_reference.number(row["max (us)"]),
            "min": hta_reference.number(row["min (us)"]), "mean": hta_reference.number(row["mean (us)"]),
            "std": hta_reference.number(row["stddev"])})
    return out


def figures(trace_dir, candidates):
    from hta.trace_analysis import TraceAnalysis
    ta = guarded(lambda: TraceAnalysis(trace_dir=trace_dir))
    if isinstance(ta, dict):
        return ta
    ranks = sorted(int(r) for r in ta.t.get_ranks())
    return {"memory_bw": guarded(lambda: memory_bw(ta, ranks)),
            "memory_bw_by_definition": guarded(lambda: memory_bw(ta, ranks, True)),
            "launches": guarded(lambda: launches(ta, ranks)),
            "user_annotations": guarded(lambda: annotations(ta)),
            "potential_stragglers": guarded(
                lambda: [int(r) for r in ta.get_potential_stragglers(num_candidates=candidates)])}


NCCL = "ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)"
GENERATED = {"late_rank": {"ranks": 8, "late_rank": 3, "late_us": 3000, "bytes": 4e5,
                           "kernels_per_step": 100, "nccl_kernel": NCCL},
             "none_late": {"ranks": 8, "late_rank": -1, "late_us": 0, "bytes": 4e5,
                           "kernels_per_step": 100, "nccl_kernel": NCCL}}


def generate(root):
    import subprocess
    gen = os.path.join(os.path.dirname(os.path.abspath(__file__)), "gen_trace.py")
    for name, g in GENERATED.items():
        os.makedirs(os.path.join(root, name))
        for r in range(g["ranks"]):
            subprocess.run([sys.executable, gen, os.path.join(root, name, "rank%d.json" % r),
                            "--bytes", str(g["bytes"]), "--rank", str(r), "--world",
                            str(g["ranks"]), "--kernels-per-step", str(g["kernels_per_step"]),
                            "--late-us", str(g["late_us"] if r == g["late_rank"] else 0),
                            "--nccl-kernel", g["nccl_kernel"]], check=True,
                           stdout=subprocess.DEVNULL)


def main():
    p = hta_reference.parser()
    p.add_argument("--candidates", type=int, default=2)
    p.add_argument("--generated", action="store_true", help="HTA on bench/gen_trace.py traces")
    a = hta_reference.parse(p)
    if a.generated:
        import tempfile
        tmp = tempfile.TemporaryDirectory()
        a.traces = tmp.name
        generate(a.traces)
    ref = {"generated_by": "bench/hta_launch_reference.py", "hta_source": a.commit,
           "runtime_cutoff_us": RUNTIME_CUTOFF, "launch_delay_cutoff_us": DELAY_CUTOFF,
           "straggler_candidates": a.candidates, "traces": {}}
    if a.generated:
        ref["generated"] = GENERATED
    for name, path in hta_reference.trace_dirs(a.traces):
        ref["traces"][name] = figures(path, a.candidates)
        print(name, json.dumps(ref["traces"][name])[:300], flush=True)
    hta_reference.write(a.out, ref)


if __name__ == "__main__":
    main()

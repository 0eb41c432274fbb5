#!/usr/bin/python3
"""`stallscope trace` against Holistic Trace Analysis (HTA), on the same traces.

For each directory of traces under --traces (each one HTA
`TraceAnalysis(trace_dir=...)`), with the last step dropped and kept, it runs
HTA's own source (--hta-src: a checkout of
github.com/facebookresearch/HolisticTraceAnalysis; nothing of HTA is in this
repository) and `stallscope trace DIR --json [--include-last-step]`, and
compares per rank the idle / compute / non-compute percentages, the
comm/compute overlap and the critical path's shares by bound on the default
instance (goal: within 0.05 percentage points; its line shows the totals in
µs and the largest share difference). It also times
the whole analysis of each side (last step dropped: HTA's load, breakdown,
overlap and critical path of every rank in process after its import;
`stallscope trace DIR --json` as a process) and `python3 -c "import
json,gzip; json.load(gzip.open(F))"` over the same files (the parse any
Python reader pays first), and prints each directory's seconds on each side
(best of --repeat runs, each side, the last step dropped) and the ratio, then
the totals, the ratios over all and the smallest ratio (goal: 10x on every
directory). On HTA's smallest traces (a few KB) both sides' times are
mostly fixed costs: stallscope's is its process start, HTA's is pandas'
work per call (its import, about a second, is not counted).

  bench/trace_vs_hta.py --hta-src DIR --binary build/stallscope
      [--traces DIR] [--write-reference FILE] [--repeat 3]

HTA is not a Debian package: without a checkout (--hta-src) and its
dependencies, or without the traces (--traces: HTA's test traces, by default
../shared/traces/hta beside the checkout), the bench says what is missing
and skips (exit 0), so `make bench`-style runs on a fresh Debian go on.

--write-reference FILE writes HTA's figures as JSON (what
tests/e2e/trace_cli.py compares with: tests/fixtures/traces/hta_reference.json).
HTA needs Debian's python3-pandas, python3-plotly, python3-networkx and
python3-psutil (`apt-get install`); the stallscope side needs nothing.
"""
import argparse
import contextlib
import io
import json
import math
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_TRACES = os.path.join(os.path.dirname(os.path.dirname(HERE)), "shared", "traces", "hta")
FIGURES = ("idle_pct", "compute_pct", "non_compute_pct")


def trace_dirs(root):
    out = []
    for dirpath, _, files in os.walk(root):
        if any(f.endswith(".gz") or f.endswith(".json") for f in files):
            out.append(os.path.relpath(dirpath, root))
    return sorted(out)


def number(v):
    try:
        v = float(v)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(v) else v


def hta_figures(trace_dir, include_last):
    """HTA's temporal breakdown, overlap and steps per rank; errors recorded."""
    from hta.trace_analysis import TraceAnalysis
    out = {}
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        start = time.monotonic()
        try:
            ta = TraceAnalysis(trace_dir=trace_dir, include_last_profiler_step=include_last)
        except Exception as e:
            return {"error": "%s: %s" % (type(e).__name__, e)}, time.monotonic() - start
        try:
            df = ta.get_temporal_breakdown(visualize=False)
            out["temporal"] = {str(int(r["rank"])): {
                "idle_pct": number(r["idle_time_pctg"]),
                "compute_pct": number(r["compute_time_pctg"]),
                "non_compute_pct": number(r["non_compute_time_pctg"]),
                "kernel_time_us": number(r["kernel_time(us)"]),
                "idle_us": number(r["idle_time(us)"])} for _, r in df.iterrows()}
        except Exception as e:
            out["temporal"] = {"error": "%s: %s" % (type(e).__name__, e)}
        try:
            df = ta.get_comm_comp_overlap(visualize=False)
            out["overlap"] = {str(int(r["rank"])): number(r["comp_comm_overlap_pctg"])
                              for _, r in df.iterrows()}
        except Exception as e:
            out["overlap"] = {"error": "%s: %s" % (type(e).__name__, e)}
        try:
            out["steps"] = {str(r): sorted(int(s) for s in ta.t.get_trace(r)["iteration"].unique()
                                           if s == s and s >= 0)
                            for r in ta.t.get_ranks()}
        except Exception as e:
            out["steps"] = {"error": "%s: %s" % (type(e).__name__, e)}
        out["critical_path"] = {}
        for r in ta.t.get_ranks():  # on stallscope's default instance; timed with the rest
            try:
                names = ta.t.symbol_table.get_sym_table()
                steps = sum(1 for n in ta.t.get_trace(r)["name"]
                            if names[n].startswith("ProfilerStep#"))
                annotation = "ProfilerStep" if steps else ""
                instance = (1 if steps >= 2 else 0) if steps else None
                got = ta.critical_path_analysis(rank=r, annotation=annotation,
                                                instance_id=instance,
                                                data_load_events=["enumerate(DataLoader)"])
                edges = got[0].get_critical_path_breakdown() if got and got[1] else None
                out["critical_path"][str(r)] = None if edges is None else {
                    "total_us": number(edges.duration.sum()),
                    "nodes": len(got[0].critical_path_nodes),
                    "by_bound_us": {k: number(v) for k, v in
                                    edges.groupby("bound_by").duration.sum().items() if k}}
            except Exception as e:
                out["critical_path"][str(r)] = "%s: %s" % (type(e).__name__, e)
        seconds = time.monotonic() - start
    return out, seconds


def critical_path_lines(rel, hta, by_rank, compared, worst):
    """The critical path's total and largest share difference per rank (HTA
    counts the data loader's time as cpu_bound: folded in here)."""
    for rank, fig in (hta.get("critical_path") or {}).items():
        mine = (by_rank.get(rank) or {}).get("critical_path")
        if not isinstance(fig, dict) or not mine:
            print("%-44s %-6s %4s %-16s %9s %10s" % (rel, "drop", rank, "critical_path",
                                                     "failed" if fig is None or isinstance(
                                                         fig, str) else "-",
                                                     "-" if not mine else mine["total_us"]))
            continue
        ours = dict(mine["by_bound_us"])
        ours["cpu_bound"] = ours.get("cpu_bound", 0) + ours.pop("data_loading", 0)
        share = max([abs(ours.get(k, 0) / (mine["total_us"] or 1) -
                         fig["by_bound_us"].get(k, 0) / (fig["total_us"] or 1)) * 100
                     for k in set(ours) | set(fig["by_bound_us"])] or [0])
        worst = max(worst, share)
        compared += 1
        print("%-44s %-6s %4s %-16s %9.0f %10.0f %7.2f%s  (nodes %d / %d)" % (
            rel, "drop", rank, "critical_path", fig["total_us"], mine["total_us"], share,
            "  <-- over 0.05" if share > 0.05 else "", fig["nodes"], mine["nodes"]))
    return compared, worst


def stallscope_figures(binary, trace_dir, include_last):
    args = [binary, "trace", trace_dir, "--json"] + (["--include-last-step"] if include_last else [])
    start = time.monotonic()
    p = subprocess.run(args, capture_output=True, text=True)
    seconds = time.monotonic() - start
    if p.returncode != 0:
        return None, seconds, p.stderr.strip()
    return json.loads(p.stdout), seconds, ""


def json_load_seconds(trace_dir):
    files = [os.path.join(trace_dir, f) for f in sorted(os.listdir(trace_dir))
             if f.endswith(".gz") or f.endswith(".json")]
    code = "import json,gzip,sys\nfor f in sys.argv[1:]:\n json.load(gzip.open(f) if " \
           "f.endswith('.gz') else open(f))"
    start = time.monotonic()
    subprocess.run([sys.executable, "-c", code] + files, check=True)
    return time.monotonic() - start


def print_times(per_dir, totals):
    """Each directory's wall seconds on both sides and the ratio, the totals,
    and the smallest ratio with its directory."""
    print("\nwhole analysis of each directory (last step dropped), wall seconds, best of each:")
    print("%-44s %8s %10s %7s %9s" % ("trace dir", "HTA", "stallscope", "ratio", "json.load"))
    for rel, hta_s, our_s, json_s in per_dir:
        print("%-44s %8.3f %10.3f %6.1fx %9.3f%s" % (
            rel, hta_s, our_s, hta_s / our_s, json_s, "  <-- under 10x" if hta_s < 10 * our_s else ""))
    print("  HTA (in process, after import)  %.2f s" % totals["hta"])
    print("  json.load(gzip.open(F)) alone  %.2f s" % totals["json_load"])
    print("  stallscope trace                %.2f s" % totals["stallscope"])
    if totals["stallscope"] > 0 and per_dir:
        rel, hta_s, our_s, _ = min(per_dir, key=lambda d: d[1] / d[2])
        print("  ratios: HTA / stallscope %.1fx over all, smallest %.1fx (%s); "
              "json.load / stallscope %.1fx" % (totals["hta"] / totals["stallscope"],
                                                hta_s / our_s, rel,
                                                totals["json_load"] / totals["stallscope"]))


def why_skipped(a):
    """Why the comparison cannot run here (HTA or the traces missing), or None."""
    if not a.hta_src:
        return ("HTA is not a Debian package; pass --hta-src DIR, a checkout of "
                "github.com/facebookresearch/HolisticTraceAnalysis")
    if not os.path.isdir(os.path.join(a.hta_src, "hta")):
        return "--hta-src %s holds no hta/ folder: not an HTA checkout" % a.hta_src
    if not os.path.isdir(a.traces) or not trace_dirs(a.traces):
        return "no traces under %s (--traces DIR: HTA's test traces)" % a.traces
    sys.path.insert(0, os.path.abspath(a.hta_src))
    try:
        import hta.trace_analysis  # noqa: F401  (pandas and the rest, from Debian)
    except ImportError as e:
        return ("HTA cannot be imported (%s): it needs Debian's python3-pandas, "
                "python3-plotly, python3-networkx and python3-psutil" % e)
    finally:
        sys.path.pop(0)
    return None


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--hta-src", help="HTA's source checkout (holds hta/)")
    p.add_argument("--binary", help="stallscope to compare (omit to only write the reference)")
    p.add_argument("--traces", default=DEFAULT_TRACES)
    p.add_argument("--write-reference", metavar="FILE")
    p.add_argument("--repeat", type=int, default=3,
                   help="timed runs of each side per directory (the best is kept)")
    a = p.parse_args()
    missing = why_skipped(a)
    if missing:
        print("trace_vs_hta: skipped: %s" % missing)
        return 0
    sys.path.insert(0, os.path.abspath(a.hta_src))
    commit = subprocess.run(["git", "-C", a.hta_src, "rev-parse", "HEAD"], capture_output=True,
                            text=True).stdout.strip() or "(not a git checkout)"
    reference = {"hta_source": commit,
                 "generated_by": "bench/trace_vs_hta.py --hta-src DIR --write-reference FILE",
                 "traces": {}}
    worst = 0.0
    compared = 0
    totals = {"hta": 0.0, "stallscope": 0.0, "json_load": 0.0}
    per_dir = []  # (directory, HTA s, stallscope s, json.load s)
    print("%-44s %-6s %4s %-16s %9s %10s %7s" % ("trace dir", "last", "rank", "figure", "HTA",
                                                   "stallscope", "diff"))
    for rel in trace_dirs(a.traces):
        d = os.path.join(a.traces, rel)
        entry = {}
        for include_last, key in ((False, "last_step_dropped"), (True, "last_step_included")):
            hta, hta_s = hta_figures(d, include_last)
            for _ in range(a.repeat - 1 if a.binary and not include_last else 0):
                hta_s = min(hta_s, hta_figures(d, include_last)[1])
            entry[key] = hta
            if not include_last:
                entry["hta_seconds"] = round(hta_s, 3)
                totals["hta"] += hta_s
            if not a.binary:
                continue
            ours, our_s, err = stallscope_figures(a.binary, d, include_last)
            for _ in range(a.repeat - 1 if not include_last else 0):
                our_s = min(our_s, stallscope_figures(a.binary, d, include_last)[1])
            if not include_last:
                totals["stallscope"] += our_s
                per_dir.append([rel, hta_s, our_s, 0.0])
            if ours is None:
                print("%-44s stallscope failed: %s" % (rel, err))
                continue
            by_rank = {str(r["rank"]): r for r in ours["ranks"]}
            temporal = hta.get("temporal", {})
            if "error" in temporal or not temporal:
                print("%-44s %-6s HTA failed (%s); stallscope: %s" % (
                    rel, "kept" if include_last else "drop", temporal.get("error", "no result"),
                    "; ".join(ours["notes"])[:120]))
                continue
            for rank, fig in temporal.items():
                mine = (by_rank.get(rank) or {}).get("temporal") or {}
                for f in FIGURES:
                    diff = abs((mine.get(f) or 0) - (fig[f] or 0))
                    worst = max(worst, diff)
                    compared += 1
                    print("%-44s %-6s %4s %-16s %9.2f %10.2f %7.2f%s" % (
                        rel, "kept" if include_last else "drop", rank, f, fig[f], mine.get(f, -1),
                        diff, "  <-- over 0.05" if diff > 0.05 else ""))
            for rank, fig in (hta.get("overlap") or {}).items():
                if rank == "error":
                    continue
                mine = (by_rank.get(rank) or {}).get("comm_comp_overlap_pct")
                diff = 0.0 if fig is None and mine is None else abs((mine or 0) - (fig or 0))
                worst = max(worst, diff)
                compared += 1
                print("%-44s %-6s %4s %-16s %9s %10s %7.2f%s" % (
                    rel, "kept" if include_last else "drop", rank, "overlap_pct", fig, mine, diff,
                    "  <-- over 0.05" if diff > 0.05 else ""))
            if not include_last:
                compared, worst = critical_path_lines(rel, hta, by_rank, compared, worst)
        if a.binary:
            per_dir[-1][3] = json_load_seconds(d)
            totals["json_load"] += per_dir[-1][3]
        reference["traces"][rel] = entry
    if a.write_reference:
        with open(a.write_reference, "w") as f:
            json.dump(reference, f, indent=1, sort_keys=True)
            f.write("\n")
        print("wrote", a.write_reference)
    if a.binary:
        print("\n%d figures compared, largest difference %.3f percentage points (goal 0.05)"
              % (compared, worst))
        print_times(per_dir, totals)


if __name__ == "__main__":
    sys.exit(main())

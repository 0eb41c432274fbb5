#!/usr/bin/python3
"""HTA's critical path per rank, written as a test fixture.

For each directory of traces under --traces, runs HTA's own source (--hta-src,
a checkout of github.com/facebookresearch/HolisticTraceAnalysis; nothing of
HTA is in this repository) `critical_path_analysis` for every rank on the
instance stallscope trace picks by default (the second ProfilerStep where
there are two or more, the first with one, the whole trace with none; with
two or more, also instances 0:1, as "instances_0_1"; and the default
instance with the last step kept, as "last_step_kept"), and
writes the summary by bound (µs and percent) and the node count as JSON
(tests/fixtures/traces/hta_critical_path_reference.json, which
tests/analyze/trace/critical_path_test.cc compares with). Needs Debian's
python3-pandas, python3-plotly, python3-networkx and python3-psutil.

The data loader: HTA escapes its data_load_events before it looks for them
(so they are text, not patterns, whatever its docs say), then classifies an
edge by matching them as patterns against the shortened name, which has lost
"(DataLoader)". So HTA is given the text "enumerate(DataLoader)" (the loader
steps become nodes, as they should) and counts their time as cpu_bound; the
time of the edges charged to a loader step (by its full name, the
definition) is written beside, as data_loading_by_name_us.

  bench/hta_critical_path_reference.py --hta-src DIR --commit SHA --out FILE [--traces DIR]
  bench/hta_critical_path_reference.py --hta-src DIR --commit SHA --generated \
      --out tests/fixtures/traces/hta_critical_path_generated.json

--generated runs HTA instead on multi-rank traces bench/gen_trace.py writes
(GENERATED below: what HTA's test traces lack, a multiprocess loader's
__next__ on the main thread, long gaps on the GPU, ranks waiting in NCCL for
a late one), each set as written and again with a device sync added under
each step's aten::item (bench/add_device_sync.py), one folder a set, and
names in the file ("generated") each set's gen_trace.py arguments and
whether the sync was added, so that the test writes the same traces again.
"""
import contextlib
import io
import json
import os
import re
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hta_reference  # noqa: E402

LOADER = ["enumerate(DataLoader)"]  # text: HTA escapes it
LOADER_NAME = re.compile(r"enumerate\(DataLoader\).*__next__")


def path(ta, rank, annotation, instance):
    """HTA's path over one instance (or a (first, last) range) as figures."""
    df = ta.t.get_trace(rank)
    names = ta.t.symbol_table.get_sym_table()
    t0 = time.perf_counter()
    got = ta.critical_path_analysis(rank=rank, annotation=annotation, instance_id=instance,
                                    data_load_events=LOADER)
    seconds = time.perf_counter() - t0
    if not got or not got[1]:
        return {"annotation": annotation, "error": "HTA found no critical path"}
    graph = got[0]
    edges = graph.get_critical_path_breakdown()
    by_bound = {k: float(v) for k, v in edges.groupby("bound_by").duration.sum().items()}
    total = float(edges.duration.sum())
    loader = edges[(edges.type == "critical_path_operator") & (edges.stream < 0)]
    loader_us = float(sum(d for i, d in zip(loader.event_idx, loader.duration)
                          if LOADER_NAME.search(names[df.name.loc[i]])))
    return {"annotation": annotation, "instance": instance or 0,
            "nodes": len(graph.critical_path_nodes), "total_us": total,
            "by_bound_us": by_bound, "data_loading_by_name_us": loader_us,
            "summary_pct": {k: v / total * 100 if total else 0 for k, v in by_bound.items()},
            "seconds": seconds}


def one_rank(ta, rank):
    """The default instance; with two steps or more, also instances 0:1 (a range)."""
    df = ta.t.get_trace(rank)
    names = ta.t.symbol_table.get_sym_table()
    steps = sum(1 for n in df["name"] if names[n].startswith("ProfilerStep#"))
    if steps == 0:
        return path(ta, rank, "", None)
    out = path(ta, rank, "ProfilerStep", 1 if steps >= 2 else 0)
    if steps >= 2:
        out["instances_0_1"] = path(ta, rank, "ProfilerStep", (0, 1))
    return out


def figures(trace_dir):
    from hta.trace_analysis import TraceAnalysis
    out = {}
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        try:
            ta = TraceAnalysis(trace_dir=trace_dir)
            for rank in sorted(ta.t.get_ranks()):
                try:
                    out[str(int(rank))] = one_rank(ta, rank)
                except Exception as e:  # HTA's own failure is a figure too
                    out[str(int(rank))] = {"error": "%s: %s" % (type(e).__name__, e)}
            # the last step kept (HTA's include_last_profiler_step, stallscope's
            # --include-last-step): the default instance again
            kept = TraceAnalysis(trace_dir=trace_dir, include_last_profiler_step=True)
            for rank in sorted(kept.t.get_ranks()):
                entry = out.get(str(int(rank)))
                if entry is None or "error" in entry:
                    continue
                try:
                    entry["last_step_kept"] = one_rank(kept, rank)
                    entry["last_step_kept"].pop("instances_0_1", None)
                except Exception as e:
                    entry["last_step_kept"] = {"error": "%s: %s" % (type(e).__name__, e)}
        except Exception as e:
            return {"error": "%s: %s" % (type(e).__name__, e)}
    return out


# gen_trace.py's arguments after the output folder, a set each: 4 ranks on one
# clock (no --offset: HTA reads the times as written), 7 steps, so the default
# instance (ProfilerStep#1), the range 0:1 and the last step kept all take in
# late steps.
BASE = ["--ranks", "4", "--kernels-per-step", "80", "--bytes", "3e5"]
LATE = {
    "balanced": [],
    # rank 2's multiprocess loader __next__ (on the main thread) 5 ms longer
    # in steps 0 to 3
    "loader_late": [x for s in range(4) for x in ("--late", "2:%d:0:5000:loader" % s)],
    # rank 1 runs a 20 ms CPU op before its first launch in steps 1 and 3: a
    # long gap on its GPU, and the others' first all-reduce waits for it
    "cpu_late": ["--late", "1:1:0:20000:cpu", "--late", "1:3:0:20000:cpu"],
    # rank 3 runs a 3 ms kernel before its third all-reduce of steps 0 and 1,
    # rank 0 a 1 ms one before its first of step 1: the others' NCCL kernels
    # wait
    "kernel_late": ["--late", "3:0:2:3000:kernel", "--late", "3:1:2:3000:kernel",
                    "--late", "0:1:0:1000:kernel"],
    # three ranks late in one step, each by its own cause, and one the next
    "mixed_late": ["--late", "1:1:0:8000:cpu", "--late", "2:1:0:4000:loader",
                   "--late", "3:1:1:2000:kernel", "--late", "0:2:3:1500:kernel"],
}
# Each set as written, then again with a device sync under each step's
# aten::item (bench/add_device_sync.py): without it nothing in gen_trace.py's
# traces says the host waits for the GPU, and the path never leaves the CPU.
GENERATED = {}
for _name, _late in LATE.items():
    GENERATED[_name] = {"gen_trace_args": BASE + _late, "device_sync": False}
    GENERATED[_name + "_synced"] = {"gen_trace_args": BASE + _late, "device_sync": True}


def generate(root):
    """Each set of GENERATED in a folder of its own under root."""
    here = os.path.dirname(os.path.abspath(__file__))
    for name, g in GENERATED.items():
        out = os.path.join(root, name)
        subprocess.run([sys.executable, os.path.join(here, "gen_trace.py"), out] +
                       g["gen_trace_args"], check=True, stdout=subprocess.DEVNULL)
        if g["device_sync"]:
            subprocess.run([sys.executable, os.path.join(here, "add_device_sync.py"), out],
                           check=True)


def main():
    p = hta_reference.parser()
    p.add_argument("--generated", action="store_true", help="HTA on bench/gen_trace.py traces")
    a = hta_reference.parse(p)
    ref = {"generated_by": "bench/hta_critical_path_reference.py", "hta_source": a.commit,
           "traces": {}}
    tmp = None
    if a.generated:
        tmp = tempfile.TemporaryDirectory()
        a.traces = tmp.name
        generate(a.traces)
        ref["generated_by"] += " --generated"
        ref["generated"] = GENERATED
    for name, path in hta_reference.trace_dirs(a.traces):
        ref["traces"][name] = figures(path)
        print(name, json.dumps(ref["traces"][name])[:300], flush=True)
    hta_reference.write(a.out, ref)


if __name__ == "__main__":
    main()

"""HTA's queue length per stream, written as a test fixture.

For each directory of traces under --traces, runs HTA's own source (--hta-src,
a checkout of github.com/facebookresearch/HolisticTraceAnalysis; nothing of
HTA is in this repository) `get_queue_length_summary` and
`get_time_spent_blocked_on_full_queue` for every rank, and writes them as
JSON (tests/fixtures/traces/hta_queue_reference.json, which
tests/trace_queue_test.cc compares with). Needs Debian's python3-pandas,
python3-plotly, python3-networkx and python3-psutil.

  bench/hta_queue_reference.py --hta-src DIR --commit SHA --out FILE [--traces DIR]
"""
import argparse
import contextlib
import io
import json
import math
import os
import sys


def number(v):
    v = float(v)
    return None if math.isnan(v) else v


def trace_dirs(root):
    for dirpath, _, files in sorted(os.walk(root)):
        if any(f.endswith((".json", ".json.gz")) for f in files):
            yield os.path.relpath(dirpath, root), dirpath


def queue_figures(trace_dir):
    from hta.trace_analysis import TraceAnalysis
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        try:
            ta = TraceAnalysis(trace_dir=trace_dir)
            ranks = list(ta.t.get_ranks())
            series = ta.get_queue_length_time_series(ranks)
            summary = ta.get_queue_length_summary_from_time_series(series)
            blocked = ta.get_time_spent_blocked_on_full_queue(series)
        except Exception as e:
            return {"error": "%s: %s" % (type(e).__name__, e)}
    out = {}
    if summary is not None:
        for (rank, stream), row in summary.iterrows():
            q = row["queue_length"]
            out.setdefault(str(int(rank)), {"streams": []})["streams"].append({
                "stream": int(stream), "count": int(q["count"]), "mean": number(q["mean"]),
                "std": number(q["std"]), "min": number(q["min"]), "p25": number(q["25%"]),
                "p50": number(q["50%"]), "p75": number(q["75%"]), "max": number(q["max"])})
    for _, row in blocked.iterrows():
        r = out.setdefault(str(int(row["rank"])), {"streams": []})
        r["blocked"] = {"stream": int(row["stream"]),
                        "us": number(row["duration_at_max_queue_length"]),
                        "share": number(row["relative_duration_at_max_queue_length"])}
    return out


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--hta-src", required=True)
    p.add_argument("--commit", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--traces", default=os.path.join(os.path.dirname(__file__), "..", "..",
                                                    "shared", "traces", "hta"))
    a = p.parse_args()
    sys.path.insert(0, a.hta_src)
    ref = {"generated_by": "bench/hta_queue_reference.py", "hta_source": a.commit, "traces": {}}
    for name, path in trace_dirs(a.traces):
        ref["traces"][name] = queue_figures(path)
        print(name, json.dumps(ref["traces"][name])[:200])
    with open(a.out, "w") as f:
        json.dump(ref, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()

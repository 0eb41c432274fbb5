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
import contextlib
import io
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hta_reference  # noqa: E402


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
                "stream": int(stream), "count": int(q["count"]), "mean": hta_reference.number(q["mean"]),
                "std": hta_reference.number(q["std"]), "min": hta_reference.number(q["min"]), "p25": hta_reference.number(q["25%"]),
                "p50": hta_reference.number(q["50%"]), "p75": hta_reference.number(q["75%"]), "max": hta_reference.number(q["max"])})
    for _, row in blocked.iterrows():
        r = out.setdefault(str(int(row["rank"])), {"streams": []})
        r["blocked"] = {"stream": int(row["stream"]),
                        "us": hta_reference.number(row["duration_at_max_queue_length"]),
                        "share": hta_reference.number(row["relative_duration_at_max_queue_length"])}
    return out


def main():
    p = hta_reference.parser()
    a = hta_reference.parse(p)
    ref = {"generated_by": "bench/hta_queue_reference.py", "hta_source": a.commit, "traces": {}}
    for name, path in hta_reference.trace_dirs(a.traces):
        ref["traces"][name] = queue_figures(path)
        print(name, json.dumps(ref["traces"][name])[:200])
    hta_reference.write(a.out, ref)


if __name__ == "__main__":
    main()

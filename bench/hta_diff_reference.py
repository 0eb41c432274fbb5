"""HTA's trace diff, written as a test fixture.

For each pair of trace directories, runs HTA's own source (--hta-src, a
checkout of github.com/facebookresearch/HolisticTraceAnalysis; nothing of HTA
is in this repository) `TraceDiff.compare_traces` and `TraceDiff.ops_diff`
with their defaults (the first rank, the first iteration, CPU ops and GPU
kernels both) and writes every row as JSON
(tests/fixtures/traces/hta_diff_reference.json, which
tests/analyze/trace/diff_test.cc compares with). The pairs: directories of
../shared/traces/hta, read in place, and traces bench/gen_trace.py writes
(the fixture names its arguments; the test writes them again). Needs
Debian's python3-pandas, python3-plotly, python3-networkx and python3-psutil.

  bench/hta_diff_reference.py --hta-src DIR --commit SHA --out FILE [--traces DIR]
"""
import contextlib
import io
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hta_reference  # noqa: E402

# (name, control directory, test directory) under ../shared/traces/hta
SHARED_PAIRS = [
    ("trace_diff", "trace_diff/control", "trace_diff/test"),
    ("queue_vs_ns_resolution", "negative_queue_length_values_check", "ns_resolution_trace"),
    ("df_index_vs_nccl", "df_index_resolver", "nccl_parser_config"),
    ("two_ranks_vs_amd", "trace_filter", "amd_trace"),
    ("one_step_each", "critical_path/cuda_event_sync", "triton_example"),
]
# (name, gen_trace.py arguments of the control side, of the test side)
GENERATED_PAIRS = [
    ("slower_gemm", ["--bytes", "1e6", "--world", "1", "--kernels-per-step", "100"],
     ["--bytes", "1e6", "--world", "1", "--kernels-per-step", "100",
      "--slow-kernel", "sm90_xmma_gemm", "--slow-factor", "1.5"]),
]


def diff(control, test):
    from hta.trace_diff import TraceDiff, LabeledTrace
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        try:
            c = LabeledTrace("control", trace_dir=control)
            t = LabeledTrace("test", trace_dir=test)
            df = TraceDiff.compare_traces(c, t)
            ops = TraceDiff.ops_diff(c, t)
        except Exception as e:
            return {"error": "%s: %s" % (type(e).__name__, e)}
    rows = {}
    for name, row in df.iterrows():
        rows[str(name)] = {"control_counts": int(row["control_counts"]),
                           "test_counts": int(row["test_counts"]),
                           "control_total_duration": float(row["control_total_duration"]),
                           "test_total_duration": float(row["test_total_duration"])}
    return {"rows": rows, "ops_diff": {k: sorted(str(n) for n in v) for k, v in ops.items()}}


def main():
    p = hta_reference.parser()
    a = hta_reference.parse(p)
    ref = {"generated_by": "bench/hta_diff_reference.py", "hta_source": a.commit,
           "pairs": {}, "generated": {}}
    for name, control, test in SHARED_PAIRS:
        ref["pairs"][name] = {"control": control, "test": test,
                              **diff(os.path.join(a.traces, control), os.path.join(a.traces, test))}
        print(name, json.dumps(ref["pairs"][name])[:200])
    gen = os.path.join(os.path.dirname(os.path.abspath(__file__)), "gen_trace.py")
    for name, control, test in GENERATED_PAIRS:
        with tempfile.TemporaryDirectory() as tmp:
            for side, args in (("control", control), ("test", test)):
                os.mkdir(os.path.join(tmp, side))
                subprocess.run([sys.executable, gen, os.path.join(tmp, side, "rank0.json")] + args,
                               check=True, stdout=subprocess.DEVNULL)
            ref["generated"][name] = {"control_args": control, "test_args": test,
                                      **diff(os.path.join(tmp, "control"), os.path.join(tmp, "test"))}
        print(name, json.dumps(ref["generated"][name])[:200])
    hta_reference.write(a.out, ref)


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""Are two stallscope binaries' outputs byte-identical?

A restructuring must not change what a user sees. This script runs the same
commands with two binaries (BEFORE, AFTER) on every input that does not
depend on the clock: each fixture host under tests/fixtures (snapshot and
doctor --quick through --root, text, JSON and HTML), the rule catalog, every
NCCL log fixture (alone and together, with and without an RDMA host), the
recorded run files of a folder (report text, JSON, HTML; doctor --run),
plan memory and plan loader, diff of each pair of run files in name order,
report of all run files together, trace on the trace fixtures and on
../shared/traces/hta when it is there, dataset and pack on small trees, and a set of
bad invocations (their message and exit status), and GPUs through the fake
NVML when it is built beside AFTER. Each case compares exit
status, stdout, stderr and every file the command wrote, byte for byte,
after one normalization: wall-clock times (ISO 8601 stamps) and what the
clock measured (sampling windows, the walk's stat/open latencies) become
placeholders, since two
runs a second apart differ there whatever the code.

usage: tests/same_outputs.py BEFORE AFTER --runs DIR [--keep DIR]
  --runs DIR   run files (*.db) written by `stallscope run`; report and
               doctor --run read them in place (never written)
  --keep DIR   keep each case's outputs there (BEFORE/, AFTER/) for diffing
Exit status 0 when every case is identical, 1 otherwise (the cases named).
"""
import argparse
import difflib
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
FIX = os.path.join(HERE, "fixtures")

# What differs between two runs of one binary: the time of day and what the
# clock measured. Each pattern is replaced by its placeholder.
VOLATILE = [
    (re.compile(rb"\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:?\d\d)?"), b"<time>"),
    (re.compile(rb'"(window_seconds|interval_seconds|seconds|(stat|open)_p\d+_us)": [0-9.e+-]+'),
     rb'"\1": <measured>'),
    (re.compile(rb'"bytes_per_second": [0-9.e+-]+'), b'"bytes_per_second": <measured>'),
    (re.compile(rb"window_seconds=[0-9.]+"), b"window_seconds=<measured>"),
    (re.compile(rb"(<code>window_seconds</code></td><td>)[0-9.]+"), rb"\1<measured>"),
    (re.compile(rb"sampling the host for [0-9.]+ s\.\.\.[^\n]*"), b"<progress>"),
]


def normalize(data):
    for pattern, placeholder in VOLATILE:
        data = pattern.sub(placeholder, data)
    return data


def cases(runs):
    """(name, argv, files the command writes) for every comparison."""
    out = []
    hosts = sorted(d for d in glob.glob(os.path.join(FIX, "*")) if os.path.isdir(os.path.join(d, "proc")))
    hosts += [os.path.join(FIX, "nccl_logs", "ib_node_gpu_a")]
    for h in hosts:
        n = os.path.relpath(h, FIX)
        out.append((f"snapshot {n}", ["snapshot", "--root", h, "--interval", "0.05"], []))
        out.append((f"snapshot {n} json", ["snapshot", "--root", h, "--interval", "0.05", "--json"], []))
        out.append((f"doctor {n}", ["doctor", "--quick", "--root", h], []))
        out.append((f"doctor {n} json", ["doctor", "--quick", "--root", h, "--json"], []))
        out.append((f"doctor {n} html", ["doctor", "--quick", "--root", h, "--html", "out.html"], ["out.html"]))
        out.append((f"doctor {n} baseline", ["doctor", "--quick", "--root", h, "--json", "--baseline",
                                              os.path.join(FIX, "baseline", "baseline-host.json")], []))
    out.append(("doctor --rules", ["doctor", "--rules"], []))
    out.append(("doctor --rules json", ["doctor", "--rules", "--json"], []))
    logs = sorted(glob.glob(os.path.join(FIX, "nccl_logs", "*.log")))
    ib = os.path.join(FIX, "nccl_logs", "ib_node_gpu_a")
    for log in logs:
        n = os.path.basename(log)
        out.append((f"nccl-log {n}", ["nccl-log", log], []))
        out.append((f"nccl-log {n} json", ["nccl-log", log, "--json"], []))
        out.append((f"nccl-log {n} ib", ["nccl-log", log, "--root", ib, "--json"], []))
        out.append((f"doctor --nccl-log {n}", ["doctor", "--quick", "--root", ib, "--nccl-log", log, "--json"], []))
    out.append(("doctor every nccl log", ["doctor", "--quick", "--root", ib, "--nccl-log"] + logs, []))
    for db in sorted(glob.glob(os.path.join(runs, "*.db"))):
        n = os.path.basename(db)
        out.append((f"report {n}", ["report", db], []))
        out.append((f"report {n} json", ["report", db, "--json"], []))
        out.append((f"report {n} html", ["report", db, "--html", "out.html"], ["out.html"]))
        live = os.path.join(FIX, "live_debian12")
        out.append((f"doctor --run {n}", ["doctor", "--quick", "--root", live, "--run", db], []))
        out.append((f"doctor --run {n} json", ["doctor", "--quick", "--root", live, "--run", db, "--json"], []))
    dbs = sorted(glob.glob(os.path.join(runs, "*.db")))
    for i in range(1, len(dbs)):
        a, b = dbs[i - 1], dbs[i]
        n = os.path.basename(a) + " " + os.path.basename(b)
        out.append((f"diff {n}", ["diff", a, b], []))
        out.append((f"diff {n} json", ["diff", a, b, "--json"], []))
    if len(dbs) >= 2:
        out.append(("report every run file json", ["report"] + dbs + ["--json"], []))
    traces = sorted(glob.glob(os.path.join(FIX, "traces", "trace-*")))
    for t in traces:
        n = os.path.basename(t)
        out.append((f"trace {n}", ["trace", t], []))
        out.append((f"trace {n} json", ["trace", t, "--json", "--include-last-step"], []))
    hta = os.path.join(ROOT, "..", "shared", "traces", "hta")
    for d in sorted(glob.glob(os.path.join(hta, "*"))):
        if os.path.isdir(d):
            out.append((f"trace hta/{os.path.basename(d)} json", ["trace", d, "--json"], []))
    plans = [
        ["plan", "memory", "--params", "70B", "--gpus", "64", "--gpu-mem", "80GiB"],
        ["plan", "memory", "--params", "7B", "--gpus", "8", "--gpu-mem", "40GiB", "--dtype", "fp32", "--json"],
        ["plan", "memory", "--params", "1.3e9", "--gpus", "4", "--gpu-mem", "24GiB", "--zero", "3",
         "--recompute", "full", "--optimizer", "sgd"],
        ["plan", "memory", "--params", "175B", "--gpus", "8", "--gpu-mem", "80GiB", "--json"],
        ["plan", "loader", "--batch-bytes", "96MiB", "--cores", "16", "--available", "64GiB", "--gpus", "8"],
        ["plan", "loader", "--batch-size", "256", "--sample-bytes", "600KiB", "--cores", "4",
         "--available", "8GiB", "--json"],
    ]
    for p in plans:
        out.append((" ".join(p), p, []))
    pack = os.path.join(FIX, "pack")
    out.append(("dataset fixtures/pack json", ["dataset", pack, "--json", "--threads", "1"], []))
    out.append(("pack fixtures/input_formats json",
                ["pack", os.path.join(FIX, "input_formats"), "packed", "--json", "--format", "wds"],
                ["packed/manifest.json"]))
    live = os.path.join(FIX, "live_debian12")
    out.append(("doctor --data fixtures/pack", ["doctor", "--quick", "--root", live, "--data", pack], []))
    out.append(("doctor --data fixtures/pack json",
                ["doctor", "--quick", "--root", live, "--data", pack, "--json"], []))
    out.append(("cluster --help", ["cluster", "--help"], []))
    bad = [
        ["doctor", "--interval", "x"], ["doctor", "--run", "/nonexistent.db"],
        ["doctor", "--nccl-log", "/nonexistent.log"], ["report"], ["report", "/nonexistent.db"],
        ["report", os.path.join(FIX, "pack", "classes.tar")], ["nccl-log", "/nonexistent"],
        ["plan", "memory", "--params", "lots", "--gpus", "8", "--gpu-mem", "80GiB"],
        ["plan", "loader"], ["snapshot", "--root", "/nonexistent"], ["bench", "io"],
        ["no-such-command"], [], ["--help"], ["run"], ["scale"], ["ab"], ["pack"],
        ["dataset", "/nonexistent"], ["net", "probe"], ["exporter", "--port", "x"],
    ]
    for b in bad:
        out.append(("bad: " + " ".join(b), b, []))
    return out


# GPUs through the fake NVML beside the AFTER binary (tests/fake_nvml), the
# values of tests/e2e/gpu_fake.py's script: the GPU rules' findings and notes.
FAKE_NVML_SCRIPT = """gpus 2
gpu.0.name NVIDIA H100 80GB HBM3
gpu.0.uuid GPU-11111111-2222-3333-4444-555555555555
gpu.0.bus 00000000:3B:00.0
gpu.0.numa 1
gpu.0.mem_total 85899345920
gpu.0.mem_used 82463372083
gpu.0.util 97
gpu.0.sm_clock 1500
gpu.0.sm_clock_max 1980
gpu.0.throttle 4
gpu.0.power_mw 698000
gpu.0.power_limit_mw 700000
gpu.0.procs 1:81604378624
gpu.0.gpm 1
gpu.0.gpm.sm_util 30
gpu.1.name NVIDIA A100-SXM4-40GB
gpu.1.uuid GPU-66666666-7777-8888-9999-000000000000
gpu.1.bus 00000000:86:00.0
gpu.1.mem_total 42949672960
gpu.1.mem_used 2147483648
gpu.1.util 95
gpu.1.gpm 0
gpu.1.lost_after 3
"""


def run_case(binary, argv, files, workdir, extra_env=None):
    os.makedirs(workdir)
    env = dict(os.environ, COLUMNS="100", LC_ALL="C.UTF-8", TZ="UTC", **(extra_env or {}))
    p = subprocess.run(["stallscope"] + argv, executable=binary, cwd=workdir, env=env,
                       stdin=subprocess.DEVNULL, capture_output=True, timeout=120)
    got = {"rc": str(p.returncode).encode(), "stdout": p.stdout, "stderr": p.stderr}
    for f in files:
        path = os.path.join(workdir, f)
        got[f] = open(path, "rb").read() if os.path.exists(path) else b"<not written>"
    return {k: normalize(v) for k, v in got.items()}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("before")
    ap.add_argument("after")
    ap.add_argument("--runs", required=True)
    ap.add_argument("--keep")
    a = ap.parse_args()
    keep = a.keep or tempfile.mkdtemp(prefix="same-outputs-")
    if a.keep and os.path.exists(keep):
        shutil.rmtree(keep)
    differ = []
    all_cases = [(n, argv, files, None) for n, argv, files in cases(a.runs)]
    fake = os.path.join(os.path.dirname(os.path.abspath(a.after)), "libstallscope_fake_nvml.so")
    if os.path.exists(fake):
        script = os.path.join(keep, "fake_nvml_script")
        os.makedirs(keep, exist_ok=True)
        with open(script, "w") as f:
            f.write(FAKE_NVML_SCRIPT)
        gpu_env = {"STALLSCOPE_NVML_LIBRARY": fake, "FAKE_NVML_SCRIPT": script}
        live = os.path.join(FIX, "live_debian12")
        for argv in (["doctor", "--quick", "--root", live], ["doctor", "--quick", "--root", live,
                     "--json"], ["snapshot", "--root", live, "--interval", "0.05", "--json"]):
            all_cases.append(("fake GPUs: " + " ".join(argv[:2] + argv[-1:]), argv, [], gpu_env))
    if not glob.glob(os.path.join(a.runs, "*.db")):
        sys.exit(f"same_outputs: no run files (*.db) in {a.runs}")
    for i, (name, argv, files, extra_env) in enumerate(all_cases):
        sides = []
        for side, binary in (("BEFORE", a.before), ("AFTER", a.after)):
            sides.append(run_case(os.path.abspath(binary), argv, files,
                                  os.path.join(keep, side, f"{i:03d}"), extra_env))
        for key in sides[0]:
            if sides[0][key] != sides[1][key]:
                differ.append(f"{name}: {key}")
                diff = difflib.unified_diff(sides[0][key].decode(errors="replace").splitlines(),
                                            sides[1][key].decode(errors="replace").splitlines(),
                                            "before", "after", lineterm="", n=1)
                print(f"--- {name} ({key}) differs:\n" + "\n".join(list(diff)[:40]))
    print(f"{len(all_cases)} cases, {len(differ)} differ; outputs kept in {keep}")
    for d in differ:
        print("  differs:", d)
    sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main()

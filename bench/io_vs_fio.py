#!/usr/bin/env python3
"""stallscope bench io against fio, on the same file with the same parameters,
in one run.

Goal (issue 4): within 5% of fio on sequential MB/s and random 4 KiB IOPS.

What is compared, per round (rounds alternate the order to cancel drift):
  fio --rw=read --bs=1M --direct=1 --numjobs=J --iodepth=D --size=SLICE
      --offset_increment=SLICE --time_based --runtime=R   (each job its own slice)
  fio --rw=randread --bs=4k --direct=1 --numjobs=J --iodepth=D --size=SIZE
      --norandommap --randrepeat=0 --time_based --runtime=R
  stallscope bench io DIR --size SIZE --jobs J --iodepth D --runtime R --files 0 --json
fio's engine is io_uring (stallscope's) unless --fio-engine says otherwise
(libaio is the seed's). The test file is the one stallscope writes (--keep),
so both read the same blocks of the same file.

Usage: bench/io_vs_fio.py STALLSCOPE DIR [--size 4G] [--runtime 10] [--jobs 4]
                          [--iodepth 1] [--rounds 3] [--fio-engine io_uring] [--keep]
Prints each round, then the medians and the ratio stallscope / fio.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys

MIB = 1 << 20
UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def parse_size(text):
    text = text.strip().upper().replace("IB", "").replace("B", "")
    unit = text[-1] if text[-1] in UNITS and not text[-1].isdigit() else ""
    return int(float(text[:len(text) - len(unit)]) * UNITS[unit])


def run_fio(args, filename, pattern):
    cmd = ["fio", "--name=cmp", "--filename=" + filename, "--ioengine=" + args.fio_engine,
           "--direct=1", "--numjobs=%d" % args.jobs, "--iodepth=%d" % args.iodepth,
           "--time_based", "--runtime=%g" % args.runtime, "--group_reporting",
           "--output-format=json", "--lat_percentiles=1"]
    if pattern == "read":
        slice_bytes = args.size_bytes // args.jobs // MIB * MIB
        cmd += ["--rw=read", "--bs=1M", "--size=%d" % slice_bytes,
                "--offset_increment=%d" % slice_bytes]
    else:
        cmd += ["--rw=randread", "--bs=4k", "--size=%d" % args.size_bytes, "--norandommap",
                "--randrepeat=0"]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    read = json.loads(out[out.index("{"):])["jobs"][0]["read"]
    # Total latency (submission + completion), as stallscope measures it; fio's
    # clat leaves out the submit call.
    pct = read["lat_ns"]["percentile"]
    return {"mb_per_s": read["bw_bytes"] / 1e6, "iops": read["iops"],
            "p50_us": pct["50.000000"] / 1e3, "p99_us": pct["99.000000"] / 1e3}


def run_stallscope(args, keep=True):
    cmd = [args.stallscope, "bench", "io", args.dir, "--size", str(args.size_bytes),
           "--runtime", str(args.runtime), "--jobs", str(args.jobs), "--iodepth",
           str(args.iodepth), "--files", "0", "--json"] + (["--keep"] if keep else [])
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit("stallscope failed (%d): %s" % (proc.returncode, proc.stderr))
    b = json.loads(proc.stdout)["bench"]
    if not b["direct"]:
        sys.exit("stallscope read buffered (%s): no O_DIRECT comparison here" % b["read_mode"])
    out = {}
    for phase in ("sequential", "random"):
        p = b[phase]
        out[phase] = {"mb_per_s": p["mb_per_s"], "iops": p["iops"],
                      "p50_us": p["latency_us"]["p50"], "p99_us": p["latency_us"]["p99"]}
    return out, b


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("stallscope")
    ap.add_argument("dir")
    ap.add_argument("--size", default="4G")
    ap.add_argument("--runtime", type=float, default=10)
    ap.add_argument("--jobs", type=int, default=4)
    ap.add_argument("--iodepth", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--fio-engine", default="io_uring")
    ap.add_argument("--keep", action="store_true", help="keep the test file afterwards")
    args = ap.parse_args()
    args.size_bytes = parse_size(args.size)
    args.stallscope = os.path.abspath(args.stallscope)
    filename = os.path.join(os.path.realpath(args.dir), "stallscope-bench-io.dat")

    print("fio %s vs stallscope bench io on %s: %s, %d jobs x iodepth %d, %g s per phase, "
          "%d rounds" % (subprocess.run(["fio", "--version"], capture_output=True,
                                        text=True).stdout.strip(), filename, args.size,
                         args.jobs, args.iodepth, args.runtime, args.rounds))
    # The first stallscope run writes the test file; its figures are not counted
    # (the file was just written and may sit in a device or host cache).
    _, b = run_stallscope(args)
    print("test file: %s, %d bytes, %s, engine %s" % (b["file"]["path"], b["file"]["bytes"],
                                                      "O_DIRECT", b["engine"]))
    rows = {"fio": {"sequential": [], "random": []}, "stallscope": {"sequential": [],
                                                                    "random": []}}
    for r in range(args.rounds):
        order = ["fio", "stallscope"] if r % 2 == 0 else ["stallscope", "fio"]
        for who in order:
            if who == "fio":
                rows["fio"]["sequential"].append(run_fio(args, filename, "read"))
                rows["fio"]["random"].append(run_fio(args, filename, "randread"))
            else:
                s, _ = run_stallscope(args)
                rows["stallscope"]["sequential"].append(s["sequential"])
                rows["stallscope"]["random"].append(s["random"])
        for phase, key in (("sequential", "mb_per_s"), ("random", "iops")):
            f = rows["fio"][phase][-1]
            s = rows["stallscope"][phase][-1]
            print("round %d %-10s fio %10.1f  stallscope %10.1f  %s  (p50 us fio %.0f / ours "
                  "%.0f, p99 us %.0f / %.0f)" % (r + 1, phase, f[key], s[key],
                                                 "MB/s" if key == "mb_per_s" else "IOPS",
                                                 f["p50_us"], s["p50_us"], f["p99_us"],
                                                 s["p99_us"]))
    print()
    print("%-22s %12s %12s %8s" % ("median of %d rounds" % args.rounds, "fio", "stallscope",
                                   "ratio"))
    worst = 0
    for phase, key, unit in (("sequential", "mb_per_s", "MB/s"), ("random", "iops", "IOPS"),
                             ("sequential", "p50_us", "p50 us"),
                             ("random", "p50_us", "p50 us"), ("random", "p99_us", "p99 us")):
        f = statistics.median(x[key] for x in rows["fio"][phase])
        s = statistics.median(x[key] for x in rows["stallscope"][phase])
        ratio = s / f if f else float("nan")
        if key in ("mb_per_s", "iops"):
            worst = max(worst, abs(ratio - 1))
        print("%-22s %12.1f %12.1f %8.3f" % ("%s %s" % (phase, unit), f, s, ratio))
    # Rounds are pairs run back to back: the median of the per-round ratios
    # cancels the drift of a shared disk better than the ratio of medians.
    print()
    paired_worst = 0
    for phase, key, unit in (("sequential", "mb_per_s", "MB/s"), ("random", "iops", "IOPS")):
        ratios = [s[key] / f[key] for s, f in zip(rows["stallscope"][phase], rows["fio"][phase])]
        paired = statistics.median(ratios)
        paired_worst = max(paired_worst, abs(paired - 1))
        print("%-22s median of per-round ratios %.3f (range %.2f-%.2f)" %
              ("%s %s" % (phase, unit), paired, min(ratios), max(ratios)))
    print()
    print("goal: within 5%% on sequential MB/s and random IOPS: %s (ratio of medians: worst "
          "%.1f%% off; per-round ratios: worst %.1f%% off)" %
          ("met" if min(worst, paired_worst) <= 0.05 else "NOT met", worst * 100,
           paired_worst * 100))
    if not args.keep:
        os.unlink(filename)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""stallscope bench io against fio, on the same file with the same parameters,
in one run.

Goal: within 5% of fio (io_uring, stallscope's engine) on sequential MB/s and
random 4 KiB IOPS, ratio of medians over at least 5 interleaved rounds; the
ratio to fio with libaio (the usual fio line's engine) printed beside it.

What is compared, per round (rounds alternate the order to cancel drift):
  fio --rw=read --bs=1M --direct=1 --numjobs=J --iodepth=D --size=SLICE
      --offset_increment=SLICE --time_based --runtime=R   (each job its own slice)
  fio --rw=randread --bs=4k --direct=1 --numjobs=J --iodepth=D --size=SIZE
      --norandommap --randrepeat=0 --time_based --runtime=R
  stallscope bench io DIR --size SIZE --jobs J --iodepth D --runtime R --files 0 --json
fio runs with each engine of --fio-engines (io_uring,libaio). The test file is
the one stallscope writes (--keep), so all read the same blocks of the same file.

Buffers: stallscope reads into 2 MiB-aligned transparent huge pages, so a
1 MiB read is one physically contiguous run and one device request. fio's
default (--mem=malloc) gets 4 KiB pages wherever the allocator puts them; on a
device with max_segments below 256 (virtio-blk: 254) a scattered buffer splits
each 1 MiB read in two and fio's figure halves, by luck, from run to run. So
fio gets huge-page buffers too (--mem=shmhuge) when enough huge pages are
reserved (as root: sysctl vm.nr_hugepages=64), and the script says which it
used; --fio-mem malloc forces fio's default. Each round also counts the
device's completed reads (/sys/block/DEV/stat) per IO: 1.00 means unsplit.

Usage: bench/io_vs_fio.py STALLSCOPE DIR [--size 4G] [--runtime 10] [--jobs 4]
                          [--iodepth 1] [--rounds 5] [--fio-engines io_uring,libaio]
                          [--fio-mem auto|shmhuge|malloc] [--keep]
Prints every round of every tool, then the medians and the ratios stallscope / fio.
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


def device_reads(dev):
    """Completed reads of the block device (first field of /sys/block/DEV/stat)."""
    try:
        with open("/sys/block/%s/stat" % dev) as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def huge_pages_free():
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("HugePages_Free:"):
                return int(line.split()[1])
    return 0


def run_fio(args, filename, pattern, engine):
    cmd = ["fio", "--name=cmp", "--filename=" + filename, "--ioengine=" + engine,
           "--direct=1", "--numjobs=%d" % args.jobs, "--iodepth=%d" % args.iodepth,
           "--time_based", "--runtime=%g" % args.runtime, "--group_reporting",
           "--output-format=json", "--lat_percentiles=1", "--mem=" + args.fio_mem]
    if pattern == "sequential":
        slice_bytes = args.size_bytes // args.jobs // MIB * MIB
        cmd += ["--rw=read", "--bs=1M", "--size=%d" % slice_bytes,
                "--offset_increment=%d" % slice_bytes]
    else:
        cmd += ["--rw=randread", "--bs=4k", "--size=%d" % args.size_bytes, "--norandommap",
                "--randrepeat=0"]
    before = device_reads(args.device)
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    after = device_reads(args.device)
    read = json.loads(out[out.index("{"):])["jobs"][0]["read"]
    # Total latency (submission + completion), as stallscope measures it; fio's
    # clat leaves out the submit call.
    pct = read["lat_ns"]["percentile"]
    ios = read["total_ios"]
    return {"mb_per_s": read["bw_bytes"] / 1e6, "iops": read["iops"],
            "p50_us": pct["50.000000"] / 1e3, "p99_us": pct["99.000000"] / 1e3,
            "dev_per_io": (after - before) / ios if before is not None and ios else float("nan")}


def run_stallscope(args, keep=True):
    cmd = [args.stallscope, "bench", "io", args.dir, "--size", str(args.size_bytes),
           "--runtime", str(args.runtime), "--jobs", str(args.jobs), "--iodepth",
           str(args.iodepth), "--files", "0", "--json"] + (["--keep"] if keep else [])
    before = device_reads(args.device) if args.device else None
    proc = subprocess.run(cmd, capture_output=True, text=True)
    after = device_reads(args.device) if args.device else None
    if proc.returncode != 0:
        sys.exit("stallscope failed (%d): %s" % (proc.returncode, proc.stderr))
    b = json.loads(proc.stdout)["bench"]
    if not b["direct"]:
        sys.exit("stallscope read buffered (%s): no O_DIRECT comparison here" % b["read_mode"])
    out = {}
    ios = b["sequential"]["ios"] + b["random"]["ios"]
    for phase in ("sequential", "random"):
        p = b[phase]
        out[phase] = {"mb_per_s": p["mb_per_s"], "iops": p["iops"],
                      "p50_us": p["latency_us"]["p50"], "p99_us": p["latency_us"]["p99"],
                      # Both phases in one run: the device reads per IO of the two together.
                      "dev_per_io": (after - before) / ios if before is not None and ios
                      else float("nan")}
    return out, b


KEY = {"sequential": ("mb_per_s", "MB/s"), "random": ("iops", "IOPS")}


def print_round(r, who, figures):
    for phase in ("sequential", "random"):
        key, unit = KEY[phase]
        f = figures[phase]
        print("round %d %-16s %-10s %10.1f %-4s p50 %7.0f us  p99 %7.0f us  device reads/IO %.2f"
              % (r + 1, who, phase, f[key], unit, f["p50_us"], f["p99_us"], f["dev_per_io"]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("stallscope")
    ap.add_argument("dir")
    ap.add_argument("--size", default="4G")
    ap.add_argument("--runtime", type=float, default=10)
    ap.add_argument("--jobs", type=int, default=4)
    ap.add_argument("--iodepth", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--fio-engines", default="io_uring,libaio")
    ap.add_argument("--fio-mem", default="auto", choices=("auto", "shmhuge", "malloc"))
    ap.add_argument("--keep", action="store_true", help="keep the test file afterwards")
    args = ap.parse_args()
    args.size_bytes = parse_size(args.size)
    args.stallscope = os.path.abspath(args.stallscope)
    engines = args.fio_engines.split(",")
    filename = os.path.join(os.path.realpath(args.dir), "stallscope-bench-io.dat")
    if args.fio_mem == "auto":
        # fio takes one shm segment per job of iodepth x bs (+ alignment), in 2 MiB pages.
        need = args.jobs * ((args.iodepth * MIB + 2 * MIB) // (2 * MIB) + 1)
        args.fio_mem = "shmhuge" if huge_pages_free() >= need else "malloc"
    args.device = None

    print("fio %s (engines %s, --mem=%s) vs stallscope bench io on %s: %s, %d jobs x "
          "iodepth %d, %g s per phase, %d rounds" %
          (subprocess.run(["fio", "--version"], capture_output=True, text=True).stdout.strip(),
           ",".join(engines), args.fio_mem, filename, args.size, args.jobs, args.iodepth,
           args.runtime, args.rounds))
    # The first stallscope run writes the test file; its figures are not counted
    # (the file was just written and may sit in a device or host cache).
    _, b = run_stallscope(args)
    args.device = b.get("device") or None
    if args.device and device_reads(args.device) is None:
        args.device = None
    print("test file: %s, %d bytes, O_DIRECT, stallscope engine %s, device %s" %
          (b["file"]["path"], b["file"]["bytes"], b["engine"], args.device or "unknown"))
    tools = ["stallscope"] + ["fio " + e for e in engines]
    rows = {t: {"sequential": [], "random": []} for t in tools}
    for r in range(args.rounds):
        # Alternate the order so that drift and other load fall on all alike.
        order = tools if r % 2 == 0 else list(reversed(tools))
        for who in order:
            if who == "stallscope":
                figures, _ = run_stallscope(args)
            else:
                engine = who.split(" ", 1)[1]
                figures = {phase: run_fio(args, filename, phase, engine)
                           for phase in ("sequential", "random")}
            for phase in ("sequential", "random"):
                rows[who][phase].append(figures[phase])
            print_round(r, who, figures)
        sys.stdout.flush()
    print()
    print("median of %d rounds" % args.rounds)
    goal = True
    for phase in ("sequential", "random"):
        key, unit = KEY[phase]
        ours = statistics.median(x[key] for x in rows["stallscope"][phase])
        parts = ["%-10s stallscope %10.1f %s" % (phase, ours, unit)]
        for e in engines:
            theirs = statistics.median(x[key] for x in rows["fio " + e][phase])
            ratio = ours / theirs if theirs else float("nan")
            if e == engines[0]:
                goal = goal and abs(ratio - 1) <= 0.05
            parts.append("fio %s %10.1f (ratio %.3f)" % (e, theirs, ratio))
        print("  " + "   ".join(parts))
    print()
    print("goal: stallscope / fio %s within 5%% on sequential MB/s and random IOPS: %s" %
          (engines[0], "met" if goal else "NOT met"))
    if not args.keep:
        os.unlink(filename)


if __name__ == "__main__":
    main()

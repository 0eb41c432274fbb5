#!/usr/bin/env python3
"""stallscope on a real network file system against the peer tools, in one
run: an sshfs mount of an sshd in a network namespace behind a relay that
delays each chunk 5 ms each way (tests/e2e/remote_fs_common.py; root, FUSE,
sshfs and openssh-server).

1. `stallscope bench io MOUNT --files 0` (buffered: FUSE refuses O_DIRECT)
   against fio --direct=0 on the same test file with the same pattern
   (sequential 1 MiB, random 4 KiB, same jobs, iodepth, runtime; psync).
2. The metadata latency: `stallscope dataset MOUNT`'s stat p50 against
   a Python os.stat loop over the same files (the p50 of each call).
3. The epoch time that packing saves: the real job
   (tests/e2e/jobs/io_stories.py, 2 workers) reading FILES small files from
   the mount, against the same job reading them packed by `stallscope pack`
   onto a local disk; beside it the saving `dataset` predicts
   (io.remote_fs's pack_saves_seconds_per_epoch).

Usage: bench/remote_fs.py STALLSCOPE [--files 2000] [--delay-ms 5] [--runtime 5]
Prints each figure, the peer's, and the ratio stallscope / peer.
"""

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))
import remote_fs_common  # noqa: E402

JOB = os.path.join(ROOT, "tests", "e2e", "jobs", "io_stories.py")
ENV = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))


def sh(cmd, **kw):
    proc = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if proc.returncode != 0:
        sys.exit("%s failed (%d): %s" % (cmd[0], proc.returncode, proc.stderr[-2000:]))
    return proc.stdout


def bench_io(args, mount):
    out = json.loads(sh([args.stallscope, "bench", "io", mount, "--size", "64M", "--jobs", "1",
                         "--iodepth", "1", "--runtime", str(args.runtime), "--files", "0",
                         "--json", "--keep"]))["bench"]
    test_file = os.path.join(mount, "stallscope-bench-io.dat")
    fio = {}
    for phase, rw, bs in (("sequential", "read", "1M"), ("random", "randread", "4k")):
        j = json.loads(sh(["fio", "--name=" + phase, "--filename=" + test_file, "--rw=" + rw,
                           "--bs=" + bs, "--direct=0", "--ioengine=psync", "--numjobs=1",
                           "--iodepth=1", "--size=64M", "--time_based",
                           "--runtime=%d" % args.runtime, "--norandommap", "--randrepeat=0",
                           "--invalidate=1", "--output-format=json"]))
        read = j["jobs"][0]["read"]
        fio[phase] = {"mb_per_s": read["bw_bytes"] / 1e6, "iops": read["iops"]}
    os.unlink(test_file)
    for phase, key, unit in (("sequential", "mb_per_s", "MB/s"), ("random", "iops", "IOPS")):
        ours, theirs = out[phase][key], fio[phase][key]
        print("bench io %-10s stallscope %9.1f %s  fio --direct=0 %9.1f %s  ratio %.2f"
              % (phase, ours, unit, theirs, unit, ours / theirs if theirs else float("nan")))


def stat_latency(args, mount, files):
    # The job below reads with 2 DataLoader workers: dataset is told so.
    census = json.loads(sh([args.stallscope, "dataset", mount, "--json", "--workers", "2"],
                           env=ENV))
    ours = census["dataset"]["metadata_latency"]["stat_p50_us"]
    times = []
    for path in files:
        t0 = time.perf_counter()
        os.stat(path)
        times.append((time.perf_counter() - t0) * 1e6)
    theirs = statistics.median(times)
    print("stat p50  stallscope dataset %8.0f us  python os.stat loop %8.0f us  ratio %.2f"
          % (ours, theirs, ours / theirs))
    return census


def epoch_seconds(args, job_args):
    out = sh(["/usr/bin/python3", JOB, "--epochs", "1", "--batch-size", "16"] + job_args,
             env=ENV, timeout=900)
    return float(re.search(r"epoch 0: \d+ steps in ([0-9.]+) s", out).group(1))


def pack_saving(args, fs, census, tmp):
    data = os.path.join(fs.mount, "imgs")
    shards = os.path.join(tmp, "shards")
    t0 = time.monotonic()
    sh([args.stallscope, "pack", data, shards, "--format", "wds"])
    pack_s = time.monotonic() - t0
    remote = epoch_seconds(args, ["--dir", data])
    local = epoch_seconds(args, ["--shards", shards])
    finding = next(f for f in census["findings"] if f["id"] == "io.remote_fs")
    predicted = finding["evidence"].get("pack_saves_seconds_per_epoch", float("nan"))
    measured = remote - local
    print("epoch     on the mount %.1f s  packed on a local disk %.1f s  (pack took %.1f s)"
          % (remote, local, pack_s))
    print("saving    dataset predicts %.1f s  measured %.1f s  ratio %.2f"
          % (predicted, measured, predicted / measured if measured else float("nan")))


class _Test(unittest.TestCase):
    def runTest(self):
        pass


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("stallscope")
    p.add_argument("--files", type=int, default=2000)
    p.add_argument("--delay-ms", type=float, default=5)
    p.add_argument("--runtime", type=int, default=5)
    args = p.parse_args()
    args.stallscope = os.path.abspath(args.stallscope)
    print("load average before: %s" % open("/proc/loadavg").read().split()[:3])
    tmp = tempfile.mkdtemp(prefix="stallscope-rfs-bench-")
    try:
        with remote_fs_common.RemoteFs(_Test(), delay_ms=args.delay_ms) as fs:
            sh(["/usr/bin/python3", JOB, "--make-dir", os.path.join(fs.export, "imgs"),
                str(args.files)], env=ENV)
            print("link: %s ms each way; %d files of 2 KiB" % (args.delay_ms, args.files))
            bench_io(args, fs.mount)
            files = [os.path.join(d, f) for d, _, names in os.walk(os.path.join(fs.export, "imgs"))
                     for f in names]
            on_mount = [os.path.join(fs.mount, os.path.relpath(f, fs.export)) for f in files]
            census = stat_latency(args, os.path.join(fs.mount, "imgs"), on_mount[:1000])
            pack_saving(args, fs, census, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("load average after: %s" % open("/proc/loadavg").read().split()[:3])


if __name__ == "__main__":
    main()

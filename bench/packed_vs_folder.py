"""Packed shards against a folder of small files, measured: reading many
~100 KB files from a folder vs from `stallscope pack` shards, each through
the real PyTorch DataLoader with the same workers and batch size, from a
cold page cache; and pack throughput vs `tar -cf` on the same files.

    sudo /usr/bin/python3 bench/packed_vs_folder.py --binary build/stallscope \
        [--dir /work/bench-pydata] [--files 20000] [--workers 4] [--batch 64]

Steps (the source folder is made once under --dir and reused):
  1. DIR/src/class_NN/img_NNNNNN.jpg: --files files of random bytes, sizes
     uniform in [0.8, 1.2] x --size (default 100 KB), in --classes folders.
  2. Cold cache, then `tar -cf`, `stallscope pack --format wds` and
     `--format tfrecord`, each timed up to a `sync` (data on disk).
  3. Cold cache before each read: the folder through a map-style Dataset
     (one open+read per file; shuffled as training reads it, and in order as
     a best case), then the shards through stallscope.data.ShardDataset
     (shard order shuffled + a shuffle buffer; TFRecord with and without the
     data CRC check). A batch is one uint8 tensor of its files' bytes plus
     lengths and labels, the same collate for all.
For each read it prints samples/s, MB/s, the ratio to the shuffled folder,
and from /proc/diskstats (what iostat reads) the device's read MB, read
requests, mean request size and busy time, plus the CPU seconds of the
DataLoader workers: whether a read was bound by the disk or by the CPU.
Cache drops need root; without root the reads are warm and it says so.
--read-iops N runs the reads in a blkio cgroup limited to N read requests/s
on the device, to see what packing does on a disk or volume sold by IOPS
(an emulation, named as such in the output).
"""
import argparse
import contextlib
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import time
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python"))


# ---------------------------------------------------------------------------
# The machine.

def drop_caches():
    """True when the page cache was dropped (root only)."""
    subprocess.run(["sync"], check=True)
    try:
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
        return True
    except OSError:
        return False


def device_of(path):
    """The /proc/diskstats name of the block device holding path, or None."""
    st = os.stat(path)
    major, minor = os.major(st.st_dev), os.minor(st.st_dev)
    with open("/proc/diskstats") as f:
        for line in f:
            fields = line.split()
            if int(fields[0]) == major and int(fields[1]) == minor:
                return fields[2]
    return None


def disk_counters(device):
    """(reads completed, sectors read, ms reading, ms busy) of the device."""
    if device is None:
        return (0, 0, 0, 0)
    with open("/proc/diskstats") as f:
        for line in f:
            fields = line.split()
            if fields[2] == device:
                return (int(fields[3]), int(fields[5]), int(fields[6]), int(fields[12]))
    return (0, 0, 0, 0)


class ReadIopsLimit:
    """This process (and the DataLoader workers it forks) in a cgroup-v1
    blkio child whose reads from the device are limited to N requests/s, as
    on a disk or network volume sold by IOPS. Entered around the reads only."""

    ROOT = "/sys/fs/cgroup/blkio"

    def __init__(self, path, iops):
        st = os.stat(path)
        self.rule = "%d:%d %d" % (os.major(st.st_dev), os.minor(st.st_dev), iops)
        self.dir = os.path.join(self.ROOT, "stallscope-bench-%d" % os.getpid())

    def __enter__(self):
        os.mkdir(self.dir)
        try:
            with open(os.path.join(self.dir, "blkio.throttle.read_iops_device"), "w") as f:
                f.write(self.rule)
            with open(os.path.join(self.dir, "cgroup.procs"), "w") as f:
                f.write(str(os.getpid()))
        except OSError:
            os.rmdir(self.dir)
            raise
        return self

    def __exit__(self, *exc):
        with open(os.path.join(self.ROOT, "cgroup.procs"), "w") as f:
            f.write(str(os.getpid()))
        os.rmdir(self.dir)
        return False


class Measure:
    """Wall time, disk counters and CPU of self + reaped children over a block."""

    def __init__(self, device):
        self.device = device

    def __enter__(self):
        self.disk = disk_counters(self.device)
        self.self_cpu = self._cpu(resource.RUSAGE_SELF)
        self.child_cpu = self._cpu(resource.RUSAGE_CHILDREN)
        self.start = time.monotonic()
        return self

    def __exit__(self, *exc):
        self.seconds = time.monotonic() - self.start
        d = disk_counters(self.device)
        self.reads = d[0] - self.disk[0]
        self.read_bytes = (d[1] - self.disk[1]) * 512
        self.read_ms = d[2] - self.disk[2]
        self.busy = (d[3] - self.disk[3]) / 1000.0 / max(self.seconds, 1e-9)
        self.main_cpu = self._cpu(resource.RUSAGE_SELF) - self.self_cpu
        self.worker_cpu = self._cpu(resource.RUSAGE_CHILDREN) - self.child_cpu
        return False

    @staticmethod
    def _cpu(who):
        r = resource.getrusage(who)
        return r.ru_utime + r.ru_stime

    def disk_text(self):
        size = self.read_bytes / self.reads / 1024 if self.reads else 0
        return ("disk read %6.0f MB in %6d requests (mean %5.0f KiB), busy %3.0f%%; CPU: main "
                "%5.1f s, workers %5.1f s" % (self.read_bytes / 1e6, self.reads, size,
                                               100 * self.busy, self.main_cpu, self.worker_cpu))


# ---------------------------------------------------------------------------
# The data.

def make_source(src, files, size, classes):
    """Makes (or reuses) the folder; returns [(path, label)] sorted."""
    stamp = os.path.join(src, ".complete")
    want = {"files": files, "size": size, "classes": classes}
    try:
        with open(stamp) as f:
            if json.load(f) == want:
                return list_source(src)
    except (OSError, ValueError):
        pass
    if os.path.exists(src):
        shutil.rmtree(src)
    rng = random.Random(1)
    print("making %d files of ~%d bytes in %s ..." % (files, size, src), flush=True)
    for c in range(classes):
        os.makedirs(os.path.join(src, "class_%02d" % c))
    for i in range(files):
        n = rng.randint(size * 8 // 10, size * 12 // 10)
        with open(os.path.join(src, "class_%02d" % (i % classes), "img_%06d.jpg" % i), "wb") as f:
            f.write(os.urandom(n))
    subprocess.run(["sync"], check=True)
    with open(stamp, "w") as f:
        json.dump(want, f)
    return list_source(src)


def list_source(src):
    classes = sorted(d for d in os.listdir(src) if os.path.isdir(os.path.join(src, d)))
    items = []
    for label, cls in enumerate(classes):
        for name in sorted(os.listdir(os.path.join(src, cls))):
            items.append((os.path.join(src, cls, name), label))
    return items


class FolderDataset:
    """A map-style Dataset over files, as torchvision's ImageFolder reads
    them (one open + read per sample), without decoding."""

    def __init__(self, items):
        self.items = items

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        path, label = self.items[i]
        with open(path, "rb") as f:
            return f.read(), label


def collate(batch):
    """One uint8 tensor of the batch's bytes, their lengths, the labels."""
    import torch
    data = bytearray().join(d for d, _ in batch)
    return (torch.frombuffer(data, dtype=torch.uint8),
            torch.tensor([len(d) for d, _ in batch]), torch.tensor([l for _, l in batch]))


def from_tfrecord(s):
    return s["data"], s["label"]


def from_wds(s):
    return s["jpg"], int(s["cls"])


# ---------------------------------------------------------------------------

def run_timed(argv, device):
    with Measure(device) as m:
        proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        subprocess.run(["sync"], check=True)
    if proc.returncode != 0:
        sys.exit("%s failed (%d): %s" % (" ".join(argv), proc.returncode,
                                        proc.stderr.decode(errors="replace")))
    return m, proc.stdout


def read_all(loader, device):
    samples = nbytes = 0
    with Measure(device) as m:
        it = iter(loader)
        for data, lengths, labels in it:
            samples += len(labels)
            nbytes += data.numel()
        del it                      # joins the workers, so their CPU is counted
    return m, samples, nbytes


def cpu_cost(items, packed, n):
    """CPU per sample of each reader + the collate, in this process, over the
    first n samples (of the first shard), warm cache: the readers' own cost
    without the DataLoader's worker processes."""
    from stallscope.data import ShardDataset
    tfrecord = [os.path.join(packed["tfrecord"], "shard-00000.tfrecord")]
    variants = [
        ("folder open+read", lambda: (FolderDataset(items)[i] for i in range(len(items)))),
        ("wds", lambda: ShardDataset([os.path.join(packed["wds"], "shard-00000.tar")],
                                     decode=from_wds)),
        ("tfrecord, CRC checked", lambda: ShardDataset(tfrecord, decode=from_tfrecord)),
        ("tfrecord, no data CRC", lambda: ShardDataset(tfrecord, decode=from_tfrecord,
                                                       check_crc=False)),
    ]
    print("\nCPU per sample, one process, warm cache, %d samples (best of 2):" % n)
    for name, make in variants:
        best = None
        for _ in range(2):
            count, batch = 0, []
            start = time.process_time()
            for sample in make():
                batch.append(sample)
                count += 1
                if len(batch) == 64 or count == n:
                    collate(batch)
                    batch = []
                if count == n:
                    break
            spent = (time.process_time() - start) / count
            best = spent if best is None else min(best, spent)
        print("  %-30s %6.0f us" % (name, best * 1e6), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--binary", required=True, help="the stallscope binary (with `pack`)")
    ap.add_argument("--dir", default="/work/bench-pydata", help="work folder on the disk to test")
    ap.add_argument("--files", type=int, default=20000)
    ap.add_argument("--size", type=int, default=100_000, help="mean file size, bytes")
    ap.add_argument("--classes", type=int, default=10)
    ap.add_argument("--workers", type=int, default=4, help="DataLoader num_workers")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--shard-size", default="256MiB")
    ap.add_argument("--skip-pack", action="store_true", help="reuse the shards of a previous run")
    ap.add_argument("--read-iops", type=int, default=0,
                    help="emulate a disk sold by IOPS: limit the reads to N requests/s "
                         "(cgroup v1 blkio throttle, root)")
    ap.add_argument("--only", default="", help="comma list of read names to run "
                    "(folder-shuffled,folder-ordered,wds,tfrecord,tfrecord-nocrc)")
    ap.add_argument("--cpu-cost", type=int, default=0, metavar="N",
                    help="only print each reader's CPU per sample over N warm samples")
    args = ap.parse_args()
    warnings.filterwarnings("ignore", message="This DataLoader will create")

    binary = os.path.abspath(args.binary)
    # The native CRC32C built beside the binary, as `stallscope run` gives a
    # job (unless STALLSCOPE_CRC32C is set; empty: the pure-Python code).
    os.environ.setdefault("STALLSCOPE_CRC32C",
                          os.path.join(os.path.dirname(binary), "libstallscope_crc32c.so"))
    import torch.utils.data as tud
    from stallscope.data import ShardDataset
    import stallscope.crc32c
    print("CRC32C: %s" % stallscope.crc32c.IMPLEMENTATION)

    os.makedirs(args.dir, exist_ok=True)
    src = os.path.join(args.dir, "src")
    items = make_source(src, args.files, args.size, args.classes)
    total = sum(os.path.getsize(p) for p, _ in items)
    device = device_of(args.dir)
    cold = drop_caches()
    print("%d files, %.0f MB in %s (device %s); page cache %s; %d workers, batch %d; %s"
          % (len(items), total / 1e6, src, device,
             "dropped before each step" if cold else "NOT dropped (not root): warm reads",
             args.workers, args.batch, time.strftime("%Y-%m-%d %H:%M:%S")), flush=True)

    # -- pack vs tar ----------------------------------------------------------
    packed = {fmt: os.path.join(args.dir, "packed-" + fmt) for fmt in ("wds", "tfrecord")}
    if args.cpu_cost:
        cpu_cost(items[:args.cpu_cost], packed, args.cpu_cost)
        return
    if not args.skip_pack:
        tar_path = os.path.join(args.dir, "src.tar")
        for path in [tar_path] + list(packed.values()):
            if os.path.isdir(path):
                shutil.rmtree(path)
            elif os.path.exists(path):
                os.remove(path)
        print("\npack, cold cache, each timed to its data on disk (command + sync):")
        drop_caches()
        m, _ = run_timed(["tar", "-cf", tar_path, "-C", args.dir, "src"], device)
        tar_rate = total / m.seconds
        print("  %-34s %7.2f s %8.1f MB/s   %s" % ("tar -cf", m.seconds, tar_rate / 1e6,
                                                  m.disk_text()), flush=True)
        os.remove(tar_path)
        for fmt, out in packed.items():
            drop_caches()
            m, stdout = run_timed([binary, "pack", src, out, "--format", fmt, "--shard-size",
                                   args.shard_size, "--json"], device)
            result = json.loads(stdout)
            print("  %-34s %7.2f s %8.1f MB/s   %.2fx tar; %d shards"
                  % ("stallscope pack --format " + fmt, m.seconds, total / m.seconds / 1e6,
                     total / m.seconds / tar_rate, result["shards"]), flush=True)

    # -- reads ----------------------------------------------------------------
    loader_args = dict(batch_size=args.batch, num_workers=args.workers, collate_fn=collate)
    runs = [
        ("folder-shuffled", "folder, shuffled (as training)", lambda: tud.DataLoader(
            FolderDataset(items), shuffle=True, **loader_args)),
        ("folder-ordered", "folder, in order (best case)", lambda: tud.DataLoader(
            FolderDataset(items), shuffle=False, **loader_args)),
        ("wds", "packed wds", lambda: tud.DataLoader(ShardDataset(
            packed["wds"], shuffle=True, shuffle_buffer=1000, decode=from_wds), **loader_args)),
        ("tfrecord", "packed tfrecord, CRC checked", lambda: tud.DataLoader(ShardDataset(
            packed["tfrecord"], shuffle=True, shuffle_buffer=1000, decode=from_tfrecord),
            **loader_args)),
        ("tfrecord-nocrc", "packed tfrecord, no data CRC", lambda: tud.DataLoader(ShardDataset(
            packed["tfrecord"], shuffle=True, shuffle_buffer=1000, decode=from_tfrecord,
            check_crc=False), **loader_args)),
    ]
    print("\nread through torch DataLoader (num_workers=%d, batch_size=%d), %s cache%s:"
          % (args.workers, args.batch, "cold" if cold else "WARM",
             ", reads limited to %d IOPS" % args.read_iops if args.read_iops else ""))
    base = None
    only = set(filter(None, args.only.split(",")))
    for short, name, make in runs:
        if only and short not in only:
            continue
        loader = make()
        drop_caches()
        limit = ReadIopsLimit(args.dir, args.read_iops) if args.read_iops else \
            contextlib.nullcontext()
        with limit:
            m, samples, nbytes = read_all(loader, device)
        if samples != len(items) or nbytes != total:
            sys.exit("%s: read %d samples / %d bytes, expected %d / %d"
                     % (name, samples, nbytes, len(items), total))
        rate = samples / m.seconds
        base = base or rate
        print("  %-30s %8.0f samples/s %7.1f MB/s %6.2fx   %s"
              % (name, rate, nbytes / m.seconds / 1e6, rate / base, m.disk_text()), flush=True)


if __name__ == "__main__":
    main()

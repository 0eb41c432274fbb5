"""Known slow-input cases as small real PyTorch jobs, for tests/e2e/io_stories.py.

A DataLoader over one of three datasets, a tiny model stepped on each batch:
  --zip PATH    members of a zip (bzip2-compressed), each worker keeping its
                own ZipFile open and decompressing a member per item (CPU-bound)
  --dir PATH    small files under PATH/class_K/, each opened, read and decoded
                inside its `with open(...)` block, as torchvision's pil_loader
                does (a folder of small files: one open per sample)
  --shards PATH the same files packed by `stallscope pack --format wds`, read
                through stallscope.data.ShardDataset
Making the data: --make-zip PATH N, --make-dir PATH N [--file-kib K]; with
--drop-cache the files' page cache is dropped after writing
(posix_fadvise DONTNEED: this job's files only, not the host's cache).

--decode-ms M spends M ms of CPU per item after reading it; --step-ms M
sleeps M ms per step (a device's step time: the CPU free meanwhile);
--first-step-cpu-s S spends S s of CPU in the rank on its first step (a
first batch that compiles), without reading anything.

A series of runs of one command line (history's test) changes the job by
its environment, as a changed config file does: IO_STORIES_WORKERS and
IO_STORIES_DECODE_MS override --workers and --decode-ms, and
IO_STORIES_DROP_CACHE=1 drops the page cache of the --dir files before the
run (so that each run reads them from the device).
"""
import argparse
import os
import random
import sys
import time
import zipfile

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

import stallscope

SIDE = 16


def burn(ms):
    """M ms of CPU in this thread (a decode's work)."""
    if ms <= 0:
        return
    end = time.thread_time() + ms / 1000.0
    x = 0
    while time.thread_time() < end:
        for i in range(200):
            x += i * i
    return x


def payload(rng, size):
    # Words from a small vocabulary: compressible, as image and text data are.
    words = [bytes(rng.choice(b"abcdefghijklmnop") for _ in range(rng.randint(3, 9)))
             for _ in range(512)]
    return b" ".join(rng.choices(words, k=size // 5 + 1))[:size]


def make_zip(path, count, member_kib):
    rng = random.Random(1)
    tmp = path + ".part"
    base = payload(rng, 4 * member_kib * 1024)
    with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_BZIP2, compresslevel=9) as z:
        for i in range(count):
            at = rng.randrange(0, 3 * member_kib * 1024)
            z.writestr("sample_%05d.bin" % i, base[at:at + member_kib * 1024])
    os.replace(tmp, path)


def make_dir(root, count, file_kib):
    rng = random.Random(2)
    body = payload(rng, file_kib * 1024)
    for i in range(count):
        d = os.path.join(root, "class_%03d" % (i % 100))
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "img_%05d.bin" % i), "wb") as f:
            f.write(body[i % 97:] + body[:i % 97])


def drop_cache(root):
    """Writes back and drops the page cache of every file under root."""
    paths = [root] if os.path.isfile(root) else [
        os.path.join(d, f) for d, _, files in os.walk(root) for f in files]
    for p in paths:
        fd = os.open(p, os.O_RDONLY)
        try:
            os.fsync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def tensor_of(data):
    t = torch.frombuffer(bytearray(data[:SIDE * SIDE * 3]), dtype=torch.uint8)
    return t.view(3, SIDE, SIDE).float().div_(255.0)


class ZipMembers(Dataset):
    def __init__(self, path, decode_ms):
        self.path = path
        with zipfile.ZipFile(path) as z:
            self.names = sorted(z.namelist())
        self.zip = None             # opened in each worker, kept open
        self.decode_ms = decode_ms

    def __len__(self):
        return len(self.names)

    def __getitem__(self, i):
        if self.zip is None:
            self.zip = zipfile.ZipFile(self.path)
        data = self.zip.read(self.names[i])       # decompressed on every read
        burn(self.decode_ms)
        return tensor_of(data), i % 10


class SmallFiles(Dataset):
    def __init__(self, root, decode_ms):
        self.items = sorted(os.path.join(root, d, f) for d in os.listdir(root)
                            for f in os.listdir(os.path.join(root, d)))
        self.decode_ms = decode_ms

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        with open(self.items[i], "rb") as f:     # open while decoding, as pil_loader
            data = f.read()
            burn(self.decode_ms)
        return tensor_of(data), i % 10


class Shards(torch.utils.data.IterableDataset):
    """The packed samples, as (tensor, label) like SmallFiles's."""

    def __init__(self, root, decode_ms):
        from stallscope.data import ShardDataset
        self.shards = ShardDataset(root)
        self.decode_ms = decode_ms

    def __iter__(self):
        for i, sample in enumerate(self.shards):
            data = next(v for k, v in sample.items() if not k.startswith("__"))
            burn(self.decode_ms)
            yield tensor_of(data), i % 10


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--zip")
    p.add_argument("--dir")
    p.add_argument("--shards")
    p.add_argument("--make-zip", nargs=2, metavar=("PATH", "N"))
    p.add_argument("--make-dir", nargs=2, metavar=("PATH", "N"))
    p.add_argument("--member-kib", type=int, default=256)
    p.add_argument("--file-kib", type=int, default=2)
    p.add_argument("--drop-cache", action="store_true")
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--decode-ms", type=float, default=0.0)
    p.add_argument("--step-ms", type=float, default=0.0)
    p.add_argument("--shuffle", action="store_true")
    p.add_argument("--first-step-cpu-s", type=float, default=0.0)
    args = p.parse_args()
    if "IO_STORIES_WORKERS" in os.environ:
        args.workers = int(os.environ["IO_STORIES_WORKERS"])
    if "IO_STORIES_DECODE_MS" in os.environ:
        args.decode_ms = float(os.environ["IO_STORIES_DECODE_MS"])
    if os.environ.get("IO_STORIES_DROP_CACHE") == "1" and args.dir:
        drop_cache(args.dir)
    if args.make_zip:
        make_zip(args.make_zip[0], int(args.make_zip[1]), args.member_kib)
    if args.make_dir:
        make_dir(args.make_dir[0], int(args.make_dir[1]), args.file_kib)
    for made in (args.make_zip, args.make_dir):
        if made and args.drop_cache:
            drop_cache(made[0])
    if not (args.zip or args.dir or args.shards):
        return 0

    torch.set_num_threads(1)
    torch.manual_seed(0)
    if args.shards:
        dataset = Shards(args.shards, args.decode_ms)
    else:
        dataset = ZipMembers(args.zip, args.decode_ms) if args.zip else SmallFiles(
            args.dir, args.decode_ms)
    data = DataLoader(dataset, batch_size=args.batch_size,
                      shuffle=args.shuffle and not args.shards,
                      num_workers=args.workers, persistent_workers=args.workers > 0)
    model = nn.Sequential(nn.Flatten(), nn.Linear(3 * SIDE * SIDE, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loss_fn = nn.CrossEntropyLoss()
    for epoch in range(args.epochs):
        stallscope.epoch(epoch)
        t0, n = time.monotonic(), 0
        for x, y in stallscope.loader(data):
            if epoch == 0 and n == 0:
                burn(args.first_step_cpu_s * 1000.0)
            loss = loss_fn(model(x), y)
            if args.step_ms:
                time.sleep(args.step_ms / 1000.0)
            opt.zero_grad()
            loss.backward()
            opt.step()
            n += 1
        print("epoch %d: %d steps in %.1f s" % (epoch, n, time.monotonic() - t0), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""A small image classifier trained on the CPU, for trying stallscope on a real
training job (Debian's python3-torch, /usr/bin/python3; no torchvision).

It reads a folder of small image files (32x32 RGB binary PPM in class_0 ..
class_9, made on first use) through a real torch DataLoader, one file opened
and decoded per sample. --mode picks what the run suffers from:

  healthy      num_workers=2, persistent workers, fast decode
  input-bound  num_workers=0 and a slow pure-Python decode (a 3x3 blur per
               pixel): the step waits for data most of its time
  leak         healthy, but every batch's first activations (4 MiB) are kept
               in a global list, so the process's RSS grows by tens of MB/s

    PYTHONPATH=python /usr/bin/python3 examples/train_cpu.py --mode input-bound
    stallscope run -- /usr/bin/python3 examples/train_cpu.py --mode leak

--ddp trains with DistributedDataParallel (gloo backend, a DistributedSampler)
under the variables torchrun sets (RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR,
MASTER_PORT); --slow-rank R --slow-ms M makes rank R sleep M ms per step
before its backward pass, a straggler on purpose (--slow-loader-rank R
instead makes its loader hand over each batch M ms late; --step-ms M makes every rank
sleep M ms per step: a device's step time, during which the CPU is free):

    stallscope run --procs 2 -- /usr/bin/python3 examples/train_cpu.py --ddp \
        --slow-rank 1 --slow-ms 200

TRAIN_CPU_WORKERS=N in the environment sets the workers when --workers is not
given: the same command line with another loader, as a changed config file or
launcher variable does to a real job.

It reports through stallscope.loader()/stallscope.epoch() when the hook can be
imported and runs without it otherwise.
"""
import argparse
import contextlib
import os
import signal
import shutil
import sys
import tempfile
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

try:
    import stallscope
except ImportError:                      # standalone: no hook
    class stallscope:                    # noqa: N801 - stands in for the module
        loader = staticmethod(lambda x, phase=None: x)
        epoch = staticmethod(lambda n: None)
        ddp = staticmethod(lambda m: m)

        class checkpoint:                # noqa: N801
            def __enter__(self):
                return self

            def __exit__(self, *exc):
                return False

SIDE = 32
CLASSES = 10
KEPT = []                                # --mode leak: never emptied


def make_images(root, count, seed=0):
    """Writes count PPM files; each class has its own tint and stripe period.
    They are written beside root and renamed into place, so a run started at
    the same time never reads half a folder."""
    tmp = f"{root.rstrip('/')}.tmp-{os.getpid()}"
    _write_images(tmp, count, seed)
    try:
        os.rename(tmp, root)
    except OSError:                      # another run made it first
        shutil.rmtree(tmp, ignore_errors=True)


def _write_images(root, count, seed):
    g = torch.Generator().manual_seed(seed)
    palette = torch.randint(0, 160, (CLASSES, 3), generator=g)
    rows = torch.arange(SIDE).view(SIDE, 1, 1)
    for k in range(CLASSES):
        os.makedirs(os.path.join(root, f"class_{k}"), exist_ok=True)
    for i in range(count):
        k = i % CLASSES
        stripes = ((rows // (k + 2)) % 2) * 40
        img = palette[k] + stripes + torch.randint(0, 56, (SIDE, SIDE, 3), generator=g)
        body = bytes(img.clamp(0, 255).flatten().tolist())
        path = os.path.join(root, f"class_{k}", f"img_{i:06d}.ppm")
        with open(path, "wb") as f:
            f.write(b"P6\n%d %d\n255\n" % (SIDE, SIDE) + body)


def read_ppm(path):
    with open(path, "rb") as f:
        magic, size, _maxval, body = f.read().split(b"\n", 3)
    w, h = (int(v) for v in size.split())
    assert magic == b"P6" and len(body) == w * h * 3, path
    return w, h, body


class LateBatches:
    """A loader whose every batch comes `late_s` seconds late (a sleep: the CPU
    stays free, as while waiting on storage)."""

    def __init__(self, loader, late_s):
        self.loader, self.late_s = loader, late_s

    def __len__(self):
        return len(self.loader)

    def __iter__(self):
        for batch in self.loader:
            time.sleep(self.late_s)
            yield batch


def slow_decode(w, h, body):
    """A 3x3 box blur in pure Python, pixel by pixel: a costly decode."""
    out = [0.0] * (w * h * 3)
    for y in range(h):
        for x in range(w):
            for c in range(3):
                acc, n = 0, 0
                for yy in range(max(0, y - 1), min(h, y + 2)):
                    for xx in range(max(0, x - 1), min(w, x + 2)):
                        acc += body[(yy * w + xx) * 3 + c]
                        n += 1
                out[(y * w + x) * 3 + c] = acc / (n * 255.0)
    return torch.tensor(out).view(h, w, 3).permute(2, 0, 1).contiguous()


def fast_decode(w, h, body):
    pixels = torch.frombuffer(bytearray(body), dtype=torch.uint8)
    return pixels.view(h, w, 3).permute(2, 0, 1).float().div_(255.0)


class ImageFiles(Dataset):
    """class_K/*.ppm, opened and decoded per item."""

    def __init__(self, root, slow):
        self.items = sorted(
            (os.path.join(root, d, f), int(d.split("_")[1]))
            for d in os.listdir(root) if d.startswith("class_")
            for f in os.listdir(os.path.join(root, d)) if f.endswith(".ppm"))
        self.decode = slow_decode if slow else fast_decode

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        path, label = self.items[i]
        return self.decode(*read_ppm(path)), label


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU())
        self.rest = nn.Sequential(
            nn.MaxPool2d(2), nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2))
        self.head = nn.Linear(32 * (SIDE // 4) ** 2, CLASSES)

    def forward(self, x):
        a = self.conv1(x)                # 16x32x32 floats a sample: 4 MiB a batch of 64
        return self.head(self.rest(a).flatten(1)), a


def fail(how, step):
    """Stops this rank at `step` as `how` says (see --fail-how)."""
    print(f"rank stops at step {step}: {how}", flush=True)
    if how == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    elif how == "raise":
        raise RuntimeError(f"injected failure at step {step}")
    elif how == "sleep":
        while True:
            time.sleep(3600)
    elif how == "oom":
        hog = []
        while True:
            hog.append(bytearray(64 << 20))
            for i in range(0, len(hog[-1]), 4096):
                hog[-1][i] = 1
    elif how == "worker-kill":
        with open(f"/proc/{os.getpid()}/task/{os.getpid()}/children") as f:
            children = [int(c) for c in f.read().split()]
        os.kill(children[0], signal.SIGKILL)


def evaluate(model, rank, seconds, ddp):
    """Rank 0 runs forward passes for `seconds`; the others wait in a barrier."""
    if rank == 0:
        inner = model.module if hasattr(model, "module") else model
        t_end = time.monotonic() + seconds
        with torch.no_grad():
            while time.monotonic() < t_end:
                inner(torch.rand(16, 3, SIDE, SIDE))
    if ddp:
        import torch.distributed as dist
        dist.barrier()


def save_checkpoint(model, args, rank):
    """The model's state and --checkpoint-mib MiB of padding, written and
    fsync'd in --checkpoint-dir, inside stallscope.checkpoint() unless
    --checkpoint-unmarked (then `report` finds it by its writes)."""
    folder = args.checkpoint_dir or tempfile.gettempdir()
    path = os.path.join(folder, "stallscope-ckpt-%d-%d.pt" % (os.getpid(), rank))
    with (contextlib.nullcontext() if args.checkpoint_unmarked else stallscope.checkpoint()):
        with open(path, "wb") as f:
            torch.save({"model": model.state_dict(),
                        "pad": torch.ones(args.checkpoint_mib * 2**18, dtype=torch.float32)}, f)
            f.flush()
            os.fsync(f.fileno())
    os.unlink(path)


def rss_mib():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--mode", choices=["healthy", "input-bound", "leak"], default="healthy")
    p.add_argument("--data", default=os.path.join(tempfile.gettempdir(), "stallscope-train-cpu"))
    p.add_argument("--make-images", type=int, default=2000, metavar="N",
                   help="images to generate when --data does not exist (default 2000)")
    p.add_argument("--epochs", type=int, help="default: 6, or 2 when input-bound")
    p.add_argument("--steps-per-epoch", type=int,
                   help="cap; default: the whole dataset, or 20 steps when input-bound")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    p.add_argument("--workers", type=int, help="DataLoader workers (default 2, 0 when input-bound)")
    p.add_argument("--ddp", action="store_true",
                   help="DistributedDataParallel over gloo; ranks from RANK/WORLD_SIZE/MASTER_*")
    p.add_argument("--slow-rank", type=int, default=-1, metavar="R",
                   help="with --ddp: this rank sleeps --slow-ms per step before backward")
    p.add_argument("--slow-ms", type=float, default=0.0, metavar="M")
    p.add_argument("--slow-loader-rank", type=int, default=-1, metavar="R",
                   help="with --ddp: this rank's data loader hands over each batch --slow-ms "
                        "late (a slow input pipeline, where --slow-rank is a slow device)")
    p.add_argument("--step-ms", type=float, default=0.0, metavar="M",
                   help="every rank sleeps M ms per step before backward (a device's step "
                        "time, the CPU free meanwhile)")
    p.add_argument("--fail-rank", type=int, default=-1, metavar="R",
                   help="rank R stops at step --fail-step, as --fail-how says")
    p.add_argument("--fail-step", type=int, default=10, metavar="N")
    p.add_argument("--fail-how", choices=["kill", "raise", "sleep", "oom", "worker-kill"],
                   default="kill",
                   help="kill: SIGKILL itself; raise: an exception; sleep: asleep for good; "
                        "oom: allocate until the OOM killer ends it; worker-kill: SIGKILL one "
                        "of its DataLoader workers")
    p.add_argument("--eval-step", type=int, default=-1, metavar="N",
                   help="after step N rank 0 evaluates for --eval-s seconds (forward passes) "
                        "while the other ranks wait in a barrier")
    p.add_argument("--eval-s", type=float, default=0.0, metavar="S")
    p.add_argument("--eval-batches", type=int, default=0, metavar="N",
                   help="after each epoch, evaluate N batches in a loop wrapped as "
                        "stallscope.loader(dl, phase=\"eval\")")
    p.add_argument("--checkpoint-mib", type=int, default=0, metavar="N",
                   help="after each epoch, save the model and N MiB more to a file (fsync'd) "
                        "inside stallscope.checkpoint()")
    p.add_argument("--checkpoint-every", type=int, default=0, metavar="K",
                   help="save the checkpoint every K steps inside the loop instead")
    p.add_argument("--checkpoint-unmarked", action="store_true",
                   help="save it without stallscope.checkpoint()")
    p.add_argument("--checkpoint-dir", default="", metavar="DIR",
                   help="where to save it (default: the temporary folder)")
    args = p.parse_args()
    slow = args.mode == "input-bound"
    epochs = args.epochs or (2 if slow else 6)
    cap = args.steps_per_epoch if args.steps_per_epoch is not None else (20 if slow else 0)

    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    if not os.path.isdir(args.data):
        t = time.monotonic()
        make_images(args.data, args.make_images)
        print(f"made {args.make_images} images in {args.data} in {time.monotonic() - t:.1f} s")
    dataset = ImageFiles(args.data, slow)
    if len(dataset) == 0:
        sys.exit(f"{args.data}: no class_*/*.ppm files")

    rank = 0
    if args.ddp:
        import torch.distributed as dist
        from torch.nn.parallel import DistributedDataParallel
        from torch.utils.data.distributed import DistributedSampler
        dist.init_process_group("gloo")  # env:// : RANK, WORLD_SIZE, MASTER_ADDR/PORT
        rank = dist.get_rank()
    workers = args.workers
    if workers is None and os.environ.get("TRAIN_CPU_WORKERS", "").isdigit():
        workers = int(os.environ["TRAIN_CPU_WORKERS"])
    if workers is None:
        workers = 0 if slow else 2
    sampler = DistributedSampler(dataset, shuffle=True, seed=0) if args.ddp else None
    data = DataLoader(dataset, batch_size=args.batch_size,
                      shuffle=sampler is None, sampler=sampler, num_workers=workers,
                      pin_memory=False, persistent_workers=workers > 0)
    model = Net()
    if args.ddp:
        model = stallscope.ddp(DistributedDataParallel(model))
    if args.ddp and rank == args.slow_loader_rank:
        data = LateBatches(data, args.slow_ms / 1000.0)
    straggle_s = args.slow_ms / 1000.0 if args.ddp and rank == args.slow_rank else 0.0
    straggle_s += args.step_ms / 1000.0
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()

    steps, start = 0, time.monotonic()
    for epoch in range(epochs):
        stallscope.epoch(epoch)
        if sampler is not None:
            sampler.set_epoch(epoch)
        n, seen, correct, t0 = 0, 0, 0, time.monotonic()
        for x, y in stallscope.loader(data):
            logits, act = model(x)
            loss = loss_fn(logits, y)
            if straggle_s:
                time.sleep(straggle_s)   # a slower device, as the other ranks see it
            opt.zero_grad()
            loss.backward()
            opt.step()
            if args.mode == "leak":
                KEPT.append(act.detach())
            seen += len(y)
            correct += (logits.argmax(1) == y).sum().item()
            n += 1
            if rank == args.fail_rank and steps + n == args.fail_step:
                fail(args.fail_how, args.fail_step)
            if steps + n == args.eval_step:
                evaluate(model, rank, args.eval_s, args.ddp)
            if args.checkpoint_mib and args.checkpoint_every and (steps + n) % args.checkpoint_every == 0:
                save_checkpoint(model, args, rank)
            if n == cap:
                break
        steps += n
        dt = time.monotonic() - t0
        if args.eval_batches:
            eval_data = DataLoader(dataset, batch_size=args.batch_size, num_workers=0)
            with torch.no_grad():
                for k, (x, y) in enumerate(stallscope.loader(eval_data, phase="eval")):
                    model(x)
                    if k + 1 == args.eval_batches:
                        break
        if args.checkpoint_mib and not args.checkpoint_every:
            save_checkpoint(model, args, rank)
        print(f"{'rank %d ' % rank if args.ddp else ''}epoch {epoch}: {n} steps in {dt:.1f} s ({n / dt:.1f} steps/s), "
              f"loss {loss.item():.3f}, accuracy {correct / max(seen, 1):.2f}, "
              f"rss {rss_mib():.0f} MiB", flush=True)
    total = time.monotonic() - start
    print(f"mode {args.mode}: {steps} steps in {total:.1f} s, {steps / total:.1f} steps/s")
    if args.ddp:
        dist.barrier()                   # every rank done before the group goes
        dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())

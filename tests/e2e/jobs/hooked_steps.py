"""A hooked loop for tests/e2e/run_file_failures.py: it reports its steps
through stallscope.loader and marks an epoch every --steps-per-epoch steps,
and writes to --log the CLOCK_MONOTONIC time of each epoch mark once it was
sent (`epoch N T`), so that the test knows what the run file must hold at a
given moment. It runs for --seconds, or until the file --stop exists and
--after seconds more (60 s at most), then writes `done DROPPED`, the number
of the hook's sends that failed (counted by the hook, never raised), and
exits with --exit. Its own stderr goes to --err, so that anything the hook
printed once `run` was gone is seen.

--torch: each step is a small matrix product in PyTorch (a real PyTorch
job); without it the job needs nothing beyond the standard library.
"""
import argparse
import os
import sys
import time

import stallscope

parser = argparse.ArgumentParser()
parser.add_argument("--log", required=True)
parser.add_argument("--err", required=True)
parser.add_argument("--seconds", type=float, default=60)
parser.add_argument("--stop", default="")
parser.add_argument("--after", type=float, default=0.5)
parser.add_argument("--step-ms", type=float, default=10)
parser.add_argument("--steps-per-epoch", type=int, default=5)
parser.add_argument("--exit", type=int, default=0)
parser.add_argument("--torch", action="store_true")
args = parser.parse_args()

err = os.open(args.err, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
os.dup2(err, 2)
log = open(args.log, "a", buffering=1)

step = None
if args.torch:
    import torch
    a = torch.randn(64, 64)

    def step():
        return a @ a

end = time.monotonic() + args.seconds
epoch = 0
log.write("start %.6f\n" % time.monotonic())
while time.monotonic() < end:
    if args.stop and os.path.exists(args.stop):
        end, args.stop = min(end, time.monotonic() + args.after), ""
    stallscope.epoch(epoch)  # sent at once, with every step before it
    log.write("epoch %d %.6f\n" % (epoch, time.monotonic()))
    for _ in stallscope.loader(range(args.steps_per_epoch)):
        if step is not None:
            step()
        time.sleep(args.step_ms / 1000)
    epoch += 1
state = getattr(stallscope, "_state", None)
log.write("done %d\n" % (getattr(state, "dropped", -1) if state else -1))
log.close()
sys.exit(args.exit)

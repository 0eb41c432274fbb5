"""A real PyTorch training loop (CPU) for tests/e2e/time_breakdown.py whose
loop waits for a "GPU" at every step: this machine has none, so before the
hook sees torch, torch.cuda says it is available and torch.cuda.synchronize
sleeps --sync-ms, as a host blocked on unfinished kernels would. The loop
calls it once per step, and every --item-every steps reads a CPU loss with
.item() (no sync: not to be counted). It prints `steps N` at the end.
"""
import argparse
import time

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=40)
parser.add_argument("--sync-ms", type=float, default=30)
parser.add_argument("--item-every", type=int, default=1)
args = parser.parse_args()


def synchronize(device=None):
    time.sleep(args.sync_ms / 1000.0)


torch.cuda.is_available = lambda: True
torch.cuda.synchronize = synchronize

import stallscope  # noqa: E402  (after the stand-in, as a job with a GPU would see it)

torch.manual_seed(0)
data = TensorDataset(torch.randn(args.steps * 16, 64), torch.randint(0, 4, (args.steps * 16,)))
loader = DataLoader(data, batch_size=16, num_workers=0)
model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 4))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
loss_fn = nn.CrossEntropyLoss()
steps = 0
for i, (x, y) in enumerate(stallscope.loader(loader)):
    loss = loss_fn(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    torch.cuda.synchronize()
    if i % args.item_every == 0:
        loss.item()
    steps += 1
print("steps", steps, flush=True)

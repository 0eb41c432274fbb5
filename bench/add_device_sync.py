#!/usr/bin/python3
"""Adds a device sync to each step of the traces bench/gen_trace.py --ranks
writes, in place, so that the GPU's end is on the host's critical path.

gen_trace.py's ranks end each step with an `aten::item` that lasts until
their GPU is done, but with no sync call under it, so no trace reader can
tell that the host waited for the GPU: a critical path (HTA's, stallscope's)
stays on the CPU and never sees a kernel or an NCCL wait. A real `.item()`
or `torch.cuda.synchronize()` leaves what this adds under each `aten::item`:
a `cudaDeviceSynchronize` runtime call and its `Context Sync` row (cat
cuda_sync, stream -1, the call's correlation), as Kineto writes them (the
shape of the rows in HTA's critical_path test traces). The `aten::item` is
made 5 µs longer so that the call ends 3 µs after the GPU's last kernel
(a sync returns after what it waits for); nothing else moves.

  bench/add_device_sync.py DIR [DIR ...]   (every *.json and *.json.gz in each)

Standard library only.
"""
import gzip
import json
import os
import sys

LONGER_US = 5  # the item's extra length: the sync ends 3 µs after the GPU


def add_device_sync(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        trace = json.load(f)
    events = trace["traceEvents"]
    corr = 1 + max((e.get("args", {}).get("correlation", 0) for e in events), default=0)
    out = []
    for e in events:
        out.append(e)
        if e.get("name") != "aten::item" or e.get("ph") != "X":
            continue
        e["dur"] += LONGER_US
        call = {"ph": "X", "cat": "cuda_runtime", "name": "cudaDeviceSynchronize",
                "pid": e["pid"], "tid": e["tid"], "ts": e["ts"] + 2, "dur": e["dur"] - 4,
                "args": {"External id": corr, "cbid": 165, "correlation": corr}}
        sync = {"ph": "X", "cat": "cuda_sync", "name": "Context Sync", "pid": 0, "tid": -1,
                "ts": e["ts"] + 3, "dur": e["dur"] - 6,
                "args": {"External id": corr, "cuda_sync_kind": "Context Sync", "stream": -1,
                         "correlation": corr, "device": 0, "context": 1}}
        out += [call, sync]
        corr += 1
    trace["traceEvents"] = out
    with opener(path, "wt") as f:
        json.dump(trace, f, separators=(", ", ": "))


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    for folder in sys.argv[1:]:
        for name in sorted(os.listdir(folder)):
            if name.endswith((".json", ".json.gz")):
                add_device_sync(os.path.join(folder, name))


if __name__ == "__main__":
    main()

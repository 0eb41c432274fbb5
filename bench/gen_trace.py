#!/usr/bin/python3
"""Writes a synthetic PyTorch profiler (Kineto) trace of about --bytes of
JSON text, for `stallscope trace`'s memory and speed at sizes no real test
trace has (the largest in ../shared/traces is 3 MB gzipped).

Each ProfilerStep holds what a DDP training step's trace holds: the data
loader's __next__, CPU ops, cudaLaunchKernel calls each with its kernel
(correlated), a pageable host-to-device copy, an .item() with its
cudaStreamSynchronize, NCCL all-reduce kernels on their own stream that
overlap part of the backward kernels, flow events and metadata. Written as
it is generated (bounded memory), optionally gzipped.

  bench/gen_trace.py OUT.json [--bytes 2e9] [--gzip] [--rank 0 --world 8]
                    [--late-us 0] [--nccl-kernel NAME]
                    [--slow-kernel TEXT --slow-factor 2]

--late-us holds each step's GPU work back that long (a rank that reaches its
collectives late, as a straggler does); --nccl-kernel names the all-reduce
kernel (HTA's straggler analysis only sees names starting "ncclKernel").
--slow-kernel makes every kernel whose name holds TEXT --slow-factor times
longer (the test side of a trace diff); the random choices stay the same.

With --ranks N, OUT is a directory and one file a rank is written there
(rank0.json ...), the ranks generated together so that their collectives
line up as NCCL's do: each step's GPU work is cut by --collectives-per-step
all-reduces on a stream of their own; each starts when its rank's compute
before it is done (DDP waits for the gradients), all of them end together
--transfer-us after the last rank's start, and the compute stream waits
for that end. Every rank runs the same work, so nothing is late unless
--late RANK:STEP:COLLECTIVE:US:CAUSE makes it: CAUSE is `kernel` (one more
compute kernel that long before that collective), `cpu` (a CPU op that long
at the step's start, before any launch: collective 0 only) or `loader` (the
data loader's __next__ that much longer: collective 0 only). --offset
RANK:US adds US to every time in that rank's file (an unsynchronised
clock). The kernels carry PyTorch's collective args (process group,
message size) unless --no-pg-args; --comm-kernel names them (another
family's all-reduce). --bytes is then per rank.

Prints the events written and the uncompressed size. Standard library only.
"""

import argparse
import gzip
import json
import random
import sys


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out")
    p.add_argument("--bytes", type=float, default=2e9, help="JSON text to write (about)")
    p.add_argument("--gzip", action="store_true", help="write OUT gzipped")
    p.add_argument("--rank", type=int, default=0)
    p.add_argument("--world", type=int, default=8)
    p.add_argument("--kernels-per-step", type=int, default=400)
    p.add_argument("--late-us", type=float, default=0, help="hold each step's GPU work back")
    p.add_argument("--nccl-kernel", default="ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*)")
    p.add_argument("--slow-kernel", default="", help="kernels whose name holds this run slower")
    p.add_argument("--slow-factor", type=float, default=2.0)
    p.add_argument("--ranks", type=int, default=0, help="OUT is a directory: a file a rank")
    p.add_argument("--collectives-per-step", type=int, default=4)
    p.add_argument("--transfer-us", type=float, default=400)
    p.add_argument("--message-bytes", type=int, default=16 << 20)
    p.add_argument("--jitter-us", type=float, default=2, help="per-rank start and end noise")
    p.add_argument("--late", action="append", default=[], help="RANK:STEP:COLLECTIVE:US:CAUSE")
    p.add_argument("--offset", action="append", default=[], help="RANK:US clock offset")
    p.add_argument("--no-pg-args", action="store_true", help="kernels without collective args")
    p.add_argument("--comm-kernel", default=None,
                   help="with --ranks: the all-reduce kernel's name (default an NCCL one)")
    a = p.parse_args()
    if a.ranks > 0:
        return write_ranks(a)
    rnd = random.Random(a.rank)
    f = gzip.open(a.out, "wt", compresslevel=1) if a.gzip else open(a.out, "w")
    written = 0
    events = 0

    def put(text):
        nonlocal written
        f.write(text)
        written += len(text)

    put('{"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3", '
        '"totalGlobalMem": 85045477376, "computeMajor": 9}], "distributedInfo": '
        '{"backend": "nccl", "rank": %d, "world_size": %d}, "traceEvents": [\n' % (a.rank, a.world))
    ts = 1_700_000_000_000_000
    corr = 1
    step = 0
    first = True
    kernels = ["void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>>",
               "sm90_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1",
               "void cutlass::Kernel2<cutlass_80_wmma_tensorop_f16_s161616gemm_f16_32x32_128x2_tn>",
               "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float>>"]
    while written < a.bytes:
        batch = []
        step_start = ts
        gpu = ts + 200 + a.late_us
        batch.append({"ph": "X", "cat": "cpu_op", "name":
                      "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__",
                      "pid": 1, "tid": 1, "ts": ts, "dur": 900, "args": {"External id": corr}})
        ts += 1000
        c = corr
        corr += 1
        batch.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaMemcpyAsync", "pid": 1,
                      "tid": 1, "ts": ts, "dur": 12, "args": {"correlation": c}})
        gpu = max(gpu, ts + 20)
        batch.append({"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pageable -> Device)",
                      "pid": 0, "tid": 7, "ts": gpu, "dur": 150, "args": {
                          "device": 0, "stream": 7, "correlation": c, "bytes": 4194304,
                          "memory bandwidth (GB/s)": 27.9}})
        gpu += 150
        for k in range(a.kernels_per_step):
            c = corr
            corr += 1
            name = kernels[k % len(kernels)]
            batch.append({"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1,
                          "ts": ts, "dur": 9, "args": {"External id": c, "Input Dims": [[512, 512],
                                                                                        [512, 512]]}})
            batch.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1,
                          "tid": 1, "ts": ts + 2, "dur": 5, "args": {"correlation": c,
                                                                     "cbid": 211}})
            batch.append({"ph": "s", "id": c, "pid": 1, "tid": 1, "ts": ts + 2,
                          "cat": "ac2g", "name": "ac2g"})
            dur = rnd.choice((3, 8, 40, 120))
            if a.slow_kernel and a.slow_kernel in name:
                dur = int(round(dur * a.slow_factor))
            gpu = max(gpu, ts + 10)
            batch.append({"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": 7,
                          "ts": gpu, "dur": dur, "args": {
                              "queued": 0, "device": 0, "context": 1, "stream": 7,
                              "correlation": c, "registers per thread": 128,
                              "grid": [132, 1, 1], "block": [256, 1, 1]}})
            if k % 50 == 25:
                c = corr
                corr += 1
                batch.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel",
                              "pid": 1, "tid": 1, "ts": ts + 4, "dur": 4,
                              "args": {"correlation": c}})
                batch.append({"ph": "X", "cat": "kernel",
                              "name": a.nccl_kernel,
                              "pid": 0, "tid": 13, "ts": gpu, "dur": 2000,
                              "args": {"device": 0, "stream": 13, "correlation": c}})
            gpu += dur
            ts += 12
        batch.append({"ph": "X", "cat": "cpu_op", "name": "aten::item", "pid": 1, "tid": 1,
                      "ts": ts, "dur": max(10, gpu - ts), "args": {}})
        c = corr
        corr += 1
        batch.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaStreamSynchronize",
                      "pid": 1, "tid": 1, "ts": ts + 2, "dur": max(5, gpu - ts - 4),
                      "args": {"correlation": c}})
        ts = max(ts, gpu) + 50
        batch.insert(0, {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#%d" % step,
                         "pid": 1, "tid": 1, "ts": step_start, "dur": ts - step_start,
                         "args": {"External id": 0}})
        step += 1
        text = ",\n".join(json.dumps(e, separators=(", ", ": ")) for e in batch)
        put(text if first else ",\n" + text)
        first = False
        events += len(batch)
    put('\n], "traceName": "%s"}\n' % a.out)
    f.close()
    print("%s: %d events, %d steps, %.2f GB of JSON" % (a.out, events, step, written / 1e9))


KERNELS = ["void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>>",
           "sm90_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1",
           "void cutlass::Kernel2<cutlass_80_wmma_tensorop_f16_s161616gemm_f16_32x32_128x2_tn>",
           "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float>>"]
LONG_KERNEL = ("void at::native::(anonymous namespace)::embedding_backward_feature_kernel"
               "<float, float, long>(long const*, float const*, float*, int, long, int)")
LONG_CPU_OP = "aten::sort"
LOADER = "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__"
ALLREDUCE = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*)"


def parse_late(specs, ranks):
    """{(rank, step, collective): (us, cause)} from RANK:STEP:COLLECTIVE:US:CAUSE."""
    out = {}
    for spec in specs:
        parts = spec.split(":")
        if len(parts) != 5 or parts[4] not in ("kernel", "cpu", "loader"):
            sys.exit("--late %s: want RANK:STEP:COLLECTIVE:US:CAUSE, CAUSE kernel, cpu or loader"
                     % spec)
        r, st, c, us = int(parts[0]), int(parts[1]), int(parts[2]), float(parts[3])
        if not 0 <= r < ranks or (parts[4] != "kernel" and c != 0):
            sys.exit("--late %s: no such rank, or a cpu/loader cause not at collective 0" % spec)
        out[(r, st, c)] = (us, parts[4])
    return out


def write_ranks(a):
    """The --ranks mode: N files, collectives aligned across them."""
    import os
    os.makedirs(a.out, exist_ok=True)
    n = a.ranks
    late = parse_late(a.late, n)
    offset = [0.0] * n
    for spec in a.offset:
        r, us = spec.split(":")
        offset[int(r)] = float(us)
    files = []
    for r in range(n):
        path = os.path.join(a.out, "rank%d.json%s" % (r, ".gz" if a.gzip else ""))
        f = gzip.open(path, "wt", compresslevel=1) if a.gzip else open(path, "w")
        f.write('{"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB '
                'HBM3", "totalGlobalMem": 85045477376, "computeMajor": 9}], "distributedInfo": '
                '{"backend": "nccl", "rank": %d, "world_size": %d}, "traceEvents": [\n' % (r, n))
        files.append(f)
    work = random.Random(1)  # the same work on every rank
    noise = [random.Random(100 + r) for r in range(n)]
    written = [0] * n
    first = [True] * n
    group = "[" + ", ".join(str(r) for r in range(n)) + "]"
    per_segment = max(1, a.kernels_per_step // max(1, a.collectives_per_step))
    host = [1_700_000_000_000_000.0] * n
    corr = [1] * n
    step = 0
    events = 0
    while written[0] < a.bytes:
        batches = [[] for _ in range(n)]
        step_start = list(host)
        gpu = [0.0] * n
        durations = [[work.choice((3, 8, 40, 120)) for _ in range(per_segment)]
                     for _ in range(a.collectives_per_step)]

        def put(r, e):
            e["ts"] = e["ts"] + offset[r]
            batches[r].append(e)

        def launch(r, name, dur, stream=7, args=None):
            c = corr[r]
            corr[r] += 1
            put(r, {"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1,
                    "ts": host[r], "dur": 9, "args": {"External id": c}})
            put(r, {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1,
                    "tid": 1, "ts": host[r] + 2, "dur": 5, "args": {"correlation": c}})
            start = max(gpu[r], host[r] + 10)
            kargs = {"device": 0, "stream": stream, "correlation": c}
            kargs.update(args or {})
            host[r] += 12
            return start, c, kargs

        for r in range(n):
            extra = late.get((r, step, 0))
            loader = 900 + (extra[0] if extra and extra[1] == "loader" else 0)
            put(r, {"ph": "X", "cat": "cpu_op", "name": LOADER, "pid": 1, "tid": 1,
                    "ts": host[r], "dur": loader, "args": {}})
            host[r] += loader + 20
            if extra and extra[1] == "cpu":
                put(r, {"ph": "X", "cat": "cpu_op", "name": LONG_CPU_OP, "pid": 1, "tid": 1,
                        "ts": host[r], "dur": extra[0], "args": {}})
                host[r] += extra[0] + 5
            gpu[r] = host[r]
        for c in range(a.collectives_per_step):
            starts = [0.0] * n
            comm = [None] * n
            for r in range(n):
                names = [(KERNELS[k % len(KERNELS)], d) for k, d in enumerate(durations[c])]
                extra = late.get((r, step, c))
                if extra and extra[1] == "kernel":
                    names.insert(len(names) // 2, (LONG_KERNEL, extra[0]))
                for name, dur in names:
                    start, cid, kargs = launch(r, name, dur)
                    put(r, {"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": 7,
                            "ts": start + noise[r].uniform(0, a.jitter_us), "dur": dur,
                            "args": kargs})
                    gpu[r] = start + dur
                args = {} if a.no_pg_args else {
                    "Collective name": "allreduce", "In msg nelems": a.message_bytes // 4,
                    "Out msg nelems": a.message_bytes // 4, "Group size": n, "dtype": "Float",
                    "In split size": "[]", "Out split size": "[]", "Process Group Name": "0",
                    "Process Group Description": "default_pg", "Process Group Ranks": group}
                start, cid, kargs = launch(r, a.comm_kernel or ALLREDUCE, 0, stream=13, args=args)
                starts[r] = start + noise[r].uniform(0, a.jitter_us)
                comm[r] = kargs
            arrival = max(starts)
            for r in range(n):
                end = arrival + a.transfer_us + noise[r].uniform(0, a.jitter_us / 2)
                put(r, {"ph": "X", "cat": "kernel", "name": a.comm_kernel or ALLREDUCE, "pid": 0,
                        "tid": 13,
                        "ts": starts[r], "dur": end - starts[r], "args": comm[r]})
                gpu[r] = end
        for r in range(n):
            put(r, {"ph": "X", "cat": "cpu_op", "name": "aten::item", "pid": 1, "tid": 1,
                    "ts": host[r], "dur": max(10, gpu[r] - host[r]), "args": {}})
            host[r] = max(host[r], gpu[r]) + 50
            batches[r].insert(0, {"ph": "X", "cat": "user_annotation",
                                  "name": "ProfilerStep#%d" % step, "pid": 1, "tid": 1,
                                  "ts": step_start[r] + offset[r],
                                  "dur": host[r] - step_start[r], "args": {}})
            text = ",\n".join(json.dumps(e, separators=(", ", ": ")) for e in batches[r])
            files[r].write(text if first[r] else ",\n" + text)
            written[r] += len(text) + 2
            first[r] = False
            events += len(batches[r])
        # the next step starts together (the ranks' .item() ends within the jitter)
        common = max(host)
        host = [common] * n
        step += 1
    for r in range(n):
        files[r].write('\n], "traceName": "rank%d"}\n' % r)
        files[r].close()
    print("%s: %d ranks, %d events, %d steps, %.1f MB of JSON a rank"
          % (a.out, n, events, step, written[0] / 1e6))


if __name__ == "__main__":
    sys.exit(main())

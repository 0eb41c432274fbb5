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
    a = p.parse_args()
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


if __name__ == "__main__":
    sys.exit(main())

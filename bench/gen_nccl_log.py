#!/usr/bin/env python3
"""Writes a synthetic NCCL_DEBUG=INFO log of SIZE bytes to PATH for
bench/nccl_log_vs_grep.sh: HOSTS hosts x 8 ranks, one process per GPU, each
communicator init printing what NCCL 2.18 prints (bootstrap, NET/IB, rings,
trees, channels, Init START/COMPLETE), the training script's own lines in
between (about a third of the lines carry no "NCCL"), a few WARNs and
TUNING lines. Lines of all ranks are interleaved. Distinct 4 MiB blocks are
made once and written in turn, so a 1 GB file takes seconds.

With --prefixed, every line carries what a launcher and a log system put
in front of it, as real jobs' logs do: a timestamp and Open MPI's
--tag-output ("2024-03-04 05:06:07.123456 [1,R]<stdout>:"), the tag naming
the rank whose line it is (the training lines' tag, a random rank's).

usage: gen_nccl_log.py PATH SIZE_BYTES [HOSTS] [--prefixed]
"""
import random
import sys


def block(rng, hosts, comm_index):
    ranks = []
    for h in range(hosts):
        for d in range(8):
            ranks.append(("node%03d" % h, 4000 + h * 16 + d, d, h * 8 + d))
    nranks = len(ranks)
    lines = []
    step = 0
    for r, (host, pid, dev, rank) in enumerate(ranks):
        p = "%s:%d:%d [%d] NCCL INFO " % (host, pid, pid + 60 + comm_index % 7, dev)
        lines += [
            p + "cudaDriverVersion 12020",
            p + "Bootstrap : Using ens1f0np0:10.0.%d.%d<0>" % (rank // 8, 11 + rank % 8),
            p + "NET/Plugin : No plugin found, using internal implementation",
            p + "NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB [RO]; OOB ens1f0np0:10.0.%d.11<0>" % (rank // 8),
            p + "Using network IB",
            p + "ncclCommInitRank comm 0x55d4c3a%05x rank %d nranks %d cudaDev %d nvmlDev %d busId %x000 commId 0x8c6c2f7d0e%06x - Init START"
            % (comm_index, rank, nranks, dev, dev, 18 + dev * 16, comm_index),
            p + "Trees [0] %d/-1/-1->%d->%d [1] %d/-1/-1->%d->%d" % ((rank + 1) % nranks, rank, rank - 1, (rank + 1) % nranks, rank, rank - 1),
        ]
        if rank == 0:
            for c in range(4):
                lines.append(p + "Channel %02d/04 : " % c + "".join(" %3d" % i for i in range(min(nranks, 20))))
        for c in range(8):
            peer = (rank + 1) % nranks
            if peer // 8 == rank // 8:
                lines.append(p + "Channel %02d/0 : %d[%d] -> %d[%d] via P2P/IPC/read" % (c, rank, dev, peer, peer % 8))
            else:
                lines.append(p + "Channel %02d/0 : %d[%d] -> %d[%d] [send] via NET/IB/%d/GDRDMA" % (c, rank, dev, peer, peer % 8, c % 2))
        lines += [
            p + "Connected all rings",
            p + "Connected all trees",
            p + "threadThresholds 8/8/64 | 512/8/64 | 512 | 512",
            p + "8 coll channels, 0 nvls channels, 8 p2p channels, 2 p2p channels per peer",
            p + "ncclCommInitRank comm 0x55d4c3a%05x rank %d nranks %d cudaDev %d nvmlDev %d busId %x000 commId 0x8c6c2f7d0e%06x - Init COMPLETE"
            % (comm_index, rank, nranks, dev, dev, 18 + dev * 16, comm_index),
        ]
        if rank == 0:
            lines.append(p + "AllReduce: 33554432 Bytes -> Algo RING proto SIMPLE channel{Lo..Hi}={0..7}")
    for _ in range(len(lines) // 2):
        step += 1
        lines.append("[rank%d] epoch %d step %d loss %.4f lr %.5f data %.3fs step %.3fs tokens/s %d"
                     % (rng.randrange(nranks), comm_index % 90, step, rng.uniform(1, 4), 3e-4,
                        rng.uniform(0, 0.05), rng.uniform(0.2, 0.4), rng.randrange(40000, 60000)))
    if comm_index % 5 == 0:
        host, pid, dev, rank = ranks[rng.randrange(nranks)]
        lines.append("")
        lines.append("%s:%d:%d [%d] misc/socket.cc:49 NCCL WARN socketProgress: Connection closed by remote peer node%03d<%d>"
                     % (host, pid, pid + 61, dev, rng.randrange(hosts), rng.randrange(30000, 60000)))
    # The ranks share one stdout: their lines arrive interleaved.
    rng.shuffle(lines)
    out = lines
    if PREFIXED:
        out = []
        for i, line in enumerate(lines):
            first = line.split(" ", 1)[0]
            rank = (int(first.split(":")[1]) - 4000) if first.count(":") == 2 else rng.randrange(nranks)
            out.append("2024-03-04 05:%02d:%02d.%06d [1,%d]<stdout>:%s"
                       % (comm_index % 60, i % 60, (i * 7919) % 1000000, rank, line))
    return "\n".join(out) + "\n"


PREFIXED = False


def main():
    global PREFIXED
    args = [a for a in sys.argv[1:] if a != "--prefixed"]
    PREFIXED = len(args) != len(sys.argv) - 1
    path, size = args[0], int(float(args[1]))
    hosts = int(args[2]) if len(args) > 2 else 8
    rng = random.Random(42)
    blocks = []
    comm = 0
    while len(blocks) < 16:
        text = []
        n = 0
        while n < 4 << 20:
            b = block(rng, hosts, comm)
            comm += 1
            text.append(b)
            n += len(b)
        blocks.append("".join(text).encode())
    written = 0
    with open(path, "wb") as f:
        i = 0
        while written < size:
            b = blocks[i % len(blocks)]
            if written + len(b) > size:
                b = b[: size - written]
                b = b[: b.rfind(b"\n") + 1] or b
            f.write(b)
            written += len(b)
            i += 1
            if len(b) == 0:
                break


if __name__ == "__main__":
    main()

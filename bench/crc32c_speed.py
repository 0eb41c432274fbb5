"""The TFRecord reader's CRC32C check, per core, from a warm cache: the
native library (python/native/crc32c.c) against the pure-Python code, and
stallscope.data.iter_tfrecord over a shard of 100 KB records with and
without the check, against a plain read of the same bytes (the ceiling);
and the native library's table path alone, which CPUs without SSE 4.2 take.

    /usr/bin/python3 bench/crc32c_speed.py --library build/libstallscope_crc32c.so \\
        [--mib 256] [--rounds 5]

Each figure is the best of --rounds (one thread, so per core); the goal
is verification at 2 GB/s or more per core.
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON_DIR = os.path.join(os.path.dirname(HERE), "python")
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python", "tests"))

CHILD = r"""
import os, sys, time
sys.path.insert(0, sys.argv[1])
import stallscope.crc32c as c
from stallscope import data
buf = os.urandom(int(sys.argv[2]) << 20)
shard = sys.argv[3]
rounds = int(sys.argv[4])
def best(fn):
    t = min(timed(fn) for _ in range(rounds))
    return t
def timed(fn):
    t = time.perf_counter(); fn(); return time.perf_counter() - t
crc = best(lambda: c.crc32c(buf))
def read_all(check):
    n = 0
    for _, p in data.iter_tfrecord(shard, check_crc=check):
        n += len(p)
    return n
def plain():
    with open(shard, "rb", buffering=0) as f:
        while f.read(1 << 20):
            pass
size = os.path.getsize(shard)
tables = 0.0
if c._native is not None:
    import ctypes
    lib = ctypes.CDLL(os.environ["STALLSCOPE_CRC32C"])
    fn = lib.stallscope_crc32c_by_tables
    fn.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_uint32]
    fn.restype = ctypes.c_uint32
    tables = len(buf) / best(lambda: fn(buf, len(buf), 0)) / 1e9
print(c.IMPLEMENTATION)
print(len(buf) / crc / 1e9)
print(size / best(lambda: read_all(True)) / 1e9)
print(size / best(lambda: read_all(False)) / 1e9)
print(size / best(plain) / 1e9)
print(tables)
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--library", default="build/libstallscope_crc32c.so")
    ap.add_argument("--mib", type=int, default=256)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    import shard_writer as w
    with tempfile.TemporaryDirectory() as tmp:
        shard = os.path.join(tmp, "bench.tfrecord")
        record = os.urandom(100_000)
        with open(shard, "wb") as f:
            framed = w.frame(record)
            for _ in range(args.mib * (1 << 20) // len(framed)):
                f.write(framed)
        rows = []
        for name, lib in (("native", os.path.abspath(args.library)), ("python", "")):
            env = dict(os.environ, STALLSCOPE_CRC32C=lib)
            # The Python code is ~100x slower: a smaller buffer, fewer rounds.
            mib, rounds = (args.mib, args.rounds) if lib else (16, 1)
            out = subprocess.run([sys.executable, "-c", CHILD, PYTHON_DIR, str(mib), shard,
                                  str(rounds)], env=env, check=True, capture_output=True,
                                 text=True).stdout.split("\n")
            rows.append((name, out[0], *map(float, out[1:6])))
    print("%d MiB shard of 100 KB records, best of %d, one thread (%s, %d CPUs)"
          % (args.mib, args.rounds, os.uname().machine, os.cpu_count()))
    print("%-7s %10s %16s %18s %12s  %s" % ("", "crc32c", "iter_tfrecord", "iter (no check)",
                                           "plain read", "implementation"))
    for name, impl, crc, checked, unchecked, plain, _ in rows:
        print("%-7s %6.2f GB/s %11.2f GB/s %13.2f GB/s %7.2f GB/s  %s"
              % (name, crc, checked, unchecked, plain, impl))
    native = rows[0]
    print("native, its table path alone (CPUs without SSE 4.2): %.2f GB/s" % native[6])
    print("goal: verification at >= 2 GB/s per core: %s (%.2f GB/s); native/python %.0fx"
          % ("met" if native[2] >= 2 else "NOT met", native[2], native[2] / rows[1][2]))


if __name__ == "__main__":
    main()

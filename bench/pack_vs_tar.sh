#!/usr/bin/env bash
# Pack throughput against GNU tar on the same files, in one hyperfine run:
#   tar -cf  (GNU tar writing one archive; no fsync)
#   tar -cf + sync  (the same, with its bytes on disk as pack's are)
#   stallscope pack --format wds       (tar shards via libarchive, fsync'd)
#   stallscope pack --format tfrecord  (framed tf.train.Example, CRC32C, fsync'd)
# Prints hyperfine's table, then MB/s of each and the ratio pack/tar.
# Files are generated once (image-like: random bytes, ~100 KB, in 100 class
# folders) and reused; all runs read them from a warm page cache, so this
# measures the packer, not the disk.
#
# usage: bench/pack_vs_tar.sh BUILD_DIR [WORKDIR]   (FILES=20000 SIZE_KB=100 RUNS=5)
set -euo pipefail
build=${1:?usage: $0 BUILD_DIR [WORKDIR]}
work=${2:-/tmp/stallscope-pack-bench}
files=${FILES:-20000}
size_kb=${SIZE_KB:-100}
runs=${RUNS:-5}
bin=$(cd "$build" && pwd)/stallscope
command -v hyperfine >/dev/null || { echo "hyperfine is not installed" >&2; exit 1; }
[ -x "$bin" ] || { echo "$bin: not built" >&2; exit 1; }

src=$work/src-$files-$size_kb
if [ ! -f "$src/.complete" ]; then
  rm -rf "$src"
  echo "generating $files files of ~$size_kb KB under $src ..." >&2
  python3 - "$src" "$files" "$size_kb" <<'PY'
import os, random, sys
src, n, kb = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rng = random.Random(1)
for i in range(n):
    d = os.path.join(src, "class%03d" % (i % 100))
    os.makedirs(d, exist_ok=True)
    size = max(1, int(kb * 1024 * rng.uniform(0.5, 1.5)))
    with open(os.path.join(d, "img%06d.jpg" % i), "wb") as f:
        f.write(os.urandom(size))
open(os.path.join(src, ".complete"), "w").close()
PY
fi
bytes=$(du -sb --exclude=.complete "$src" | cut -f1)
out=$work/out
mkdir -p "$out"
cat "$src"/*/* >/dev/null  # warm the page cache for every contender alike

json=$work/hyperfine.json
hyperfine --runs "$runs" --warmup 1 --export-json "$json" \
  --prepare "rm -rf $out/tar $out/wds $out/tfr; mkdir -p $out/tar" \
  -n "tar -cf" "tar -cf $out/tar/all.tar -C $src ." \
  -n "tar -cf + sync" "tar -cf $out/tar/all.tar -C $src . && sync -f $out/tar/all.tar" \
  -n "pack wds" "$bin pack $src $out/wds --format wds" \
  -n "pack tfrecord" "$bin pack $src $out/tfr --format tfrecord"

python3 - "$json" "$bytes" "$files" <<'PY'
import json, sys
results = {r["command"]: r for r in json.load(open(sys.argv[1]))["results"]}
nbytes, nfiles = int(sys.argv[2]), int(sys.argv[3])
print("\n%d files, %.2f GB, median of %d runs, %d CPUs" % (
    nfiles, nbytes / 1e9, len(results["tar -cf"]["times"]), __import__("os").cpu_count()))
for name, r in results.items():
    print("  %-16s %7.3f s  %8.1f MB/s" % (name, r["median"], nbytes / r["median"] / 1e6))
tar = results["tar -cf"]["median"]
tar_sync = results["tar -cf + sync"]["median"]
for name in ("pack wds", "pack tfrecord"):
    m = results[name]["median"]
    print("  %-16s %.2fx the speed of tar -cf, %.2fx of tar -cf + sync" % (name, tar / m, tar_sync / m))
PY

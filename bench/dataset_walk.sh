#!/usr/bin/env bash
# The dataset walk against find: one million small files, warm cache.
#
# Generates (once; reused while its .complete marker is there) a tree of
# DIRS x FILES small files (default 1000 x 1000 = one million, 100 B..12 KB)
# under $STALLSCOPE_BENCH_DIR (default /tmp/stallscope-bench, on the real disk),
# checks that stallscope and find agree on the count, then times
#   find TREE -type f | wc -l          (the peer)
#   stallscope dataset TREE --json     (the walk + census + sampled residency)
#   find TREE -type f -printf '%s\n' | wc -l   (the peer doing the same work:
#                                            find -type f needs no stat at all,
#                                            a census needs every file's size)
# with hyperfine on a warm cache (warmup runs first) and prints the means and
# the ratios, then the peak RSS of one stallscope run (/usr/bin/time -v).
#
# usage: bench/dataset_walk.sh PATH_TO_STALLSCOPE [DIRS] [FILES_PER_DIR]
set -euo pipefail
bin=$(realpath "${1:?usage: $0 PATH_TO_STALLSCOPE [DIRS] [FILES_PER_DIR]}")
dirs=${2:-1000}
per_dir=${3:-1000}
base=${STALLSCOPE_BENCH_DIR:-/tmp/stallscope-bench}
tree="$base/dataset-${dirs}x${per_dir}"
total=$((dirs * per_dir))

command -v hyperfine >/dev/null || { echo "hyperfine is not installed" >&2; exit 1; }
if [[ ! -e "$tree/.complete" ]]; then
  echo "generating $total files under $tree (once) ..."
  rm -rf "$tree"
  mkdir -p "$tree"
  /usr/bin/python3 - "$tree" "$dirs" "$per_dir" <<'PY'
import os, random, sys
tree, dirs, per_dir = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rng = random.Random(1)
blob = os.urandom(12000)
for d in range(dirs):
    sub = os.path.join(tree, "class%04d" % d)
    os.mkdir(sub)
    for f in range(per_dir):
        fd = os.open(os.path.join(sub, "img%06d.jpg" % f), os.O_WRONLY | os.O_CREAT, 0o644)
        os.write(fd, blob[: rng.randint(100, 12000)])
        os.close(fd)
PY
  sync
  touch "$tree/.complete"
fi

# Both must see the same files (the marker file counts for both).
want=$(find "$tree" -type f | wc -l)
got=$("$bin" dataset "$tree" --json | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["dataset"]["files"])')
echo "files: find $want, stallscope $got"
[[ "$want" == "$got" ]] || { echo "MISMATCH" >&2; exit 1; }

out=$(mktemp)
trap 'rm -f "$out"' EXIT
hyperfine --warmup 2 --runs "${RUNS:-10}" --export-json "$out" \
  -n find "find '$tree' -type f | wc -l" \
  -n find-sizes "find '$tree' -type f -printf '%s\\n' | wc -l" \
  -n stallscope "'$bin' dataset '$tree' --json > /dev/null"
/usr/bin/python3 - "$out" <<'PY'
import json, sys
r = {x["command"]: x for x in json.load(open(sys.argv[1]))["results"]}
f, fs, s = r["find"]["mean"], r["find-sizes"]["mean"], r["stallscope"]["mean"]
print("find -type f | wc -l            : %.3f s +- %.3f" % (f, r["find"]["stddev"]))
print("find -type f -printf %%s | wc -l : %.3f s +- %.3f" % (fs, r["find-sizes"]["stddev"]))
print("stallscope dataset --json       : %.3f s +- %.3f" % (s, r["stallscope"]["stddev"]))
print("ratio stallscope / find         : %.2f  (below 1: stallscope is faster)" % (s / f))
print("ratio stallscope / find -printf : %.2f  (the same work: a stat per file for its size)"
      % (s / fs))
PY
echo "peak RSS of one stallscope dataset run:"
/usr/bin/time -v "$bin" dataset "$tree" --json 2>&1 >/dev/null | grep -E "Maximum resident|Elapsed"
echo "peak RSS of find -type f:"
/usr/bin/time -v find "$tree" -type f 2>&1 >/dev/null | grep -E "Maximum resident|Elapsed"

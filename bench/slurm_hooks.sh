#!/usr/bin/env bash
# What stallscope's Slurm prolog and epilog add to a job's start and end:
# the wall time of `stallscope slurm prolog` (start the recorder as the
# job's user, wait for its socket) and `stallscope slurm epilog` (stop it,
# mark the node's file; the merge is detached), run as slurmd runs them,
# with a job's environment, against `true` run the same way (the floor of
# starting a process from bash). Root only (the prolog drops to a user).
#   bench/slurm_hooks.sh BUILD_DIR [RUNS]
set -euo pipefail
build=${1:?usage: $0 BUILD_DIR [RUNS]}
runs=${2:-7}
bin=$(realpath "$build/stallscope")
[ "$(id -u)" -eq 0 ] || { echo "$0: run as root (the prolog drops to the job's user)" >&2; exit 1; }
tmp=$(mktemp -d /tmp/slurm-hooks-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
chmod 755 "$tmp"
mkdir -p "$tmp/state" "$tmp/work"
chown nobody "$tmp/work"
printf 'state_dir = %s/state\nmerge_wait = 1\n' "$tmp" > "$tmp/conf"
ms() { echo $(( ($2 - $1) / 1000000 )); }
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
: > "$tmp/prolog"; : > "$tmp/epilog"; : > "$tmp/true"
for i in $(seq 1 "$runs"); do
  job=$((900000 + i))
  run() {
    env -i PATH=/usr/bin:/bin STALLSCOPE_SLURM_CONF="$tmp/conf" SLURM_JOB_ID=$job \
      SLURM_JOB_UID="$(id -u nobody)" SLURM_JOB_GID="$(id -g nobody)" SLURM_JOB_USER=nobody \
      SLURM_JOB_WORK_DIR="$tmp/work" SLURMD_NODENAME=bench SLURM_NODELIST=bench "$@"
  }
  a=$(date +%s%N); run /bin/true; b=$(date +%s%N); ms "$a" "$b" >> "$tmp/true"
  a=$(date +%s%N); run "$bin" slurm prolog; b=$(date +%s%N); ms "$a" "$b" >> "$tmp/prolog"
  sleep 1
  a=$(date +%s%N); run "$bin" slurm epilog; b=$(date +%s%N); ms "$a" "$b" >> "$tmp/epilog"
  [ -f "$tmp/work/stallscope-$job/bench.db" ] || { echo "$0: no run file for job $job" >&2; exit 1; }
done
sleep 2  # the detached merges
echo "runs: $runs (load $(cut -d' ' -f1 /proc/loadavg))"
echo "prolog: median $(median < "$tmp/prolog") ms (min $(sort -n "$tmp/prolog" | head -1), max $(sort -n "$tmp/prolog" | tail -1))"
echo "epilog: median $(median < "$tmp/epilog") ms (min $(sort -n "$tmp/epilog" | head -1), max $(sort -n "$tmp/epilog" | tail -1))"
echo "true:   median $(median < "$tmp/true") ms (starting a process the same way)"

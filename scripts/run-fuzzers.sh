#!/usr/bin/env bash
# Runs every fuzz_* binary in BUILD_DIR for SECONDS each, JOBS at a time,
# seeded from the fixture trees; a crash fails the run and leaves the input
# under fuzz-corpus/.
set -euo pipefail
build=${1:?build dir}
seconds=${2:-10}
jobs=${3:-1}
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$root/fuzz-corpus"
# One fuzzer: seeds its corpus, runs, prints one line; fails on a crash.
fuzz_one() {
  local bin=$1 name corpus s f
  name=$(basename "$bin")
  corpus="$root/fuzz-corpus/$name"
  mkdir -p "$corpus"
  # Seed with the real and hand-made fixture files of the same kind.
  case "$name" in
    fuzz_meminfo) seeds=(meminfo) ;; fuzz_vmstat) seeds=(vmstat) ;;
    fuzz_cpu_stat) seeds=(stat) ;; fuzz_pressure) seeds=(cpu memory io) ;;
    fuzz_cgroup) seeds=(cgroup memory.stat memory.max) ;;
    fuzz_diskstats) seeds=(diskstats) ;; fuzz_mountinfo) seeds=(mountinfo) ;;
    fuzz_net_dev) seeds=(dev) ;; fuzz_infiniband) seeds=(state rate phys_state) ;;
    fuzz_proc_status) seeds=(status io smaps_rollup schedstat) ;; fuzz_environ) seeds=(environ) ;;
    fuzz_hook_datagram) seeds=(hook_datagram hook_datagram_alloc) ;;
    fuzz_nccl_log) seeds=('v2_*.log') ;;
    fuzz_nccl_log_host) seeds=('v2_*.log') ;;
    fuzz_dirents) seeds=(getdents64.bin) ;;
    fuzz_net_protocol) seeds=(net_message) ;;
    fuzz_tfrecord) seeds=('*.tfrecord') ;; fuzz_pack_index) seeds=('*.idx' manifest.json '*.tar') ;;
    fuzz_byte_size) seeds=(byte_size) ;; fuzz_smaps) seeds=(smaps) ;;
    fuzz_fdinfo) seeds=(fdinfo) ;;
    fuzz_census_wire) seeds=('census-wire-*.json') ;;
    fuzz_input_format) seeds=('shard*' 'labels.csv*' empty.zip) ;;
    fuzz_plan_h2d_text) seeds=(param_count has_memory pci_bus_id) ;;
    fuzz_baseline) seeds=('baseline-*.json') ;;
    fuzz_stored_findings) seeds=('evidence-*.json') ;;
    fuzz_node_summary) seeds=('node-*.summary') ;;
    fuzz_kernel_log) seeds=('kmsg*' 'dmesg-*' 'journal-*') ;;
    fuzz_pcie_link) seeds=(current_link_speed max_link_speed current_link_width) ;;
    fuzz_ethtool_stats) seeds=(ens1f0np0 ens2f0np0 ens3f0 ens5 eth0) ;;
    fuzz_capture) seeds=('capture-*.tar.gz') ;;
    fuzz_nvml_capture) seeds=('nvml*.json') ;;
    fuzz_captured_addresses) seeds=('addresses*.json') ;;
    fuzz_http_request) seeds=('*.http' hook_datagram) ;;
    fuzz_web_config) seeds=('web-config-*.yml') ;;
    fuzz_pci_path) seeds=('pci-path-*.txt') ;;
    fuzz_trace_file) seeds=('trace-*.json' 'trace-*.json.gz') ;;
    *) seeds=() ;;
  esac
  for s in "${seeds[@]}"; do
    while IFS= read -r f; do
      cp "$f" "$corpus/seed-$(printf '%s' "$f" | md5sum | cut -c1-12)"
    done < <(find "$root/tests/fixtures" -type f -name "$s" -size -64k)
  done
  if "$bin" -max_total_time="$seconds" -print_final_stats=1 -artifact_prefix="$corpus/crash-" \
       "$corpus" >"$corpus.log" 2>&1; then
    printf '%-20s %s\n' "$name" \
      "$(grep -E '^stat::number_of_executed_units' "$corpus.log" | awk '{print "ok, " $2 " runs"}')"
  else
    printf '%-20s FAILED (see %s)\n' "$name" "$corpus.log"
    tail -30 "$corpus.log"
    return 1
  fi
}

failed=0
pids=()
bins=("$build"/fuzz_*)
[ -e "${bins[0]}" ] || { echo "no fuzz_* binaries in $build" >&2; exit 2; }
for bin in "${bins[@]}"; do
  fuzz_one "$bin" &
  pids+=($!)
  if [ "${#pids[@]}" -ge "$jobs" ]; then
    wait "${pids[0]}" || failed=1
    pids=("${pids[@]:1}")
  fi
done
for pid in "${pids[@]}"; do wait "$pid" || failed=1; done
exit $failed

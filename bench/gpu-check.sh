#!/usr/bin/env bash
# gpu-check.sh: every GPU path of stallscope on a machine with an NVIDIA GPU,
# as one short table at the end (its time on a GPU is not measured yet):
#   1. build stallscope (Release, no tests) unless STALLSCOPE_BIN names one;
#   2. start a small CUDA workload (PyTorch matmuls, ~60 s) on GPU 0;
#   3. `snapshot --json` while it runs: the NVML section (utilization, memory,
#      clocks, power, PCIe) and GPM (SM activity, occupancy, tensor activity)
#      where the GPU has it (Hopper and newer);
#   4. `run -- <the workload>` for 20 s: NVML sampled into the timeline, the
#      findings (code.util_misleading, memory.gpu_near_full, throttling);
#   5. `bench h2d --max-size 256MiB --json` on GPU 0: pinned vs pageable,
#      local vs remote NUMA node, pinned h2d against the trained link's ceiling;
#   6. health: each GPU's PCIe link (trained / device max), ECC counts, row
#      remaps, persistence and MIG mode, Xid lines in the kernel log, and the
#      health findings `doctor` raises from them (io.pcie_degraded,
#      memory.gpu_ecc, memory.gpu_remap, code.gpu_persistence_off,
#      code.gpu_xid, network.link_degraded);
#   7. a capture: `snapshot --capture`, then `snapshot --from` and
#      `doctor --from` on it: the GPUs and links read back the same;
#   8. `bench allreduce --backend nccl` on one GPU (`mpirun -n 1`): NCCL
#      loaded (the system's or PyTorch's wheel's), every element checked.
# Without a GPU it says so in one line and exits 0: nothing to check here.
#
# usage: bench/gpu-check.sh            (env: STALLSCOPE_BIN, BUILD_DIR, PYTHON)
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-/tmp/stallscope-gpu-check-build}
PYTHON=${PYTHON:-/usr/bin/python3}
WORK=$(mktemp -d /tmp/stallscope-gpu-check.XXXXXX)
WORKLOAD_PID=
cleanup() {
  if [[ -n "$WORKLOAD_PID" ]]; then kill "$WORKLOAD_PID" 2>/dev/null; wait "$WORKLOAD_PID" 2>/dev/null; fi
  rm -rf "$WORK"
}
trap cleanup EXIT

# 0. Is there a GPU at all? The device node and nvidia-smi both say so; a
#    container without the device sees neither.
if ! ls /dev/nvidia[0-9]* >/dev/null 2>&1 && ! nvidia-smi -L >/dev/null 2>&1; then
  echo "gpu-check: no NVIDIA GPU found on $(hostname) (no /dev/nvidia0, no working nvidia-smi): nothing to check"
  exit 0
fi

START=$(date +%s)
declare -a ROWS
row() { ROWS+=("$(printf '%-22s %-6s %s' "$1" "$2" "$3")"); }
elapsed() { echo $(( $(date +%s) - $1 ))s; }

# 1. Build.
BIN=${STALLSCOPE_BIN:-}
if [[ -z "$BIN" ]]; then
  t=$(date +%s)
  if cmake -S "$ROOT" -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSTALLSCOPE_TESTS=OFF \
       -DSTALLSCOPE_BENCH=OFF >"$WORK/build.log" 2>&1 &&
     ninja -C "$BUILD_DIR" stallscope >>"$WORK/build.log" 2>&1; then
    BIN=$BUILD_DIR/stallscope
    row build ok "$(elapsed "$t") $BIN"
  else
    tail -20 "$WORK/build.log"
    echo "gpu-check: the build failed (log above)"
    exit 1
  fi
fi

# 2. The workload: matmuls on GPU 0 for at most WORKLOAD_SECONDS.
cat >"$WORK/workload.py" <<'PY'
import sys, time
import torch
if not torch.cuda.is_available():
    print("torch sees no CUDA device", file=sys.stderr); sys.exit(3)
seconds = float(sys.argv[1])
a = torch.randn(4096, 4096, device="cuda", dtype=torch.float16)
end = time.time() + seconds
while time.time() < end:
    for _ in range(50):
        b = a @ a
    torch.cuda.synchronize()
PY
HAVE_TORCH_CUDA=0
if "$PYTHON" -c 'import torch,sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
  HAVE_TORCH_CUDA=1
  "$PYTHON" "$WORK/workload.py" 60 >/dev/null 2>&1 &
  WORKLOAD_PID=$!
  sleep 5  # CUDA context up, kernels running
  row workload ok "PyTorch fp16 4096x4096 matmuls on GPU 0 (pid $WORKLOAD_PID)"
else
  row workload skip "no PyTorch with CUDA ($PYTHON): NVML is read on an idle GPU"
fi

# 3. snapshot: NVML and GPM while the workload runs.
t=$(date +%s)
if timeout 60 "$BIN" snapshot --json >"$WORK/snapshot.json" 2>"$WORK/snapshot.err"; then
  summary=$("$PYTHON" - "$WORK/snapshot.json" <<'PY'
import json, sys
gpus = json.load(open(sys.argv[1])).get("gpus") or {}
if not gpus.get("available"):
    print("FAIL no GPUs in snapshot: %s" % gpus.get("reason")); sys.exit()
out = []
for d in gpus.get("devices", []):
    gpm = d.get("gpm")
    g = ("GPM sm_active %s%% tensor %s%%" % (gpm.get("sm_active_percent"), gpm.get("tensor_active_percent"))
         if gpm else "GPM n/a (%s)" % d.get("gpm_note", ""))
    out.append("GPU%s %s util %s%% mem %.1f/%.1f GiB %sW; %s" % (
        d["index"], d["name"], d.get("utilization_gpu_percent"),
        (d.get("memory_used_bytes") or 0) / 2**30, (d.get("memory_total_bytes") or 0) / 2**30,
        d.get("power_w"), g))
print("ok " + " | ".join(out))
PY
)
  row "snapshot (NVML+GPM)" "${summary%% *}" "$(elapsed "$t") ${summary#* }"
else
  row "snapshot (NVML+GPM)" FAIL "rc $?: $(head -c 200 "$WORK/snapshot.err")"
fi
[[ -n "$WORKLOAD_PID" ]] && { kill "$WORKLOAD_PID" 2>/dev/null; wait "$WORKLOAD_PID" 2>/dev/null; WORKLOAD_PID=; }

# 4. run: NVML sampled into the timeline of a job, and its findings.
if [[ $HAVE_TORCH_CUDA == 1 ]]; then
  t=$(date +%s)
  if timeout 90 "$BIN" run --out "$WORK/run.db" -- "$PYTHON" "$WORK/workload.py" 20 \
       >"$WORK/run.out" 2>"$WORK/run.err" &&
     "$BIN" report "$WORK/run.db" --json >"$WORK/report.json" 2>>"$WORK/run.err"; then
    ids=$("$PYTHON" -c 'import json,sys; r=json.load(open(sys.argv[1])); print(",".join(f["id"] for f in r.get("findings",[])) or "none")' "$WORK/report.json")
    row "run (GPU timeline)" ok "$(elapsed "$t") findings: $ids"
  else
    row "run (GPU timeline)" FAIL "$(tail -c 300 "$WORK/run.err")"
  fi
else
  row "run (GPU timeline)" skip "needs PyTorch with CUDA"
fi

# 5. bench h2d on GPU 0.
t=$(date +%s)
timeout 150 "$BIN" bench h2d --gpu 0 --max-size 256MiB --json >"$WORK/h2d.json" 2>"$WORK/h2d.err"
rc=$?
if [[ $rc == 0 ]]; then
  summary=$("$PYTHON" - "$WORK/h2d.json" <<'PY'
import json, sys
b = json.load(open(sys.argv[1]))["bench"]
for g in b["gpus"]:
    big = max(s["size_bytes"] for s in g["samples"])
    pick = lambda d, m, local: next((s["bytes_per_second"] / 1e9 for s in g["samples"]
        if s["size_bytes"] == big and s["direction"] == d and s["memory"] == m and s["local"] == local), None)
    fmt = lambda v: "n/a" if v is None else "%.1f" % v
    ceil = g.get("pinned_h2d_over_link_ceiling")
    print("GPU%d h2d pinned %s pageable %s GB/s (x%s), remote-node pinned %s GB/s, %s of the trained link" % (
        g["index"], fmt(pick("h2d", "pinned", True)), fmt(pick("h2d", "pageable", True)),
        fmt(g["pinned_over_pageable_h2d"]), fmt(pick("h2d", "pinned", False)),
        "n/a" if ceil is None else "%.0f%%" % (100 * ceil)))
PY
)
  row "bench h2d" ok "$(elapsed "$t") $summary"
else
  row "bench h2d" FAIL "rc $rc: $(head -c 300 "$WORK/h2d.err")"
fi

# 6. Health: PCIe links, ECC, remaps, persistence, MIG, Xids, and doctor's
#    findings from them. Read from the snapshot taken above and one doctor run.
if [[ -s "$WORK/snapshot.json" ]]; then
  summary=$("$PYTHON" - "$WORK/snapshot.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
gpus = (s.get("gpus") or {}).get("devices", [])
links = {l.get("pci_address", "").lower(): l for l in s.get("pcie_links") or []}
end = lambda e: "Gen? x?" if not e else "%s GT/s x%s" % (e.get("speed_gts"), e.get("width"))
out = []
for d in gpus:
    bus = (d.get("pci_bus_id") or "").lower()
    l = next((v for k, v in links.items() if k and bus.endswith(k[-12:])), None)
    out.append("GPU%s link %s of %s, ECC uncorr vol/agg %s/%s, remapped %s%s, persistence %s, MIG %s" % (
        d.get("index"), end(l and l.get("current")), end(l and l.get("max")),
        d.get("ecc_volatile_uncorrected"), d.get("ecc_aggregate_uncorrected"),
        d.get("remapped_rows"), " PENDING" if d.get("remap_pending") else "",
        d.get("persistence_mode"), d.get("mig_mode")))
kl = s.get("kernel_log")
out.append("kernel log: %s" % ("not readable" if kl is None else "%d Xid lines" % len(kl.get("xids", []))))
print(("ok " if gpus else "FAIL no GPU in the snapshot; ") + " | ".join(out))
PY
)
  row "health (PCIe/ECC/Xid)" "${summary%% *}" "${summary#* }"
fi
t=$(date +%s)
if timeout 120 "$BIN" doctor --quick --json >"$WORK/doctor.json" 2>"$WORK/doctor.err"; then
  ids=$("$PYTHON" -c '
import json, sys
health = ("io.pcie_degraded", "memory.gpu_ecc", "memory.gpu_remap", "code.gpu_persistence_off",
          "code.gpu_xid", "network.link_degraded", "code.gpu_throttled")
r = json.load(open(sys.argv[1]))
got = ["%s(%s)" % (f["id"], f.get("severity")) for f in r.get("findings", []) if f["id"] in health]
print(", ".join(got) or "none of the health ids raised")' "$WORK/doctor.json")
  row "doctor (GPU health)" ok "$(elapsed "$t") $ids"
else
  row "doctor (GPU health)" FAIL "rc $?: $(head -c 300 "$WORK/doctor.err")"
fi

# 7. A capture carries the node's GPU evidence: read back, the GPUs and the
#    links are the ones the live snapshot saw, and doctor runs on it.
t=$(date +%s)
if timeout 120 "$BIN" snapshot --capture "$WORK/node.tar.gz" >/dev/null 2>"$WORK/capture.err" &&
   "$BIN" snapshot --from "$WORK/node.tar.gz" --json >"$WORK/from.json" 2>>"$WORK/capture.err" &&
   "$BIN" doctor --from "$WORK/node.tar.gz" >"$WORK/doctor-from.txt" 2>>"$WORK/capture.err"; then
  summary=$("$PYTHON" - "$WORK/snapshot.json" "$WORK/from.json" "$WORK/node.tar.gz" <<'PY'
import json, os, sys
live, back = (json.load(open(p)) for p in sys.argv[1:3])
names = lambda s: sorted((d.get("index"), d.get("name"), d.get("memory_total_bytes"))
                         for d in (s.get("gpus") or {}).get("devices", []))
links = lambda s: sorted((l.get("pci_address"), json.dumps(l.get("max"))) for l in s.get("pcie_links") or [])
same = names(live) == names(back) and links(live) == links(back)
print("%s %d GPUs, %d links read back %s; capture %.0f KiB" % (
    "ok" if same and names(back) else "FAIL", len(names(back)), len(links(back)),
    "the same" if same else "DIFFERENT", os.path.getsize(sys.argv[3]) / 1024))
PY
)
  row "capture + --from" "${summary%% *}" "$(elapsed "$t") ${summary#* }"
else
  row "capture + --from" FAIL "$(tail -c 300 "$WORK/capture.err")"
fi

# 8. bench allreduce over NCCL on one GPU. libnccl comes from the system or
#    from PyTorch's wheel (nvidia/nccl/lib); one rank under mpirun.
NCCL_DIR=$("$PYTHON" -c 'import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], "lib"))' 2>/dev/null)
t=$(date +%s)
export LD_LIBRARY_PATH="${NCCL_DIR:+$NCCL_DIR:}${LD_LIBRARY_PATH:-}"
rc=127
if command -v mpirun >/dev/null; then
  timeout 120 mpirun --allow-run-as-root -n 1 -x LD_LIBRARY_PATH \
    "$BIN" bench allreduce --backend nccl -b 1M -e 256M -n 10 --json >"$WORK/allreduce.json" 2>"$WORK/allreduce.err"
  rc=$?
fi
if [[ $rc == 127 ]]; then
  row "allreduce (NCCL)" skip "no mpirun here (Debian: openmpi-bin); the MPI plugin needs libopenmpi-dev at build time"
elif [[ $rc == 0 ]]; then
  summary=$("$PYTHON" - "$WORK/allreduce.json" <<'PY'
import json, sys
b = json.load(open(sys.argv[1]))["bench"]
rows = b.get("rows") or []
big = rows[-1] if rows else {}
wrong = sum(r.get("wrong", 0) for r in rows)
print("%s %s, %s rank(s), largest %s B: algbw %s GB/s, #wrong %d" % (
    "ok" if wrong == 0 and rows else "FAIL", b.get("library"), b.get("ranks"),
    big.get("size_bytes"), big.get("algbw_gbps", big.get("algbw")), wrong))
PY
)
  row "allreduce (NCCL)" "${summary%% *}" "$(elapsed "$t") ${summary#* }"
else
  row "allreduce (NCCL)" FAIL "rc $rc: $(head -c 300 "$WORK/allreduce.err")"
fi

echo
printf '%-22s %-6s %s\n' check result details
for r in "${ROWS[@]}"; do echo "$r"; done
echo "total $(elapsed "$START")"
for r in "${ROWS[@]}"; do [[ "$r" == *" FAIL "* ]] && exit 1; done
exit 0

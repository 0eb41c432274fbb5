#include "analyze/host/triage_table.h"

#include <vector>

namespace stallscope {
namespace {

constexpr Suspect kTable[] = {
    // Memory first: a shortage masquerades as slow IO, and IO as the network.
    {Layer::kMemory, "host memory runs short (available < 20% of total)",
     "free -h; grep MemAvailable /proc/meminfo", "stallscope doctor --quick",
     "memory.available_low"},
    {Layer::kMemory, "swap in use: host allocations for H2D copies stall",
     "grep -E 'SwapTotal|SwapFree|Dirty|Writeback' /proc/meminfo; vmstat 1 (si/so)",
     "stallscope doctor --quick", "memory.swap_active"},
    {Layer::kMemory, "a leak: tensors kept in a list, an unbounded cache; RSS only rises",
     "ps -o pid,rss,vsz,cmd -p PID every 30 s", "stallscope run -- python train.py",
     "memory.rss_growth memory.oom_killed"},
    {Layer::kMemory, "too much page-locked (pinned) memory squeezes the page cache",
     "grep Mlocked /proc/meminfo; grep -E 'VmLck|VmPin' /proc/PID/status",
     "stallscope doctor --quick", "memory.pinned_excess"},
    {Layer::kMemory, "GPU memory errors: uncorrectable ECC, rows pending or failing remap",
     "nvidia-smi -q -d ECC,ROW_REMAPPER", "stallscope doctor --quick",
     "memory.gpu_ecc memory.gpu_remap"},
    // Then io (5.1 step 2).
    {Layer::kIo, "the data disk saturated: %util near 100, await tens of ms", "iostat -x 1",
     "stallscope run --data /data -- python train.py", "io.device_saturated"},
    {Layer::kIo, "storage too slow to feed training (< 500 MB/s sequential, < 5000 IOPS)",
     "fio --name=seq_read --rw=read --bs=1M --direct=1 --numjobs=4 --runtime=30",
     "stallscope bench io /data", "io.storage_slow"},
    {Layer::kIo, "a GPU's PCIe link trained at x8 or a generation down: copies at half speed",
     "sudo lspci -vv | grep -E 'LnkCap|LnkSta'", "stallscope doctor --quick", "io.pcie_degraded"},
    {Layer::kIo, "hundreds of thousands of small files crush IOPS",
     "find /data -type f | wc -l; du -sh /data", "stallscope dataset /data", "io.small_files"},
    {Layer::kIo, "remote file system pays for every open/stat/readdir", "df -T /data; mount",
     "stallscope dataset /data", "io.remote_fs"},
    {Layer::kIo, "cold page cache makes epoch 1 slow", "vmtouch /data", "stallscope dataset /data",
     "io.cold_cache"},
    {Layer::kIo, "DataLoader: num_workers=0, no pin_memory, workers rebuilt every epoch",
     "print(loader.num_workers, loader.pin_memory, loader.persistent_workers)",
     "stallscope run -- python train.py", "io.loader_config io.input_bound"},
    {Layer::kIo, "loader workers use every CPU (decoding, decompressing a zip)", "top; mpstat 1",
     "stallscope run -- python train.py", "io.cpu_bound_loader"},
    // Then the network (5.1 step 3).
    {Layer::kNetwork, "MTU 1500 on one side, 9000 on the other", "ping -M do -s 8972 PEER",
     "stallscope net probe PEER", "network.mtu_mismatch"},
    {Layer::kNetwork, "NCCL picked the wrong interface", "NCCL_DEBUG=INFO; ip route get PEER",
     "stallscope doctor --peer PEER; stallscope nccl-log LOG", "network.wrong_interface"},
    {Layer::kNetwork, "Docker bridge addresses (172.17.x) on a multi-host job",
     "ip -4 addr; docker network ls", "stallscope doctor --quick", "network.container_bridge"},
    {Layer::kNetwork, "RDMA present but NCCL runs over TCP", "ibstatus; NCCL_DEBUG=INFO",
     "stallscope nccl-log LOG", "network.rdma_unused"},
    {Layer::kNetwork, "port errors, drops, link flaps",
     "ip -s link; cat /sys/class/infiniband/*/ports/*/counters/symbol_error",
     "stallscope doctor --quick", "network.port_errors"},
    {Layer::kNetwork, "the fabric pushes back (PFC pause frames, ECN, CNPs) or the NIC drops",
     "ethtool -S IF | grep -E 'pause|cnp|ecn|discard|out_of_buffer'", "stallscope doctor --quick",
     "network.congestion network.drops_buffer"},
    {Layer::kNetwork, "a NIC or HCA on a narrower or slower PCIe link than it can use",
     "cat /sys/class/net/IF/device/current_link_width", "stallscope doctor --quick",
     "network.link_degraded"},
    {Layer::kNetwork, "gradient sync over 30% of the step", "time one step on 1 GPU and on N GPUs",
     "stallscope scale --procs 1,2,4 -- CMD", "network.comm_ratio_high"},
    // Distributed: every synchronous step waits for the slowest rank.
    {Layer::kDistributed, "scaling: 8 GPUs give less than 1.5x of 4",
     "run 1, 2, 4, 8 GPUs for a fixed number of steps", "stallscope scale --procs 1,2,4,8 -- CMD",
     "distributed.scaling_poor"},
    {Layer::kDistributed, "one slow rank (mixed GPU models, uneven samples)",
     "nvidia-smi -L on every node; per-rank step times", "stallscope cluster",
     "distributed.straggler distributed.heterogeneous_gpus distributed.load_imbalance"},
    {Layer::kDistributed, "a rank died (OOM, crash, a kill) or hung: the others wait for it",
     "dmesg -T | grep -i killed; py-spy dump --pid PID on each rank",
     "stallscope run --procs N -- python train.py", "distributed.rank_died distributed.hang"},
    // And only then the code (5.1 step 4).
    {Layer::kCode, "no infrastructure cause, GPU still waits: loader logic, batch size",
     "torch.profiler; nvidia-smi dmon -s u", "stallscope run -- python train.py", "code.gpu_idle"},
    {Layer::kCode, "utilization high but SM activity low (small kernels, syncs)",
     "nvidia-smi dmon -s u vs DCGM SM activity", "stallscope run -- python train.py",
     "code.util_misleading code.launch_bound"},
    {Layer::kCode, "the GPU driver reports Xid errors (79: fell off the bus, 48: ECC)",
     "dmesg -T | grep -i xid; nvidia-smi -q | grep -i persistence", "stallscope doctor --quick",
     "code.gpu_xid code.gpu_persistence_off"},
};

}  // namespace

std::span<const Suspect> TriageTable() { return kTable; }

std::vector<Suspect> SuspectsOf(Layer layer) {
  std::vector<Suspect> out;
  for (const Suspect& s : kTable) {
    if (s.layer == layer) out.push_back(s);
  }
  return out;
}

}  // namespace stallscope

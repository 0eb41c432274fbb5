#include "analyze/catalog.h"

namespace stallscope {
namespace {

constexpr Rule kRules[] = {
    {"memory.available_low", Layer::kMemory,
     "MemAvailable (or, in a memory-limited cgroup, limit minus working set) against MemTotal "
     "(or the limit)",
     "warning below 20%; critical below 10%, or below 20% while swap is active",
     "seed 1.3: available under 20% of total with swap activity always slows training; "
     "under 10% the page cache that feeds the data loader is already gone"},
    {"memory.swap_active", Layer::kMemory,
     "pages swapped in+out per second (/proc/vmstat pswpin, pswpout) over the sampling window; "
     "swap in use (SwapTotal - SwapFree)",
     "warning at >= 1 page/s; critical at >= 256 pages/s (1 MiB/s with 4 KiB pages); "
     "info when swap holds pages but none moved",
     "seed 1.3: any swap traffic means memory is short, and it delays the host allocations "
     "that host-to-GPU copies wait on"},
    {"memory.pinned_excess", Layer::kMemory,
     "page-locked memory: the larger of meminfo Mlocked and the sum of VmLck+VmPin of every "
     "process, against MemTotal",
     "warning above 25% of MemTotal; critical above 50%",
     "pinned pages can be neither swapped nor reclaimed: pin_memory buffers of num_workers x "
     "prefetch_factor batches (seed 2.2) squeeze the page cache the loader reads through; "
     "our threshold, the seed gives none"},
    {"memory.rss_growth", Layer::kMemory,
     "a recorded run: the Theil-Sen slope (median of pairwise slopes, robust to ~29% outliers) "
     "of the process tree's RSS after the first third of the run; the middle and last thirds "
     "fitted apart; each process's own slope to name the one that grows; the memory still "
     "available at the end",
     "fires when the last two thirds grow, the last third at >= 0.7x the middle third's pace, "
     "the growth exceeds 3 sigma of the noise, and either exceeds 10% of the RSS it started "
     "from and 64 MiB or the memory left runs out within 24 h at this slope; critical when it "
     "runs out within 1 h, else warning",
     "seed 1.2: a leak is RSS that 'only rises' when sampled every 30 s (tensors appended to a "
     "list grew to 100+ GB in 15 h before the OOM kill). Loading a model, filling caches and "
     "starting workers also raise RSS, then plateau: so the first third is left out and a "
     "slowing last third is not a leak. 10% / 64 MiB / 24 h are ours: below them a rise is "
     "allocator noise or harmless"},
    {"memory.oom_killed", Layer::kMemory,
     "a recorded run: whether the kernel's OOM killer ended the job (vmstat / cgroup oom_kill "
     "counted a kill of the job's tree); the tree's peak RSS and the limit",
     "critical whenever it happened",
     "seed 1.2: a slow leak ends in an OOM kill, and in distributed training one killed rank "
     "hangs all the others; nothing else the run shows matters more"},
    {"io.device_saturated", Layer::kIo,
     "a recorded run: iostat -x figures of the disk behind the data, per interval: %util, await "
     "(ms), read kB/s",
     "an interval is saturated at %util >= 90 and await >= 20 ms; critical when >= 30% of the "
     "intervals are (at least 3), warning when 3 in a row are; one level lower when the hook "
     "measured that the steps do not wait for data (< 10% of step time)",
     "seed 2.1: '%util near 100 for long, await over tens of ms: the bottleneck is most likely "
     "the storage'. 90 / 20 ms put numbers on 'near 100' and 'tens of ms'; 3 intervals in a row "
     "separate sustained from a blip; 30% of the run makes it the job's condition, not a "
     "burst (a checkpoint write, an epoch start)"},
    {"io.cpu_bound_loader", Layer::kIo,
     "a recorded run: CPU of the loader workers (the tree minus the ranks) against the CPUs the "
     "ranks leave them, and the host's CPU busy share, per interval; the data wait share",
     "fires when the workers use >= 90% of those CPUs in >= 50% of the intervals, or the host "
     "is >= 95% busy in >= 50% of them while steps wait >= 10% for data; critical when the steps "
     "wait >= 30% (io.input_bound's critical level), info when they were measured and do not, else "
     "warning",
     "seed 2.4: decompressing a zip on every read made 'the CPU the new bottleneck'; decoding "
     "and augmentation in the workers do the same. Workers that already have every CPU cannot "
     "be helped by more workers (seed 2.2: num_workers=32 only blew up memory). 90% / 95% / "
     "half the run are ours"},
    {"io.loader_config", Layer::kIo,
     "a recorded run: the DataLoader settings the hook reported per rank (num_workers, "
     "pin_memory, prefetch_factor, persistent_workers), epoch lengths and the first step's "
     "wait of each epoch. One finding per problem, named in the 'problem' evidence",
     "num_workers_zero: critical when steps wait >= 30% for data, info when measured below, "
     "else warning; pin_memory_off (GPU job): warning; workers_not_persistent: warning when "
     "epochs average < 30 s or the measured restart wait is >= 5% of an epoch; "
     "prefetch_queue_large: warning when num_workers x prefetch_factor > 64; "
     "workers_exceed_cpus: warning when the ranks' workers outnumber the CPUs",
     "seed 2.2: num_workers, prefetch_factor, pin_memory and persistent_workers decide the "
     "pipeline; num_workers x prefetch_factor is the prefetch queue, too long eats memory and "
     "swaps; start at half the CPUs, prefetch_factor=4, persistent_workers=True (rebuilding "
     "workers each epoch adds minutes); seed 1.1: pin_memory=True lets the DMA copy directly. "
     "30 s, 5% and 64 are ours"},
    {"io.input_bound", Layer::kIo,
     "a recorded run: the hook's steps: time next(loader) took over the whole step, per rank "
     "and overall, each rank's first step (worker start-up) left out; the worst rank decides, "
     "since in synchronous training every rank waits for it",
     "warning at >= 10% of step time; critical at >= 30%; at least 5 steps",
     "seed 1.1: data movement that outgrows the forward pass is the first thing to fix; a GPU "
     "that waits 30% of every step would run 1.4x faster without the wait. Below 10% the loader "
     "overlaps well and the rest is hand-off noise. 30% matches network.comm_ratio_high; the "
     "design's example (48%) is critical"},
    {"io.small_files", Layer::kIo,
     "stallscope dataset: files under 1 MiB (the walk's size histogram), their count and "
     "share of the files",
     "fires at >= 10,000 small files that are >= 50% of the files; critical at >= 100,000 or "
     "when the data is on a remote file system, else warning",
     "seed 2 and 2.2: 500k images of a few hundred KB in folders crush IOPS to tens of MB/s, "
     "and packing them into large files (TFRecord) made training ~1.8x faster with 70% less IO "
     "wait. 1 MiB is the seed's fio block size (bs=1M): a smaller file is one small random "
     "read plus an open. At the seed's floor of 5000 IOPS, 10,000 files cost >= 2 s per epoch "
     "and 100,000 cost >= 20 s; below 10,000 the cost is noise (our threshold)"},
    {"io.remote_fs", Layer::kIo,
     "stallscope dataset: the file system under the path (mountinfo type and statfs magic: nfs, "
     "lustre, gpfs, cifs/smb, ceph, beegfs, 9p, network FUSE daemons), the open and stat "
     "latency p50/p99 measured on a random sample of up to 1000 files",
     "fires whenever the data is remote; critical when io.small_files' condition holds too, "
     "warning at >= 1000 files, info for fewer (a few large files stream well)",
     "seed 2.3: remote IO pays in metadata (open, permission checks, listing), not in large "
     "sequential reads; walking the dataset every epoch on NFS is 'a disaster'; copy to local "
     "SSD or pack into large files. 1000 files is ours"},
    {"io.cold_cache", Layer::kIo,
     "stallscope dataset: page-cache residency (mmap + mincore, as vmtouch) of every file, or "
     "of a uniform random sample of 10,000 when there are more; the time the uncached part "
     "takes at the seed's storage floor (500 MB/s sequential plus one 5000-IOPS read per small "
     "file)",
     "fires when < 20% of the bytes are cached and that uncached read takes >= 1 s at the "
     "floor; warning when the data fits in half the RAM (epoch 1 will be slower than the rest), "
     "info when it does not (every epoch reads storage)",
     "seed 2.1: a first epoch abnormally slow followed by normal ones is the cold/warm page "
     "cache difference, not a program bug. 20%, 1 s and half the RAM are ours"},
    {"io.storage_slow", Layer::kIo,
     "stallscope bench io PATH: sequential 1 MiB reads (O_DIRECT, io_uring; 4 jobs at queue "
     "depth 1 by default, as the seed's fio line) in MB/s and random 4 KiB reads in IOPS on a "
     "test file under PATH",
     "critical when sequential reads are below 500 MB/s or random 4 KiB reads below 5000 IOPS "
     "(--min-seq-mbps, --min-rand-iops change them)",
     "seed 2.3: 'if sequential reads are below 500MB/s or random 4K read IOPS below 5000, this "
     "storage is most likely unfit as a direct source of training data'; measured as its fio "
     "line does (--bs=1M --direct=1 --numjobs=4)"},
    {"network.wrong_interface", Layer::kNetwork,
     "NCCL_SOCKET_IFNAME and NCCL_IB_HCA in NCCL's syntax (comma list, prefixes unless '=', '^' "
     "excludes, mlx5_0:1 names a port), GLOO_SOCKET_IFNAME (exact names) against the interfaces "
     "and RDMA ports of the host; the interface the kernel routes MASTER_ADDR (and doctor --peer "
     "hosts) through, from a connected UDP socket's source address. nccl-log: the interfaces "
     "an NCCL log says were chosen (Bootstrap, NET/Socket, the NET/IB out-of-band one)",
     "critical when nothing usable is left (every name missing, down, without an address, "
     "loopback or a Docker bridge; every active port excluded or down); warning when some "
     "names are bad but others usable, or when the route to the master leaves through an "
     "interface the variable does not allow. nccl-log: critical when a chosen interface is "
     "loopback, a docker/br-/veth/virbr bridge or in 172.17.0.0/16 and the job spans hosts "
     "(hosts in the log, NCCL's nNodes, or NET connections); info on one host",
     "seed 3.3: NCCL picks a routed interface on its own and on multi-NIC machines often the "
     "wrong one, so traffic goes to the wrong subnet; the fix is NCCL_SOCKET_IFNAME=ib0/eth0. "
     "A name that matches nothing makes NCCL fail or fall back to lo/docker0; an HCA list with "
     "no active port makes NCCL fall back to sockets"},
    {"network.container_bridge", Layer::kNetwork,
     "the interfaces a process sees: a veth (iflink differs from ifindex, no device) or an "
     "address in Docker's bridge range 172.17.0.0/16, no host NIC, bond, IPoIB or docker0 in "
     "sight (no host network), plus the container clues (/.dockerenv, cgroup path); the job's "
     "size from WORLD_SIZE, LOCAL_WORLD_SIZE, NODE_RANK/GROUP_RANK and the route to MASTER_ADDR",
     "critical when the job spans hosts (WORLD_SIZE > LOCAL_WORLD_SIZE, NODE_RANK > 0, or "
     "MASTER_ADDR reached off this host); warning when WORLD_SIZE > 1; info otherwise",
     "seed 3.3: on Docker's default bridge network other hosts cannot reach the container's "
     "172.17.0.x address ('Connect to 172.17.0.x timed out' is not a code problem); use "
     "--network host or hostNetwork. One host's ranks share the container, so only a multi-host "
     "job breaks"},
    {"network.rdma_unused", Layer::kNetwork,
     "InfiniBand/RoCE ports in state ACTIVE (/sys/class/infiniband) against NCCL_IB_DISABLE "
     "and NCCL_NET in the job's environment (an NCCL log that shows NET/Socket: nccl-log)",
     "warning when at least one port is ACTIVE and NCCL_IB_DISABLE is set to anything but 0, "
     "or NCCL_NET=Socket. nccl-log: when the log's connections between hosts go via "
     "NET/Socket while the log lists RDMA devices (NET/IB : Using) or, for the log's lines of "
     "this host, its ports are ACTIVE (also when NCCL saw no device: a container without "
     "/dev/infiniband); critical from 8 hosts",
     "seed 3.1: RDMA/RoCE bypasses the kernel's TCP stack with far lower latency and CPU cost; "
     "beyond 8 nodes it is 'basically required'; seed 3.3: keep NCCL_IB_DISABLE=0 when using "
     "RDMA. Warning, not critical: at 4 nodes or fewer TCP 'can still cope'"},
    {"network.port_errors", Layer::kNetwork,
     "growth over the sampling window (doctor's interval; the whole run for run/report) of "
     "/proc/net/dev errors (errs+fifo+frame, errs+fifo+colls+carrier) and drops per NIC "
     "(loopback left out), and of RDMA port counters symbol_error, port_rcv_errors, link_downed",
     "NIC: warning at >= 1 error, or >= 10 drops that are >= 0.1% of the packets; critical at "
     "errors >= 0.1% or drops >= 1% of the packets. RDMA: warning when symbol or receive errors "
     "grow, critical when link_downed grows (the link flapped)",
     "seed 3.1/3.2: packet loss makes TCP retransmit and NCCL time out, and incast overflows "
     "switch buffers even below full bandwidth. A healthy link counts no CRC/frame errors at "
     "all, hence any one; TCP's rate falls as 1/sqrt(loss), so 0.1% already costs severalfold. "
     "Drops also count unhandled protocols, hence the 10-drop floor; the levels are ours"},
    {"network.mtu_mismatch", Layer::kNetwork,
     "net probe: the MTU of the local interface the route uses, the path MTU (largest UDP "
     "payload with don't-fragment set that the server acknowledges, + 28 bytes of IPv4/UDP "
     "headers; the kernel's IP_MTU), and the MTU of the server's interface",
     "warning when the three differ; critical when the path MTU is below the local MTU while "
     "the kernel still believes the local MTU (no ICMP told it): full-size packets vanish",
     "seed 3.3: MTU 1500 against 9000 jumbo frames gives 'small pings pass, large pings fail'; "
     "check with ping -M do -s 1472. TCP survives through MSS negotiation, datagrams and RoCE "
     "do not"},
    {"network.connect_failed", Layer::kNetwork,
     "nccl-log: NCCL WARNs that give up on a peer: 'Connect to ADDR failed : REASON', "
     "'PollConnect to ADDR failed with error', 'Call to recv from ADDR failed', 'Connection "
     "closed by remote peer ADDR', 'exceeded timeouts/retries'; the peers, reasons and counts",
     "critical whenever one is logged; INFO 'Call to connect returned ..., retrying' alone does "
     "not fire (NCCL waits for a peer that is not listening yet)",
     "seed 3.3: 'NCCL init timeout' and 'connect timed out / socket read timed out' are the two "
     "most common errors, usually container networking (172.17.0.x) or a firewall rather than "
     "hardware; a WARN means NCCL gave up and the job cannot train"},
    {"distributed.nccl_version_mismatch", Layer::kDistributed,
     "nccl-log: the 'NCCL version X' each process printed (a bare line goes to the process "
     "printed just before it), and NCCL's own 'Mismatched NCCL version detected' WARN",
     "critical when two or more versions appear, or NCCL warned of a mismatch",
     "NCCL's wire protocol between ranks is only guaranteed within one version: mixed builds "
     "hang or fail at init (NCCL checks it from 2.2x). The seed's advice to compare the hosts "
     "(cluster) applies: every host must run the same image"},
    {"distributed.init_incomplete", Layer::kDistributed,
     "nccl-log: per rank (host:pid and [cudaDev]), 'Init START' against 'Init COMPLETE' lines; "
     "before 2.18 (no START), a process with NCCL INFO lines and no COMPLETE at all",
     "critical when other ranks completed (they wait for the missing ones) or WARNs/errors were "
     "logged; warning when no rank completed and nothing failed (the log may end mid-init); not "
     "judged without INFO lines (NCCL_DEBUG=WARN)",
     "seed 3.3: an NCCL init that never finishes is one of the two most common distributed "
     "failures; one missing rank stalls every other rank until the collective times out"},
};

}  // namespace

std::span<const Rule> RuleCatalog() { return kRules; }

const Rule* FindRule(std::string_view id) {
  for (const Rule& rule : kRules) {
    if (rule.id == id) return &rule;
  }
  return nullptr;
}

}  // namespace stallscope

#include "analyze/catalog.h"

namespace stallscope {
namespace {

constexpr Rule kRules[] = {
    {"memory.available_low", Layer::kMemory,
     "MemAvailable (or, in a memory-limited cgroup, limit minus working set) against MemTotal "
     "(or the limit)",
     "warning below 20%; critical below 10%, or below 20% while swap is active",
     "available under 20% of total with swap activity always slows training; "
     "under 10% the page cache that feeds the data loader is already gone",
     "Linux kernel documentation, The /proc Filesystem (meminfo): "
     "https://docs.kernel.org/filesystems/proc.html"},
    {"memory.swap_active", Layer::kMemory,
     "pages swapped in+out per second (/proc/vmstat pswpin, pswpout) over the sampling window; "
     "swap in use (SwapTotal - SwapFree)",
     "warning at >= 1 page/s; critical at >= 256 pages/s (1 MiB/s with 4 KiB pages); "
     "info when swap holds pages but none moved",
     "any swap traffic means memory is short, and it delays the host allocations "
     "that host-to-GPU copies wait on",
     "Linux kernel documentation, The /proc Filesystem (meminfo): "
     "https://docs.kernel.org/filesystems/proc.html"},
    {"memory.pinned_excess", Layer::kMemory,
     "page-locked memory: the larger of meminfo Mlocked and the sum of VmLck+VmPin of every "
     "process, against MemTotal",
     "warning above 25% of MemTotal; critical above 50%",
     "pinned pages can be neither swapped nor reclaimed: pin_memory buffers of num_workers x "
     "prefetch_factor batches squeeze the page cache the loader reads through; "
     "our threshold, no public source gives one",
     "PyTorch documentation, torch.utils.data (DataLoader): "
     "https://pytorch.org/docs/stable/data.html"},
    {"memory.rss_growth", Layer::kMemory,
     "a recorded run: the Theil-Sen slope (median of pairwise slopes, robust to ~29% outliers) "
     "of the process tree's RSS after the first third of the training (the hook's first to "
     "last step, without the exit's teardown: trailing samples below 90% of the median of the "
     "5 before); the middle and last thirds fitted apart; each process's own slope to name the "
     "one that grows; the memory still available at the end; and where the hook's own "
     "allocation tracing placed it (the line, the container holding the tensors)",
     "when the last two thirds grow, the last third at >= 0.7x the middle third's pace "
     "(bytes per step when the hook reports steps, so slower steps are not a plateau), "
     "the growth exceeds 3 sigma of the noise, and either exceeds 10% of the RSS it started "
     "from and 64 MiB or the memory left runs out within 24 h at this slope; critical when it "
     "runs out within 1 h, else warning",
     "a leak is RSS that 'only rises' when sampled every 30 s (tensors appended to a "
     "list grew to 100+ GB in 15 h before the OOM kill). Loading a model, filling caches and "
     "starting workers also raise RSS, then plateau: so the first third is left out and a "
     "slowing last third is not a leak. 10% / 64 MiB / 24 h are ours: below them a rise is "
     "allocator noise or harmless"},
    {"memory.oom_killed", Layer::kMemory,
     "a recorded run: whether the kernel's OOM killer ended the job (vmstat / cgroup oom_kill "
     "counted a kill of the job's tree, or the kernel log's OOM report names it); the peak, "
     "from the sampled tree RSS or, when the kill came before a sample saw it, from what the "
     "kernel kept (the OOM report's RSS of the victim, else the memory cgroup's peak), or "
     "'unknown', never 0; and the limit",
     "critical whenever it happened",
     "a slow leak ends in an OOM kill, and in distributed training one killed rank "
     "hangs all the others; nothing else the run shows matters more",
     "Linux kernel documentation, Control Group v2 (memory.events oom_kill): "
     "https://docs.kernel.org/admin-guide/cgroup-v2.html"},
    {"io.device_saturated", Layer::kIo,
     "a recorded run: iostat -x figures of the disk behind the data, per interval: %util, await "
     "(ms), read kB/s; doctor: each physical disk over its sampling window (a warning at most: "
     "one window is not sustained)",
     "an interval is saturated at %util >= 90 and await >= 20 ms; critical when >= 30% of the "
     "intervals are (at least 3), warning when 3 in a row are; one level lower when the hook "
     "measured that the steps do not wait for data (< 10% of step time)",
     "'%util near 100 for long, await over tens of ms: the bottleneck is most likely "
     "the storage'. 90 / 20 ms put numbers on 'near 100' and 'tens of ms'; 3 intervals in a row "
     "separate sustained from a blip; 30% of the run makes it the job's condition, not a "
     "burst (a checkpoint write, an epoch start)",
     "Linux kernel documentation, I/O statistics fields: "
     "https://docs.kernel.org/admin-guide/iostats.html"},
    {"io.cpu_bound_loader", Layer::kIo,
     "a recorded run: per interval, each loader worker's (a process below a rank) CPU and its "
     "run-queue delay (/proc/PID/schedstat: runnable, waiting for a CPU) over the interval, the "
     "data disk's %util, and what the workers were caught reading (/proc/PID/fd: an archive, a "
     "compressed file, a directory); run files without the run delay: the workers' CPU against "
     "the CPUs the ranks leave them, and the host's CPU busy share",
     "when in >= 50% of the intervals the workers were on a CPU or waiting for one >= 80% "
     "of the time, >= 50% on it, while the data disk was < 50% busy; in older run files, when "
     "the workers use >= 90% of those CPUs in >= 50% of the intervals, or the host is >= 95% "
     "busy in >= 50% of them while steps wait >= 10% for data; critical when the steps wait "
     ">= 30% (io.input_bound's critical level), info when they were measured and do not, else "
     "warning; not reported beside a warning or critical io.cpu_contention; info when "
     "io.cold_cache explains the waits",
     "decompressing a zip on every read made 'the CPU the new bottleneck', with two "
     "workers at 70% of a CPU each on a quiet 2-CPU host and an idle disk: CPU time alone "
     "misses it, CPU time plus the time spent waiting for a CPU is the whole interval. A worker "
     "that sleeps on the disk is neither. Workers that already have every CPU cannot be helped "
     "by more workers (num_workers=32 only blew up memory). 80% / 50% / half the run "
     "are ours",
     "PyTorch documentation, torch.utils.data (DataLoader): "
     "https://pytorch.org/docs/stable/data.html"},
    {"io.cpu_contention", Layer::kIo,
     "a recorded run: per interval, the host's busy CPU (/proc/stat) minus what the job's tree "
     "used, as a share of all CPUs; the top processes outside the tree by CPU (their stat, read "
     "in intervals where the tree left >= half a CPU busy); the workers' run delay; the data "
     "wait share",
     "when processes outside the tree take >= 25% of the CPUs in >= 50% of the intervals; "
     "critical when the steps wait >= 30% for data, warning at >= 10%, info when they were "
     "measured and do not",
     "a common first diagnosis goes wrong this way: a throttled-disk job looked CPU-bound only "
     "because another process held the CPUs. The loader is not the cause then, and no loader "
     "setting fixes it: the CPUs must come back. 25% (half a CPU of two) and half the run are "
     "ours"},
    {"io.loader_config", Layer::kIo,
     "a recorded run: the DataLoader settings the hook reported per rank (num_workers, "
     "pin_memory, prefetch_factor, persistent_workers), epoch lengths and the first step's "
     "wait of each epoch. One finding per problem, named in the 'problem' evidence",
     "num_workers_zero: critical when steps wait >= 30% for data, info when measured below, "
     "else warning; pin_memory_off (GPU job): warning; workers_not_persistent: warning when "
     "epochs average < 30 s or the measured restart wait is >= 5% of an epoch; "
     "prefetch_queue_large: warning when num_workers x prefetch_factor > 64; "
     "workers_exceed_cpus: warning when the ranks' workers outnumber the CPUs",
     "num_workers, prefetch_factor, pin_memory and persistent_workers decide the "
     "pipeline; num_workers x prefetch_factor is the prefetch queue, too long eats memory and "
     "swaps; start at half the CPUs, prefetch_factor=4, persistent_workers=True (rebuilding "
     "workers each epoch adds minutes); pin_memory=True lets the DMA copy directly. "
     "30 s, 5% and 64 are ours",
     "PyTorch documentation, torch.utils.data (DataLoader): "
     "https://pytorch.org/docs/stable/data.html"},
    {"io.input_bound", Layer::kIo,
     "a recorded run: the hook's steps: time next(loader) took over the whole step, per rank "
     "and overall, each rank's first step (worker start-up) left out; the worst rank decides, "
     "since in synchronous training every rank waits for it"
     "; a profiler trace (stallscope trace): the union of the data loader's "
     "enumerate(DataLoader)...__next__ ops over the kept ProfilerSteps' time, any number of steps, "
     "or the data_loading share of the trace's critical path (code.cpu_bound_step), the larger"
     "; when the files the loader was caught reading are on a network file system (mountinfo "
     "type of each open file), io.remote_fs is named as the cause, with the per-file cost the "
     "steps show (step time x num_workers / batch_size) and stallscope pack in next",
     "warning at >= 10% of step time; critical at >= 30%; at least 5 steps",
     "data movement that outgrows the forward pass is the first thing to fix; a GPU "
     "that waits 30% of every step would run 1.4x faster without the wait. Below 10% the loader "
     "overlaps well and the rest is hand-off noise. 30% matches network.comm_ratio_high; the "
     "design's example (48%) is critical",
     "PyTorch Performance Tuning Guide: "
     "https://pytorch.org/tutorials/recipes/recipes/tuning_guide.html"},
    {"io.small_files", Layer::kIo,
     "stallscope dataset: files under 1 MiB (the walk's size histogram), their count and "
     "share of the files",
     "at >= 10,000 small files that are >= 50% of the files; critical at >= 100,000 or "
     "when the data is on a remote file system, else warning",
     "500k images of a few hundred KB in folders crush IOPS to tens of MB/s, "
     "and packing them into large files (TFRecord) made training ~1.8x faster with 70% less IO "
     "wait. 1 MiB is the usual fio block size (bs=1M): a smaller file is one small random "
     "read plus an open. At a modest floor of 5000 IOPS, 10,000 files cost >= 2 s per epoch "
     "and 100,000 cost >= 20 s; below 10,000 the cost is noise (our threshold)"},
    {"io.remote_fs", Layer::kIo,
     "stallscope dataset: the file system under the path (mountinfo type and statfs magic: nfs, "
     "lustre, gpfs, cifs/smb, ceph, beegfs, 9p, network FUSE daemons), the open and stat "
     "latency p50/p99 measured on a random sample of up to 1000 files; the cost per epoch "
     "from the sample's open p50 and the walk's file count and bytes: files x p50 / loader "
     "workers (8 unless given), against files / 5000 IOPS on a local disk, and the time "
     "saved by packing into 256 MiB shards (one open per shard); the mount's options from "
     "mountinfo, for the client's own knob in next (NFS actimeo/nconnect/rsize, Lustre "
     "stripe count, the cache options of s3fs, gcsfuse, goofys, mountpoint-s3, blobfuse2, "
     "rclone and sshfs)",
     "whenever the data is remote; critical when io.small_files' condition holds too, "
     "warning at >= 1000 files, info for fewer (a few large files stream well)",
     "remote IO pays in metadata (open, permission checks, listing), not in large "
     "sequential reads; walking the dataset every epoch on NFS is 'a disaster'; copy to local "
     "SSD or pack into large files. 1000 files is ours"},
    {"io.cold_cache", Layer::kIo,
     "stallscope dataset: page-cache residency (mmap + mincore, as vmtouch) of every file, or "
     "of a uniform random sample of 10,000 when there are more; the time the uncached part "
     "takes at a modest storage floor (500 MB/s sequential plus one 5000-IOPS read per small "
     "file). A recorded run: the hook's epochs (epoch 0 against the median later epoch) and "
     "the data disk's reads in each: the difference of the boundary samples taken at each "
     "epoch mark (the disk's sectors read, no more than the tree's read_bytes), or in run "
     "files without them the interval samples' rkB/s shared pro rata; the data disk is "
     "--data's, else the device behind what the workers read",
     "dataset: fires when < 20% of the bytes are cached and that uncached read takes >= 1 s at "
     "the floor; warning when the data fits in half the RAM (epoch 1 will be slower than the "
     "rest), info when it does not (every epoch reads storage). A run: fires when epoch 0 took "
     ">= 1.5x the median later epoch and >= 2 s more, read >= 16 MiB from the data disk, and "
     "the later epochs read < 20% of its rate; warning. io.input_bound and io.cpu_bound_loader "
     "drop to info when the steps after epoch 0 wait < 10% for data; when they wait more, "
     "io.input_bound is judged on the steps after epoch 0 alone",
     "a first epoch abnormally slow followed by normal ones is the cold/warm page "
     "cache difference, not a program bug. 20%, 1 s, half the RAM, 1.5x, 2 s and 16 MiB are "
     "ours: a cold cache shows as a first epoch clearly slower that read what the later ones "
     "did not"},
    {"io.storage_slow", Layer::kIo,
     "stallscope bench io PATH: sequential 1 MiB reads (O_DIRECT, io_uring; 4 jobs at queue "
     "depth 1 by default, as the usual fio line) in MB/s and random 4 KiB reads in IOPS on a "
     "test file under PATH",
     "critical when sequential reads are below 500 MB/s or random 4 KiB reads below 5000 IOPS "
     "(--min-seq-mbps, --min-rand-iops change them)",
     "'if sequential reads are below 500MB/s or random 4K read IOPS below 5000, this "
     "storage is most likely unfit as a direct source of training data'; measured as its fio "
     "line does (--bs=1M --direct=1 --numjobs=4)"},
    {"network.wrong_interface", Layer::kNetwork,
     "NCCL_SOCKET_IFNAME and NCCL_IB_HCA in NCCL's syntax (comma list, prefixes unless '=', '^' "
     "excludes, mlx5_0:1 names a port), GLOO_SOCKET_IFNAME (exact names) against the interfaces "
     "and RDMA ports of the host (cluster: of each rank's node, naming the rank); the interface "
     "the kernel routes MASTER_ADDR (and doctor --peer "
     "hosts) through, from a connected UDP socket's source address. nccl-log: the interfaces "
     "an NCCL log says were chosen (Bootstrap, NET/Socket, the NET/IB out-of-band one)",
     "critical when nothing usable is left (every name missing, down, without an address, "
     "loopback or a Docker bridge; every active port excluded or down); warning when some "
     "names are bad but others usable, or when the route to the master leaves through an "
     "interface the variable does not allow. nccl-log: critical when a chosen interface is "
     "loopback, a docker/br-/veth/virbr bridge or in 172.17.0.0/16 and the job spans hosts "
     "(hosts in the log, NCCL's nNodes, or NET connections); info on one host",
     "NCCL picks a routed interface on its own and on multi-NIC machines often the "
     "wrong one, so traffic goes to the wrong subnet; the fix is NCCL_SOCKET_IFNAME=ib0/eth0. "
     "A name that matches nothing makes NCCL fail or fall back to lo/docker0; an HCA list with "
     "no active port makes NCCL fall back to sockets",
     "NCCL documentation, Environment Variables: "
     "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html"},
    {"network.container_bridge", Layer::kNetwork,
     "the interfaces a process sees: a veth (iflink differs from ifindex, no device) or an "
     "address in Docker's bridge range 172.17.0.0/16, no host NIC, bond, IPoIB or docker0 in "
     "sight (no host network), plus the container clues (/.dockerenv, cgroup path); the job's "
     "size from WORLD_SIZE, LOCAL_WORLD_SIZE, NODE_RANK/GROUP_RANK and the route to MASTER_ADDR",
     "critical when the job spans hosts (WORLD_SIZE > LOCAL_WORLD_SIZE, NODE_RANK > 0, or "
     "MASTER_ADDR reached off this host); warning when WORLD_SIZE > 1; info otherwise",
     "on Docker's default bridge network other hosts cannot reach the container's "
     "172.17.0.x address ('Connect to 172.17.0.x timed out' is not a code problem); use "
     "--network host or hostNetwork. One host's ranks share the container, so only a multi-host "
     "job breaks",
     "NCCL documentation, Troubleshooting: "
     "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html"},
    {"network.rdma_unused", Layer::kNetwork,
     "InfiniBand/RoCE ports in state ACTIVE (/sys/class/infiniband) against NCCL_IB_DISABLE "
     "and NCCL_NET in the job's environment (an NCCL log that shows NET/Socket: nccl-log, "
     "doctor --nccl-log, run with NCCL_DEBUG_FILE or --nccl-log)",
     "warning when at least one port is ACTIVE and NCCL_IB_DISABLE is set to anything but 0, "
     "or NCCL_NET=Socket. nccl-log: when the log's connections between hosts go via "
     "NET/Socket while the log lists RDMA devices (NET/IB : Using) or, for the log's lines of "
     "this host, its ports are ACTIVE (also when NCCL saw no device: a container without "
     "/dev/infiniband), or NET/IB could not open its device and NCCL fell back to sockets; "
     "critical from 8 hosts. On signs alone, before any channel line (an IPoIB interface such "
     "as ib0 under the sockets with libibverbs missing; libfabric's efa provider output empty "
     "list, No EFA devices): at most a warning. aws-ofi-nccl on libfabric's tcp, sockets or udp "
     "provider ('NET/OFI Selected Provider is tcp') with the plugin's channels between hosts "
     "counts as sockets",
     "RDMA/RoCE bypasses the kernel's TCP stack with far lower latency and CPU cost; "
     "beyond 8 nodes it is 'basically required'; keep NCCL_IB_DISABLE=0 when using "
     "RDMA. Warning, not critical: at 4 nodes or fewer TCP 'can still cope'",
     "NCCL documentation, Environment Variables: "
     "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html"},
    {"network.port_errors", Layer::kNetwork,
     "growth over the sampling window (doctor's interval; the whole run for run/report) of "
     "/proc/net/dev errors (errs+fifo+frame, errs+fifo+colls+carrier) and drops per NIC "
     "(loopback left out), and of RDMA port counters symbol_error, port_rcv_errors, link_downed "
     "(and, in doctor, excessive_buffer_overrun_errors and local_link_integrity_errors); "
     "doctor also reads the kernel log for mlx5/InfiniBand link-down, lost-carrier and "
     "cable-unplugged messages since boot (source kernel_log in the evidence)",
     "NIC: warning at >= 1 error, or >= 10 drops that are >= 0.1% of the packets; critical at "
     "errors >= 0.1% or drops >= 1% of the packets. RDMA: warning when symbol or receive errors "
     "(or buffer overrun or link integrity errors) grow, critical when link_downed grows (the "
     "link flapped); a link-down message in the "
     "kernel log: warning",
     "packet loss makes TCP retransmit and NCCL time out, and incast overflows "
     "switch buffers even below full bandwidth. A healthy link counts no CRC/frame errors at "
     "all, hence any one; TCP's rate falls as 1/sqrt(loss), so 0.1% already costs severalfold. "
     "Drops also count unhandled protocols, hence the 10-drop floor; the levels are ours"},
    {"network.congestion", Layer::kNetwork,
     "growth over doctor's interval of each NIC's driver statistics (the SIOCETHTOOL ioctl, as "
     "ethtool -S): pause frames received (link-level and per-priority PFC, a total beside its "
     "priorities counted once), ECN-marked RoCE packets, CNPs handled; only the counter names "
     "mlx5, bnxt_en/bnxt_re, ice/i40e and ixgbe document; and of each RDMA port's "
     "/sys/class/infiniband counters: port_xmit_wait against port_xmit_data, and the hw_counters "
     "np_ecn_marked_roce_packets and rp_cnp_handled; in `run`/`report`, the same over the run",
     "warning when any of the three grows at >= 10/s, or when port_xmit_wait grows at >= 1e6 "
     "ticks/s and >= 0.1 tick per 4-byte word sent; critical at >= 1000 pause frames/s or >= 1 "
     "tick per word sent; over a run, the summary adds the job's sync-wait share in the "
     "intervals with congestion against the others and says the congestion comes with the "
     "all-reduce phases when Pearson's r of the two series is >= 0.5 (at least 4 intervals)",
     "a NIC that receives pause frames or CNPs is being told by the fabric to slow down: the "
     "switch's buffers fill (incast, oversubscribed uplinks, a PFC storm from a stuck host), so "
     "collectives slow or time out while this host is healthy. A quiet lossless fabric sends "
     "none; a few per second are normal bursts, hence the floor; at thousands a second a port is "
     "paused most of the time (a storm). On InfiniBand, credits play the part of pause frames: "
     "port_xmit_wait counts ticks in which the port had data and no credits. A tick is a "
     "multiple of the symbol time that each chip picks (Quantum switches count every 8 bytes "
     "of the port's time), so it is judged against the words the port sent in the same window, "
     "not turned into seconds; the floor in ticks/s keeps an idle port's few waits out. The "
     "levels are ours",
     "NVIDIA, RoCE congestion control and PFC: https://docs.nvidia.com/networking/ "
     "(mlx5 ethtool counters: rx_prio_pause, rp_cnp_handled, np_ecn_marked_roce_packets); "
     "NVIDIA ibdiagnet manual, Congestion Assessment on InfiniBand Links (xmit_wait and the "
     "tick)"},
    {"network.drops_buffer", Layer::kNetwork,
     "growth over doctor's interval of each NIC's receive buffer and ring drops (mlx5 "
     "rx_out_of_buffer, rx/tx_discards_phy, rx_prioN_discards; virtio_net rx_drops / "
     "rxN_drops; a total beside its queues counted once) and of a cloud NIC's allowance "
     "counters (ena bw_in/bw_out/pps/conntrack/linklocal_allowance_exceeded); of each RoCE "
     "port's hw_counters/out_of_buffer (receive work requests not posted in time)",
     "warning at >= 10 over the window; critical at >= 100/s",
     "these drops happen on the host side, before the kernel sees the packet: the ring was full "
     "because the CPUs that serve the NIC's interrupts were busy (often with the loader), or the "
     "cloud instance's bandwidth or packet allowance was used up. TCP retransmits and NCCL "
     "stalls follow; the fix is on the host (ring size, interrupt placement) or the instance "
     "type, not the fabric. The levels are ours",
     "Linux kernel, mlx5 counters: https://docs.kernel.org/networking/device_drivers/ethernet/"
     "mellanox/mlx5/counters.html; AWS ENA, network performance metrics"},
    {"network.node_receive_slow", Layer::kNetwork,
     "report of several nodes' run files: per node, the bytes per second its job interface "
     "(the route to MASTER_ADDR, recorded at start) received in the samples whose interval "
     "holds gradient-sync waits of its ranks (stallscope.ddp), else steps; against the median "
     "of the other nodes'",
     "warning when a node received under 50% of the others' median while that median is at "
     "least 1 MB/s, each over at least 3 samples",
     "'the slowest node sets the ceiling'; NCCL picks a routed interface on "
     "its own and on multi-NIC machines often the wrong one, so one node's share may leave by "
     "a management NIC or a bridge. In synchronous "
     "data-parallel training every node sends and receives about the same bytes per step, so "
     "one node far below the others carries its share elsewhere or cannot take it in; half "
     "is ours, well outside the few percent that ring and tree schedules differ by; under 1 MB/s "
     "the interface is not what the job waits for"},
    {"network.nic_far_from_gpu", Layer::kNetwork,
     "the path between every GPU and NIC, as nvidia-smi topo -m names it (PIX, PXB, PHB, NODE, "
     "SYS), from each device's place in the sysfs PCI tree (/sys/bus/pci/devices resolved into "
     "/sys/devices/pci*) and its numa_node; the NICs the job uses from the NCCL log (doctor "
     "--nccl-log: NET/IB : Using, NET/Socket : Using), else NCCL_IB_HCA (HCAs, IB not disabled) "
     "or NCCL_SOCKET_IFNAME (interfaces), else every NIC; with an HCA present only HCAs count as "
     "a GPU's closest NIC",
     "warning when a GPU's nearest NIC among those the job uses is on a longer path than its "
     "closest NIC on the host, or when a GPU's closest HCA is SYS (across the link between "
     "sockets)",
     "NCCL pairs each GPU with its nearest NIC and uses GPUDirect RDMA only up to "
     "NCCL_NET_GDR_LEVEL (PXB by default): across sockets (SYS) it is off and every transfer "
     "is staged through host memory and crosses the inter-socket link, which caps inter-node "
     "bandwidth well below the NIC's line rate; a NIC list that leaves out a GPU's own rail "
     "sends its traffic across switches and host bridges to another GPU's NIC",
     "NCCL documentation, Environment Variables (NCCL_NET_GDR_LEVEL, NCCL_IB_HCA): "
     "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html; NCCL "
     "src/graph/paths.cc (PATH_PIX..PATH_SYS)"},
    {"network.mtu_mismatch", Layer::kNetwork,
     "net probe: the MTU of the local interface the route uses, the path MTU (largest UDP "
     "payload with don't-fragment set that the server acknowledges, + 28 bytes of IPv4/UDP "
     "headers; the kernel's IP_MTU), and the MTU of the server's interface",
     "warning when the three differ; critical when the path MTU is below the local MTU while "
     "the kernel still believes the local MTU (no ICMP told it): full-size packets vanish. "
     "cluster: warning when the MTU of the interface in use (NCCL_SOCKET_IFNAME's, else the "
     "route's), or of a same-named NIC, differs between nodes",
     "MTU 1500 against 9000 jumbo frames gives 'small pings pass, large pings fail'; "
     "check with ping -M do -s 1472. TCP survives through MSS negotiation, datagrams and RoCE "
     "do not",
     "NCCL documentation, Troubleshooting: "
     "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html"},
    {"network.connect_failed", Layer::kNetwork,
     "nccl-log: NCCL WARNs that give up on a peer: 'Connect to ADDR failed : REASON', "
     "'PollConnect to ADDR failed with error', 'Call to recv from ADDR failed', 'Connection "
     "closed by remote peer ADDR', 'exceeded timeouts/retries'; the peers, reasons and counts. "
     "Not 'No interface found in the same subnet' (no connect was tried: "
     "network.root_unreachable)",
     "critical whenever one is logged; INFO 'Call to connect returned ..., retrying' alone does "
     "not fire (NCCL waits for a peer that is not listening yet)",
     "'NCCL init timeout' and 'connect timed out / socket read timed out' are the two "
     "most common errors, usually container networking (172.17.0.x) or a firewall rather than "
     "hardware; a WARN means NCCL gave up and the job cannot train",
     "NCCL documentation, Troubleshooting: "
     "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html"},
    {"distributed.nccl_version_mismatch", Layer::kDistributed,
     "nccl-log: the 'NCCL version X' each process printed (a bare line goes to the process "
     "printed just before it), NCCL's own 'Mismatched NCCL version detected' WARN, and the "
     "version in PyTorch's lines (its error text '..., NCCL version X', ProcessGroupNCCL's "
     "'NCCL version: X'); for a process that printed no version line (a debug file before "
     "2.22, where the version went to stdout; an excerpt), the versions its line forms allow "
     "(forms only some versions print, from the first NCCL tag that prints each to the last: "
     "'Bootstrap : Using [0]IF' 2.4.8-2.7, 'Channel NN : ... via' 2.7-2.13, 'Init START' "
     "2.18.3+, ...); the evidence says "
     "which lines each version was read from",
     "critical when two or more versions appear (forms that allow a version printed elsewhere "
     "count as it), or NCCL warned of a mismatch",
     "NCCL's wire protocol between ranks is only guaranteed within one version: mixed builds "
     "hang or fail at init (NCCL checks it from 2.2x). The usual advice to compare the hosts "
     "(cluster) applies: every host must run the same image",
     "NCCL documentation, Troubleshooting: "
     "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html"},
    {"distributed.init_incomplete", Layer::kDistributed,
     "nccl-log: per rank (host:pid and [cudaDev]), 'Init START' against 'Init COMPLETE' lines; "
     "before 2.18 (no START), a process with NCCL INFO lines and no COMPLETE at all, only on "
     "positive evidence that a rank stopped: other ranks completed, a timeout (NCCL's or "
     "PyTorch's watchdog), an error the job printed (unhandled system error, PyTorch's NCCL "
     "error), connect retries, lost peers, or a WARN NCCL did not carry on from (not libibverbs "
     "or a net plugin missing, not an IB device or plugin NCCL fell back from)",
     "critical on that evidence, info (with consequence_of) beside a critical cause, which "
     "lists it in its consequences; a log that just ends (an Init START with no COMPLETE and "
     "nothing after) is a note, 'init state unknown', never more; not judged without INFO "
     "lines (NCCL_DEBUG=WARN). Verdict order over an NCCL log's critical findings, cause before "
     "consequence: nccl_cuda_failure, oob_socket_failed, root_unreachable, duplicate_address, "
     "wrong_interface, link_local_interface, nccl_version_mismatch, nccl_setup_error, "
     "nccl_usage_error, nccl_error (a failure whatever its words; among these, the first in "
     "the log), connect_timeout, connect_failed (info beside another process's failure, or an "
     "earlier one of its own, that is no lost peer), rdma_unused, then init_incomplete",
     "an NCCL init that never finishes is one of the two most common distributed "
     "failures; one missing rank stalls every other rank until the collective times out",
     "NCCL documentation, Troubleshooting: "
     "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html"},
    {"distributed.nccl_cuda_failure", Layer::kDistributed,
     "nccl-log: WARNs of the GPU side of NCCL's set-up: 'Cuda failure 'initialization error'', "
     "'invalid argument', 'failed to open CUDA IPC handle', peer access; and any WARN that "
     "was a failure (network.nccl_error says how that is judged) after which NCCL returned "
     "ncclUnhandledCudaError, whatever its words; per host and device, with the first FILE:LINE",
     "critical whenever one is logged",
     "NCCL cannot run a collective without its buffers on the GPU and, within a host, the "
     "peers' memory handles: a driver/runtime mismatch, a GPU in a bad state or containers "
     "that cannot share IPC handles stop init, and every other rank waits",
     "NCCL documentation, Troubleshooting: "
     "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html"},
    {"network.oob_socket_failed", Layer::kNetwork,
     "nccl-log: 'Socket creation failed : Address family not supported' (2.3-2.23), 'Call to "
     "socket failed' (2.24+), or NET/IB listing devices with an empty out-of-band interface "
     "('; OOB :') while IB is not disabled",
     "critical whenever one is seen",
     "IB connections start with a handshake over a plain socket on the OOB interface; without "
     "one no IB connection is made and init fails",
     "NCCL documentation, Troubleshooting: "
     "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html"},
    {"network.root_unreachable", Layer::kNetwork,
     "nccl-log: 'No interface found in the same subnet as remote address A<port>' (then 'bind "
     "failed'): the root, the local addresses the process printed, the FILE:LINE",
     "critical whenever one is logged",
     "NCCL picks the interface to reach the bootstrap root by subnet; with none in the root's "
     "subnet it cannot connect, and MASTER_ADDR/NCCL_COMM_ID names the wrong address or "
     "NCCL_SOCKET_IFNAME the wrong interface",
     "NCCL documentation, Troubleshooting: "
     "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html"},
    {"network.connect_timeout", Layer::kNetwork,
     "nccl-log: connects that time out and retry ('Call to connect returned Connection timed "
     "out, retrying', 2.24+ '... retrying (N/M)', 'No route to host', 'exceeded timeouts'), "
     "with the peers, the count and the attempts",
     "warning on such retries or failures; critical when some rank then never finished init "
     "(distributed.init_incomplete's evidence)",
     "a refused connect returns at once (nobody listens yet, which NCCL waits out); a timeout "
     "means packets are dropped or unroutable: a firewall, a security group, a wrong route",
     "NCCL documentation, Troubleshooting: "
     "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html"},
    {"network.duplicate_address", Layer::kNetwork,
     "nccl-log: the first bootstrap address (the one NCCL listens on) of every process, by host",
     "critical when two hosts announce the same address (any range; loopback is "
     "network.wrong_interface's)",
     "a NAT or a container bridge gives every host the same address: each rank that dials it "
     "reaches itself or nobody, and init hangs (container networking)",
     "NCCL documentation, Troubleshooting: "
     "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html"},
    {"network.link_local_interface", Layer::kNetwork,
     "nccl-log: interfaces NCCL chose for bootstrap, NET/Socket and IB's OOB with a "
     "link-local address (fe80::, 169.254.x.x) or a tunnel device's name (ip6tnl, tunl, sit, "
     "gre)",
     "critical when used: the first bootstrap interface, or a NET/Socket device the channels "
     "run over ('via NET/Socket/N') on a job of several hosts; warning when the channels' "
     "device is not shown on such a job; info when only listed, or on one host",
     "a link-local address reaches only its own link and a tunnel adds a hop NCCL does not "
     "expect; bootstrap on one fails across hosts",
     "NCCL documentation, Environment Variables: "
     "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html"},
    {"network.net_plugin_fallback", Layer::kNetwork,
     "nccl-log: a net plugin asked for or present that NCCL could not use, and what it used "
     "instead: NCCL_NET_PLUGIN's library not found ('Plugin load (X) returned', 'All attempts "
     "to load', 'Could not find: X'), a library there that does not load (the loader's error), "
     "a plugin whose init failed ('Failed to initialize NET plugin', aws-ofi-nccl's 'Failing "
     "initialization'); the default libnccl-net.so absent is routine and not raised",
     "warning whenever one is seen (the job runs, on NCCL's internal IB or sockets instead of "
     "the plugin's transport; network.rdma_unused grades the sockets by scale)",
     "a plugin (aws-ofi-nccl for EFA, the HPC-X/SHARP plugin) is how NCCL reaches some fabrics "
     "at all; when it fails NCCL says so in one INFO line and goes on over what it has, often "
     "TCP sockets, many times slower",
     "NCCL documentation, Environment Variables (NCCL_NET_PLUGIN): "
     "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html"},
    {"distributed.nccl_warning", Layer::kDistributed,
     "nccl-log: every NCCL WARN that was no failure (NCCL carried on from it: its process "
     "completed init after it, or printed more; or nothing shows either way) and that none of "
     "the other rules reads nor is harmless on its own (libibverbs or a net plugin missing), "
     "each with its first FILE:LINE, who printed it, its count and what the process did after "
     "it",
     "info whenever one is left: a WARN that was a failure is raised by network.nccl_error, "
     "distributed.nccl_setup_error, code.nccl_usage_error or distributed.nccl_cuda_failure "
     "instead, never both",
     "a WARN NCCL went on from did not stop the job; it is listed so a reader of the log knows "
     "it was seen and judged",
     "NCCL documentation, Environment Variables: "
     "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html"},
    {"network.nccl_error", Layer::kNetwork,
     "nccl-log: a WARN that was a failure (an error-return line 'file:N -> R' of its thread "
     "followed it, the process aborted before completing init, stopped in init while another "
     "completed init or lost it as a peer, or the job's error report followed it with none of "
     "its own lines between; and no Init COMPLETE of the process followed) that no other "
     "critical finding quotes, raised in NCCL's network code: transport/net*, coll_net, "
     "misc/socket, the verbs, mlx5 and GDR wrappers, the net plugin loader, a plugin's own "
     "'NET/...' lines; bootstrap and the proxy when they returned ncclSystemError or the WARN "
     "names a socket, an interface, a connection or a peer; ncclRemoteError from anywhere",
     "critical; per process only its first failure (the later ones followed from it); one "
     "finding, the first in the log summarised and quoted with host, rank, process and time",
     "NCCL prints its own words for each check that fails, and net plugins and launchers add "
     "more: a rule per message never catches up, where NCCL raised it and what it returned do",
     "NCCL source, src/include/checks.h (NCCLCHECK's error-return lines) and debug.cc (the "
     "WARN prefix): https://github.com/NVIDIA/nccl"},
    {"distributed.nccl_setup_error", Layer::kDistributed,
     "nccl-log: a WARN that was a failure (as network.nccl_error judges it) that no other rule "
     "reads, raised in NCCL's set-up of the ranks: init.cc, bootstrap.cc and proxy.cc (except "
     "where network.nccl_error takes them), the topology (graph/), shared memory (transport/shm, "
     "misc/shmutils), P2P, NVML, registration; a rank outside the world size, two processes "
     "claiming one rank, ranks that disagree on the world size",
     "critical; per process only its first failure; one finding, the first summarised",
     "the ranks must agree on who they are and the host must give NCCL what it asks (shared "
     "memory, the GPUs' topology) before any byte moves: a failure there stops every rank",
     "NCCL source, src/init.cc and src/bootstrap.cc: https://github.com/NVIDIA/nccl"},
    {"code.nccl_usage_error", Layer::kCode,
     "nccl-log: a WARN that was a failure (as network.nccl_error judges it) that no other rule "
     "reads, raised where NCCL checks how it is called: enqueue.cc, misc/argcheck.cc, group.cc "
     "(a send to self with no receive, a datatype or root out of range, streams in a group "
     "captured differently)",
     "critical; per process only its first failure; one finding, the first summarised",
     "the caller asked NCCL for something it refuses: no change to the network or the hosts "
     "fixes it, the job's code does",
     "NCCL source, src/enqueue.cc and src/misc/argcheck.cc: https://github.com/NVIDIA/nccl"},
    {"distributed.straggler", Layer::kDistributed,
     "a recorded run with stallscope.ddp(model): per step and rank, the wait in gradient "
     "all-reduce (each bucket from launch to completion, overlaps counted once); for each step "
     "every rank reported, the rank that waited least and how much less than the median of the "
     "others; each rank's first 2 steps left out; with the hook's bucket records, the share of "
     "the gradient buckets it entered last and the others' wait for it there; cause compute, "
     "input, or host_cpu when its process waited for a CPU 20% of the time or more, 10 points "
     "beyond the others' median; from profiler "
     "traces of two or more ranks "
     "(stallscope trace): each collective matched across the ranks (the n-th of its process "
     "group or stream in a step), clocks aligned on the collectives' ends, the rank that "
     "starts it last and how long the others wait for it; the ranks whose late arrivals cost "
     "the others 15% of the steps' time, the cause from what they did since their previous "
     "collective against the others (compute, input, sync, host launch, a late step start); "
     "traces with no collective matched: the rank whose compute-kernel time is longest, "
     "against the others' median, by the same 15% / 30%",
     "when one rank is the least-waiting by more than 15% of the step in at least 2 of 3 "
     "compared steps (>= 5) and the others wait for it more than 15% of a step on average; "
     "critical at 30%",
     "in synchronous training every step waits for the slowest GPU (one V100 "
     "among A100s sets the pace). Step time is equal across ranks, so the sync wait names the "
     "rank: the straggler launches its all-reduce last and waits least; in a trace it is the "
     "last to start the collective's kernel, which every other rank's kernel sits in until "
     "then (a last arrival under 20 us, or twice the ends' spread, is launch jitter). 15% is "
     "the issue's threshold for 'waiting'. 2 steps in 3 separates sustained from jitter: ranks "
     "that share "
     "oversubscribed CPUs trade places as the scheduler runs one or the other (measured: 7 of "
     "12 steps for a healthy 2-rank job on 2 busy CPUs, 11 of 12 for a rank slowed 200 ms)"},
    {"distributed.rank_died", Layer::kDistributed,
     "a recorded run whose ranks said hello to the hook: each rank's end, from `run --procs`'s "
     "launcher (its exit status or signal, the signals it then sent the others), the recorder "
     "(a pidfd per rank: the moment it ended), the hook (the exception that ended it or its "
     "DataLoader, through sys.excepthook and stallscope.loader's iterator; Python's exit) and "
     "the kernel's OOM reports; the steps it finished (a ring in shared memory keeps those not "
     "yet sent) and where the other ranks were at that moment",
     "critical for the first rank that ended by a signal, a non-zero status, an exception or "
     "without Python's exit, unless the launcher had already ended it; none when every rank "
     "was ended at once (within 2 s) by SIGINT, SIGTERM or SIGHUP (a stop someone asked for), "
     "or after a hang was found; an OOM kill is memory.oom_killed instead",
     "in synchronous training one worker's death stops the job: every other rank waits in its "
     "next collective until a timeout or the launcher ends it, and their errors (timeouts, "
     "broken pipes, SIGTERM) are consequences. The first to end is the cause; the launcher's "
     "signals are told apart by its own reports, not by guessing from times",
     "https://pytorch.org/docs/stable/elastic/errors.html"},
    {"distributed.hang", Layer::kDistributed,
     "a recorded run where no rank finished a step for --hang-after (default the larger of 60 s "
     "and 20x the median step): two looks at least 3 s apart at each rank's Python stacks "
     "(faulthandler "
     "on a real-time signal the hook armed), its /proc state, wchan and CPU time, and whether "
     "it waits in a gradient all-reduce (the hook's ring); with `stallscope hang DIR`, "
     "PyTorch's Flight Recorder dumps",
     "critical when every live rank is stuck: the same stack in both looks (where it has one) "
     "and either in a collective or using under 20% of a CPU between the looks; a rank whose "
     "stack moves or that uses a CPU outside a collective (an evaluation, a checkpoint) is not "
     "a hang, looked at again later; from Flight Recorder dumps (`stallscope hang`, or those "
     "the ranks of a `run` wrote): critical when the ranks of a process group diverge (one "
     "never entered the collective the others wait in, sizes or dtypes differ, a rank stopped "
     "completing what its peers completed), warning when every rank is stuck in the same one",
     "a hang is a rank stopped in its own code (a deadlock, a wait on a dead mount, an "
     "uneven number of batches) while the others wait in a collective for it: the ranks that "
     "wait are consequences, the one outside a collective is the cause. A spinning NCCL "
     "collective uses a CPU, so CPU time alone cannot tell a hang from work; the stack, taken "
     "twice, can: work moves, a hang does not. In the dumps, a collective's sequence number "
     "orders it in its group on every rank (as PyTorch's fr_trace matches them), so the rank "
     "that never reached the number the others are in is the one they wait for",
     "https://docs.python.org/3/library/faulthandler.html"},
    {"distributed.load_imbalance", Layer::kDistributed,
     "a recorded run with >= 2 ranks: the spread (max - min) across ranks of the mean compute "
     "time per step (step - data wait - sync wait; needs stallscope.ddp) and of the mean data "
     "wait, against the mean step",
     "warning when the compute spread exceeds 20% of a step (not reported when the busiest rank "
     "is already named distributed.straggler) or the data-wait spread exceeds 10%, and it is "
     "sustained: the rank with the most is over the least by that share of the step in at "
     "least 2 of 3 steps every rank reported (>= 5), as for distributed.straggler",
     "samples of very different sizes make per-step compute vary across GPUs and "
     "every rank waits for the slowest; 10% matches io.input_bound's warning level, 20% for "
     "compute leaves room for normal jitter; ours. 2 steps in 3 as for distributed.straggler: "
     "the spread of the means alone fired on a healthy 2-rank run on CI's 2 loaded CPUs, where "
     "a few slow steps or ranks trading places move the means"},
    {"distributed.scaling_poor", Layer::kDistributed,
     "stallscope scale: throughput (samples/s summed over ranks, steady steps) at each world "
     "size; speedup and efficiency against the smallest size; the Amdahl serial fraction",
     "warning when efficiency at the largest size is under 0.7, critical under 0.5; also when "
     "doubling from 4 or more ranks gains under 1.5x",
     "strong scaling of 3.2x on 4 GPUs is already good; 'if 8 GPUs give less "
     "than 1.5x of 4, go back to the communication ratio and IO instead of adding GPUs'. 0.7 "
     "leaves a margin below that good case"},
    {"network.comm_ratio_high", Layer::kNetwork,
     "stallscope scale: the step time at N ranks against the smallest size, (t_N - t_1) / t_N, "
     "the manual estimate of sync time / (compute + sync); the DDP hook's measured sync "
     "wait beside it; comm / (k * compute + comm) for gradient accumulation k = 2, 4, 8; a "
     "profiler trace "
     "(stallscope trace): communication kernels no compute kernel overlaps, over the kept "
     "ProfilerSteps' time (the GPU's active window without steps); with several ranks' "
     "traces only the transfer counts (from the last rank's start to the end), and a rank "
     "whose collectives are mostly waiting for the last rank gets no network finding",
     "warning over 30%, critical over 50%",
     "'over 30% the network is a clear bottleneck; at 5% RDMA gains little'; the "
     "manual method: time one step on 1 GPU and on N, the difference is mostly "
     "communication; gradient accumulation first, the network upgrade last"},
    {"memory.baseline_drift", Layer::kMemory,
     "doctor --baseline B.json: MemTotal, the cgroup memory limit and SwapTotal against the "
     "baseline saved by doctor --save-baseline on this host when it was healthy",
     "warning when a figure is more than --drift (default 10%) below its baseline or gone; "
     "critical at 50% or more below",
     "keep a baseline of every host so a slow drift is traced to the hour; "
     "SuperBench flags a node whose metric falls a set share below its baseline. 10% is "
     "above run-to-run noise of fixed figures; 50% means a part is missing (a DIMM, half the "
     "limit). Ours"},
    {"io.baseline_drift", Layer::kIo,
     "doctor --baseline B.json: each physical disk's size and, when the bench ran (--data "
     "without --quick) both then and now, its sequential MB/s and random 4 KiB IOPS",
     "warning when a figure is more than --drift (default 10%) below its baseline or gone; "
     "critical at 50% or more below; bench figures not measured now are not compared",
     "an epoch that grew from 10 to 18 minutes was a storage path changed by a "
     "'temporary optimization'; SuperBench's baseline comparison finds such a drift before the "
     "job does. The bench of doctor is short (2 s a phase), so 10% leaves room for its noise"},
    {"network.baseline_drift", Layer::kNetwork,
     "doctor --baseline B.json: each physical / IPoIB / bond NIC's link speed and MTU, each "
     "RDMA port's rate, against the baseline",
     "warning when a figure is more than --drift (default 10%) below its baseline or the "
     "interface is gone; critical at 50% or more below (100G renegotiated to 25G, MTU 9000 "
     "to 1500)",
     "an MTU that differs from the fabric's ('large pings fail, small ones pass') "
     "and a link that came up slower stall every all-reduce; a saved baseline shows the "
     "change. Ours"},
    {"io.loader_overhead", Layer::kIo,
     "stallscope ab --loader-workers N: steady steps/s (first 10% of steps left out) of CMD "
     "with its DataLoader rebuilt with num_workers=N against CMD as is",
     "warning when the degraded run is >= 10% faster (kAbMeaningfulChange)",
     "degraded comparison runs; 'much faster with num_workers=0' means worker "
     "start-up / IPC overhead or more workers than cores. 10% is ours: short CPU runs of the "
     "example job repeat within a few percent"},
    {"io.loader_needed", Layer::kIo, "stallscope ab --loader-workers N: the same step rates",
     "info when the degraded run is >= 10% slower; its next step depends on the data wait "
     "share of the run as is (>= 10%: still input-bound)",
     "slower without workers means the loader does real work and the data path "
     "matters. 10% as io.loader_overhead"},
    {"network.env_change", Layer::kNetwork,
     "stallscope ab --env NAME=VALUE with only NCCL_*/UCX_*/GLOO_*/FI_* variables: the same "
     "step rates",
     "warning when >= 10% faster with the change, info when >= 10% slower",
     "a change that makes the run much faster was touching the bottleneck; 10% ours"},
    {"code.env_change", Layer::kCode,
     "stallscope ab --env NAME=VALUE with any other variable (OMP_NUM_THREADS, ...): the same "
     "step rates",
     "warning when >= 10% faster with the change, info when >= 10% slower",
     "as network.env_change"},
    // gpu (analyze/host/gpu_rules.h): NVML through gpu/gpu_probe.h.
    {"code.util_misleading", Layer::kCode,
     "NVML utilization.gpu (share of time a kernel ran) against GPM SM activity "
     "(NVML_GPM_METRIC_SM_UTIL, Hopper and newer) of the same GPU: a snapshot's interval, or a "
     "run's means; SM occupancy, tensor and DRAM activity as evidence (a profiler trace's "
     "launch-bound steps are code.launch_bound)",
     "when utilization.gpu >= 80% while SM activity < 50%; critical below 25%. Not judged "
     "without GPM (older GPUs, drivers before R525): a note says so",
     "a GPU at 95% utilization with an epoch twice too long; utilization.gpu "
     "only says some kernel was resident during the sample period, not that the SMs worked "
     "(NVIDIA nvmlUtilization_t docs). 80% is 'looks busy', half the SMs idle is ours",
     "NVIDIA DCGM documentation, profiling metrics (SM activity): "
     "https://docs.nvidia.com/datacenter/dcgm/latest/user-guide/feature-overview.html"},
    {"code.launch_bound", Layer::kCode,
     "a profiler trace (stallscope trace): launch-bound steps, where at least 50% of the "
     "kernels run under 10 us, the GPU is busy under 50% of its active window, and 80% or "
     "more of the 1/6 s windows NVML samples over hold a kernel (at least 100 kernels); "
     "HTA's kernel launch statistics (GPU rows shorter than their launch call, launch-delay "
     "outliers over 100 us) and the 3 kernels with the most launch delay as evidence",
     "warning when the GPU is busy under 50% of its window; critical under 25%",
     "a kernel shorter than its cudaLaunchKernel call leaves the GPU waiting on the host: "
     "the step is as long as the launches, whatever the GPU could do, and utilization.gpu "
     "reads near 100% meanwhile. CUDA graphs replay the launches in one call. 50% follows "
     "code.util_misleading's SM activity",
     "HTA, kernel launch statistics: "
     "https://hta.readthedocs.io/en/latest/source/features/cuda_kernel_launch_stats.html"},
    {"code.gpu_idle", Layer::kCode,
     "a profiler trace (stallscope trace): HTA's idle time (the GPU's active window minus the "
     "union of every row with a stream: kernels, copies, syncs, all streams together) over the "
     "kept ProfilerSteps; each idle gap split by what the host did during it: the data "
     "loader's __next__, a blocking sync, else launching; gaps over 500 ms counted",
     "warning at >= 20% idle; critical at >= 40%",
     "an idle GPU is wall time no kernel tuning recovers: the host, the loader or a sync holds "
     "it. HTA's temporal breakdown (idle / compute / non-compute) is the measure; 20% idle is "
     "a step a fifth longer than its GPU work, 40% one that could run 1.7x faster"},
    {"code.sync_in_step", Layer::kCode,
     "a profiler trace: CPU ops that block until the GPU catches up (cudaDeviceSynchronize, "
     "cudaStreamSynchronize, cudaEventSynchronize, synchronous cudaMemcpy, aten::item, "
     "aten::_local_scalar_dense, their hip spellings) starting in each kept ProfilerStep, "
     "their union against the step's time",
     "when they run in at least 50% of the steps; warning at >= 5% of the steps' time, "
     "critical at >= 25%, info below",
     "a sync each step drains the GPU's queue, so the next kernels wait for the host's launch "
     "(PyTorch's performance tuning guide: avoid unnecessary CPU-GPU synchronization, "
     ".item(), .cpu(), print of a CUDA tensor). 5% is a loss read each step that already "
     "shows in step time; 25% is a quarter of each step spent waiting",
     "PyTorch Performance Tuning Guide: "
     "https://pytorch.org/tutorials/recipes/recipes/tuning_guide.html"},
    {"code.cpu_bound_step", Layer::kCode,
     "a profiler trace: the critical path of each rank as Holistic Trace Analysis' "
     "critical_path_analysis builds it (CPU call stacks, launches, kernel to kernel, syncs; the "
     "longest path), over the second ProfilerStep (the first with one, the whole trace with "
     "none; --critical-path-annotation and --critical-path-instance choose another); the "
     "cpu_bound share of its time and the CPU ops with the most time on it",
     "warning at >= 50% of the critical path cpu_bound, critical at >= 80%; only in a trace "
     "with GPU rows",
     "what lies on the critical path is what makes the step long: when most of it is CPU "
     "work the GPU waits on the host whatever its utilization reads, and only cheaper or "
     "fewer host ops shorten the step. Half the path is where the host, not the GPU, sets the "
     "pace; 80% leaves the GPU little to speed up. Ours",
     "Holistic Trace Analysis, Critical Path Analysis: "
     "https://hta.readthedocs.io/en/latest/source/features/"
     "lightweight_critical_path_analysis.html"},
    {"memory.pageable_h2d", Layer::kMemory,
     "a profiler trace: Memcpy HtoD (Pageable -> Device) copies launched in the kept "
     "ProfilerSteps, their count and time against the steps' time",
     "info when any; warning at >= 5% of the steps' time; critical at >= 20%",
     "a copy from pageable memory is staged through a pinned buffer by the driver and "
     "cannot overlap compute (CUDA C++ Best Practices Guide, pinned memory); "
     "DataLoader(pin_memory=True) with non_blocking=True copies from pinned pages. 5% / 20% "
     "follow code.sync_in_step"},
    {"memory.gpu_near_full", Layer::kMemory,
     "NVML memory used / total per GPU (the peak interval of a run); the compute processes "
     "holding it (nvmlDeviceGetComputeRunningProcesses) with their bytes, named from /proc",
     "warning at >= 95% used; critical at >= 99%",
     "'GPU memory near full' is a memory-layer cause; the caching "
     "allocator keeps freed blocks, so >= 95% leaves no headroom for a larger batch or a "
     "fragmented allocation (CUDA out of memory). 95 / 99 are ours",
     "PyTorch documentation, CUDA semantics: https://pytorch.org/docs/stable/notes/cuda.html"},
    {"code.gpu_throttled", Layer::kCode,
     "NVML current clock-throttle (clocks event) reasons per GPU while it is not idle: "
     "sw_power_cap, hw_slowdown, sw/hw_thermal_slowdown, hw_power_brake_slowdown; SM clock "
     "against its max, temperature, power against the enforced limit",
     "a snapshot: any such reason active; a run: active in >= 20% of the busy samples. "
     "Critical for a hardware reason (hw_slowdown, hw thermal, power brake) or an SM clock "
     "< 70% of max while throttled, else warning",
     "compute-bound kernels slow in proportion to the SM clock; a power cap or heat makes "
     "one GPU the straggler every rank waits for (the slowest rank sets the pace). "
     "20% of the run separates a condition from a burst; 70% is ours",
     "NVIDIA NVML API reference (clock event reasons): https://docs.nvidia.com/deploy/nvml-api/"},
    // GPU and link health (analyze/host/gpu_health_rules.h)
    {"io.pcie_degraded", Layer::kIo,
     "sysfs current_link_speed / current_link_width of each NVIDIA GPU against its "
     "max_link_speed / max_link_width and the upstream port's (the lower of the two is what "
     "the link could train at); the copy ceiling of each (lanes x GT/s after 8b/10b or "
     "128b/130b encoding); NVML utilization.gpu",
     "fires when the GPU trained narrower (always) or slower (only while utilization.gpu >= "
     "10%: GPUs slow an idle link to save power); critical when the trained ceiling is <= 25% "
     "of the possible one, else warning",
     "host-to-device copies (the batch, pinned or not) cannot go faster than the link: x8 of "
     "x16 or Gen3 of Gen4 halves them, and nothing in a training log says so. A link that "
     "trained down points at a riser, a slot, a BIOS setting or a card not seated. One step "
     "down (half the width or one generation) halves the ceiling: a warning; 25% is two "
     "steps (x4 of x16, or x8 one generation down): critical",
     "Linux kernel documentation, sysfs PCI attributes (current_link_speed, max_link_width): "
     "https://www.kernel.org/doc/Documentation/ABI/testing/sysfs-bus-pci"},
    {"network.link_degraded", Layer::kNetwork,
     "sysfs current_link_speed / current_link_width of each NIC and InfiniBand/RoCE HCA "
     "against its max_link_* and the upstream port's",
     "fires when the device trained narrower or slower than both ends can do; critical when "
     "the trained ceiling is <= 25% of the possible one, else warning",
     "a 200 Gb/s HCA on a x8 Gen4 link (126 Gb/s) cannot reach its line rate: all-reduce "
     "busbw falls with it while every port counter stays clean, so only the link's own "
     "training says why",
     "Linux kernel documentation, sysfs PCI attributes (current_link_speed, max_link_width): "
     "https://www.kernel.org/doc/Documentation/ABI/testing/sysfs-bus-pci"},
    {"memory.gpu_ecc", Layer::kMemory,
     "NVML ECC error counts per GPU: uncorrectable volatile (since the driver loaded) and "
     "aggregate (the GPU's life), correctable volatile at both ends of the sampling window; "
     "retired pages and remapped rows beside them",
     "critical at >= 1 volatile uncorrectable error; warning at >= 1 aggregate uncorrectable "
     "error with no volatile one, or at >= 1 correctable error counted during the window",
     "an uncorrectable error ends the process that touched it (Xid 48/94/95) and may have "
     "corrupted what it computed; the lifetime count says the GPU had them before; "
     "correctable errors that grow while you watch are memory on its way out (DCGM's "
     "diagnostics treat both the same way)",
     "NVIDIA GPU Memory Error Management: "
     "https://docs.nvidia.com/deploy/a100-gpu-mem-error-mgmt/"},
    {"memory.gpu_remap", Layer::kMemory,
     "NVML row remapper state per GPU (nvmlDeviceGetRemappedRows: pending, failure)",
     "warning when a remap is pending; critical when a remap failed",
     "a pending remap takes effect only at the next GPU reset, so until then the bad row is "
     "still used; a failed remap means the bank has no spare rows left, which NVIDIA treats "
     "as a reason to replace the GPU",
     "NVIDIA GPU Memory Error Management (row remapping): "
     "https://docs.nvidia.com/deploy/a100-gpu-mem-error-mgmt/"},
    {"code.gpu_persistence_off", Layer::kCode,
     "NVML persistence mode per GPU (nvmlDeviceGetPersistenceMode)", "info when it is off",
     "without persistence (or nvidia-persistenced) the driver deinitializes an idle GPU, so "
     "every job start and every nvidia-smi pays seconds of initialization, and state such as "
     "application clocks is lost between jobs",
     "NVIDIA Driver Persistence: https://docs.nvidia.com/deploy/driver-persistence/"},
    {"code.gpu_xid", Layer::kCode,
     "NVIDIA driver Xid errors in the kernel log (/dev/kmsg, or klogctl where it is missing), "
     "'NVRM: Xid (PCI:bus): N, ...', counted per GPU by bus id: doctor since boot; run and "
     "watch those logged while the job ran (not in the log when it started), with the time "
     "into the run; with the meaning of 13, 31, 43, 45, 48, 61, 62, 63, 64, 74, 79, 92, 94, 95",
     "critical for Xid 48 (double-bit ECC), 64 (remap failed), 79 (fell off the bus) or 95 "
     "(uncontained ECC); warning for any other",
     "these are the errors nvidia-bug-report.sh and DCGM look for first: after 48/64/79/95 the "
     "GPU needs a reset or replacement before a job can trust it; 13/31/43/45 are usually the "
     "application's own fault, but the same Xid repeating on one GPU only points at the GPU",
     "NVIDIA Xid Errors: https://docs.nvidia.com/deploy/xid-errors/"},
    // distributed: bench allreduce and cluster (analyze/fleet/allreduce_rules.h, cluster_rules.h)
    {"network.allreduce_slow", Layer::kNetwork,
     "bench allreduce: busbw (algbw x 2(n-1)/n) of the largest size against the line rate of "
     "the link in use: NCCL's ACTIVE RDMA port (NCCL_IB_HCA), else the interface "
     "NCCL_SOCKET_IFNAME / OMPI_MCA_btl_tcp_if_include selects, else the one the route to a "
     "peer node leaves through (its speed from /sys/class/net)",
     "judged only across hosts and at >= 64 MiB; warning below 50% of the line rate, critical "
     "below 25%. One host: no comparison (shared memory or loopback)",
     "nccl-tests' published busbw on healthy IB/RoCE fabrics is 80-95% of the line rate at "
     "large sizes, so under half means something on the path is wrong (TCP instead of "
     "RDMA, the wrong NIC, MTU, errors); below 64 MiB an all-reduce is latency-bound. 50 / 25 "
     "are ours",
     "nccl-tests, Performance (algorithm and bus bandwidth): "
     "https://github.com/NVIDIA/nccl-tests/blob/master/doc/PERFORMANCE.md"},
    {"distributed.allreduce_wrong", Layer::kDistributed,
     "bench allreduce: every element of every size against the exact sum (small integers, so "
     "float sums are exact in any order), summed over the ranks (#wrong)",
     "critical at one wrong element",
     "a collective that returns wrong data corrupts gradients silently; no number of wrong "
     "elements is acceptable (nccl-tests reports the same count as #wrong)",
     "nccl-tests, Performance (algorithm and bus bandwidth): "
     "https://github.com/NVIDIA/nccl-tests/blob/master/doc/PERFORMANCE.md"},
    {"distributed.heterogeneous_gpus", Layer::kDistributed,
     "cluster: the GPU models (NVML names) and counts every rank's node reports",
     "warning when two or more models appear in one job; info when only the counts per node "
     "differ",
     "in synchronous data parallelism the slowest rank sets every step's pace, and "
     "mixed GPU models are its first cause"},
    {"distributed.clock_offset", Layer::kDistributed,
     "cluster: each rank's CLOCK_REALTIME against rank 0's, from the MPI ping-pong round "
     "with the smallest round trip (offset = remote - midpoint; error bound = half the round "
     "trip)",
     "warning when |offset| minus the error bound exceeds 10 ms; critical above 1 s",
     "timelines of several nodes are merged by wall clock (report a.db b.db) and a step lasts "
     "100 ms to seconds: 10 ms moves events into the wrong step. NTP/chrony on a LAN keeps "
     "clocks within about 1 ms, so more means a node is not synchronised. Levels are ours"},
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

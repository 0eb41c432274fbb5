// Timeline: what `stallscope run` / `watch` record about one job, and what
// `report` and the run rules read back. Written interval by interval to the
// run's SQLite file (store/), read back whole for analysis (analyze/).
//
// Times are seconds since the run started (CLOCK_MONOTONIC based), so the
// hook's events (time.monotonic_ns() in the job, the same clock on Linux)
// and the sampler's rows line up. Plain data; thread-compatible.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sample/gpu.h"
#include "sample/kernel_events.h"
#include "sample/network.h"
#include "sample/nic_stats.h"

namespace stallscope {

// Facts about the run: fixed at start, completed at exit.
struct RunInfo {
  std::string command;  // argv joined with spaces, or "watch pid N"
  std::string hostname;
  std::string started_utc;  // ISO 8601
  double start_monotonic_seconds = 0;
  double interval_seconds = 1.0;
  int root_pid = 0;
  int cpu_count = 0;
  uint64_t mem_total_bytes = 0;
  std::optional<uint64_t> cgroup_limit_bytes;  // the job's memory limit, when limited
  std::string data_device;                     // disk behind the dataset; empty if unknown
  // Filled when the job ends.
  std::optional<double> duration_seconds;
  std::optional<int> exit_code;    // when it exited
  std::optional<int> exit_signal;  // when a signal ended it (9 = SIGKILL)
  bool oom_killed = false;         // the kernel's OOM killer ended it (vmstat/cgroup oom_kill)
  // Who and what the job is, for `history`'s jobs (table job_identity).
  bool identity_recorded = false;  // false: the file predates table job_identity
  std::vector<std::string> argv;   // the command as given, a word each
  std::optional<int64_t> uid;      // the user that ran it
  std::string cwd;                 // the folder it started in
  std::string job_name;            // a name the user gave; "" none
  std::string job_name_from;       // "--job", "STALLSCOPE_JOB" or "SLURM_JOB_NAME"
  std::string script;              // the script the hook saw: an absolute path, or "-m MODULE"
  // Without a hook: the program's name and its first argument that names an
  // existing file, made absolute ("python3 /home/u/train.py"); "" when none.
  std::string program;
};

// This run file's place in a job that may span nodes (table `node`): what
// `run --procs K` was told (flags, srun, mpirun) or, for `run -- LAUNCHER`,
// what the ranks' environment says (GROUP_RANK, MASTER_ADDR, ...). With
// it, `report A.db B.db ...` reads the files of one job's nodes as one job:
// the same master, port and world size (and SLURM job, when set), runs that
// overlap in wall time, no rank claimed twice.
struct NodeInfo {
  std::optional<int> node_rank;       // GROUP_RANK; nullopt when unknown
  std::optional<int> nnodes;          // the job's node count
  std::optional<int> procs_per_node;  // LOCAL_WORLD_SIZE
  std::optional<int> world_size;      // WORLD_SIZE
  std::string master_addr;            // MASTER_ADDR; "" when unknown
  std::optional<int> master_port;
  std::string launcher_job;  // SLURM_JOB_ID, when set
  std::string source;        // "flags", "srun (SLURM_NODEID=1 ...)", "the ranks' environment"
  // CLOCK_REALTIME, in seconds since the epoch, read beside the run's start
  // on CLOCK_MONOTONIC (RunInfo::start_monotonic_seconds): t = 0 in wall time.
  double start_realtime_seconds = 0;
  // This host's clock minus node rank 0's, measured when the run started
  // (NTP's estimate over UDP at MASTER_ADDR:MASTER_PORT, the round with the
  // shortest round trip); nullopt when not measured. The report subtracts it.
  std::optional<double> clock_offset_seconds;
  std::optional<double> clock_round_trip_seconds;
  // The interface the route to MASTER_ADDR leaves by (on node 0: the one
  // holding that address), whose receive and transmit rates the samples
  // carry; "" when not known (no master, or a file older than the column).
  std::string net_interface;
};

// One interval of host and process-tree figures.
struct TimelineSample {
  double t = 0;  // seconds since start, at the end of the interval
  // CLOCK_REALTIME at the same moment (seconds since the epoch); nullopt in
  // run files older than the column. t and it, each sample: the clock pair
  // that aligns several nodes' files on wall time.
  std::optional<double> realtime_seconds;
  // The job's process tree.
  int processes = 0;
  uint64_t tree_rss_bytes = 0;
  uint64_t tree_pss_bytes = 0;    // 0 when PSS unreadable
  double tree_cpu_percent = 0;    // percent of one CPU, summed over the tree (200 = 2 CPUs)
  double loader_cpu_percent = 0;  // the same for the tree minus the root rank processes
  // The host.
  uint64_t mem_available_bytes = 0;  // container-aware: min(MemAvailable, limit - working set)
  uint64_t swap_used_bytes = 0;
  double swap_in_pages_per_s = 0;
  double swap_out_pages_per_s = 0;
  double cpu_busy_percent = 0;  // host, 0..100 over all CPUs
  double cpu_iowait_percent = 0;
  // The disk behind the data (RunInfo::data_device), iostat -x figures.
  double disk_util_percent = 0;
  double disk_await_ms = 0;
  double disk_read_kib_per_s = 0;
  // From the hook, over this interval; 0 when no step ended in it.
  double steps_per_s = 0;
  double data_wait_fraction = 0;  // sum(wait) / sum(step time)
  // NodeInfo::net_interface's bytes received and sent per second over the
  // interval (/proc/net/dev); nullopt when there is no such interface, in
  // the first sample after it became known (the master learnt from the
  // ranks, the interface back after it went), and in run files older than
  // the columns.
  std::optional<double> net_rx_bytes_per_s;
  std::optional<double> net_tx_bytes_per_s;
};

// A boundary sample: the job's counters read when the hook marked the start
// of an epoch (at most one per kMinBoundarySpacingSeconds; a mark that comes
// sooner is read once that much has passed, under the latest epoch begun),
// and once more when the job ended (`epoch` nullopt). The counters run from
// the start of each process, not from the previous sample, so the
// difference of two boundary samples is what the job did between them,
// exactly, wherever the interval ticks fall.
inline constexpr double kMinBoundarySpacingSeconds = 0.05;

struct BoundarySample {
  double t = 0;              // seconds since start, when read
  std::optional<int> epoch;  // the epoch that began; nullopt: the job's end
  int processes = 0;         // of the job's tree
  uint64_t tree_rss_bytes = 0;
  // CPU time (user + system) of the tree's living processes.
  double tree_cpu_seconds = 0;
  // read_bytes of /proc/PID/io over the tree's living processes: bytes that
  // reached the block layer, the reaped children's included (the kernel
  // adds them to the parent that waited for them). nullopt when unreadable.
  std::optional<uint64_t> tree_read_bytes;
  // Whole disks (/proc/diskstats, partitions and ram/zram left out): bytes
  // read since boot. A disk that had read nothing is left out: absent from
  // one sample and present in another of the file, it read 0.
  std::vector<std::pair<std::string, uint64_t>> disk_read_bytes;
};

// One process of the tree at one sample: for "which process grows".
struct ProcessPoint {
  double t = 0;
  int pid = 0;
  int ppid = 0;
  std::string comm;
  uint64_t rss_bytes = 0;
  double cpu_percent = 0;  // of one CPU, over the interval
  // Over the interval, where read (absent in run files that predate them):
  // the share of it the main thread spent runnable and waiting for a CPU
  // (/proc/PID/schedstat run delay; 100 = the whole interval), and its reads
  // from /proc/PID/io: bytes that reached the block layer, and all bytes
  // read() returned (page cache hits, pipes and sockets too).
  std::optional<double> run_delay_percent;
  std::optional<double> read_kib_per_s;
  std::optional<double> rchar_kib_per_s;
  // Its writes, likewise: bytes it dirtied for the storage layer
  // (/proc/PID/io write_bytes; page cache writes count here before any
  // fsync), and all bytes its write()s took (wchar: pipes and sockets too).
  // Absent in files that predate them.
  std::optional<double> write_kib_per_s;
  std::optional<double> wchar_kib_per_s;
};

// A process outside the job's tree that took CPU in an interval where the
// host's CPUs were busy beyond what the tree used: the top few by CPU.
struct OtherProcessPoint {
  double t = 0;
  int pid = 0;
  std::string comm;
  double cpu_percent = 0;  // of one CPU, since the previous such reading
};

// A file the job's processes were seen holding open for reading, summed
// over the samples that caught it (probe/open_files.h): one row per path
// and role. Files opened and closed between two samples are caught only by
// chance; a folder of small files shows as many rows seen once or twice.
struct InputSeen {
  std::string path;
  std::string role;  // "worker": a process below a rank (a DataLoader worker); "rank"
  bool deleted = false;
  int readers = 0;      // distinct pids seen with it open
  int64_t samples = 0;  // samples that caught it open (once per pid)
  double first_t = 0;   // the first and last sample that caught it
  double last_t = 0;
  uint64_t size_bytes = 0;
  uint64_t max_position = 0;  // the furthest any reader had read
  std::string fs_type;
  bool remote = false;
  std::string device;  // the block device holding it ("vda1"), when it has one
  std::string format;  // InputFormat::kind: "zip", "tar.gz", ... "" for none
  bool archive = false;
  bool compressed = false;
  std::string method;  // a zip's first member: "stored", "deflate", ...
};

// From the hook: one training step of one rank.
struct StepEvent {
  int rank = 0;
  int64_t step = 0;
  double t = 0;             // when the step ended
  double wait_seconds = 0;  // waiting for the next batch
  double step_seconds = 0;  // the whole step, wait included
};

// From the hook, with stallscope.ddp(model): for a step of a rank, the time
// it waited for gradient all-reduces and the process's CPU time in it.
struct StepSync {
  int rank = 0;
  int64_t step = 0;
  double sync_seconds = 0;
  double cpu_seconds = 0;
};

// From the hook, where the process has CUDA: the time a step's loop thread
// was blocked waiting for the GPU (torch.cuda.synchronize(), an event's or
// stream's synchronize(), a CUDA tensor's .item(), .tolist(), .cpu(),
// bool(), float(), int()), and how many such calls it made (table
// host_syncs).
struct HostSync {
  int rank = 0;
  int64_t step = 0;
  double seconds = 0;
  int64_t calls = 0;
};

// From the hook, with stallscope.ddp(model): one gradient bucket's
// all-reduce in one step of one rank, from its launch in the DDP
// communication hook to its future's completion; seconds since the run's
// start on the rank's host (table bucket_sync).
struct BucketSync {
  int rank = 0;
  int64_t step = 0;
  int bucket = 0;  // DDP's bucket index
  double launch_seconds = 0;
  double done_seconds = 0;
};

// From the hook: a process that reported as a rank (its hello record).
struct RankInfo {
  int pid = 0;
  int rank = 0;
  int local_rank = 0;
  int world_size = 1;
  std::string hostname;  // empty when the hook did not say (older hooks)
};

// From the hook: epoch n of a rank began at t.
struct EpochEvent {
  int rank = 0;
  int epoch = 0;
  double t = 0;
};

// From the hook: a stretch of a rank's time that is no training step: a
// checkpoint (`with stallscope.checkpoint():`) or an evaluation loop
// (`stallscope.loader(dl, phase="eval")`, or a loop begun under
// torch.no_grad() or inference_mode). Seconds since the run's start.
struct PhaseSpan {
  int pid = 0;
  int rank = 0;
  std::string kind;  // "checkpoint", "eval" or "profile" (run --profile's trace written)
  double start_t = 0;
  double end_t = 0;
};

// From the hook: the DataLoader's settings, sent once per loader per rank.
struct LoaderConfig {
  int rank = 0;
  int pid = 0;
  int batch_size = 0;
  int num_workers = 0;
  bool pin_memory = false;
  int prefetch_factor = 0;  // 0 when unknown (num_workers=0 has none)
  bool persistent_workers = false;
  int64_t dataset_length = -1;  // -1 when the dataset has no len()
  bool gpu_available = false;   // torch.cuda.is_available() in the job
};

// The error counters of one network port at one sample, cumulative as the
// kernel counts them: a NIC from /proc/net/dev, an RDMA port ("mlx5_0:1")
// from /sys/class/infiniband. The recorder stores a port's first sample and
// then only samples where one of its error or drop counters moved, and
// every port's last sample, so a clean run keeps two rows per port
// (record/port_counters.h).
struct PortCounterPoint : PortErrors {
  double t = 0;
};

// The congestion counters of one port at one sample, cumulative: a NIC's
// driver statistics summed by kind (sample/nic_stats.h) or an RDMA port's
// xmit_wait and hw_counters (sample/rdma_congestion.h). Stored as port
// counters are: a port's first reading, then only when one moved, and
// every port's at the end (table congestion_counters).
struct CongestionPoint {
  double t = 0;
  std::string port;  // "ens1f0np0", or "mlx5_0:1" for an RDMA port
  bool rdma = false;
  NicCongestion counters;  // counters_used is not stored
};

// One GPU at one sample (NVML, gpu/gpu_probe.h); the job's GPUs first.
struct GpuPoint {
  double t = 0;
  GpuState gpu;
};

// From the hook's allocation tracing (python/stallscope/_leak.py), which a
// rank starts by itself when its RSS keeps rising: a line whose live Python
// allocations grew between tracemalloc snapshots ("site"), a container of
// the job holding tensors ("holder"), or what the tracing did ("note").
struct AllocationReport {
  int rank = 0;
  int pid = 0;
  double t = 0;
  std::string kind;        // "site", "holder" or "note"
  int64_t bytes = 0;       // site: growth; holder: tensor storage held
  int64_t count = 0;       // site: blocks grown; holder: tensors held
  int64_t grew_bytes = 0;  // holder: growth while traced
  std::string where;       // site: "file:line"; holder: the line it grows at, or ""
  std::string text;        // holder: "the module-level list 'feats' in train.py"; note: its text
};

// What the kernel kept of the job's memory peak, read once the job ended:
// where no sample saw it (a job killed in its first interval), this is the
// peak. source "cgroup": the memory cgroup's own high-water mark
// (memory.peak on v2, memory.max_usage_in_bytes on v1), kept only when it
// rose during the run and the job was limited; it counts every process of
// the cgroup and its page cache. source "oom_kill": the OOM killer's report
// of a victim of the job's tree (anon + file + shmem RSS when it was killed).
struct MemoryPeak {
  std::string source;  // "cgroup" or "oom_kill"
  int pid = 0;         // oom_kill: the victim; 0 for cgroup
  uint64_t bytes = 0;
  std::string detail;  // cgroup: the file read; oom_kill: the kernel's message
};

// How a rank stopped (record/rank_watch.h, the hook's exception and bye
// records, the rank launcher's reports; table rank_stops). One row per
// thing learnt: a rank that raised and then exited has two. Seconds since
// the run's start.
struct RankStop {
  int pid = 0;
  int rank = -1;  // -1: not known (no hello from it)
  double t = 0;
  // "exit" (exit_code) and "signal" (signal): its status, from `run
  // --procs`'s launcher or, for the process `run` started, the recorder;
  // "sent_signal" (the launcher sent it `signal`: the others' end after a
  // rank failed); "gone" (the recorder saw it end); "bye" (Python's exit
  // ran); "exception" and "loader_error" (the hook: detail).
  std::string how;
  std::optional<int> exit_code;
  std::optional<int> signal;
  std::string detail;  // exception: "where\tthread\ttype\tmessage\tfile:line in func"
  std::string source;  // "launcher", "hook" or "recorder"
};

// A rank's state at a moment `run` looked: while no rank finished a step for
// --hang-after (reason "hang"), or when another rank died ("death"); table
// rank_states. Seconds since the run's start.
struct RankState {
  double t = 0;
  std::string reason;  // "hang" or "death"
  int pid = 0;
  int rank = -1;
  int64_t steps = 0;                         // steps its ring holds as finished
  std::optional<double> last_step_t;         // when its last step ended
  std::optional<double> collective_since_t;  // in a gradient all-reduce since (stallscope.ddp)
  std::string state;                         // /proc: R, S, D, Z, ... ("" gone)
  std::string wchan;
  int threads = 0;
  std::optional<double> cpu_seconds;    // CPU time between the two looks (hang)
  std::string frame;                    // the main thread's innermost frame of the job's code
  std::string stack;                    // the main thread's stack, innermost first ("\n" apart)
  std::optional<bool> stack_unchanged;  // the same stack in two looks seconds apart
};

struct Timeline {
  RunInfo info;
  // The stallscope version that wrote the file (meta key stallscope_version);
  // empty for a file older than that key: the version is unknown.
  std::string written_by;
  std::optional<NodeInfo> node;  // nullopt: the file predates table node
  std::vector<TimelineSample> samples;
  std::vector<ProcessPoint> processes;
  std::vector<StepEvent> steps;
  std::vector<EpochEvent> epochs;
  std::vector<LoaderConfig> loaders;
  std::vector<PortCounterPoint> port_counters;  // by time, then port
  std::vector<CongestionPoint> congestion;      // table congestion_counters; empty when absent
  std::vector<GpuPoint> gpus;                   // by time, then GPU
  std::vector<RankInfo> ranks;                  // hook hellos, in arrival order
  std::vector<StepSync> step_syncs;             // with stallscope.ddp(model)
  std::vector<BucketSync> bucket_syncs;         // with stallscope.ddp(model), per bucket
  bool bucket_syncs_recorded = true;            // false: read from a file without table bucket_sync
  std::vector<PhaseSpan> spans;                 // checkpoints and evaluation loops, by start
  bool spans_recorded = true;                   // false: the file predates table phase_spans
  std::vector<HostSync> host_syncs;             // per step, where the hook saw any
  bool host_syncs_recorded = true;              // false: the file predates table host_syncs
  std::vector<AllocationReport> allocations;    // the hook's allocation tracing
  std::vector<MemoryPeak> memory_peaks;         // table memory_peaks, when written
  bool memory_peaks_recorded = false;           // false: the file predates the table
  // Table kernel_events: what the kernel logged about the hardware while
  // the job ran (NVIDIA Xid errors, RDMA/mlx5 port link-downs), that was
  // not in its log when the run started. Their monotonic_seconds here are
  // seconds since the run's start (nullopt: the record had no time).
  std::vector<GpuXid> xids;
  std::vector<PortLogEvent> port_events;
  bool kernel_events_recorded = false;             // false: the file predates the table
  std::vector<InputSeen> inputs;                   // what the job's processes read
  std::vector<OtherProcessPoint> other_processes;  // CPU taken outside the tree
  std::vector<BoundarySample> boundaries;          // by time; empty in files that predate them
  // false: the file predates tables inputs and other_processes (and the
  // processes' run delay and reads), so the rules that need them judge
  // from what older files hold.
  bool inputs_recorded = false;
  std::vector<RankStop> rank_stops;    // how ranks stopped; empty in older files
  std::vector<RankState> rank_states;  // where ranks were at a hang or a death
  bool rank_stops_recorded = false;    // false: the file predates table rank_stops
};

}  // namespace stallscope

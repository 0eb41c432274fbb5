// What an NCCL debug log says, as plain values: the summary the streaming
// parser (formats/nccl_log/nccl_log.h) builds, one log file as doctor and run read it,
// and a host's Active RDMA ports the log is judged against. The rules over
// them are in analyze/nccl_log/rules.h.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace stallscope {

// Caps on what one summary keeps (see the header paragraph).
inline constexpr size_t kNcclMaxProcesses = 4096;
inline constexpr size_t kNcclMaxRanks = 8192;
inline constexpr size_t kNcclMaxInterfaces = 8;  // per process and role
inline constexpr size_t kNcclMaxPeers = 64;
inline constexpr size_t kNcclMaxWarnings = 64;
inline constexpr size_t kNcclMaxWarnsPerProcess = 8;  // NcclProcess::warns
inline constexpr size_t kNcclMaxRings = 64;
inline constexpr size_t kNcclMaxAlgorithms = 64;
inline constexpr size_t kNcclMaxLineBytes = 16 << 10;    // longer lines are cut there
inline constexpr size_t kNcclTextCheckBytes = 64 << 10;  // a NUL in these: not a text log

// "eth0:10.0.0.1<0>" as NCCL prints a chosen interface.
struct NcclInterface {
  std::string name;     // "eth0", "mlx5_0:1/IB" for an IB device
  std::string address;  // "10.0.0.1" (port dropped); empty for IB devices
  bool operator==(const NcclInterface&) const = default;
};

// Connections (channel lines) by transport, counted once per line.
struct NcclTransportCounts {
  uint64_t p2p = 0;            // P2P/IPC, P2P/CUMEM, P2P/direct pointer, P2P/indirect
  uint64_t shm = 0;            // SHM
  uint64_t net_socket = 0;     // NET/Socket
  uint64_t net_ib = 0;         // NET/IB (InfiniBand or RoCE verbs)
  uint64_t net_other = 0;      // a NET plugin: NET/AWS Libfabric, NET/IBext, ...
  uint64_t gdrdma = 0;         // of the NET ones, with GPUDirect RDMA
  uint64_t collnet = 0;        // CollNet (SHARP)
  uint64_t nvls_channels = 0;  // from "N nvls channels" (NVLink SHARP)
  uint64_t Total() const { return p2p + shm + net_socket + net_ib + net_other + collnet; }
};

// Line forms only some NCCL versions print (their versions, read in NCCL's
// sources at every tag, are in analyze/nccl_log/versions.cc): what tells a
// process's version where the log holds no version line of it.
enum class NcclLineForm : uint8_t {
  kRingVia,              // "Ring 00 : 0[0] -> 1[1] via ..."
  kChannelNoSubIndex,    // "Channel 00 : 0[1b000] -> 1[3d000] via P2P/..." or "via NET/..."
  kChannelSubIndex,      // "Channel 00/0 : 0[0] -> 1[1] via ..."
  kDirectSharedMemory,   // "... via direct shared memory"
  kShmSlash,             // "... via SHM/direct/direct"
  kBootstrapIndexed,     // "Bootstrap : Using [0]eth0:10.0.0.1<0>"
  kBootstrapSpaced,      // "Bootstrap : Using eth0:10.0.0.1<0>"
  kBootstrapUnspaced,    // "Bootstrap: Using eth0:10.0.0.1<0>"
  kInternalNetwork,      // "Using internal Network IB"
  kUsingNetwork,         // "Using network IB"
  kCompleteWithoutInit,  // "comm 0x.. rank 0 nranks 2 - COMPLETE"
  kInitStart,            // "... - Init START"
  kCudaDriverVersion,    // "cudaDriverVersion 12020"
  kNodesLine,            // "comm 0x.. rank 0 nRanks 16 nNodes 2 localRanks 8 ..."
  kInitTimings,          // "Init timings ..."
  kCount
};
inline constexpr size_t kNcclLineForms = static_cast<size_t>(NcclLineForm::kCount);

// One rank: host:pid plus the [cudaDev] of its lines.
struct NcclRank {
  size_t process = 0;                  // index into NcclLogSummary::processes
  int cuda_dev = -1;                   // the [N] of the line prefix
  int rank = -1;                       // global rank in the largest communicator it joined
  int nranks = 0;                      // that communicator's size
  uint64_t init_started = 0;           // "Init START" lines (2.18.3+)
  uint64_t init_completed = 0;         // "Init COMPLETE" lines
  std::optional<double> init_seconds;  // "Init timings ... total S" (2.23+), the largest
  NcclTransportCounts transports;
  bool identity_from_init = false;  // rank/nranks read off an Init line, not inferred
  uint64_t comm_id = 0;             // the commId of that Init line (2.16+); 0: none printed
  std::string trees;                // the first "Trees [0] ..." layout, as printed
  uint64_t lines = 0;
  uint64_t warnings = 0;
  uint64_t init_start_line = 0;  // 1-based line of its last "Init START"
};

// What aws-ofi-nccl (the libfabric net plugin, "NET/OFI ..." lines) said of
// one process (formats/nccl_log/ofi.cc has the forms).
struct NcclOfiFacts {
  std::string plugin_version;     // "Initializing aws-ofi-nccl 1.13.2-aws" -> "1.13.2-aws"
  std::string libfabric_version;  // "Using Libfabric version 1.22"
  std::string fabric;  // "Selected provider is efa, fabric is efa-direct" -> "efa-direct"
  int nics = -1;       // "(found 4 nics)"; -1: not printed
  std::vector<std::string> devices;  // "NIC group 0 device #0 0000:4b:00.0": PCI addresses
  std::string protocol;              // "Using transport protocol RDMA|SENDRECV"
  std::string platform;  // "Running on p5.48xlarge platform, ...", "Plugin selected platform: AWS"
  bool gdr_disabled = false;   // "Could not disable CUDA API usage for HMEM, disabling GDR"
  uint64_t provider_line = 0;  // 1-based line of "Selected provider is"
  bool Any() const {
    return !plugin_version.empty() || !libfabric_version.empty() || !fabric.empty() || nics >= 0 ||
           !devices.empty() || !protocol.empty() || !platform.empty() || gdr_disabled;
  }
};

// One WARN as one process printed it, and what that process printed after
// it: what tells a failure from a WARN NCCL carried on from
// (analyze/nccl_log/failures.h). A WARN repeated with nothing between is
// kept once.
struct NcclWarnOnProcess {
  size_t warning = 0;               // index into NcclLogSummary::warnings
  uint64_t line = 0;                // 1-based line of the WARN
  int64_t tid = 0;                  // the thread that printed it
  int cuda_dev = -1;                // the [cudaDev] of its line
  uint64_t other_lines_before = 0;  // other programs' lines read before it
  // NCCL's "file:line" before "NCCL WARN" ("transport/net_ib.cc:123"; a
  // build's absolute path cut to what follows "src/"); empty when the line
  // has none (2.3's form, a plugin's own).
  std::string source;
  std::string time;  // the timestamp a launcher or log system put on the line; empty if none
  // The first error-return line after it on the process ("init.cc:1270 -> 2",
  // printed by NCCLCHECK when a call fails): its "file:line" and ncclResult_t.
  std::string chain_source;
  int chain_result = -1;  // -1: no such line followed
  uint64_t chain_line = 0;
  bool init_done_before = false;       // a rank of the process had printed Init COMPLETE
  bool progress_after = false;         // an INFO line after it that is no error-return line
  bool thread_progress_after = false;  // the same, printed by its own thread
  bool init_completed_after = false;   // a rank of the process printed Init COMPLETE after it
  bool aborted_after = false;          // "... - Abort COMPLETE" after it
};

// One process: what NCCL prints once per process.
struct NcclProcess {
  std::string host;  // NCCL cuts the hostname at the first '.'
  int64_t pid = 0;
  // 0; N > 0: the Nth other process printed under the same host:pid, told
  // apart by what its lines show (another bootstrap address, another rank of
  // one communicator): a host name written alike on several hosts (redacted)
  // and a pid that repeats across hosts (containers). Named "host:pid#N+1".
  int twin = 0;
  std::string version;                    // "2.18.3+cuda12.2"
  int64_t cuda_driver = 0;                // "cudaDriverVersion 12020"
  std::vector<NcclInterface> bootstrap;   // "Bootstrap : Using ..."
  std::vector<NcclInterface> net_socket;  // "NET/Socket : Using ..."
  std::vector<NcclInterface> ib_devices;  // "NET/IB : Using [0]mlx5_0:1/IB ..."
  std::vector<NcclInterface> ib_oob;      // "... ; OOB eth0:10.0.0.1<0>"
  bool ib_no_device = false;              // "NET/IB : No device found."
  bool ib_oob_empty = false;              // "NET/IB : Using ... ; OOB :" with no interface
  bool ib_disabled = false;               // "NCCL_IB_DISABLE set by environment to 1"
  std::string network;                    // "Using network Socket|IB|<plugin>"
  std::string socket_ifname;              // "NCCL_SOCKET_IFNAME set by environment to X"
  int nnodes = 0;                         // "comm .. nRanks N nNodes M ..." (2.20+)
  std::string net_plugin;                 // "P2P plugin IBext_v8", "Loaded net plugin X"
  std::string plugin_path;                // "Plugin Path : /opt/hpcx/..."
  std::string ofi_provider;               // "NET/OFI Selected Provider is efa"
  NcclOfiFacts ofi;                       // aws-ofi-nccl's other lines
  std::vector<std::string> channel_nets;  // "via NET/<name>/..." names: IB, Socket, IBext_v8
  uint64_t socket_devs_used = 0;          // bit i: a channel ran "via NET/Socket/i"
  // 1-based lines of the log, for findings' FILE:LINE (0: not seen).
  uint64_t version_line = 0;         // the version was read here
  uint64_t bootstrap_line = 0;       // "Bootstrap : Using"
  uint64_t socket_line = 0;          // "NET/Socket : Using"
  uint64_t socket_channel_line = 0;  // the first channel "via NET/Socket"
  // A net plugin that failed and NCCL went on without (formats/nccl_log/fallback.cc).
  std::string plugin_asked;    // NCCL_NET_PLUGIN's name ("Plugin name set by env to X")
  std::string plugin_failed;   // the plugin: "libnccl-net-ofi.so", "Libfabric"
  std::string plugin_failure;  // why, in the loader's or the plugin's words
  uint64_t plugin_failure_line = 0;
  bool libibverbs_missing = false;  // "Failed to open libibverbs.so[.1]" (an INFO line)
  // Its WARNs in order, the first kNcclMaxWarnsPerProcess (more: `dropped`).
  std::vector<NcclWarnOnProcess> warns;
  bool init_done = false;       // a rank of it printed Init COMPLETE
  uint64_t init_done_line = 0;  // 1-based line of its last Init COMPLETE
  uint64_t error_returns = 0;   // its error-return lines ("file:line -> R", R > 0)
  uint32_t warns_waiting = 0;   // of them, those whose thread printed nothing since
  // The version-bound line forms it printed (bit i: NcclLineForm i), each
  // with the 1-based line it was first seen on.
  uint32_t line_forms = 0;
  std::array<uint64_t, kNcclLineForms> line_form_lines{};
  void SawForm(NcclLineForm form, uint64_t line) {
    const uint32_t bit = uint32_t{1} << static_cast<unsigned>(form);
    if (line_forms & bit) return;
    line_forms |= bit;
    line_form_lines[static_cast<size_t>(form)] = line;
  }
  std::string Name() const {
    std::string name = host + ":" + std::to_string(pid);
    if (twin > 0) name += "#" + std::to_string(twin + 1);
    return name;
  }
};

// The peer of a failure NCCL printed without one ("exceeded timeouts").
inline constexpr std::string_view kPeerNotPrinted = "(peer not printed)";

// A peer a rank failed to reach or lost: "Connect to 10.0.0.2<43211> failed".
struct NcclPeerFailure {
  std::string peer;           // "10.0.0.2<43211>", "node1<57557>"
  std::string reason;         // the first reason seen: "Connection refused"
  std::string first_seen_by;  // "host:pid"
  uint64_t count = 0;
  uint64_t first_line = 0;  // 1-based line of the log
};

// "[Proxy Service N] Failed to execute operation OP from rank M, retcode R"
// (proxy.cc, 2.12+): rank M asked the proxy thread of rank N, which runs in
// the process that printed the line, and the operation failed. A proxy
// serves the ranks of its own host, so rank M runs on the printer's host,
// whether or not it printed lines of its own.
struct NcclProxyFailure {
  std::string proxy_process;  // "host:pid" that printed it
  std::string host;
  int proxy_rank = -1;    // N
  int from_rank = -1;     // M
  std::string operation;  // "Connect", "Init", "SharedInit", "Setup", ...
  int retcode = -1;       // ncclResult_t: 6 is ncclRemoteError
  uint64_t count = 0;
  uint64_t first_line = 0;  // 1-based line of the log
};

struct NcclWarning {
  std::string text;  // the message after "NCCL WARN", cut at 200 bytes
  std::string first_seen_by;
  uint64_t count = 0;
  int first_seen_dev = -1;  // the [cudaDev] of its first line
  uint64_t first_line = 0;  // 1-based line of the log
};

// "AllReduce: 1048576 Bytes -> Algo RING proto LL128" (TUNING) or
// "NCCL_ALGO set by environment to Ring".
struct NcclAlgorithmChoice {
  std::string text;  // "AllReduce Ring/LL128", "env NCCL_ALGO=Ring"
  uint64_t count = 0;
};

// A rank nccl-tests listed in the table its header prints:
// "#  Rank  2 Group  0 Pid   4321 on      nodeB device  0 [0x41] NVIDIA H100".
// It names hosts and ranks that may print no NCCL line of their own.
struct NcclTestsRank {
  int rank = -1;
  int group = 0;
  int64_t pid = 0;
  std::string host;
  int device = -1;
  std::string bus_id;  // "0x41"
  std::string gpu;     // "NVIDIA H100 80GB HBM3"
};

// What PyTorch's ProcessGroupNCCL printed about one process group
// ("... NCCL version: 2.18.1, size: 8, global rank: 3, ..."), given to the
// process whose launcher tag the line carries.
struct NcclTorchGroup {
  std::string process;  // "host:pid" when the launcher tag tells; empty if not
  std::string tag;      // the launcher's tag on the line ("[1,3]<stdout>:"), if any
  int global_rank = -1;
  int size = 0;
  std::string nccl_version;
};

// What a launcher or the job's own script echoed of the job's world
// ("WORLD_SIZE=8 RANK=3 LOCAL_RANK=3": torchrun's environment printed, a
// Slurm script's, a training script's): the launcher's facts, not NCCL's.
struct NcclLauncherEcho {
  int world_size = 0;            // the largest WORLD_SIZE echoed; 0: none
  std::vector<int> ranks;        // distinct RANK values, ascending (capped at kNcclMaxRanks)
  std::vector<int> local_ranks;  // distinct LOCAL_RANK values, ascending (capped alike)
  uint64_t lines = 0;            // lines that echoed one of them
  uint64_t first_line = 0;       // 1-based line of the first
};

struct NcclLogSummary {
  uint64_t bytes = 0;
  uint64_t nccl_lines = 0;        // NCCL's own lines (a prefix, or its bare "NCCL version")
  uint64_t attributed_lines = 0;  // of them, lines given to a host:pid
  uint64_t other_lines = 0;       // other programs' lines, PyTorch's naming NCCL too (a launcher's
                                  // prefix alone is none)
  uint64_t folded_repeats = 0;    // lines Ray folded into " [repeated Nx across cluster]"
  uint64_t joined_lines = 0;      // NCCL lines a terminal had wrapped, joined back
  uint64_t info_lines = 0;
  uint64_t warn_lines = 0;
  uint64_t trace_lines = 0;
  std::vector<NcclProcess> processes;  // in order of first appearance
  std::vector<NcclRank> ranks;         // in order of first appearance
  // "NCCL version X" printed bare (printf to stdout before 2.22): no prefix,
  // so no process; kept here when it could not be given to one.
  std::vector<std::string> unattributed_versions;
  std::vector<NcclPeerFailure> peer_failures;
  uint64_t connect_retries = 0;      // INFO "Call to connect returned X, retrying"
  std::string connect_retry_reason;  // the first: "Connection timed out"
  std::string connect_retry_peer;    // the first peer named (2.27+): "10.0.0.2<45763>"
  uint64_t connect_retry_max = 0;    // the largest N of "retrying (N/M)" (2.24+)
  uint64_t connect_retry_limit = 0;  // its M (NCCL_SOCKET_RETRY_CNT, 34 by default)
  uint64_t connect_retry_line = 0;   // 1-based line of the first retry
  std::vector<NcclWarning> warnings;
  std::vector<NcclProxyFailure> proxy_failures;  // capped at kNcclMaxPeers
  std::vector<std::string> rings;  // "00/02: 0 1 2 3" from rank 0's "Channel 00/02 : ..."
  std::vector<NcclAlgorithmChoice> algorithms;
  // Errors the job printed around NCCL (PyTorch and NCCL's own words).
  uint64_t system_errors = 0;   // "unhandled system error"
  uint64_t remote_errors = 0;   // "remote process exited or there was a network error"
  uint64_t timeouts = 0;        // "Timeout waiting", watchdog "collective operation timeout"
  uint64_t job_error_line = 0;  // 1-based line of the first of those the job printed (no WARN)
  // Other programs' lines read before that error's report began (its
  // "Traceback (most recent call last):", else the error line itself).
  uint64_t job_error_other_lines = 0;
  uint64_t traceback_other_lines = 0;      // 1 + other lines before the last traceback; 0: none
  uint64_t traceback_line = 0;             // 1-based line of the last traceback begun
  uint64_t job_error_report_line = 0;      // where that error's report began (its traceback)
  uint64_t version_mismatch_warnings = 0;  // NCCL's "Mismatched NCCL version detected"
  uint64_t dropped = 0;                    // items past a cap, and lines cut at kNcclMaxLineBytes
  std::vector<NcclTestsRank> tests_ranks;  // nccl-tests' table, in its order
  std::vector<NcclTorchGroup> torch_groups;
  NcclLauncherEcho launcher;
  uint64_t libfabric_lines = 0;                        // "libfabric:pid:time:prov:..." lines
  std::vector<std::string> libfabric_empty_providers;  // "provider efa output empty list"
  // An EFA queue or endpoint that failed: "efa: <its warning>", the first few
  // (libfabric's "...:efa:...<warn> Unable to ..." lines).
  std::vector<std::string> libfabric_efa_failures;
  // The NCCL version PyTorch's own error text names ("NCCL error in: ...,
  // unhandled system error ..., NCCL version 2.18.1"), and those errors.
  std::vector<std::string> torch_error_versions;
  uint64_t torch_error_version_line = 0;  // the first such line
  uint64_t torch_nccl_errors = 0;         // PyTorch's "NCCL error in:" / DistBackendError lines
};

// RDMA ports of the host the command runs on, for network.rdma_unused: the
// log's hosts with this name are checked against them.
struct HostRdmaPorts {
  std::string hostname;                   // short name, cut at the first '.' as NCCL does
  std::vector<std::string> active_ports;  // "mlx5_0:1 InfiniBand 200 Gb/sec"
};

// One log as doctor and run read it.
struct NcclLogFile {
  std::string path;
  NcclLogSummary summary;
  uint64_t first_socket_line = 0;
  uint64_t first_ib_line = 0;
};

}  // namespace stallscope

// NCCL debug logs (NCCL_DEBUG=INFO, WARN or TRACE): a one-pass streaming
// parser and the findings read from what it saw.
//
// The parser lives in analyze/ because it is pure: bytes in, an NcclLogSummary
// out, never a read of the machine (the command feeds it a file or stdin; the
// host's RDMA ports come in as plain data). It scans for "NCCL" with memmem,
// so lines without it (the training script's own output) cost one search and
// are never tokenized; a matching line is split with string_view, no regex.
// Ranks of several processes and hosts may be interleaved in any order: NCCL
// prefixes its lines "[time] host:pid:tid [cudaDev] NCCL INFO ..." (WARN adds
// "file:line [(func)]", TRACE a time and "func:line"), and launchers may put
// their own tag in front ("[default0]:", "0: "), which is skipped.
//
// Memory is bounded whatever the file's size: facts are aggregated per
// process (host:pid) and per rank (host:pid plus the [cudaDev] of the line),
// and every list of distinct things (processes, ranks, interfaces, peers,
// warnings, rings, algorithm choices) is capped; what does not fit is counted
// in `dropped`. Message formats were read from NCCL's sources (2.5 to 2.29:
// init.cc, bootstrap.cc, transport/net_socket.cc, net_ib.cc, p2p.cc, shm.cc,
// net.cc, graph/rings.cc, misc/socket.cc, debug.cc) and real logs posted in
// NCCL's issues. A parser is single-threaded; summaries are plain values.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "analyze/finding.h"
#include "core/status.h"

namespace stallscope {

// Caps on what one summary keeps (see the header paragraph).
inline constexpr size_t kNcclMaxProcesses = 4096;
inline constexpr size_t kNcclMaxRanks = 8192;
inline constexpr size_t kNcclMaxInterfaces = 8;  // per process and role
inline constexpr size_t kNcclMaxPeers = 64;
inline constexpr size_t kNcclMaxWarnings = 64;
inline constexpr size_t kNcclMaxRings = 64;
inline constexpr size_t kNcclMaxAlgorithms = 64;
inline constexpr size_t kNcclMaxLineBytes = 16 << 10;  // longer lines are cut there

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

// One rank: host:pid plus the [cudaDev] of its lines.
struct NcclRank {
  size_t process = 0;                  // index into NcclLogSummary::processes
  int cuda_dev = -1;                   // the [N] of the line prefix
  int rank = -1;                       // global rank in the largest communicator it joined
  int nranks = 0;                      // that communicator's size
  uint64_t init_started = 0;           // "Init START" lines (2.17+)
  uint64_t init_completed = 0;         // "Init COMPLETE" lines
  std::optional<double> init_seconds;  // "Init timings ... total S" (2.23+), the largest
  NcclTransportCounts transports;
  std::string trees;  // the first "Trees [0] ..." layout, as printed
  uint64_t lines = 0;
  uint64_t warnings = 0;
};

// One process: what NCCL prints once per process.
struct NcclProcess {
  std::string host;  // NCCL cuts the hostname at the first '.'
  int64_t pid = 0;
  std::string version;                    // "2.18.3+cuda12.2"
  int64_t cuda_driver = 0;                // "cudaDriverVersion 12020"
  std::vector<NcclInterface> bootstrap;   // "Bootstrap : Using ..."
  std::vector<NcclInterface> net_socket;  // "NET/Socket : Using ..."
  std::vector<NcclInterface> ib_devices;  // "NET/IB : Using [0]mlx5_0:1/IB ..."
  std::vector<NcclInterface> ib_oob;      // "... ; OOB eth0:10.0.0.1<0>"
  bool ib_no_device = false;              // "NET/IB : No device found."
  bool ib_disabled = false;               // "NCCL_IB_DISABLE set by environment to 1"
  std::string network;                    // "Using network Socket|IB|<plugin>"
  std::string socket_ifname;              // "NCCL_SOCKET_IFNAME set by environment to X"
  int nnodes = 0;                         // "comm .. nRanks N nNodes M ..." (2.19+)
  std::string Name() const { return host + ":" + std::to_string(pid); }
};

// The peer of a failure NCCL printed without one ("exceeded timeouts").
inline constexpr std::string_view kPeerNotPrinted = "(peer not printed)";

// A peer a rank failed to reach or lost: "Connect to 10.0.0.2<43211> failed".
struct NcclPeerFailure {
  std::string peer;           // "10.0.0.2<43211>", "node1<57557>"
  std::string reason;         // the first reason seen: "Connection refused"
  std::string first_seen_by;  // "host:pid"
  uint64_t count = 0;
};

struct NcclWarning {
  std::string text;  // the message after "NCCL WARN", cut at 200 bytes
  std::string first_seen_by;
  uint64_t count = 0;
};

// "AllReduce: 1048576 Bytes -> Algo RING proto LL128" (TUNING) or
// "NCCL_ALGO set by environment to Ring".
struct NcclAlgorithmChoice {
  std::string text;  // "AllReduce Ring/LL128", "env NCCL_ALGO=Ring"
  uint64_t count = 0;
};

struct NcclLogSummary {
  uint64_t bytes = 0;
  uint64_t nccl_lines = 0;  // lines holding "NCCL"
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
  std::vector<NcclWarning> warnings;
  std::vector<std::string> rings;  // "00/02: 0 1 2 3" from rank 0's "Channel 00/02 : ..."
  std::vector<NcclAlgorithmChoice> algorithms;
  // Errors the job printed around NCCL (PyTorch and NCCL's own words).
  uint64_t system_errors = 0;  // "unhandled system error"
  uint64_t remote_errors = 0;  // "remote process exited or there was a network error"
  uint64_t timeouts = 0;       // "Timeout waiting", watchdog "collective operation timeout"
  uint64_t version_mismatch_warnings = 0;  // NCCL's "Mismatched NCCL version detected"
  uint64_t dropped = 0;                    // items past a cap, and lines cut at kNcclMaxLineBytes
};

// The "host:pid:tid [dev]" prefix of one NCCL line.
struct NcclLinePrefix {
  std::string_view host;
  int64_t pid = 0;
  int64_t tid = 0;
  int cuda_dev = -1;  // -1 for NCCL CALL lines, which have none
  enum class Level { kInfo, kWarn, kTrace, kCall } level = Level::kInfo;
  std::string_view message;  // after "NCCL INFO " etc.
};

// Pure pieces, exposed for tests and the fuzz target.
// The prefix of a line ("" when the line is not one NCCL wrote with a prefix).
// `from`: where to start looking for "NCCL" (the scanner knows the first one).
std::optional<NcclLinePrefix> ParseNcclLinePrefix(std::string_view line, size_t from = 0);
// The same for the shape nearly every line has, "host:pid:tid [dev] NCCL
// INFO|WARN msg", in one pass with no search: the offset of the message, or
// 0 when the line has another shape (then only ParseNcclLinePrefix can
// tell). Where it accepts a line, both give the same answer. `line` may run
// on past a newline (the rest of a buffer): the prefix never includes one,
// and the message is cut by the caller.
size_t FastNcclLinePrefix(std::string_view line, NcclLinePrefix* out);
// " [0]eth0:10.0.0.1<0> [1]ib0:192.168.1.1<0>" or " eth0:10.0.0.1<0>" (after "Using").
std::vector<NcclInterface> ParseNcclInterfaces(std::string_view text);
// "2.18.3+cuda12.2" from "NCCL version 2.18.3+cuda12.2" (and trailing junk cut).
std::string_view ParseNcclVersion(std::string_view after_version_word);

// The streaming parser: Feed whole lines (a chunk may end mid-line; the
// parser keeps the tail until the next Feed), then Finish.
class NcclLogParser {
 public:
  NcclLogParser();
  void Feed(std::string_view chunk);
  NcclLogSummary Finish();

 private:
  void ScanLines(std::string_view complete);
  void Line(std::string_view line, size_t first_nccl = 0);
  void Prefixed(const NcclLinePrefix& prefix);
  void Info(size_t rank, std::string_view msg);
  void Warn(size_t rank, std::string_view msg);
  void Unprefixed(std::string_view line);
  static constexpr size_t kNoRank = SIZE_MAX;
  size_t RankFor(const NcclLinePrefix& prefix);
  size_t LookUpRank(const NcclLinePrefix& prefix);
  NcclProcess& ProcessOf(size_t rank) { return summary_.processes[summary_.ranks[rank].process]; }
  void ChannelLine(NcclRank& rank, std::string_view msg);
  void TuningLine(std::string_view msg);
  bool SetOnceInterfaces(std::vector<NcclInterface>& into, std::string_view list);
  static std::string_view FirstWordOf(std::string_view s);
  void PeerFailure(std::string_view peer, std::string_view reason, size_t rank);
  void Algorithm(std::string_view text);

  NcclLogSummary summary_;
  std::string tail_;      // an incomplete last line between Feeds
  bool cutting_ = false;  // inside a line longer than kNcclMaxLineBytes
  // (host, pid) to the process by hash (collisions compared in full); ranks
  // in an open-addressing table of indexes, so no string key is ever built.
  std::unordered_multimap<uint64_t, size_t> process_index_;
  static constexpr size_t kRankSlots = 2 * 8192;  // a power of two >= 2 * kNcclMaxRanks
  static_assert(kRankSlots >= 2 * kNcclMaxRanks && (kRankSlots & (kRankSlots - 1)) == 0);
  std::vector<size_t> rank_slots_;
  // Recently seen ranks by (pid, dev), checked against the host on a hit.
  static constexpr size_t kRecentRanks = 256;
  size_t recent_ranks_[kRecentRanks];
  size_t last_process_ = kNoRank;  // for a bare "NCCL version" line
};

// The whole text at once (tests, fuzzing).
NcclLogSummary ParseNcclLog(std::string_view text);
// A file descriptor read to its end in 1 MiB blocks; `name` names it in errors.
// `also`, when given, sees every block too (NcclLineMarks, in one pass).
Result<NcclLogSummary> ReadNcclLog(int fd, std::string_view name,
                                   const std::function<void(std::string_view)>& also = {});

// RDMA ports of the host the command runs on, for network.rdma_unused: the
// log's hosts with this name are checked against them.
struct HostRdmaPorts {
  std::string hostname;                   // short name, cut at the first '.' as NCCL does
  std::vector<std::string> active_ports;  // "mlx5_0:1 InfiniBand 200 Gb/sec"
};

// The findings of a summary: network.rdma_unused, network.wrong_interface,
// network.connect_failed, distributed.nccl_version_mismatch,
// distributed.init_incomplete. Pure.
std::vector<Finding> CheckNcclLog(const NcclLogSummary& log,
                                  const std::optional<HostRdmaPorts>& host);

// How many hosts the job spans as far as the log tells: distinct hosts, or
// NCCL's own nNodes when larger.
int NcclJobNodes(const NcclLogSummary& log);

}  // namespace stallscope

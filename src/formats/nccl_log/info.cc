// The NCCL INFO messages the parser understands, one branch per message
// family, dispatched on the first byte so that a line costs a few compares.
// Formats as NCCL prints them (versions where they changed):
//   NCCL version 2.18.3+cuda12.2                      (INFO from 2.22; bare before)
//   cudaDriverVersion 12020
//   Bootstrap : Using eth0:10.0.0.1<0>                ("Bootstrap: Using" in 2.23+)
//   NET/Socket : Using [0]eth0:10.0.0.1<0> [1]...
//   NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/RoCE [RO]; OOB eth0:10.0.0.1<0>
//   NET/IB : No device found.
//   NCCL_IB_DISABLE set by environment to 1.
//   Using network Socket | IB | <plugin>
//   Channel 00/0 : 0[0] -> 1[1] via P2P/IPC/read      (2.12+; "Channel 00 : 0[1a000]" before)
//   Channel 00/0 : 1[0] -> 0[0] [receive] via NET/IB/0/GDRDMA
//   Channel 00/02 :    0   1   2   3                  (rank 0's ring layout)
//   Trees [0] 1/-1/-1->0->-1 [1] -1/-1/-1->0->1
//   2 coll channels, 0 nvls channels, 2 p2p channels, 2 p2p channels per peer
//   comm 0x.. rank 0 nranks 8 cudaDev 0 busId 1000 - Init COMPLETE             (<= 2.17)
//   ncclCommInitRank comm 0x.. rank 0 nranks 8 cudaDev 0 nvmlDev 0 busId 1000
//     commId 0x.. - Init START | Init COMPLETE                                  (2.18+)
//   comm 0x.. rank 0 nRanks 16 nNodes 2 localRanks 8 localRank 0 MNNVL 0         (2.19+)
//   Init timings - ncclCommInitRank: rank 0 nranks 16 total 1.08 (kernels ...)   (2.23+)
//   AllReduce: 1048576 Bytes -> Algo RING proto LL128 channel{Lo..Hi}={0..15}   (TUNING)
//   1048576 Bytes -> Algo 1 proto 2 time 24.000000                              (2.19-2.21)
//   NCCL_ALGO set by environment to Ring
//   Call to connect returned Connection refused, retrying
//   socketPollConnect: connect to 10.0.0.2<45763> returned Connection timed out, retrying (3/34)
// and the oldest ones (2.3-2.6): "NET : Using interface eno2:10.1.2.3<0>",
// "Using internal Network IB", "NET/IB: [0] mlx5_4:1/IB", "NET/IB : Using
// interface eno2 for sideband communication", "Ring 00 : 0[0] -> 1[1] via
// P2P/IPC", "Ring 00 :    0   1   2   3", "comm 0x.. rank 0 nranks 2 - COMPLETE";
// plugins' lines: "P2P plugin v8 IBext_v8", "Plugin Path : /opt/...",
// "NET/OFI Selected Provider is efa (found 4 nics)", "NET/Plugin: Loaded net
// plugin NAME (v8)". A rank's identity comes from its Init lines first, then
// from any line that shows it: the printer of a channel line (the left rank
// of a send, the right of a [receive]), rank 0's ring layout, the R of
// "Trees [0] a/b/c->R->p".
#include <algorithm>
#include <cstddef>
#include <cstring>
#include <string>

#include "core/text.h"
#include "formats/nccl_log/nccl_log.h"

namespace stallscope {
namespace {

// A literal's length is known here, so the compare compiles to a few loads
// instead of a memcmp call: this runs several times on every NCCL line.
template <size_t N>
bool StartsWith(std::string_view s, const char (&p)[N]) {
  return s.size() >= N - 1 && __builtin_memcmp(s.data(), p, N - 1) == 0;
}

// Where `needle` (a literal) starts in `hay`, or npos. string_view::find
// runs memchr on the needle's first byte, and the needles here mostly open
// with a space, the commonest byte of a log line (one memchr call per
// word); this anchors on the first byte that is not a space instead, and
// the literal's length lets the compare compile to a few loads.
template <size_t N>
size_t Find(std::string_view hay, const char (&needle)[N]) {
  constexpr size_t kSize = N - 1;
  static_assert(kSize > 0);
  size_t k = 0;
  while (k < kSize && needle[k] == ' ') ++k;
  if (k == kSize || kSize > hay.size()) return hay.find(needle);
  const char* begin = hay.data();
  const char* p = begin + k;
  const char* last = begin + (hay.size() - kSize) + k;  // the last place the anchor can be
  while (p <= last) {
    p = static_cast<const char*>(memchr(p, needle[k], static_cast<size_t>(last - p) + 1));
    if (p == nullptr) return std::string_view::npos;
    if (__builtin_memcmp(p - k, needle, kSize) == 0) return static_cast<size_t>(p - k - begin);
    ++p;
  }
  return std::string_view::npos;
}

template <size_t N>
bool EndsWith(std::string_view s, const char (&p)[N]) {
  return s.size() >= N - 1 && __builtin_memcmp(s.data() + s.size() - (N - 1), p, N - 1) == 0;
}

template <size_t N>
std::optional<int64_t> IntAfter(std::string_view s, const char (&key)[N]) {
  size_t at = Find(s, key);
  if (at == std::string_view::npos) return std::nullopt;
  std::string_view rest = s.substr(at + N - 1);
  size_t end = 0;
  while (end < rest.size() && rest[end] >= '0' && rest[end] <= '9') ++end;
  if (end == 0 || end > 18) return std::nullopt;
  return ParseInt(rest.substr(0, end));
}

// The hexadecimal number after `key` (at most 16 digits); 0 when none.
template <size_t N>
uint64_t HexAfter(std::string_view s, const char (&key)[N]) {
  size_t at = Find(s, key);
  if (at == std::string_view::npos) return 0;
  uint64_t v = 0;
  for (size_t i = at + N - 1, digits = 0; i < s.size() && digits < 16; ++i, ++digits) {
    const char c = s[i];
    const int d = c >= '0' && c <= '9'   ? c - '0'
                  : c >= 'a' && c <= 'f' ? c - 'a' + 10
                  : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                         : -1;
    if (d < 0) break;
    v = v << 4 | static_cast<uint64_t>(d);
  }
  return v;
}

// The word after "set by environment to ", without a trailing '.'.
std::string_view EnvValue(std::string_view msg) {
  size_t at = Find(msg, " set by environment to ");
  if (at == std::string_view::npos) return {};
  std::string_view v = Trim(msg.substr(at + 23));
  while (!v.empty() && (v.back() == '.' || v.back() == ' ')) v.remove_suffix(1);
  return v.substr(0, 64);
}

constexpr std::string_view kAlgoNames[] = {
    "Tree", "Ring", "CollNetDirect", "CollNetChain", "NVLS", "NVLSTree", "PAT"};
constexpr std::string_view kProtoNames[] = {"LL", "LL128", "Simple"};

}  // namespace

void NcclLogParser::Info(size_t rank_index, std::string_view msg) {
  if (msg.empty()) return;
  NcclRank& rank = summary_.ranks[rank_index];
  NcclProcess& process = summary_.processes[rank.process];
  if (msg[0] == 'N' || msg[0] == 'F' || msg[0] == 'P') ReadNcclFallbackInfo(msg, line_no_, process);
  switch (msg[0]) {
    case 'B':
      if (StartsWith(msg, "Bootstrap : Using") || StartsWith(msg, "Bootstrap: Using")) {
        std::string_view list = msg.substr(Find(msg, "Using") + 5);
        // Printed by every communicator; another address under the same
        // host:pid is another process (TwinRank).
        if (!process.bootstrap.empty()) {
          const std::string& first = process.bootstrap[0].address;
          if (!first.empty() &&
              list.substr(0, first.size() + 32).find(first) == std::string_view::npos) {
            OtherBootstrap(rank_index, list);
          }
          return;
        }
        process.SawForm(msg[9] == ':'                 ? NcclLineForm::kBootstrapUnspaced
                        : StartsWith(Trim(list), "[") ? NcclLineForm::kBootstrapIndexed
                                                      : NcclLineForm::kBootstrapSpaced,
                        line_no_);
        if (SetOnceInterfaces(process.bootstrap, list)) ++summary_.dropped;
        if (!process.bootstrap.empty()) process.bootstrap_line = line_no_;
      } else if (Find(msg, " Bytes -> Algo ") != std::string_view::npos) {
        TuningLine(msg);
      }
      return;
    case 'N':
      if (StartsWith(msg, "NET/Socket : Using")) {
        if (SetOnceInterfaces(process.net_socket, msg.substr(18))) ++summary_.dropped;
        if (process.socket_line == 0 && !process.net_socket.empty()) process.socket_line = line_no_;
      } else if (StartsWith(msg, "NET/IB : Using interface ")) {
        // 2.3: "NET/IB : Using interface eno2 for sideband communication":
        // the out-of-band socket's interface, not an IB device.
        if (process.ib_oob.empty()) {
          std::string_view name = FirstWordOf(msg.substr(25));
          if (!name.empty()) process.ib_oob.push_back({std::string(name), ""});
        }
      } else if (StartsWith(msg, "NET/IB : Using")) {
        if (!process.ib_devices.empty() && !process.ib_oob.empty()) return;
        std::string_view list = msg.substr(14);
        size_t oob = Find(list, "OOB ");
        std::string_view devices = list.substr(0, oob);
        if (SetOnceInterfaces(process.ib_devices, devices)) ++summary_.dropped;
        if (oob != std::string_view::npos) {
          if (SetOnceInterfaces(process.ib_oob, list.substr(oob + 4))) ++summary_.dropped;
          // "; OOB :" or a cut "; OOB": IB has no socket for its handshake.
          if (process.ib_oob.empty()) process.ib_oob_empty = true;
        }
      } else if (StartsWith(msg, "NET/IB : No device found")) {
        process.ib_no_device = true;
      } else if (StartsWith(msg, "NET/IB: [")) {
        // 2.3: one line per device, "NET/IB: [0] mlx5_4:1/IB ".
        size_t close = msg.find(']');
        if (close == std::string_view::npos) return;
        std::string_view device = FirstWordOf(msg.substr(close + 1));
        if (!device.empty() && process.ib_devices.size() < kNcclMaxInterfaces) {
          bool seen = false;
          for (const NcclInterface& i : process.ib_devices) seen = seen || i.name == device;
          if (!seen) process.ib_devices.push_back({std::string(device), ""});
        }
      } else if (StartsWith(msg, "NET : Using interface ")) {
        // 2.3: printed for each use (bootstrap first, then the socket
        // transport or IB's OOB), one interface each.
        std::vector<NcclInterface> one = ParseNcclInterfaces(msg.substr(21));
        if (!one.empty() && process.bootstrap.empty()) process.bootstrap.push_back(one[0]);
      } else if (StartsWith(msg, "NET/OFI ")) {
        ReadNcclOfiInfo(msg.substr(8), line_no_, process);  // aws-ofi-nccl
      } else if (StartsWith(msg, "NET/Plugin: Loaded net plugin ") ||
                 StartsWith(msg, "NET/Plugin : Loaded net plugin ")) {
        size_t at = Find(msg, "net plugin ");
        std::string_view rest = Trim(msg.substr(at + 11));
        size_t paren = rest.rfind(" (");
        if (process.net_plugin.empty()) {
          process.net_plugin = std::string(Trim(rest.substr(0, paren)).substr(0, 64));
        }
      } else if (StartsWith(msg, "NCCL version ")) {
        std::string_view v = ParseNcclVersion(msg.substr(13));
        if (!v.empty() && process.version.empty()) {
          process.version = std::string(v);
          process.version_line = line_no_;
        }
      } else if (StartsWith(msg, "NCCL_IB_DISABLE set by environment to")) {
        std::string_view v = EnvValue(msg);
        process.ib_disabled = !v.empty() && v != "0";
      } else if (StartsWith(msg, "NCCL_SOCKET_IFNAME set by environment to")) {
        process.socket_ifname = std::string(EnvValue(msg));
      } else if (StartsWith(msg, "NCCL_ALGO set by environment") ||
                 StartsWith(msg, "NCCL_PROTO set by environment")) {
        std::string text = "env ";
        text += msg.substr(0, msg.find(' '));
        text += "=";
        text += EnvValue(msg);
        Algorithm(text);
      }
      return;
    case 'U':
      if (StartsWith(msg, "Using network ")) {
        std::string_view net = Trim(msg.substr(14)).substr(0, 64);
        if (process.network.empty()) process.network = std::string(net);
        process.SawForm(NcclLineForm::kUsingNetwork, line_no_);
      } else if (StartsWith(msg, "Using internal Network ") ||
                 StartsWith(msg, "Using external Network ")) {  // 2.3
        std::string_view net = Trim(msg.substr(23)).substr(0, 64);
        if (process.network.empty()) process.network = std::string(net);
        process.SawForm(NcclLineForm::kInternalNetwork, line_no_);
        // 2.3's socket transport uses the interface bootstrap found.
        if (net == "Socket" && process.net_socket.empty() && !process.bootstrap.empty()) {
          process.net_socket.push_back(process.bootstrap[0]);
        }
      }
      return;
    case 'P':
      // The HPC-X plugin: "P2P plugin IBext", "P2P plugin v8 IBext_v8",
      // "Plugin Path : /opt/hpcx/nccl_rdma_sharp_plugin/lib/libnccl-net.so".
      if (StartsWith(msg, "P2P plugin ")) {
        std::string_view name = Trim(msg.substr(11));
        if (StartsWith(name, "v") && name.find(' ') != std::string_view::npos) {
          name = Trim(name.substr(name.find(' ')));
        }
        if (process.net_plugin.empty()) process.net_plugin = std::string(FirstWordOf(name));
      } else if (StartsWith(msg, "Plugin Path : ")) {
        if (process.plugin_path.empty()) {
          process.plugin_path = std::string(Trim(msg.substr(14)).substr(0, 256));
        }
      }
      return;
    case 'R':
      if (StartsWith(msg, "Ring ")) ChannelLine(rank, msg);  // 2.3-2.6
      return;
    case 'r':
      // 2.3: "rank 0 nranks 8", with no "comm 0x.." before it: the identity.
      if (StartsWith(msg, "rank ") && rank.nranks == 0) {
        auto r = IntAfter(msg, "rank ");
        auto n = IntAfter(msg, " nranks ");
        if (r && n && *r >= 0 && *r < *n && *n < (1 << 24)) {
          rank.rank = static_cast<int>(*r);
          rank.nranks = static_cast<int>(*n);
        }
      }
      return;
    case 'C':
      if (StartsWith(msg, "Channel ")) {
        ChannelLine(rank, msg);
      } else if (StartsWith(msg, "Call to connect returned ")) {
        ConnectRetry(msg);
      } else if (StartsWith(msg, "CollNet ") || StartsWith(msg, "Coll ")) {
        ++rank.transports.collnet;
      }
      return;
    case 's':
      // 2.24+: "socketPollConnect: connect returned Connection timed out,
      // retrying (3/34) after sleep for 300 msec"; 2.27+ names the peer:
      // "socketStartConnect: connect to 10.0.0.2<45763> returned ..., retrying (1/34) ...".
      if (Find(msg.substr(0, 40), "Connect: connect ") != std::string_view::npos &&
          Find(msg, ", retrying") != std::string_view::npos) {
        ConnectRetry(msg);
      }
      return;
    case 'c':
      if (StartsWith(msg, "cudaDriverVersion ")) {
        if (auto v = ParseInt(Trim(msg.substr(18)))) process.cuda_driver = *v;
        process.SawForm(NcclLineForm::kCudaDriverVersion, line_no_);
      } else if (StartsWith(msg, "comm ")) {
        if (auto nodes = IntAfter(msg, " nNodes ")) {
          if (*nodes > process.nnodes && *nodes < (1 << 20))
            process.nnodes = static_cast<int>(*nodes);
          process.SawForm(NcclLineForm::kNodesLine, line_no_);
        }
        InitLine(rank_index, msg);
      }
      return;
    case 'n':
    case '[':
      if (Find(msg.substr(0, 48), "comm ") != std::string_view::npos) InitLine(rank_index, msg);
      return;
    case 'I':
      if (StartsWith(msg, "Init timings")) {
        process.SawForm(NcclLineForm::kInitTimings, line_no_);
        size_t at = Find(msg, " total ");
        if (at != std::string_view::npos) {
          std::string_view num = msg.substr(at + 7);
          num = num.substr(0, num.find(' '));
          if (auto seconds = ParseDouble(num)) {
            if (*seconds >= 0 && (!rank.init_seconds || *seconds > *rank.init_seconds)) {
              rank.init_seconds = *seconds;
            }
          }
        }
      }
      return;
    case 'T':
      if (StartsWith(msg, "Trees")) {
        if (rank.trees.empty()) rank.trees = std::string(Trim(msg.substr(5)).substr(0, 256));
        // "[0] 1/-1/-1->0->-1": the printer is the rank between the arrows
        // (every format since 2.4).
        size_t first = Find(msg, "->");
        if (first != std::string_view::npos && rank.rank < 0) {
          std::string_view rest = msg.substr(first + 2);
          size_t second = Find(rest, "->");
          if (auto r = ParseInt(rest.substr(0, second)); r && *r >= 0 && *r < (1 << 24)) {
            rank.rank = static_cast<int>(*r);
          }
        }
      } else if (StartsWith(msg, "TUNER/Plugin: Using ")) {
        std::string text = "tuner plugin ";
        text += FirstWordOf(msg.substr(20));
        Algorithm(text);
      }
      return;
    default:
      if ((msg[0] >= '0' && msg[0] <= '9') || (msg[0] >= 'A' && msg[0] <= 'Z')) {
        if (Find(msg, " Bytes -> Algo ") != std::string_view::npos) {
          TuningLine(msg);
        } else if (msg[0] <= '9') {
          size_t at = Find(msg, " nvls channels");
          if (at != std::string_view::npos) {
            size_t begin = msg.rfind(' ', at - 1);
            begin = begin == std::string_view::npos ? 0 : begin + 1;
            if (auto n = ParseUint(msg.substr(begin, at - begin))) {
              if (*n > rank.transports.nvls_channels) rank.transports.nvls_channels = *n;
            }
          }
        }
      }
      return;
  }
}

// "comm 0x.. rank R nranks N ... commId 0x.. - Init START|COMPLETE" and
// the identity-only forms. The same host:pid:dev printing two ranks of one
// communicator (one commId) is two processes: the line goes to the other.
void NcclLogParser::InitLine(size_t rank_index, std::string_view m) {
  // The words end the line in every version; the search is for text after them.
  bool complete = EndsWith(m, "Init COMPLETE") || EndsWith(m, " - COMPLETE");
  bool start = !complete && EndsWith(m, "Init START");
  if (!complete && !start) {
    complete = Find(m, "Init COMPLETE") != std::string_view::npos;
    start = !complete && Find(m, "Init START") != std::string_view::npos;
  }
  auto r = IntAfter(m, " rank ");
  auto n = IntAfter(m, " nranks ");
  if (!n) n = IntAfter(m, " nRanks ");
  // The commId is read only where the rank's identity is new or differs
  // (a rank's START and COMPLETE lines say the same).
  const NcclRank& now = summary_.ranks[rank_index];
  const bool new_identity = (complete || start) && r && (!now.identity_from_init || now.rank != *r);
  const uint64_t comm = new_identity ? HexAfter(m, " commId 0x") : 0;
  if (new_identity && comm != 0) {
    if (now.identity_from_init && now.comm_id == comm && now.rank != *r) {
      const int number = static_cast<int>(*r);
      size_t twin = TwinRank(rank_index, [&](const NcclRank& t, const NcclProcess&) {
        return (t.comm_id == comm && t.rank == number) || !t.identity_from_init;
      });
      if (twin != kNoRank) rank_index = twin;
    }
  }
  NcclRank& rank = summary_.ranks[rank_index];
  NcclProcess& process = summary_.processes[rank.process];
  if (!complete && !start) {
    // "comm 0x.. rank R nranks N cudaDev D busId B - Abort COMPLETE" (2.6+).
    // Only a WARN no Init COMPLETE followed: a job's teardown aborts too.
    if (EndsWith(m, "Abort COMPLETE")) {
      for (NcclWarnOnProcess& w : process.warns) {
        if (!w.init_completed_after) w.aborted_after = true;
      }
    }
    // "comm 0x.. rank 0 nranks 2" (2.3), "comm .. rank 0 nRanks 16 nNodes 2 ..."
    // (2.20+), "... - Destroy COMPLETE": the identity only, when none is known.
    if (r && n && rank.nranks == 0 && *r >= 0 && *r < *n && *n < (1 << 24)) {
      rank.rank = static_cast<int>(*r);
      rank.nranks = static_cast<int>(*n);
    }
    return;
  }
  (complete ? rank.init_completed : rank.init_started)++;
  if (complete) {
    process.init_done = true;
    process.init_done_line = line_no_;
    for (NcclWarnOnProcess& w : process.warns) w.init_completed_after = true;
  }
  if (start) {
    rank.init_start_line = line_no_;
    process.SawForm(NcclLineForm::kInitStart, line_no_);
  } else if (EndsWith(m, " - COMPLETE")) {
    process.SawForm(NcclLineForm::kCompleteWithoutInit, line_no_);
  }
  if (r && n && *n >= rank.nranks && *n < (1 << 24) && *r >= 0 && *r < *n) {
    rank.rank = static_cast<int>(*r);
    rank.nranks = static_cast<int>(*n);
    rank.identity_from_init = true;
    if (new_identity) rank.comm_id = comm;
  }
}

void NcclLogParser::OtherBootstrap(size_t rank_index, std::string_view list) {
  std::vector<NcclInterface> other = ParseNcclInterfaces(list);
  const std::string& first = ProcessOf(rank_index).bootstrap[0].address;
  if (other.empty() || other[0].address.empty() || other[0].address == first) return;
  const std::string address = other[0].address;
  size_t twin = TwinRank(rank_index, [&](const NcclRank&, const NcclProcess& p) {
    return p.bootstrap.empty() || p.bootstrap[0].address == address;
  });
  if (twin == kNoRank) return;
  NcclProcess& p = ProcessOf(twin);
  if (!p.bootstrap.empty()) return;
  if (other.size() > kNcclMaxInterfaces) other.resize(kNcclMaxInterfaces);
  p.bootstrap = std::move(other);
  p.bootstrap_line = line_no_;
}

bool NcclLogParser::SetOnceInterfaces(std::vector<NcclInterface>& into, std::string_view list) {
  if (!into.empty()) return false;
  std::vector<NcclInterface> parsed = ParseNcclInterfaces(list);
  bool dropped = parsed.size() > kNcclMaxInterfaces;
  if (dropped) parsed.resize(kNcclMaxInterfaces);
  into = std::move(parsed);
  return dropped;
}

std::string_view NcclLogParser::FirstWordOf(std::string_view s) {
  s = Trim(s);
  return s.substr(0, std::min<size_t>(s.find(' '), 64));
}

void NcclLogParser::ChannelLine(NcclRank& rank, std::string_view msg) {
  const size_t word = msg[0] == 'R' ? 5 : 8;  // "Ring " (2.3-2.6) or "Channel "
  size_t via = Find(msg, " via ");
  if (via != std::string_view::npos) {
    std::string_view t = msg.substr(via + 5);
    NcclTransportCounts& c = rank.transports;
    // The version-bound forms: the first channel line's, and SHM's.
    {
      NcclProcess& process = summary_.processes[rank.process];
      constexpr uint32_t kChannelForms =
          1u << static_cast<unsigned>(NcclLineForm::kRingVia) |
          1u << static_cast<unsigned>(NcclLineForm::kChannelSubIndex) |
          1u << static_cast<unsigned>(NcclLineForm::kChannelNoSubIndex);
      if (!(process.line_forms & kChannelForms) || (!t.empty() && (t[0] == 'd' || t[0] == 'S'))) {
        ChannelForm(process, msg, word, t);
      }
    }
    // The printer: "a[x] -> b[y] [send] via" is printed by a, "[receive]" by
    // b; P2P and SHM lines by the sender; 2.3's NET lines are the receiver's.
    if (rank.rank < 0) {
      size_t colon = Find(msg, " : ");
      size_t arrow = Find(msg, " -> ");
      if (colon != std::string_view::npos && arrow != std::string_view::npos && arrow > colon) {
        std::string_view left = Trim(msg.substr(colon + 3, arrow - colon - 3));
        std::string_view right = msg.substr(arrow + 4, via - arrow - 4);
        bool receive =
            Find(right, "[receive]") != std::string_view::npos ||
            (word == 5 && StartsWith(t, "NET/") && Find(right, "[send]") == std::string_view::npos);
        std::string_view who = receive ? Trim(right) : left;
        who = who.substr(0, who.find_first_of("[ "));
        if (auto r = ParseInt(who); r && *r >= 0 && *r < (1 << 24))
          rank.rank = static_cast<int>(*r);
      }
    }
    if (StartsWith(t, "NET/")) {
      // The net's name as the channel line gives it: "IB", "Socket",
      // "IBext_v8", "AWS Libfabric" (a plugin's name may hold a space).
      std::string_view name = t.substr(4);
      size_t slash = name.find('/');
      name = name.substr(0, std::min<size_t>(slash, 48));
      NcclProcess& process = summary_.processes[rank.process];
      // "NET/Socket/1": the index into the process's NET/Socket list.
      if (name == "Socket" && slash != std::string_view::npos) {
        std::string_view index = t.substr(4 + slash + 1);
        size_t digits = 0;
        while (digits < index.size() && digits < 2 && index[digits] >= '0' &&
               index[digits] <= '9') {
          ++digits;
        }
        if (auto i = ParseUint(index.substr(0, digits)); i && *i < 64) {
          process.socket_devs_used |= uint64_t{1} << *i;
        }
      }
      bool seen = false;
      for (const std::string& n : process.channel_nets) seen = seen || n == name;
      if (!seen && process.channel_nets.size() < kNcclMaxInterfaces) {
        process.channel_nets.emplace_back(name);
      }
    }
    if (StartsWith(t, "P2P")) {
      ++c.p2p;
    } else if (StartsWith(t, "SHM") || StartsWith(t, "direct shared memory")) {
      ++c.shm;
    } else if (StartsWith(t, "NET/Socket")) {
      ++c.net_socket;
      NcclProcess& process = summary_.processes[rank.process];
      if (process.socket_channel_line == 0) process.socket_channel_line = line_no_;
    } else if (StartsWith(t, "NET/IB")) {  // also the IBext plugin: verbs all the same
      ++c.net_ib;
    } else if (StartsWith(t, "NET/")) {
      ++c.net_other;
    } else if (StartsWith(t, "COLLNET")) {
      ++c.collnet;
    }
    // Anchored on 'G', not on the '/' every transport is full of.
    for (std::string_view rest = t;;) {
      size_t at = Find(rest, "GDRDMA");
      if (at == std::string_view::npos) break;
      if (at > 0 && rest[at - 1] == '/') {
        ++c.gdrdma;
        break;
      }
      rest.remove_prefix(at + 1);
    }
    return;
  }
  // "Channel 00/02 :    0   1   2   3": a ring as rank 0 prints it.
  size_t colon = Find(msg, " : ");
  if (colon == std::string_view::npos) colon = msg.find(" :");
  if (colon == std::string_view::npos) return;
  std::string ring(Trim(msg.substr(word, colon - word)));
  ring += ":";
  std::string_view order = msg.substr(colon + 2);
  bool any = false;
  for (size_t i = 0; i < order.size();) {
    while (i < order.size() && order[i] == ' ') ++i;
    size_t j = i;
    while (j < order.size() && order[j] >= '0' && order[j] <= '9') ++j;
    if (j == i) {
      if (i < order.size()) return;  // not a ring line
      break;
    }
    ring += " ";
    ring += order.substr(i, j - i);
    any = true;
    i = j;
  }
  if (!any) return;
  if (rank.rank < 0) rank.rank = 0;  // only rank 0 prints the layout
  // It lists every rank up to 20: the communicator's size when no Init line tells.
  size_t listed = static_cast<size_t>(std::count(ring.begin(), ring.end(), ' '));
  if (listed < 20) {
    int n = static_cast<int>(listed);
    layout_ranks_ = layout_ranks_ == 0 || layout_ranks_ == n ? n : -1;
  }
  for (const std::string& r : summary_.rings) {
    if (r == ring) return;
  }
  if (summary_.rings.size() >= kNcclMaxRings) {
    ++summary_.dropped;
    return;
  }
  summary_.rings.push_back(std::move(ring));
}

void NcclLogParser::ChannelForm(NcclProcess& process, std::string_view msg, size_t word,
                                std::string_view transport) {
  // Which NCCL printed it: "Ring NN :" (2.3-2.6), "Channel NN :" (P2P and
  // NET until 2.13 and 2.11), "Channel NN/M :" (NET from 2.12, P2P from
  // 2.14); SHM's "direct shared memory" (to 2.12) or "SHM/" (2.13+).
  const uint64_t line = line_no_;
  if (StartsWith(transport, "direct shared memory")) {
    process.SawForm(NcclLineForm::kDirectSharedMemory, line);
  } else if (StartsWith(transport, "SHM/")) {
    process.SawForm(NcclLineForm::kShmSlash, line);
  }
  if (word == 5) {
    process.SawForm(NcclLineForm::kRingVia, line);
    return;
  }
  size_t i = word;
  while (i < msg.size() && msg[i] >= '0' && msg[i] <= '9') ++i;
  if (i == word || i >= msg.size()) return;
  if (msg[i] == '/') {
    process.SawForm(NcclLineForm::kChannelSubIndex, line);
  } else if (msg[i] == ' ' && (StartsWith(transport, "P2P/") || StartsWith(transport, "NET/"))) {
    process.SawForm(NcclLineForm::kChannelNoSubIndex, line);
  }
}

void NcclLogParser::TuningLine(std::string_view msg) {
  // "AllReduce: 1048576 Bytes -> Algo RING proto LL128 ..." or, 2.19-2.21,
  // "1048576 Bytes -> Algo 1 proto 2 time 24.000000".
  std::string text;
  size_t colon = msg.find(": ");
  if (colon != std::string_view::npos && colon < Find(msg, " Bytes")) {
    text = std::string(msg.substr(0, colon));
    text += " ";
  }
  size_t at = Find(msg, " Bytes -> Algo ");
  std::string_view rest = msg.substr(at + 15);
  std::string_view algo = rest.substr(0, rest.find(' '));
  std::string_view proto;
  size_t p = Find(rest, " proto ");
  if (p != std::string_view::npos) {
    proto = rest.substr(p + 7);
    proto = proto.substr(0, proto.find(' '));
  }
  if (auto a = ParseUint(algo); a && *a < std::size(kAlgoNames)) algo = kAlgoNames[*a];
  if (auto q = ParseUint(proto); q && *q < std::size(kProtoNames)) proto = kProtoNames[*q];
  text += std::string(algo.substr(0, 32));
  text += "/";
  text += std::string(proto.substr(0, 32));
  Algorithm(text);
}

void NcclLogParser::ConnectRetry(std::string_view msg) {
  // "Call to connect returned Connection refused, retrying" (2.4-2.23),
  // "socketPollConnect: connect returned X, retrying (3/34) after sleep ..."
  // (2.24-2.26), "socketStartConnect: connect to PEER returned X, retrying (1/34) ..." (2.27+).
  ++summary_.connect_retries;
  if (summary_.connect_retry_line == 0) summary_.connect_retry_line = line_no_;
  size_t returned = Find(msg, " returned ");
  if (returned == std::string_view::npos) return;
  std::string_view reason = msg.substr(returned + 10);
  reason = reason.substr(0, Find(reason, ", retrying"));
  if (summary_.connect_retry_reason.empty()) summary_.connect_retry_reason = std::string(reason);
  if (size_t to = Find(msg.substr(0, returned), "connect to "); to != std::string_view::npos) {
    std::string_view peer = Trim(msg.substr(to + 11, returned - to - 11));
    if (summary_.connect_retry_peer.empty()) summary_.connect_retry_peer = std::string(peer);
  }
  if (size_t open = Find(msg, "retrying ("); open != std::string_view::npos) {
    std::string_view count = msg.substr(open + 10);
    size_t slash = count.find('/');
    if (auto n = ParseUint(count.substr(0, slash)); n && *n > summary_.connect_retry_max) {
      summary_.connect_retry_max = *n;
    }
    if (slash != std::string_view::npos) {
      std::string_view limit = count.substr(slash + 1);
      if (auto l = ParseUint(limit.substr(0, limit.find(')')))) summary_.connect_retry_limit = *l;
    }
  }
}

}  // namespace stallscope

#include "probe/ethtool_stats.h"

#include <fmt/format.h>
#include <linux/ethtool.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <optional>
#include <vector>

#include "core/read_log.h"
#include "core/text.h"

namespace stallscope {
namespace {

// Drivers print a few thousand counters at most (mlx5 with many queues);
// more than this is not a statistics table.
constexpr uint32_t kMaxCounters = 1 << 16;

// Kernels before 6.x write as many names and values as the driver has at
// the moment of each call, whatever count we pass (ethtool_gstrings.len and
// ethtool_stats.n_stats come back as the count written); newer ones write
// none (len 0) when the count passed is not the driver's. The count can
// change between the calls (channels set with `ethtool -L`, a port coming
// up), so each block has room for twice the count announced and ends where
// an unwritable page begins: a driver that outgrew even that room makes the
// ioctl fail with EFAULT instead of writing past the block. A read that
// came back with another count than announced is read again, a few times.
constexpr int kReadTries = 3;

class Socket {
 public:
  Socket() : fd_(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0)) {}
  ~Socket() {
    if (fd_ >= 0) ::close(fd_);
  }
  int fd() const { return fd_; }

 private:
  int fd_;
};

// `size` bytes (8-aligned) that end where a PROT_NONE page begins.
class GuardedBlock {
 public:
  explicit GuardedBlock(size_t size) {
    const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
    size = (size + 7) / 8 * 8;
    mapped_ = (size + page - 1) / page * page + page;
    void* base =
        ::mmap(nullptr, mapped_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base == MAP_FAILED) return;
    base_ = static_cast<uint8_t*>(base);
    if (::mprotect(base_ + mapped_ - page, page, PROT_NONE) != 0) return;
    data_ = base_ + mapped_ - page - size;
  }
  ~GuardedBlock() {
    if (base_ != nullptr) ::munmap(base_, mapped_);
  }
  GuardedBlock(const GuardedBlock&) = delete;
  GuardedBlock& operator=(const GuardedBlock&) = delete;
  uint8_t* data() const { return data_; }  // null when the mapping failed

 private:
  uint8_t* base_ = nullptr;
  uint8_t* data_ = nullptr;
  size_t mapped_ = 0;
};

// One SIOCETHTOOL call with `data` as the command block.
int EthtoolCall(int fd, const std::string& interface, void* data) {
  struct ifreq request;
  std::memset(&request, 0, sizeof request);
  std::memcpy(request.ifr_name, interface.data(), interface.size());
  request.ifr_data = static_cast<char*>(data);
  return ::ioctl(fd, SIOCETHTOOL, &request);
}

Status IoctlError(const std::string& interface, const char* what, int error) {
  if (error == EOPNOTSUPP || error == ENODEV || error == EINVAL) {
    return Status::NotFound(fmt::format("{}: the driver gives no statistics ({}: {})", interface,
                                        what, std::strerror(error)));
  }
  return Status::FromErrno(fmt::format("{}: SIOCETHTOOL {}", interface, what), error);
}

Result<uint32_t> CounterCount(const EthtoolIoctl& call, const std::string& interface) {
  // ethtool_sset_info is followed by one u32 per set asked for.
  alignas(struct ethtool_sset_info)
      uint8_t block[sizeof(struct ethtool_sset_info) + sizeof(uint32_t)] = {};
  auto* sset = reinterpret_cast<struct ethtool_sset_info*>(block);
  sset->cmd = ETHTOOL_GSSET_INFO;
  sset->sset_mask = 1ULL << ETH_SS_STATS;
  if (call(interface, sset) == 0) {
    return (sset->sset_mask & (1ULL << ETH_SS_STATS)) ? sset->data[0] : 0;
  }
  // Kernels before 2.6.34 and some drivers: the count in the driver info.
  struct ethtool_drvinfo info;
  std::memset(&info, 0, sizeof info);
  info.cmd = ETHTOOL_GDRVINFO;
  if (call(interface, &info) != 0) return IoctlError(interface, "ETHTOOL_GDRVINFO", errno);
  return info.n_stats;
}

// The `count` names and values, in blocks with room for `room` of each;
// nullopt when the driver's count changed during the read (read again).
Result<std::optional<NicStats>> ReadOnce(const EthtoolIoctl& call, const std::string& interface,
                                         uint32_t count, size_t room) {
  GuardedBlock strings(sizeof(struct ethtool_gstrings) + room * ETH_GSTRING_LEN);
  GuardedBlock values(sizeof(struct ethtool_stats) + room * sizeof(uint64_t));
  if (strings.data() == nullptr || values.data() == nullptr) {
    return Status::FromErrno(interface + ": memory for the driver's statistics", errno);
  }
  auto* names = reinterpret_cast<struct ethtool_gstrings*>(strings.data());
  names->cmd = ETHTOOL_GSTRINGS;
  names->string_set = ETH_SS_STATS;
  names->len = count;
  if (call(interface, names) != 0) {
    if (errno == EFAULT) return std::optional<NicStats>();
    return IoctlError(interface, "ETHTOOL_GSTRINGS", errno);
  }
  auto* stats = reinterpret_cast<struct ethtool_stats*>(values.data());
  stats->cmd = ETHTOOL_GSTATS;
  stats->n_stats = count;
  if (call(interface, stats) != 0) {
    if (errno == EFAULT) return std::optional<NicStats>();
    return IoctlError(interface, "ETHTOOL_GSTATS", errno);
  }
  // Names and values pair up only when both calls saw the count announced.
  if (names->len != count || stats->n_stats != count) return std::optional<NicStats>();
  NicStats out;
  out.interface = interface;
  out.source = "SIOCETHTOOL";
  out.counters.reserve(names->len);
  for (size_t i = 0; i < names->len; ++i) {
    const char* name = reinterpret_cast<const char*>(names->data + i * ETH_GSTRING_LEN);
    out.counters.push_back({std::string(name, strnlen(name, ETH_GSTRING_LEN)), stats->data[i]});
  }
  return std::optional<NicStats>(std::move(out));
}

Result<NicStats> ReadLive(const std::string& interface) {
  Socket socket;
  if (socket.fd() < 0) return Status::FromErrno("socket for SIOCETHTOOL", errno);
  return ReadLiveNicStats(interface, [fd = socket.fd()](const std::string& name, void* block) {
    return EthtoolCall(fd, name, block);
  });
}

}  // namespace

Result<NicStats> ReadLiveNicStats(const std::string& interface, const EthtoolIoctl& call) {
  uint32_t announced = 0;
  for (int attempt = 0; attempt < kReadTries; ++attempt) {
    Result<uint32_t> count = CounterCount(call, interface);
    if (!count.ok()) return count.status();
    announced = *count;
    if (announced == 0) {
      return Status::NotFound(interface + ": the driver gives no statistics (0 counters)");
    }
    if (announced > kMaxCounters) {
      return Status::ParseError(interface, 0,
                                fmt::format("the driver reports {} counters", announced));
    }
    const size_t room = std::min<size_t>(2 * size_t{announced}, kMaxCounters);
    Result<std::optional<NicStats>> read = ReadOnce(call, interface, announced, room);
    if (!read.ok()) return read.status();
    if (read->has_value()) return std::move(**read);
  }
  return Status::Unavailable(fmt::format(
      "{}: the driver's number of counters kept changing while they were read ({} tries, {} "
      "the last time); read again later",
      interface, kReadTries, announced));
}

Result<NicStats> ParseEthtoolStats(std::string_view text, std::string_view source) {
  NicStats out;
  out.source = std::string(source);
  size_t number = 0;
  for (std::string_view line : SplitLines(text)) {
    ++number;
    std::string_view t = Trim(line);
    if (t.empty()) continue;
    if (number == 1 && t == "NIC statistics:") continue;
    size_t colon = t.rfind(':');
    if (colon == std::string_view::npos || colon == 0) {
      return Status::ParseError(source, number, "not a \"name: value\" line");
    }
    std::string_view name = Trim(t.substr(0, colon));
    std::optional<uint64_t> value = ParseUint(Trim(t.substr(colon + 1)));
    if (!value) {
      return Status::ParseError(source, number,
                                fmt::format("the value of {} is not a whole number", name));
    }
    if (out.counters.size() >= kMaxCounters) {
      return Status::ParseError(source, number, "more counters than any driver gives");
    }
    out.counters.push_back({std::string(name), *value});
  }
  return out;
}

Result<NicStats> ReadNicStats(const Root& root, const std::string& interface) {
  if (interface.empty() || interface.size() >= IFNAMSIZ ||
      interface.find('/') != std::string::npos || interface == "." || interface == "..") {
    return Status::InvalidArgument(fmt::format("\"{}\" is not an interface name", interface));
  }
  if (root.IsLive()) {
    Result<NicStats> live = ReadLive(interface);
    // A capture holds the answer in the form a non-live root reads back.
    if (live.ok() && CurrentReadLog() != nullptr) {
      std::string text = "NIC statistics:\n";
      for (const auto& counter : live->counters) {
        text += fmt::format("     {}: {}\n", counter.name, counter.value);
      }
      NoteWrittenForCapture("/ethtool/" + interface, text);
    }
    return live;
  }
  const std::string path = root.Path("/ethtool/" + interface);
  Result<std::string> text = ReadFile(path, 4 << 20);
  if (!text.ok()) return text.status();
  Result<NicStats> stats = ParseEthtoolStats(*text, path);
  if (!stats.ok()) return stats.status();
  stats->interface = interface;
  return stats;
}

// At most this many interfaces: a host with thousands of veths (one per
// container) would otherwise cost thousands of ioctls per reading.
constexpr size_t kMaxNicStatsInterfaces = 64;

std::vector<NicStats> ReadEveryNicStats(const Root& root, std::vector<std::string>* notes) {
  std::vector<NicStats> out;
  Result<std::vector<std::string>> names =
      ListDirectory(root.Path(root.IsLive() ? "/sys/class/net" : "/ethtool"));
  if (!names.ok()) return out;
  for (const std::string& name : *names) {
    if (out.size() >= kMaxNicStatsInterfaces) break;
    Result<NicStats> stats = ReadNicStats(root, name);
    if (stats.ok()) {
      out.push_back(std::move(*stats));
    } else if (!stats.status().IsNotFound() && notes != nullptr) {
      notes->push_back("NIC statistics: " + stats.status().message());
    }
  }
  return out;
}

}  // namespace stallscope

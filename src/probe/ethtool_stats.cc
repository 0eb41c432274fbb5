#include "probe/ethtool_stats.h"

#include <fmt/format.h>
#include <linux/ethtool.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "core/read_log.h"
#include "core/text.h"

namespace stallscope {
namespace {

// Drivers print a few thousand counters at most (mlx5 with many queues);
// more than this is not a statistics table.
constexpr uint32_t kMaxCounters = 1 << 16;

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

Result<uint32_t> CounterCount(int fd, const std::string& interface) {
  // ethtool_sset_info is followed by one u32 per set asked for.
  alignas(struct ethtool_sset_info)
      uint8_t block[sizeof(struct ethtool_sset_info) + sizeof(uint32_t)] = {};
  auto* sset = reinterpret_cast<struct ethtool_sset_info*>(block);
  sset->cmd = ETHTOOL_GSSET_INFO;
  sset->sset_mask = 1ULL << ETH_SS_STATS;
  if (EthtoolCall(fd, interface, sset) == 0) {
    return (sset->sset_mask & (1ULL << ETH_SS_STATS)) ? sset->data[0] : 0;
  }
  // Kernels before 2.6.34 and some drivers: the count in the driver info.
  struct ethtool_drvinfo info;
  std::memset(&info, 0, sizeof info);
  info.cmd = ETHTOOL_GDRVINFO;
  if (EthtoolCall(fd, interface, &info) != 0)
    return IoctlError(interface, "ETHTOOL_GDRVINFO", errno);
  return info.n_stats;
}

Result<NicStats> ReadLive(const std::string& interface) {
  Socket socket;
  if (socket.fd() < 0) return Status::FromErrno("socket for SIOCETHTOOL", errno);
  Result<uint32_t> count = CounterCount(socket.fd(), interface);
  if (!count.ok()) return count.status();
  if (*count == 0) {
    return Status::NotFound(interface + ": the driver gives no statistics (0 counters)");
  }
  if (*count > kMaxCounters) {
    return Status::ParseError(interface, 0, fmt::format("the driver reports {} counters", *count));
  }
  const size_t n = *count;
  std::vector<uint8_t> strings(sizeof(struct ethtool_gstrings) + n * ETH_GSTRING_LEN);
  auto* names = reinterpret_cast<struct ethtool_gstrings*>(strings.data());
  names->cmd = ETHTOOL_GSTRINGS;
  names->string_set = ETH_SS_STATS;
  names->len = static_cast<uint32_t>(n);
  if (EthtoolCall(socket.fd(), interface, names) != 0)
    return IoctlError(interface, "ETHTOOL_GSTRINGS", errno);
  std::vector<uint8_t> values(sizeof(struct ethtool_stats) + n * sizeof(uint64_t));
  auto* stats = reinterpret_cast<struct ethtool_stats*>(values.data());
  stats->cmd = ETHTOOL_GSTATS;
  stats->n_stats = static_cast<uint32_t>(n);
  if (EthtoolCall(socket.fd(), interface, stats) != 0)
    return IoctlError(interface, "ETHTOOL_GSTATS", errno);
  // The driver may give fewer than it announced (queues went away).
  const size_t given =
      std::min({n, static_cast<size_t>(names->len), static_cast<size_t>(stats->n_stats)});
  NicStats out;
  out.interface = interface;
  out.source = "SIOCETHTOOL";
  out.counters.reserve(given);
  for (size_t i = 0; i < given; ++i) {
    const char* name = reinterpret_cast<const char*>(names->data + i * ETH_GSTRING_LEN);
    out.counters.push_back({std::string(name, strnlen(name, ETH_GSTRING_LEN)), stats->data[i]});
  }
  return out;
}

}  // namespace

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

#include "probe/infiniband.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <optional>
#include <string>

#include "core/file.h"
#include "core/text.h"

namespace stallscope {
namespace {

// The IBA PortCounters PortXmitData/PortRcvData count octets divided by 4.
constexpr uint64_t kBytesPerDataWord = 4;
constexpr uint64_t kMaxLid = 0xffff;

// The attribute text without its trailing newline; an extra line is not
// something the kernel writes, so it is a parse error rather than ignored.
Result<std::string_view> SingleLine(std::string_view text, std::string_view source) {
  text = Trim(text);
  if (text.empty()) return Status::ParseError(source, 1, "empty");
  if (text.find('\n') != std::string_view::npos) {
    return Status::ParseError(source, 2, "expected a single line");
  }
  return text;
}

// Counter files: the driver may not offer one (EINVAL, ENOENT) -> nullopt.
// port_xmit_wait counts ticks (a multiple of the symbol time each chip
// picks); port_xmit_data and port_rcv_data count 4-octet words.
Result<std::optional<uint64_t>> ReadCounter(const std::string& path) {
  Result<std::string> text = ReadAttribute(path);
  if (!text.ok()) return std::optional<uint64_t>();
  std::optional<uint64_t> value = ParseUint(*text);
  if (!value) return Status::ParseError(path, 1, "expected a counter, got '" + *text + "'");
  return value;
}

Result<std::optional<uint64_t>> ReadDataCounterBytes(const std::string& path) {
  Result<std::optional<uint64_t>> words = ReadCounter(path);
  if (!words.ok() || !*words) return words;
  if (**words > UINT64_MAX / kBytesPerDataWord) {
    return Status::ParseError(path, 1, "counter of 4-byte words overflows 64-bit bytes");
  }
  return std::optional<uint64_t>(**words * kBytesPerDataWord);
}

// The netdev of a port. RoCE ports name theirs in gid_attrs/ndevs/0 (the
// netdev of GID 0). IPoIB ports, and kernels without gid_attrs, are found
// through the PCI function's net/ directory: dev_port is the 0-based port
// index, so a dual-port mlx4 HCA maps ib0 to port 1 and ib1 to port 2.
std::string FindNetdev(const std::string& hca_dir, uint32_t port) {
  Result<std::string> ndev =
      ReadAttribute(hca_dir + "/ports/" + std::to_string(port) + "/gid_attrs/ndevs/0");
  if (ndev.ok() && !ndev->empty()) return *ndev;
  Result<std::vector<std::string>> netdevs = ListDirectory(hca_dir + "/device/net");
  if (!netdevs.ok()) return {};
  for (const std::string& name : *netdevs) {
    std::optional<uint64_t> dev_port =
        ReadUintAttribute(hca_dir + "/device/net/" + name + "/dev_port");
    if (dev_port.value_or(0) + 1 == port) return name;
  }
  return {};
}

std::string ReadString(const std::string& path) {
  Result<std::string> text = ReadAttribute(path);
  return text.ok() ? *text : std::string();
}

Result<InfinibandPort> ReadPort(const std::string& hca_dir, uint32_t number) {
  const std::string dir = hca_dir + "/ports/" + std::to_string(number);
  InfinibandPort port;
  port.port = number;

  std::string path = dir + "/state";
  if (Result<std::string> text = ReadAttribute(path); text.ok()) {
    Result<IbPortState> state = ParseIbPortState(*text, path);
    if (!state.ok()) return state.status();
    port.state = std::move(*state);
  }
  path = dir + "/phys_state";
  if (Result<std::string> text = ReadAttribute(path); text.ok()) {
    Result<IbPortState> state = ParseIbPortState(*text, path);
    if (!state.ok()) return state.status();
    port.phys_state = std::move(*state);
  }
  path = dir + "/rate";
  if (Result<std::string> text = ReadAttribute(path); text.ok()) {
    Result<IbRate> rate = ParseIbRate(*text, path);
    if (!rate.ok()) return rate.status();
    port.rate = std::move(*rate);
  }
  port.link_layer = ReadString(dir + "/link_layer");
  port.roce = port.link_layer == "Ethernet";
  path = dir + "/lid";
  if (Result<std::string> text = ReadAttribute(path); text.ok()) {
    Result<uint32_t> lid = ParseIbLid(*text, path);
    if (!lid.ok()) return lid.status();
    port.lid = *lid;
  }

  const std::string counters = dir + "/counters/";
  struct CounterFile {
    const char* name;
    std::optional<uint64_t> InfinibandPort::*field;
    bool data_words;
  };
  static constexpr CounterFile kCounters[] = {
      {"port_xmit_data", &InfinibandPort::xmit_bytes, true},
      {"port_rcv_data", &InfinibandPort::rcv_bytes, true},
      {"port_rcv_errors", &InfinibandPort::rcv_errors, false},
      {"symbol_error", &InfinibandPort::symbol_errors, false},
      {"link_downed", &InfinibandPort::link_downed, false},
      {"port_xmit_discards", &InfinibandPort::xmit_discards, false},
      {"port_xmit_wait", &InfinibandPort::xmit_wait, false},
      {"excessive_buffer_overrun_errors", &InfinibandPort::excessive_buffer_overrun_errors, false},
      {"local_link_integrity_errors", &InfinibandPort::local_link_integrity_errors, false},
  };
  for (const CounterFile& counter : kCounters) {
    const std::string counter_path = counters + counter.name;
    Result<std::optional<uint64_t>> value =
        counter.data_words ? ReadDataCounterBytes(counter_path) : ReadCounter(counter_path);
    if (!value.ok()) return value.status();
    port.*counter.field = *value;
  }
  // hw_counters/ also holds settings (lifespan) and dozens of counters
  // that say nothing of congestion: only these are read.
  static constexpr const char* kHwCounters[] = {"out_of_buffer", "np_cnp_sent", "rp_cnp_handled",
                                                "np_ecn_marked_roce_packets"};
  for (const char* name : kHwCounters) {
    Result<std::optional<uint64_t>> value = ReadCounter(dir + "/hw_counters/" + name);
    if (!value.ok()) return value.status();
    if (*value) port.hw_counters.push_back({name, **value});
  }
  port.netdev = FindNetdev(hca_dir, number);
  return port;
}

}  // namespace

Result<IbPortState> ParseIbPortState(std::string_view text, std::string_view source) {
  Result<std::string_view> line = SingleLine(text, source);
  if (!line.ok()) return line.status();
  std::string_view view = *line;
  size_t colon = view.find(':');
  if (colon == std::string_view::npos) {
    return Status::ParseError(source, 1, "expected '<number>: <name>'");
  }
  std::optional<uint64_t> code = ParseUint(view.substr(0, colon));
  if (!code || *code > 255) {
    return Status::ParseError(source, 1, "expected a state number before ':'");
  }
  std::string_view name = Trim(view.substr(colon + 1));
  // Names may hold a space ("Phy Test") but never are empty.
  if (name.empty()) return Status::ParseError(source, 1, "expected a state name after ':'");
  IbPortState state;
  state.code = static_cast<int>(*code);
  state.name = std::string(name);
  return state;
}

Result<IbRate> ParseIbRate(std::string_view text, std::string_view source) {
  Result<std::string_view> line = SingleLine(text, source);
  if (!line.ok()) return line.status();
  std::string_view view = *line;
  // The kernel prints "%d%s Gb/sec (%dX%s)", the %s being ".5" or empty.
  size_t space = view.find(' ');
  if (space == std::string_view::npos) {
    return Status::ParseError(source, 1, "expected '<number> Gb/sec'");
  }
  std::string_view number = view.substr(0, space);
  double gbps = 0;
  auto [end, error] = std::from_chars(number.data(), number.data() + number.size(), gbps);
  if (error != std::errc() || end != number.data() + number.size() || !std::isfinite(gbps) ||
      gbps < 0) {
    return Status::ParseError(source, 1,
                              "expected a rate in Gb/sec, got '" + std::string(number) + "'");
  }
  std::string_view unit = Trim(view.substr(space + 1));
  constexpr std::string_view kUnit = "Gb/sec";
  if (unit.substr(0, kUnit.size()) != kUnit) {
    return Status::ParseError(source, 1, "expected the unit 'Gb/sec'");
  }
  std::string_view detail = Trim(unit.substr(kUnit.size()));
  if (!detail.empty() && (detail.front() != '(' || detail.back() != ')')) {
    return Status::ParseError(source, 1, "expected '(<width>X <speed>)' after the unit");
  }
  IbRate rate;
  rate.gbps = gbps;
  rate.text = std::string(view);
  return rate;
}

Result<uint32_t> ParseIbLid(std::string_view text, std::string_view source) {
  Result<std::string_view> line = SingleLine(text, source);
  if (!line.ok()) return line.status();
  std::string_view view = *line;
  if (view.size() < 3 || view[0] != '0' || (view[1] != 'x' && view[1] != 'X')) {
    return Status::ParseError(source, 1, "expected a hexadecimal LID like 0x1a");
  }
  view.remove_prefix(2);
  uint64_t lid = 0;
  auto [end, error] = std::from_chars(view.data(), view.data() + view.size(), lid, 16);
  if (error != std::errc() || end != view.data() + view.size() || lid > kMaxLid) {
    return Status::ParseError(source, 1, "expected a 16-bit hexadecimal LID");
  }
  return static_cast<uint32_t>(lid);
}

Result<std::vector<InfinibandDevice>> ReadInfinibandDevices(const Root& root) {
  const std::string class_dir = root.Path("/sys/class/infiniband");
  std::vector<InfinibandDevice> devices;
  Result<std::vector<std::string>> names = ListDirectory(class_dir);
  if (!names.ok()) {
    if (names.status().IsNotFound()) return devices;  // no RDMA driver loaded
    return names.status();
  }
  for (const std::string& name : *names) {
    const std::string dir = class_dir + "/" + name;
    InfinibandDevice device;
    device.name = name;
    device.hca_type = ReadString(dir + "/hca_type");
    device.firmware_version = ReadString(dir + "/fw_ver");
    device.node_guid = ReadString(dir + "/node_guid");
    Result<std::vector<std::string>> ports = ListDirectory(dir + "/ports");
    if (ports.ok()) {
      std::vector<uint32_t> numbers;
      for (const std::string& entry : *ports) {
        std::optional<uint64_t> number = ParseUint(entry);
        if (number && *number > 0 && *number <= UINT32_MAX) {
          numbers.push_back(static_cast<uint32_t>(*number));
        }
      }
      // ListDirectory sorts as text ("10" before "2"); ports go by number.
      std::sort(numbers.begin(), numbers.end());
      for (uint32_t number : numbers) {
        Result<InfinibandPort> port = ReadPort(dir, number);
        if (!port.ok()) return port.status();
        device.ports.push_back(std::move(*port));
      }
    }
    devices.push_back(std::move(device));
  }
  return devices;
}

}  // namespace stallscope

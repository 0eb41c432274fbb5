#include "render/net_probe.h"

#include <fmt/format.h>

#include "core/units.h"

namespace stallscope {
namespace {

std::string Mtu(const std::optional<uint64_t>& mtu) {
  return mtu ? std::to_string(*mtu) : "unknown";
}

std::string Bits(double bits_per_second) {
  if (bits_per_second >= 1e9) return fmt::format("{:.2f} Gbit/s", bits_per_second / 1e9);
  return fmt::format("{:.1f} Mbit/s", bits_per_second / 1e6);
}

nlohmann::ordered_json OrNull(const std::optional<uint64_t>& v) {
  return v ? nlohmann::ordered_json(*v) : nlohmann::ordered_json(nullptr);
}

nlohmann::ordered_json ThroughputJson(const std::optional<net::ThroughputResult>& t) {
  if (!t) return nullptr;
  return {{"streams", t->streams},
          {"bytes", t->bytes},
          {"seconds", t->seconds},
          {"bits_per_second", t->bits_per_second}};
}

}  // namespace

MtuObservation MtuObservationOf(const net::ProbeResult& r) {
  MtuObservation o;
  o.peer = r.address;
  o.local_interface = r.local_interface;
  o.local_mtu = r.local_mtu;
  if (r.mtu.measured) {
    o.path_mtu = r.mtu.path_mtu;
    o.kernel_mtu = r.mtu.kernel_mtu;
  }
  o.peer_interface = r.peer_interface;
  o.peer_mtu = r.peer_mtu;
  return o;
}

std::string RenderNetProbeText(const net::ProbeResult& r) {
  std::string out = fmt::format("net probe {} ({}) port {}\n", r.host, r.address, r.port);
  out += fmt::format("  route:       via {} from {}, MTU {}\n",
                     r.local_interface.empty() ? "an unknown interface" : r.local_interface,
                     r.local_address, Mtu(r.local_mtu));
  out += fmt::format("  peer:        {} on {}, MTU {}\n", r.address,
                     r.peer_interface.empty() ? "an unknown interface" : r.peer_interface,
                     Mtu(r.peer_mtu));
  if (r.mtu.measured) {
    out += fmt::format(
        "  path MTU:    {} (largest don't-fragment UDP payload acknowledged: {} bytes, {} "
        "probes; kernel IP_MTU {})\n",
        r.mtu.path_mtu, r.mtu.largest_payload, r.mtu.probes, Mtu(r.mtu.kernel_mtu));
  } else {
    out += fmt::format("  path MTU:    not measured: {}\n", r.mtu.note);
  }
  out += fmt::format(
      "  latency:     p50 {:.1f} us, p99 {:.1f} us (min {:.1f}, max {:.1f}; {} TCP round trips)\n",
      r.latency.p50_us, r.latency.p99_us, r.latency.min_us, r.latency.max_us, r.latency.samples);
  if (r.single) {
    out += fmt::format("  throughput:  1 stream {} ({} in {:.2f} s)\n",
                       Bits(r.single->bits_per_second), FormatBytes(r.single->bytes),
                       r.single->seconds);
  }
  if (r.parallel) {
    out += fmt::format("               {} streams {} ({} in {:.2f} s)\n", r.parallel->streams,
                       Bits(r.parallel->bits_per_second), FormatBytes(r.parallel->bytes),
                       r.parallel->seconds);
  }
  return out;
}

nlohmann::ordered_json NetProbeToJson(const net::ProbeResult& r) {
  nlohmann::ordered_json j;
  j["host"] = r.host;
  j["address"] = r.address;
  j["port"] = r.port;
  j["route"] = {{"local_address", r.local_address},
                {"interface", r.local_interface},
                {"mtu", OrNull(r.local_mtu)}};
  j["peer"] = {{"interface", r.peer_interface}, {"mtu", OrNull(r.peer_mtu)}};
  j["path_mtu"] = {{"measured", r.mtu.measured},
                   {"path_mtu", r.mtu.measured ? nlohmann::ordered_json(r.mtu.path_mtu) : nullptr},
                   {"largest_payload_bytes", r.mtu.largest_payload},
                   {"kernel_mtu", OrNull(r.mtu.kernel_mtu)},
                   {"probes", r.mtu.probes},
                   {"note", r.mtu.note}};
  j["latency_us"] = {{"samples", r.latency.samples},
                     {"min", r.latency.min_us},
                     {"p50", r.latency.p50_us},
                     {"p99", r.latency.p99_us},
                     {"max", r.latency.max_us}};
  j["throughput"] = {{"single", ThroughputJson(r.single)},
                     {"parallel", ThroughputJson(r.parallel)}};
  return j;
}

}  // namespace stallscope

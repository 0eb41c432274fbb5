#include "analyze/host/baseline.h"

#include <fmt/format.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <set>

#include "core/json_text.h"
#include "core/units.h"

namespace stallscope {
namespace {

constexpr std::string_view kBenchPrefix = "io.bench.";

bool KeepInterface(const NetInterface& nic) {
  switch (nic.kind) {
    case InterfaceKind::kEthernet:
    case InterfaceKind::kInfiniband:
    case InterfaceKind::kBond:
      return true;
    default:
      return false;
  }
}

std::string DriftId(Layer layer) { return fmt::format("{}.baseline_drift", LayerName(layer)); }

std::string NextCheck(const BaselineMetric& m) {
  if (m.name.starts_with(kBenchPrefix)) {
    return "rerun `stallscope bench io PATH` on the same path; compare with `iostat -x 1` for "
           "other load on the disk; check the disk's health (smartctl -a)";
  }
  switch (m.layer) {
    case Layer::kMemory:
      return "free -h; dmesg | grep -i -E 'memory|edac'; check the cgroup limit the job runs "
             "under (stallscope snapshot)";
    case Layer::kNetwork:
      return "ethtool IFACE (speed, duplex, auto-negotiation); ip link show IFACE (mtu); "
             "ibstatus; reseat or replace the cable / transceiver";
    default:
      return "lsblk; dmesg | grep -i -E 'error|reset'; stallscope snapshot";
  }
}

}  // namespace

HostBaseline BaselineFromSnapshot(const Snapshot& snapshot, const StorageSpeed* bench) {
  HostBaseline b;
  b.host = snapshot.hostname;
  b.time_utc = snapshot.time_utc;
  auto add = [&b](std::string name, Layer layer, double value, std::string unit) {
    b.metrics.push_back({std::move(name), layer, value, std::move(unit)});
  };
  const MemInfo& mem = snapshot.after.memory;
  add("memory.total_bytes", Layer::kMemory, static_cast<double>(mem.total_bytes), "bytes");
  if (snapshot.cgroup && snapshot.cgroup->limit_bytes) {
    add("memory.cgroup_limit_bytes", Layer::kMemory,
        static_cast<double>(*snapshot.cgroup->limit_bytes), "bytes");
  }
  add("memory.swap_total_bytes", Layer::kMemory, static_cast<double>(mem.swap_total_bytes),
      "bytes");
  for (const BlockDevice& d : snapshot.block_devices) {
    if (d.is_partition || d.is_virtual || !d.size_bytes || *d.size_bytes == 0) continue;
    add(fmt::format("io.disk.{}.size_bytes", d.name), Layer::kIo,
        static_cast<double>(*d.size_bytes), "bytes");
  }
  for (const NetInterface& nic : snapshot.interfaces) {
    if (!KeepInterface(nic)) continue;
    if (nic.speed_mbps) {
      add(fmt::format("network.{}.speed_mbps", nic.name), Layer::kNetwork,
          static_cast<double>(*nic.speed_mbps), "Mb/s");
    }
    if (nic.mtu_bytes) {
      add(fmt::format("network.{}.mtu_bytes", nic.name), Layer::kNetwork,
          static_cast<double>(*nic.mtu_bytes), "bytes");
    }
  }
  for (const InfinibandDevice& hca : snapshot.infiniband) {
    for (const InfinibandPort& port : hca.ports) {
      if (!port.rate) continue;
      add(fmt::format("network.{}:{}.rate_gbps", hca.name, port.port), Layer::kNetwork,
          port.rate->gbps, "Gb/s");
    }
  }
  if (bench) {
    add("io.bench.sequential_mb_per_s", Layer::kIo, bench->sequential_bytes_per_second / 1e6,
        "MB/s");
    add("io.bench.random_iops", Layer::kIo, bench->random_iops, "IOPS");
  }
  return b;
}

std::string BaselineToJson(const HostBaseline& baseline) {
  nlohmann::ordered_json j;
  j["schema"] = kBaselineSchema;
  j["host"] = baseline.host;
  j["time_utc"] = baseline.time_utc;
  nlohmann::ordered_json metrics = nlohmann::ordered_json::array();
  for (const BaselineMetric& m : baseline.metrics) {
    metrics.push_back(
        {{"name", m.name}, {"layer", LayerName(m.layer)}, {"value", m.value}, {"unit", m.unit}});
  }
  j["metrics"] = std::move(metrics);
  return JsonText(j) + "\n";
}

Result<HostBaseline> ParseBaseline(std::string_view text, std::string_view source) {
  auto error = [source](std::string_view what) { return Status::ParseError(source, 0, what); };
  nlohmann::json j = nlohmann::json::parse(text.begin(), text.end(), nullptr,
                                           /*allow_exceptions=*/false);
  if (j.is_discarded()) return error("not JSON");
  if (!j.is_object()) return error("not a JSON object");
  auto schema = j.find("schema");
  if (schema == j.end() || !schema->is_string()) {
    return error(
        fmt::format("no \"schema\": not a stallscope baseline (want \"{}\")", kBaselineSchema));
  }
  if (schema->get<std::string>() != kBaselineSchema) {
    return error(fmt::format("schema \"{}\": this stallscope reads \"{}\"",
                             schema->get<std::string>(), kBaselineSchema));
  }
  HostBaseline b;
  if (auto host = j.find("host"); host != j.end() && host->is_string()) b.host = *host;
  if (auto t = j.find("time_utc"); t != j.end() && t->is_string()) b.time_utc = *t;
  auto metrics = j.find("metrics");
  if (metrics == j.end() || !metrics->is_array()) return error("no \"metrics\" array");
  std::set<std::string> seen;
  for (size_t i = 0; i < metrics->size(); ++i) {
    const nlohmann::json& m = (*metrics)[i];
    auto bad = [&](std::string_view what) {
      return error(fmt::format("metrics[{}]: {}", i, what));
    };
    if (!m.is_object()) return bad("not an object");
    auto name = m.find("name");
    if (name == m.end() || !name->is_string() || name->get<std::string>().empty()) {
      return bad("no \"name\" string");
    }
    BaselineMetric metric;
    metric.name = *name;
    auto layer = m.find("layer");
    if (layer == m.end() || !layer->is_string()) return bad("no \"layer\" string");
    std::optional<Layer> parsed = LayerFromName(layer->get<std::string>());
    if (!parsed) return bad(fmt::format("layer \"{}\" is not a layer", layer->get<std::string>()));
    metric.layer = *parsed;
    auto value = m.find("value");
    if (value == m.end() || !value->is_number()) {
      return bad(fmt::format("\"{}\": no numeric \"value\"", metric.name));
    }
    metric.value = value->get<double>();
    if (!std::isfinite(metric.value) || metric.value < 0) {
      return bad(
          fmt::format("\"{}\": value {} is not a finite number >= 0", metric.name, metric.value));
    }
    if (auto unit = m.find("unit"); unit != m.end() && unit->is_string()) metric.unit = *unit;
    if (!seen.insert(metric.name).second) {
      return bad(fmt::format("\"{}\" appears twice", metric.name));
    }
    b.metrics.push_back(std::move(metric));
  }
  return b;
}

FindingsWithNotes CompareBaseline(const HostBaseline& baseline, const HostBaseline& now,
                                  double share, std::vector<std::string>* not_compared) {
  std::vector<Finding> findings;
  for (const BaselineMetric& then : baseline.metrics) {
    const BaselineMetric* current = nullptr;
    for (const BaselineMetric& m : now.metrics) {
      if (m.name == then.name) current = &m;
    }
    if (!current && then.name.starts_with(kBenchPrefix)) {
      if (not_compared) not_compared->push_back(then.name);
      continue;
    }
    if (then.value <= 0) continue;  // nothing to fall below
    double now_value = current ? current->value : 0;
    double drop = (then.value - now_value) / then.value;
    if (current && !(drop > share)) continue;
    Finding f;
    f.id = DriftId(then.layer);
    f.layer = then.layer;
    f.severity = drop >= kDriftCriticalShare ? Severity::kCritical : Severity::kWarning;
    auto show = [&then](double v) {
      if (then.unit == "bytes") return FormatBytes(static_cast<uint64_t>(v));
      return fmt::format("{:.6g}{}", v, then.unit.empty() ? "" : " " + then.unit);
    };
    if (current) {
      f.summary = fmt::format("{} is {:.0f}% below its baseline: {} now, {} on {}", then.name,
                              drop * 100, show(now_value), show(then.value),
                              baseline.time_utc.empty() ? "the baseline" : baseline.time_utc);
    } else {
      f.summary = fmt::format("{} is gone: the baseline had {}", then.name, show(then.value));
    }
    f.evidence = {
        {"metric", then.name},
        {"baseline", then.value},
        {"now", current ? EvidenceValue{now_value} : EvidenceValue{std::string("absent")}},
        {"drop_fraction", drop},
        {"threshold_fraction", share}};
    if (!then.unit.empty()) f.evidence.push_back({"unit", then.unit});
    if (!baseline.time_utc.empty()) f.evidence.push_back({"baseline_time_utc", baseline.time_utc});
    f.next = NextCheck(then);
    findings.push_back(std::move(f));
  }
  return FindingsWithNotes{std::move(findings), {}};
}

}  // namespace stallscope

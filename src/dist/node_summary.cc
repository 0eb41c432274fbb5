// Node summaries and their wire format: see node_summary.h.
#include "dist/node_summary.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/text.h"
#include "sample/topology_matrix.h"

namespace stallscope {
namespace {

std::string Escape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '\\':
        out += "\\\\";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\n':
        out += "\\n";
        break;
      default:
        out += c;
    }
  }
  return out;
}

// Fields of one line, unescaped; false on a dangling or unknown escape.
bool SplitLine(std::string_view line, std::vector<std::string>* fields) {
  fields->assign(1, "");
  for (size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if (c == '\t') {
      fields->emplace_back();
    } else if (c == '\\') {
      if (++i == line.size()) return false;
      char e = line[i];
      if (e == '\\')
        fields->back() += '\\';
      else if (e == 't')
        fields->back() += '\t';
      else if (e == 'n')
        fields->back() += '\n';
      else
        return false;
    } else {
      fields->back() += c;
    }
  }
  return true;
}

void Line(std::string& out, std::initializer_list<std::string_view> fields) {
  bool first = true;
  for (std::string_view f : fields) {
    if (!first) out += '\t';
    out += Escape(f);
    first = false;
  }
  out += '\n';
}

}  // namespace

bool IsClusterVariable(std::string_view name) {
  return name.starts_with("NCCL_") || name.starts_with("GLOO_");
}

NodeSummary SummarizeSnapshot(const Snapshot& snapshot, int rank) {
  NodeSummary n;
  n.rank = rank;
  n.hostname = snapshot.hostname;
  n.kernel = snapshot.kernel;
  n.cpu_count = snapshot.after.cpu.per_cpu.size();
  for (const NetInterface& i : snapshot.interfaces) {
    n.interfaces.push_back({i.name, i.mtu_bytes.value_or(0), InterfaceKindName(i.kind), i.operstate,
                            i.speed_mbps.value_or(0)});
  }
  for (const InfinibandDevice& d : snapshot.infiniband) {
    for (const InfinibandPort& p : d.ports) {
      n.rdma_ports.push_back(
          {fmt::format("{}:{}", d.name, p.port), p.state ? p.state->name : std::string("?")});
    }
  }
  for (const EnvironmentVariable& v : snapshot.environment.variables) {
    if (IsClusterVariable(v.name)) n.environment.push_back(v);
  }
  std::sort(n.environment.begin(), n.environment.end(),
            [](const auto& a, const auto& b) { return a.name < b.name; });
  if (snapshot.topology) n.topology = TopologyDigest(BuildTopologyMatrix(*snapshot.topology));
  return n;
}

std::string ParseCpuModel(std::string_view cpuinfo) {
  for (std::string_view line : SplitLines(cpuinfo)) {
    size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    if (Trim(line.substr(0, colon)) == "model name")
      return std::string(Trim(line.substr(colon + 1)));
  }
  return "";
}

std::string ParseNvidiaDriverVersion(std::string_view text) {
  // "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 ..."
  for (std::string_view line : SplitLines(text)) {
    if (!line.starts_with("NVRM version:")) continue;
    size_t at = line.find("Kernel Module");
    if (at == std::string_view::npos) continue;
    std::vector<std::string_view> fields = SplitFields(line.substr(at + 13));
    if (!fields.empty()) return std::string(fields[0]);
  }
  return "";
}

std::string SerializeNodeSummary(const NodeSummary& n) {
  std::string out;
  out += kNodeSummaryHeader;
  out += '\n';
  Line(out, {"rank", std::to_string(n.rank)});
  Line(out, {"host", n.hostname});
  Line(out, {"kernel", n.kernel});
  Line(out, {"cpu", n.cpu_model, std::to_string(n.cpu_count)});
  for (const std::string& g : n.gpus) Line(out, {"gpu", g});
  if (!n.gpu_note.empty()) Line(out, {"gpu_note", n.gpu_note});
  if (!n.driver_version.empty()) Line(out, {"driver", n.driver_version});
  if (!n.cuda_version.empty()) Line(out, {"cuda", n.cuda_version});
  for (const NodeInterface& i : n.interfaces) {
    Line(out, {"if", i.name, std::to_string(i.mtu_bytes), i.kind, i.operstate,
               std::to_string(i.speed_mbps)});
  }
  for (const NodeRdmaPort& p : n.rdma_ports) Line(out, {"rdma", p.name, p.state});
  for (const EnvironmentVariable& v : n.environment) Line(out, {"env", v.name, v.value});
  if (!n.route_interface.empty() || !n.route_peer.empty())
    Line(out, {"route", n.route_interface, n.route_peer});
  if (!n.topology.empty()) Line(out, {"topology", n.topology});
  return out;
}

Result<NodeSummary> ParseNodeSummary(std::string_view text, std::string_view source) {
  std::vector<std::string_view> lines = SplitLines(text);
  if (lines.empty() || lines[0] != kNodeSummaryHeader) {
    return Status::ParseError(
        source, 1, fmt::format("not a node summary (expected the header {})", kNodeSummaryHeader));
  }
  NodeSummary n;
  bool have_rank = false, have_host = false;
  std::vector<std::string> f;
  for (size_t i = 1; i < lines.size(); ++i) {
    int line_no = static_cast<int>(i + 1);
    if (lines[i].empty()) continue;
    if (!SplitLine(lines[i], &f)) return Status::ParseError(source, line_no, "bad escape");
    const std::string& key = f[0];
    auto want = [&](size_t count) -> Status {
      if (f.size() == count) return Status::Ok();
      return Status::ParseError(
          source, line_no,
          fmt::format("'{}' takes {} field(s), got {}", key, count - 1, f.size() - 1));
    };
    auto number = [&](const std::string& field, uint64_t* out) -> Status {
      std::optional<uint64_t> v = ParseUint(field);
      if (!v)
        return Status::ParseError(source, line_no,
                                  fmt::format("'{}': not a number: {}", key, field));
      *out = *v;
      return Status::Ok();
    };
    Status s;
    if (key == "rank") {
      uint64_t r = 0;
      if (s = want(2); s.ok()) s = number(f[1], &r);
      if (s.ok() && r > (1u << 30)) s = Status::ParseError(source, line_no, "rank out of range");
      n.rank = static_cast<int>(r);
      have_rank = true;
    } else if (key == "host") {
      if (s = want(2); s.ok()) n.hostname = f[1];
      have_host = true;
    } else if (key == "kernel") {
      if (s = want(2); s.ok()) n.kernel = f[1];
    } else if (key == "cpu") {
      if (s = want(3); s.ok()) {
        n.cpu_model = f[1];
        s = number(f[2], &n.cpu_count);
      }
    } else if (key == "gpu") {
      if (s = want(2); s.ok()) n.gpus.push_back(f[1]);
    } else if (key == "gpu_note") {
      if (s = want(2); s.ok()) n.gpu_note = f[1];
    } else if (key == "driver") {
      if (s = want(2); s.ok()) n.driver_version = f[1];
    } else if (key == "cuda") {
      if (s = want(2); s.ok()) n.cuda_version = f[1];
    } else if (key == "if") {
      NodeInterface ni;
      if (s = want(6); s.ok()) s = number(f[2], &ni.mtu_bytes);
      if (s.ok()) s = number(f[5], &ni.speed_mbps);
      if (s.ok()) {
        ni.name = f[1];
        ni.kind = f[3];
        ni.operstate = f[4];
        n.interfaces.push_back(std::move(ni));
      }
    } else if (key == "rdma") {
      if (s = want(3); s.ok()) n.rdma_ports.push_back({f[1], f[2]});
    } else if (key == "env") {
      if (s = want(3); s.ok()) n.environment.push_back({f[1], f[2]});
    } else if (key == "topology") {
      if (s = want(2); s.ok()) n.topology = f[1];
    } else if (key == "route") {
      if (s = want(3); s.ok()) {
        n.route_interface = f[1];
        n.route_peer = f[2];
      }
    }
    if (!s.ok()) return s;
  }
  if (!have_rank || !have_host)
    return Status::ParseError(source, 0, "a node summary needs its rank and host lines");
  return n;
}

}  // namespace stallscope

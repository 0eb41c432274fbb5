// NCCL logs joined to a host's triage (see host.h).
#include "analyze/nccl_log/host.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <set>

#include "analyze/nccl_log/rules.h"
#include "core/text.h"

namespace stallscope {
namespace {

bool IsNetworkHostFinding(std::string_view id) {
  return id == "network.rdma_unused" || id == "network.wrong_interface" ||
         id == "network.connect_failed" || id == "network.connect_timeout" ||
         id == "network.root_unreachable" || id == "network.oob_socket_failed" ||
         id == "network.duplicate_address" || id == "network.link_local_interface" ||
         id == "network.nccl_error";
}

}  // namespace

std::string NcclCudaRuntime(std::string_view version) {
  size_t plus = version.find("+cuda");
  if (plus == std::string_view::npos) return "";
  std::string_view rest = version.substr(plus + 5);
  size_t n = 0;
  while (n < rest.size() && ((rest[n] >= '0' && rest[n] <= '9') || rest[n] == '.')) ++n;
  rest = rest.substr(0, n);
  if (rest.empty() || rest.front() == '.' || rest.back() == '.') return "";
  return std::string(rest);
}

std::string NcclCudaDriverText(int64_t driver) {
  if (driver <= 0) return "";
  return fmt::format("{}.{}", driver / 1000, (driver % 1000) / 10);
}

std::string NcclCudaCompatibility(std::string_view runtime, std::string_view driver) {
  auto split = [](std::string_view v, int* major, int* minor) {
    size_t dot = v.find('.');
    auto a = ParseInt(v.substr(0, dot));
    auto b = dot == std::string_view::npos
                 ? std::optional<int64_t>(0)
                 : ParseInt(v.substr(dot + 1, v.find('.', dot + 1) - dot - 1));
    if (!a || !b) return false;
    *major = static_cast<int>(*a);
    *minor = static_cast<int>(*b);
    return true;
  };
  int rm = 0, rn = 0, dm = 0, dn = 0;
  if (runtime.empty() || driver.empty() || !split(runtime, &rm, &rn) || !split(driver, &dm, &dn)) {
    return "";
  }
  if (rm < dm || (rm == dm && rn <= dn)) return "";
  if (rm == dm) {
    return fmt::format(
        "runtime newer than the driver within CUDA {}: runs under CUDA's minor-version "
        "compatibility (only PTX built for {}.{} cannot be JIT-compiled by this driver)",
        rm, rm, rn);
  }
  return fmt::format(
      "runtime {}.{} on a CUDA {} driver: fails ('CUDA driver version is insufficient for CUDA "
      "runtime version') unless CUDA's forward-compatibility package (cuda-compat) is installed "
      "on a data-center GPU",
      rm, rn, dm);
}

std::string NcclOfiText(const NcclProcess& p) {
  const NcclOfiFacts& o = p.ofi;
  std::vector<std::string> parts;
  if (!o.plugin_version.empty()) parts.push_back(o.plugin_version);
  if (!o.libfabric_version.empty()) parts.push_back("libfabric " + o.libfabric_version);
  if (!p.ofi_provider.empty()) {
    parts.push_back("provider " + p.ofi_provider +
                    (o.fabric.empty() ? "" : " (fabric " + o.fabric + ")"));
  }
  if (o.nics >= 0 || !o.devices.empty()) {
    std::string nics = o.nics >= 0 ? fmt::format("{} NIC(s)", o.nics) : "NICs";
    if (!o.devices.empty()) nics += fmt::format(" {}", fmt::join(o.devices, " "));
    parts.push_back(nics);
  }
  if (!o.protocol.empty()) parts.push_back("protocol " + o.protocol);
  if (!o.platform.empty()) parts.push_back("platform " + o.platform);
  if (o.gdr_disabled) parts.push_back("GPUDirect RDMA disabled");
  return fmt::format("{}", fmt::join(parts, ", "));
}

FindingsWithNotes NcclHostNetworkFindings(const NcclLogFile& log,
                                          const std::optional<HostRdmaPorts>& host) {
  std::vector<Finding> out;
  for (Finding& f : CheckNcclLog(log.summary, host, log.path).findings) {
    if (!IsNetworkHostFinding(f.id)) continue;
    f.evidence.push_back({"nccl_log", log.path});
    if (f.id == "network.rdma_unused" && log.first_socket_line != 0) {
      f.evidence.push_back({"nccl_log_line", fmt::format("{}:{} (first 'via NET/Socket')", log.path,
                                                         log.first_socket_line)});
      if (log.first_ib_line != 0) {
        f.evidence.push_back({"nccl_ib_line", fmt::format("{}:{} (first 'NET/IB : Using')",
                                                          log.path, log.first_ib_line)});
      }
    }
    out.push_back(std::move(f));
  }
  return FindingsWithNotes{std::move(out), {}};
}

std::string DescribeNcclLogFile(const NcclLogFile& log) {
  const NcclLogSummary& s = log.summary;
  std::set<std::string> versions;
  for (const NcclProcess& p : s.processes) {
    if (p.version.empty()) continue;
    std::string runtime = NcclCudaRuntime(p.version);
    std::string v = p.version.substr(0, p.version.find('+'));
    versions.insert(runtime.empty() ? "NCCL " + v
                                    : "NCCL " + v + " (CUDA runtime " + runtime + ")");
  }
  std::string text = fmt::format("nccl log {}: {} NCCL line(s), {} rank(s) on {} host(s)", log.path,
                                 s.nccl_lines, s.ranks.size(), NcclJobNodes(s));
  if (!versions.empty()) text += fmt::format(", {}", fmt::join(versions, ", "));
  if (s.info_lines == 0) text += "; no INFO lines (run the job with NCCL_DEBUG=INFO)";
  return text;
}

FindingsWithNotes NcclLogConclusions(const std::vector<NcclLogFile>& logs,
                                     const std::optional<HostRdmaPorts>& host,
                                     std::vector<std::string> notes) {
  FindingsWithNotes out;
  if (!logs.empty()) {
    for (const NcclLogFile& log : logs) {
      notes.push_back(DescribeNcclLogFile(log));
      Append(out, NcclHostNetworkFindings(log, host));
    }
  }
  notes.insert(notes.end(), std::make_move_iterator(out.notes.begin()),
               std::make_move_iterator(out.notes.end()));
  out.notes = std::move(notes);
  return out;
}

}  // namespace stallscope

// aws-ofi-nccl's INFO lines, the libfabric net plugin NCCL loads on AWS (and
// on other libfabric fabrics), read from its sources (src/nccl_ofi_net.c,
// nccl_ofi_topo.c, platform-aws.c; nccl_ofi_net.cpp from 1.14). Each line is
// NCCL's "NET/OFI " and then, at every version from 1.7:
//   Initializing aws-ofi-nccl 1.13.2-aws
//   Using Libfabric version 1.22                                   (1.8+)
//   Using CUDA runtime version 12020                               (1.7)
//   Selected Provider is efa (found 4 nics)                        (to 1.13)
//   Selected provider is efa, fabric is efa-direct (found 4 nics)  (1.14+)
//   NIC group 0 device #0 0000:4b:00.0
//   Using transport protocol RDMA | SENDRECV [(user set)|(platform set)]
//   Running on p5.48xlarge platform, Setting NCCL_TOPO_FILE environment variable to X
//   Plugin selected platform: AWS                                  (1.15+)
//   Could not disable CUDA API usage for HMEM, disabling GDR
// Its init failures are read with the other plugin fallbacks
// (fallback.cc). Pure; the caller holds the process.
#include <algorithm>
#include <string>

#include "core/text.h"
#include "formats/nccl_log/nccl_log.h"

namespace stallscope {
namespace {

std::string_view Word(std::string_view s) {
  s = Trim(s);
  s = s.substr(0, s.find_first_of(" \t"));
  while (!s.empty() && (s.back() == ',' || s.back() == '.')) s.remove_suffix(1);
  return s.substr(0, 64);
}

void Set(std::string& field, std::string_view value) {
  if (field.empty()) field = std::string(value);
}

}  // namespace

void ReadNcclOfiInfo(std::string_view msg, uint64_t line, NcclProcess& p) {
  NcclOfiFacts& ofi = p.ofi;
  if (StartsWith(msg, "Selected Provider is ") || StartsWith(msg, "Selected provider is ")) {
    std::string_view rest = msg.substr(21);
    if (p.ofi_provider.empty()) {
      p.ofi_provider = std::string(Word(rest));
      ofi.provider_line = line;
    }
    if (size_t at = rest.find("fabric is "); at != std::string_view::npos) {
      Set(ofi.fabric, Word(rest.substr(at + 10)));
    }
    if (size_t at = rest.find("(found "); at != std::string_view::npos && ofi.nics < 0) {
      if (auto n = ParseInt(Word(rest.substr(at + 7))); n && *n >= 0 && *n < 4096) {
        ofi.nics = static_cast<int>(*n);
      }
    }
  } else if (StartsWith(msg, "Initializing aws-ofi-nccl ")) {
    Set(ofi.plugin_version, Word(msg.substr(26)));
  } else if (StartsWith(msg, "Using Libfabric version ")) {
    Set(ofi.libfabric_version, Word(msg.substr(24)));
  } else if (StartsWith(msg, "Using transport protocol ")) {
    Set(ofi.protocol, Word(msg.substr(25)));
  } else if (StartsWith(msg, "NIC group ")) {
    size_t at = msg.find(" device #");
    if (at == std::string_view::npos) return;
    std::string_view rest = msg.substr(at + 9);
    size_t space = rest.find(' ');
    if (space == std::string_view::npos) return;
    std::string_view pci = Word(rest.substr(space + 1));
    if (pci.empty() || ofi.devices.size() >= kNcclMaxInterfaces) return;
    for (const std::string& d : ofi.devices) {
      if (d == pci) return;
    }
    ofi.devices.emplace_back(pci);
  } else if (StartsWith(msg, "Running on ")) {
    std::string_view rest = msg.substr(11);
    size_t end = rest.find(" platform");
    if (end != std::string_view::npos)
      Set(ofi.platform, Trim(rest.substr(0, std::min<size_t>(end, 64))));
  } else if (StartsWith(msg, "Plugin selected platform: ")) {
    Set(ofi.platform, Word(msg.substr(26)));
  } else if (StartsWith(msg, "Could not disable CUDA API usage for HMEM, disabling GDR")) {
    ofi.gdr_disabled = true;
  }
}

}  // namespace stallscope

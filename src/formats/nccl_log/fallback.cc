// A net plugin that failed and NCCL went on without it, libibverbs missing,
// the NCCL version in PyTorch's error text, the rank of a proxy's WARN (see
// formats/nccl_log/nccl_log.h). The
// forms, from NCCL's src/net.cc (src/plugin/net.cc from 2.24) and
// aws-ofi-nccl's src/nccl_ofi_net.c:
//   Plugin name set by env to X                                      (2.17-2.18)
//   NET/Plugin : Plugin load (X) returned 2 : ERR                    (2.17-2.18)
//   NET/Plugin : No plugin found, using internal implementation      (2.17-2.18)
//   NET/Plugin: Plugin load returned 2 : ERR : when loading X        (2.21)
//   NET/Plugin: Most recent plugin load returned 2 : ERR. All attempts to
//     load 'X Y' also failed.
//   NET/Plugin: No plugin found (X)                                  (2.21)
//   NET/Plugin: Could not find: X Y. Using internal network plugin.  (2.22-2.26)
//   NET/Plugin: Could not find: X Y.                                 (2.27+)
//   NET/Plugin: ERR                    (2.22+: a plugin there that does not load)
//   Failed to initialize NET plugin X                                (2.29)
//   NET/Plugin : No plugin found (X), using internal implementation  (2.7-2.16)
//   NET/Plugin : Plugin load returned N : ERR.            (2.12-2.16, 2.19-2.20)
//   NET/Plugin : dlerror=X: ERR No plugin found (X), using internal implementation
//                                                                    (2.19-2.20)
//   NET/OFI Unable to find a protocol that worked.  Failing initialization.
//   NET/OFI aws-ofi-nccl initialization failed                       (WARN)
//   Failed to open libibverbs.so[.1]                                 (INFO)
// Only the default plugin (libnccl-net.so) absent is routine; a plugin
// asked for by name, one that is there but does not load or initialize, is
// a fallback.
#include <string>

#include "core/text.h"
#include "formats/nccl_log/nccl_log.h"

namespace stallscope {
namespace {

constexpr size_t kMaxFallbackText = 160;

bool Has(std::string_view text, std::string_view needle) {
  return text.find(needle) != std::string_view::npos;
}

// Whether a list of names tried holds one besides the default plugin.
bool NamesAPlugin(std::string_view names) {
  for (std::string_view rest = Trim(names); !rest.empty();) {
    size_t space = rest.find(' ');
    std::string_view name = rest.substr(0, space);
    if (!name.empty() && name != "libnccl-net.so") return true;
    if (space == std::string_view::npos) break;
    rest = Trim(rest.substr(space + 1));
  }
  return false;
}

std::string_view FirstName(std::string_view names) {
  names = Trim(names);
  while (!names.empty() && (names.back() == '.' || names.back() == '\'')) names.remove_suffix(1);
  return names.substr(0, names.find(' '));
}

void Failed(NcclProcess& p, std::string_view plugin, std::string_view reason, uint64_t line) {
  if (!p.plugin_failure.empty()) return;  // the first failure says why
  p.plugin_failed = std::string(Trim(plugin).substr(0, 128));
  p.plugin_failure = std::string(Trim(reason).substr(0, kMaxFallbackText));
  p.plugin_failure_line = line;
}

// "ERR : when loading X" or "ERR when loading X": the error and the names.
void LoadReturned(NcclProcess& p, std::string_view rest, uint64_t line) {
  size_t when = rest.find("when loading ");
  std::string_view names = when == std::string_view::npos ? "" : rest.substr(when + 13);
  std::string_view error = Trim(rest.substr(0, when));
  while (!error.empty() && (error.back() == ':' || error.back() == ' ')) error.remove_suffix(1);
  bool absent = Has(error, "No such file or directory");
  if (NamesAPlugin(names) || !absent) Failed(p, FirstName(names), error, line);
}

void PluginLine(NcclProcess& p, std::string_view m, uint64_t line) {
  if (StartsWith(m, "Plugin load (")) {  // 2.18: "Plugin load (X) returned 2 : ERR"
    size_t close = m.find(')');
    if (close == std::string_view::npos) return;
    std::string_view name = m.substr(13, close - 13);
    size_t colon = m.find(" : ", close);
    std::string_view error = colon == std::string_view::npos ? "" : m.substr(colon + 3);
    if (name != "libnccl-net.so" || !p.plugin_asked.empty() ||
        !Has(error, "No such file or directory")) {
      Failed(p, p.plugin_asked.empty() ? name : std::string_view(p.plugin_asked), error, line);
    }
  } else if (StartsWith(m, "Plugin load returned ")) {  // 2.19-2.22
    size_t colon = m.find(" : ");
    if (colon != std::string_view::npos) LoadReturned(p, m.substr(colon + 3), line);
  } else if (StartsWith(m, "Most recent plugin load returned ")) {
    size_t colon = m.find(" : ");
    size_t all = m.find(". All attempts to load '");
    if (colon == std::string_view::npos || all == std::string_view::npos || all < colon) return;
    std::string_view names = m.substr(all + 24);
    Failed(p, FirstName(names.substr(0, names.find('\''))), m.substr(colon + 3, all - colon - 3),
           line);
  } else if (StartsWith(m, "No plugin found (")) {  // 2.19-2.22, one per name tried
    std::string_view name = m.substr(
        17, m.find(')') == std::string_view::npos ? std::string_view::npos : m.find(')') - 17);
    if (NamesAPlugin(name)) Failed(p, name, "not found (No such file or directory)", line);
  } else if (StartsWith(m, "Could not find:")) {  // 2.22+
    // "X Y. Using internal network plugin." (2.22-2.26); "X Y. " (2.27+).
    std::string_view names = m.substr(15);
    names = Trim(names.substr(0, names.find(". ")));
    while (!names.empty() && names.back() == '.') names.remove_suffix(1);
    if (NamesAPlugin(names)) Failed(p, FirstName(names), "not found", line);
  } else if (StartsWith(m, "Plugin name set by env to ")) {
    if (p.plugin_asked.empty()) p.plugin_asked = std::string(Trim(m.substr(26)).substr(0, 128));
  } else if (StartsWith(m, "Plugin init failed")) {  // a plugin's own words
    Failed(p, p.net_plugin.empty() ? "the net plugin" : std::string_view(p.net_plugin),
           "its init failed", line);
  } else if (StartsWith(m, "dlerror=")) {
    // "dlerror=X: ERR No plugin found (X), using internal implementation".
    size_t found = m.find(" No plugin found (");
    std::string_view error = m.substr(8, found == std::string_view::npos ? m.npos : found - 8);
    std::string_view name = error.substr(0, error.find(':'));
    if (NamesAPlugin(name) || !Has(error, "No such file or directory")) {
      Failed(p, name, error.substr(std::min(error.size(), name.size() + 1)), line);
    }
  } else if (Has(m, ".so") && Has(m, ": ") && !StartsWith(m, "Loaded ") &&
             !StartsWith(m, "Using ") && !StartsWith(m, "Failed to find ") &&
             !StartsWith(m, "Closing ")) {
    // 2.23+: the loader's error as is, "libnccl-net.so: undefined symbol: x".
    size_t colon = m.find(": ");
    std::string_view name = m.substr(0, colon);
    if (NamesAPlugin(name) || !Has(m, "No such file or directory")) {
      Failed(p, name, m.substr(colon + 2), line);
    }
  }
}

}  // namespace

void ReadNcclFallbackInfo(std::string_view msg, uint64_t line, NcclProcess& p) {
  if (StartsWith(msg, "NET/Plugin")) {
    std::string_view m = msg.substr(10);
    while (!m.empty() && (m.front() == ' ' || m.front() == ':')) m.remove_prefix(1);
    PluginLine(p, m, line);
  } else if (StartsWith(msg, "Plugin name set by env to ")) {  // 2.18's, without NET/Plugin
    PluginLine(p, msg, line);
  } else if (StartsWith(msg, "Failed to initialize NET plugin ")) {  // 2.29
    Failed(p, msg.substr(32), "its init failed", line);
  } else if (StartsWith(msg, "Failed to open libibverbs")) {
    p.libibverbs_missing = true;
  }
}

void ReadNcclFallbackWarn(std::string_view msg, uint64_t line, NcclProcess& p) {
  if (!StartsWith(msg, "NET/OFI ")) return;
  if (Has(msg, "Failing initialization") || Has(msg, "initialization failed") ||
      Has(msg, "No eligible providers")) {
    std::string_view reason = Trim(msg.substr(8));
    if (EndsWith(reason, "Failing initialization.")) {
      reason = Trim(reason.substr(0, reason.size() - 23));
      while (!reason.empty() && reason.back() == '.') reason.remove_suffix(1);
    }
    Failed(p, p.net_plugin.empty() ? "aws-ofi-nccl" : std::string_view(p.net_plugin), reason, line);
  }
}

std::string_view NcclVersionInTorchError(std::string_view text) {
  size_t at = text.rfind("NCCL version ");
  if (at == std::string_view::npos || at == 0) return {};
  if (!Has(text, "NCCL error") && !Has(text, "DistBackendError") && !Has(text, "RuntimeError")) {
    return {};
  }
  return ParseNcclVersion(text.substr(at + 13));
}

int NcclProxyServiceRank(std::string_view msg) {
  if (!StartsWith(msg, "[Proxy Service ")) return -1;
  std::string_view rest = msg.substr(15);
  size_t close = rest.find(']');
  if (close == std::string_view::npos || close == 0 || close > 8) return -1;
  auto n = ParseInt(rest.substr(0, close));
  return n && *n >= 0 && *n < (1 << 24) ? static_cast<int>(*n) : -1;
}

bool ParseNcclProxyFailure(std::string_view msg, NcclProxyFailure* out) {
  const int proxy = NcclProxyServiceRank(msg);
  constexpr std::string_view kOperation = "] Failed to execute operation ";
  size_t at = msg.find(kOperation);
  if (proxy < 0 || at == std::string_view::npos) return false;
  std::string_view rest = msg.substr(at + kOperation.size());
  size_t from = rest.find(" from rank ");
  if (from == std::string_view::npos) return false;
  std::string_view rank = rest.substr(from + 11);
  size_t comma = rank.find(',');
  auto m = ParseInt(Trim(rank.substr(0, comma)));
  if (!m || *m < 0 || *m >= (1 << 24)) return false;
  out->proxy_rank = proxy;
  out->from_rank = static_cast<int>(*m);
  out->operation = std::string(Trim(rest.substr(0, from)).substr(0, 32));
  out->retcode = -1;
  if (comma != std::string_view::npos) {
    std::string_view code = Trim(rank.substr(comma + 1));
    if (StartsWith(code, "retcode ")) {
      if (auto r = ParseInt(Trim(code.substr(8))); r && *r >= 0 && *r < 1000) {
        out->retcode = static_cast<int>(*r);
      }
    }
  }
  return true;
}

}  // namespace stallscope

// NCCL logs joined to a host's triage (see nccl_log_host.h).
#include "analyze/nccl_log_host.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <set>

namespace stallscope {
namespace {

constexpr std::string_view kSocketNeedle = "via NET/Socket";
constexpr std::string_view kIbNeedle = "NET/IB : Using";
// Longest needle minus one: what a chunk boundary can cut.
constexpr size_t kCarry = 13;
static_assert(kCarry + 1 >= kSocketNeedle.size() && kCarry + 1 >= kIbNeedle.size());

size_t Find(std::string_view hay, std::string_view needle) {
  if (hay.size() < needle.size()) return std::string_view::npos;
  const void* hit = memmem(hay.data(), hay.size(), needle.data(), needle.size());
  return hit ? static_cast<const char*>(hit) - hay.data() : std::string_view::npos;
}

uint64_t Newlines(std::string_view s) {
  return static_cast<uint64_t>(std::count(s.begin(), s.end(), '\n'));
}

bool IsNetworkHostFinding(std::string_view id) {
  return id == "network.rdma_unused" || id == "network.wrong_interface" ||
         id == "network.connect_failed";
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

void NcclLineMarks::Feed(std::string_view chunk) {
  if (socket_line_ != 0) return;  // all that is wanted is known
  uint64_t socket = 0;
  // A needle cut by the chunk boundary starts in the carry (which holds no
  // newline), so it is on the current line.
  if (!carry_.empty()) {
    std::string seam = carry_;
    seam.append(chunk.substr(0, std::min(chunk.size(), kCarry)));
    if (Find(seam, kSocketNeedle) < carry_.size()) socket = line_;
    if (ib_line_ == 0 && Find(seam, kIbNeedle) < carry_.size()) ib_line_ = line_;
  }
  if (ib_line_ == 0) {
    if (size_t at = Find(chunk, kIbNeedle); at != std::string_view::npos) {
      ib_line_ = line_ + Newlines(chunk.substr(0, at));
    }
  }
  if (socket == 0) {
    if (size_t at = Find(chunk, kSocketNeedle); at != std::string_view::npos) {
      socket = line_ + Newlines(chunk.substr(0, at));
    }
  }
  if (socket != 0) {
    socket_line_ = socket;
    if (ib_line_ > socket_line_) ib_line_ = 0;  // only NET/IB lines up to the socket one
    return;
  }
  line_ += Newlines(chunk);
  // Chunks shorter than a needle add up: the carry is the tail of them all.
  carry_.append(chunk.substr(chunk.size() - std::min(chunk.size(), kCarry)));
  if (carry_.size() > kCarry) carry_.erase(0, carry_.size() - kCarry);
  if (size_t nl = carry_.rfind('\n'); nl != std::string::npos) carry_.erase(0, nl + 1);
}

std::vector<Finding> NcclHostNetworkFindings(const NcclLogFile& log,
                                             const std::optional<HostRdmaPorts>& host) {
  std::vector<Finding> out;
  for (Finding& f : CheckNcclLog(log.summary, host)) {
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
  return out;
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

}  // namespace stallscope

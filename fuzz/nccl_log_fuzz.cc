// libFuzzer target: the streaming NCCL log parser and its rules. The input is
// fed whole and, a second time, in uneven chunks, which must give the same
// summary (the chunk boundaries fall mid-line), and the fast line-prefix
// reader must agree with the general one on every line it accepts. The
// readers of launchers' prefixes run on every line, and what they return
// must lie inside it; ValidUtf8 must return valid UTF-8. The line scanner
// must find the lines, markers and closer-look bytes a plain reading finds.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string_view>

#include "analyze/nccl_log/failures.h"
#include "analyze/nccl_log/rules.h"
#include "formats/nccl_log/line.h"
#include "formats/nccl_log/nccl_log.h"
#include "formats/nccl_log/scan.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  stallscope::NcclLogSummary whole = stallscope::ParseNcclLog(text);
  stallscope::NcclLogParser parser;
  size_t step = 1 + (size % 13);
  for (size_t at = 0; at < size; at += step) parser.Feed(text.substr(at, step));
  stallscope::NcclLogSummary chunked = parser.Finish();
  if (whole.nccl_lines != chunked.nccl_lines || whole.ranks.size() != chunked.ranks.size() ||
      whole.warn_lines != chunked.warn_lines || whole.bytes != chunked.bytes) {
    abort();
  }
  // Each process's WARNs point into the summary's, capped, and chunks do
  // not change what followed them.
  if (whole.processes.size() != chunked.processes.size()) abort();
  for (size_t i = 0; i < whole.processes.size(); ++i) {
    const auto& warns = whole.processes[i].warns;
    if (warns.size() > stallscope::kNcclMaxWarnsPerProcess ||
        warns.size() != chunked.processes[i].warns.size()) {
      abort();
    }
    for (size_t k = 0; k < warns.size(); ++k) {
      const auto& w = warns[k];
      const auto& c = chunked.processes[i].warns[k];
      if (w.warning >= whole.warnings.size() || w.line == 0 || w.chain_result != c.chain_result ||
          w.progress_after != c.progress_after || w.source != c.source ||
          (w.chain_line != 0 && w.chain_line <= w.line)) {
        abort();
      }
    }
  }
  (void)stallscope::JudgeNcclWarnings(whole);
  stallscope::HostRdmaPorts host{"node1", {"mlx5_0:1 InfiniBand"}};
  (void)stallscope::CheckNcclLog(whole, host, "fuzz.log");
  (void)stallscope::CheckNcclLog(whole, std::nullopt);
  for (const auto& p : whole.processes) (void)p.Name();
  (void)stallscope::ParseNcclInterfaces(text);
  // Line by line, the fast prefix reader must agree with the general one
  // wherever it answers, and the scanner with a plain reading.
  stallscope::LineScanner scanner(text);
  stallscope::ScannedLine scanned[3];
  size_t scanned_count = 0, scanned_next = 0;
  for (std::string_view rest = text; !rest.empty();) {
    size_t nl = rest.find('\n');
    std::string_view line = rest.substr(0, nl);
    rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
    if (scanned_next == scanned_count) {
      scanned_count = scanner.Next(scanned, 1 + size % 3);
      scanned_next = 0;
      if (scanned_count == 0) abort();
    }
    const stallscope::ScannedLine& s = scanned[scanned_next++];
    if (s.text.data() != line.data() || s.text.size() != line.size() ||
        s.nccl != line.find("NCCL") ||
        s.plain != (line.find_first_of("\r\x1b|") == std::string_view::npos)) {
      abort();
    }
    stallscope::LineHead head = stallscope::ReadLineHead(line);
    if (head.content > line.size()) abort();
    std::string_view host = stallscope::NcclHostOf(line);
    if (host.size() > line.size()) abort();
    for (char c : host) {
      if (!stallscope::IsHostChar(c)) abort();
    }
    uint64_t folded = 0;
    if (stallscope::StripLineTail(line, &folded).size() > line.size()) abort();
    (void)stallscope::TimestampLength(line);
    std::string clean = stallscope::ValidUtf8(line);
    if (stallscope::ValidUtf8(clean) != clean) abort();  // idempotent on valid text
    (void)stallscope::WithoutEscapes(line);
    // An error-return line's file:line lies inside it.
    std::string_view source;
    int result = 0;
    if (stallscope::ParseNcclErrorReturn(line, &source, &result) &&
        (source.empty() || source.data() < line.data() ||
         source.data() + source.size() > line.data() + line.size())) {
      abort();
    }
    stallscope::NcclLinePrefix back;
    size_t marker = line.find("NCCL");
    if (marker != std::string_view::npos &&
        stallscope::BackwardNcclLinePrefix(line, marker, &back) != 0) {
      std::optional<stallscope::NcclLinePrefix> general =
          stallscope::ParseNcclLinePrefix(line, marker);
      if (!general || general->host != back.host || general->pid != back.pid ||
          general->tid != back.tid || general->cuda_dev != back.cuda_dev ||
          general->level != back.level || general->message != back.message ||
          general->host_at != back.host_at || !back.source.empty()) {
        abort();
      }
    }
    stallscope::NcclLinePrefix fast;
    if (stallscope::FastNcclLinePrefix(line, &fast) == 0) continue;
    // Told the line holds no '|', the fast reader answers the same.
    stallscope::NcclLinePrefix told;
    if (s.plain && stallscope::FastNcclLinePrefix(line, &told, false) == 0) abort();
    std::optional<stallscope::NcclLinePrefix> general = stallscope::ParseNcclLinePrefix(line);
    if (!general || general->host != fast.host || general->pid != fast.pid ||
        general->tid != fast.tid || general->cuda_dev != fast.cuda_dev ||
        general->level != fast.level || general->message != fast.message) {
      abort();
    }
  }
  if (scanned_next != scanned_count || scanner.Next(scanned, 1) != 0) abort();
  return 0;
}

// NCCL debug logs (NCCL_DEBUG=INFO, WARN or TRACE): a one-pass streaming
// parser, its reader, and the scanner of the lines doctor and run cite.
//
// The parser is pure (bytes in, an NcclLogSummary out); it lives in probe/
// with ReadNcclLog, which feeds it a file descriptor, as every parser of a
// file the machine wrote lives beside its reader. The summary's types are in
// sample/nccl_log.h, the findings read from it in analyze/nccl_log/rules.h.
// Every line is visited: lines and their "NCCL" markers are found by one
// vector pass (formats/nccl_log/scan.h), other programs' lines are counted and
// a few read (nccl-tests' rank table, libfabric; other.cc); no
// regex. Ranks of several
// processes and hosts may be interleaved in any order: NCCL prefixes its
// lines "host:pid:tid [cudaDev] NCCL INFO ..." (WARN adds "file:line", TRACE
// a time and "func:line"), and launchers and log systems put their own
// decorations around them (timestamps, tags, colour, borders), which
// formats/nccl_log/line.h strips.
//
// Memory is bounded whatever the file's size: facts are aggregated per
// process (host:pid) and per rank (host:pid plus the [cudaDev] of the line),
// and every list of distinct things (processes, ranks, interfaces, peers,
// warnings, rings, algorithm choices) is capped; what does not fit is counted
// in `dropped`. Message formats were read from NCCL's sources (2.3 to 2.29:
// init.cc, bootstrap.cc, transport/net_socket.cc, net_ib.cc, p2p.cc, shm.cc,
// net.cc, graph/rings.cc, misc/socket.cc, debug.cc) and real logs posted in
// NCCL's issues. A parser is single-threaded; summaries are plain values.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/status.h"
#include "formats/nccl_log/line.h"
#include "formats/nccl_log/scan.h"
#include "sample/nccl_log.h"

namespace stallscope {

// The "host:pid:tid [dev]" prefix of one NCCL line.
struct NcclLinePrefix {
  std::string_view host;
  int64_t pid = 0;
  int64_t tid = 0;
  int cuda_dev = -1;  // -1 for NCCL CALL lines, which have none
  enum class Level { kInfo, kWarn, kTrace, kCall } level = Level::kInfo;
  std::string_view message;  // after "NCCL INFO " etc.
  size_t host_at = 0;        // where the host starts in the line (after a glued tag)
  // WARN's "file:line" between "[dev]" and "NCCL WARN" ("misc/socket.cc:484");
  // empty on other levels and where the line has none.
  std::string_view source;
};

// Pure pieces, exposed for tests and the fuzz target.
// The prefix of a line ("" when the line is not one NCCL wrote with a prefix).
// `from`: where to start looking for "NCCL" (the scanner knows the first one).
std::optional<NcclLinePrefix> ParseNcclLinePrefix(std::string_view line, size_t from = 0);
// The same for the shape nearly every line has, "host:pid:tid [dev] NCCL
// INFO|WARN msg", in one pass with no search: the offset of the message, or
// 0 when the line has another shape (then only ParseNcclLinePrefix can
// tell). Where it accepts a line, both give the same answer. `line` may run
// on past a newline (the rest of a buffer): the prefix never includes one,
// and the message is cut by the caller. `may_hold_bar` false: the caller
// knows the line holds no '|' (a console's repeat), which is then not
// looked for.
size_t FastNcclLinePrefix(std::string_view line, NcclLinePrefix* out, bool may_hold_bar = true);
// The same for "...host:pid:tid [dev] NCCL INFO msg" behind a launcher's
// prefix, read back from `at`, where the line's first "NCCL" is: the
// offset of the message, or 0 when the general reader must tell. Where it
// accepts a line, ParseNcclLinePrefix gives the same answer.
size_t BackwardNcclLinePrefix(std::string_view line, size_t at, NcclLinePrefix* out,
                              bool may_hold_bar = true);
// " [0]eth0:10.0.0.1<0> [1]ib0:192.168.1.1<0>" or " eth0:10.0.0.1<0>" (after "Using").
std::vector<NcclInterface> ParseNcclInterfaces(std::string_view text);
// "2.18.3+cuda12.2" from "NCCL version 2.18.3+cuda12.2" (and trailing junk cut).
std::string_view ParseNcclVersion(std::string_view after_version_word);
// The lines of a net plugin that failed and NCCL went on without, and of
// libibverbs missing (formats/nccl_log/fallback.cc): an INFO or WARN message
// of process p, read into p. The forms of NCCL's net.cc (2.18 to 2.29) and
// aws-ofi-nccl's init.
void ReadNcclFallbackInfo(std::string_view msg, uint64_t line, NcclProcess& p);
void ReadNcclFallbackWarn(std::string_view msg, uint64_t line, NcclProcess& p);
// aws-ofi-nccl's INFO lines (after "NET/OFI "): provider, fabric, NICs and
// their PCI addresses, libfabric's and the plugin's versions, protocol,
// platform, GDR disabled (formats/nccl_log/ofi.cc), read into process p.
void ReadNcclOfiInfo(std::string_view msg, uint64_t line, NcclProcess& p);
// NCCL's error-return line, "init.cc:1270 -> 2" (NCCLCHECK's, printed at
// INFO as each caller returns a failed call's ncclResult_t; 2.9+ may add
// " (text)" or "[Async thread]"): the "file:line" and the result, or false.
bool ParseNcclErrorReturn(std::string_view msg, std::string_view* source, int* result);
// A source path as NCCL's WARN and error-return lines print it, cut to what
// follows "src/" when a build printed it whole ("/build/nccl/src/init.cc:12"
// -> "init.cc:12").
std::string_view NcclSourceOf(std::string_view path);
// "2.18.1" from PyTorch's error text ("NCCL error in: ..., NCCL version
// 2.18.1"); empty when the line holds none.
std::string_view NcclVersionInTorchError(std::string_view text);
// N of "[Proxy Service N] ..." (proxy.cc's WARNs, 2.12+): the printing
// rank; -1 when the message has no such tag.
int NcclProxyServiceRank(std::string_view msg);
// The proxy's "[Proxy Service N] Failed to execute operation OP from rank
// M, retcode R" read into `out` (ranks, operation, retcode); false when the
// message is not that one.
bool ParseNcclProxyFailure(std::string_view msg, NcclProxyFailure* out);

// The streaming parser: Feed whole lines (a chunk may end mid-line; the
// parser keeps the tail until the next Feed), then Finish.
class NcclLogParser {
 public:
  NcclLogParser();
  void Feed(std::string_view chunk);
  NcclLogSummary Finish();

 private:
  void ScanLines(std::string_view complete);
  void ScannedOne(ScannedLine& line);  // cut to kNcclMaxLineBytes, counted, read
  // A line the scanner did not see (a cut one, a part of one, a joined one):
  // its marker found, its closer looks all to be taken.
  static ScannedLine Unscanned(std::string_view line);
  // An NCCL line; `fast_tried`: Dispatch tried FastNcclLinePrefix on it.
  void Line(const ScannedLine& line, bool fast_tried);
  size_t Prefixed(const NcclLinePrefix& prefix);  // the rank, or kNoRank
  void Info(size_t rank, std::string_view msg);
  // `source`: the WARN's "file:line" (NcclLinePrefix::source).
  void Warn(size_t rank, std::string_view msg, std::string_view source = {});
  // The WARN just read, on the process of `rank` (NcclProcess::warns).
  void WarnOnProcess(size_t rank, size_t warning, std::string_view source);
  // Whether an INFO message of `process` is an error-return line; if so,
  // read into the process's WARNs that no such line followed yet.
  bool ErrorReturn(NcclProcess& process, std::string_view msg);
  void Unprefixed(std::string_view line);
  // A line without an NCCL marker: other programs' output, and what it says
  // that NCCL did not (other.cc).
  void Other(std::string_view line, bool plain);  // plain: ScannedLine::plain
  bool OldNcclLine(std::string_view text);        // before 2.3: INFO/WARN without "NCCL"
  void TestsTableLine(std::string_view text);
  // "WORLD_SIZE=8", "RANK=3", "LOCAL_RANK=3" anywhere in a line that is not
  // NCCL's own (NcclLauncherEcho).
  void LauncherEcho(std::string_view text);
  void LibfabricLine(std::string_view text);
  void TorchLine(std::string_view text, const LineHead& head);
  void TorchErrorLine(std::string_view text);
  // Every line: carriage returns split, a terminal's wrap joined back
  // (wrap.cc), then Dispatch.
  void AnyLine(const ScannedLine& line);
  // Whether `line` may be the rest of a line a terminal `width` wide cut.
  // `held`: the line it would join (whose launcher tag, if any, a row's
  // "word: " must not look like).
  static bool RestOfWrappedLine(std::string_view line, bool marker, size_t width,
                                std::string_view held);
  // A line read while the first NCCL line of a terminal's width waits.
  void WaitWithCandidate(std::string_view line, bool marker);
  // The waiting candidate and the lines after it, read in order: the
  // candidate joined to its rest when `wrapped`, else as it is. `undecided`:
  // no line told either way (the log or the wait ended); the candidate is
  // joined if its own cut shows it was wrapped (see CutInsideMessage).
  void ReleaseWrapCandidate(bool wrapped, bool undecided = false);
  void Dispatch(const ScannedLine& line);
  // The launcher's tag on a line NCCL prefixed, remembered for its process.
  void RememberTag(const LineHead& head, size_t rank);
  size_t ProcessOfTag(const LineHead& head) const;
  void MapTag(uint64_t key, size_t process);
  static constexpr size_t kNoRank = SIZE_MAX;
  size_t RankFor(const NcclLinePrefix& prefix);
  size_t LookUpRank(const NcclLinePrefix& prefix);
  NcclProcess& ProcessOf(size_t rank) { return summary_.processes[summary_.ranks[rank].process]; }
  void InitLine(size_t rank_index, std::string_view msg);
  // A Bootstrap line of `rank_index`'s host:pid naming another first address.
  void OtherBootstrap(size_t rank_index, std::string_view list);
  // Another process under the host:pid:dev of `rank_index` (a host name
  // written alike on several hosts, a pid that repeats across them): the rank
  // among those already told apart that `fits`, else a new process and rank
  // (NcclProcess::twin). The line's thread is remembered for it (unless it
  // is the main thread, tid == pid, which repeats across hosts as the pid
  // does), so the thread's later lines go to it. kNoRank past the caps.
  // Invalidates references into summary_'s processes and ranks.
  size_t TwinRank(size_t rank_index,
                  const std::function<bool(const NcclRank&, const NcclProcess&)>& fits);
  void ChannelLine(NcclRank& rank, std::string_view msg);
  // The version-bound form of a channel line with a transport (after "via ").
  void ChannelForm(NcclProcess& process, std::string_view msg, size_t word,
                   std::string_view transport);
  void TuningLine(std::string_view msg);
  void ConnectRetry(std::string_view msg);
  bool SetOnceInterfaces(std::vector<NcclInterface>& into, std::string_view list);
  static std::string_view FirstWordOf(std::string_view s);
  void PeerFailure(std::string_view peer, std::string_view reason, size_t rank);
  // A proxy's "Failed to execute operation OP from rank M" printed by `rank`.
  void ProxyFailure(size_t rank, std::string_view msg);
  void Algorithm(std::string_view text);

  NcclLogSummary summary_;
  std::string tail_;      // an incomplete last line between Feeds
  bool cutting_ = false;  // inside a line longer than kNcclMaxLineBytes
  // (host, pid) to the process by hash (collisions compared in full); ranks
  // in an open-addressing table of indexes, so no string key is ever built.
  std::unordered_multimap<uint64_t, size_t> process_index_;
  static constexpr size_t kRankSlots = 2 * 8192;  // a power of two >= 2 * kNcclMaxRanks
  static_assert(kRankSlots >= 2 * kNcclMaxRanks && (kRankSlots & (kRankSlots - 1)) == 0);
  std::vector<size_t> rank_slots_;
  // Recently seen ranks by (pid, dev), two ways to a slot, with the key kept
  // beside the index (a hit reads one slot, not the rank and its process).
  // A rank past the caps (kNoRank) is not kept: it is looked up each time.
  struct RecentRank {
    int64_t pid = 0;
    int32_t dev = 0;
    uint32_t host_size = UINT32_MAX;  // UINT32_MAX: an empty slot
    char host[16] = {};               // the first 16 bytes of the host
    size_t rank = kNoRank;
  };
  static constexpr int kRecentRankBits = 10;  // 40 KiB; 128 ranks rarely share a slot
  std::vector<RecentRank> recent_ranks_;
  bool IsRecent(const RecentRank& recent, const NcclLinePrefix& prefix) const;
  size_t last_process_ = kNoRank;  // for a bare "NCCL version" line
  // Processes told apart under one host:pid (TwinRank): the (host, pid, dev,
  // tid) of a thread seen to be theirs, to their rank. Empty in nearly every
  // log: RankFor looks here only when it is not.
  std::unordered_map<uint64_t, size_t> twin_threads_;
  int64_t line_tid_ = 0;        // the tid of the prefixed line being read
  std::string_view warn_time_;  // the timestamp on the WARN line being read, if any
  // Launcher tags (LineHead::tag_key) to processes, and bare versions seen
  // under a tag before its process printed a prefixed line.
  std::unordered_map<uint64_t, size_t> tag_process_;  // kNoRank: several processes share it
  std::vector<std::pair<uint64_t, std::string>> pending_versions_;
  uint64_t last_tag_key_ = 0;
  size_t last_tag_process_ = kNoRank;
  // An NCCL line as long as a terminal is wide, held until the next line
  // tells whether the terminal wrapped it.
  std::string wrapped_;
  // The first NCCL line of a terminal's width, and the lines read after it
  // (their numbers and copies), while it is not yet known whether the
  // terminal wrapped it.
  std::string wrap_candidate_;
  uint64_t wrap_candidate_line_ = 0;
  std::vector<std::pair<uint64_t, std::string>> waiting_;
  std::string scratch_;  // a line without its escape codes
  size_t longest_line_ = 0;
  size_t last_width_ = 0;         // the terminal width the last such line had
  size_t width_lines_ = 0;        // lines in a row seen at one terminal width
  uint64_t line_no_ = 0;          // the line being read, 1-based
  uint64_t wrapped_line_no_ = 0;  // the held line's
  // NCCL lines in a row with a prefix before the host: past a few, the fast
  // reader is not tried (Dispatch).
  static constexpr uint32_t kFastMissesBeforeSkip = 8;
  uint32_t fast_misses_ = 0;
  int layout_ranks_ = 0;  // ranks in rank 0's ring layouts; -1: they differ
};

// Every string of `summary` as valid UTF-8 (stray bytes become U+FFFD).
void SanitizeNcclSummary(NcclLogSummary& summary);

// The whole text at once (tests, fuzzing).
NcclLogSummary ParseNcclLog(std::string_view text);
// A file descriptor read to its end (ReadFileBlocks: mapped when it is a
// regular file); `name` names it in errors.
// `also`, when given, sees every block too (NcclLineMarks, in one pass).
Result<NcclLogSummary> ReadNcclLog(int fd, std::string_view name,
                                   const std::function<void(std::string_view)>& also = {});

// The 1-based numbers of the first lines of interest, found while a log is
// fed in chunks (a chunk may end mid-line). 0: not seen.
class NcclLineMarks {
 public:
  void Feed(std::string_view chunk);
  uint64_t first_socket_line() const { return socket_line_; }  // "via NET/Socket"
  // "NET/IB : Using", when on or before the first socket line (or no socket
  // line was seen): the scanner stops at the socket line.
  uint64_t first_ib_line() const { return ib_line_; }

 private:
  uint64_t line_ = 1;  // the line the next byte belongs to
  uint64_t socket_line_ = 0;
  uint64_t ib_line_ = 0;
  std::string carry_;  // the end of the last chunk, for a needle cut in two
};

}  // namespace stallscope

// The lines of an NCCL log that NCCL did not write, and what they reliably
// say: nccl-tests' rank table (hosts and ranks that may print no NCCL line),
// PyTorch's ProcessGroupNCCL lines (the NCCL version, global rank and group
// size it reports), libfabric's "provider efa output empty list". Every
// other program's line is counted, not read; a launcher's prefix alone (the
// blank line NCCL prints before a WARN, under a launcher) is not a line.
// Formats read from nccl-tests' src/common.cu, PyTorch's ProcessGroupNCCL.cpp
// (1.13 to 2.5) and libfabric's src/fabric.c.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>

#include "core/text.h"
#include "formats/nccl_log/line.h"
#include "formats/nccl_log/nccl_log.h"

#if defined(__x86_64__)
#include <immintrin.h>
#elif defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace stallscope {
namespace {

size_t Find(std::string_view hay, std::string_view needle) {
  if (needle.size() > hay.size()) return std::string_view::npos;
  const void* at = memmem(hay.data(), hay.size(), needle.data(), needle.size());
  return at ? static_cast<size_t>(static_cast<const char*>(at) - hay.data())
            : std::string_view::npos;
}

// The decimal number after `key`, or -1.
int64_t NumberAfter(std::string_view s, std::string_view key) {
  size_t at = Find(s, key);
  if (at == std::string_view::npos) return -1;
  std::string_view rest = s.substr(at + key.size());
  size_t end = 0;
  while (end < rest.size() && end < 12 && rest[end] >= '0' && rest[end] <= '9') ++end;
  if (end == 0) return -1;
  return ParseInt(rest.substr(0, end)).value_or(-1);
}

// "provider efa output empty list" -> "efa".
std::string_view EmptyProvider(std::string_view s) {
  size_t at = Find(s, " output empty list");
  if (at == std::string_view::npos) return {};
  size_t word = s.rfind("provider ", at);
  if (word == std::string_view::npos || at - word > 64) return {};
  return Trim(s.substr(word + 9, at - word - 9));
}

bool TokenStarts(std::string_view token, std::string_view word) {
  return token.size() >= word.size() && memcmp(token.data(), word.data(), word.size()) == 0;
}

// Bit masks of 64 bytes: blanks (' '), lower-case letters, the bytes that
// send a line to the full read ('(' '#' '\t'), the brackets a tag may open
// and close ('[' ']' '<' '>'), the first letters of INFO and WARN, and 'l'.
struct WordMasks {
  uint64_t blank = 0, lower = 0, bad = 0, open_square = 0, close_square = 0, open_angle = 0,
           close_angle = 0, info_warn = 0, ell = 0;
};

#if defined(__x86_64__)
// Thirty-two bytes at a time where the processor has AVX2 (a third of a
// prefixed log's lines come here).
__attribute__((target("avx2"))) inline uint64_t Bits32(__m256i bytes) {
  return static_cast<uint32_t>(_mm256_movemask_epi8(bytes));
}

__attribute__((target("avx2"))) inline uint64_t Is32(const char* p, char c) {
  const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  return Bits32(_mm256_cmpeq_epi8(v, _mm256_set1_epi8(c)));
}

__attribute__((target("avx2"))) inline uint64_t Lower32(const char* p) {
  const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  const __m256i from_a = _mm256_sub_epi8(v, _mm256_set1_epi8('a'));
  return Bits32(_mm256_cmpeq_epi8(_mm256_min_epu8(from_a, _mm256_set1_epi8(25)), from_a));
}

__attribute__((target("avx2"))) WordMasks MasksOf64Avx2(const char* p) {
  WordMasks m;
  for (int k = 0; k < 2; ++k) {
    const char* q = p + 32 * k;
    const int shift = 32 * k;
    m.blank |= Is32(q, ' ') << shift;
    m.lower |= Lower32(q) << shift;
    m.bad |= (Is32(q, '(') | Is32(q, '#') | Is32(q, '\t') | Is32(q, '=')) << shift;
    m.open_square |= Is32(q, '[') << shift;
    m.close_square |= Is32(q, ']') << shift;
    m.open_angle |= Is32(q, '<') << shift;
    m.close_angle |= Is32(q, '>') << shift;
    m.info_warn |= (Is32(q, 'I') | Is32(q, 'W')) << shift;
    m.ell |= Is32(q, 'l') << shift;
  }
  return m;
}

bool HasAvx2() {
  static const bool has = (__builtin_cpu_init(), __builtin_cpu_supports("avx2"));
  return has;
}
#endif

#if defined(__SSE2__)
uint64_t Mask16(__m128i bytes) { return static_cast<uint16_t>(_mm_movemask_epi8(bytes)); }

WordMasks MasksOf64(const char* p) {
#if defined(__x86_64__)
  if (HasAvx2()) return MasksOf64Avx2(p);
#endif
  WordMasks m;
  for (int k = 0; k < 4; ++k) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * k));
    const auto is = [&](char c) { return Mask16(_mm_cmpeq_epi8(v, _mm_set1_epi8(c))); };
    const __m128i from_a = _mm_sub_epi8(v, _mm_set1_epi8('a'));
    const __m128i lower = _mm_cmpeq_epi8(_mm_min_epu8(from_a, _mm_set1_epi8(25)), from_a);
    const int shift = 16 * k;
    m.blank |= is(' ') << shift;
    m.lower |= Mask16(lower) << shift;
    m.bad |= (is('(') | is('#') | is('\t') | is('=')) << shift;
    m.open_square |= is('[') << shift;
    m.close_square |= is(']') << shift;
    m.open_angle |= is('<') << shift;
    m.close_angle |= is('>') << shift;
    m.info_warn |= (is('I') | is('W')) << shift;
    m.ell |= is('l') << shift;
  }
  return m;
}
#else
WordMasks MasksOf64(const char* p) {
  WordMasks m;
  for (int i = 0; i < 64; ++i) {
    const char c = p[i];
    const uint64_t bit = uint64_t{1} << i;
    if (c == ' ') m.blank |= bit;
    if (c >= 'a' && c <= 'z') m.lower |= bit;
    if (c == '(' || c == '#' || c == '\t' || c == '=') m.bad |= bit;
    if (c == '[') m.open_square |= bit;
    if (c == ']') m.close_square |= bit;
    if (c == '<') m.open_angle |= bit;
    if (c == '>') m.close_angle |= bit;
    if (c == 'I' || c == 'W') m.info_warn |= bit;
    if (c == 'l') m.ell |= bit;
  }
  return m;
}
#endif

// Whether the last of `opens` comes after the last of `closes` (both bits
// of a 64-byte window): a bracket still open.
bool LeftOpen(uint64_t opens, uint64_t closes) {
  if (opens == 0) return false;
  return closes == 0 || __builtin_clzll(opens) < __builtin_clzll(closes);
}

// Whether a plain line (no '\r', escape or '|') is another program's and
// no reader here wants more of it than its count, told without reading its
// head (a third of a prefixed log's lines are such, and the head read cost
// them most of their time). It is when the line holds a word of its own in
// its first 64 bytes: a run of two or more lower-case letters between
// spaces, not a container log's "stdout"/"stderr". No timestamp or
// launcher's tag holds such a word but those with blanks inside: Ray's, in
// parentheses, and a bracket ('[' or '<') still open before the word; with
// neither, nor a tab, before the word, the head ends before it and the line
// is more than a prefix. Nothing before the word is then a '#' (nccl-tests'
// table), an '=' (a launcher's KEY=VALUE echo), "libfabric:" (also glued to a tag) or an INFO/WARN
// token (NCCL before 2.3, which may put one word between its device and WARN: the token after the
// word counts too); and a last byte, trailing blanks aside, that is no ']' (Ray's repeat count),
// 'm' (colour residue) or box-drawing byte leaves the tail as it is. Any doubt: false, and the line
// is read in full.
bool JustAnotherLine(std::string_view line) {
  const size_t n = line.size();
  size_t end = n;
  while (end > 0 && (line[end - 1] == ' ' || line[end - 1] == '\t')) --end;
  if (end == 0) return false;
  const unsigned char last = static_cast<unsigned char>(line[end - 1]);
  if (last == ']' || last == 'm' || last >= 0x80) return false;
  // The line's own first 64 bytes, or a copy padded with blanks.
  char padded[64];
  const char* window = line.data();
  if (n < sizeof padded) {
    memset(padded, ' ', sizeof padded);
    memcpy(padded, line.data(), n);
    window = padded;
  }
  const WordMasks m = MasksOf64(window);
  const uint64_t starts = ~m.blank & ((m.blank << 1) | 1);
  size_t word = 64, word_end = 0;
  for (uint64_t st = starts; st != 0; st &= st - 1) {
    const unsigned s = static_cast<unsigned>(__builtin_ctzll(st));
    const uint64_t after = m.blank >> s;
    const unsigned len = after != 0 ? static_cast<unsigned>(__builtin_ctzll(after)) : 64 - s;
    if (s + len == 64 && n > 64) return false;  // cut by the window: not known
    const uint64_t token = (len == 64 ? ~uint64_t{0} : (uint64_t{1} << len) - 1) << s;
    if (len >= 2 && (m.lower & token) == token &&
        !(len == 6 &&
          (memcmp(window + s, "stdout", 6) == 0 || memcmp(window + s, "stderr", 6) == 0))) {
      word = s;
      word_end = s + len;
      break;
    }
  }
  if (word == 64) return false;
  const uint64_t before = (uint64_t{1} << word) - 1;
  if ((m.bad & before) != 0) return false;
  if (LeftOpen(m.open_square & before, m.close_square & before) ||
      LeftOpen(m.open_angle & before, m.close_angle & before)) {
    return false;
  }
  for (uint64_t mk = m.info_warn & starts & before; mk != 0; mk &= mk - 1) {
    std::string_view token = line.substr(static_cast<size_t>(__builtin_ctzll(mk)));
    if (TokenStarts(token, "INFO") || TokenStarts(token, "WARN")) return false;
  }
  for (uint64_t mk = m.ell & before; mk != 0; mk &= mk - 1) {
    if (TokenStarts(line.substr(static_cast<size_t>(__builtin_ctzll(mk))), "libfabric:")) {
      return false;
    }
  }
  size_t next = word_end;
  while (next < n && line[next] == ' ') ++next;
  std::string_view token = line.substr(next);
  return !TokenStarts(token, "INFO") && !TokenStarts(token, "WARN");
}

}  // namespace

namespace {

// The value of every "KEY=N" in `text` whose KEY stands alone (not the end
// of a longer name: "RANK=" is not read out of "LOCAL_RANK=" or
// "NODE_RANK="), each passed to `take`.
template <typename Take>
void EchoedValues(std::string_view text, std::string_view key, Take take) {
  for (size_t at = text.find(key); at != std::string_view::npos; at = text.find(key, at + 1)) {
    if (at > 0) {
      char before = text[at - 1];
      if (before == '_' || (before >= 'A' && before <= 'Z') || (before >= 'a' && before <= 'z') ||
          (before >= '0' && before <= '9')) {
        continue;
      }
    }
    std::string_view rest = text.substr(at + key.size());
    if (!rest.empty() && (rest[0] == '"' || rest[0] == '\'')) rest.remove_prefix(1);
    size_t n = 0;
    while (n < rest.size() && n < 9 && rest[n] >= '0' && rest[n] <= '9') ++n;
    if (n == 0 || (n < rest.size() && rest[n] >= '0' && rest[n] <= '9')) continue;
    if (auto v = ParseInt(rest.substr(0, n)); v && *v < (1 << 24)) take(static_cast<int>(*v));
  }
}

void InsertSorted(std::vector<int>& values, int v, uint64_t& dropped) {
  auto it = std::lower_bound(values.begin(), values.end(), v);
  if (it != values.end() && *it == v) return;
  if (values.size() >= kNcclMaxRanks) {
    ++dropped;
    return;
  }
  values.insert(it, v);
}

}  // namespace

void NcclLogParser::LauncherEcho(std::string_view text) {
  if (text.find("RANK=") == std::string_view::npos &&
      text.find("WORLD_SIZE=") == std::string_view::npos) {
    return;
  }
  NcclLauncherEcho& e = summary_.launcher;
  bool any = false;
  EchoedValues(text, "WORLD_SIZE=", [&](int v) {
    e.world_size = std::max(e.world_size, v);
    any = true;
  });
  EchoedValues(text, "LOCAL_RANK=", [&](int v) {
    InsertSorted(e.local_ranks, v, summary_.dropped);
    any = true;
  });
  EchoedValues(text, "RANK=", [&](int v) {
    InsertSorted(e.ranks, v, summary_.dropped);
    any = true;
  });
  if (!any) return;
  ++e.lines;
  if (e.first_line == 0) e.first_line = line_no_;
}

void NcclLogParser::Other(std::string_view line, bool plain) {
  // A line with a word of its own and no '=' or '(' before it is neither a
  // launcher's echo nor a traceback's first line (JustAnotherLine).
  if (plain && JustAnotherLine(line)) {
    ++summary_.other_lines;
    return;
  }
  LineHead head = ReadLineHead(line);
  std::string_view text =
      StripLineTail(line.substr(std::min(head.content, line.size())), &summary_.folded_repeats);
  if (text.empty()) return;  // a prefix alone, a timestamp on its own line, a blank line
  // A launcher's echo of the job's world ('=' in its first bytes), and where
  // a Python traceback begins: the job's error report, not its work.
  if (memchr(text.data(), '=', std::min<size_t>(text.size(), 64))) LauncherEcho(text);
  if (text[0] == 'T' && StartsWith(text, "Traceback (")) {
    summary_.traceback_other_lines = summary_.other_lines + 1;
    summary_.traceback_line = line_no_;
  }
  if (OldNcclLine(text)) return;
  ++summary_.other_lines;
  if (text[0] == '#') {
    TestsTableLine(text);
  } else if (text[0] == 'l' && StartsWith(text, "libfabric:")) {
    LibfabricLine(text);
  }
}

bool NcclLogParser::OldNcclLine(std::string_view text) {
  // NCCL before 2.3 printed no "NCCL" word: "host:pid:tid [0] INFO msg",
  // "host:pid:tid [0] include/socket.h:185 WARN msg" (2.0, as pasted in
  // NCCL's issues; 2.0-2.2 were never open source).
  size_t space = text.find(' ');
  if (space == std::string_view::npos || space > 256) return false;
  std::string_view token = text.substr(0, space);
  size_t c2 = token.rfind(':');
  if (c2 == std::string_view::npos || c2 == 0) return false;
  size_t c1 = token.rfind(':', c2 - 1);
  if (c1 == std::string_view::npos || c1 == 0) return false;
  auto pid = ParseInt(token.substr(c1 + 1, c2 - c1 - 1));
  auto tid = ParseInt(token.substr(c2 + 1));
  std::string_view host = token.substr(0, c1);
  if (!pid || !tid || *pid < 0 || *tid < 0) return false;
  for (char c : host) {
    if (!IsHostChar(c)) return false;
  }
  std::string_view rest = text.substr(space + 1);
  if (rest.size() < 4 || rest[0] != '[') return false;
  size_t close = rest.find(']');
  if (close == std::string_view::npos) return false;
  auto dev = ParseInt(rest.substr(1, close - 1));
  if (!dev || *dev < -1 || *dev >= (1 << 20)) return false;
  rest = rest.substr(close + 1);
  NcclLinePrefix prefix;
  size_t level = std::string_view::npos;
  if (StartsWith(rest, " INFO ") || rest == " INFO") {
    prefix.level = NcclLinePrefix::Level::kInfo;
    level = 1;
  } else {
    size_t warn = Find(rest.substr(0, 160), " WARN ");
    if (warn != std::string_view::npos && rest.substr(1, warn).find(' ') == warn - 1) {
      prefix.level = NcclLinePrefix::Level::kWarn;  // " file:line WARN "
      level = warn + 1;
    }
  }
  if (level == std::string_view::npos) return false;
  prefix.host = host;
  prefix.pid = *pid;
  prefix.tid = *tid;
  prefix.cuda_dev = static_cast<int>(*dev);
  prefix.message = rest.substr(std::min(rest.size(), level + 5));
  ++summary_.nccl_lines;
  Prefixed(prefix);
  return true;
}

void NcclLogParser::TestsTableLine(std::string_view text) {
  // "#  Rank  2 Group  0 Pid   4321 on      nodeB device  0 [0x41] NVIDIA H100"
  // (nccl-tests 2.x; later ones print the bus id as [0000:41:00]).
  // v1.0 has no Pid and no Group, v2.0-2.13.3 no Group.
  std::vector<std::string_view> f = SplitFields(text.substr(0, 512));
  if (f.size() < 7 || f[0] != "#" || f[1] != "Rank") return;
  auto rank = ParseInt(f[2]);
  size_t k = 3;
  std::optional<int64_t> group = 0, pid = 0;
  if (k + 1 < f.size() && f[k] == "Group") {
    group = ParseInt(f[k + 1]);
    k += 2;
  }
  if (k + 1 < f.size() && f[k] == "Pid") {
    pid = ParseInt(f[k + 1]);
    k += 2;
  }
  if (k + 3 >= f.size() || f[k] != "on" || f[k + 2] != "device") return;
  auto device = ParseInt(f[k + 3]);
  if (!rank || !group || !pid || !device || *rank < 0 || *rank >= (1 << 24)) return;
  NcclTestsRank r;
  r.rank = static_cast<int>(*rank);
  r.group = static_cast<int>(*group);
  r.pid = *pid;
  r.host = std::string(f[k + 1].substr(0, f[k + 1].find('.')));
  r.device = static_cast<int>(*device);
  size_t rest = k + 4;
  if (rest < f.size() && !f[rest].empty() && f[rest][0] == '[') {
    std::string_view bus = f[rest];
    r.bus_id = std::string(bus.substr(1, bus.size() >= 2 ? bus.size() - 2 : 0));
    ++rest;
  }
  if (rest < f.size()) {
    size_t from = static_cast<size_t>(f[rest].data() - text.data());
    r.gpu = std::string(Trim(text.substr(from, 96)));
  }
  if (summary_.tests_ranks.size() >= kNcclMaxRanks) {
    ++summary_.dropped;
    return;
  }
  for (const NcclTestsRank& seen : summary_.tests_ranks) {
    if (seen.rank == r.rank && seen.group == r.group && seen.pid == r.pid && seen.host == r.host) {
      return;  // the table printed again (one per test binary run)
    }
  }
  if (summary_.tests_ranks.size() >= kNcclMaxRanks) {
    ++summary_.dropped;
    return;
  }
  summary_.tests_ranks.push_back(std::move(r));
}

// "libfabric:PID:TIME[:FABRIC]:efa:SUBSYS:func():LINE<warn> Unable to ..."
// (libfabric's log prefix): the message of an EFA failure, or empty.
std::string_view EfaFailure(std::string_view s) {
  size_t level = Find(s.substr(0, 256), "<warn> ");
  size_t skip = 7;
  if (level == std::string_view::npos) {
    level = Find(s.substr(0, 256), "<error> ");
    skip = 8;
  }
  if (level == std::string_view::npos) return {};
  std::string_view head = s.substr(0, level);
  if (Find(head, ":efa:") == std::string_view::npos &&
      Find(head, ":efa-direct:") == std::string_view::npos) {
    return {};
  }
  std::string_view message = Trim(s.substr(level + skip));
  std::string lower(message.substr(0, 200));
  for (char& c : lower) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  for (std::string_view word : {"fail", "unable", "error", "cannot", "not supported"}) {
    if (lower.find(word) != std::string::npos) return message.substr(0, 160);
  }
  return {};
}

void NcclLogParser::LibfabricLine(std::string_view text) {
  ++summary_.libfabric_lines;
  if (std::string_view failure = EfaFailure(text); !failure.empty()) {
    if (summary_.libfabric_efa_failures.size() < kNcclMaxInterfaces) {
      summary_.libfabric_efa_failures.push_back("efa: " + std::string(failure));
    } else {
      ++summary_.dropped;
    }
    return;
  }
  std::string_view provider = EmptyProvider(text);
  if (provider.empty()) return;
  for (const std::string& p : summary_.libfabric_empty_providers) {
    if (p == provider) return;
  }
  if (summary_.libfabric_empty_providers.size() < kNcclMaxInterfaces) {
    summary_.libfabric_empty_providers.emplace_back(provider.substr(0, 32));
  } else {
    ++summary_.dropped;
  }
}

void NcclLogParser::TorchLine(std::string_view text, const LineHead& head) {
  // PyTorch 2.2+: "[PG 0 Rank 3] ProcessGroupNCCL initialization options: size: 8,
  // global rank: 3, ..." and "... ProcessGroupNCCL environments: NCCL version:
  // 2.20.5, ..."; 1.13-2.1 print "NCCL version" elsewhere or not at all.
  if (Find(text, "ProcessGroupNCCL") == std::string_view::npos) {
    if (Find(text, "NCCL version: ") == std::string_view::npos) return;
  }
  int64_t rank = NumberAfter(text, "global rank: ");
  if (rank < 0) rank = NumberAfter(text, " Rank ");
  if (rank < 0) rank = NumberAfter(text, "[Rank ");
  int64_t size = NumberAfter(text, "size: ");
  std::string_view version;
  if (size_t at = Find(text, "NCCL version: "); at != std::string_view::npos) {
    version = ParseNcclVersion(text.substr(at + 14));
  }
  if (rank < 0 && size < 0 && version.empty()) return;
  size_t process = ProcessOfTag(head);
  std::string name = process == kNoRank ? std::string() : summary_.processes[process].Name();
  std::string_view tag = head.tag.substr(0, 64);
  NcclTorchGroup* group = nullptr;
  if (summary_.torch_groups.size() >= kNcclMaxRanks) {
    ++summary_.dropped;
    return;
  }
  for (NcclTorchGroup& g : summary_.torch_groups) {
    // Lines with neither tag nor process are one group per rank.
    bool untagged = tag.empty() && name.empty();
    bool same_source = g.tag == tag && g.process == name;
    if (same_source && (untagged ? g.global_rank == rank
                                 : (g.global_rank < 0 || rank < 0 || g.global_rank == rank))) {
      group = &g;
      break;
    }
  }
  if (!group) {
    if (summary_.torch_groups.size() >= kNcclMaxRanks) {
      ++summary_.dropped;
      return;
    }
    summary_.torch_groups.emplace_back();
    group = &summary_.torch_groups.back();
    group->tag = std::string(tag);
    group->process = name;
  }
  if (rank >= 0 && rank < (1 << 24)) group->global_rank = static_cast<int>(rank);
  if (size > group->size && size < (1 << 24)) group->size = static_cast<int>(size);
  // PyTorch's view of the version ("2.21.5", no "+cuda" suffix) is kept
  // with the group, not given to the process: it is not NCCL's own line.
  if (!version.empty() && group->nccl_version.empty()) group->nccl_version = std::string(version);
}

void SanitizeNcclSummary(NcclLogSummary& s) {
  auto fix = [](std::string& text) {
    for (char c : text) {
      if (static_cast<unsigned char>(c) >= 0x80) {
        text = ValidUtf8(text);
        return;
      }
    }
  };
  auto fix_all = [&](std::vector<NcclInterface>& list) {
    for (NcclInterface& i : list) {
      fix(i.name);
      fix(i.address);
    }
  };
  for (NcclProcess& p : s.processes) {
    fix(p.host);
    fix(p.version);
    fix(p.network);
    fix(p.socket_ifname);
    fix_all(p.bootstrap);
    fix_all(p.net_socket);
    fix_all(p.ib_devices);
    fix_all(p.ib_oob);
  }
  for (NcclRank& r : s.ranks) fix(r.trees);
  for (std::string& v : s.unattributed_versions) fix(v);
  for (NcclPeerFailure& f : s.peer_failures) {
    fix(f.peer);
    fix(f.reason);
    fix(f.first_seen_by);
  }
  fix(s.connect_retry_reason);
  for (NcclWarning& w : s.warnings) {
    fix(w.text);
    fix(w.first_seen_by);
  }
  for (std::string& r : s.rings) fix(r);
  for (NcclAlgorithmChoice& a : s.algorithms) fix(a.text);
  for (NcclTestsRank& r : s.tests_ranks) {
    fix(r.host);
    fix(r.bus_id);
    fix(r.gpu);
  }
  for (NcclTorchGroup& g : s.torch_groups) {
    fix(g.process);
    fix(g.tag);
    fix(g.nccl_version);
  }
  fix(s.connect_retry_peer);
  for (NcclProcess& p : s.processes) {
    fix(p.net_plugin);
    fix(p.plugin_path);
    fix(p.ofi_provider);
    fix(p.ofi.plugin_version);
    fix(p.ofi.libfabric_version);
    fix(p.ofi.fabric);
    fix(p.ofi.protocol);
    fix(p.ofi.platform);
    for (std::string& d : p.ofi.devices) fix(d);
    fix(p.plugin_asked);
    fix(p.plugin_failed);
    fix(p.plugin_failure);
    for (std::string& n : p.channel_nets) fix(n);
  }
  for (std::string& p : s.libfabric_empty_providers) fix(p);
  for (std::string& v : s.torch_error_versions) fix(v);
  for (NcclProxyFailure& f : s.proxy_failures) {
    fix(f.proxy_process);
    fix(f.host);
    fix(f.operation);
  }
}

}  // namespace stallscope

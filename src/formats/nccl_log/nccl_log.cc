// The streaming NCCL log parser. Findings are in analyze/nccl_log/rules.cc.
#include "formats/nccl_log/nccl_log.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>

#include "core/text.h"
#include "formats/nccl_log/line.h"
#include "formats/nccl_log/scan.h"
#include "probe/file_blocks.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace stallscope {
namespace {

template <size_t N>
bool StartsWith(std::string_view s, const char (&p)[N]) {
  return s.size() >= N - 1 && __builtin_memcmp(s.data(), p, N - 1) == 0;
}

// memmem over a string_view; npos when absent.
size_t Find(std::string_view hay, std::string_view needle) {
  if (needle.size() > hay.size()) return std::string_view::npos;
  const void* at = memmem(hay.data(), hay.size(), needle.data(), needle.size());
  return at ? static_cast<size_t>(static_cast<const char*>(at) - hay.data())
            : std::string_view::npos;
}

bool Contains(std::string_view hay, std::string_view needle) {
  return Find(hay, needle) != std::string_view::npos;
}

// Text after `key` in `s` up to the end; empty view when absent.
std::optional<std::string_view> After(std::string_view s, std::string_view key) {
  size_t at = Find(s, key);
  if (at == std::string_view::npos) return std::nullopt;
  return s.substr(at + key.size());
}

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// A run of decimal digits read backwards from an end: where it begins and
// its value.
struct DigitRun {
  size_t begin;
  int64_t value;
};

// The run of at most `most` (<= 18) digits that ends at s[end]. Every line
// of a dense log has three such runs (device, tid, pid) before its marker:
// where eight bytes lie before `end`, they are looked at in one word (which
// bytes are digits, and the value of up to eight of them, SWAR style).
__attribute__((always_inline)) inline DigitRun DigitsBefore(const char* s, size_t end,
                                                            size_t most) {
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  if (end >= 8 && most >= 8) {
    uint64_t x;
    memcpy(&x, s + end - 8, 8);  // s[end - 1] in the top byte
    const uint64_t other =
        ((x & 0xF0F0F0F0F0F0F0F0ull) ^ 0x3030303030303030ull) |
        (((x & 0x0F0F0F0F0F0F0F0Full) + 0x0606060606060606ull) & 0x1010101010101010ull);
    if (other != 0) {  // a run of fewer than eight
      const unsigned n = static_cast<unsigned>(__builtin_clzll(other)) / 8;
      if (n == 0) return {end, 0};
      // The bytes before the run read as leading '0's, then the eight
      // digits summed in three multiplications.
      const uint64_t before = (uint64_t{1} << (8 * (8 - n))) - 1;
      uint64_t v = ((x & ~before) | (0x3030303030303030ull & before)) - 0x3030303030303030ull;
      v = v * 10 + (v >> 8);
      v = (((v & 0x000000FF000000FFull) * (100 + (1000000ull << 32))) +
           (((v >> 16) & 0x000000FF000000FFull) * (1 + (10000ull << 32)))) >>
          32;
      return {end - n, static_cast<int64_t>(v)};
    }
  }
#endif
  size_t k = end;
  while (k > 0 && IsDigit(s[k - 1]) && end - k < most) --k;
  int64_t v = 0;
  for (size_t i = k; i < end; ++i) v = v * 10 + (s[i] - '0');
  return {k, v};
}

// The bytes of a host name as NCCL prints it: IsHostChar's less '.', where
// NCCL cuts the name.
struct HostNameTable {
  bool ok[256] = {};
  constexpr HostNameTable() {
    for (int c = 0; c < 256; ++c) ok[c] = kHostChars.ok[c] && c != '.';
  }
};
constexpr HostNameTable kHostNameChars;

#if defined(__SSE2__)
// Which of the sixteen bytes at p are host-name bytes (kHostNameChars), a
// bit each, the first byte lowest.
unsigned HostNameMask16(const char* p) {
  const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  const auto at_most = [](__m128i x, char top) {  // x <= top, unsigned
    return _mm_cmpeq_epi8(_mm_min_epu8(x, _mm_set1_epi8(top)), x);
  };
  const __m128i letter =
      at_most(_mm_sub_epi8(_mm_or_si128(v, _mm_set1_epi8(0x20)), _mm_set1_epi8('a')), 25);
  const __m128i digit = at_most(_mm_sub_epi8(v, _mm_set1_epi8('0')), 9);
  const __m128i mark =
      _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('-')), _mm_cmpeq_epi8(v, _mm_set1_epi8('_')));
  return static_cast<unsigned>(_mm_movemask_epi8(_mm_or_si128(_mm_or_si128(letter, digit), mark)));
}
#endif

// Where the run of host-name bytes (kHostNameChars) that ends at s[end]
// begins: sixteen bytes classified at once where they lie before `end`.
size_t HostNameBefore(const char* s, size_t end) {
  size_t k = end;
#if defined(__SSE2__)
  while (k >= 16) {
    const unsigned other = ~HostNameMask16(s + k - 16) & 0xFFFFu;
    if (other != 0) return k - static_cast<size_t>(__builtin_clz(other) - 16);
    k -= 16;
  }
#endif
  while (k > 0 && kHostNameChars.ok[static_cast<unsigned char>(s[k - 1])]) --k;
  return k;
}

// Whether s[0, end) is all host-name bytes, with n bytes readable at s.
bool AllHostName(const char* s, size_t end, size_t n) {
#if defined(__SSE2__)
  if (end <= 16 && n >= 16) {
    const unsigned want = (1u << end) - 1;
    return (HostNameMask16(s) & want) == want;
  }
#endif
  (void)n;
  return HostNameBefore(s, end) == 0;
}

// The first "NCCL" in [p, end), or nullptr. memchr on 'N' runs at memory
// speed and 'N' is rare in the lines around NCCL's (hostnames and training
// output are mostly lower case); glibc's memmem pays a setup per call.
const char* FindNccl(const char* p, const char* end) {
  while (end - p >= 4) {
    const char* n = static_cast<const char*>(memchr(p, 'N', end - p - 3));
    if (!n) return nullptr;
    if (n[1] == 'C' && n[2] == 'C' && n[3] == 'L') return n;
    p = n + 1;
  }
  return nullptr;
}

// A run of decimal digits that is the whole of s, without from_chars' checks.
std::optional<int64_t> Digits(std::string_view s) {
  if (s.empty() || s.size() > 18) return std::nullopt;
  int64_t v = 0;
  for (char c : s) {
    if (!IsDigit(c)) return std::nullopt;
    v = v * 10 + (c - '0');
  }
  return v;
}

std::string_view FirstWord(std::string_view s) {
  s = Trim(s);
  size_t end = s.find_first_of(" \t,");
  return s.substr(0, end);
}

// Eight bytes of the host at a time. Behind the recent-ranks cache of
// RankFor it runs only on a cache miss (a new rank, or an evicted one).
uint64_t Hash(std::string_view host, int64_t pid, int dev) {
  uint64_t h = 1469598103934665603ull ^ host.size();
  size_t i = 0;
  for (; i + 8 <= host.size(); i += 8) {
    uint64_t w;
    __builtin_memcpy(&w, host.data() + i, 8);
    h = (h ^ w) * 0x100000001b3ull;
    h ^= h >> 29;
  }
  uint64_t last = 0;
  for (size_t shift = 0; i < host.size(); ++i, shift += 8) {
    last |= static_cast<uint64_t>(static_cast<unsigned char>(host[i])) << shift;
  }
  h = (h ^ last) * 0x9e3779b97f4a7c15ull;
  h ^= h >> 32;
  h ^= static_cast<uint64_t>(pid) * 0x9e3779b97f4a7c15ull;
  h ^= static_cast<uint64_t>(static_cast<int64_t>(dev) + 7) << 48;
  return h;
}

// The first and the last Word of x and y (n bytes, sizeof(Word) <= n <=
// 2 * sizeof(Word)) are equal: together they cover all n bytes.
template <typename Word>
bool SameEnds(const char* x, const char* y, size_t n) {
  Word a0, b0, a1, b1;
  __builtin_memcpy(&a0, x, sizeof(Word));
  __builtin_memcpy(&b0, y, sizeof(Word));
  __builtin_memcpy(&a1, x + n - sizeof(Word), sizeof(Word));
  __builtin_memcpy(&b1, y + n - sizeof(Word), sizeof(Word));
  return ((a0 ^ b0) | (a1 ^ b1)) == 0;
}

// The first b.size() (at most 16) bytes at a equal b, without a memcmp
// call: hostnames are short.
bool SameShortText(const char* a, std::string_view b) {
  size_t n = b.size();
  if (n >= 8) return SameEnds<uint64_t>(a, b.data(), n);
  if (n >= 4) return SameEnds<uint32_t>(a, b.data(), n);
  for (size_t i = 0; i < n; ++i) {
    if (a[i] != b[i]) return false;
  }
  return true;
}

bool IsIpv4(std::string_view s) {
  int dots = 0;
  if (s.empty()) return false;
  for (char c : s) {
    if (c == '.') {
      ++dots;
    } else if (!IsDigit(c)) {
      return false;
    }
  }
  return dots == 3;
}

// NcclLineMarks' needles.
constexpr std::string_view kSocketNeedle = "via NET/Socket";
constexpr std::string_view kIbNeedle = "NET/IB : Using";
// Longest needle minus one: what a chunk boundary can cut.
constexpr size_t kCarry = 13;
static_assert(kCarry + 1 >= kSocketNeedle.size() && kCarry + 1 >= kIbNeedle.size());

// A thread's key in twin_threads_.
uint64_t ThreadKey(std::string_view host, int64_t pid, int dev, int64_t tid) {
  return Hash(host, pid, dev) ^ (static_cast<uint64_t>(tid) * 0xc2b2ae3d27d4eb4full);
}

uint64_t Newlines(std::string_view s) {
  return static_cast<uint64_t>(std::count(s.begin(), s.end(), '\n'));
}

}  // namespace

// A placeholder written where the host was when the log was redacted,
// "<cluster_name>", "[hostname]" (after any launcher tag glued before it):
// the host, as a name; empty when the glued part ends in none. A launcher's
// own "<stdout>", "[1,0]" are no host.
static std::string_view RedactedHostPlaceholder(std::string_view glued) {
  if (glued.size() < 3) return {};
  char open = glued.back() == '>' ? '<' : glued.back() == ']' ? '[' : 0;
  if (open == 0) return {};
  size_t begin = glued.rfind(open);
  if (begin == std::string_view::npos || glued.size() - begin < 3) return {};
  std::string_view inside = glued.substr(begin + 1, glued.size() - begin - 2);
  bool letter = false;
  for (char c : inside) {
    if (!IsHostChar(c) && c != '_') return {};
    letter = letter || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
  }
  if (!letter || inside == "stdout" || inside == "stderr" || inside == "stdin") return {};
  if (StartsWith(inside, "default") || StartsWith(inside, "rank")) return {};  // torchrun's
  return glued.substr(begin);
}

// The shape nearly every NCCL line has, "host:pid:tid [dev] NCCL INFO msg",
// read in one forward pass over its first bytes with no library call. It
// accepts only lines on which ParseNcclLinePrefix would give the same
// answer; anything else (a launcher's tag, WARN's "file:line", TRACE's time,
// CALL's missing [dev], an odd number) returns false and the line takes the
// general path. The hot loop of the 1 GB benchmark is this function.
size_t FastNcclLinePrefix(std::string_view line, NcclLinePrefix* out, bool may_hold_bar) {
  const char* s = line.data();
  const size_t n = line.size();
  if (n == 0 || s[0] == '[' || s[0] == ':') return 0;
  // The first space or newline, eight bytes at a time (a zero byte in
  // w ^ "        " or w ^ "\n\n\n\n\n\n\n\n"; the first such byte is exact, the
  // borrow only ever marks bytes after it). `line` may run past its end
  // (the scanner passes the rest of its buffer): nothing below reads a
  // newline as part of the prefix.
  size_t i = 0;
  for (;; i += 8) {
    if (i + 8 > n || i >= 256) {
      while (i < n && i < 256 && s[i] != ' ' && s[i] != '\n') ++i;
      break;
    }
    uint64_t w;
    __builtin_memcpy(&w, s + i, 8);
    uint64_t x = w ^ 0x2020202020202020ull;
    uint64_t y = w ^ 0x0a0a0a0a0a0a0a0aull;
    uint64_t zero = ((x - 0x0101010101010101ull) & ~x) | ((y - 0x0101010101010101ull) & ~y);
    zero &= 0x8080808080808080ull;
    if (zero) {
      i += static_cast<size_t>(__builtin_ctzll(zero)) / 8;  // little-endian: first byte
      break;
    }
  }
  if (i >= n || i >= 256 || s[i] != ' ') return 0;
  // Backwards over ":pid:tid" (digits only, at most 18 each): the token's
  // last two colons, as ParseNcclLinePrefix finds them with rfind.
  const DigitRun tid_run = DigitsBefore(s, i, 18);
  size_t k = tid_run.begin;
  const int64_t tid = tid_run.value;
  if (k == i || k == 0 || s[k - 1] != ':') return 0;
  const size_t c2 = --k;
  const DigitRun pid_run = DigitsBefore(s, c2, 18);
  k = pid_run.begin;
  const int64_t pid = pid_run.value;
  if (k == c2 || k < 2 || s[k - 1] != ':') return 0;
  const size_t c1 = k - 1;
  // Only a plain host name: anything glued in front of it (a launcher's
  // tag, a timestamp, a border) is the general path's to strip; NCCL cuts
  // host names at '.'.
  if (!AllHostName(s, c1, n)) return 0;
  // " [dev] NCCL " then the level word.
  size_t j = i + 1;
  if (j + 1 >= n || s[j] != '[') return 0;
  ++j;
  int dev = 0;
  size_t digits = 0;
  if (s[j] == '-') {
    if (j + 2 >= n || s[j + 1] != '1' || s[j + 2] != ']') return 0;
    dev = -1;
    j += 2;
  } else {
    for (; j < n && digits < 7; ++j, ++digits) {
      unsigned d = static_cast<unsigned char>(s[j]) - '0';
      if (d > 9) break;
      dev = dev * 10 + static_cast<int>(d);
    }
    if (digits == 0 || dev >= 1 << 20) return 0;
  }
  if (n - j < 11 || __builtin_memcmp(s + j, "] NCCL ", 7) != 0) return 0;
  j += 7;
  std::string_view rest(s + j, n - j);
  size_t word;
  if (__builtin_memcmp(s + j, "INFO", 4) == 0) {
    out->level = NcclLinePrefix::Level::kInfo;
    word = 4;
  } else if (__builtin_memcmp(s + j, "WARN", 4) == 0) {
    out->level = NcclLinePrefix::Level::kWarn;
    word = 4;
  } else {
    return 0;
  }
  if (rest.size() > word && rest[word] != ' ') return 0;
  size_t message = j + std::min(rest.size(), word + 1);
  // A console's repeat after " | " is the general reader's to cut. `line`
  // may run on past its end: only this line's bytes are looked at.
  if (may_hold_bar) {
    const char* nl = static_cast<const char*>(memchr(s + message, '\n', n - message));
    size_t end = nl ? static_cast<size_t>(nl - s) : n;
    if (memchr(s + message, '|', end - message)) return 0;
  }
  out->host = std::string_view(s, c1);
  out->pid = pid;
  out->tid = tid;
  out->cuda_dev = dev;
  out->message = std::string_view(s + message, n - message);  // message <= n
  return message;
}

// Where a log console's export repeats an NCCL line's message after
// " | " (the repeat begins with the line's own host:pid:tid, `self`, after
// its own timestamp at most): the offset of that " | " in the message, or
// npos. A '|' of NCCL's own ("threadThresholds 8/8/64 | 512/8/64") is none.
size_t ConsoleRepeatAt(std::string_view message, std::string_view self) {
  if (self.empty()) return std::string_view::npos;
  for (size_t from = 0;;) {
    // memchr on the rare '|' first: NCCL's messages seldom hold one.
    const void* pipe =
        memchr(message.data() + from, '|', message.size() - std::min(from, message.size()));
    if (!pipe) return std::string_view::npos;
    size_t at = static_cast<size_t>(static_cast<const char*>(pipe) - message.data());
    if (at == 0 || at + 1 >= message.size() || message[at - 1] != ' ' || message[at + 1] != ' ') {
      from = at + 1;
      continue;
    }
    // One compare near the bar, not a search of the rest.
    std::string_view after = message.substr(at + 2);
    if (after.substr(0, 64 + self.size()).find(self) != std::string_view::npos) return at - 1;
    from = at + 2;
  }
}

size_t BackwardNcclLinePrefix(std::string_view line, size_t at, NcclLinePrefix* out,
                              bool may_hold_bar) {
  // "...host:pid:tid [dev] NCCL INFO msg" with anything before the host: read
  // back from the marker, one byte at a time, no search. Lines of other
  // shapes (WARN's file:line, a host that may begin in a glued timestamp, a
  // console's " | " repeat) are the general reader's.
  const char* s = line.data();
  const size_t n = line.size();
  if (at < 8 || at + 9 > n || __builtin_memcmp(s + at, "NCCL INFO", 9) != 0) return 0;
  if (at + 9 < n && s[at + 9] != ' ') return 0;
  if (s[at - 1] != ' ' || s[at - 2] != ']') return 0;
  // Each number's digits are found first, then read forwards: no running
  // power of ten to multiply by.
  // One digit, the common case, before the loop.
  DigitRun device = IsDigit(s[at - 3]) && !IsDigit(s[at - 4]) ? DigitRun{at - 3, s[at - 3] - '0'}
                                                              : DigitsBefore(s, at - 2, 7);
  size_t k = device.begin;
  const size_t digits = at - 2 - k;
  const int64_t dev = device.value;
  // "[-1]" (and any other sign) is the general reader's.
  if (digits == 0 || dev >= 1 << 20 || (k > 0 && s[k - 1] == '-')) return 0;
  if (k < 2 || s[k - 1] != '[' || s[k - 2] != ' ') return 0;
  k -= 2;
  const size_t token_end = k;  // host:pid:tid ends here
  int64_t ids[2] = {0, 0};     // tid, then pid
  for (int64_t& id : ids) {
    const size_t end = k;
    const DigitRun run = DigitsBefore(s, end, 18);
    k = run.begin;
    if (k == end || k == 0 || s[k - 1] != ':') return 0;
    id = run.value;
    --k;
  }
  const size_t host_end = k;
  k = HostNameBefore(s, k);
  if (k > 0 && s[k - 1] == '.') return 0;  // NCCL cuts host names at '.'
  if (k == host_end || IsDigit(s[k])) return 0;
  size_t message = std::min(n, at + 10);
  // A console's repeat after " | " is the general reader's to cut.
  if (may_hold_bar &&
      ConsoleRepeatAt(std::string_view(s + message, n - message),
                      std::string_view(s + k, token_end - k)) != std::string_view::npos) {
    return 0;
  }
  out->level = NcclLinePrefix::Level::kInfo;
  out->host = std::string_view(s + k, host_end - k);
  out->host_at = k;
  out->tid = ids[0];
  out->pid = ids[1];
  out->cuda_dev = static_cast<int>(dev);
  out->message = std::string_view(s + message, n - message);  // message <= n
  return message;
}

std::optional<NcclLinePrefix> ParseNcclLinePrefix(std::string_view line, size_t from_offset) {
  // The level marker: " NCCL INFO ", " NCCL WARN ", " NCCL TRACE ", " NCCL CALL ".
  NcclLinePrefix out;
  size_t marker = std::string_view::npos;
  size_t level_end = 0;
  const char* end = line.data() + line.size();
  for (const char* from = line.data() + std::min(from_offset, line.size());;) {
    const char* n = FindNccl(from, end);
    if (!n || end - n < 5 || n[4] != ' ') {
      if (!n) return std::nullopt;
      from = n + 4;
      continue;
    }
    size_t at = static_cast<size_t>(n - line.data());
    std::string_view rest = line.substr(at + 5);
    if (at > 0 && line[at - 1] == ' ') {
      // The level word, compared with literal lengths (no memcmp calls).
      size_t word = 0;
      if (StartsWith(rest, "INFO")) {
        out.level = NcclLinePrefix::Level::kInfo;
        word = 4;
      } else if (StartsWith(rest, "WARN")) {
        out.level = NcclLinePrefix::Level::kWarn;
        word = 4;
      } else if (StartsWith(rest, "TRACE")) {
        out.level = NcclLinePrefix::Level::kTrace;
        word = 5;
      } else if (StartsWith(rest, "CALL")) {
        out.level = NcclLinePrefix::Level::kCall;
        word = 4;
      }
      if (word && (rest.size() == word || rest[word] == ' ')) {
        marker = at;
        level_end = at + 5 + word + (rest.size() > word ? 1 : 0);
      }
    }
    if (marker != std::string_view::npos) break;
    from = n + 5;
  }
  out.message = line.substr(level_end);
  // The nearest token before the marker of the form host:pid:tid, at most
  // five tokens back (TRACE puts a time and "func:line" between, WARN
  // "file:line"): a timestamp such as "05:06:07" further out is never taken
  // for one. The host part may have a launcher's tag or a timestamp glued
  // in front ("[1,0]<stdout>:nodeB", "...+00:00nodeD"): NcclHostOf drops it.
  std::string_view before = line.substr(0, marker);
  size_t stop = before.size();
  bool found = false;
  size_t token_end = 0;
  for (int t = 0; t < 5 && stop > 0 && !found; ++t) {
    while (stop > 0 && before[stop - 1] == ' ') --stop;
    if (stop == 0) break;
    size_t begin = before.rfind(' ', stop - 1);
    begin = begin == std::string_view::npos ? 0 : begin + 1;
    std::string_view token = before.substr(begin, stop - begin);
    size_t c2 = token.rfind(':');
    size_t c1 =
        c2 == std::string_view::npos || c2 == 0 ? std::string_view::npos : token.rfind(':', c2 - 1);
    if (c1 != std::string_view::npos) {
      auto pid = Digits(token.substr(c1 + 1, c2 - c1 - 1));
      auto tid = Digits(token.substr(c2 + 1));
      if (pid && tid) {
        // The host is the run of host-name bytes that ends the glued part;
        // only when it may begin inside a glued timestamp ("...+00:00nodeD",
        // "...03.456ZnodeD": a digit after ':', or a '.', which NCCL's host
        // names never hold) is the glued part read as decorations first.
        std::string_view glued = token.substr(0, c1);
        size_t h = glued.size();
        bool dot = false;
        while (h > 0 && IsHostChar(glued[h - 1])) {
          dot = dot || glued[h - 1] == '.';
          --h;
        }
        std::string_view host = glued.substr(h);
        if (!host.empty() && (dot || (IsDigit(host[0]) && h > 0 && glued[h - 1] == ':'))) {
          host = NcclHostOf(glued);
        }
        if (host.empty()) host = RedactedHostPlaceholder(glued);
        // A host name ends the glued part; with none ("[1,5]<stdout>:2001:2002")
        // the line is still NCCL's when its [dev] follows.
        bool dev_follows =
            stop + 1 < before.size() && before[stop] == ' ' && before[stop + 1] == '[';
        if (!host.empty() || dev_follows) {
          out.host = host;
          out.host_at = host.empty() ? begin + c1 : static_cast<size_t>(host.data() - line.data());
          out.pid = static_cast<int64_t>(*pid);
          out.tid = static_cast<int64_t>(*tid);
          found = true;
          token_end = stop;
        }
      }
    }
    stop = begin;
  }
  if (!found) return std::nullopt;
  // " [dev]" follows, except on NCCL CALL lines.
  std::string_view rest = Trim(before.substr(token_end));
  if (!rest.empty() && rest[0] == '[') {
    size_t close = rest.find(']');
    if (close != std::string_view::npos) {
      std::string_view inside = rest.substr(1, close - 1);
      auto dev = inside == "-1" ? std::optional<int64_t>(-1) : Digits(inside);
      if (dev && *dev >= -1 && *dev < 1 << 20) out.cuda_dev = static_cast<int>(*dev);
    }
  }
  // WARN's "file:line": the last token before the marker, when it ends in
  // ":digits" and is not the [dev] (TRACE's "func:line" is not kept).
  if (out.level == NcclLinePrefix::Level::kWarn) {
    size_t space = rest.rfind(' ');
    std::string_view last = space == std::string_view::npos ? rest : rest.substr(space + 1);
    size_t colon = last.rfind(':');
    if (!last.empty() && last[0] != '[' && colon != std::string_view::npos && colon > 0 &&
        Digits(last.substr(colon + 1))) {
      out.source = NcclSourceOf(last);
    }
  }
  std::string_view self = line.substr(out.host_at, token_end - out.host_at);
  if (size_t bar = ConsoleRepeatAt(out.message, self); bar != std::string_view::npos) {
    out.message = out.message.substr(0, bar);
  }
  return out;
}

std::vector<NcclInterface> ParseNcclInterfaces(std::string_view text) {
  std::vector<NcclInterface> out;
  size_t pos = 0;
  while (pos < text.size() && out.size() <= kNcclMaxInterfaces) {
    while (pos < text.size() && text[pos] == ' ') ++pos;
    size_t end = text.find(' ', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view token = text.substr(pos, end - pos);
    pos = end;
    // Merged NICs (2.20-2.23): "[0]={[0] mlx5_0:1/RoCE, [1] mlx5_1:1/RoCE}".
    while (!token.empty() && (token.back() == ',' || token.back() == '}')) token.remove_suffix(1);
    if (token.empty()) continue;
    for (int round = 0; round < 3 && !token.empty(); ++round) {
      if (token[0] == '[') {  // "[0]eth0:..." index; "[RO]" alone is a flag
        size_t close = token.find(']');
        if (close == std::string_view::npos) {
          token = {};
          break;
        }
        token = token.substr(close + 1);
      } else if (token.substr(0, 2) == "={") {
        token = token.substr(2);
      } else {
        break;
      }
    }
    if (token.empty()) continue;
    if (token == ";" || token == "OOB") break;
    if (token[0] == ';') break;
    // An empty or cut OOB ("; OOB :", ":<0>"): nothing named.
    if (token[0] == ':' || token[0] == '<') continue;
    // The port is the last "<N>"; a redacted address may hold brackets of
    // its own ("eth0:<ip><0>"), kept as the address the log shows.
    size_t lt = token.rfind('<');
    bool port = false;
    if (lt != std::string_view::npos) {
      std::string_view digits = token.substr(lt + 1);
      digits = digits.substr(0, digits.find('>'));
      port = digits.find_first_not_of("0123456789") == std::string_view::npos;
    }
    NcclInterface iface;
    if (lt == std::string_view::npos) {
      // No address: an IB device "mlx5_0:1/IB", or a plugin's "name:port".
      iface.name = std::string(token);
    } else {
      std::string_view spec = port ? token.substr(0, lt) : token;
      size_t last = spec.rfind(':');
      if (last != std::string_view::npos && IsIpv4(spec.substr(last + 1))) {
        iface.name = std::string(spec.substr(0, last));
        iface.address = std::string(spec.substr(last + 1));
      } else {  // IPv6: the name is up to the first ':'
        size_t first = spec.find(':');
        iface.name = std::string(spec.substr(0, first));
        if (first != std::string_view::npos) iface.address = std::string(spec.substr(first + 1));
      }
    }
    if (!iface.name.empty()) out.push_back(std::move(iface));
  }
  return out;
}

std::string_view NcclSourceOf(std::string_view path) {
  size_t src = path.rfind("src/");
  if (src != std::string_view::npos && (src == 0 || path[src - 1] == '/'))
    path = path.substr(src + 4);
  return path;
}

bool ParseNcclErrorReturn(std::string_view msg, std::string_view* source, int* result) {
  // "file.cc:123 -> 2", "file.cc:123 -> 2 (Connection reset by peer)",
  // "file.cc:123 -> 3 [Async thread]": no space inside the first word.
  size_t space = msg.find(' ');
  if (space == std::string_view::npos || space < 4 || msg.substr(space, 4) != " -> ") return false;
  std::string_view where = msg.substr(0, space);
  size_t colon = where.rfind(':');
  if (colon == std::string_view::npos || colon == 0 || !Digits(where.substr(colon + 1))) {
    return false;
  }
  std::string_view file = where.substr(0, colon);
  size_t dot = file.rfind('.');
  if (dot == std::string_view::npos || dot + 1 >= file.size()) return false;
  std::string_view code = msg.substr(space + 4);
  bool negative = !code.empty() && code[0] == '-';
  if (negative) code.remove_prefix(1);
  size_t n = 0;
  while (n < code.size() && n < 9 && IsDigit(code[n])) ++n;
  if (n == 0 || (n < code.size() && code[n] != ' ')) return false;
  auto value = Digits(code.substr(0, n));
  if (!value) return false;
  *source = NcclSourceOf(where);
  *result = negative ? -static_cast<int>(*value) : static_cast<int>(*value);
  return true;
}

std::string_view ParseNcclVersion(std::string_view s) {
  s = Trim(s);
  size_t end = 0;
  while (end < s.size() && s[end] != ' ' && s[end] != '\t' && s[end] != ',' && s[end] != '\r') {
    ++end;
  }
  s = s.substr(0, std::min<size_t>(end, 64));
  return !s.empty() && IsDigit(s[0]) ? s : std::string_view();
}

NcclLogParser::NcclLogParser() { recent_ranks_.resize(size_t{1} << kRecentRankBits); }

void NcclLogParser::Feed(std::string_view chunk) {
  summary_.bytes += chunk.size();
  if (!tail_.empty() || cutting_) {
    const char* nl = static_cast<const char*>(memchr(chunk.data(), '\n', chunk.size()));
    size_t take = nl ? static_cast<size_t>(nl - chunk.data()) : chunk.size();
    if (!cutting_) {
      size_t room = kNcclMaxLineBytes - std::min(kNcclMaxLineBytes, tail_.size());
      if (take > room) {
        cutting_ = true;
        ++summary_.dropped;
      }
      tail_.append(chunk.data(), std::min(take, room));
    }
    if (!nl) return;
    std::string line = std::move(tail_);
    tail_.clear();
    ++line_no_;
    AnyLine(Unscanned(line));
    cutting_ = false;
    chunk.remove_prefix(take + 1);
  }
  const char* last = static_cast<const char*>(memrchr(chunk.data(), '\n', chunk.size()));
  size_t complete = last ? static_cast<size_t>(last - chunk.data()) + 1 : 0;
  ScanLines(chunk.substr(0, complete));
  std::string_view rest = chunk.substr(complete);
  if (rest.size() > kNcclMaxLineBytes) {
    rest = rest.substr(0, kNcclMaxLineBytes);
    cutting_ = true;
    ++summary_.dropped;
  }
  tail_.assign(rest.data(), rest.size());
}

void NcclLogParser::ScanLines(std::string_view text) {
  LineScanner scanner(text);
  ScannedLine lines[64];
  while (size_t count = scanner.Next(lines, std::size(lines))) {
    for (size_t i = 0; i < count; ++i) ScannedOne(lines[i]);
  }
}

void NcclLogParser::ScannedOne(ScannedLine& line) {
  if (line.text.size() > kNcclMaxLineBytes) {
    ++summary_.dropped;  // cut, as a line split across Feeds is
    line.text = line.text.substr(0, kNcclMaxLineBytes);
    if (line.nccl != std::string_view::npos && line.nccl + 4 > kNcclMaxLineBytes) {
      line.nccl = std::string_view::npos;
    }
  }
  ++line_no_;
  AnyLine(line);
}

ScannedLine NcclLogParser::Unscanned(std::string_view line) {
  ScannedLine scanned;
  scanned.text = line;
  if (const char* hit = FindNccl(line.data(), line.data() + line.size())) {
    scanned.nccl = static_cast<size_t>(hit - line.data());
  }
  return scanned;  // not plain: the closer looks are taken
}

namespace {

// Marks the key of an outer tag alone in the tag map.
constexpr uint64_t kOuterTag = 0x5bd1e9955bd1e995ull;

}  // namespace

void NcclLogParser::Dispatch(const ScannedLine& line) {
  // Most lines of a dense log are NCCL's own: its prefix is tried right at
  // the line's start, before anything else, unless the last NCCL lines all
  // had a launcher's prefix in front (then the fast reader would only fail).
  const bool try_fast = fast_misses_ < kFastMissesBeforeSkip;
  if (try_fast) {
    NcclLinePrefix fast;
    if (size_t head = FastNcclLinePrefix(line.text, &fast, !line.plain)) {
      ++summary_.nccl_lines;
      fast.message = line.text.substr(head);
      Prefixed(fast);
      return;
    }
  }
  if (line.nccl == std::string_view::npos) {
    Other(line.text, line.plain);
    return;
  }
  Line(line, try_fast);
}

NcclLogSummary NcclLogParser::Finish() {
  if (!tail_.empty()) {
    std::string line = std::move(tail_);
    tail_.clear();
    ++line_no_;
    AnyLine(Unscanned(line));
  }
  ReleaseWrapCandidate(false, true);
  if (!wrapped_.empty()) {
    std::string held = std::move(wrapped_);
    wrapped_.clear();
    line_no_ = wrapped_line_no_;
    Dispatch(Unscanned(held));
  }
  cutting_ = false;
  // Versions printed under a tag whose process never printed a prefixed line.
  for (auto& [key, version] : pending_versions_) {
    bool known = false;
    for (const std::string& v : summary_.unattributed_versions) known = known || v == version;
    if (!known) summary_.unattributed_versions.push_back(std::move(version));
  }
  pending_versions_.clear();
  // Old logs (2.3-2.4 with the log cut before COMPLETE, or a rank's Init
  // lines missing) give no size; one ring layout for all gives it.
  bool sized = false;
  for (const NcclRank& r : summary_.ranks) sized = sized || r.nranks > 0;
  if (!sized && layout_ranks_ > 0) {
    for (NcclRank& r : summary_.ranks) {
      if (r.rank >= 0 && r.rank < layout_ranks_) r.nranks = layout_ranks_;
    }
  }
  SanitizeNcclSummary(summary_);
  return std::move(summary_);
}

bool NcclLogParser::IsRecent(const RecentRank& recent, const NcclLinePrefix& prefix) const {
  const std::string_view host = prefix.host;
  if (recent.pid != prefix.pid || recent.dev != prefix.cuda_dev ||
      recent.host_size != host.size()) {
    return false;
  }
  if (host.size() <= sizeof(recent.host)) return SameShortText(recent.host, host);
  return summary_.processes[summary_.ranks[recent.rank].process].host == host;
}

size_t NcclLogParser::RankFor(const NcclLinePrefix& prefix) {
  if (!twin_threads_.empty()) {
    auto it = twin_threads_.find(ThreadKey(prefix.host, prefix.pid, prefix.cuda_dev, prefix.tid));
    if (it != twin_threads_.end()) {
      const NcclRank& r = summary_.ranks[it->second];
      const NcclProcess& p = summary_.processes[r.process];
      if (r.cuda_dev == prefix.cuda_dev && p.pid == prefix.pid && p.host == prefix.host) {
        return it->second;
      }
    }
  }
  // Interleaved ranks: a small cache on (pid, dev), two ways to a slot,
  // checked against the host, spares hashing the host on nearly every line.
  uint64_t key = (static_cast<uint64_t>(prefix.pid) * 0x9e3779b97f4a7c15ull) ^
                 (static_cast<uint64_t>(prefix.cuda_dev + 1) * 0xc2b2ae3d27d4eb4full);
  key ^= key >> 29;
  key *= 0xbf58476d1ce4e5b9ull;
  key ^= key >> 32;
  RecentRank* ways = &recent_ranks_[(key >> (64 - kRecentRankBits)) & ~size_t{1}];
  if (IsRecent(ways[0], prefix)) return ways[0].rank;
  if (IsRecent(ways[1], prefix)) return ways[1].rank;
  size_t found = LookUpRank(prefix);
  if (found == kNoRank) return found;
  RecentRank& put = ways[0].host_size == UINT32_MAX ? ways[0] : ways[1];
  put.pid = prefix.pid;
  put.dev = prefix.cuda_dev;
  put.host_size = static_cast<uint32_t>(prefix.host.size());
  // An empty host may have no storage at all (a null data()).
  if (!prefix.host.empty())
    memcpy(put.host, prefix.host.data(), std::min(prefix.host.size(), sizeof(put.host)));
  put.rank = found;
  return found;
}

size_t NcclLogParser::LookUpRank(const NcclLinePrefix& prefix) {
  // Open addressing on (host, pid, dev); the table has twice the rank cap,
  // so it never fills and a probe ends at an empty slot.
  if (rank_slots_.empty()) rank_slots_.assign(kRankSlots, kNoRank);
  uint64_t key = Hash(prefix.host, prefix.pid, prefix.cuda_dev);
  size_t slot = key & (kRankSlots - 1);
  for (;; slot = (slot + 1) & (kRankSlots - 1)) {
    size_t index = rank_slots_[slot];
    if (index == kNoRank) break;
    const NcclRank& r = summary_.ranks[index];
    if (r.cuda_dev == prefix.cuda_dev) {
      const NcclProcess& p = summary_.processes[r.process];
      if (p.pid == prefix.pid && p.host == prefix.host) return index;
    }
  }
  // A new rank: find or make its process (rare: a linear-probe map too).
  uint64_t process_key = Hash(prefix.host, prefix.pid, -3);
  size_t process = kNoRank;
  auto [plo, phi] = process_index_.equal_range(process_key);
  for (auto it = plo; it != phi; ++it) {
    const NcclProcess& p = summary_.processes[it->second];
    if (p.pid == prefix.pid && p.host == prefix.host) process = it->second;
  }
  if (process == kNoRank) {
    if (summary_.processes.size() >= kNcclMaxProcesses) {
      ++summary_.dropped;
      return kNoRank;
    }
    process = summary_.processes.size();
    NcclProcess p;
    p.host = std::string(prefix.host);
    p.pid = prefix.pid;
    summary_.processes.push_back(std::move(p));
    process_index_.emplace(process_key, process);
  }
  if (summary_.ranks.size() >= kNcclMaxRanks) {
    ++summary_.dropped;
    return kNoRank;
  }
  size_t found = summary_.ranks.size();
  NcclRank r;
  r.process = process;
  r.cuda_dev = prefix.cuda_dev;
  summary_.ranks.push_back(std::move(r));
  rank_slots_[slot] = found;
  return found;
}

size_t NcclLogParser::TwinRank(
    size_t rank_index, const std::function<bool(const NcclRank&, const NcclProcess&)>& fits) {
  const NcclRank& base = summary_.ranks[rank_index];
  const std::string host = summary_.processes[base.process].host;
  const int64_t pid = summary_.processes[base.process].pid;
  const int dev = base.cuda_dev;
  size_t found = kNoRank;
  int twins = 0;
  for (size_t i = 0; i < summary_.processes.size(); ++i) {
    const NcclProcess& p = summary_.processes[i];
    if (p.pid != pid || p.host != host) continue;
    twins = std::max(twins, p.twin);
  }
  for (size_t i = 0; i < summary_.ranks.size() && found == kNoRank; ++i) {
    const NcclRank& r = summary_.ranks[i];
    const NcclProcess& p = summary_.processes[r.process];
    if (i != rank_index && r.cuda_dev == dev && p.pid == pid && p.host == host && fits(r, p)) {
      found = i;
    }
  }
  if (found == kNoRank) {
    if (summary_.processes.size() >= kNcclMaxProcesses || summary_.ranks.size() >= kNcclMaxRanks) {
      ++summary_.dropped;
      return kNoRank;
    }
    NcclProcess p;
    p.host = host;
    p.pid = pid;
    p.twin = twins + 1;
    summary_.processes.push_back(std::move(p));
    NcclRank r;
    r.process = summary_.processes.size() - 1;
    r.cuda_dev = dev;
    summary_.ranks.push_back(std::move(r));
    found = summary_.ranks.size() - 1;
  }
  if (line_tid_ != pid && twin_threads_.size() < kNcclMaxRanks) {
    twin_threads_[ThreadKey(host, pid, dev, line_tid_)] = found;
  }
  return found;
}

void NcclLogParser::Line(const ScannedLine& scanned, bool fast_tried) {
  ++summary_.nccl_lines;
  std::string_view line = scanned.text;
  size_t first_nccl = scanned.nccl;
  NcclLinePrefix fast;
  if (!scanned.plain && memchr(line.data(), '\x1b', line.size())) {
    // The fast reader takes the line as it is, escape codes and all, when
    // it can: the same answer whether Dispatch tried it or not.
    if (!fast_tried && FastNcclLinePrefix(line, &fast)) {
      Prefixed(fast);
      return;
    }
    scratch_ = WithoutEscapes(line);
    line = scratch_;
    first_nccl = 0;
    if (FastNcclLinePrefix(line, &fast)) {
      Prefixed(fast);  // its escape codes hid a plain line
      return;
    }
  }
  // Read in place, not copied: a copy of the prefix just written, read
  // back whole, stalls on the stores it waits for (a tenth of this call).
  const NcclLinePrefix* prefix = &fast;
  std::optional<NcclLinePrefix> general;
  if (!BackwardNcclLinePrefix(line, first_nccl, &fast, !scanned.plain)) {
    general = ParseNcclLinePrefix(line, first_nccl);
    if (!general) {
      Unprefixed(line);
      return;
    }
    prefix = &*general;
  }
  // A prefix at the line's start: the fast reader's shape again, maybe.
  if (prefix->host_at == 0) {
    fast_misses_ = 0;
  } else if (fast_misses_ < kFastMissesBeforeSkip) {
    ++fast_misses_;
  }
  // A WARN's time, where a launcher or log system put one before the host.
  if (prefix->level == NcclLinePrefix::Level::kWarn && prefix->host_at > 0) {
    std::string_view head = line.substr(0, prefix->host_at);
    for (size_t at = 0; at < head.size() && at < 64; ++at) {
      if (size_t n = TimestampLength(head.substr(at)); n > 0) {
        warn_time_ = head.substr(at, n);
        break;
      }
    }
  }
  size_t rank = Prefixed(*prefix);
  warn_time_ = {};
  // The launcher's tag, read off a rank's first lines and then now and
  // then (a process keeps its tag): its bare lines are found by it.
  if (prefix->host_at > 0 && rank != kNoRank) {
    uint64_t lines = summary_.ranks[rank].lines;
    if (lines <= 8 || (lines & 1023) == 0) {
      RememberTag(ReadLineHead(line.substr(0, prefix->host_at)), rank);
    }
  }
}

size_t NcclLogParser::Prefixed(const NcclLinePrefix& prefix) {
  line_tid_ = prefix.tid;
  size_t rank = RankFor(prefix);
  if (rank != kNoRank) {
    ++summary_.ranks[rank].lines;
    ++summary_.attributed_lines;
    last_process_ = summary_.ranks[rank].process;
  }
  std::string_view message = prefix.message;
  if (!message.empty()) {
    char last = message.back();
    if (last == ']' || last == 'm' || last == ' ' || last == '\r' ||
        static_cast<unsigned char>(last) >= 0x80) {
      message = StripLineTail(message, &summary_.folded_repeats);
    }
  }
  switch (prefix.level) {
    case NcclLinePrefix::Level::kInfo:
      ++summary_.info_lines;
      if (rank != kNoRank) {
        // A process with a WARN whose thread has not gone on: is this line an
        // error return, or progress?
        NcclProcess& process = ProcessOf(rank);
        if (process.warns_waiting > 0 && !ErrorReturn(process, message)) {
          for (NcclWarnOnProcess& w : process.warns) {
            w.progress_after = true;
            if (w.tid == line_tid_ && !w.thread_progress_after) {
              w.thread_progress_after = true;
              --process.warns_waiting;
            }
          }
        }
        Info(rank, message);
      }
      break;
    case NcclLinePrefix::Level::kWarn:
      ++summary_.warn_lines;
      Warn(rank, message, prefix.source);
      break;
    case NcclLinePrefix::Level::kTrace:
    case NcclLinePrefix::Level::kCall:
      ++summary_.trace_lines;
      break;
  }
  return rank;
}

void NcclLogParser::RememberTag(const LineHead& head, size_t rank) {
  if (head.tag_key == 0) return;
  size_t process = summary_.ranks[rank].process;
  if (head.tag_key == last_tag_key_ && process == last_tag_process_) return;
  last_tag_key_ = head.tag_key;
  last_tag_process_ = process;
  MapTag(head.tag_key, process);
  // The outer tag alone, for lines where another program adds its own
  // inside it ("(RayTrainWorker pid=1) [rank1]:[I ... ProcessGroupNCCL.cpp]").
  if (head.outer_key != head.tag_key) MapTag(head.outer_key ^ kOuterTag, process);
  for (size_t i = 0; i < pending_versions_.size();) {
    if (pending_versions_[i].first != head.tag_key) {
      ++i;
      continue;
    }
    NcclProcess& p = summary_.processes[process];
    if (p.version.empty()) p.version = std::move(pending_versions_[i].second);
    pending_versions_.erase(pending_versions_.begin() + static_cast<std::ptrdiff_t>(i));
  }
}

void NcclLogParser::MapTag(uint64_t key, size_t process) {
  auto it = tag_process_.find(key);
  if (it != tag_process_.end()) {
    // One tag, two processes (a pdsh host tag over its GPUs): it names none.
    if (it->second != process) it->second = kNoRank;
  } else if (tag_process_.size() < 4 * kNcclMaxProcesses) {
    tag_process_.emplace(key, process);
  }
}

size_t NcclLogParser::ProcessOfTag(const LineHead& head) const {
  if (head.tag_key == 0) return kNoRank;
  auto it = tag_process_.find(head.tag_key);
  if (it != tag_process_.end()) return it->second;
  if (head.outer_key != head.tag_key) {
    it = tag_process_.find(head.outer_key);
    if (it != tag_process_.end()) return it->second;
  }
  it = tag_process_.find(head.outer_key ^ kOuterTag);
  return it == tag_process_.end() ? kNoRank : it->second;
}

void NcclLogParser::Unprefixed(std::string_view line) {
  LineHead head = ReadLineHead(line);
  std::string_view s =
      StripLineTail(line.substr(std::min(head.content, line.size())), &summary_.folded_repeats);
  // A log quoted in an issue or an e-mail ("> NCCL version 2.4.8+cuda10.1",
  // "> > ..."): the quote marks are no launcher's tag.
  if (!s.empty() && s[0] == '>') {
    std::string_view unquoted = s;
    while (!unquoted.empty() && (unquoted[0] == '>' || unquoted[0] == ' ')) {
      unquoted.remove_prefix(1);
    }
    if (StartsWith(unquoted, "NCCL version ")) s = unquoted;
  }
  if (StartsWith(s, "NCCL version ")) {
    std::string_view version = ParseNcclVersion(s.substr(13));
    if (version.empty()) return;
    // The launcher says whose line it is (unless one tag covers several
    // processes); the process may print its first prefixed line only later.
    bool tag_unknown = head.tag_key != 0 && tag_process_.count(head.tag_key) == 0 &&
                       tag_process_.count(head.outer_key) == 0 &&
                       tag_process_.count(head.outer_key ^ kOuterTag) == 0;
    if (tag_unknown || (head.tag_key != 0 && ProcessOfTag(head) != kNoRank)) {
      size_t process = ProcessOfTag(head);
      if (process != kNoRank) {
        if (summary_.processes[process].version.empty()) {
          summary_.processes[process].version = std::string(version);
          summary_.processes[process].version_line = line_no_;
        }
      } else if (pending_versions_.size() < kNcclMaxProcesses) {
        pending_versions_.emplace_back(head.tag_key, std::string(version));
      } else {
        ++summary_.dropped;
      }
      return;
    }
    if (last_process_ != kNoRank && summary_.processes[last_process_].version.empty()) {
      summary_.processes[last_process_].version = std::string(version);
      summary_.processes[last_process_].version_line = line_no_;
      return;
    }
    for (const std::string& v : summary_.unattributed_versions) {
      if (v == version) return;
    }
    if (summary_.unattributed_versions.size() < kNcclMaxProcesses) {
      summary_.unattributed_versions.emplace_back(version);
    } else {
      ++summary_.dropped;
    }
    return;
  }
  // Not NCCL's own line (PyTorch's, the program's, naming NCCL): counted
  // with the other programs' lines, not as an NCCL line.
  if (!Contains(s, "NCCL INFO") && !Contains(s, "NCCL WARN")) {
    --summary_.nccl_lines;
    ++summary_.other_lines;
  }
  if (memchr(s.data(), '=', s.size())) LauncherEcho(s);
  TorchLine(s, head);
  TorchErrorLine(s);
  if (Contains(s, "unhandled system error")) ++summary_.system_errors;
  if (Contains(s, "remote process exited")) ++summary_.remote_errors;
  if (Contains(s, "collective operation timeout") || Contains(s, "Timeout waiting")) {
    ++summary_.timeouts;
  }
  if (summary_.job_error_line == 0 && summary_.system_errors + summary_.remote_errors +
                                              summary_.timeouts + summary_.torch_nccl_errors >
                                          0) {
    summary_.job_error_line = line_no_;
    // Its report began at the last traceback, unless lines came between.
    const uint64_t traceback = summary_.traceback_other_lines;  // 1 + the lines before it
    const bool in_traceback = traceback != 0 && summary_.other_lines + 1 - traceback <= 64;
    summary_.job_error_other_lines = in_traceback ? traceback - 1 : summary_.other_lines - 1;
    summary_.job_error_report_line = in_traceback ? summary_.traceback_line : line_no_;
  }
}

// PyTorch's error naming NCCL ("NCCL error in: ...", DistBackendError) and
// the NCCL version in its text.
void NcclLogParser::TorchErrorLine(std::string_view s) {
  if (!Contains(s, "NCCL error") && !Contains(s, "DistBackendError")) return;
  ++summary_.torch_nccl_errors;
  std::string_view version = NcclVersionInTorchError(s);
  if (version.empty()) return;
  if (summary_.torch_error_version_line == 0) summary_.torch_error_version_line = line_no_;
  for (const std::string& v : summary_.torch_error_versions) {
    if (v == version) return;
  }
  if (summary_.torch_error_versions.size() < kNcclMaxProcesses) {
    summary_.torch_error_versions.emplace_back(version);
  } else {
    ++summary_.dropped;
  }
}

void NcclLogParser::PeerFailure(std::string_view peer, std::string_view reason, size_t rank) {
  peer = FirstWord(peer);
  reason = Trim(reason.substr(0, 120));
  if (peer.empty()) peer = kPeerNotPrinted;
  for (NcclPeerFailure& f : summary_.peer_failures) {
    if (f.peer == peer) {
      ++f.count;
      return;
    }
  }
  if (summary_.peer_failures.size() >= kNcclMaxPeers) {
    ++summary_.dropped;
    return;
  }
  NcclPeerFailure f;
  f.peer = std::string(peer);
  f.reason = std::string(reason);
  f.first_line = line_no_;
  if (rank != kNoRank) f.first_seen_by = ProcessOf(rank).Name();
  f.count = 1;
  summary_.peer_failures.push_back(std::move(f));
}

void NcclLogParser::ProxyFailure(size_t rank, std::string_view msg) {
  NcclProxyFailure f;
  if (!ParseNcclProxyFailure(msg, &f)) return;
  const NcclProcess& p = ProcessOf(rank);
  for (NcclProxyFailure& seen : summary_.proxy_failures) {
    if (seen.proxy_rank == f.proxy_rank && seen.from_rank == f.from_rank &&
        seen.operation == f.operation && seen.host == p.host) {
      ++seen.count;
      return;
    }
  }
  if (summary_.proxy_failures.size() >= kNcclMaxPeers) {
    ++summary_.dropped;
    return;
  }
  f.proxy_process = p.Name();
  f.host = p.host;
  f.count = 1;
  f.first_line = line_no_;
  summary_.proxy_failures.push_back(std::move(f));
}

void NcclLogParser::Algorithm(std::string_view text) {
  for (NcclAlgorithmChoice& a : summary_.algorithms) {
    if (a.text == text) {
      ++a.count;
      return;
    }
  }
  if (summary_.algorithms.size() >= kNcclMaxAlgorithms) {
    ++summary_.dropped;
    return;
  }
  summary_.algorithms.push_back({std::string(text), 1});
}

bool NcclLogParser::ErrorReturn(NcclProcess& process, std::string_view msg) {
  std::string_view source;
  int result = 0;
  // A path's first byte: a lower-case letter, '.' or '/' (most INFO
  // messages begin with an upper-case word).
  if (msg.empty() || !((msg[0] >= 'a' && msg[0] <= 'z') || msg[0] == '/' || msg[0] == '.') ||
      !ParseNcclErrorReturn(msg, &source, &result)) {
    return false;
  }
  if (result > 0) ++process.error_returns;
  // It follows the WARNs of its own thread after which that thread printed
  // nothing else: NCCLCHECK returns up the thread that failed.
  for (NcclWarnOnProcess& w : process.warns) {
    if (w.chain_result >= 0 || w.thread_progress_after || w.tid != line_tid_) continue;
    w.chain_result = result;
    w.chain_source = std::string(source.substr(0, 160));
    w.chain_line = line_no_;
  }
  return true;
}

void NcclLogParser::WarnOnProcess(size_t rank, size_t warning, std::string_view source) {
  NcclProcess& p = ProcessOf(rank);
  // The same WARN again with nothing between: one.
  if (!p.warns.empty() && p.warns.back().warning == warning && !p.warns.back().progress_after &&
      p.warns.back().chain_result < 0) {
    return;
  }
  // One NCCL went on from (its thread printed more, no error return) makes
  // room: the same WARN's, else any, once the list is full; a failure is kept.
  auto settled = [](const NcclWarnOnProcess& w) {
    return w.thread_progress_after && w.chain_result < 0;
  };
  auto room = std::find_if(p.warns.begin(), p.warns.end(), [&](const NcclWarnOnProcess& w) {
    return w.warning == warning && settled(w);
  });
  if (room == p.warns.end() && p.warns.size() >= kNcclMaxWarnsPerProcess) {
    room = std::find_if(p.warns.begin(), p.warns.end(), settled);
    ++summary_.dropped;
    if (room == p.warns.end()) return;
  }
  if (room != p.warns.end()) p.warns.erase(room);
  ++p.warns_waiting;
  NcclWarnOnProcess w;
  w.warning = warning;
  w.line = line_no_;
  w.tid = line_tid_;
  w.other_lines_before = summary_.other_lines;
  w.cuda_dev = summary_.ranks[rank].cuda_dev;
  w.source = std::string(source.substr(0, 160));
  w.time = std::string(warn_time_);
  w.init_done_before = p.init_done;
  p.warns.push_back(std::move(w));
}

void NcclLogParser::Warn(size_t rank, std::string_view msg, std::string_view source) {
  if (rank != kNoRank) ++summary_.ranks[rank].warnings;
  msg = Trim(msg);
  if (rank != kNoRank) {
    ReadNcclFallbackWarn(msg, line_no_, ProcessOf(rank));
    // "[Proxy Service 11] Failed to execute operation Connect from rank 3":
    // the printer's rank, when no Init line told it.
    int proxy_rank = NcclProxyServiceRank(msg);
    if (proxy_rank >= 0 && summary_.ranks[rank].rank < 0) summary_.ranks[rank].rank = proxy_rank;
    if (proxy_rank >= 0) ProxyFailure(rank, msg);
  }
  std::optional<std::string_view> connect_to = After(msg, "Connect to ");
  if (!connect_to) connect_to = After(msg, ": connect to ");  // 2.27+
  if (connect_to) {
    // "Connect to 10.0.0.2<43211> failed : Connection refused" (2.4-2.26, after
    // "Net : " or "socketStartConnect: "); 2.27+ "socketStartConnect: connect to
    // X failed : Y" and "... connect to X returned Y, exceeded error retry count
    // after 34 attempts"; 2.20-2.23 "socketPollConnect: Connect to X returned
    // 113(No route to host) errno 113(No route to host)".
    std::string_view rest = *connect_to;
    size_t failed = Find(rest, " failed");
    size_t returned = Find(rest, " returned ");
    std::string_view reason;
    if (auto r = After(rest, " failed : ")) reason = *r;
    if (reason.empty()) {
      if (auto r = After(rest, " failed with error ")) reason = *r;
    }
    if (reason.empty() && returned != std::string_view::npos) {
      reason = rest.substr(returned + 10);
      size_t open = reason.find('(');
      size_t close = reason.find(')');
      if (open != std::string_view::npos && close != std::string_view::npos && open < close &&
          open < 6) {
        reason = reason.substr(open + 1, close - open - 1);  // "113(No route to host)"
      } else {
        reason = reason.substr(0, Find(reason, ", exceeded"));
      }
    }
    PeerFailure(rest.substr(0, std::min(failed, returned)), reason, rank);
  } else if (auto subnet = After(msg, "No interface found in the same subnet as remote address ")) {
    PeerFailure(*subnet, "no local interface in the same subnet", rank);
  } else if (auto retry = After(msg, ": connect returned ")) {
    // 2.24-2.26: "socketPollConnect: connect returned X, exceeded error retry count (34)".
    PeerFailure("", retry->substr(0, Find(*retry, ", exceeded")), rank);
  } else if (auto to = After(msg, "Call to send to ")) {
    std::string_view reason;
    if (auto r = After(*to, " failed : ")) reason = *r;
    PeerFailure(to->substr(0, Find(*to, " failed")), reason, rank);
  } else if (auto to = After(msg, "PollConnect to ")) {
    std::string_view reason;
    if (auto r = After(*to, " failed with error ")) reason = *r;
    PeerFailure(to->substr(0, Find(*to, " failed")), reason, rank);
  } else if (auto from = After(msg, "Call to recv from ")) {
    std::string_view reason;
    if (auto r = After(*from, " failed : ")) reason = *r;
    PeerFailure(from->substr(0, Find(*from, " failed")), reason, rank);
  } else if (auto peer = After(msg, "Connection closed by remote peer")) {
    // "... peer 10.0.0.2<5>" (2.10+, a name from 2.12.10), none before 2.10.
    PeerFailure(Trim(*peer), "Connection closed by remote peer", rank);
  } else if (auto reason = After(msg, "Call to connect failed : ")) {  // 2.2-2.4
    PeerFailure("", *reason, rank);
  } else if (Contains(msg, "exceeded timeouts") || Contains(msg, "exceeded retries")) {
    PeerFailure("", msg, rank);
  }
  if (StartsWith(msg, "Mismatched NCCL version")) ++summary_.version_mismatch_warnings;
  if (Contains(msg, " output empty list")) LibfabricLine(msg);
  if (Contains(msg, "unhandled system error")) ++summary_.system_errors;
  if (Contains(msg, "remote process exited")) ++summary_.remote_errors;
  if (Contains(msg, "Timeout waiting") || Contains(msg, "timed out waiting")) ++summary_.timeouts;
  std::string_view text = msg.substr(0, 200);
  for (size_t i = 0; i < summary_.warnings.size(); ++i) {
    NcclWarning& w = summary_.warnings[i];
    if (w.text == text) {
      ++w.count;
      if (rank != kNoRank) WarnOnProcess(rank, i, source);
      return;
    }
  }
  if (summary_.warnings.size() >= kNcclMaxWarnings) {
    ++summary_.dropped;
    return;
  }
  if (rank != kNoRank) WarnOnProcess(rank, summary_.warnings.size(), source);
  NcclWarning w;
  w.text = std::string(text);
  if (rank != kNoRank) {
    w.first_seen_by = ProcessOf(rank).Name();
    w.first_seen_dev = summary_.ranks[rank].cuda_dev;
  }
  w.first_line = line_no_;
  w.count = 1;
  summary_.warnings.push_back(std::move(w));
}

NcclLogSummary ParseNcclLog(std::string_view text) {
  NcclLogParser parser;
  parser.Feed(text);
  return parser.Finish();
}

Result<NcclLogSummary> ReadNcclLog(int fd, std::string_view name,
                                   const std::function<void(std::string_view)>& also) {
  NcclLogParser parser;
  uint64_t offset = 0;
  Status status = ReadFileBlocks(fd, name, [&](std::string_view chunk) {
    // A binary file (a core dump, a checkpoint, a compressed log) given by
    // mistake: refused before a summary of nonsense is printed.
    if (offset < kNcclTextCheckBytes) {
      size_t check = std::min<uint64_t>(chunk.size(), kNcclTextCheckBytes - offset);
      if (const void* nul = memchr(chunk.data(), '\0', check)) {
        uint64_t at = offset + static_cast<uint64_t>(static_cast<const char*>(nul) - chunk.data());
        return Status::InvalidArgument(
            std::string(name) + ": not a text log: a NUL byte at offset " + std::to_string(at) +
            " (is it compressed or binary? an NCCL log is text)");
      }
    }
    offset += chunk.size();
    parser.Feed(chunk);
    if (also) also(chunk);
    return Status::Ok();
  });
  if (!status.ok()) return status;
  return parser.Finish();
}

void NcclLineMarks::Feed(std::string_view chunk) {
  if (socket_line_ != 0) return;  // all that is wanted is known
  uint64_t socket = 0;
  // A needle cut by the chunk boundary starts in the carry (which holds no
  // newline), so it is on the current line.
  if (!carry_.empty()) {
    std::string seam = carry_;
    seam.append(chunk.substr(0, std::min(chunk.size(), kCarry)));
    const size_t socket_at = Find(seam, kSocketNeedle), ib_at = Find(seam, kIbNeedle);
    if (socket_at < carry_.size()) socket = line_;
    if (ib_line_ == 0 && ib_at < carry_.size() && ib_at < socket_at) ib_line_ = line_;
  }
  const bool socket_in_seam = socket != 0;
  size_t ib_at = std::string_view::npos;  // where this chunk's first NET/IB line is
  if (ib_line_ == 0) {
    if (size_t at = Find(chunk, kIbNeedle); at != std::string_view::npos) {
      ib_line_ = line_ + Newlines(chunk.substr(0, at));
      ib_at = at;
    }
  }
  if (socket == 0) {
    if (size_t at = Find(chunk, kSocketNeedle); at != std::string_view::npos) {
      socket = line_ + Newlines(chunk.substr(0, at));
      // Only what comes before the socket line's needle counts, also on its
      // own line (fed whole or in pieces, the same answer).
      if (ib_at != std::string_view::npos && ib_at > at) ib_line_ = 0;
    }
  }
  // A NET/IB needle of this chunk comes after a socket needle of the seam.
  if (socket_in_seam && ib_at != std::string_view::npos) ib_line_ = 0;
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

}  // namespace stallscope

// The decorations around an NCCL log line: timestamps, launcher tags, colour
// codes and borders (see line.h for the forms).
#include "formats/nccl_log/line.h"

#include <algorithm>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace stallscope {
namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// The first c in s[from, limit) (limit cut at s's end), npos if none. The
// spans searched here are a few bytes, shorter than a library call's setup:
// sixteen bytes at a time where s has them (SSE2), else a plain loop.
size_t FindNear(std::string_view s, char c, size_t from, size_t limit) {
  limit = std::min(limit, s.size());
#if defined(__SSE2__)
  const __m128i needle = _mm_set1_epi8(c);
  for (; from < limit && from + 16 <= s.size(); from += 16) {
    const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s.data() + from));
    if (unsigned hits = static_cast<unsigned>(_mm_movemask_epi8(_mm_cmpeq_epi8(bytes, needle)))) {
      const size_t at = from + static_cast<size_t>(__builtin_ctz(hits));
      return at < limit ? at : std::string_view::npos;
    }
  }
#endif
  for (size_t i = from; i < limit; ++i) {
    if (s[i] == c) return i;
  }
  return std::string_view::npos;
}

// n decimal digits at s[i..i+n).
bool DigitsAt(std::string_view s, size_t i, size_t n) {
  if (i + n > s.size()) return false;
  for (size_t k = i; k < i + n; ++k) {
    if (!IsDigit(s[k])) return false;
  }
  return true;
}

// "HH:MM[:SS][.frac]" at s[i]; the offset after it, or 0.
size_t TimeAt(std::string_view s, size_t i) {
  if (!DigitsAt(s, i, 2) || i + 5 > s.size() || s[i + 2] != ':' || !DigitsAt(s, i + 3, 2)) {
    return 0;
  }
  size_t j = i + 5;
  if (j < s.size() && s[j] == ':' && DigitsAt(s, j + 1, 2)) j += 3;
  if (j + 1 < s.size() && (s[j] == '.' || s[j] == ',') && IsDigit(s[j + 1])) {
    ++j;
    while (j < s.size() && IsDigit(s[j])) ++j;
  }
  return j;
}

// A zone after a time at s[i]: "Z", "+00:00", "-0500", " UTC".
size_t ZoneAt(std::string_view s, size_t i) {
  if (i < s.size() && s[i] == 'Z') return i + 1;
  if (i < s.size() && (s[i] == '+' || s[i] == '-') && DigitsAt(s, i + 1, 2)) {
    size_t j = i + 3;
    if (j < s.size() && s[j] == ':' && DigitsAt(s, j + 1, 2)) return j + 3;
    if (DigitsAt(s, j, 2)) return j + 2;
    return j;
  }
  std::string_view rest = s.substr(std::min(i, s.size()));
  if (rest.substr(0, 4) == " UTC" || rest.substr(0, 4) == " GMT") return i + 4;
  return i;
}

bool IsOneOf(std::string_view word, const char* const* list, size_t count) {
  for (size_t k = 0; k < count; ++k) {
    if (word == list[k]) return true;
  }
  return false;
}

// Three letters at s[i] as one number, for the day and month names (this
// runs on the head of every line: no string compares).
constexpr uint32_t Three(const char* t) {
  return static_cast<uint32_t>(static_cast<unsigned char>(t[0])) << 16 |
         static_cast<uint32_t>(static_cast<unsigned char>(t[1])) << 8 |
         static_cast<uint32_t>(static_cast<unsigned char>(t[2]));
}

bool IsWeekday(std::string_view s, size_t i) {
  if (i + 3 > s.size() || s[i] < 'F' || s[i] > 'W') return false;
  switch (Three(s.data() + i)) {
    case Three("Mon"):
    case Three("Tue"):
    case Three("Wed"):
    case Three("Thu"):
    case Three("Fri"):
    case Three("Sat"):
    case Three("Sun"):
      return true;
    default:
      return false;
  }
}

bool IsMonth(std::string_view s, size_t i) {
  if (i + 3 > s.size() || s[i] < 'A' || s[i] > 'S') return false;
  switch (Three(s.data() + i)) {
    case Three("Jan"):
    case Three("Feb"):
    case Three("Mar"):
    case Three("Apr"):
    case Three("May"):
    case Three("Jun"):
    case Three("Jul"):
    case Three("Aug"):
    case Three("Sep"):
    case Three("Oct"):
    case Three("Nov"):
    case Three("Dec"):
      return true;
    default:
      return false;
  }
}

size_t UnbracketedTimestamp(std::string_view s) {
  if (s.empty() || !(IsDigit(s[0]) || (s[0] >= 'A' && s[0] <= 'Z'))) return 0;
  // ISO 8601 and its relatives: "2024-03-04T05:06:07.123+00:00", "2024/03/04 05:06:07".
  if (DigitsAt(s, 0, 4) && s.size() >= 10 && (s[4] == '-' || s[4] == '/') && DigitsAt(s, 5, 2) &&
      s[7] == s[4] && DigitsAt(s, 8, 2)) {
    size_t i = 10;
    if (i < s.size() && (s[i] == 'T' || s[i] == ' ' || s[i] == '_')) {
      if (size_t end = TimeAt(s, i + 1)) return ZoneAt(s, end);
    }
    return i;
  }
  // ctime "Mon Jan  1 01:02:03 2024" and syslog "Jan  1 01:02:03".
  size_t i = 0;
  if (s.size() >= 4 && IsWeekday(s, 0)) {
    i = 3;
    if (i < s.size() && s[i] == ',') ++i;
    if (i >= s.size() || s[i] != ' ') return 0;
    ++i;
  }
  if (s.size() >= i + 4 && IsMonth(s, i) && s[i + 3] == ' ') {
    size_t j = i + 4;
    while (j < s.size() && s[j] == ' ') ++j;
    size_t day = j;
    while (j < s.size() && IsDigit(s[j]) && j - day < 2) ++j;
    if (j == day || j >= s.size() || s[j] != ' ') return 0;
    size_t end = TimeAt(s, j + 1);
    if (end == 0) return 0;
    if (end + 5 <= s.size() && s[end] == ' ' && DigitsAt(s, end + 1, 4)) end += 5;
    return end;
  }
  if (i > 0) return 0;
  // A bare time: "05:06:07", "05:06:07.123".
  if (size_t end = TimeAt(s, 0)) return ZoneAt(s, end);
  return 0;
}

// An escape sequence at s[0] == ESC: CSI "ESC [ params final", OSC "ESC ] ... BEL".
size_t EscapeLength(std::string_view s) {
  if (s.size() < 2) return s.size();
  if (s[1] == '[') {
    size_t i = 2;
    while (i < s.size() && static_cast<unsigned char>(s[i]) >= 0x20 &&
           static_cast<unsigned char>(s[i]) < 0x40) {
      ++i;
    }
    return i < s.size() ? i + 1 : i;
  }
  if (s[1] == ']') {
    size_t i = 2;
    while (i < s.size() && s[i] != '\x07' && s[i] != '\x1b') ++i;
    if (i < s.size() && s[i] == '\x1b') ++i;
    return i < s.size() ? i + 1 : i;
  }
  return 2;
}

// Colour residue "[0m", "[1;31m" (an escape whose ESC byte was lost).
size_t ResidueLength(std::string_view s) {
  if (s.size() < 3 || s[0] != '[' || !IsDigit(s[1])) return 0;
  for (size_t i = 2; i < s.size() && i < 12; ++i) {
    if (s[i] == 'm') return i + 1;
    if (!IsDigit(s[i]) && s[i] != ';') return 0;
  }
  return 0;
}

bool IsBox(std::string_view s, size_t i) {
  return i + 3 <= s.size() && static_cast<unsigned char>(s[i]) == 0xE2 &&
         (static_cast<unsigned char>(s[i + 1]) == 0x94 ||
          static_cast<unsigned char>(s[i + 1]) == 0x95);
}

// Eight bytes at a time: this runs on the tags of every line.
uint64_t Mix(uint64_t key, std::string_view text) {
  uint64_t h = key ^ 0xcbf29ce484222325ull ^ text.size();
  size_t i = 0;
  for (; i + 8 <= text.size(); i += 8) {
    uint64_t w;
    __builtin_memcpy(&w, text.data() + i, 8);
    h = (h ^ w) * 0x100000001b3ull;
    h ^= h >> 29;
  }
  if (i < text.size()) {
    // The last bytes as one word: the last eight (overlapping the words
    // before), or the few there are.
    uint64_t w = 0;
    if (text.size() >= 8) {
      __builtin_memcpy(&w, text.data() + text.size() - 8, 8);
    } else {
      for (size_t k = 0; k < text.size(); ++k) {
        w |= static_cast<uint64_t>(static_cast<unsigned char>(text[k])) << (8 * k);
      }
    }
    h = (h ^ w) * 0x100000001b3ull;
    h ^= h >> 29;
  }
  h ^= h >> 32;
  return h | 1;  // never 0, which means "no tag"
}

// Words a "word: " at a line's start is when it is not pdsh's host.
bool IsNotAHost(std::string_view word) {
  bool upper = true;
  for (char c : word) upper = upper && ((c >= 'A' && c <= 'Z') || c == '_');
  if (upper) return true;  // INFO:, WARNING:, NCCL_DEBUG:
  auto ends = [&](std::string_view end) {
    return word.size() >= end.size() && word.substr(word.size() - end.size()) == end;
  };
  static constexpr const char* kWords[] = {"Traceback", "File",   "Note", "Warning", "Error",
                                           "Exception", "torch",  "self", "raise",   "Info",
                                           "Debug",     "Caused", "note", "warning", "error"};
  return ends("Error") || ends("Exception") || ends("Warning") ||
         IsOneOf(word, kWords, std::size(kWords));
}

// A launcher's tag at s[0]: its length with the space after it, or 0.
size_t TagLength(std::string_view s, LineHead* head, uint64_t* key) {
  size_t len = 0;
  std::string_view host;
  int64_t pid = 0;
  if (s[0] == '[') {
    size_t close = FindNear(s, ']', 0, 65);
    if (close == std::string_view::npos || close < 2) return 0;
    std::string_view inside = s.substr(1, close - 1);
    if (FindNear(s, ' ', 1, close) != std::string_view::npos) return 0;
    size_t after = close + 1;
    // Open MPI 5's tag-detailed "[1,0][nodeA:2001]<stderr>: ".
    if (after < s.size() && s[after] == '[') {
      size_t second = s.find(']', after);
      if (second != std::string_view::npos && second - after < 80 && second + 1 < s.size() &&
          s[second + 1] == '<') {
        after = second + 1;
      }
    }
    // "[1,5]<stdout>:" (Open MPI), "[0]<stdout>:" (Horovod).
    if (after < s.size() && s[after] == '<') {
      size_t gt = FindNear(s, '>', after, after + 11);
      if (gt == std::string_view::npos) return 0;
      after = gt + 1;
    }
    if (after < s.size() && s[after] == ':') {
      len = after + 1;  // also "[rank3]:", "[default3]:"
    } else if (after < s.size() && s[after] == ' ' &&
               (DigitsAt(inside, 0, inside.size()) ||
                FindNear(s, '/', 1, close) != std::string_view::npos ||
                inside.substr(0, 4) == "rank")) {
      len = after;  // "[3] " (MPICH -l), "[pod/job-0/main] " (kubectl --prefix)
    } else {
      return 0;
    }
  } else if (s[0] == '<') {  // "<stdout>:" after an Open MPI timestamp
    size_t gt = FindNear(s, '>', 0, 11);
    if (gt == std::string_view::npos || gt + 1 >= s.size() || s[gt + 1] != ':') return 0;
    len = gt + 2;
  } else if (s[0] == '(') {
    size_t close = FindNear(s, ')', 0, 97);
    if (close == std::string_view::npos) return 0;
    std::string_view inside = s.substr(1, close - 1);
    size_t at = inside.find("pid=");
    if (at == std::string_view::npos || (at > 0 && inside[at - 1] != ' ')) return 0;
    size_t end = at + 4;
    while (end < inside.size() && IsDigit(inside[end])) {
      pid = pid * 10 + (inside[end] - '0');
      if (pid > (int64_t{1} << 40)) return 0;
      ++end;
    }
    if (end == at + 4) return 0;
    if (size_t ip = inside.find("ip="); ip != std::string_view::npos) {
      size_t e = ip + 3;
      while (e < inside.size() && IsHostChar(inside[e])) ++e;
      host = inside.substr(ip + 3, e - ip - 3);
    }
    len = close + 1;
  } else if (IsHostChar(s[0])) {
    size_t i = 0;
    while (i < s.size() && IsDigit(s[i]) && i < 7) ++i;
    if (i > 0 && i < s.size() && s[i] == ':' && (i + 1 == s.size() || s[i + 1] == ' ')) {
      len = i + 1;  // SLURM --label "3: "
    } else {        // pdsh "nodeA: ", "10.1.2.3: "
      size_t j = 0;
      while (j < s.size() && IsHostChar(s[j]) && j < 64) ++j;
      if (j + 1 >= s.size() || s[j] != ':' || s[j + 1] != ' ') return 0;
      if (IsNotAHost(s.substr(0, j))) return 0;
      host = s.substr(0, j);
      len = j + 1;
    }
  } else {
    return 0;
  }
  std::string_view tag = s.substr(0, len);
  if (head->tag.empty()) head->tag = tag;
  if (head->host.empty()) head->host = host;
  if (head->pid == 0) head->pid = pid;
  *key = Mix(*key, tag);
  if (head->outer_key == 0) head->outer_key = *key;
  if (len < s.size() && s[len] == ' ') ++len;
  return len;
}

}  // namespace

size_t TimestampLength(std::string_view s) {
  if (s.empty()) return 0;
  if (s[0] == '[') {
    // Inside, a timestamp opens with a digit, a space (dmesg) or a day's
    // or month's name.
    if (s.size() < 3 || !(IsDigit(s[1]) || s[1] == ' ' || (s[1] >= 'A' && s[1] <= 'Z'))) return 0;
    // Digits inside go on with a date's, a time's or a fraction's mark: a
    // tag such as Open MPI's "[1,5]" is let go before any search.
    if (IsDigit(s[1])) {
      size_t d = 2;
      while (d < s.size() && IsDigit(s[d])) ++d;
      if (d >= s.size() || !(s[d] == '-' || s[d] == '/' || s[d] == ':' || s[d] == '.')) return 0;
    }
    size_t close = FindNear(s, ']', 0, 49);
    if (close == std::string_view::npos) return 0;
    std::string_view inside = s.substr(1, close - 1);
    while (!inside.empty() && inside[0] == ' ') inside.remove_prefix(1);
    if (inside.empty()) return 0;
    size_t t = UnbracketedTimestamp(inside);
    if (t > 0 && t == inside.size()) return close + 1;
    // dmesg's "[  123.456789]" and epoch seconds "[1700000000.123]".
    size_t i = 0;
    while (i < inside.size() && IsDigit(inside[i])) ++i;
    if (i > 0 && i + 1 < inside.size() && inside[i] == '.' &&
        DigitsAt(inside, i + 1, inside.size() - i - 1)) {
      return close + 1;
    }
    return 0;
  }
  return UnbracketedTimestamp(s);
}

LineHead ReadLineHead(std::string_view line) {
  LineHead head;
  uint64_t key = 0;
  size_t i = 0;
  const size_t n = line.size();
  for (int round = 0; round < 16 && i < n; ++round) {
    size_t start = i;
    while (i < n && (line[i] == ' ' || line[i] == '\t')) ++i;
    if (i >= n) break;
    std::string_view rest = line.substr(i);
    // Dispatched on the first byte: this runs on the head of every line.
    const unsigned char c = static_cast<unsigned char>(line[i]);
    const bool may_be_time = c == '[' || IsDigit(line[i]) || (c >= 'A' && c <= 'Z');
    if (c == 0xE2) {
      if (IsBox(line, i)) i += 3;
    } else if (c == '|') {
      if (i + 1 == n || line[i + 1] == ' ') i += 1;
    } else if (c == 0x1b) {
      i += EscapeLength(rest);
    } else if (size_t r = c == '[' ? ResidueLength(rest) : 0) {
      i += r;
    } else if (size_t t = may_be_time ? TimestampLength(rest) : 0) {
      i += t;
      head.timestamp = true;
      // A container runtime's log file: "<time> stdout F <line>" ("P": partial).
      std::string_view next = line.substr(i);
      if (next.size() >= 10 && next[0] == ' ' &&
          (next.substr(1, 7) == "stdout " || next.substr(1, 7) == "stderr ") &&
          (next[8] == 'F' || next[8] == 'P') && next[9] == ' ') {
        i += 10;
      }
    } else if (size_t g = c == '[' || c == '(' || c == '<' || IsHostChar(line[i])
                              ? TagLength(rest, &head, &key)
                              : 0) {
      i += g;
    }
    if (i == start) break;
  }
  head.content = i;
  head.tag_key = key;
  return head;
}

std::string_view NcclHostOf(std::string_view glued) {
  std::string_view rest = glued.substr(std::min(glued.size(), ReadLineHead(glued).content));
  size_t i = rest.size();
  while (i > 0 && IsHostChar(rest[i - 1])) --i;
  return rest.substr(i);
}

std::string_view StripLineTail(std::string_view line, uint64_t* folded) {
  for (int round = 0; round < 8 && !line.empty(); ++round) {
    size_t before = line.size();
    while (!line.empty() && (line.back() == ' ' || line.back() == '\r' || line.back() == '\t')) {
      line.remove_suffix(1);
    }
    if (line.empty()) break;
    char last = line.back();
    if (last == ']') {
      constexpr std::string_view kEnd = "x across cluster]";
      constexpr std::string_view kStart = " [repeated ";
      if (line.size() > kEnd.size() + kStart.size() &&
          line.substr(line.size() - kEnd.size()) == kEnd) {
        size_t open = line.rfind(kStart);
        if (open != std::string_view::npos) {
          std::string_view count =
              line.substr(open + kStart.size(), line.size() - kEnd.size() - open - kStart.size());
          if (!count.empty() && count.size() < 10 && DigitsAt(count, 0, count.size())) {
            uint64_t v = 0;
            for (char c : count) v = v * 10 + static_cast<uint64_t>(c - '0');
            if (folded) *folded += v;
            line = line.substr(0, open);
          }
        }
      }
    } else if (last == 'm') {
      size_t open = line.rfind('[');
      if (open != std::string_view::npos && line.size() - open <= 12 &&
          ResidueLength(line.substr(open)) == line.size() - open) {
        line = line.substr(0, open);
        if (!line.empty() && line.back() == '\x1b') line.remove_suffix(1);
      }
    } else if (line.size() >= 3 && IsBox(line, line.size() - 3)) {
      line.remove_suffix(3);
    } else if (last == '|' && line.size() >= 2 && line[line.size() - 2] == ' ') {
      line.remove_suffix(1);
    }
    if (line.size() == before) break;
  }
  return line;
}

std::string WithoutEscapes(std::string_view line) {
  std::string out;
  out.reserve(line.size());
  for (size_t i = 0; i < line.size();) {
    if (line[i] == '\x1b') {
      i += EscapeLength(line.substr(i));
      continue;
    }
    out.push_back(line[i++]);
  }
  return out;
}

std::string ValidUtf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  auto cont = [&](size_t i) {
    return i < s.size() && (static_cast<unsigned char>(s[i]) & 0xC0) == 0x80;
  };
  for (size_t i = 0; i < s.size();) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    size_t len = 0;
    if (c < 0x80) {
      len = 1;
    } else if (c >= 0xC2 && c <= 0xDF && cont(i + 1)) {
      len = 2;
    } else if (c >= 0xE0 && c <= 0xEF && cont(i + 1) && cont(i + 2)) {
      unsigned char c1 = static_cast<unsigned char>(s[i + 1]);
      bool ok = !(c == 0xE0 && c1 < 0xA0) && !(c == 0xED && c1 >= 0xA0);
      len = ok ? 3 : 0;
    } else if (c >= 0xF0 && c <= 0xF4 && cont(i + 1) && cont(i + 2) && cont(i + 3)) {
      unsigned char c1 = static_cast<unsigned char>(s[i + 1]);
      bool ok = !(c == 0xF0 && c1 < 0x90) && !(c == 0xF4 && c1 >= 0x90);
      len = ok ? 4 : 0;
    }
    if (len == 0) {
      out += "\xEF\xBF\xBD";
      ++i;
    } else {
      out.append(s.data() + i, len);
      i += len;
    }
  }
  return out;
}

}  // namespace stallscope

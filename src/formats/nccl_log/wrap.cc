// Every line of the log, before it is dispatched: a progress bar's carriage
// returns split, and the lines a terminal wrapped joined back (see
// formats/nccl_log/nccl_log.h).
//
// A log copied out of a terminal or a log console that wraps at a fixed
// width (80, 100, 120, 132, 160 or 200 columns) has its long lines cut into
// rows of exactly that width and a last, shorter one; a line longer than
// twice the width into three rows or more. The rest of a line has no prefix,
// no decoration and no NCCL marker of its own. A row is joined to the NCCL
// line above it once the width is known to be the terminal's: another line
// of that width came first, or the row is itself that wide. The first NCCL
// line of a width, with nothing to tell yet, is a candidate: it and the
// lines after it wait (at most kWrapLookahead of them, copied) until a line
// of that width tells that the terminal wraps there, or a longer line, the
// end of the log, or the wait's end that it does not; then they are read in
// their order, so a log that is not wrapped reads as if nothing waited.
// When nothing told (a log holding a single wrapped line), the candidate is
// still joined to the row right below it if the cut itself shows the line
// went on: the candidate ends where no NCCL message ends (after ':', ',',
// ';', '=', '/', or with a '[', '(' or '<' left open), or the row opens with
// the one space the cut fell on. A line of that width that ends whole, then
// a program's own output ("Epoch 1"), is left as it is.
#include <algorithm>
#include <cstring>
#include <string>

#include "formats/nccl_log/line.h"
#include "formats/nccl_log/nccl_log.h"

namespace stallscope {
namespace {

// The kind of a launcher's tag by its first byte: bracketed ('[', '(',
// '<') or a word ("nodeA:", "3:"); 0 for none.
char TagKind(std::string_view tag) {
  if (tag.empty()) return 0;
  return tag[0] == '[' || tag[0] == '(' || tag[0] == '<' ? tag[0] : 'w';
}

// The widths terminals and log viewers wrap lines at.
bool IsTerminalWidth(size_t n) {
  return n == 80 || n == 100 || n == 120 || n == 132 || n == 160 || n == 200;
}

// Lines read ahead of a candidate wrap before it is let go as it is.
constexpr size_t kWrapLookahead = 32;

// Whether `candidate`, a line a terminal's width long, was cut inside its
// message with `row` its rest: it ends where no message ends, or leaves a
// bracket open, or `row` opens with the single space the cut fell on.
bool CutInsideMessage(std::string_view candidate, std::string_view row) {
  if (candidate.empty() || row.empty()) return false;
  if (row.size() >= 2 && row[0] == ' ' && row[1] != ' ') return true;
  if (strchr(":,;=/", candidate.back()) != nullptr) return true;
  int square = 0, round = 0, angle = 0;
  for (char c : candidate) {
    square += c == '[' ? 1 : c == ']' ? -1 : 0;
    round += c == '(' ? 1 : c == ')' ? -1 : 0;
    angle += c == '<' ? 1 : c == '>' ? -1 : 0;
  }
  return square > 0 || round > 0 || angle > 0;
}

}  // namespace

bool NcclLogParser::RestOfWrappedLine(std::string_view line, bool marker, size_t width,
                                      std::string_view held) {
  // The cut may fall on a space (between words, inside a ring's layout):
  // the row then opens with it.
  size_t text = 0;
  while (text < line.size() && line[text] == ' ') ++text;
  if (text == line.size() || line[text] == '\t' || line.size() > width || marker) return false;
  // What follows is no launcher's decoration: a timestamp, a bracketed tag,
  // a tag of the held line's kind. A "word: " in a row is the wrapped
  // line's text ("file: No such file") unless the log's lines carry such tags.
  LineHead head = ReadLineHead(line.substr(text));
  if (head.content == 0) return true;
  const char kind = TagKind(head.tag);
  return !head.timestamp && kind == 'w' && TagKind(ReadLineHead(held).tag) != 'w';
}

void NcclLogParser::AnyLine(const ScannedLine& scanned) {
  std::string_view line = scanned.text;
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  // A progress bar's carriage returns put several lines on one (looked for
  // only in lines the scanner did not find plain).
  if (!scanned.plain && memchr(line.data(), '\r', line.size())) {
    for (size_t from = 0; from <= line.size();) {
      size_t at = line.find('\r', from);
      if (at == std::string_view::npos) at = line.size();
      AnyLine(Unscanned(line.substr(from, at - from)));  // the part holds none
      from = at + 1;
    }
    return;
  }
  if (!wrap_candidate_.empty()) {
    WaitWithCandidate(line, scanned.nccl != std::string_view::npos);
    return;
  }
  if (!wrapped_.empty()) {
    // A terminal's wrap leaves the rest of the line on the next with no
    // prefix, no decoration and no NCCL marker of its own.
    std::string held = std::move(wrapped_);
    wrapped_.clear();
    const uint64_t now = line_no_;
    line_no_ = wrapped_line_no_;
    if (RestOfWrappedLine(line, scanned.nccl != std::string_view::npos, last_width_, held)) {
      held.append(line);
      ++summary_.joined_lines;
      longest_line_ = std::max(longest_line_, line.size());
      // A row as wide as the terminal: the line may go on below it.
      if (line.size() == last_width_ && held.size() < kNcclMaxLineBytes) {
        wrapped_ = std::move(held);
        line_no_ = now;
        return;
      }
      Dispatch(Unscanned(held));
      line_no_ = now;
      return;
    }
    Dispatch(Unscanned(held));
    line_no_ = now;
  }
  // Held only when no line so far was longer: a log that has one is not
  // wrapped at that width.
  const bool width = IsTerminalWidth(line.size()) && line.size() >= longest_line_;
  // ... and only after another line of exactly that width: a terminal that
  // wraps cuts many lines there, a log that is not wrapped rarely has two.
  const bool known_width = line.size() == last_width_ && width_lines_ >= 1;
  if (IsTerminalWidth(line.size())) {
    width_lines_ = line.size() == last_width_ ? width_lines_ + 1 : 1;
    last_width_ = line.size();
  }
  longest_line_ = std::max(longest_line_, line.size());
  if (width && scanned.nccl != std::string_view::npos) {
    if (known_width) {
      wrapped_.assign(line.data(), line.size());
      wrapped_line_no_ = line_no_;
    } else {
      // The first of its width: the lines after it tell.
      wrap_candidate_.assign(line.data(), line.size());
      wrap_candidate_line_ = line_no_;
    }
    return;
  }
  if (line.size() == scanned.text.size()) {
    Dispatch(scanned);
  } else {
    ScannedLine without_cr = scanned;
    without_cr.text = line;
    Dispatch(without_cr);
  }
}

void NcclLogParser::WaitWithCandidate(std::string_view line, bool marker) {
  const size_t width = wrap_candidate_.size();
  if (waiting_.empty()) {
    // The row right below: the rest of the candidate, or the candidate is a
    // line as it is.
    if (!RestOfWrappedLine(line, marker, width, wrap_candidate_)) {
      ReleaseWrapCandidate(false);
      AnyLine(Unscanned(line));
      return;
    }
    waiting_.emplace_back(line_no_, std::string(line));
    if (line.size() == width) ReleaseWrapCandidate(true);  // two rows that wide: wrapped
    return;
  }
  if (line.size() > width) {  // a longer line: the log is not wrapped at this width
    waiting_.emplace_back(line_no_, std::string(line));
    ReleaseWrapCandidate(false);
    return;
  }
  waiting_.emplace_back(line_no_, std::string(line));
  if (line.size() == width) {
    ReleaseWrapCandidate(true);
  } else if (waiting_.size() >= kWrapLookahead) {
    ReleaseWrapCandidate(false, true);
  }
}

void NcclLogParser::ReleaseWrapCandidate(bool wrapped, bool undecided) {
  if (wrap_candidate_.empty()) return;
  if (!wrapped && undecided && !waiting_.empty()) {
    wrapped = CutInsideMessage(wrap_candidate_, waiting_[0].second);
  }
  const uint64_t now = line_no_;
  std::string candidate = std::move(wrap_candidate_);
  wrap_candidate_.clear();
  std::vector<std::pair<uint64_t, std::string>> after = std::move(waiting_);
  waiting_.clear();
  size_t next = 0;
  line_no_ = wrap_candidate_line_;
  if (wrapped && !after.empty()) {
    // The terminal wraps at this width: the candidate and its rest are one
    // line, held while its rows are that wide (more may follow).
    const std::string& rest = after[0].second;
    candidate += rest;
    ++summary_.joined_lines;
    longest_line_ = std::max(longest_line_, rest.size());
    next = 1;
    if (rest.size() == last_width_) {
      wrapped_ = std::move(candidate);
      wrapped_line_no_ = wrap_candidate_line_;
      candidate.clear();
    }
    if (IsTerminalWidth(rest.size()) && rest.size() == last_width_) ++width_lines_;
  }
  if (!candidate.empty()) Dispatch(Unscanned(candidate));
  for (; next < after.size(); ++next) {
    line_no_ = after[next].first;
    AnyLine(Unscanned(after[next].second));
  }
  line_no_ = now;
}

}  // namespace stallscope

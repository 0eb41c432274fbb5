// The lines of a buffer, found in one vector pass that also notes, for each
// line, where its first "NCCL" is and whether it holds a byte that needs a
// closer look (a carriage return, an escape code, a console's '|'). The NCCL
// log parser (formats/nccl_log/nccl_log.h) reads every line of a 1 GB log; before this
// it searched each line four times (its end, the marker, escapes, '|'), and
// the library calls on short lines cost a fifth of its time.
//
// Thirty-two bytes at a time (AVX2, where the processor has it; SSE2's
// sixteen on other x86-64 processors; a portable loop elsewhere) give three
// 64-bit masks per 64-byte block: newlines, 'N's (each checked for "NCCL")
// and the bytes to look closer at. Lines are then read off the masks with
// bit arithmetic, a batch at a time, so the vector code runs in a loop of
// its own. The scanner reads nothing outside its text (the last block is
// copied into a zeroed buffer). It holds a view of the text, which must
// outlive it; single-threaded.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace stallscope {

// One line and what the scanner saw in it.
struct ScannedLine {
  std::string_view text;                 // without its '\n'
  size_t nccl = std::string_view::npos;  // offset of the first "NCCL" in text
  bool plain = false;                    // no '\r', '\x1b' or '|' in text
};

// The lines of a text, a batch at a time.
class LineScanner {
 public:
  explicit LineScanner(std::string_view text) : text_(text) {}
  // Up to `max` next lines into `out` (max >= 1); 0 when the text is read.
  // A last line with no '\n' after it is a line too.
  size_t Next(ScannedLine* out, size_t max);

  // Where the scan is (for the implementation in scan.cc).
  struct Position {
    size_t base = 0;                           // the first byte of the block the masks are of
    size_t pos = 0;                            // the next line's first byte, in [base, base + 64)
    uint64_t newlines = 0, n = 0, closer = 0;  // the block's masks
    bool loaded = false;
  };

 private:
  std::string_view text_;
  Position at_;
};

}  // namespace stallscope

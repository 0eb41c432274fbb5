// The JSON text of a profiler trace file, as the trace reader parses it: whole
// in one buffer when it fits, else streamed in blocks.
//
// Whole: a .gz whose trailer (ISIZE) says the inflated text fits the limit is
// inflated at once by libdeflate (about three times zlib's speed); a plain
// file is read at once. The limit is a quarter of MemAvailable, under 4 GiB,
// shared by every file held at once (the reader reads several on threads),
// so the tool never takes a large share of the memory of the job it watches.
// Anything libdeflate declines (several gzip members, a wrong ISIZE, a cut or
// corrupt file) is streamed instead, and the streamed path gives the error.
//
// Streamed: blocks of 1 MiB, inflated by zlib (several members allowed) on a
// thread of its own, a few blocks ahead of the parser; errors name the file
// and the byte offset of the compressed file.
//
// Thread-compatible: one object, one file; the limit's accounting is atomic.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "core/status.h"

namespace stallscope {

// Where the bytes of a file come from: a descriptor or memory. Read returns
// 0 at the end.
class ByteSource {
 public:
  virtual ~ByteSource() = default;
  virtual Result<size_t> Read(char* out, size_t n) = 0;
};

// A file's bytes through its descriptor (which the caller owns).
class FdSource : public ByteSource {
 public:
  FdSource(int fd, std::string_view name) : fd_(fd), name_(name) {}
  Result<size_t> Read(char* out, size_t n) override;

 private:
  int fd_;
  std::string name_;
};

// Bytes in memory (which the caller owns).
class MemorySource : public ByteSource {
 public:
  explicit MemorySource(std::string_view bytes) : bytes_(bytes) {}
  Result<size_t> Read(char* out, size_t n) override;

 private:
  std::string_view bytes_;
};

// The text in blocks one after another, each valid until the next call; an
// empty block is the end (and stays the end).
class TextBlocks {
 public:
  virtual ~TextBlocks() = default;
  virtual Result<std::string_view> Next() = 0;
  virtual bool gzip() const { return false; }  // inflated from a .gz
};

// The streamed text of `raw` (gzip'd or not: its first bytes say), read on
// the caller's thread for plain text, inflated on a thread of its own for
// gzip. `name` names the file in errors. `raw` must outlive the result.
Result<std::unique_ptr<TextBlocks>> StreamText(ByteSource& raw, std::string_view name);

// Memory for a whole text, mapped on its own; up to 256 MiB on huge pages
// where the kernel gives them (a 50 MB text then costs a few dozen page
// faults, not twelve thousand).
struct UnmapText {
  size_t bytes = 0;
  void operator()(char* p) const;
};
using TextMemory = std::unique_ptr<char[], UnmapText>;

// A whole text in one buffer that ends in '\0' (the parser unescapes strings
// in place, so it is writable). Its bytes count against the shared limit
// until it is destroyed.
class WholeText {
 public:
  WholeText(TextMemory text, size_t size, uint64_t held);
  ~WholeText();
  WholeText(WholeText&& other) noexcept;
  WholeText& operator=(WholeText&&) = delete;
  WholeText(const WholeText&) = delete;

  char* data() { return text_.get(); }  // size() bytes, then '\0'
  size_t size() const { return size_; }
  bool gzip = false;  // inflated from a .gz

 private:
  TextMemory text_;
  size_t size_ = 0;
  uint64_t held_ = 0;  // bytes taken from the shared limit
};

// The most bytes held whole at once by default: a quarter of MemAvailable,
// under 4 GiB (0 when /proc/meminfo cannot be read: everything streams).
uint64_t DefaultWholeTextLimitBytes();

// The whole text of the file at `fd` (read from its start), or nullopt when
// it must be streamed: too big for `limit_bytes` (less what other files hold
// now), or a .gz that libdeflate does not inflate to exactly its ISIZE in one
// member. An error only where reading the file fails.
Result<std::optional<WholeText>> ReadWholeText(int fd, const std::string& name,
                                               uint64_t limit_bytes);

// The same over bytes in memory (always copied: the parser writes into it).
std::optional<WholeText> WholeTextOf(std::string_view bytes, uint64_t limit_bytes);

}  // namespace stallscope

// Reading the tar members of a WebDataset shard: POSIX ustar headers plus the
// pax extended headers ('x', for long names or sizes) libarchive writes.
// ParseTarMembers is pure (and fuzzed); TarFile reads a byte range of a shard
// named by its index. Only what the packer writes is accepted: regular files
// ('0'), pax headers ('x', 'g'); links, devices and GNU extensions are errors.
// A TarFile is not thread-safe; open one per thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace stallscope {

inline constexpr size_t kTarBlock = 512;

struct TarMember {
  std::string name;
  uint64_t header_offset = 0;  // of its first header (a pax header when it has one)
  uint64_t data_offset = 0;
  uint64_t size = 0;
  std::string_view data;  // into the buffer parsed
};

struct TarRun {
  std::vector<TarMember> members;
  bool end_of_archive = false;  // stopped at the zero block that ends the archive
  uint64_t end = 0;             // offset just past the last member's padding
};

// Members from the start of `buf` (which sits at `base` in the file) to its
// end or to the end-of-archive block. `buf` must end on a member boundary.
Result<TarRun> ParseTarMembers(std::string_view buf, uint64_t base, std::string_view source);

// The key and extension of a member or file name (WebDataset's rule, as in
// docs/pack-format.md): the extension is what follows the first '.' of the
// last path component. "cat/img001.jpg" -> {"cat/img001", "jpg"}.
std::pair<std::string_view, std::string_view> SplitKey(std::string_view path);

class TarFile {
 public:
  static Result<TarFile> Open(const std::string& path);
  TarFile(TarFile&& other) noexcept;
  TarFile& operator=(TarFile&&) = delete;
  ~TarFile();
  uint64_t size() const { return size_; }
  // The members in [offset, offset + length); views valid until the next call.
  Result<TarRun> ReadRange(uint64_t offset, uint64_t length);

 private:
  TarFile(int fd, std::string path, uint64_t size) : fd_(fd), path_(std::move(path)), size_(size) {}
  int fd_ = -1;
  std::string path_;
  uint64_t size_ = 0;
  std::string buf_;
};

}  // namespace stallscope

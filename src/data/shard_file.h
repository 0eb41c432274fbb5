// A file that appears under its final name only when it is complete: written
// to ".<name>.tmp" in the same folder, fsync'ed, then renamed (and the folder
// fsync'ed). A file never committed is removed by its destructor. Writes are
// buffered; large ones go straight to the file. Errors (ENOSPC included)
// name the temporary file. Not thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "core/status.h"

namespace stallscope {

class ShardFile {
 public:
  // dir/name will be the final path; dir/.name.tmp is created now (replacing
  // a stale one).
  static Result<std::unique_ptr<ShardFile>> Create(const std::string& dir, const std::string& name);
  ~ShardFile();
  ShardFile(const ShardFile&) = delete;
  ShardFile& operator=(const ShardFile&) = delete;

  Status Append(const void* data, size_t size);
  Status Append(std::string_view s) { return Append(s.data(), s.size()); }
  uint64_t offset() const { return offset_; }
  const std::string& final_path() const { return final_path_; }
  const std::string& temp_path() const { return temp_path_; }

  // Flush, fsync, rename to the final name, fsync the folder.
  Status Commit();
  // Close and remove the temporary file (no-op after Commit).
  void Abort();

 private:
  ShardFile(int fd, std::string dir, std::string temp, std::string final_path);
  Status Flush();
  Status WriteAll(const char* p, size_t n);

  int fd_ = -1;
  std::string dir_;
  std::string temp_path_;
  std::string final_path_;
  std::unique_ptr<char[]> buf_;
  size_t used_ = 0;
  uint64_t offset_ = 0;
  bool committed_ = false;
};

// fsync of a folder, so a rename in it survives a crash.
Status SyncDirectory(const std::string& dir);

}  // namespace stallscope

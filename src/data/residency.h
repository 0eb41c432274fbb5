// Page-cache residency of a file: how much of it the kernel already holds in
// memory, so reading it costs no IO. Measured as vmtouch does: map the file
// (nothing is read), ask mincore(2) which pages are in core, unmap.
//
// Reading a file's residency neither reads its data nor changes what is
// cached. Stateless; thread-safe.
#pragma once

#include <cstdint>
#include <string>

#include "core/status.h"

namespace stallscope {

struct FileResidency {
  uint64_t size_bytes = 0;
  uint64_t pages = 0;           // ceil(size / page size)
  uint64_t resident_pages = 0;  // in the page cache now
  uint64_t resident_bytes = 0;  // the bytes of the file those pages hold
};

// Errors name the file: it could not be opened, is not a regular file, or
// could not be mapped (some FUSE and special file systems refuse mmap).
Result<FileResidency> MeasureResidency(const std::string& path);

}  // namespace stallscope

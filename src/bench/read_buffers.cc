#include "bench/read_buffers.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "probe/smaps.h"

namespace stallscope {

ReadBuffers::ReadBuffers(unsigned count, uint32_t block_bytes) : block_bytes_(block_bytes) {
  size_t wanted = size_t{count} * block_bytes;
  // A 4 KiB read is one page wherever it lands: no huge page needed (and
  // the pread fallback runs jobs x iodepth threads, each with its own).
  const bool huge = block_bytes > kSmallPageBytes;
  const size_t align = huge ? kHugePageBytes : kSmallPageBytes;
  bytes_ = (wanted + align - 1) / align * align;
  base_ = static_cast<char*>(std::aligned_alloc(align, bytes_));
  if (base_ == nullptr) return;
  // A hint: refused (THP "never", or no kernel support) leaves 4 KiB pages.
  if (huge) (void)::madvise(base_, bytes_, MADV_HUGEPAGE);
  // Fault the pages in now, not in the first timed read.
  std::memset(base_, 0, bytes_);
  if (huge) {
    // The area may be wider than the region (the allocator's own pages):
    // count no more than the region.
    Result<SmapsArea> area = ReadOwnSmapsAreaAt(reinterpret_cast<uintptr_t>(base_));
    if (area.ok()) huge_bytes_ = std::min<size_t>(area->anon_huge_pages_bytes, bytes_);
  }
}

ReadBuffers::~ReadBuffers() { std::free(base_); }

}  // namespace stallscope

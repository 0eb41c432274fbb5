// The memory that `bench io`'s reads land in: one block per read in flight,
// all in one region, touched before the timed loop. For blocks larger than
// a page the region is aligned to 2 MiB and asked to be backed by
// transparent huge pages. Owned by one job; not
// thread-safe.
//
// Why it matters: the kernel turns an O_DIRECT read into one request per
// physically contiguous run of the buffer's pages, and a device takes at
// most max_segments runs per request (254 on virtio-blk). A 1 MiB read into
// 256 scattered 4 KiB pages then goes out as two requests, at half the
// throughput; into one 2 MiB page it is one run, one request. fio's malloc'd
// buffers land either way by luck of the page allocator, which is why fio's
// own sequential figure on such a VM can change two-fold from one run to
// the next (docs/bench-io.md). Where huge pages are off or none is free the
// region is plain 4 KiB pages and the reads behave as fio's do.
#pragma once

#include <cstddef>
#include <cstdint>

namespace stallscope {

inline constexpr size_t kHugePageBytes = size_t{2} << 20;
inline constexpr size_t kSmallPageBytes = 4096;

class ReadBuffers {
 public:
  // `count` blocks of `block_bytes` (a power of two up to 2 MiB, so that no
  // block straddles a huge page). Empty (data() null) when out of memory.
  ReadBuffers(unsigned count, uint32_t block_bytes);
  ~ReadBuffers();
  ReadBuffers(const ReadBuffers&) = delete;
  ReadBuffers& operator=(const ReadBuffers&) = delete;

  char* data() const { return base_; }
  char* Block(unsigned slot) const { return base_ + size_t{slot} * block_bytes_; }
  size_t bytes() const { return bytes_; }
  // How much of the region the kernel backed with transparent huge pages
  // (its area's AnonHugePages in /proc/self/smaps, at most bytes()); 0 for
  // 4 KiB blocks, which ask for none, and when smaps cannot tell.
  size_t huge_bytes() const { return huge_bytes_; }

 private:
  char* base_ = nullptr;
  size_t bytes_ = 0;  // rounded up to whole pages of the alignment
  uint32_t block_bytes_ = 0;
  size_t huge_bytes_ = 0;
};

}  // namespace stallscope

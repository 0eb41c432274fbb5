#include "bench/read_buffers.h"

#include <gtest/gtest.h>

#include <cstdint>

#include "bench/io_plan.h"

namespace stallscope {
namespace {

uintptr_t Address(const char* p) { return reinterpret_cast<uintptr_t>(p); }

// What makes a 1 MiB O_DIRECT read one device request: its block lies in one
// 2 MiB-aligned huge page, never across two.
TEST(ReadBuffers, NoSequentialBlockStraddlesAHugePage) {
  for (unsigned depth : {1u, 3u, 4u, 16u}) {
    ReadBuffers buffers(depth, kSequentialBlockBytes);
    ASSERT_NE(buffers.data(), nullptr);
    EXPECT_EQ(Address(buffers.data()) % kHugePageBytes, 0u) << depth;
    EXPECT_EQ(buffers.bytes() % kHugePageBytes, 0u) << depth;
    EXPECT_GE(buffers.bytes(), size_t{depth} * kSequentialBlockBytes);
    for (unsigned slot = 0; slot < depth; ++slot) {
      uintptr_t first = Address(buffers.Block(slot));
      uintptr_t last = first + kSequentialBlockBytes - 1;
      EXPECT_EQ(first / kHugePageBytes, last / kHugePageBytes) << depth << " " << slot;
      EXPECT_LE(last, Address(buffers.data()) + buffers.bytes() - 1);
    }
  }
}

TEST(ReadBuffers, RandomBlocksAreDistinctAndDirectIoAligned) {
  ReadBuffers buffers(16, kRandomBlockBytes);
  ASSERT_NE(buffers.data(), nullptr);
  for (unsigned slot = 0; slot < 16; ++slot) {
    EXPECT_EQ(Address(buffers.Block(slot)) % 4096, 0u);
    if (slot > 0) {
      EXPECT_EQ(buffers.Block(slot) - buffers.Block(slot - 1), 4096);
    }
  }
}

}  // namespace
}  // namespace stallscope

// CRC32C (Castagnoli, polynomial 0x1EDC6F41, reflected 0x82F63B78), the
// checksum of TFRecord framing, plus TensorFlow's "masked" form of it.
//
// Crc32c() picks the SSE4.2 crc32 instruction when the CPU has it (checked
// once at run time) and a slicing-by-8 table otherwise; both are exposed so
// tests hold each to the RFC 3720 known answers. Stateless after the first
// call; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace stallscope {

// Extends `crc` (the CRC of the bytes before, 0 for none) over `data`.
uint32_t Crc32cExtend(uint32_t crc, const void* data, size_t size);
inline uint32_t Crc32c(const void* data, size_t size) { return Crc32cExtend(0, data, size); }
inline uint32_t Crc32c(std::string_view s) { return Crc32cExtend(0, s.data(), s.size()); }

// The two implementations behind Crc32cExtend, for tests and benchmarks.
uint32_t Crc32cExtendTable(uint32_t crc, const void* data, size_t size);
uint32_t Crc32cExtendHardware(uint32_t crc, const void* data,
                              size_t size);  // needs HasHardwareCrc32c()
bool HasHardwareCrc32c();

// TensorFlow masks stored CRCs so that a CRC of data that itself holds CRCs
// does not degenerate: rotate right 15 bits, add a constant.
constexpr uint32_t kCrc32cMaskDelta = 0xa282ead8u;
constexpr uint32_t MaskCrc32c(uint32_t crc) {
  return ((crc >> 15) | (crc << 17)) + kCrc32cMaskDelta;
}
constexpr uint32_t UnmaskCrc32c(uint32_t masked) {
  uint32_t rot = masked - kCrc32cMaskDelta;
  return (rot >> 17) | (rot << 15);
}

}  // namespace stallscope

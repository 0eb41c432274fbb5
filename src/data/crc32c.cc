// CRC32C: slicing-by-8 tables built at compile time, and the SSE4.2 path.
#include "data/crc32c.h"

#include <array>
#include <cstring>

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

namespace stallscope {
namespace {

constexpr uint32_t kPoly = 0x82F63B78u;  // Castagnoli, bit-reflected

using Tables = std::array<std::array<uint32_t, 256>, 8>;

constexpr Tables MakeTables() {
  Tables t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ kPoly : c >> 1;
    t[0][i] = c;
  }
  // t[k][i]: the CRC of byte i followed by k zero bytes.
  for (int k = 1; k < 8; ++k)
    for (uint32_t i = 0; i < 256; ++i) t[k][i] = (t[k - 1][i] >> 8) ^ t[0][t[k - 1][i] & 0xff];
  return t;
}

constexpr Tables kTables = MakeTables();

uint64_t LoadLe64(const unsigned char* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);  // x86 and arm64 Linux are little-endian
  return v;
}

}  // namespace

uint32_t Crc32cExtendTable(uint32_t crc, const void* data, size_t size) {
  const auto* p = static_cast<const unsigned char*>(data);
  uint32_t c = ~crc;
  while (size >= 8) {
    uint64_t v = LoadLe64(p) ^ c;
    c = kTables[7][v & 0xff] ^ kTables[6][(v >> 8) & 0xff] ^ kTables[5][(v >> 16) & 0xff] ^
        kTables[4][(v >> 24) & 0xff] ^ kTables[3][(v >> 32) & 0xff] ^ kTables[2][(v >> 40) & 0xff] ^
        kTables[1][(v >> 48) & 0xff] ^ kTables[0][v >> 56];
    p += 8;
    size -= 8;
  }
  while (size--) c = (c >> 8) ^ kTables[0][(c ^ *p++) & 0xff];
  return ~c;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) uint32_t Crc32cExtendHardware(uint32_t crc, const void* data,
                                                                size_t size) {
  const auto* p = static_cast<const unsigned char*>(data);
  uint64_t c = ~crc;
  // Three independent streams would hide the instruction's 3-cycle latency;
  // one stream already runs at several GB/s, well above the disk it checks.
  while (size >= 8) {
    c = _mm_crc32_u64(c, LoadLe64(p));
    p += 8;
    size -= 8;
  }
  uint32_t c32 = static_cast<uint32_t>(c);
  while (size--) c32 = _mm_crc32_u8(c32, *p++);
  return ~c32;
}

bool HasHardwareCrc32c() {
  static const bool has = __builtin_cpu_supports("sse4.2");
  return has;
}
#else
uint32_t Crc32cExtendHardware(uint32_t crc, const void* data, size_t size) {
  return Crc32cExtendTable(crc, data, size);
}
bool HasHardwareCrc32c() { return false; }
#endif

uint32_t Crc32cExtend(uint32_t crc, const void* data, size_t size) {
  return HasHardwareCrc32c() ? Crc32cExtendHardware(crc, data, size)
                             : Crc32cExtendTable(crc, data, size);
}

}  // namespace stallscope

// CRC32C against the RFC 3720 (iSCSI) appendix B.4 known answers, for both
// implementations, and TensorFlow's mask.
#include "data/crc32c.h"

#include <gtest/gtest.h>

#include <random>
#include <string>

namespace stallscope {
namespace {

struct Vector {
  std::string data;
  uint32_t crc;
};

std::vector<Vector> Rfc3720Vectors() {
  std::string ascending, descending;
  for (int i = 0; i < 32; ++i) {
    ascending.push_back(static_cast<char>(i));
    descending.push_back(static_cast<char>(31 - i));
  }
  return {{std::string(32, '\0'), 0x8A9136AAu},
          {std::string(32, '\xff'), 0x62A8AB43u},
          {ascending, 0x46DD794Eu},
          {descending, 0x113FDB5Cu},
          {"123456789", 0xE3069283u},
          {"", 0u}};
}

TEST(Crc32c, TableMatchesRfc3720) {
  for (const Vector& v : Rfc3720Vectors())
    EXPECT_EQ(Crc32cExtendTable(0, v.data.data(), v.data.size()), v.crc) << v.data.size();
}

TEST(Crc32c, HardwareMatchesRfc3720) {
  if (!HasHardwareCrc32c()) GTEST_SKIP() << "no SSE4.2 crc32 on this CPU";
  for (const Vector& v : Rfc3720Vectors())
    EXPECT_EQ(Crc32cExtendHardware(0, v.data.data(), v.data.size()), v.crc) << v.data.size();
}

TEST(Crc32c, ExtendEqualsWholeAndPathsAgreeOnRandomData) {
  std::mt19937 rng(7);
  std::string data(100003, '\0');
  for (char& c : data) c = static_cast<char>(rng());
  uint32_t whole = Crc32cExtendTable(0, data.data(), data.size());
  for (size_t split : {size_t{0}, size_t{1}, size_t{7}, size_t{4096}, data.size()}) {
    uint32_t a = Crc32cExtend(0, data.data(), split);
    EXPECT_EQ(Crc32cExtend(a, data.data() + split, data.size() - split), whole) << split;
  }
  // Unaligned starts exercise the byte loops of both paths.
  for (size_t off = 0; off < 9; ++off)
    EXPECT_EQ(Crc32c(data.data() + off, 1000), Crc32cExtendTable(0, data.data() + off, 1000))
        << off;
}

TEST(Crc32c, MaskRoundTripsAndMatchesTensorFlow) {
  // TensorFlow's crc32c::Mask of crc32c("123456789").
  EXPECT_EQ(MaskCrc32c(0xE3069283u), ((0xE3069283u >> 15) | (0xE3069283u << 17)) + 0xa282ead8u);
  for (uint32_t c : {0u, 1u, 0xE3069283u, 0xffffffffu}) EXPECT_EQ(UnmaskCrc32c(MaskCrc32c(c)), c);
  EXPECT_NE(MaskCrc32c(0xE3069283u), 0xE3069283u);
}

}  // namespace
}  // namespace stallscope

// net/admission.h: the --allow matcher and the per-source UDP rate limiter.
#include "net/admission.h"

#include <gtest/gtest.h>

#include <string>

namespace stallscope::net {
namespace {

SourceAddress At(const std::string& text) {
  Result<AllowList> one = AllowList::Parse(text);
  EXPECT_TRUE(one.ok()) << text;
  return one->ranges().at(0).base;
}

TEST(AllowListTest, MatchesIpv4CidrsAndBareAddresses) {
  Result<AllowList> list = AllowList::Parse("10.1.0.0/16, 192.168.7.9");
  ASSERT_TRUE(list.ok()) << list.status().message();
  EXPECT_TRUE(list->Allows(At("10.1.255.3")));
  EXPECT_FALSE(list->Allows(At("10.2.0.1")));
  EXPECT_TRUE(list->Allows(At("192.168.7.9")));
  EXPECT_FALSE(list->Allows(At("192.168.7.10")));
  EXPECT_FALSE(list->Allows(At("::1")));
}

TEST(AllowListTest, MatchesIpv6AndOddPrefixes) {
  Result<AllowList> list = AllowList::Parse("fd00:ab::/33,::1,127.0.0.0/9");
  ASSERT_TRUE(list.ok());
  EXPECT_TRUE(list->Allows(At("fd00:ab:7fff::1")));
  EXPECT_FALSE(list->Allows(At("fd00:ab:8000::1")));
  EXPECT_TRUE(list->Allows(At("::1")));
  EXPECT_FALSE(list->Allows(At("::2")));
  EXPECT_TRUE(list->Allows(At("127.127.0.1")));
  EXPECT_FALSE(list->Allows(At("127.128.0.1")));
}

TEST(AllowListTest, Ipv4MappedAddressesMatchIpv4Ranges) {
  Result<AllowList> list = AllowList::Parse("127.0.0.2/32");
  ASSERT_TRUE(list.ok());
  EXPECT_TRUE(list->Allows(At("::ffff:127.0.0.2")));
  EXPECT_FALSE(list->Allows(At("::ffff:127.0.0.1")));
}

TEST(AllowListTest, EmptyAllowsEveryoneAndZeroPrefixAllowsAFamily) {
  Result<AllowList> empty = AllowList::Parse("");
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->AllowsEveryone());
  EXPECT_TRUE(empty->Allows(At("8.8.8.8")));
  Result<AllowList> v4 = AllowList::Parse("0.0.0.0/0");
  ASSERT_TRUE(v4.ok());
  EXPECT_TRUE(v4->Allows(At("8.8.8.8")));
  EXPECT_FALSE(v4->Allows(At("2001:db8::1")));
}

TEST(AllowListTest, BadEntriesNameTheFlagAndTheEntry) {
  for (const char* bad : {"10.0.0.0/33", "::/129", "host.example", "10.0.0.1/", "10.0.0.0/-1",
                          "10.0.0.0/8x", "1.2.3.4/0008"}) {
    Result<AllowList> list = AllowList::Parse(std::string("127.0.0.1,") + bad);
    ASSERT_FALSE(list.ok()) << bad;
    EXPECT_NE(list.status().message().find(std::string("--allow ") + bad), std::string::npos)
        << list.status().message();
  }
}

TEST(ReplyRateLimiterTest, ABurstThenTheRate) {
  ReplyRateLimiter limiter(/*per_second=*/10, /*burst=*/5, /*max_sources=*/16);
  const SourceAddress a = At("10.0.0.1");
  int answered = 0;
  for (int i = 0; i < 100; ++i) answered += limiter.Allow(a, 0);
  EXPECT_EQ(answered, 5);
  // One second later: ten more tokens, capped at the burst of five.
  answered = 0;
  for (int i = 0; i < 100; ++i) answered += limiter.Allow(a, 1'000'000'000);
  EXPECT_EQ(answered, 5);
  // 100 ms later: one token.
  EXPECT_TRUE(limiter.Allow(a, 1'100'000'000));
  EXPECT_FALSE(limiter.Allow(a, 1'100'000'000));
}

TEST(ReplyRateLimiterTest, SourcesHaveTheirOwnBuckets) {
  ReplyRateLimiter limiter(1, 1, 16);
  EXPECT_TRUE(limiter.Allow(At("10.0.0.1"), 0));
  EXPECT_FALSE(limiter.Allow(At("10.0.0.1"), 0));
  EXPECT_TRUE(limiter.Allow(At("10.0.0.2"), 0));
  EXPECT_TRUE(limiter.Allow(At("::1"), 0));
}

TEST(ReplyRateLimiterTest, TheTableIsBoundedAndForgetsIdleSourcesFirst) {
  ReplyRateLimiter limiter(/*per_second=*/1, /*burst=*/2, /*max_sources=*/2);
  EXPECT_TRUE(limiter.Allow(At("10.0.0.1"), 0));
  EXPECT_TRUE(limiter.Allow(At("10.0.0.2"), 0));
  // Full, and nobody idle for the 2 s a bucket takes to refill: a new source is not answered.
  EXPECT_FALSE(limiter.Allow(At("10.0.0.3"), 1'000'000'000));
  EXPECT_EQ(limiter.sources(), 2u);
  // 10.0.0.2 keeps asking; 10.0.0.1 falls idle and is forgotten for 10.0.0.3.
  EXPECT_TRUE(limiter.Allow(At("10.0.0.2"), 1'500'000'000));
  EXPECT_TRUE(limiter.Allow(At("10.0.0.3"), 2'100'000'000));
  EXPECT_EQ(limiter.sources(), 2u);
}

TEST(ReplyRateLimiterTest, AFullTableIsSweptAtMostOnceAQuarterRefill) {
  // Refill takes 2 s, so sweeps are at least 500 ms apart.
  ReplyRateLimiter limiter(/*per_second=*/1, /*burst=*/2, /*max_sources=*/4);
  for (int i = 1; i <= 4; ++i) EXPECT_TRUE(limiter.Allow(At("10.0.0." + std::to_string(i)), 0));
  EXPECT_EQ(limiter.sweeps(), 0u);
  // A flood of new sources within 400 ms: one sweep, not one per packet.
  for (int i = 0; i < 10'000; ++i) {
    const std::string source = "10.1." + std::to_string(i / 250) + "." + std::to_string(i % 250);
    EXPECT_FALSE(limiter.Allow(At(source), 100'000'000 + i * 30'000LL));
  }
  EXPECT_EQ(limiter.sweeps(), 1u);
  // 600 ms after that sweep: one more.
  EXPECT_FALSE(limiter.Allow(At("10.2.0.1"), 700'000'000));
  EXPECT_EQ(limiter.sweeps(), 2u);
  // Once the first sources have been idle for the refill period, the next
  // sweep forgets them and the new source is answered.
  EXPECT_TRUE(limiter.Allow(At("10.2.0.2"), 2'000'000'000));
  EXPECT_EQ(limiter.sweeps(), 3u);
  EXPECT_EQ(limiter.sources(), 1u);
}

}  // namespace
}  // namespace stallscope::net

// Who `net serve` answers, and how often: the --allow list of address
// ranges (CIDRs) and the per-source rate limit on UDP probe answers.
//
// Both are pure: AllowList matches an address against ranges parsed once;
// ReplyRateLimiter is a token bucket per source address whose clock is the
// caller's (nanoseconds passed in), so tests drive it without sleeping.
// The limiter's table is bounded: when full, sources idle long enough to
// have a full bucket again are forgotten first, and if none is, a new
// source is not answered (a flood of spoofed sources cannot grow memory
// nor push out the sources already being answered). The sweep for idle
// sources scans the whole table, so it runs at most once every quarter of
// the refill period: between sweeps a flood of new sources costs one hash
// look-up each, not a scan each. Not thread-safe.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/status.h"

struct sockaddr;

namespace stallscope::net {

// An IPv4 or IPv6 address as bytes; IPv4-mapped IPv6 (::ffff:a.b.c.d, what
// a dual-stack socket sees) is stored as the IPv4 address it carries.
struct SourceAddress {
  bool ipv6 = false;
  std::array<uint8_t, 16> bytes{};  // IPv4 uses the first 4
  bool operator==(const SourceAddress&) const = default;
};

// The address of a sockaddr_in / sockaddr_in6; an unknown family is ::.
SourceAddress SourceOf(const sockaddr* address);
std::string SourceText(const SourceAddress& address);

struct AddressRange {
  SourceAddress base;  // with the bits past prefix_bits cleared
  int prefix_bits = 0;
};

class AllowList {
 public:
  // "10.0.0.0/8,192.168.1.7,fd00::/8,::1": CIDRs and bare addresses, comma
  // separated. An empty text allows everyone. A bad entry is an
  // InvalidArgument naming it and the flag.
  static Result<AllowList> Parse(const std::string& text);

  bool AllowsEveryone() const { return ranges_.empty(); }
  bool Allows(const SourceAddress& address) const;
  const std::vector<AddressRange>& ranges() const { return ranges_; }

 private:
  std::vector<AddressRange> ranges_;
};

class ReplyRateLimiter {
 public:
  // `per_second` replies per source on average, bursts of `burst`; at most
  // `max_sources` sources remembered.
  ReplyRateLimiter(double per_second, double burst, size_t max_sources);

  // True when `source` may be answered now (and spends one token).
  bool Allow(const SourceAddress& source, int64_t now_ns);
  size_t sources() const { return buckets_.size(); }
  // How many times the full table has been scanned for idle sources.
  size_t sweeps() const { return sweeps_; }

 private:
  struct Bucket {
    double tokens = 0;
    int64_t updated_ns = 0;
  };
  struct Hash {
    size_t operator()(const SourceAddress& a) const;
  };
  void ForgetIdle(int64_t now_ns);
  double RefillNs() const;

  double per_second_;
  double burst_;
  size_t max_sources_;
  std::unordered_map<SourceAddress, Bucket, Hash> buckets_;
  bool swept_ = false;
  int64_t last_sweep_ns_ = 0;
  size_t sweeps_ = 0;
};

}  // namespace stallscope::net

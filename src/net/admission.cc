#include "net/admission.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstring>
#include <string_view>

#include "core/text.h"

namespace stallscope::net {
namespace {

bool ParseAddress(const std::string& text, SourceAddress* out) {
  in_addr v4{};
  in6_addr v6{};
  if (::inet_pton(AF_INET, text.c_str(), &v4) == 1) {
    *out = SourceAddress{};
    std::memcpy(out->bytes.data(), &v4, 4);
    return true;
  }
  if (::inet_pton(AF_INET6, text.c_str(), &v6) == 1) {
    sockaddr_in6 a{};
    a.sin6_family = AF_INET6;
    a.sin6_addr = v6;
    *out = SourceOf(reinterpret_cast<const sockaddr*>(&a));
    return true;
  }
  return false;
}

// True when the first `bits` bits of a and b agree.
bool SamePrefix(const SourceAddress& a, const SourceAddress& b, int bits) {
  for (int i = 0; bits > 0; ++i, bits -= 8) {
    uint8_t mask = bits >= 8 ? 0xff : static_cast<uint8_t>(0xff << (8 - bits));
    if ((a.bytes[i] & mask) != (b.bytes[i] & mask)) return false;
  }
  return true;
}

Result<AddressRange> ParseRange(const std::string& entry) {
  auto bad = [&](const std::string& why) {
    return Status::InvalidArgument("--allow " + entry + ": " + why);
  };
  size_t slash = entry.find('/');
  AddressRange range;
  if (!ParseAddress(entry.substr(0, slash), &range.base)) {
    return bad("not an IPv4 or IPv6 address or CIDR");
  }
  const int width = range.base.ipv6 ? 128 : 32;
  range.prefix_bits = width;
  if (slash != std::string::npos) {
    std::string bits = entry.substr(slash + 1);
    if (bits.empty() || bits.size() > 3 ||
        !std::all_of(bits.begin(), bits.end(), [](char c) { return c >= '0' && c <= '9'; }) ||
        std::stoi(bits) > width) {
      return bad("the prefix length must be 0 to " + std::to_string(width));
    }
    range.prefix_bits = std::stoi(bits);
  }
  SourceAddress masked{range.base.ipv6, {}};
  for (int i = 0, left = range.prefix_bits; left > 0; ++i, left -= 8) {
    uint8_t mask = left >= 8 ? 0xff : static_cast<uint8_t>(0xff << (8 - left));
    masked.bytes[i] = range.base.bytes[i] & mask;
  }
  range.base = masked;
  return range;
}

}  // namespace

SourceAddress SourceOf(const sockaddr* address) {
  SourceAddress out;
  if (address->sa_family == AF_INET) {
    const auto* v4 = reinterpret_cast<const sockaddr_in*>(address);
    std::memcpy(out.bytes.data(), &v4->sin_addr, 4);
  } else if (address->sa_family == AF_INET6) {
    const auto* v6 = reinterpret_cast<const sockaddr_in6*>(address);
    if (IN6_IS_ADDR_V4MAPPED(&v6->sin6_addr)) {
      std::memcpy(out.bytes.data(), v6->sin6_addr.s6_addr + 12, 4);
    } else {
      out.ipv6 = true;
      std::memcpy(out.bytes.data(), &v6->sin6_addr, 16);
    }
  } else {
    out.ipv6 = true;
  }
  return out;
}

std::string SourceText(const SourceAddress& address) {
  char text[INET6_ADDRSTRLEN] = {};
  ::inet_ntop(address.ipv6 ? AF_INET6 : AF_INET, address.bytes.data(), text, sizeof text);
  return text;
}

Result<AllowList> AllowList::Parse(const std::string& text) {
  AllowList list;
  for (std::string_view raw : Split(text, ',')) {
    std::string entry(Trim(raw));
    if (entry.empty()) continue;
    Result<AddressRange> range = ParseRange(entry);
    if (!range.ok()) return range.status();
    list.ranges_.push_back(*range);
  }
  return list;
}

bool AllowList::Allows(const SourceAddress& address) const {
  if (ranges_.empty()) return true;
  return std::any_of(ranges_.begin(), ranges_.end(), [&](const AddressRange& r) {
    return r.base.ipv6 == address.ipv6 && SamePrefix(r.base, address, r.prefix_bits);
  });
}

size_t ReplyRateLimiter::Hash::operator()(const SourceAddress& a) const {
  size_t h = a.ipv6 ? 0x9e3779b97f4a7c15ULL : 0;
  for (uint8_t b : a.bytes) h = h * 131 + b;
  return h;
}

ReplyRateLimiter::ReplyRateLimiter(double per_second, double burst, size_t max_sources)
    : per_second_(per_second), burst_(std::max(burst, 1.0)), max_sources_(max_sources) {}

double ReplyRateLimiter::RefillNs() const {
  return per_second_ > 0 ? burst_ / per_second_ * 1e9 : 0;
}

// A source idle for a whole refill period has a full bucket again, so
// forgetting it changes no answer. Sweeping more often than a quarter of
// that period would find few new idle sources and costs a full scan.
void ReplyRateLimiter::ForgetIdle(int64_t now_ns) {
  const double refill_ns = RefillNs();
  if (swept_ && static_cast<double>(now_ns - last_sweep_ns_) < refill_ns / 4) return;
  swept_ = true;
  last_sweep_ns_ = now_ns;
  ++sweeps_;
  std::erase_if(buckets_, [&](const auto& entry) {
    return static_cast<double>(now_ns - entry.second.updated_ns) >= refill_ns;
  });
}

bool ReplyRateLimiter::Allow(const SourceAddress& source, int64_t now_ns) {
  auto it = buckets_.find(source);
  if (it == buckets_.end()) {
    if (buckets_.size() >= max_sources_) ForgetIdle(now_ns);
    if (buckets_.size() >= max_sources_) return false;
    it = buckets_.emplace(source, Bucket{burst_, now_ns}).first;
  }
  Bucket& b = it->second;
  const double elapsed = static_cast<double>(std::max<int64_t>(now_ns - b.updated_ns, 0)) / 1e9;
  b.tokens = std::min(burst_, b.tokens + elapsed * per_second_);
  b.updated_ns = std::max(b.updated_ns, now_ns);
  if (b.tokens < 1.0) return false;
  b.tokens -= 1.0;
  return true;
}

}  // namespace stallscope::net

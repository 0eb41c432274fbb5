// Clock pings between nodes: see clock_exchange.h.
#include "record/clock_exchange.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <utility>

#include "core/host_clock.h"

namespace stallscope {
namespace {

constexpr char kMagic[4] = {'S', 'S', 'C', 'K'};

struct Ping {
  char magic[4];
  uint32_t sequence;
  int64_t sent_ns;
};
struct Pong {
  Ping ping;
  int64_t server_ns;
};

}  // namespace

Result<ClockServer> ClockServer::Open(int port) {
  if (port < 1 || port > 65535) {
    return Status::InvalidArgument("clock server port " + std::to_string(port) + ": out of range");
  }
  // Dual-stack where the host has IPv6, IPv4 alone where it has not.
  int fd = socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd >= 0) {
    int off = 0;
    setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof off);
    sockaddr_in6 address{};
    address.sin6_family = AF_INET6;
    address.sin6_addr = in6addr_any;
    address.sin6_port = htons(static_cast<uint16_t>(port));
    if (bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0) {
      return ClockServer(fd);
    }
    close(fd);
  }
  fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return Status::FromErrno("socket", errno);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_ANY);
  address.sin_port = htons(static_cast<uint16_t>(port));
  if (bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    int err = errno;
    close(fd);
    return Status::FromErrno("UDP port " + std::to_string(port), err);
  }
  return ClockServer(fd);
}

ClockServer::ClockServer(ClockServer&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}

ClockServer& ClockServer::operator=(ClockServer&& other) noexcept {
  std::swap(fd_, other.fd_);
  return *this;
}

ClockServer::~ClockServer() {
  if (fd_ >= 0) close(fd_);
}

int ClockServer::Answer() {
  int answered = 0;
  while (true) {
    Ping ping;
    sockaddr_storage from{};
    socklen_t length = sizeof from;
    ssize_t n = recvfrom(fd_, &ping, sizeof ping, 0, reinterpret_cast<sockaddr*>(&from), &length);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return answered;
    if (n != sizeof ping || std::memcmp(ping.magic, kMagic, sizeof kMagic) != 0) continue;
    Pong pong{ping, RealtimeNs()};
    if (sendto(fd_, &pong, sizeof pong, MSG_DONTWAIT, reinterpret_cast<sockaddr*>(&from), length) ==
        sizeof pong) {
      ++answered;
    }
  }
}

Result<std::optional<ClockOffsetEstimate>> MeasureClockOffset(const std::string& host, int port,
                                                              int rounds, int timeout_ms) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* list = nullptr;
  std::string service = std::to_string(port);
  if (int rc = getaddrinfo(host.c_str(), service.c_str(), &hints, &list); rc != 0) {
    return Status::InvalidArgument(host + ": does not resolve (" + gai_strerror(rc) + ")");
  }
  int fd = socket(list->ai_family, list->ai_socktype | SOCK_CLOEXEC, list->ai_protocol);
  if (fd < 0 || connect(fd, list->ai_addr, list->ai_addrlen) != 0) {
    int err = errno;
    if (fd >= 0) close(fd);
    freeaddrinfo(list);
    return Status::FromErrno("a UDP socket to " + host, err);
  }
  freeaddrinfo(list);
  std::optional<ClockOffsetEstimate> best;
  for (int i = 0; i < rounds; ++i) {
    Ping ping{};
    std::memcpy(ping.magic, kMagic, sizeof kMagic);
    ping.sequence = static_cast<uint32_t>(i);
    ping.sent_ns = RealtimeNs();
    if (send(fd, &ping, sizeof ping, 0) != sizeof ping) break;  // refused: nobody listens yet
    int64_t deadline = MonotonicNs() + int64_t{timeout_ms} * 1000000;
    bool answered = false;
    while (!answered) {
      int left_ms = static_cast<int>((deadline - MonotonicNs()) / 1000000);
      if (left_ms < 0) break;
      pollfd wait{fd, POLLIN, 0};
      if (poll(&wait, 1, left_ms) <= 0) break;
      Pong pong;
      ssize_t n = recv(fd, &pong, sizeof pong, MSG_DONTWAIT);
      int64_t received_ns = RealtimeNs();
      if (n != sizeof pong) {
        if (n < 0 && errno != EAGAIN && errno != EINTR) break;  // ICMP: port unreachable
        continue;
      }
      // A late answer to an earlier round is not this round's.
      if (std::memcmp(pong.ping.magic, kMagic, sizeof kMagic) != 0 ||
          pong.ping.sequence != ping.sequence || pong.ping.sent_ns != ping.sent_ns) {
        continue;
      }
      answered = true;
      double round_trip = static_cast<double>(received_ns - ping.sent_ns) / 1e9;
      double offset =
          static_cast<double>(ping.sent_ns - pong.server_ns + (received_ns - ping.sent_ns) / 2) /
          1e9;
      if (round_trip >= 0 && (!best || round_trip < best->round_trip_seconds)) {
        best = ClockOffsetEstimate{offset, round_trip};
      }
    }
    if (!answered && !best) break;  // nobody there: try again at a later sample
  }
  close(fd);
  return best;
}

}  // namespace stallscope

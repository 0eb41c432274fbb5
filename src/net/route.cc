#include "net/route.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace stallscope::net {
namespace {

// Closes a descriptor at scope exit.
struct Fd {
  int fd = -1;
  explicit Fd(int f) : fd(f) {}
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
};

}  // namespace

std::string AddressText(const sockaddr* address) {
  char text[INET6_ADDRSTRLEN] = {};
  if (address->sa_family == AF_INET) {
    ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(address)->sin_addr, text,
                sizeof text);
  } else if (address->sa_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(address);
    if (IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr)) {
      ::inet_ntop(AF_INET, &in6->sin6_addr.s6_addr[12], text, sizeof text);
    } else {
      ::inet_ntop(AF_INET6, &in6->sin6_addr, text, sizeof text);
    }
  }
  return text;
}

Result<PeerAddress> ResolvePeer(const std::string& host, uint16_t port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* list = nullptr;
  int rc = ::getaddrinfo(host.c_str(), nullptr, &hints, &list);
  if (rc != 0) {
    return Status::InvalidArgument(host + ": cannot resolve: " + ::gai_strerror(rc));
  }
  const addrinfo* pick = nullptr;
  for (const addrinfo* a = list; a != nullptr; a = a->ai_next) {
    if (a->ai_family == AF_INET) {
      pick = a;
      break;
    }
    if (a->ai_family == AF_INET6 && pick == nullptr) pick = a;
  }
  if (pick == nullptr) {
    ::freeaddrinfo(list);
    return Status::InvalidArgument(host + ": no IPv4 or IPv6 address");
  }
  PeerAddress out;
  std::memcpy(&out.address, pick->ai_addr, pick->ai_addrlen);
  out.length = pick->ai_addrlen;
  ::freeaddrinfo(list);
  if (out.address.ss_family == AF_INET) {
    reinterpret_cast<sockaddr_in*>(&out.address)->sin_port = htons(port);
  } else {
    reinterpret_cast<sockaddr_in6*>(&out.address)->sin6_port = htons(port);
  }
  out.text = AddressText(reinterpret_cast<const sockaddr*>(&out.address));
  return out;
}

std::string InterfaceOfAddress(const std::string& address) {
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return "";
  std::string found;
  for (ifaddrs* e = list; e != nullptr; e = e->ifa_next) {
    if (e->ifa_addr == nullptr || e->ifa_name == nullptr) continue;
    if (e->ifa_addr->sa_family != AF_INET && e->ifa_addr->sa_family != AF_INET6) continue;
    if (AddressText(e->ifa_addr) == address) {
      found = e->ifa_name;
      break;
    }
  }
  ::freeifaddrs(list);
  return found;
}

std::optional<uint64_t> InterfaceMtu(const std::string& name) {
  if (name.empty() || name.size() >= IFNAMSIZ) return std::nullopt;
  Fd s(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (s.fd < 0) return std::nullopt;
  ifreq request{};
  std::memcpy(request.ifr_name, name.data(), name.size());
  if (::ioctl(s.fd, SIOCGIFMTU, &request) != 0) return std::nullopt;
  return static_cast<uint64_t>(request.ifr_mtu);
}

PeerRoute RouteTo(const std::string& host, const std::string& label) {
  PeerRoute route;
  route.peer = label;
  // Any port does: connecting a UDP socket only picks the route.
  Result<PeerAddress> peer = ResolvePeer(host, 9);
  if (!peer.ok()) {
    route.error = peer.status().message();
    return route;
  }
  route.address = peer->text;
  Fd s(::socket(peer->address.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (s.fd < 0) {
    route.error = std::string("socket: ") + std::strerror(errno);
    return route;
  }
  if (::connect(s.fd, reinterpret_cast<const sockaddr*>(&peer->address), peer->length) != 0) {
    route.error = "no route to " + peer->text + ": " + std::strerror(errno);
    return route;
  }
  sockaddr_storage local{};
  socklen_t length = sizeof local;
  if (::getsockname(s.fd, reinterpret_cast<sockaddr*>(&local), &length) != 0) {
    route.error = std::string("getsockname: ") + std::strerror(errno);
    return route;
  }
  route.local_address = AddressText(reinterpret_cast<const sockaddr*>(&local));
  route.interface = InterfaceOfAddress(route.local_address);
  return route;
}

std::vector<PeerRoute> RoutesForJob(const TrainingEnvironment& environment,
                                    const std::vector<std::string>& peers) {
  std::vector<PeerRoute> routes;
  if (std::optional<std::string_view> master = environment.Get("MASTER_ADDR");
      master && !master->empty()) {
    routes.push_back(RouteTo(std::string(*master), "MASTER_ADDR=" + std::string(*master)));
  }
  for (const std::string& peer : peers) routes.push_back(RouteTo(peer, "--peer " + peer));
  return routes;
}

}  // namespace stallscope::net

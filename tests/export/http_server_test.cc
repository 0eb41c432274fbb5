// The exporter's HTTP server (libmicrohttpd) on a real loopback socket: a
// request past max_in_flight gets 503 at once while the others are being
// answered, and the server answers again once they are done.
#include "export/http_server.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

namespace stallscope {
namespace {

// Sends one request and reads the whole answer (the server closes).
std::string Exchange(uint16_t port, const std::string& request) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string out;
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      send(fd, request.data(), request.size(), 0) == static_cast<ssize_t>(request.size())) {
    char buf[4096];
    ssize_t n;
    while ((n = recv(fd, buf, sizeof buf, 0)) > 0) out.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  return out;
}

uint16_t PortOf(const HttpServer& s) {
  std::string a = s.bound_address();
  return static_cast<uint16_t>(std::stoi(a.substr(a.rfind(':') + 1)));
}

TEST(HttpServer, TheRequestPastTheInFlightBoundIs503AtOnce) {
  std::mutex m;
  std::condition_variable cv;
  bool release = false;
  int entered = 0;
  Result<ListenAddress> address = ParseListenAddress("127.0.0.1:0");
  ASSERT_TRUE(address.ok());
  HttpServerOptions options;
  options.max_in_flight = 1;
  Result<std::unique_ptr<HttpServer>> server =
      HttpServer::Start(*address, options, [&](const HttpRequest&) {
        std::unique_lock<std::mutex> lock(m);
        ++entered;
        cv.notify_all();
        cv.wait(lock, [&] { return release; });
        return HttpResponse{200, "text/plain", "ok\n", {}};
      });
  ASSERT_TRUE(server.ok()) << server.status().message();
  uint16_t port = PortOf(**server);
  const std::string get = "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
  std::string first;
  std::thread slow([&] { first = Exchange(port, get); });
  {
    std::unique_lock<std::mutex> lock(m);
    cv.wait(lock, [&] { return entered == 1; });
  }
  std::string busy = Exchange(port, get);  // returns while the first is held
  EXPECT_EQ(busy.rfind("HTTP/1.1 503 ", 0), 0u) << busy;
  EXPECT_NE(busy.find("Retry-After: 1"), std::string::npos);
  {
    std::lock_guard<std::mutex> lock(m);
    release = true;
  }
  cv.notify_all();
  slow.join();
  EXPECT_EQ(first.rfind("HTTP/1.1 200 ", 0), 0u) << first;
  EXPECT_EQ(Exchange(port, get).rfind("HTTP/1.1 200 ", 0), 0u);
  HttpServer::Counts c = (*server)->counts();
  EXPECT_EQ(c.refused, 1u);
  EXPECT_EQ(c.requests, 2u);
}

TEST(HttpServer, APortInUseIsAnErrorNamingTheAddress) {
  Result<ListenAddress> address = ParseListenAddress("127.0.0.1:0");
  ASSERT_TRUE(address.ok());
  Result<std::unique_ptr<HttpServer>> first =
      HttpServer::Start(*address, {}, [](const HttpRequest&) { return HttpResponse{}; });
  ASSERT_TRUE(first.ok());
  Result<ListenAddress> same = ParseListenAddress((*first)->bound_address());
  ASSERT_TRUE(same.ok());
  Result<std::unique_ptr<HttpServer>> second =
      HttpServer::Start(*same, {}, [](const HttpRequest&) { return HttpResponse{}; });
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.status().message().find((*first)->bound_address()), std::string::npos);
}

}  // namespace
}  // namespace stallscope

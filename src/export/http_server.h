// The exporter's HTTP server: libmicrohttpd in its thread-per-connection
// mode, next to the exporter's own loop (which serves the hook socket and
// the ticks on the main thread). The handler runs on the connections'
// threads, several at once; the exporter guards what it shares with a mutex.
//
// What keeps a hostile or broken client from hurting it (the options):
//  - max_in_flight: requests being answered at once. One more is answered
//    503 with Retry-After at once and its connection closed, as promhttp's
//    max-requests-in-flight does (libmicrohttpd alone would drop it unanswered).
//  - max_connections and max_connections_per_address: libmicrohttpd's
//    connection limits (past them a connection is closed unanswered); the
//    per-address one keeps a slowloris client from taking every slot.
//  - idle_timeout_seconds: a connection that sends or takes nothing for this
//    long is closed (libmicrohttpd counts idle time, not time since accept:
//    a client trickling a byte a second is bounded by the limits above).
//  - max_head_bytes: the request head; beyond it the answer is 431.
// TLS when a certificate and key are given (libmicrohttpd's GnuTLS support).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "core/status.h"
#include "export/http_request.h"

struct MHD_Daemon;
struct MHD_Connection;

namespace stallscope {

struct HttpServerOptions {
  int max_in_flight = 64;
  int max_connections = 512;
  int max_connections_per_address = 256;
  size_t max_head_bytes = 8192;
  unsigned idle_timeout_seconds = 5;
  std::string tls_cert_pem;  // both empty: plain HTTP
  std::string tls_key_pem;
};

class HttpServer {
 public:
  // Called on a connection's thread, possibly several at once.
  using Handler = std::function<HttpResponse(const HttpRequest&)>;

  static Result<std::unique_ptr<HttpServer>> Start(const ListenAddress& address,
                                                   const HttpServerOptions& options,
                                                   Handler handler);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // "127.0.0.1:40123": the bound address, with the port the kernel chose.
  std::string bound_address() const;
  bool tls() const { return !options_.tls_cert_pem.empty(); }

  // Counters for the exporter's own metrics (read from any thread).
  struct Counts {
    uint64_t requests = 0;      // answered by the handler, any status
    uint64_t bad_requests = 0;  // answered 4xx by the handler
    uint64_t timeouts = 0;      // requests cut at the idle timeout
    uint64_t refused = 0;       // over max_in_flight: 503
    int64_t open = 0;           // connections open now
  };
  Counts counts() const;

 private:
  HttpServer() = default;
  friend struct HttpServerCallbacks;  // libmicrohttpd's callbacks, in the .cc

  MHD_Daemon* daemon_ = nullptr;
  ListenAddress address_;
  HttpServerOptions options_;
  Handler handler_;
  std::atomic<int> in_flight_{0};
  std::atomic<uint64_t> requests_{0}, bad_requests_{0}, timeouts_{0}, refused_{0};
  std::atomic<int64_t> open_{0};
};

}  // namespace stallscope

#include "export/http_server.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <mutex>

#include "export/microhttpd_api.h"

namespace stallscope {
namespace {

// A request's state pointer: counted in max_in_flight, waiting for the end
// of the request; or counted and already answered.
char kCounted;
char kAnswered;

// Messages libmicrohttpd logs while starting (why it would not start); later
// ones (a client's failed TLS handshake) are dropped, not printed per client.
struct StartLog {
  std::mutex mutex;
  bool starting = true;
  std::string text;
};

void Log(void* log, const char* format, va_list args) {
  auto* l = static_cast<StartLog*>(log);
  std::lock_guard<std::mutex> lock(l->mutex);
  if (!l->starting || l->text.size() > 1024) return;
  char line[512];
  vsnprintf(line, sizeof line, format, args);
  l->text += line;
}

Result<int> BindSocket(ListenAddress& address) {
  int family = address.ipv6 ? AF_INET6 : AF_INET;
  int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Status::FromErrno("socket", errno);
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  struct sockaddr_storage ss {};
  socklen_t len;
  if (address.ipv6) {
    auto* a6 = reinterpret_cast<struct sockaddr_in6*>(&ss);
    a6->sin6_family = AF_INET6;
    a6->sin6_port = htons(address.port);
    inet_pton(AF_INET6, address.host.c_str(), &a6->sin6_addr);
    len = sizeof *a6;
  } else {
    auto* a4 = reinterpret_cast<struct sockaddr_in*>(&ss);
    a4->sin_family = AF_INET;
    a4->sin_port = htons(address.port);
    inet_pton(AF_INET, address.host.c_str(), &a4->sin_addr);
    len = sizeof *a4;
  }
  std::string where = address.ipv6 ? fmt::format("[{}]:{}", address.host, address.port)
                                   : fmt::format("{}:{}", address.host, address.port);
  if (bind(fd, reinterpret_cast<struct sockaddr*>(&ss), len) != 0 || listen(fd, 512) != 0) {
    Status s = Status::FromErrno("bind " + where, errno);
    close(fd);
    return s;
  }
  if (getsockname(fd, reinterpret_cast<struct sockaddr*>(&ss), &len) == 0) {
    address.port = ntohs(address.ipv6 ? reinterpret_cast<struct sockaddr_in6*>(&ss)->sin6_port
                                      : reinterpret_cast<struct sockaddr_in*>(&ss)->sin_port);
  }
  return fd;
}

MHD_Result Send(MHD_Connection* connection, const HttpResponse& answer, bool close_after) {
  MHD_Response* response = MHD_create_response_from_buffer(
      answer.body.size(), const_cast<char*>(answer.body.data()), MHD_RESPMEM_MUST_COPY);
  if (response == nullptr) return MHD_NO;
  MHD_add_response_header(response, MHD_HTTP_HEADER_CONTENT_TYPE, answer.content_type.c_str());
  for (const auto& [name, value] : answer.headers) {
    MHD_add_response_header(response, name.c_str(), value.c_str());
  }
  if (close_after) MHD_add_response_header(response, MHD_HTTP_HEADER_CONNECTION, "close");
  MHD_Result queued = MHD_queue_response(connection, answer.status, response);
  MHD_destroy_response(response);
  return queued;
}

std::string_view Header(MHD_Connection* connection, const char* name) {
  const char* v = MHD_lookup_connection_value(connection, MHD_HEADER_KIND, name);
  return v ? std::string_view(v) : std::string_view();
}

}  // namespace

struct HttpServerCallbacks {
  static MHD_Result OnRequest(void* self, MHD_Connection* connection, const char* url,
                              const char* method, const char* version, const char* upload_data,
                              size_t* upload_data_size, void** request_state);
  static void OnCompleted(void* self, MHD_Connection* connection, void** request_state,
                          MHD_RequestTerminationCode why);
  static void OnConnection(void* self, MHD_Connection* connection, void** socket_state,
                           MHD_ConnectionNotificationCode what);
};

Result<std::unique_ptr<HttpServer>> HttpServer::Start(const ListenAddress& address,
                                                      const HttpServerOptions& options,
                                                      Handler handler) {
  std::unique_ptr<HttpServer> s(new HttpServer());
  s->address_ = address;
  s->options_ = options;
  s->handler_ = std::move(handler);
  Result<int> fd = BindSocket(s->address_);
  if (!fd.ok()) return fd.status();
  unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL |
                   MHD_USE_ERROR_LOG;
  if (s->tls()) flags |= MHD_USE_TLS;
  if (address.ipv6) flags |= MHD_USE_IPv6;
  static StartLog log;
  {
    std::lock_guard<std::mutex> lock(log.mutex);
    log.starting = true;
    log.text.clear();
  }
  // The request's head and our answer's headers share this pool.
  size_t memory = options.max_head_bytes * 2;
  MHD_OptionItem tls_options[] = {
      {MHD_OPTION_HTTPS_MEM_CERT, 0, const_cast<char*>(s->options_.tls_cert_pem.c_str())},
      {MHD_OPTION_HTTPS_MEM_KEY, 0, const_cast<char*>(s->options_.tls_key_pem.c_str())},
      {MHD_OPTION_END, 0, nullptr}};
  MHD_OptionItem no_options[] = {{MHD_OPTION_END, 0, nullptr}};
  s->daemon_ =
      MHD_start_daemon(flags, 0, nullptr, nullptr, &HttpServerCallbacks::OnRequest, s.get(),  //
                       MHD_OPTION_LISTEN_SOCKET, *fd,                                         //
                       MHD_OPTION_EXTERNAL_LOGGER, &Log, &log,                                //
                       MHD_OPTION_CONNECTION_LIMIT, static_cast<unsigned>(options.max_connections),
                       MHD_OPTION_PER_IP_CONNECTION_LIMIT,
                       static_cast<unsigned>(options.max_connections_per_address),
                       MHD_OPTION_CONNECTION_TIMEOUT, options.idle_timeout_seconds,  //
                       MHD_OPTION_CONNECTION_MEMORY_LIMIT, memory,                   //
                       MHD_OPTION_THREAD_STACK_SIZE, static_cast<size_t>(256 << 10),
                       MHD_OPTION_NOTIFY_COMPLETED, &HttpServerCallbacks::OnCompleted, s.get(),  //
                       MHD_OPTION_NOTIFY_CONNECTION, &HttpServerCallbacks::OnConnection, s.get(),
                       MHD_OPTION_ARRAY, s->tls() ? tls_options : no_options, MHD_OPTION_END);
  std::lock_guard<std::mutex> lock(log.mutex);
  log.starting = false;
  if (s->daemon_ == nullptr) {
    close(*fd);
    std::string why = log.text.empty() ? "libmicrohttpd would not start" : log.text;
    while (!why.empty() && why.back() == '\n') why.pop_back();
    return Status::Unavailable("serving " + s->bound_address() + ": " + why);
  }
  return s;
}

HttpServer::~HttpServer() {
  if (daemon_ != nullptr) MHD_stop_daemon(daemon_);
}

std::string HttpServer::bound_address() const {
  return address_.ipv6 ? fmt::format("[{}]:{}", address_.host, address_.port)
                       : fmt::format("{}:{}", address_.host, address_.port);
}

HttpServer::Counts HttpServer::counts() const {
  return {requests_.load(), bad_requests_.load(), timeouts_.load(), refused_.load(), open_.load()};
}

MHD_Result HttpServerCallbacks::OnRequest(void* self, MHD_Connection* connection, const char* url,
                                          const char* method, const char* /*version*/,
                                          const char* /*upload_data*/, size_t* upload_data_size,
                                          void** request_state) {
  auto* s = static_cast<HttpServer*>(self);
  std::string_view length = Header(connection, MHD_HTTP_HEADER_CONTENT_LENGTH);
  bool has_body = (!length.empty() && length.find_first_not_of('0') != std::string_view::npos) ||
                  !Header(connection, MHD_HTTP_HEADER_TRANSFER_ENCODING).empty();
  if (*request_state == nullptr) {
    // The head is in. Answering now is an early answer that closes the
    // connection: only for a request over the bound or with a body (which
    // then goes unread). Others are answered on the next call, once
    // libmicrohttpd knows the request is complete, so keep-alive holds.
    *request_state = &kCounted;
    if (s->in_flight_.fetch_add(1) >= s->options_.max_in_flight) {
      ++s->refused_;
      *request_state = &kAnswered;
      return Send(connection, BusyResponse(), true);
    }
    if (!has_body) return MHD_YES;
  } else if (*request_state == &kAnswered) {
    *upload_data_size = 0;  // a body after our answer: discarded
    return MHD_YES;
  }
  *request_state = &kAnswered;
  HttpRequest request;
  request.method = method;
  request.path = url;
  request.authorization = Header(connection, MHD_HTTP_HEADER_AUTHORIZATION);
  request.has_body = has_body;
  HttpResponse answer = s->handler_(request);
  ++s->requests_;
  if (answer.status >= 400 && answer.status < 500) ++s->bad_requests_;
  return Send(connection, answer, has_body);
}

void HttpServerCallbacks::OnCompleted(void* self, MHD_Connection* /*connection*/,
                                      void** request_state, MHD_RequestTerminationCode why) {
  auto* s = static_cast<HttpServer*>(self);
  if (*request_state != &kCounted && *request_state != &kAnswered) return;
  *request_state = nullptr;
  --s->in_flight_;
  if (why == MHD_REQUEST_TERMINATED_TIMEOUT_REACHED) ++s->timeouts_;
}

void HttpServerCallbacks::OnConnection(void* self, MHD_Connection* /*connection*/,
                                       void** /*socket_state*/,
                                       MHD_ConnectionNotificationCode what) {
  auto* s = static_cast<HttpServer*>(self);
  if (what == MHD_CONNECTION_NOTIFY_STARTED) ++s->open_;
  if (what == MHD_CONNECTION_NOTIFY_CLOSED) --s->open_;
}

}  // namespace stallscope

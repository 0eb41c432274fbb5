// Fuzzes the exporter's request handler (what it answers to a request whose
// line and headers libmicrohttpd parsed) and the basic-auth header reader,
// and on the same bytes the hook-record table and the exposition writer fed
// from it: whatever a client sends must never crash the exporter, metrics go
// out only for an authorized GET or HEAD of /metrics, and every other answer
// is a 4xx. The input is an HTTP request head: the request line's method and
// target, then an Authorization header if there is one.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "export/http_request.h"
#include "export/job_metrics.h"
#include "render/exposition.h"

namespace {

std::string_view Field(std::string_view& text, char end) {
  size_t at = text.find(end);
  std::string_view field = text.substr(0, at);
  text = at == std::string_view::npos ? std::string_view() : text.substr(at + 1);
  return field;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  std::string_view rest = text;
  stallscope::HttpRequest request;
  request.method = Field(rest, ' ');
  request.path = Field(rest, ' ');
  size_t auth = rest.find("Authorization: ");
  if (auth != std::string_view::npos) {
    std::string_view header = rest.substr(auth + 15);
    request.authorization = Field(header, '\r');
  }
  request.has_body = rest.find("Content-Length: 1") != std::string_view::npos;
  for (bool with_auth : {false, true}) {
    stallscope::PasswordCheck check;
    if (with_auth) {
      check = [](std::string_view user, std::string_view password) {
        return user == "alice" && password == "secret";
      };
    }
    bool served = false;
    stallscope::HttpResponse r = stallscope::AnswerHttpRequest(request, check, [&]() {
      served = true;
      return stallscope::HttpResponse{};
    });
    bool may_serve = (request.method == "GET" || request.method == "HEAD") &&
                     request.path == "/metrics" && !request.has_body;
    if (served && !may_serve) std::abort();
    if (!served && (r.status < 400 || r.status > 499)) std::abort();
    if (r.status == 401 && r.headers.empty()) std::abort();  // no WWW-Authenticate
    std::string user, password;
    if (with_auth && served &&
        !(stallscope::ParseBasicAuth(request.authorization, user, password) && user == "alice")) {
      std::abort();
    }
  }
  (void)stallscope::ParseListenAddress(text);
  // The same bytes as hook datagrams: the job table stays bounded and its
  // series render.
  stallscope::JobTable table(8, 300);
  table.Ingest(text, 1);
  if (table.processes().size() > 8) std::abort();
  stallscope::Exposition e;
  table.Emit(e, "h", 2);
  if (e.rejected() != 0) std::abort();
  (void)stallscope::RenderExposition(e.families());
  return 0;
}

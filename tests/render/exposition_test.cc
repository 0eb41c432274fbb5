// The exposition writer and the HTTP request parser of the exporter: pure,
// so every rule of the formats is checked on strings.
#include "render/exposition.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "export/http_request.h"
#include "export/http_server.h"

namespace stallscope {
namespace {

TEST(Exposition, HelpTypeThenSamplesWithEscapedLabels) {
  Exposition e;
  e.Family("stallscope_disk_read_bytes_total", MetricType::kCounter, "Bytes read.\nA \\ b");
  e.Add("stallscope_disk_read_bytes_total", {{"device", "sd\"a\\\n"}}, 1024);
  e.Add("stallscope_disk_read_bytes_total", {{"device", "nvme0n1"}}, 0.5);
  EXPECT_EQ(RenderExposition(e.families()),
            "# HELP stallscope_disk_read_bytes_total Bytes read.\\nA \\\\ b\n"
            "# TYPE stallscope_disk_read_bytes_total counter\n"
            "stallscope_disk_read_bytes_total{device=\"sd\\\"a\\\\\\n\"} 1024\n"
            "stallscope_disk_read_bytes_total{device=\"nvme0n1\"} 0.5\n");
}

TEST(Exposition, FamilyWithoutSamplesPrintsNothingAndFamiliesKeepTheirOrder) {
  Exposition e;
  e.Family("b_bytes", MetricType::kGauge, "b");
  e.Family("a_bytes", MetricType::kGauge, "a");
  e.Family("empty_bytes", MetricType::kGauge, "nothing");
  e.Add("a_bytes", {}, 1);
  e.Add("b_bytes", {}, 2);
  e.Family("b_bytes", MetricType::kCounter, "ignored: exists");
  EXPECT_EQ(RenderExposition(e.families()),
            "# HELP b_bytes b\n# TYPE b_bytes gauge\nb_bytes 2\n"
            "# HELP a_bytes a\n# TYPE a_bytes gauge\na_bytes 1\n");
}

TEST(Exposition, ValuesAsGoFloats) {
  EXPECT_EQ(FormatMetricValue(0), "0");
  EXPECT_EQ(FormatMetricValue(42), "42");
  EXPECT_EQ(FormatMetricValue(0.25), "0.25");
  EXPECT_EQ(FormatMetricValue(1e21), "1e+21");
  EXPECT_EQ(FormatMetricValue(std::nan("")), "NaN");
  EXPECT_EQ(FormatMetricValue(std::numeric_limits<double>::infinity()), "+Inf");
  EXPECT_EQ(FormatMetricValue(-std::numeric_limits<double>::infinity()), "-Inf");
  EXPECT_EQ(FormatMetricValue(18446744073709551615.0), "1.8446744073709552e+19");
}

TEST(Exposition, BadNamesAreRefusedNotPrinted) {
  EXPECT_TRUE(IsValidMetricName("stallscope_x:y_total"));
  EXPECT_FALSE(IsValidMetricName("9lives"));
  EXPECT_FALSE(IsValidMetricName("a-b"));
  EXPECT_FALSE(IsValidMetricName(""));
  EXPECT_TRUE(IsValidLabelName("device"));
  EXPECT_FALSE(IsValidLabelName("__name__"));
  EXPECT_FALSE(IsValidLabelName("a:b"));
  Exposition e;
  e.Family("ok_bytes", MetricType::kGauge, "h");
  e.Add("ok_bytes", {{"bad-label", "x"}}, 1);
  e.Add("missing_family", {}, 1);
  EXPECT_EQ(e.rejected(), 2);
  EXPECT_EQ(RenderExposition(e.families()), "");
}

TEST(Exposition, HistogramIsCumulativeWithInfSumAndCount) {
  Exposition e;
  e.Family("step_seconds", MetricType::kHistogram, "h");
  e.AddHistogram("step_seconds", {{"rank", "0"}}, {0.1, 1}, {2, 5}, 3.5, 6);
  EXPECT_EQ(RenderExposition(e.families()),
            "# HELP step_seconds h\n# TYPE step_seconds histogram\n"
            "step_seconds_bucket{rank=\"0\",le=\"0.1\"} 2\n"
            "step_seconds_bucket{rank=\"0\",le=\"1\"} 5\n"
            "step_seconds_bucket{rank=\"0\",le=\"+Inf\"} 6\n"
            "step_seconds_sum{rank=\"0\"} 3.5\n"
            "step_seconds_count{rank=\"0\"} 6\n");
}

using State = HttpParseResult::State;

TEST(HttpRequest, CompleteGetWithHeaders) {
  std::string req = "GET /metrics?x=1 HTTP/1.1\r\nHost: a\r\nAccept: */*\r\n\r\nextra";
  HttpParseResult r = ParseHttpRequestHead(req, 8192);
  ASSERT_EQ(r.state, State::kComplete) << r.reason;
  EXPECT_EQ(r.head.method, "GET");
  EXPECT_EQ(r.head.path, "/metrics");
  EXPECT_EQ(r.head.target, "/metrics?x=1");
  EXPECT_EQ(r.head.minor_version, 1);
  EXPECT_EQ(r.head.head_bytes, req.size() - 5);
}

TEST(HttpRequest, IncompleteUntilTheBlankLineAndEveryPrefixIsIncomplete) {
  std::string req = "\r\nGET /metrics HTTP/1.0\nHost: x\n\n";
  for (size_t n = 0; n < req.size(); ++n) {
    EXPECT_EQ(ParseHttpRequestHead(req.substr(0, n), 8192).state, State::kIncomplete) << n;
  }
  HttpParseResult r = ParseHttpRequestHead(req, 8192);
  ASSERT_EQ(r.state, State::kComplete);
  EXPECT_EQ(r.head.minor_version, 0);
}

TEST(HttpRequest, AbsoluteFormKeepsThePath) {
  HttpParseResult r = ParseHttpRequestHead("GET http://h:9400/metrics HTTP/1.1\r\n\r\n", 8192);
  ASSERT_EQ(r.state, State::kComplete);
  EXPECT_EQ(r.head.path, "/metrics");
}

TEST(HttpRequest, ErrorsCarryTheirStatus) {
  struct Case {
    const char* text;
    int status;
  } cases[] = {
      {"GET /metrics\r\n\r\n", 400},
      {"GET  /metrics HTTP/1.1\r\n\r\n", 400},
      {"GET /metrics HTTP/2.0\r\n\r\n", 505},
      {"GET /metrics FTP/1.1\r\n\r\n", 400},
      {"G(T /metrics HTTP/1.1\r\n\r\n", 400},
      {"GET metrics HTTP/1.1\r\n\r\n", 400},
      {"GET /metrics HTTP/1.1\r\nNo colon here\r\n\r\n", 400},
      {"GET /metrics HTTP/1.1\r\nA: b\r\n folded\r\n\r\n", 400},
      {"GET /metrics HTTP/1.1\r\nA: b\x01\r\n\r\n", 400},
      {"GET /\x01 HTTP/1.1\r\n\r\n", 400},
  };
  for (const Case& c : cases) {
    HttpParseResult r = ParseHttpRequestHead(c.text, 8192);
    EXPECT_EQ(r.state, State::kError) << c.text;
    EXPECT_EQ(r.status, c.status) << c.text;
    EXPECT_FALSE(r.reason.empty());
  }
  // Binary garbage fails at once, before any line end.
  EXPECT_EQ(ParseHttpRequestHead(std::string("\x16\x03\x01\x02\x00", 5), 8192).state,
            State::kError);
}

TEST(HttpRequest, HeadOverTheBoundIs431EvenWithoutALineEnd) {
  std::string big = "GET /metrics HTTP/1.1\r\nX: " + std::string(9000, 'a');
  EXPECT_EQ(ParseHttpRequestHead(big, 8192).status, 431);
  EXPECT_EQ(ParseHttpRequestHead(std::string(9000, 'A'), 8192).status, 431);
  std::string many = "GET / HTTP/1.1\r\n";
  while (many.size() < 9000) many += "A: b\r\n";
  EXPECT_EQ(ParseHttpRequestHead(many + "\r\n", 8192).status, 431);
}

TEST(HttpResponse, SerializedWithLengthAndClose) {
  HttpResponse r{405, "text/plain", "no\n", {{"Allow", "GET, HEAD"}}};
  EXPECT_EQ(SerializeHttpResponse(r, false),
            "HTTP/1.1 405 Method Not Allowed\r\nContent-Type: text/plain\r\nContent-Length: 3\r\n"
            "Allow: GET, HEAD\r\nConnection: close\r\n\r\nno\n");
  EXPECT_EQ(SerializeHttpResponse(r, true).find("no\n"), std::string::npos);
}

TEST(ListenAddress, ParsesAndJudgesLoopback) {
  Result<ListenAddress> a = ParseListenAddress("127.0.0.1:9400");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->port, 9400);
  EXPECT_TRUE(a->loopback);
  a = ParseListenAddress("0.0.0.0:0");
  ASSERT_TRUE(a.ok());
  EXPECT_FALSE(a->loopback);
  a = ParseListenAddress("[::1]:9400");
  ASSERT_TRUE(a.ok());
  EXPECT_TRUE(a->ipv6);
  EXPECT_TRUE(a->loopback);
  a = ParseListenAddress("localhost:1");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->host, "127.0.0.1");
  for (const char* bad : {"9400", "127.0.0.1:", "127.0.0.1:65536", "host.example:80", "::1:80",
                          "[::1]9400", "1.2.3:80", "127.0.0.1:-1"}) {
    EXPECT_FALSE(ParseListenAddress(bad).ok()) << bad;
  }
}

}  // namespace
}  // namespace stallscope

// The exposition writer and the HTTP request parser of the exporter: pure,
// so every rule of the formats is checked on strings.
#include "render/exposition.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "export/http_request.h"

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

HttpResponse Served() { return {200, "text/plain", "metrics\n", {}}; }

TEST(HttpAnswer, MetricsOnlyForGetOrHeadOfTheMetricsPath) {
  EXPECT_EQ(AnswerHttpRequest({"GET", "/metrics", "", false}, nullptr, Served).body, "metrics\n");
  EXPECT_EQ(AnswerHttpRequest({"HEAD", "/metrics", "", false}, nullptr, Served).status, 200);
  HttpResponse post = AnswerHttpRequest({"POST", "/metrics", "", false}, nullptr, Served);
  EXPECT_EQ(post.status, 405);
  ASSERT_EQ(post.headers.size(), 1u);
  EXPECT_EQ(post.headers[0].second, "GET, HEAD");
  EXPECT_EQ(AnswerHttpRequest({"GET", "/nope", "", false}, nullptr, Served).status, 404);
  EXPECT_EQ(AnswerHttpRequest({"GET", "/metrics", "", true}, nullptr, Served).status, 413);
  EXPECT_EQ(BusyResponse().status, 503);
}

TEST(HttpAnswer, BasicAuthIsCheckedBeforeAnythingElse) {
  PasswordCheck check = [](std::string_view u, std::string_view p) {
    return u == "alice" && p == "s:cret";
  };
  // "alice:s:cret" and "alice:wrong" in base64.
  EXPECT_EQ(
      AnswerHttpRequest({"GET", "/metrics", "Basic YWxpY2U6czpjcmV0", false}, check, Served).status,
      200);
  for (const char* bad : {"", "Basic YWxpY2U6d3Jvbmc=", "Bearer YWxpY2U6czpjcmV0", "Basic !!!"}) {
    HttpResponse r = AnswerHttpRequest({"GET", "/metrics", bad, false}, check, Served);
    EXPECT_EQ(r.status, 401) << bad;
    ASSERT_FALSE(r.headers.empty());
    EXPECT_EQ(r.headers[0].first, "WWW-Authenticate");
  }
  EXPECT_EQ(AnswerHttpRequest({"DELETE", "/metrics", "", false}, check, Served).status, 401);
}

TEST(HttpAnswer, BasicAuthHeaderDecodes) {
  std::string user, password;
  ASSERT_TRUE(ParseBasicAuth("basic  dTpw ", user, password));
  EXPECT_EQ(user, "u");
  EXPECT_EQ(password, "p");
  EXPECT_FALSE(ParseBasicAuth("Basic dXNlcg==", user, password));  // "user": no colon
  EXPECT_FALSE(ParseBasicAuth("Basic d", user, password));
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

// The Prometheus text exposition format, version 0.0.4: metric families in,
// the body of a GET /metrics answer out.
//
// Pure (no I/O); thread-compatible. Rules of the format that matter here
// (prometheus.io/docs/instrumenting/exposition_formats): one `# HELP` and
// one `# TYPE` line per family, before its samples, each family once; label
// values escape backslash, double quote and line feed (\\, \", \n); HELP
// text escapes backslash and line feed; values are Go floats, with NaN,
// +Inf and -Inf spelled so. Naming follows the Prometheus conventions that
// `promtool check metrics` lints: base units in the name (_bytes,
// _seconds), counters end in _total. A family without samples prints
// nothing. Invalid metric or label names are a programming error here: the
// writer checks them in Add() and drops the sample with a note rather than
// emit a body Prometheus would reject as a whole.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace stallscope {

enum class MetricType { kCounter, kGauge, kHistogram, kSummary, kUntyped };

struct MetricLabel {
  std::string name;
  std::string value;
};

struct MetricSample {
  std::string suffix;  // "" or, for histograms, "_bucket" / "_sum" / "_count"
  std::vector<MetricLabel> labels;
  double value = 0;
};

struct MetricFamily {
  std::string name;
  MetricType type = MetricType::kGauge;
  std::string help;
  std::vector<MetricSample> samples;
};

// [a-zA-Z_:][a-zA-Z0-9_:]* ; label names the same without ':' and not "__"-led.
bool IsValidMetricName(std::string_view name);
bool IsValidLabelName(std::string_view name);
std::string EscapeLabelValue(std::string_view value);
std::string EscapeHelp(std::string_view help);
// Shortest text that reads back as the same double ("1", "0.25", "1e+21",
// "NaN", "+Inf").
std::string FormatMetricValue(double value);

// Builds the families of one scrape in the order they are first named.
class Exposition {
 public:
  // The family `name`, created with type and help on first use.
  MetricFamily& Family(std::string_view name, MetricType type, std::string_view help);
  // One sample of family `name` (which must exist).
  void Add(std::string_view name, std::vector<MetricLabel> labels, double value,
           std::string_view suffix = "");
  // A histogram's samples from cumulative bucket counts (upper bounds
  // ascending, +Inf added), sum and count.
  void AddHistogram(std::string_view name, const std::vector<MetricLabel>& labels,
                    const std::vector<double>& upper_bounds,
                    const std::vector<uint64_t>& cumulative_counts, double sum, uint64_t count);
  const std::vector<MetricFamily>& families() const { return families_; }
  // Samples refused for a bad name: should stay 0; exported as a metric.
  int rejected() const { return rejected_; }

 private:
  MetricFamily* Find(std::string_view name);
  std::vector<MetricFamily> families_;
  int rejected_ = 0;
};

std::string RenderExposition(const std::vector<MetricFamily>& families);

inline constexpr std::string_view kExpositionContentType =
    "text/plain; version=0.0.4; charset=utf-8";

}  // namespace stallscope

#include "render/exposition.h"

#include <fmt/format.h>

#include <cmath>

namespace stallscope {
namespace {

bool NameChar(char c, bool first, bool colon) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_') return true;
  if (colon && c == ':') return true;
  return !first && c >= '0' && c <= '9';
}

std::string_view TypeName(MetricType type) {
  switch (type) {
    case MetricType::kCounter:
      return "counter";
    case MetricType::kGauge:
      return "gauge";
    case MetricType::kHistogram:
      return "histogram";
    case MetricType::kSummary:
      return "summary";
    case MetricType::kUntyped:
      return "untyped";
  }
  return "untyped";
}

}  // namespace

bool IsValidMetricName(std::string_view name) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    if (!NameChar(name[i], i == 0, true)) return false;
  }
  return true;
}

bool IsValidLabelName(std::string_view name) {
  if (name.empty() || name.starts_with("__")) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    if (!NameChar(name[i], i == 0, false)) return false;
  }
  return true;
}

std::string EscapeLabelValue(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string EscapeHelp(std::string_view help) {
  std::string out;
  out.reserve(help.size());
  for (char c : help) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string FormatMetricValue(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  return fmt::format("{}", value);
}

MetricFamily* Exposition::Find(std::string_view name) {
  for (MetricFamily& f : families_) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

MetricFamily& Exposition::Family(std::string_view name, MetricType type, std::string_view help) {
  if (MetricFamily* f = Find(name)) return *f;
  families_.push_back(MetricFamily{std::string(name), type, std::string(help), {}});
  return families_.back();
}

void Exposition::Add(std::string_view name, std::vector<MetricLabel> labels, double value,
                     std::string_view suffix) {
  MetricFamily* f = Find(name);
  bool ok = f != nullptr && IsValidMetricName(name);
  for (const MetricLabel& l : labels) ok = ok && IsValidLabelName(l.name);
  if (!ok) {
    ++rejected_;
    return;
  }
  f->samples.push_back(MetricSample{std::string(suffix), std::move(labels), value});
}

void Exposition::AddHistogram(std::string_view name, const std::vector<MetricLabel>& labels,
                              const std::vector<double>& upper_bounds,
                              const std::vector<uint64_t>& cumulative_counts, double sum,
                              uint64_t count) {
  for (size_t i = 0; i < upper_bounds.size() && i < cumulative_counts.size(); ++i) {
    std::vector<MetricLabel> l = labels;
    l.push_back({"le", FormatMetricValue(upper_bounds[i])});
    Add(name, std::move(l), static_cast<double>(cumulative_counts[i]), "_bucket");
  }
  std::vector<MetricLabel> inf = labels;
  inf.push_back({"le", "+Inf"});
  Add(name, std::move(inf), static_cast<double>(count), "_bucket");
  Add(name, labels, sum, "_sum");
  Add(name, labels, static_cast<double>(count), "_count");
}

std::string RenderExposition(const std::vector<MetricFamily>& families) {
  std::string out;
  for (const MetricFamily& f : families) {
    if (f.samples.empty()) continue;
    out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", f.name, EscapeHelp(f.help), f.name,
                       TypeName(f.type));
    for (const MetricSample& s : f.samples) {
      out += f.name;
      out += s.suffix;
      if (!s.labels.empty()) {
        out += '{';
        for (size_t i = 0; i < s.labels.size(); ++i) {
          if (i) out += ',';
          out += s.labels[i].name;
          out += "=\"";
          out += EscapeLabelValue(s.labels[i].value);
          out += '"';
        }
        out += '}';
      }
      out += ' ';
      out += FormatMetricValue(s.value);
      out += '\n';
    }
  }
  return out;
}

}  // namespace stallscope

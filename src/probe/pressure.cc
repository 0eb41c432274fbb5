#include "probe/pressure.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <span>

#include "core/file.h"
#include "core/text.h"

namespace stallscope {
namespace {

struct Key {
  std::string_view name;
  double PressureLine::*percent;  // nullptr for "total"
};
constexpr Key kKeys[] = {
    {"avg10", &PressureLine::avg10_percent},
    {"avg60", &PressureLine::avg60_percent},
    {"avg300", &PressureLine::avg300_percent},
    {"total", nullptr},
};

Result<PressureLine> ParseLine(std::span<const std::string_view> words, std::string_view source,
                               int line_number) {
  PressureLine line;
  bool seen[std::size(kKeys)] = {};
  for (size_t i = 1; i < words.size(); ++i) {
    std::string_view word = words[i];
    size_t equals = word.find('=');
    if (equals == std::string_view::npos) {
      return Status::ParseError(source, line_number,
                                "expected key=value, got '" + std::string(word) + "'");
    }
    std::string_view name = word.substr(0, equals);
    std::string_view value = word.substr(equals + 1);
    size_t k = 0;
    while (k < std::size(kKeys) && kKeys[k].name != name) ++k;
    if (k == std::size(kKeys)) continue;  // a key from a future kernel
    if (kKeys[k].percent == nullptr) {
      std::optional<uint64_t> total = ParseUint(value);
      if (!total) return Status::ParseError(source, line_number, "total: not a number");
      line.total_us = *total;
    } else {
      std::optional<double> percent = ParseDouble(value);
      // The kernel prints 0.00..100.00; nan, inf or a negative value would
      // poison every comparison downstream.
      if (!percent || !std::isfinite(*percent) || *percent < 0 || *percent > 100) {
        return Status::ParseError(source, line_number, std::string(name) + ": not a percentage");
      }
      line.*kKeys[k].percent = *percent;
    }
    seen[k] = true;
  }
  for (size_t k = 0; k < std::size(kKeys); ++k) {
    if (!seen[k]) {
      return Status::ParseError(source, line_number, "missing " + std::string(kKeys[k].name));
    }
  }
  return line;
}

}  // namespace

Result<Pressure> ParsePressure(std::string_view text, std::string_view source) {
  Pressure pressure;
  int line_number = 0;
  for (std::string_view raw : SplitLines(text)) {
    ++line_number;
    // "some" and 4 keys today; a line with many more (a future kernel) is
    // split the allocating way.
    std::string_view fixed[8];
    std::vector<std::string_view> more;
    std::span<const std::string_view> words(
        fixed, std::min(SplitFieldsInto(raw, fixed), std::size(fixed)));
    if (words.size() == std::size(fixed)) {
      more = SplitFields(raw);
      words = more;
    }
    if (words.empty()) continue;
    std::optional<PressureLine>* target = nullptr;
    if (words[0] == "some") target = &pressure.some;
    if (words[0] == "full") target = &pressure.full;
    if (target == nullptr) {
      return Status::ParseError(source, line_number,
                                "expected 'some' or 'full', got '" + std::string(words[0]) + "'");
    }
    Result<PressureLine> line = ParseLine(words, source, line_number);
    if (!line.ok()) return line.status();
    *target = *line;
  }
  if (!pressure.some && !pressure.full) {
    return Status::ParseError(source, 0, "no 'some' or 'full' line");
  }
  pressure.present = true;
  return pressure;
}

Result<Pressure> ReadPressureFile(const std::string& path) {
  Result<std::string> text = ReadFile(path, 1 << 16);
  if (!text.ok()) {
    // Absent (no PSI in this kernel) or unreadable (psi=0 gives EOPNOTSUPP,
    // a locked-down container gives EACCES): either way there is no
    // pressure to report, and the rest of the snapshot still stands.
    if (text.status().code() == Status::Code::kParseError) return text.status();
    return Pressure{};
  }
  return ParsePressure(*text, path);
}

Result<HostPressure> ReadHostPressure(const Root& root) {
  HostPressure host;
  struct Resource {
    const char* path;
    Pressure HostPressure::*field;
  };
  static constexpr Resource kResources[] = {
      {"/proc/pressure/cpu", &HostPressure::cpu},
      {"/proc/pressure/memory", &HostPressure::memory},
      {"/proc/pressure/io", &HostPressure::io},
      {"/proc/pressure/irq", &HostPressure::irq},
  };
  for (const Resource& resource : kResources) {
    Result<Pressure> pressure = ReadPressureFile(root.Path(resource.path));
    if (!pressure.ok()) return pressure.status();
    host.*resource.field = *pressure;
  }
  return host;
}

}  // namespace stallscope

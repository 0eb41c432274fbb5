// The names of layers and severities, as reports and run files spell them.
#include "sample/finding.h"

#include <algorithm>
#include <iterator>

namespace stallscope {

std::string_view LayerName(Layer layer) {
  switch (layer) {
    case Layer::kMemory:
      return "memory";
    case Layer::kIo:
      return "io";
    case Layer::kNetwork:
      return "network";
    case Layer::kDistributed:
      return "distributed";
    case Layer::kCode:
      return "code";
  }
  return "unknown";
}

std::string_view SeverityName(Severity severity) {
  switch (severity) {
    case Severity::kInfo:
      return "info";
    case Severity::kWarning:
      return "warning";
    case Severity::kCritical:
      return "critical";
  }
  return "unknown";
}

std::optional<Layer> LayerFromName(std::string_view name) {
  for (Layer layer : kTriageOrder) {
    if (LayerName(layer) == name) return layer;
  }
  return std::nullopt;
}

std::optional<Severity> SeverityFromName(std::string_view name) {
  for (Severity severity : {Severity::kInfo, Severity::kWarning, Severity::kCritical}) {
    if (SeverityName(severity) == name) return severity;
  }
  return std::nullopt;
}

void Append(FindingsWithNotes& into, FindingsWithNotes more) {
  into.findings.insert(into.findings.end(), std::make_move_iterator(more.findings.begin()),
                       std::make_move_iterator(more.findings.end()));
  into.notes.insert(into.notes.end(), std::make_move_iterator(more.notes.begin()),
                    std::make_move_iterator(more.notes.end()));
}

}  // namespace stallscope

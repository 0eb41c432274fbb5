// Finding, Verdict and Report: the analysis contract of docs/findings.md.
//
// A Finding is one rule's conclusion: a stable id from the catalog, the layer
// of the triage it belongs to, a severity, a one-line summary in the user's
// words, the evidence (the numbers it saw, in order), the next check to run
// and, where the cost can be measured, its impact on the job's wall time.
// Plain data, built by the pure rules in analyze/ and printed by render/.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace stallscope {

// The triage order: memory problems masquerade as IO problems, IO as network,
// network as code bugs, so earlier layers are judged first.
enum class Layer { kMemory, kIo, kNetwork, kDistributed, kCode };
inline constexpr Layer kTriageOrder[] = {Layer::kMemory, Layer::kIo, Layer::kNetwork,
                                         Layer::kDistributed, Layer::kCode};
std::string_view LayerName(Layer layer);
std::optional<Layer> LayerFromName(std::string_view name);  // nullopt: not a layer

enum class Severity { kInfo, kWarning, kCritical };
std::string_view SeverityName(Severity severity);
std::optional<Severity> SeverityFromName(std::string_view name);

using EvidenceValue = std::variant<double, int64_t, std::string, bool>;

struct Evidence {
  std::string name;  // unit in the name: "available_bytes", "swap_in_pages_per_s"
  EvidenceValue value;
};

// The share of the job's time a finding costs, where it can be measured.
struct Impact {
  double wall_fraction = 0;  // 0..1
  std::optional<double> seconds_per_epoch;
  std::string basis;  // how it was measured, e.g. "PSI memory some avg10"
};

struct Finding {
  std::string id;  // catalog id, e.g. "memory.swap_active"
  Layer layer = Layer::kMemory;
  Severity severity = Severity::kInfo;
  std::string summary;
  std::vector<Evidence> evidence;
  std::string next;  // the check to run next, as a command where possible
  std::optional<Impact> impact;
};

struct Verdict {
  std::optional<Layer> layer;  // nullopt: "none", a healthy run
  std::string finding;         // id of the deciding finding
  std::string summary;
};

// What one layer looked like: checked or not, and its worst severity.
struct LayerStatus {
  Layer layer;
  bool checked = false;
  std::optional<Severity> worst;  // nullopt: checked and nothing found
};

struct Report {
  std::vector<Finding> findings;  // in triage order, most severe first per layer
  Verdict verdict;
  std::vector<LayerStatus> layers;
  std::vector<std::string> notes;  // what could not be read: degradations, not errors
};

// Findings with the notes that go with them (what could not be judged, and
// why): what a set of rules concludes, and what a run file keeps beside its
// timeline (store/run_file.h).
struct FindingsWithNotes {
  std::vector<Finding> findings;
  std::vector<std::string> notes;
};

// Moves `more`'s findings and notes to the end of `into`'s, in their order.
void Append(FindingsWithNotes& into, FindingsWithNotes more);

}  // namespace stallscope

// libFuzzer target: the decoder of the run file's stored findings
// (store/stored_findings.h), which reads evidence_json and impact_json back
// from a file anyone can edit with sqlite3. Whatever decodes must encode and
// decode again to the same evidence (names, kinds, values) and impact.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "store/stored_findings.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace stallscope;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  if (Result<std::vector<Evidence>> e = store::EvidenceFromJsonText(text, "fuzz"); e.ok()) {
    Result<std::vector<Evidence>> again =
        store::EvidenceFromJsonText(store::EvidenceToJsonText(*e), "again");
    if (!again.ok() || again->size() != e->size()) std::abort();
    for (size_t i = 0; i < e->size(); ++i) {
      if ((*again)[i].name != (*e)[i].name || (*again)[i].value != (*e)[i].value) std::abort();
    }
  }
  if (Result<Impact> i = store::ImpactFromJsonText(text, "fuzz"); i.ok()) {
    Result<Impact> again = store::ImpactFromJsonText(store::ImpactToJsonText(*i), "again");
    if (!again.ok() || again->wall_fraction != i->wall_fraction ||
        again->seconds_per_epoch != i->seconds_per_epoch || again->basis != i->basis) {
      std::abort();
    }
  }
  return 0;
}

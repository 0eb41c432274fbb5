// libFuzzer target: ExpandSlurmHostList, the reader of SLURM_JOB_NODELIST
// ("node[01-04,07],gpu5"), and ExpandRunFileName (--out's %h/%r). A list
// that expands has at least one host, none empty and none with a bracket.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "dist/node_layout.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // Bounded: a range of a million hosts is legal and slow to fuzz.
  if (size > 256) return 0;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto hosts = stallscope::ExpandSlurmHostList(text);
  if (hosts.ok()) {
    if (hosts->empty()) std::abort();
    for (const std::string& h : *hosts) {
      if (h.empty() || h.find_first_of("[]") != std::string::npos) std::abort();
    }
  }
  (void)stallscope::ExpandRunFileName(text, "host", 3);
  return 0;
}

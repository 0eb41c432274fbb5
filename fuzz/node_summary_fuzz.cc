// libFuzzer target: ParseNodeSummary, the parser of the node summaries that
// `stallscope cluster` ranks send to rank 0 (dist/node_summary.h). A parsed
// summary must serialise to text that parses back to the same summary.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "dist/node_summary.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  stallscope::Result<stallscope::NodeSummary> node = stallscope::ParseNodeSummary(text, "fuzz");
  if (node.ok()) {
    std::string wire = stallscope::SerializeNodeSummary(*node);
    stallscope::Result<stallscope::NodeSummary> again = stallscope::ParseNodeSummary(wire, "again");
    if (!again.ok() || !(*again == *node)) std::abort();
  }
  return 0;
}

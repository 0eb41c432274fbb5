#include "sample/h2d.h"

namespace stallscope {

std::string_view HostMemoryName(HostMemory memory) {
  return memory == HostMemory::kPinned ? "pinned" : "pageable";
}

std::string_view CopyDirectionName(CopyDirection direction) {
  return direction == CopyDirection::kHostToDevice ? "h2d" : "d2h";
}

}  // namespace stallscope

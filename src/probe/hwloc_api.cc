// hwloc's function table, filled from the library on first use (see hwloc_api.h).
#include "probe/hwloc_api.h"

#include "core/lazy_library.h"

namespace stallscope {

const HwlocApi* Hwloc(std::string& why) {
  struct Loaded {
    HwlocApi table;
    bool complete = true;
    std::string why;
  };
  static const Loaded loaded = [] {
    static LazyLibrary library("libhwloc.so.15", "libhwloc15", /*global=*/true);
    Loaded l;
#define STALLSCOPE_HWLOC_LOAD(name)                                                      \
  if (l.complete) {                                                                      \
    l.table.name = reinterpret_cast<decltype(l.table.name)>(library.Find(#name, l.why)); \
    l.complete = l.table.name != nullptr;                                                \
  }
    STALLSCOPE_HWLOC_FUNCTIONS(STALLSCOPE_HWLOC_LOAD)
#undef STALLSCOPE_HWLOC_LOAD
    return l;
  }();
  if (!loaded.complete) {
    why = loaded.why;
    return nullptr;
  }
  return &loaded.table;
}

}  // namespace stallscope

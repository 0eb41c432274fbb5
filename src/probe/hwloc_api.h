// hwloc's functions that the topology reader (probe/topology_hwloc.cc)
// calls, looked up in libhwloc.so.15 on first use rather than linked: the
// library and libudev, which it links, were opened and relocated at every
// start of every command (core/lazy_library.h), and only the commands that
// take a snapshot (snapshot, doctor, run, cluster) read the topology. Opened
// with RTLD_GLOBAL: hwloc's plugins (hwloc_pci, ...) use its symbols. Include this instead of
// <hwloc.h>, and call only the functions listed: hwloc's header-inline helpers
// (hwloc_get_obj_by_type, hwloc_get_next_osdev, ...) would reference the
// library directly and fail to link. Thread-safe.
#pragma once

#include <hwloc.h>

#include <string>

// Every function called, once.
#define STALLSCOPE_HWLOC_FUNCTIONS(X) \
  X(hwloc_bitmap_first)               \
  X(hwloc_bitmap_list_snprintf)       \
  X(hwloc_bitmap_weight)              \
  X(hwloc_get_nbobjs_by_depth)        \
  X(hwloc_get_obj_by_depth)           \
  X(hwloc_get_type_depth)             \
  X(hwloc_topology_destroy)           \
  X(hwloc_topology_init)              \
  X(hwloc_topology_load)              \
  X(hwloc_topology_set_flags)         \
  X(hwloc_topology_set_io_types_filter)

namespace stallscope {

struct HwlocApi {
#define STALLSCOPE_HWLOC_MEMBER(name) decltype(&::name) name = nullptr;
  STALLSCOPE_HWLOC_FUNCTIONS(STALLSCOPE_HWLOC_MEMBER)
#undef STALLSCOPE_HWLOC_MEMBER
};

// The table, filled on the first call; nullptr when libhwloc.so.15 (Debian's
// libhwloc15) or one of its functions is missing, with the reason in `why`.
const HwlocApi* Hwloc(std::string& why);

}  // namespace stallscope

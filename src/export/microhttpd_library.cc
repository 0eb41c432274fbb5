// libmicrohttpd loaded on first use: see microhttpd_library.h.
#include "export/microhttpd_library.h"

#include <dlfcn.h>

#include <mutex>
#include <string>
#include <type_traits>

namespace stallscope {
namespace {

// Each function by its name; false (with `missing` set) when one is absent.
bool Bind(void* handle, MicrohttpdLibrary& l, std::string& missing) {
  auto bind = [&](auto& slot, const char* name) {
    slot = reinterpret_cast<std::remove_reference_t<decltype(slot)>>(dlsym(handle, name));
    if (slot == nullptr && missing.empty()) missing = name;
  };
  bind(l.start_daemon, "MHD_start_daemon");
  bind(l.stop_daemon, "MHD_stop_daemon");
  bind(l.create_response_from_buffer, "MHD_create_response_from_buffer");
  bind(l.add_response_header, "MHD_add_response_header");
  bind(l.queue_response, "MHD_queue_response");
  bind(l.destroy_response, "MHD_destroy_response");
  bind(l.lookup_connection_value, "MHD_lookup_connection_value");
  return missing.empty();
}

}  // namespace

Result<const MicrohttpdLibrary*> LoadMicrohttpd() {
  static std::once_flag once;
  static MicrohttpdLibrary library;
  static Status status;
  std::call_once(once, [] {
    const std::string soname = STALLSCOPE_MICROHTTPD_SONAME;
    void* handle = dlopen(soname.c_str(), RTLD_NOW | RTLD_LOCAL);
    std::string missing;
    if (handle == nullptr) {
      status = Status::Unavailable("the exporter's HTTP server needs " + soname + " (Debian's " +
                                   STALLSCOPE_MICROHTTPD_PACKAGE + "): " + dlerror());
    } else if (!Bind(handle, library, missing)) {
      status = Status::Unavailable(soname + " lacks " + missing + ": not the libmicrohttpd " +
                                   "stallscope was built with");
    }
  });
  if (!status.ok()) return status;
  return &library;
}

}  // namespace stallscope

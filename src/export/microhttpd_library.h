// libmicrohttpd, loaded (dlopen) when the exporter first starts its HTTP
// server rather than linked: linked, it and GnuTLS behind it were loaded by
// every command at start, about 1.1 ms of CPU (a quarter of `stallscope
// trace` on a small trace, where HTA's comparison is closest). The functions
// the server calls, with libmicrohttpd's own types; the package still
// depends on Debian's libmicrohttpd12 (packaging/depends.cmake).
#pragma once

#include <microhttpd.h>

#include "core/status.h"

namespace stallscope {

struct MicrohttpdLibrary {
  decltype(&MHD_start_daemon) start_daemon = nullptr;
  decltype(&MHD_stop_daemon) stop_daemon = nullptr;
  decltype(&MHD_create_response_from_buffer) create_response_from_buffer = nullptr;
  decltype(&MHD_add_response_header) add_response_header = nullptr;
  decltype(&MHD_queue_response) queue_response = nullptr;
  decltype(&MHD_destroy_response) destroy_response = nullptr;
  decltype(&MHD_lookup_connection_value) lookup_connection_value = nullptr;
};

// The library, loaded once (thread-safe); an error naming it and its Debian
// package when it is missing or lacks a function.
Result<const MicrohttpdLibrary*> LoadMicrohttpd();

}  // namespace stallscope

// libmicrohttpd's functions that the exporter calls, looked up in the
// library on first use (core/lazy_library.h says why: it and GnuTLS with its
// dependencies were loaded on every start of every command), under their
// own names: include this instead of <microhttpd.h>. A function not listed
// here fails to link, which is the reminder to list it. Thread-safe.
#pragma once

#include <microhttpd.h>

// Every function called, once.
#define STALLSCOPE_MICROHTTPD_FUNCTIONS(X) \
  X(MHD_add_response_header)               \
  X(MHD_create_response_from_buffer)       \
  X(MHD_destroy_response)                  \
  X(MHD_lookup_connection_value)           \
  X(MHD_queue_response)                    \
  X(MHD_start_daemon)                      \
  X(MHD_stop_daemon)

namespace stallscope {

struct MicroHttpdApi {
#define STALLSCOPE_MICROHTTPD_MEMBER(name) decltype(&::name) name = nullptr;
  STALLSCOPE_MICROHTTPD_FUNCTIONS(STALLSCOPE_MICROHTTPD_MEMBER)
#undef STALLSCOPE_MICROHTTPD_MEMBER
};

// The table, filled on the first call (libmicrohttpd.so.12, Debian's
// libmicrohttpd12).
const MicroHttpdApi& MicroHttpd();

}  // namespace stallscope

#ifndef STALLSCOPE_MICROHTTPD_TABLE_ONLY
#define MHD_add_response_header (::stallscope::MicroHttpd().MHD_add_response_header)
#define MHD_create_response_from_buffer (::stallscope::MicroHttpd().MHD_create_response_from_buffer)
#define MHD_destroy_response (::stallscope::MicroHttpd().MHD_destroy_response)
#define MHD_lookup_connection_value (::stallscope::MicroHttpd().MHD_lookup_connection_value)
#define MHD_queue_response (::stallscope::MicroHttpd().MHD_queue_response)
#define MHD_start_daemon (::stallscope::MicroHttpd().MHD_start_daemon)
#define MHD_stop_daemon (::stallscope::MicroHttpd().MHD_stop_daemon)
#endif

// libmicrohttpd's function table, filled from the library on first use (see microhttpd_api.h).
#define STALLSCOPE_MICROHTTPD_TABLE_ONLY
#include "export/microhttpd_api.h"

#include "core/lazy_library.h"

namespace stallscope {

const MicroHttpdApi& MicroHttpd() {
  static const MicroHttpdApi api = [] {
    static LazyLibrary library("libmicrohttpd.so.12", "libmicrohttpd12");
    MicroHttpdApi table;
#define STALLSCOPE_MICROHTTPD_LOAD(name) \
  table.name = reinterpret_cast<decltype(table.name)>(library.Symbol(#name));
    STALLSCOPE_MICROHTTPD_FUNCTIONS(STALLSCOPE_MICROHTTPD_LOAD)
#undef STALLSCOPE_MICROHTTPD_LOAD
    return table;
  }();
  return api;
}

}  // namespace stallscope

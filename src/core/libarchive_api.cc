// libarchive's function table, filled from the library on first use (see libarchive_api.h).
#define STALLSCOPE_LIBARCHIVE_TABLE_ONLY
#include "core/libarchive_api.h"

#include "core/lazy_library.h"

namespace stallscope {

const LibArchiveApi& LibArchive() {
  static const LibArchiveApi api = [] {
    static LazyLibrary library("libarchive.so.13", "libarchive13");
    LibArchiveApi table;
#define STALLSCOPE_LIBARCHIVE_LOAD(name) \
  table.name = reinterpret_cast<decltype(table.name)>(library.Symbol(#name));
    STALLSCOPE_LIBARCHIVE_FUNCTIONS(STALLSCOPE_LIBARCHIVE_LOAD)
#undef STALLSCOPE_LIBARCHIVE_LOAD
    return table;
  }();
  return api;
}

}  // namespace stallscope

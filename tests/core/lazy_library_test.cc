// Libraries opened on first use: a symbol of a library that is there is
// found; a missing library or symbol ends the program with a message naming
// the Debian package to install (Symbol), or gives null and the reason
// (Find, for hwloc, whose absence is not fatal). libarchive's and libmicrohttpd's tables,
// as the program fills them, have every function.
#include "core/lazy_library.h"

#include <gtest/gtest.h>

#define STALLSCOPE_LIBARCHIVE_TABLE_ONLY
#include "core/libarchive_api.h"
#define STALLSCOPE_MICROHTTPD_TABLE_ONLY
#include "export/microhttpd_api.h"

namespace stallscope {
namespace {

TEST(LazyLibrary, FindsASymbolOfALibraryThatIsThere) {
  LazyLibrary zlib("libz.so.1", "zlib1g");
  EXPECT_NE(zlib.Symbol("zlibVersion"), nullptr);
  EXPECT_EQ(zlib.Symbol("zlibVersion"), zlib.Symbol("zlibVersion"));  // opened once
}

TEST(LazyLibraryDeathTest, AMissingLibraryOrSymbolNamesThePackage) {
  EXPECT_EXIT(LazyLibrary("libstallscope-none.so.0", "no-such-package").Symbol("f"),
              testing::ExitedWithCode(2),
              "needs libstallscope-none.so.0.*install the Debian package no-such-package");
  EXPECT_EXIT(LazyLibrary("libz.so.1", "zlib1g").Symbol("no_such_function"),
              testing::ExitedWithCode(2),
              "needs no_such_function.*install the Debian package zlib1g");
}

TEST(LazyLibrary, FindGivesNullAndTheReasonInsteadOfExiting) {
  std::string why;
  LazyLibrary none("libstallscope-none.so.0", "no-such-package");
  EXPECT_EQ(none.Find("f", why), nullptr);
  EXPECT_NE(why.find("libstallscope-none.so.0"), std::string::npos) << why;
  EXPECT_NE(why.find("no-such-package"), std::string::npos) << why;
  LazyLibrary zlib("libz.so.1", "zlib1g");
  why.clear();
  EXPECT_NE(zlib.Find("zlibVersion", why), nullptr);
  EXPECT_EQ(why, "");
  EXPECT_EQ(zlib.Find("no_such_function", why), nullptr);
  EXPECT_NE(why.find("no_such_function"), std::string::npos) << why;
}

TEST(LazyLibrary, LibarchiveAndLibmicrohttpdHaveEveryFunction) {
  const LibArchiveApi& archive = LibArchive();
#define STALLSCOPE_CHECK(name) EXPECT_NE(archive.name, nullptr) << #name;
  STALLSCOPE_LIBARCHIVE_FUNCTIONS(STALLSCOPE_CHECK)
#undef STALLSCOPE_CHECK
  const MicroHttpdApi& http = MicroHttpd();
#define STALLSCOPE_CHECK(name) EXPECT_NE(http.name, nullptr) << #name;
  STALLSCOPE_MICROHTTPD_FUNCTIONS(STALLSCOPE_CHECK)
#undef STALLSCOPE_CHECK
  EXPECT_NE(archive.archive_error_string, nullptr);
}

}  // namespace
}  // namespace stallscope

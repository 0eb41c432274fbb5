// libFuzzer target: InputFormatOf, the reader of an input file's first bytes.
// Whatever the bytes, a kind it names is one of the known ones, and a
// compressed kind is only ever one that can be.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "sample/input_format.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  // The first byte picks the name, so tar-inside-a-stream is reached too.
  static const char* const kNames[] = {"/d/a.tar.gz", "/d/a.tgz", "/d/a.bin", "/d/a.tar.zst",
                                       "/d/a.zip"};
  std::string_view name = kNames[size > 0 ? data[0] % 5 : 0];
  stallscope::InputFormat f = stallscope::InputFormatOf(bytes.substr(0, 512), name);
  static const char* const kKinds[] = {"",       "zip",     "tar",     "tar.gz", "tar.bz2",
                                       "tar.xz", "tar.zst", "tar.lz4", "gzip",   "bzip2",
                                       "xz",     "zstd",    "lz4",     "7z"};
  bool known = false;
  for (const char* k : kKinds) known = known || f.kind == k;
  if (!known) std::abort();
  if (f.kind.empty() && (f.compressed || f.archive)) std::abort();
  if (f.kind == "tar" && f.compressed) std::abort();
  return 0;
}

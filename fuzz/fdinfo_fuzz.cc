// libFuzzer target: ParseFdinfo, the parser of /proc/PID/fdinfo/N. A parse
// that succeeds has flags that fit open(2)'s 32 bits; one that fails names
// its file.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "probe/open_files.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto got = stallscope::ParseFdinfo(text, "/proc/1/fdinfo/3");
  if (!got.ok() && got.status().ToString().find("/proc/1/fdinfo/3") == std::string::npos) {
    std::abort();
  }
  return 0;
}

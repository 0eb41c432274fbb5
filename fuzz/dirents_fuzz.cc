// libFuzzer target: the getdents64 record parser of the dataset walk. Any
// bytes must parse or fail with a Status: no read past the buffer, no endless
// loop on a zero record length.
#include <cstddef>
#include <cstdint>
#include <span>

#include "data/walk.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::span<const char> buffer(reinterpret_cast<const char*>(data), size);
  size_t names = 0;
  stallscope::Status status =
      stallscope::ParseDirents(buffer, [&](const stallscope::DirentRecord& r) {
        names += r.name.size();
        if (r.name.data() < buffer.data() || r.name.data() + r.name.size() > buffer.data() + size) {
          __builtin_trap();
        }
      });
  (void)status;
  return names > size ? 1 : 0;
}

// libFuzzer target: ParseMountinfo must return a value or a ParseError for any
// input; FindMountForPath and IsRemoteFsType must accept whatever it parsed.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "probe/mounts.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  stallscope::Result<std::vector<stallscope::MountEntry>> mounts =
      stallscope::ParseMountinfo(text, "fuzz");
  (void)stallscope::DecodeMountinfoEscapes(text);
  if (!mounts.ok()) return 0;
  for (const stallscope::MountEntry& mount : *mounts) {
    (void)stallscope::IsRemoteFsType(mount.fs_type);
    (void)stallscope::FindMountForPath(*mounts, mount.mount_point);
    (void)stallscope::FindMountForPath(*mounts, mount.mount_point + "/x");
  }
  return 0;
}

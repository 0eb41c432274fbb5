// libFuzzer target: the capture reader (capture/capture_archive.h) on any
// bytes: a gzip'ed tar or not, any entry names, types, sizes and links, any
// manifest. What it accepts holds no entry outside before/ and node/, no
// name with "..", no link that leaves its tree, no file over the limit.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "capture/capture_archive.h"

namespace {

bool HasDotDot(const std::string& p) {
  return p == ".." || p.rfind("../", 0) == 0 || p.find("/../") != std::string::npos ||
         (p.size() >= 3 && p.compare(p.size() - 3, 3, "/..") == 0);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  stallscope::Result<stallscope::CaptureContents> capture =
      stallscope::ParseCaptureArchive(bytes, "fuzz");
  if (!capture.ok()) return 0;
  for (const stallscope::CaptureEntry& e : capture->entries) {
    bool in_tree = e.path.rfind("before", 0) == 0 || e.path.rfind("node", 0) == 0;
    if (!in_tree || HasDotDot(e.path)) std::abort();
    if (e.kind == stallscope::CaptureEntry::Kind::kFile &&
        e.data.size() > stallscope::kCaptureMaxEntryBytes)
      std::abort();
    if (e.kind == stallscope::CaptureEntry::Kind::kLink && (e.data.empty() || e.data[0] == '/'))
      std::abort();
  }
  return 0;
}

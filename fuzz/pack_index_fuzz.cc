// libFuzzer target: the shard index, manifest.json and tar member parsers of
// a packed folder (docs/pack-format.md) over arbitrary bytes: a value or a
// ParseError, never a crash.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "data/tar_reader.h"
#include "sample/pack_index.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  stallscope::Result<std::vector<stallscope::IndexEntry>> index =
      stallscope::ParseIndex(text, "fuzz.idx");
  if (index.ok())
    for (const auto& e : *index) (void)stallscope::FormatIndexLine(e);
  stallscope::Result<stallscope::Manifest> m = stallscope::ParseManifest(text, "manifest.json");
  if (m.ok()) (void)stallscope::ManifestToJson(*m);
  stallscope::Result<stallscope::TarRun> run = stallscope::ParseTarMembers(text, 0, "fuzz.tar");
  if (run.ok())
    for (const auto& member : run->members) (void)stallscope::SplitKey(member.name);
  return 0;
}

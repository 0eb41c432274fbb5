// Fuzzes the exporter's --web-config reader (the YAML subset of the Prometheus
// exporter-toolkit's web config): any text parses or fails with a message
// naming the file, never crashes, and a parsed config holds only bcrypt
// hashes and both or neither of the TLS files.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "export/web_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  stallscope::Result<stallscope::WebConfig> c = stallscope::ParseWebConfig(text, "web.yml", "/etc");
  if (!c.ok()) {
    if (c.status().message().rfind("web.yml", 0) != 0) std::abort();
    return 0;
  }
  if (c->cert_file.empty() != c->key_file.empty()) std::abort();
  for (const auto& [name, hash] : c->users) {
    if (hash.size() != 60 || hash[0] != '$') std::abort();
  }
  return 0;
}

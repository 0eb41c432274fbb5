#include "probe/environment.h"

#include <unistd.h>

#include <cstring>

#include "core/file.h"

namespace stallscope {

Result<TrainingEnvironment> ReadCurrentEnvironment() {
  std::string block;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    block.append(*entry, std::strlen(*entry));
    block.push_back('\0');
  }
  return ParseEnviron(block, "environ");
}

Result<TrainingEnvironment> ReadProcessEnvironment(const Root& root, int32_t pid) {
  std::string path = root.Path("/proc/" + std::to_string(pid) + "/environ");
  Result<std::string> text = ReadFile(path);
  if (!text.ok()) return text.status();
  return ParseEnviron(*text, path);
}

}  // namespace stallscope

// The version and commit from the header the build generates
// (cmake/write_version.cmake).
#include "core/version.h"

#include "stallscope_version.h"

namespace stallscope {

std::string_view Version() { return STALLSCOPE_VERSION; }

std::string_view GitCommit() { return STALLSCOPE_GIT_COMMIT; }

std::string VersionLine() {
  std::string line = "stallscope ";
  line += Version();
  if (!GitCommit().empty()) {
    line += " (git ";
    line += GitCommit();
    line += ")";
  }
  return line;
}

}  // namespace stallscope

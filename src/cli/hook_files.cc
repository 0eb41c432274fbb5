// The hook's files, installed or in the build tree: see hook_files.h.
#include "cli/hook_files.h"

#include <unistd.h>

#include <climits>
#include <filesystem>

namespace stallscope {
namespace {

bool Exists(const std::string& path) { return ::access(path.c_str(), R_OK) == 0; }

}  // namespace

std::string InstalledLibraryDir() {
  char path[PATH_MAX] = {};
  ssize_t n = ::readlink("/proc/self/exe", path, sizeof(path) - 1);
  if (n <= 0) return "";
  std::filesystem::path exe(std::string(path, static_cast<size_t>(n)));
  return (exe.parent_path().parent_path() / "lib" / "stallscope").string();
}

HookFiles FindHookFiles() {
  HookFiles files;
  std::string installed = InstalledLibraryDir();
  if (!installed.empty() && Exists(installed + "/python/stallscope/__init__.py")) {
    files.python_dir = installed + "/python";
    files.found = true;
    if (std::string lib = installed + "/libstallscope_crc32c.so"; Exists(lib)) {
      files.crc32c_library = lib;
    }
    return files;
  }
  // The build tree: the paths CMake compiled in.
  files.python_dir = STALLSCOPE_PYTHON_DIR;
  files.found = Exists(files.python_dir + "/stallscope/__init__.py");
#ifdef STALLSCOPE_CRC32C_LIBRARY
  if (Exists(STALLSCOPE_CRC32C_LIBRARY)) files.crc32c_library = STALLSCOPE_CRC32C_LIBRARY;
#endif
  return files;
}

}  // namespace stallscope

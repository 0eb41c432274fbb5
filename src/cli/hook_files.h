// Where the Python hook and its native CRC32C library are, for the binary
// that is running: installed, they lie in ../lib/stallscope/ from the
// binary's own directory (/proc/self/exe), so a moved prefix still finds
// them; in the build tree, where CMake compiled their paths in. The MPI
// plugin is found the same way by dist/mpi_world.cc. Layout: docs/install.md.
#pragma once

#include <string>

namespace stallscope {

struct HookFiles {
  std::string python_dir;      // what goes on PYTHONPATH (holds stallscope/)
  std::string crc32c_library;  // libstallscope_crc32c.so; "" when none
  bool found = false;          // python_dir holds stallscope/__init__.py
};

HookFiles FindHookFiles();

// The directory of files installed beside the binary: BINDIR/../lib/stallscope.
std::string InstalledLibraryDir();

}  // namespace stallscope

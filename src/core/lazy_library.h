// A shared library opened on its first use (dlopen), for the libraries only
// a few commands need. A library linked to the program is loaded, with its
// own dependencies, on every start: libarchive (capture, datasets) and
// libmicrohttpd (the exporter) with theirs took about 2 ms of each run's
// 5 ms, a run of `stallscope trace` on a small trace included.
//
// The calls keep their names: core/libarchive_api.h and
// export/microhttpd_api.h turn each function the code calls into a pointer
// looked up once. A missing library or symbol ends the program with a
// message naming the Debian package (the package depends on both, so only a
// broken install meets it); the commands that never call it run as before.
// hwloc (probe/hwloc_api.h) is opened the same way, and its absence is not
// fatal: the topology is then read from sysfs.
// Thread-safe: the first use opens the library once.
#pragma once

#include <mutex>
#include <string>

namespace stallscope {

class LazyLibrary {
 public:
  // `soname`: what dlopen opens ("libarchive.so.13"); `package`: the Debian
  // package that installs it, for the message.
  // `global`: its symbols visible to libraries opened after it (hwloc's
  // plugins, /usr/lib/x86_64-linux-gnu/hwloc/*.so, link against hwloc's own
  // symbols and fail to load without it).
  LazyLibrary(const char* soname, const char* package, bool global = false)
      : soname_(soname), package_(package), global_(global) {}

  // The address of `name` in the library, opened on the first call; exits
  // with a message when the library or the symbol is missing.
  void* Symbol(const char* name);

  // For a caller that can do without the library (hwloc: the sysfs reader
  // stands in): the address of `name`, or nullptr when the library or the
  // symbol is missing, with dlerror's reason in `why`.
  void* Find(const char* name, std::string& why);

 private:
  void* Open();  // the handle, opened on the first call; nullptr if it failed

  const char* soname_;
  const char* package_;
  bool global_;
  std::once_flag opened_;
  void* handle_ = nullptr;
};

}  // namespace stallscope

// Writing a whole file so that readers see the old file or the new one,
// never a half-written one: a temporary file beside the target (same
// directory, so the same file system), fsync, rename over the target. On any
// error the temporary is removed and the target is untouched. Used for the
// HTML report and the host baseline. Thread-safe (no shared state).
#pragma once

#include <string>
#include <string_view>

#include "core/status.h"

namespace stallscope {

// Errors name `path` and carry the errno text.
Status WriteFileAtomically(const std::string& path, std::string_view content);

// Whether something (a file, a directory, a dangling link) is at `path`.
bool PathExists(const std::string& path);

// Where an output file may be written: InvalidArgument "F exists; pass
// --force to overwrite it" when something is there and not `force`, or when
// F is a directory; NotFound when its directory does not exist.
Status CheckOutputPath(const std::string& path, bool force, std::string_view flag);

}  // namespace stallscope

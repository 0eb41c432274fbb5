// The hook's socket directories that a `run` killed with SIGKILL left
// behind ($TMPDIR/stallscope-PID-XXXXXX/hook.sock): the next `run` of the
// same user removes them. A directory is removed only when
// all of these hold: its name carries a pid, it is a real directory (not a
// link) owned by this user, that pid no longer exists, and its socket
// refuses a datagram (no process has it bound). Anything else in it keeps
// it (rmdir of a non-empty directory fails). Best effort: errors are
// ignored. Thread-compatible; touches only the directory it is given.
#pragma once

#include <string>
#include <string_view>

namespace stallscope {

// The creating pid in a directory name "stallscope-PID-XXXXXX"; -1 when the
// name is not one (pure).
int HookDirectoryPid(std::string_view name);

// Removes the stale hook directories under `parent` (see above); returns how
// many it removed.
int RemoveStaleHookDirectories(const std::string& parent);

// The hook's step rings (ring-PID, python/stallscope/_stops.py) in a hook
// directory, removed: the files themselves, never what they might link to.
void RemoveStepRings(const std::string& directory);

}  // namespace stallscope

// Is a path on a network file system, asked without touching the path?
//
// A stat() or readdir() on a mount whose server went away waits in the
// kernel for good (see core/child_call.h), so a command that would touch a
// remote mount asks here first and then does those calls in a child process
// with an idle deadline of RemoteCallDeadlineSeconds(): the child reports
// each call that answered, and the deadline runs from the last one. The answer comes from the mount
// table and the path's text: made absolute from the working directory, "." and ".." folded,
// symlinks not followed (following them would touch the path). Reads /proc/self/mountinfo under a
// Root; stateless and thread-safe.
#pragma once

#include <optional>
#include <string>

#include "core/file.h"
#include "probe/mounts.h"

namespace stallscope {

// How long a command waits for the next answer from a remote mount (a stat,
// open, readdir or statfs of the data) before it gives the mount up and goes
// on. It is an idle deadline: it restarts at each call that answered, so a
// census of millions of files on a live server takes as long as it takes.
// A healthy file server answers one call in milliseconds, so 10 s without
// one is far beyond a slow but live server; an NFS client's own first retransmission comes after 6
// s (timeo=60 by default for TCP), so a server that has not answered in 10 s has missed at least
// one retry. Short enough for `doctor` to stay usable.
inline constexpr double kRemoteCallDeadlineSeconds = 10.0;

// For tests only: the environment variable that lowers the deadline (a
// number of seconds, 0.1 to 10), so that a test's walk over a slow link can
// outlast it. Not for users: a shorter deadline calls a slow mount dead.
inline constexpr const char* kRemoteDeadlineTestVariable = "STALLSCOPE_TEST_REMOTE_DEADLINE_S";

// kRemoteCallDeadlineSeconds, or the test variable's value when set and valid.
double RemoteCallDeadlineSeconds();

// The remote mount (IsRemoteMount) that holds `path`; nullopt when the path
// is on a local file system or the mount table cannot be read (the caller
// then goes on as for a local path).
std::optional<MountEntry> RemoteMountHolding(const Root& root, const std::string& path);

// "fuse.sshfs mount /mnt/data (root@filer:/export)": how a note names it.
std::string DescribeMount(const MountEntry& mount);

}  // namespace stallscope

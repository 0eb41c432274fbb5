// The knob each network file system offers against per-file round trips,
// named in io.remote_fs's `next`: NFS actimeo/nconnect/rsize (with what the
// mount sets now, read from its mountinfo options), Lustre's stripe count,
// and the cache options of the FUSE clients of object stores (s3fs, gcsfuse,
// goofys, mountpoint-s3, blobfuse2, rclone) and of sshfs.
//
// Pure: the mount's type, source and option strings in, one sentence out.
// The option names come from each client's own documentation; see
// docs/remote-fs.md. Stateless; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace stallscope {

// `options` is mountinfo's per-mount and per-superblock options joined by
// commas. Empty when the type and source name no client we know.
std::string RemoteFsKnob(std::string_view fs_type, std::string_view source,
                         std::string_view options);

// The value of `name=` in a comma-separated option list; nullopt if absent.
std::optional<std::string> MountOption(std::string_view options, std::string_view name);

}  // namespace stallscope

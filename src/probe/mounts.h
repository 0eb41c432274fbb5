// Mounts and the device behind a path: /proc/self/mountinfo, and "which disk
// (or which file server) does /data live on?".
//
// ParseMountinfo is the pure parser of /proc/<pid>/mountinfo; ReadMountinfo
// reads /proc/self/mountinfo under a Root. FindMountForPath and
// IsRemoteFsType are pure. DeviceForPath puts them together with
// /sys/dev/block: on a live root it resolves the path with realpath() and
// calls statfs() on it; on a fixture root it takes the path as given
// (normalized) and touches nothing outside the fixture.
// All functions are stateless and thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/file.h"
#include "core/status.h"

namespace stallscope {

// One line of mountinfo (see proc(5)):
// "36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue"
// Paths and the source have the kernel's octal escapes (\040 for a space,
// \011, \012, \134) decoded.
struct MountEntry {
  uint64_t mount_id = 0;
  uint64_t parent_id = 0;
  uint32_t major = 0;  // st_dev of the file system; 0 for most pseudo and network ones
  uint32_t minor = 0;
  std::string root;                          // the directory of the fs mounted here ("/" mostly)
  std::string mount_point;                   // where, relative to the reader's root
  std::string mount_options;                 // per-mount: "rw,relatime"
  std::vector<std::string> optional_fields;  // "shared:1", "master:2", ...
  std::string fs_type;                       // "ext4", "nfs4", "overlay", "fuse.sshfs"
  std::string source;                        // "/dev/nvme0n1p2", "server:/export", "overlay"
  std::string super_options;                 // per-superblock options
};

// Mounts in file order (a later mount on the same point hides an earlier one).
// A line with fewer than 6 fields before " - ", no " - ", or no fs type after
// it is a ParseError naming the line.
Result<std::vector<MountEntry>> ParseMountinfo(std::string_view text, std::string_view source);
Result<std::vector<MountEntry>> ReadMountinfo(const Root& root);

// "\040" -> " " and the like; a backslash not followed by 3 octal digits stays.
std::string DecodeMountinfoEscapes(std::string_view text);

// "/a//b/./c/../d/" -> "/a/b/d", by the text alone. Only for absolute paths.
std::string NormalizePath(std::string_view path);

// Network and cluster file systems, where every open/stat/readdir is a round
// trip: nfs, nfs4, cifs, smb3, lustre, gpfs, beegfs, ceph, glusterfs, ... and
// FUSE daemons that talk to a server (fuse.sshfs, fuse.s3fs, fuse.gcsfuse, ...).
bool IsRemoteFsType(std::string_view fs_type);

// IsRemoteFsType of the mount's type; or, for a plain "fuse"/"fuseblk" type
// that names no daemon, the daemon some FUSE clients write in the source
// field instead: "sshfs#user@host:/path", "s3fs", "/usr/bin/s3fs".
bool IsRemoteMount(const MountEntry& mount);

// The mount holding `path` (absolute, normalized): the longest mount point
// that is `path` or a parent directory of it; the last such line when several
// mounts stack on one point. nullptr when none matches (no "/" mount).
const MountEntry* FindMountForPath(const std::vector<MountEntry>& mounts, std::string_view path);

// Where a path lives.
struct PathDevice {
  std::string path;                    // as asked
  std::string resolved_path;           // realpath() on a live root, normalized as given otherwise
  MountEntry mount;                    // the mount that holds it
  std::string fs_type;                 // mount.fs_type
  std::string source;                  // mount.source
  std::optional<int64_t> statfs_type;  // statfs(2) f_type (e.g. 0x6969 NFS); live root only
  // The block device ("nvme0n1p2") and its whole disk ("nvme0n1"); both empty
  // when the file system has none (overlay, tmpfs, nfs, fuse, ...).
  std::string device;
  std::string disk;
  // For a device-mapper or md device: the whole disks under it (from slaves/,
  // followed down), where its IO ends up. Empty otherwise.
  std::vector<std::string> backing_disks;
  bool remote = false;  // IsRemoteMount(mount)
};

// `path` must be absolute. NotFound when it does not exist (live root) or no
// mount holds it; the errors of reading mountinfo pass through. A file system
// without a block device is not an error: `device` is empty.
Result<PathDevice> DeviceForPath(const Root& root, const std::string& path);

}  // namespace stallscope

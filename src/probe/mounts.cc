#include "probe/mounts.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/vfs.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <iterator>
#include <map>

#include "core/file.h"
#include "core/text.h"
#include "probe/diskstats.h"

namespace stallscope {
namespace {

// mountinfo separates fields by exactly one space (spaces inside fields are
// escaped), so an empty field (a mount with an empty source) stays a field.
std::vector<std::string_view> SplitOnSpace(std::string_view line) {
  std::vector<std::string_view> fields;
  size_t start = 0;
  for (;;) {
    size_t space = line.find(' ', start);
    if (space == std::string_view::npos) {
      fields.push_back(line.substr(start));
      return fields;
    }
    fields.push_back(line.substr(start, space - start));
    start = space + 1;
  }
}

bool IsOctal(char c) { return c >= '0' && c <= '7'; }

std::optional<std::pair<uint32_t, uint32_t>> ParseDeviceNumber(std::string_view text) {
  size_t colon = text.find(':');
  if (colon == std::string_view::npos) return std::nullopt;
  std::optional<uint64_t> major = ParseUint(text.substr(0, colon));
  std::optional<uint64_t> minor = ParseUint(text.substr(colon + 1));
  if (!major || !minor || *major > UINT32_MAX || *minor > UINT32_MAX) return std::nullopt;
  return std::make_pair(static_cast<uint32_t>(*major), static_cast<uint32_t>(*minor));
}

// A mount whose st_dev is anonymous (major 0: btrfs, some LVM setups) but whose
// source names a device node: find that node's number.
std::optional<std::pair<uint32_t, uint32_t>> DeviceNumberOfSource(const Root& root,
                                                                  const std::string& source) {
  if (!StartsWith(source, "/dev/")) return std::nullopt;
  if (root.IsLive()) {
    struct stat st {};
    if (::stat(source.c_str(), &st) == 0 && S_ISBLK(st.st_mode)) {
      return std::make_pair(static_cast<uint32_t>(major(st.st_rdev)),
                            static_cast<uint32_t>(minor(st.st_rdev)));
    }
  }
  const std::string name = source.substr(source.rfind('/') + 1);
  for (const char* dir : {"/sys/class/block/", "/sys/block/"}) {
    Result<std::string> dev = ReadAttribute(root.Path(dir + name + "/dev"));
    if (dev.ok()) return ParseDeviceNumber(*dev);
  }
  return std::nullopt;
}

// The whole disks under a dm/md device, following slaves/ down a few levels
// (dm on md on partitions).
void CollectBackingDisks(const Root& root, const std::string& name,
                         const std::map<std::string, std::string>& disk_of, int depth,
                         std::vector<std::string>& out) {
  if (depth > 8) return;
  Result<std::vector<std::string>> slaves =
      ListDirectory(root.Path("/sys/block/" + name + "/slaves"));
  if (!slaves.ok()) return;
  for (const std::string& slave : *slaves) {
    auto it = disk_of.find(slave);
    const std::string disk = it == disk_of.end() ? slave : it->second;
    Result<std::vector<std::string>> below =
        ListDirectory(root.Path("/sys/block/" + disk + "/slaves"));
    if (below.ok() && !below->empty()) {
      CollectBackingDisks(root, disk, disk_of, depth + 1, out);
    } else if (std::find(out.begin(), out.end(), disk) == out.end()) {
      out.push_back(disk);
    }
  }
}

}  // namespace

std::string DecodeMountinfoEscapes(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    // Three octal digits are at most 0377: always one byte.
    if (text[i] == '\\' && i + 3 < text.size() && IsOctal(text[i + 1]) && IsOctal(text[i + 2]) &&
        IsOctal(text[i + 3])) {
      out += static_cast<char>((text[i + 1] - '0') * 64 + (text[i + 2] - '0') * 8 +
                               (text[i + 3] - '0'));
      i += 3;
      continue;
    }
    out += text[i];
  }
  return out;
}

Result<std::vector<MountEntry>> ParseMountinfo(std::string_view text, std::string_view source) {
  std::vector<MountEntry> mounts;
  std::vector<std::string_view> lines = SplitLines(text);
  for (size_t i = 0; i < lines.size(); ++i) {
    const int line_number = static_cast<int>(i + 1);
    if (Trim(lines[i]).empty()) continue;
    std::vector<std::string_view> fields = SplitOnSpace(lines[i]);
    auto separator = std::find(fields.begin(), fields.end(), "-");
    if (separator == fields.end()) {
      return Status::ParseError(source, line_number, "no ' - ' separator before the fs type");
    }
    const size_t before = static_cast<size_t>(separator - fields.begin());
    const size_t after = fields.size() - before - 1;
    // Field 6 onwards before the separator are optional fields; a "-" among
    // the first six would be a mount option or path, which are never bare "-".
    if (before < 6) {
      return Status::ParseError(source, line_number,
                                "expected 6 fields before ' - ', got " + std::to_string(before));
    }
    if (after < 1 || fields[before + 1].empty()) {
      return Status::ParseError(source, line_number, "no fs type after ' - '");
    }
    MountEntry entry;
    std::optional<uint64_t> mount_id = ParseUint(fields[0]);
    std::optional<uint64_t> parent_id = ParseUint(fields[1]);
    if (!mount_id || !parent_id) {
      return Status::ParseError(source, line_number, "mount id or parent id is not a number");
    }
    std::optional<std::pair<uint32_t, uint32_t>> number = ParseDeviceNumber(fields[2]);
    if (!number) {
      return Status::ParseError(source, line_number,
                                "bad major:minor '" + std::string(fields[2]) + "'");
    }
    entry.mount_id = *mount_id;
    entry.parent_id = *parent_id;
    entry.major = number->first;
    entry.minor = number->second;
    entry.root = DecodeMountinfoEscapes(fields[3]);
    entry.mount_point = DecodeMountinfoEscapes(fields[4]);
    entry.mount_options = std::string(fields[5]);
    for (size_t f = 6; f < before; ++f) {
      if (!fields[f].empty()) entry.optional_fields.emplace_back(fields[f]);
    }
    entry.fs_type = DecodeMountinfoEscapes(fields[before + 1]);
    if (after >= 2) entry.source = DecodeMountinfoEscapes(fields[before + 2]);
    if (after >= 3) entry.super_options = std::string(fields[before + 3]);
    mounts.push_back(std::move(entry));
  }
  return mounts;
}

Result<std::vector<MountEntry>> ReadMountinfo(const Root& root) {
  const std::string path = root.Path("/proc/self/mountinfo");
  Result<std::string> text = ReadFile(path);
  if (!text.ok()) return text.status();
  return ParseMountinfo(*text, path);
}

bool IsRemoteFsType(std::string_view fs_type) {
  // 9p is here because a VM's or WSL's host share pays a round trip per
  // operation just like a file server.
  static constexpr std::string_view kRemote[] = {"nfs",       "nfs4",   "cifs",  "smb3",   "smbfs",
                                                 "smb2",      "lustre", "gpfs",  "beegfs", "ceph",
                                                 "glusterfs", "afs",    "ncpfs", "panfs",  "wekafs",
                                                 "orangefs",  "pvfs2",  "9p",    "davfs"};
  // FUSE daemons that fetch from a server or object store; a local FUSE fs
  // (fuse.squashfuse, fuse.lxcfs, fuse.bindfs) is not remote.
  static constexpr std::string_view kRemoteFuse[] = {
      "sshfs",     "s3fs",    "gcsfuse",   "glusterfs",     "ceph-fuse", "ceph",
      "rclone",    "juicefs", "goofys",    "mountpoint-s3", "blobfuse",  "blobfuse2",
      "lizardfs",  "mfs",     "quobyte",   "alluxio-fuse",  "cvmfs2",    "geesefs",
      "curlftpfs", "davfs2",  "seaweedfs", "s3backer"};
  if (StartsWith(fs_type, "fuse.")) {
    std::string_view daemon = fs_type.substr(5);
    return std::find(std::begin(kRemoteFuse), std::end(kRemoteFuse), daemon) !=
           std::end(kRemoteFuse);
  }
  return std::find(std::begin(kRemote), std::end(kRemote), fs_type) != std::end(kRemote);
}

std::string NormalizePath(std::string_view path) {
  std::vector<std::string_view> parts;
  size_t i = 0;
  while (i < path.size()) {
    size_t slash = path.find('/', i);
    if (slash == std::string_view::npos) slash = path.size();
    std::string_view part = path.substr(i, slash - i);
    if (part == "..") {
      if (!parts.empty()) parts.pop_back();
    } else if (!part.empty() && part != ".") {
      parts.push_back(part);
    }
    i = slash + 1;
  }
  std::string out;
  for (std::string_view part : parts) {
    out += '/';
    out += part;
  }
  return out.empty() ? "/" : out;
}

bool IsRemoteMount(const MountEntry& mount) {
  if (IsRemoteFsType(mount.fs_type)) return true;
  if (mount.fs_type != "fuse" && mount.fs_type != "fuseblk") return false;
  // "sshfs#user@host:/path": the daemon before '#'; else the source itself.
  std::string_view daemon = mount.source;
  daemon = daemon.substr(0, daemon.find('#'));
  if (const size_t slash = daemon.rfind('/'); slash != std::string_view::npos) {
    daemon.remove_prefix(slash + 1);
  }
  return !daemon.empty() && IsRemoteFsType("fuse." + std::string(daemon));
}

const MountEntry* FindMountForPath(const std::vector<MountEntry>& mounts, std::string_view path) {
  const MountEntry* best = nullptr;
  size_t best_length = 0;
  for (const MountEntry& mount : mounts) {
    std::string_view point = mount.mount_point;
    while (point.size() > 1 && point.back() == '/') point.remove_suffix(1);
    const bool holds = point == "/" ? StartsWith(path, "/")
                                    : StartsWith(path, point) && (path.size() == point.size() ||
                                                                  path[point.size()] == '/');
    // ">=" so that the last of several mounts stacked on one point wins.
    if (holds && (best == nullptr || point.size() >= best_length)) {
      best = &mount;
      best_length = point.size();
    }
  }
  return best;
}

Result<PathDevice> DeviceForPath(const Root& root, const std::string& path) {
  if (path.empty() || path.front() != '/') {
    return Status::InvalidArgument("path must be absolute: '" + path + "'");
  }
  PathDevice out;
  out.path = path;
  if (root.IsLive()) {
    char* resolved = ::realpath(path.c_str(), nullptr);
    if (resolved == nullptr) return Status::FromErrno(path, errno);
    out.resolved_path = resolved;
    std::free(resolved);
  } else {
    out.resolved_path = NormalizePath(path);
  }

  Result<std::vector<MountEntry>> mounts = ReadMountinfo(root);
  if (!mounts.ok()) return mounts.status();
  const MountEntry* mount = FindMountForPath(*mounts, out.resolved_path);
  if (mount == nullptr) return Status::NotFound("no mount holds " + out.resolved_path);
  out.mount = *mount;
  out.fs_type = mount->fs_type;
  out.source = mount->source;
  out.remote = IsRemoteMount(*mount);

  if (root.IsLive()) {
    struct statfs fs {};
    if (::statfs(out.resolved_path.c_str(), &fs) == 0) {
      out.statfs_type = static_cast<int64_t>(fs.f_type);
    }
  }

  std::optional<std::pair<uint32_t, uint32_t>> number;
  if (mount->major != 0) {
    number = std::make_pair(mount->major, mount->minor);
  } else {
    number = DeviceNumberOfSource(root, mount->source);
  }
  if (!number) return out;
  Result<BlockDevice> device = ReadBlockDeviceByNumber(root, number->first, number->second);
  if (!device.ok()) return out;  // not a block device: nothing to report
  out.device = device->name;
  out.disk = device->disk;

  std::map<std::string, std::string> disk_of;
  if (Result<std::vector<BlockDevice>> all = ReadBlockDevices(root); all.ok()) {
    for (const BlockDevice& d : *all) disk_of[d.name] = d.disk;
  }
  CollectBackingDisks(root, out.disk, disk_of, 0, out.backing_disks);
  std::sort(out.backing_disks.begin(), out.backing_disks.end());
  return out;
}

}  // namespace stallscope

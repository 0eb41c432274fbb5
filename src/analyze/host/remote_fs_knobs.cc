#include "analyze/host/remote_fs_knobs.h"

#include <fmt/format.h>

namespace stallscope {
namespace {

bool Contains(std::string_view text, std::string_view part) {
  return text.find(part) != std::string_view::npos;
}

// A FUSE client names itself in the type ("fuse.s3fs") or, for a plain
// "fuse" type, in the source ("mountpoint-s3", "blobfuse2").
bool Client(std::string_view fs_type, std::string_view source, std::string_view name) {
  return Contains(fs_type, name) || (fs_type.starts_with("fuse") && Contains(source, name));
}

std::string NowSet(std::string_view options, std::string_view name) {
  std::optional<std::string> value = MountOption(options, name);
  return value ? fmt::format("{}={}", name, *value) : fmt::format("{} unset", name);
}

std::string Nfs(std::string_view options) {
  // mountinfo writes actimeo as its four parts; acregmin stands for them.
  std::string actimeo = MountOption(options, "actimeo")
                            ? NowSet(options, "actimeo")
                            : (MountOption(options, "acregmin") ? NowSet(options, "acregmin")
                                                                : "actimeo unset (3-60 s)");
  std::string nconnect = MountOption(options, "nconnect") ? NowSet(options, "nconnect")
                                                          : "nconnect unset (one connection)";
  return fmt::format(
      "NFS: mount read-only data with -o actimeo=600 (attributes cached 10 min), nconnect=8 "
      "(more TCP connections in flight), rsize=1048576; now {}, {}, {}",
      actimeo, nconnect, NowSet(options, "rsize"));
}

}  // namespace

std::optional<std::string> MountOption(std::string_view options, std::string_view name) {
  size_t start = 0;
  while (start <= options.size()) {
    size_t end = options.find(',', start);
    if (end == std::string_view::npos) end = options.size();
    std::string_view item = options.substr(start, end - start);
    if (item.size() > name.size() && item.starts_with(name) && item[name.size()] == '=') {
      return std::string(item.substr(name.size() + 1));
    }
    if (item == name) return std::string();
    start = end + 1;
  }
  return std::nullopt;
}

std::string RemoteFsKnob(std::string_view fs_type, std::string_view source,
                         std::string_view options) {
  if (fs_type.starts_with("nfs")) return Nfs(options);
  if (fs_type == "lustre") {
    return "Lustre: small files want one stripe and large shards many: lfs getstripe DIR, "
           "then lfs setstripe -c 1 DIR for small files (or -c -1 for packed shards)";
  }
  if (Client(fs_type, source, "s3fs")) {
    return "s3fs: -o use_cache=/local/nvme/s3fs -o stat_cache_expire=600 "
           "-o max_stat_cache_size=1000000 -o enable_noobj_cache";
  }
  if (Client(fs_type, source, "gcsfuse")) {
    return "gcsfuse: --metadata-cache-ttl-secs=-1 --stat-cache-max-size-mb=-1 "
           "--type-cache-max-size-mb=-1 --cache-dir=/local/nvme/gcsfuse "
           "--file-cache-max-size-mb=-1";
  }
  if (Client(fs_type, source, "goofys")) {
    return "goofys: --stat-cache-ttl 10m --type-cache-ttl 10m";
  }
  if (Client(fs_type, source, "mountpoint-s3") || Client(fs_type, source, "mount-s3")) {
    return "mountpoint-s3: mount-s3 --metadata-ttl indefinite --cache /local/nvme/mp-cache";
  }
  if (Client(fs_type, source, "blobfuse")) {
    return "blobfuse2: attr_cache: timeout-sec: 7200 and file_cache: path: /local/nvme/bf2, "
           "timeout-sec: 7200 in its config (or --attr-cache-timeout, --file-cache-timeout)";
  }
  if (Client(fs_type, source, "rclone")) {
    return "rclone mount: --vfs-cache-mode full --dir-cache-time 1h --attr-timeout 1h "
           "--vfs-cache-max-size 100G --cache-dir /local/nvme/rclone";
  }
  if (Client(fs_type, source, "sshfs")) {
    return "sshfs: -o cache=yes,kernel_cache,attr_timeout=600,entry_timeout=600";
  }
  return "";
}

}  // namespace stallscope

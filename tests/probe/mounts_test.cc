#include "probe/mounts.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "core/file.h"
#include "probe/remote_path.h"

namespace stallscope {
namespace {

const std::string kFixtures = STALLSCOPE_FIXTURES;

std::vector<MountEntry> MustParse(const std::string& root) {
  Result<std::vector<MountEntry>> mounts = ReadMountinfo(Root(root));
  EXPECT_TRUE(mounts.ok()) << mounts.status().ToString();
  return mounts.ok() ? *mounts : std::vector<MountEntry>{};
}

TEST(ParseMountinfo, HandMadeHost) {
  std::vector<MountEntry> mounts = MustParse(kFixtures + "/disk_host");
  ASSERT_EQ(mounts.size(), 13u);
  const MountEntry& root = mounts[0];
  EXPECT_EQ(root.mount_id, 22u);
  EXPECT_EQ(root.parent_id, 1u);
  EXPECT_EQ(root.major, 0u);
  EXPECT_EQ(root.minor, 21u);
  EXPECT_EQ(root.mount_point, "/");
  EXPECT_EQ(root.fs_type, "overlay");
  EXPECT_EQ(root.source, "overlay");
  EXPECT_EQ(root.optional_fields, std::vector<std::string>{"shared:1"});

  const MountEntry& data = mounts[3];
  EXPECT_EQ(data.mount_id, 25u);
  EXPECT_EQ(data.major, 259u);
  EXPECT_EQ(data.minor, 2u);
  EXPECT_EQ(data.root, "/");
  EXPECT_EQ(data.mount_point, "/data");
  EXPECT_EQ(data.mount_options, "rw,noatime");
  EXPECT_EQ(data.fs_type, "ext4");
  EXPECT_EQ(data.source, "/dev/nvme0n1p2");
  EXPECT_EQ(data.super_options, "rw,errors=remount-ro");

  const MountEntry& nfs = mounts[5];
  EXPECT_EQ(nfs.fs_type, "nfs4");
  EXPECT_EQ(nfs.source, "filer01:/export/datasets");
  EXPECT_EQ(nfs.optional_fields, (std::vector<std::string>{"shared:6", "master:1"}));

  EXPECT_EQ(mounts[6].root, "/@archive");
  EXPECT_EQ(mounts[8].mount_point, "/mnt/my photos");  // \040 decoded
}

TEST(ParseMountinfo, LiveCaptureOfThisMachine) {
  std::vector<MountEntry> mounts = MustParse(kFixtures + "/live_debian12");
  ASSERT_EQ(mounts.size(), 19u);
  // "26 1 254:0 / / rw,relatime - ext4 /dev/vda rw,discard,resv_strict,..."
  const MountEntry* root = FindMountForPath(mounts, "/");
  ASSERT_NE(root, nullptr);
  EXPECT_EQ(root->mount_id, 26u);
  EXPECT_EQ(root->major, 254u);
  EXPECT_EQ(root->minor, 0u);
  EXPECT_EQ(root->fs_type, "ext4");
  EXPECT_EQ(root->source, "/dev/vda");
  EXPECT_EQ(root->mount_options, "rw,relatime");
  EXPECT_TRUE(root->optional_fields.empty());
  EXPECT_EQ(root->super_options, "rw,discard,resv_strict,resuid=65534,resgid=65534");
  EXPECT_EQ(mounts[0].mount_point, "/proc");
  EXPECT_EQ(mounts[0].fs_type, "proc");
}

TEST(ParseMountinfo, EmptySourceStaysAField) {
  Result<std::vector<MountEntry>> mounts =
      ParseMountinfo("30 22 0:50 / /x rw - tmpfs  rw,size=4k\n", "mountinfo");
  ASSERT_TRUE(mounts.ok()) << mounts.status().ToString();
  EXPECT_EQ(mounts->at(0).source, "");
  EXPECT_EQ(mounts->at(0).super_options, "rw,size=4k");
}

void ExpectParseError(std::string_view text, std::string_view where) {
  Result<std::vector<MountEntry>> mounts = ParseMountinfo(text, "/proc/self/mountinfo");
  ASSERT_FALSE(mounts.ok()) << text;
  EXPECT_EQ(mounts.status().code(), Status::Code::kParseError);
  EXPECT_NE(mounts.status().message().find(where), std::string::npos) << mounts.status().message();
}

TEST(ParseMountinfo, MalformedInputNamesFileAndLine) {
  const std::string good = "25 22 259:2 / /data rw shared:4 - ext4 /dev/nvme0n1p2 rw\n";
  ExpectParseError(good + "26 22 259:1 / /boot rw", "/proc/self/mountinfo:2: no ' - '");
  ExpectParseError(good + good + "26 22 259:1 / - ext4 /dev/x rw\n",
                   "/proc/self/mountinfo:3: expected 6 fields");
  ExpectParseError("26 22 259:1 / /boot rw -\n", "/proc/self/mountinfo:1: no fs type");
  ExpectParseError("26 22 259 / /boot rw - ext4 /dev/x rw\n", "/proc/self/mountinfo:1: bad major");
  ExpectParseError("x 22 259:1 / /boot rw - ext4 /dev/x rw\n", "/proc/self/mountinfo:1: mount id");
  ExpectParseError("26 22 259:99999999999 / /b rw - ext4 /dev/x rw\n", "/proc/self/mountinfo:1:");
}

TEST(DecodeMountinfoEscapes, OctalEscapes) {
  EXPECT_EQ(DecodeMountinfoEscapes("/mnt/my\\040photos"), "/mnt/my photos");
  EXPECT_EQ(DecodeMountinfoEscapes("a\\011b\\012c\\134d"), "a\tb\nc\\d");
  EXPECT_EQ(DecodeMountinfoEscapes("end\\04"), "end\\04");  // truncated: left as is
  EXPECT_EQ(DecodeMountinfoEscapes("\\999"), "\\999");      // not octal
  EXPECT_EQ(DecodeMountinfoEscapes("plain"), "plain");
}

TEST(IsRemoteFsType, NetworkAndLocal) {
  for (const char* type : {"nfs", "nfs4", "cifs", "smb3", "lustre", "gpfs", "beegfs", "ceph",
                           "glusterfs", "fuse.sshfs", "fuse.s3fs", "fuse.gcsfuse", "fuse.glusterfs",
                           "fuse.ceph-fuse", "fuse.juicefs"}) {
    EXPECT_TRUE(IsRemoteFsType(type)) << type;
  }
  for (const char* type : {"ext4", "xfs", "btrfs", "overlay", "tmpfs", "proc", "nfsd",
                           "fuse.squashfuse", "fuse.lxcfs", "fuse", "", "fuse."}) {
    EXPECT_FALSE(IsRemoteFsType(type)) << type;
  }
}

// Some FUSE clients mount with the plain type "fuse" and put the daemon in
// the source field ("sshfs#user@host:/path", or the daemon's name alone).
TEST(IsRemoteMount, PlainFuseNamesItsDaemonInTheSource) {
  std::vector<MountEntry> mounts = MustParse(kFixtures + "/fuse_sources");
  auto remote = [&](std::string_view path) {
    const MountEntry* m = FindMountForPath(mounts, path);
    EXPECT_NE(m, nullptr) << path;
    return m != nullptr && IsRemoteMount(*m);
  };
  EXPECT_TRUE(remote("/mnt/old-sshfs/train"));
  EXPECT_TRUE(remote("/mnt/bucket"));
  EXPECT_TRUE(remote("/mnt/path-daemon/x"));
  EXPECT_TRUE(remote("/mnt/blk"));
  EXPECT_TRUE(remote("/mnt/typed"));
  EXPECT_FALSE(remote("/mnt/squash"));       // a local FUSE file system
  EXPECT_FALSE(remote("/mnt/unnamed"));      // no daemon named anywhere
  EXPECT_FALSE(remote("/mnt/local-typed"));  // the source is read for FUSE only
  EXPECT_FALSE(remote("/home"));

  Result<PathDevice> d = DeviceForPath(Root(kFixtures + "/fuse_sources"), "/mnt/old-sshfs/a");
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->fs_type, "fuse");
  EXPECT_EQ(d->source, "sshfs#me@filer:/export/data");
  EXPECT_TRUE(d->remote);
}

TEST(FindMountForPath, LongestPrefixOnComponentBoundaries) {
  std::vector<MountEntry> mounts = MustParse(kFixtures + "/disk_host");
  auto point = [&](std::string_view path) {
    const MountEntry* m = FindMountForPath(mounts, path);
    return m == nullptr ? std::string("<none>") : m->mount_point + " " + m->source;
  };
  EXPECT_EQ(point("/data"), "/data /dev/nvme0n1p2");
  EXPECT_EQ(point("/data/train/000001.jpg"), "/data /dev/nvme0n1p2");
  EXPECT_EQ(point("/database"), "/ overlay");
  EXPECT_EQ(point("/data/cache/x"), "/data/cache tmpfs");
  EXPECT_EQ(point("/data/cached"), "/data /dev/nvme0n1p2");
  EXPECT_EQ(point("/mnt/stack/f"), "/mnt/stack second");  // the later of two stacked mounts
  EXPECT_EQ(point("/mnt/my photos/a"), "/mnt/my photos tmpfs");
  EXPECT_EQ(point("/"), "/ overlay");
  EXPECT_EQ(FindMountForPath({}, "/data"), nullptr);
}

TEST(DeviceForPath, DataOnAPartition) {
  Result<PathDevice> d = DeviceForPath(Root(kFixtures + "/disk_host"), "/data/train/000001.jpg");
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->path, "/data/train/000001.jpg");
  EXPECT_EQ(d->resolved_path, "/data/train/000001.jpg");
  EXPECT_EQ(d->mount.mount_point, "/data");
  EXPECT_EQ(d->fs_type, "ext4");
  EXPECT_EQ(d->source, "/dev/nvme0n1p2");
  EXPECT_EQ(d->device, "nvme0n1p2");
  EXPECT_EQ(d->disk, "nvme0n1");
  EXPECT_TRUE(d->backing_disks.empty());
  EXPECT_FALSE(d->remote);
  EXPECT_FALSE(d->statfs_type.has_value());  // fixture root: no statfs
}

TEST(DeviceForPath, NfsHasNoBlockDevice) {
  Result<PathDevice> d =
      DeviceForPath(Root(kFixtures + "/disk_host"), "/data/../mnt/datasets/./imagenet/");
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->resolved_path, "/mnt/datasets/imagenet");
  EXPECT_EQ(d->fs_type, "nfs4");
  EXPECT_EQ(d->source, "filer01:/export/datasets");
  EXPECT_TRUE(d->remote);
  EXPECT_EQ(d->device, "");
  EXPECT_EQ(d->disk, "");
}

TEST(DeviceForPath, OverlayRootAndFuseHaveNoBlockDevice) {
  Root root(kFixtures + "/disk_host");
  Result<PathDevice> overlay = DeviceForPath(root, "/workspace/train.py");
  ASSERT_TRUE(overlay.ok()) << overlay.status().ToString();
  EXPECT_EQ(overlay->fs_type, "overlay");
  EXPECT_EQ(overlay->device, "");
  EXPECT_FALSE(overlay->remote);
  Result<PathDevice> sshfs = DeviceForPath(root, "/home/me/remote/data");
  ASSERT_TRUE(sshfs.ok());
  EXPECT_EQ(sshfs->fs_type, "fuse.sshfs");
  EXPECT_TRUE(sshfs->remote);
  EXPECT_EQ(sshfs->device, "");
}

TEST(DeviceForPath, BtrfsAnonymousDeviceFoundThroughItsSource) {
  // btrfs reports st_dev 0:80; its source /dev/sda names the disk.
  Result<PathDevice> d = DeviceForPath(Root(kFixtures + "/disk_host"), "/archive/2023");
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->fs_type, "btrfs");
  EXPECT_EQ(d->device, "sda");
  EXPECT_EQ(d->disk, "sda");
}

TEST(DeviceForPath, DeviceMapperIsFollowedToItsDisk) {
  Result<PathDevice> d = DeviceForPath(Root(kFixtures + "/disk_host"), "/scratch/ckpt");
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->device, "dm-0");
  EXPECT_EQ(d->disk, "dm-0");
  EXPECT_EQ(d->backing_disks, std::vector<std::string>{"nvme0n1"});
}

TEST(DeviceForPath, RelativePathIsInvalid) {
  Result<PathDevice> d = DeviceForPath(Root(kFixtures + "/disk_host"), "data/x");
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), Status::Code::kInvalidArgument);
}

TEST(DeviceForPath, LiveCaptureRootIsVda) {
  Result<PathDevice> d = DeviceForPath(Root(kFixtures + "/live_debian12"), "/work/main");
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->fs_type, "ext4");
  EXPECT_EQ(d->device, "vda");
  EXPECT_EQ(d->disk, "vda");
}

// On the machine running the tests: the fixtures directory is on some mount;
// when that mount has a real device number, a block device must come out.
TEST(DeviceForPath, LiveMachine) {
  Result<PathDevice> d = DeviceForPath(Root("/"), kFixtures);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_FALSE(d->fs_type.empty());
  ASSERT_TRUE(d->statfs_type.has_value());
  if (d->fs_type == "ext4") {
    EXPECT_EQ(*d->statfs_type, 0xEF53);
  }
  if (d->mount.major != 0) {
    EXPECT_FALSE(d->device.empty()) << d->mount.major << ":" << d->mount.minor;
    EXPECT_FALSE(d->disk.empty());
  }
  Result<PathDevice> missing = DeviceForPath(Root("/"), "/no/such/path/stallscope");
  ASSERT_FALSE(missing.ok());
  EXPECT_TRUE(missing.status().IsNotFound());
}

}  // namespace
}  // namespace stallscope

namespace stallscope {
namespace {

// The test-only variable lowers the deadline, never raises it, and a value
// that is not a number in range leaves the documented 10 s.
TEST(RemoteDeadline, TestVariableOnlyLowersIt) {
  const auto with = [](const char* value) {
    ::setenv(kRemoteDeadlineTestVariable, value, 1);
    const double seconds = RemoteCallDeadlineSeconds();
    ::unsetenv(kRemoteDeadlineTestVariable);
    return seconds;
  };
  EXPECT_DOUBLE_EQ(RemoteCallDeadlineSeconds(), kRemoteCallDeadlineSeconds);
  EXPECT_DOUBLE_EQ(with("1.5"), 1.5);
  EXPECT_DOUBLE_EQ(with("0"), kRemoteCallDeadlineSeconds);
  EXPECT_DOUBLE_EQ(with("60"), kRemoteCallDeadlineSeconds);
  EXPECT_DOUBLE_EQ(with("2s"), kRemoteCallDeadlineSeconds);
}

}  // namespace
}  // namespace stallscope

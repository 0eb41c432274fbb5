// RemoteFsKnob on mount tables written after each client's documentation
// (tests/fixtures/remote_mounts): the knob named is that client's own, and
// NFS says what the mount sets now.
#include "analyze/host/remote_fs_knobs.h"

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <string>

#include "probe/mounts.h"

namespace stallscope {
namespace {

// The knob for the last mount of a fixture.
std::string KnobOf(const std::string& name) {
  const std::string path = std::string(STALLSCOPE_FIXTURES) + "/remote_mounts/" + name;
  std::ifstream in(path);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  Result<std::vector<MountEntry>> mounts = ParseMountinfo(text, path);
  EXPECT_TRUE(mounts.ok()) << path;
  if (!mounts.ok() || mounts->empty()) return "";
  const MountEntry& m = mounts->back();
  return RemoteFsKnob(m.fs_type, m.source, m.mount_options + "," + m.super_options);
}

void ExpectHas(const std::string& text, const std::string& part) {
  EXPECT_NE(text.find(part), std::string::npos) << "'" << part << "' not in: " << text;
}

TEST(RemoteFsKnob, NfsSaysWhatIsSetNow) {
  const std::string v4 = KnobOf("nfs4-nconnect.mountinfo");
  ExpectHas(v4, "actimeo=");
  ExpectHas(v4, "nconnect=");
  ExpectHas(v4, "now actimeo unset");
  ExpectHas(v4, "nconnect=8,");  // the mount's own value
  ExpectHas(v4, "rsize=1048576");
  const std::string v3 = KnobOf("nfs3-actimeo.mountinfo");
  ExpectHas(v3, "now acregmin=600");
  ExpectHas(v3, "nconnect unset");
  ExpectHas(v3, "rsize=65536");
}

TEST(RemoteFsKnob, EachClientItsOwnOptions) {
  ExpectHas(KnobOf("lustre.mountinfo"), "lfs setstripe -c");
  ExpectHas(KnobOf("s3fs.mountinfo"), "stat_cache_expire");
  ExpectHas(KnobOf("s3fs.mountinfo"), "use_cache");
  ExpectHas(KnobOf("gcsfuse.mountinfo"), "--metadata-cache-ttl-secs");
  ExpectHas(KnobOf("goofys.mountinfo"), "--stat-cache-ttl");
  // A plain "fuse" type: the client is named in the source only.
  ExpectHas(KnobOf("mountpoint-s3.mountinfo"), "--metadata-ttl");
  ExpectHas(KnobOf("blobfuse2.mountinfo"), "attr_cache");
  ExpectHas(KnobOf("rclone.mountinfo"), "--vfs-cache-mode");
  ExpectHas(KnobOf("sshfs.mountinfo"), "attr_timeout");
  EXPECT_EQ(RemoteFsKnob("ext4", "/dev/sda1", "rw"), "");
  EXPECT_EQ(RemoteFsKnob("fuse", "somedaemon", "rw"), "");
}

TEST(RemoteFsKnob, MountOption) {
  EXPECT_EQ(MountOption("rw,rsize=4096,hard", "rsize"), "4096");
  EXPECT_EQ(MountOption("rw,rsize=4096,hard", "hard"), "");
  EXPECT_FALSE(MountOption("rw,wrsize=1", "rsize"));
  EXPECT_FALSE(MountOption("", "rsize"));
}

}  // namespace
}  // namespace stallscope

#include "data/fs_magic.h"

namespace stallscope {
namespace {

struct Magic {
  int64_t value;
  std::string_view name;
  bool remote;
};

// From linux/magic.h and the file systems' own headers (Lustre, GPFS, BeeGFS,
// WekaFS are out of tree).
constexpr Magic kMagics[] = {
    {0x6969, "nfs", true},          {0x0BD00BD0, "lustre", true},   {0x47504653, "gpfs", true},
    {0xFF534D42, "cifs", true},     {0xFE534D42, "smb2", true},     {0x517B, "smbfs", true},
    {0x00C36400, "ceph", true},     {0x19830326, "beegfs", true},   {0x01021997, "9p", true},
    {0x5346414F, "afs", true},      {0x6B414653, "afs", true},      {0x65735546, "fuse", false},
    {0x794C7630, "overlay", false}, {0x01021994, "tmpfs", false},   {0x858458F6, "ramfs", false},
    {0xEF53, "ext4", false},        {0x58465342, "xfs", false},     {0x9123683E, "btrfs", false},
    {0x2FC12FC1, "zfs", false},     {0xF2F52010, "f2fs", false},    {0x73717368, "squashfs", false},
    {0x5346544E, "ntfs", false},    {0x4D44, "vfat", false},        {0x2011BAB0, "exfat", false},
    {0x9660, "iso9660", false},     {0x3153464A, "jfs", false},     {0x52654973, "reiserfs", false},
    {0x9FA0, "proc", false},        {0x62656572, "sysfs", false},   {0x1CD1, "devpts", false},
    {0x27E0EB, "cgroup", false},    {0x63677270, "cgroup2", false},
};

const Magic* Find(int64_t f_type) {
  // f_type is a signed long: some magics (0xFF534D42, 0x858458F6) come back
  // negative when the kernel's value is sign-extended; compare as 32 bits.
  const uint32_t key = static_cast<uint32_t>(f_type);
  for (const Magic& m : kMagics) {
    if (static_cast<uint32_t>(m.value) == key) return &m;
  }
  return nullptr;
}

}  // namespace

std::string_view FsMagicName(int64_t f_type) {
  const Magic* m = Find(f_type);
  return m == nullptr ? std::string_view() : m->name;
}

bool IsRemoteFsMagic(int64_t f_type) {
  const Magic* m = Find(f_type);
  return m != nullptr && m->remote;
}

}  // namespace stallscope

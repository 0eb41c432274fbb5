// statfs(2) f_type magic numbers and the file systems they name: the kernel's
// own answer to "what is this path on", used beside mountinfo's fs type
// (which can be missing or ambiguous inside containers). Pure; thread-safe.
#pragma once

#include <cstdint>
#include <string_view>

namespace stallscope {

// "nfs", "lustre", "gpfs", "cifs", "smb2", "fuse", "overlay", "tmpfs",
// "ext4" (ext2/3/4 share one magic), "xfs", "btrfs", ...; "" when unknown.
std::string_view FsMagicName(int64_t f_type);

// Network and cluster file systems by magic (nfs, lustre, gpfs, cifs, smb2,
// ceph, beegfs, 9p, afs, ...). FUSE is not among them: its magic does not say
// which daemon serves it, so mountinfo's "fuse.<daemon>" decides.
bool IsRemoteFsMagic(int64_t f_type);

}  // namespace stallscope

// What a training job's input file is, from its first bytes: an archive
// (zip, tar, 7z) or a compressed stream (gzip, bzip2, xz, zstd, lz4), and
// whether reading it costs the reader CPU to decompress. The loader rules
// name it in their evidence and `next` (a zip decompressed on every read
// makes the loader CPU-bound, however fast the disk). Pure; the open-files
// probe reads the bytes (probe/open_files.h).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace stallscope {

// The bytes InputFormatOf looks at: tar's "ustar" sits at offset 257.
inline constexpr size_t kInputFormatHeadBytes = 512;

struct InputFormat {
  std::string
      kind;  // "zip", "tar", "tar.gz", "gzip", "bzip2", "xz", "zstd", "lz4", "7z"; "" for none
  bool archive = false;     // holds many members (zip, tar, 7z, and tar inside a stream)
  bool compressed = false;  // decompressed as it is read (a zip's first member not stored)
  std::string method;  // zip's first member: "stored", "deflate", "bzip2", "lzma", "zstd", "xz"
};

// `head`: the file's first bytes (up to kInputFormatHeadBytes; fewer for a
// short file); `name`: its path, for the name-only distinction of
// tar.gz/tgz and tar.zst from a lone stream. Never fails: unknown bytes give
// an empty kind.
InputFormat InputFormatOf(std::string_view head, std::string_view name);

}  // namespace stallscope

namespace stallscope {

// A regular file a process of the job has open for reading, as one sample
// of its descriptors saw it (probe/open_files.h).
struct OpenInput {
  int32_t pid = 0;
  int fd = -1;
  std::string path;  // as the process sees it; " (deleted)" removed
  bool deleted = false;
  uint64_t position = 0;  // fdinfo's pos: how far it has read
  uint64_t size = 0;
  std::string fs_type;  // of the mount holding it, in the process's mount namespace
  bool remote = false;  // IsRemoteFsType(fs_type)
  uint32_t major = 0;   // st_dev of the file
  uint32_t minor = 0;
  std::string device;  // the block device ("vda1"), when the file system has one
  InputFormat format;
};

}  // namespace stallscope

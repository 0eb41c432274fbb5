// Input files named by their magic numbers (see input_format.h).
#include "sample/input_format.h"

#include <cstdint>

#include "core/text.h"

namespace stallscope {
namespace {

bool Has(std::string_view head, size_t at, std::string_view magic) {
  return head.size() >= at + magic.size() && head.substr(at, magic.size()) == magic;
}

// A zip member's compression method (APPNOTE 4.4.5) in the user's words.
std::string ZipMethod(uint16_t m) {
  switch (m) {
    case 0:
      return "stored";
    case 8:
      return "deflate";
    case 9:
      return "deflate64";
    case 12:
      return "bzip2";
    case 14:
      return "lzma";
    case 93:
      return "zstd";
    case 95:
      return "xz";
    case 99:
      return "aes";  // encrypted: decrypted and then inflated
    default:
      return "method " + std::to_string(m);
  }
}

// A stream whose name says a tar is inside it.
bool TarInside(std::string_view name, std::string_view stream_suffix,
               std::string_view short_suffix) {
  return EndsWith(name, std::string(".tar") + std::string(stream_suffix)) ||
         (!short_suffix.empty() && EndsWith(name, short_suffix));
}

}  // namespace

InputFormat InputFormatOf(std::string_view head, std::string_view name) {
  InputFormat f;
  auto stream = [&](const char* kind, std::string_view suffix, std::string_view short_suffix) {
    f.compressed = true;
    if (TarInside(name, suffix, short_suffix)) {
      f.kind = std::string("tar.") + std::string(suffix.substr(1));
      f.archive = true;
    } else {
      f.kind = kind;
    }
  };
  if (Has(head, 0, "PK\x03\x04")) {
    f.kind = "zip";
    f.archive = true;
    uint16_t method = 0;
    if (head.size() >= 10) {
      method = static_cast<uint16_t>(static_cast<unsigned char>(head[8]) |
                                     static_cast<unsigned char>(head[9]) << 8);
    }
    f.method = ZipMethod(method);
    f.compressed = method != 0;
  } else if (Has(head, 0, "PK\x05\x06")) {  // an empty zip: its end record alone
    f.kind = "zip";
    f.archive = true;
  } else if (Has(head, 0, "\x1f\x8b")) {
    stream("gzip", ".gz", ".tgz");
  } else if (Has(head, 0, "BZh")) {
    stream("bzip2", ".bz2", ".tbz2");
  } else if (Has(head, 0,
                 std::string_view("\xfd"
                                  "7zXZ\x00",
                                  6))) {
    stream("xz", ".xz", ".txz");
  } else if (Has(head, 0, "\x28\xb5\x2f\xfd")) {
    stream("zstd", ".zst", ".tzst");
  } else if (Has(head, 0, "\x04\x22\x4d\x18")) {
    stream("lz4", ".lz4", "");
  } else if (Has(head, 0, "7z\xbc\xaf\x27\x1c")) {
    f.kind = "7z";
    f.archive = true;
    f.compressed = true;                 // 7z's members are LZMA-compressed but for -mx0
  } else if (Has(head, 257, "ustar")) {  // POSIX "ustar\0" and GNU "ustar  "
    f.kind = "tar";
    f.archive = true;
  }
  return f;
}

}  // namespace stallscope

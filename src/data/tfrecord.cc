#include "data/tfrecord.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>

#include "core/file.h"
#include "data/crc32c.h"

namespace stallscope {
namespace {

void PutLe32(char* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<char>(v >> (8 * i));
}
void PutLe64(char* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<char>(v >> (8 * i));
}
uint32_t GetLe32(const char* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= uint32_t{static_cast<uint8_t>(p[i])} << (8 * i);
  return v;
}
uint64_t GetLe64(const char* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= uint64_t{static_cast<uint8_t>(p[i])} << (8 * i);
  return v;
}

// Records larger than this are refused rather than allocated (a corrupt
// length field must not ask for exabytes).
constexpr uint64_t kMaxRecord = uint64_t{16} << 30;

}  // namespace

std::array<char, kTfRecordHeaderSize> TfRecordHeader(uint64_t length) {
  std::array<char, kTfRecordHeaderSize> h;
  PutLe64(h.data(), length);
  PutLe32(h.data() + 8, MaskCrc32c(Crc32c(h.data(), 8)));
  return h;
}

std::array<char, kTfRecordFooterSize> TfRecordFooter(uint32_t data_crc) {
  std::array<char, kTfRecordFooterSize> f;
  PutLe32(f.data(), MaskCrc32c(data_crc));
  return f;
}

Result<TfRecordView> ParseTfRecord(std::string_view buf, std::string_view source) {
  if (buf.size() < kTfRecordHeaderSize)
    return Status::ParseError(source, 0,
                              fmt::format("truncated record header ({} of 12 bytes)", buf.size()));
  uint64_t length = GetLe64(buf.data());
  uint32_t want = GetLe32(buf.data() + 8);
  uint32_t got = MaskCrc32c(Crc32c(buf.data(), 8));
  if (want != got)
    return Status::ParseError(
        source, 0,
        fmt::format("length CRC mismatch (stored {:#010x}, computed {:#010x})", want, got));
  if (length > buf.size() - kTfRecordHeaderSize ||
      buf.size() - kTfRecordHeaderSize - length < kTfRecordFooterSize)
    return Status::ParseError(source, 0,
                              fmt::format("truncated record: {} data bytes + 4 CRC bytes declared, "
                                          "{} present",
                                          length, buf.size() - kTfRecordHeaderSize));
  std::string_view data = buf.substr(kTfRecordHeaderSize, length);
  want = GetLe32(buf.data() + kTfRecordHeaderSize + length);
  got = MaskCrc32c(Crc32c(data));
  if (want != got)
    return Status::ParseError(
        source, 0,
        fmt::format("data CRC mismatch (stored {:#010x}, computed {:#010x})", want, got));
  return TfRecordView{data, length + kTfRecordOverhead};
}

Result<TfRecordFile> TfRecordFile::Open(const std::string& path) {
  Result<OpenedFile> file = OpenForReading(path);
  if (!file.ok()) return file.status();
  return TfRecordFile(file->fd, path, file->size);
}

TfRecordFile::TfRecordFile(TfRecordFile&& other) noexcept
    : fd_(other.fd_),
      path_(std::move(other.path_)),
      size_(other.size_),
      buf_(std::move(other.buf_)) {
  other.fd_ = -1;
}

TfRecordFile::~TfRecordFile() {
  if (fd_ >= 0) ::close(fd_);
}

Result<std::string_view> TfRecordFile::ReadAt(uint64_t offset, uint64_t* framed_size) {
  std::string source = fmt::format("{}@{}", path_, offset);
  if (offset > size_ || size_ - offset < kTfRecordOverhead)
    return Status::ParseError(source, 0, "record header past the end of the file");
  char header[kTfRecordHeaderSize];
  if (pread(fd_, header, sizeof header, static_cast<off_t>(offset)) !=
      static_cast<ssize_t>(sizeof header))
    return Status::FromErrno(source, errno ? errno : EIO);
  uint64_t length = GetLe64(header);
  if (GetLe32(header + 8) != MaskCrc32c(Crc32c(header, 8)))
    return Status::ParseError(source, 0, "length CRC mismatch");
  if (length > kMaxRecord || length > size_ - offset - kTfRecordOverhead)
    return Status::ParseError(
        source, 0, fmt::format("record of {} bytes runs past the end of the file", length));
  buf_.resize(length + kTfRecordOverhead);
  uint64_t done = 0;
  while (done < buf_.size()) {
    ssize_t n =
        pread(fd_, buf_.data() + done, buf_.size() - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::FromErrno(source, errno);
    if (n == 0) return Status::ParseError(source, 0, "file shrank while reading");
    done += static_cast<uint64_t>(n);
  }
  Result<TfRecordView> rec = ParseTfRecord(buf_, source);
  if (!rec.ok()) return rec.status();
  if (framed_size) *framed_size = rec->framed_size;
  return rec->data;
}

}  // namespace stallscope

// TFRecord framing, exactly as TensorFlow's RecordWriter writes it:
//   uint64 length | uint32 masked_crc32c(length) | data | uint32 masked_crc32c(data)
// little-endian. The framing helpers are pure; TfRecordFile reads records of
// one shard file (sequentially or at an index offset) and checks both CRCs.
// A TfRecordFile is not thread-safe; open one per thread.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/status.h"

namespace stallscope {

inline constexpr size_t kTfRecordHeaderSize = 12;  // length + its CRC
inline constexpr size_t kTfRecordFooterSize = 4;   // CRC of the data
inline constexpr size_t kTfRecordOverhead = kTfRecordHeaderSize + kTfRecordFooterSize;

std::array<char, kTfRecordHeaderSize> TfRecordHeader(uint64_t length);
std::array<char, kTfRecordFooterSize> TfRecordFooter(uint32_t data_crc);  // unmasked CRC in

// One framed record parsed from the start of `buf`. `source` names where buf
// came from in errors ("shard-00000.tfrecord@4096").
struct TfRecordView {
  std::string_view data;
  uint64_t framed_size = 0;  // 16 + data.size()
};
// kParseError on a short buffer or a CRC mismatch.
Result<TfRecordView> ParseTfRecord(std::string_view buf, std::string_view source);

class TfRecordFile {
 public:
  static Result<TfRecordFile> Open(const std::string& path);
  TfRecordFile(TfRecordFile&& other) noexcept;
  TfRecordFile& operator=(TfRecordFile&&) = delete;
  ~TfRecordFile();

  uint64_t size() const { return size_; }
  // The record whose length field is at `offset`; the view stays valid until
  // the next call. Errors name the file and the offset.
  Result<std::string_view> ReadAt(uint64_t offset, uint64_t* framed_size = nullptr);

 private:
  TfRecordFile(int fd, std::string path, uint64_t size)
      : fd_(fd), path_(std::move(path)), size_(size) {}
  int fd_ = -1;
  std::string path_;
  uint64_t size_ = 0;
  std::string buf_;
};

}  // namespace stallscope

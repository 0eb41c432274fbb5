// The SampleWriters of `pack` (sample_writer.h). TFRecord: one framed
// tf.train.Example per file. WebDataset: tar members written by libarchive
// (pax restricted: plain ustar unless a name or size needs a pax header), one
// member per file named <key>.<ext>, plus <key>.cls with class folders;
// libarchive writes unblocked through our callback, so the shard offset after
// each member is exact and the index can point at every sample.
#include "data/sample_writer.h"

#include <fmt/format.h>

#include "core/libarchive_api.h"
#include "data/crc32c.h"
#include "data/example_proto.h"
#include "data/tar_reader.h"
#include "data/tfrecord.h"

namespace stallscope {

void PrepareTfRecordFile(SampleFile& file, std::optional<int64_t> label) {
  ExampleFraming framing = EncodeExampleFraming(file.path, file.size, label);
  uint32_t crc = Crc32c(framing.prefix);
  crc = Crc32cExtend(crc, file.data.get(), file.size);
  crc = Crc32cExtend(crc, framing.suffix.data(), framing.suffix.size());
  auto header = TfRecordHeader(framing.size(file.size));
  auto footer = TfRecordFooter(crc);
  file.head.assign(header.data(), header.size());
  file.head += framing.prefix;
  file.tail = std::move(framing.suffix);
  file.tail.append(footer.data(), footer.size());
}

namespace {

class TfRecordWriter final : public SampleWriter {
 public:
  Status Begin(ShardFile* file) override {
    file_ = file;
    return Status::Ok();
  }
  uint64_t BytesFor(const std::vector<std::pair<std::string, uint64_t>>& files) const override {
    uint64_t total = 0;
    for (const auto& [name, size] : files)  // label of up to 10 varint bytes
      total += kTfRecordOverhead + EncodeExampleFraming(name, size, INT64_MAX).size(size);
    return total;
  }
  uint64_t TrailerBytes() const override { return 0; }
  Status Write(const Sample& sample, std::vector<IndexEntry>& index) override {
    for (const SampleFile& f : sample.files) {
      uint64_t start = file_->offset();
      if (Status s = file_->Append(f.head); !s.ok()) return s;
      if (Status s = file_->Append(f.data.get(), f.size); !s.ok()) return s;
      if (Status s = file_->Append(f.tail); !s.ok()) return s;
      index.push_back({start, file_->offset() - start});
    }
    return Status::Ok();
  }
  Status Finish() override {
    file_ = nullptr;
    return Status::Ok();
  }

 private:
  ShardFile* file_ = nullptr;
};

}  // namespace

std::unique_ptr<SampleWriter> MakeTfRecordWriter() { return std::make_unique<TfRecordWriter>(); }

namespace {

constexpr uint64_t kUstarMaxSize = (uint64_t{1} << 33) - 1;  // 11 octal digits

uint64_t Padded(uint64_t n) { return (n + kTarBlock - 1) / kTarBlock * kTarBlock; }

class WdsWriter final : public SampleWriter {
 public:
  WdsWriter() : entry_(archive_entry_new()) {}
  ~WdsWriter() override {
    if (archive_) archive_write_free(archive_);
    archive_entry_free(entry_);
  }

  Status Begin(ShardFile* file) override {
    file_ = file;
    error_ = Status::Ok();
    archive_ = archive_write_new();
    if (!archive_ || archive_write_set_format_pax_restricted(archive_) != ARCHIVE_OK ||
        archive_write_set_bytes_per_block(archive_, 0) != ARCHIVE_OK ||
        archive_write_set_bytes_in_last_block(archive_, 1) != ARCHIVE_OK)
      return ArchiveError("setting up the tar writer");
    if (archive_write_open(archive_, this, nullptr, &WdsWriter::WriteCallback, nullptr) !=
        ARCHIVE_OK)
      return ArchiveError("opening the tar writer");
    return Status::Ok();
  }

  uint64_t BytesFor(const std::vector<std::pair<std::string, uint64_t>>& files) const override {
    uint64_t total = 0;
    auto member = [](uint64_t name_size, uint64_t size) {
      uint64_t bytes = kTarBlock + Padded(size);
      // A pax header (long or non-ASCII name, huge size) is one header block
      // and its records: bounded by twice the name plus room for the others.
      if (name_size > 99 || size > kUstarMaxSize) bytes += kTarBlock + Padded(2 * name_size + 512);
      return bytes;
    };
    for (const auto& [name, size] : files) {
      total += member(name.size(), size);
      bool ascii = true;
      for (char c : name) ascii = ascii && static_cast<unsigned char>(c) < 0x80;
      if (!ascii && name.size() <= 99) total += kTarBlock + Padded(2 * name.size() + 512);
    }
    if (!files.empty()) total += member(files.front().first.size() + 4, 20);  // <key>.cls
    return total;
  }
  uint64_t TrailerBytes() const override { return 2 * kTarBlock; }

  Status Write(const Sample& sample, std::vector<IndexEntry>& index) override {
    uint64_t start = file_->offset();
    // <key>.cls takes its place in byte order of extensions, unless the
    // sample already has a .cls file of its own.
    bool cls_pending = sample.label.has_value();
    for (const SampleFile& f : sample.files)
      if (SplitKey(f.path).second == "cls") cls_pending = false;
    int64_t mtime = sample.files.empty() ? 0 : sample.files.front().mtime_sec;
    for (const SampleFile& f : sample.files) {
      if (cls_pending && SplitKey(f.path).second > "cls") {
        if (Status s = LabelMember(sample, mtime); !s.ok()) return s;
        cls_pending = false;
      }
      if (Status s = Member(f.path, f.data.get(), f.size, f.mtime_sec); !s.ok()) return s;
    }
    if (cls_pending)
      if (Status s = LabelMember(sample, mtime); !s.ok()) return s;
    index.push_back({start, file_->offset() - start});
    return Status::Ok();
  }

  Status Finish() override {
    int rc = archive_write_close(archive_);
    Status s = rc == ARCHIVE_OK ? Status::Ok() : ArchiveError("closing the tar");
    archive_write_free(archive_);
    archive_ = nullptr;
    file_ = nullptr;
    return s;
  }

 private:
  static la_ssize_t WriteCallback(struct archive* a, void* self_ptr, const void* buf, size_t n) {
    auto* self = static_cast<WdsWriter*>(self_ptr);
    Status s = self->file_->Append(buf, n);
    if (!s.ok()) {
      self->error_ = s;
      archive_set_error(a, EIO, "%s", s.message().c_str());
      return -1;
    }
    return static_cast<la_ssize_t>(n);
  }

  Status Member(const std::string& name, const char* data, uint64_t size, int64_t mtime) {
    archive_entry_clear(entry_);
    // Names are the file system's bytes, stored as they are: ASCII in the
    // ustar header (a pax "path" record when long); anything else in a pax
    // record marked hdrcharset=BINARY, which libarchive answers with
    // ARCHIVE_WARN (it cannot name a charset for bytes). The _utf8 setter is
    // no way out: in the C locale libarchive crashes converting its result.
    bool ascii = true;
    for (char c : name) ascii = ascii && static_cast<unsigned char>(c) < 0x80;
    archive_entry_copy_pathname(entry_, name.c_str());
    archive_entry_set_filetype(entry_, AE_IFREG);
    archive_entry_set_perm(entry_, 0644);
    archive_entry_set_size(entry_, static_cast<la_int64_t>(size));
    archive_entry_set_mtime(entry_, mtime, 0);
    int rc = archive_write_header(archive_, entry_);
    if (rc != ARCHIVE_OK && !(rc == ARCHIVE_WARN && !ascii))
      return ArchiveError(fmt::format("writing the tar header of {}", name));
    uint64_t done = 0;
    while (done < size) {
      la_ssize_t n = archive_write_data(archive_, data + done, size - done);
      if (n <= 0) return ArchiveError(fmt::format("writing {} into the tar", name));
      done += static_cast<uint64_t>(n);
    }
    if (archive_write_finish_entry(archive_) != ARCHIVE_OK)
      return ArchiveError(fmt::format("finishing {} in the tar", name));
    return Status::Ok();
  }

  Status LabelMember(const Sample& sample, int64_t mtime) {
    std::string cls = fmt::format("{}", *sample.label);
    return Member(sample.key + ".cls", cls.data(), cls.size(), mtime);
  }

  // A failed write of ours carries the errno text (ENOSPC); otherwise libarchive's.
  Status ArchiveError(std::string_view what) {
    if (!error_.ok()) return error_;
    const char* msg = archive_ ? archive_error_string(archive_) : nullptr;
    return Status::Unavailable(fmt::format("{}: {}", what, msg ? msg : "libarchive error"));
  }

  ShardFile* file_ = nullptr;
  struct archive* archive_ = nullptr;
  struct archive_entry* entry_;
  Status error_;
};

}  // namespace

std::unique_ptr<SampleWriter> MakeSampleWriter(PackFormat format) {
  if (format == PackFormat::kTfRecord) return MakeTfRecordWriter();
  return std::make_unique<WdsWriter>();
}

}  // namespace stallscope

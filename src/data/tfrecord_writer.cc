// SampleWriter for TFRecord: one framed tf.train.Example per file.
#include "data/crc32c.h"
#include "data/example_proto.h"
#include "data/sample_writer.h"
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

}  // namespace stallscope

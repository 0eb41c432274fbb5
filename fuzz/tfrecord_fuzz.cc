// libFuzzer target: TFRecord framing and the tf.train.Example parser over
// arbitrary bytes must return a value or a ParseError, never crash or read
// out of bounds. The input is walked as a shard: record after record.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "data/example_proto.h"
#include "data/tfrecord.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view buf(reinterpret_cast<const char*>(data), size);
  // The bytes as one Example, as the data of a record would be.
  (void)stallscope::ParsePackedRecord(buf, "fuzz");
  while (!buf.empty()) {
    stallscope::Result<stallscope::TfRecordView> rec = stallscope::ParseTfRecord(buf, "fuzz");
    if (!rec.ok()) break;
    stallscope::Result<stallscope::ParsedExample> ex = stallscope::ParseExample(rec->data, "fuzz");
    if (ex.ok())
      for (const auto& [name, f] : ex->features) (void)(name.size() + f.bytes.size());
    buf.remove_prefix(rec->framed_size);
  }
  return 0;
}

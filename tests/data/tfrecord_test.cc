// TFRecord framing known answers (bytes as TensorFlow's RecordWriter writes
// them, computed independently with a bitwise CRC32C), the hand-made
// tf.train.Example against hand-assembled protobuf bytes, and the parsers'
// refusals of damaged input.
#include "data/tfrecord.h"

#include <gtest/gtest.h>

#include <string>

#include "data/crc32c.h"
#include "data/example_proto.h"

namespace stallscope {
namespace {

std::string Hex(std::string_view s) {
  std::string out;
  for (unsigned char c : s) out += "0123456789abcdef"[c >> 4], out += "0123456789abcdef"[c & 15];
  return out;
}

std::string Frame(std::string_view data) {
  auto h = TfRecordHeader(data.size());
  auto f = TfRecordFooter(Crc32c(data));
  return std::string(h.data(), h.size()) + std::string(data) + std::string(f.data(), f.size());
}

TEST(TfRecord, FramingKnownAnswers) {
  EXPECT_EQ(Hex(Frame("")), "000000000000000029039807d8ea82a2");
  EXPECT_EQ(Hex(Frame("hello")), "0500000000000000eab2043e68656c6c6fbb1f1c19");
  EXPECT_EQ(Hex(Frame("123456789")), "090000000000000037f97139313233343536373839e5b08ac7");
}

TEST(TfRecord, ParseReturnsDataAndRefusesDamage) {
  std::string rec = Frame("hello") + "trailing";
  Result<TfRecordView> v = ParseTfRecord(rec, "t");
  ASSERT_TRUE(v.ok()) << v.status().message();
  EXPECT_EQ(v->data, "hello");
  EXPECT_EQ(v->framed_size, 21u);

  std::string bad_data = Frame("hello");
  bad_data[13] ^= 1;
  Result<TfRecordView> e = ParseTfRecord(bad_data, "shard@0");
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("data CRC mismatch"), std::string::npos);
  EXPECT_NE(e.status().message().find("shard@0"), std::string::npos);

  std::string bad_len = Frame("hello");
  bad_len[0] = 6;
  EXPECT_NE(ParseTfRecord(bad_len, "t").status().message().find("length CRC"), std::string::npos);
  EXPECT_NE(ParseTfRecord(Frame("hello").substr(0, 20), "t").status().message().find("truncated"),
            std::string::npos);
  EXPECT_FALSE(ParseTfRecord("short", "t").ok());
}

TEST(Example, EncodingMatchesHandAssembledProtobuf) {
  // Example{features{feature{"data": bytes "xy"}, {"key": bytes "a/b.jpg"}, {"label": int64 3}}}
  ExampleFraming f = EncodeExampleFraming("a/b.jpg", 2, 3);
  std::string msg = f.prefix + "xy" + f.suffix;
  std::string data_entry =
      std::string("\x0a\x04") + "data" + "\x12\x06" + "\x0a\x04" + "\x0a\x02" + "xy";
  std::string key_entry =
      std::string("\x0a\x03") + "key" + "\x12\x0b" + "\x0a\x09" + "\x0a\x07" + "a/b.jpg";
  std::string label_entry =
      std::string("\x0a\x05") + "label" + "\x12\x05" + "\x1a\x03" + "\x0a\x01\x03";
  std::string features = "\x0a" + std::string(1, static_cast<char>(data_entry.size())) +
                         data_entry + "\x0a" + std::string(1, static_cast<char>(key_entry.size())) +
                         key_entry + "\x0a" +
                         std::string(1, static_cast<char>(label_entry.size())) + label_entry;
  std::string example = "\x0a" + std::string(1, static_cast<char>(features.size())) + features;
  EXPECT_EQ(Hex(msg), Hex(example));
  EXPECT_EQ(f.size(2), msg.size());
}

TEST(Example, RoundTripsLargePayloadAndNoLabel) {
  std::string data(300000, 'z');
  ExampleFraming f = EncodeExampleFraming("dir/file.bin", data.size(), std::nullopt);
  std::string msg = f.prefix + data + f.suffix;
  Result<PackedRecord> r = ParsePackedRecord(msg, "t");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->key, "dir/file.bin");
  EXPECT_EQ(r->data, data);
  EXPECT_FALSE(r->label.has_value());

  ExampleFraming g = EncodeExampleFraming("k", 0, 1000000);
  Result<PackedRecord> l = ParsePackedRecord(g.prefix + g.suffix, "t");
  ASSERT_TRUE(l.ok()) << l.status().message();
  EXPECT_EQ(l->label, 1000000);
  EXPECT_EQ(l->data, "");
}

TEST(Example, ReadsUnpackedInt64FloatsAndSkipsUnknownFields) {
  // Feature{int64_list{value: 5 (unpacked), value: 7}} and a float list, plus
  // an unknown varint field 9 at the top.
  std::string ints = std::string("\x1a\x04") + "\x08\x05\x08\x07";
  std::string floats = std::string("\x12\x06") + "\x0a\x04" + std::string("\x00\x00\x80\x3f", 4);
  auto entry = [](std::string name, std::string feature) {
    std::string e = "\x0a" + std::string(1, static_cast<char>(name.size())) + name + "\x12" +
                    std::string(1, static_cast<char>(feature.size())) + feature;
    return "\x0a" + std::string(1, static_cast<char>(e.size())) + e;
  };
  std::string features = entry("n", ints) + entry("f", floats);
  std::string msg = std::string("\x48\x01") + "\x0a" +
                    std::string(1, static_cast<char>(features.size())) + features;
  Result<ParsedExample> ex = ParseExample(msg, "t");
  ASSERT_TRUE(ex.ok()) << ex.status().message();
  ASSERT_NE(ex->Find("n"), nullptr);
  EXPECT_EQ(ex->Find("n")->ints, (std::vector<int64_t>{5, 7}));
  ASSERT_NE(ex->Find("f"), nullptr);
  EXPECT_EQ(ex->Find("f")->floats, (std::vector<float>{1.0f}));
  EXPECT_EQ(ex->Find("missing"), nullptr);
}

TEST(Example, RefusesTruncationAndMissingFeatures) {
  ExampleFraming f = EncodeExampleFraming("k.jpg", 4, 1);
  std::string msg = f.prefix + "abcd" + f.suffix;
  for (size_t cut = 1; cut < msg.size(); ++cut) {
    Result<ParsedExample> ex = ParseExample(msg.substr(0, cut), "cut");
    if (ex.ok()) continue;  // a cut on a field boundary is a valid smaller message
    EXPECT_NE(ex.status().message().find("cut"), std::string::npos);
  }
  EXPECT_FALSE(ParsePackedRecord(msg.substr(0, msg.size() - 1), "t").ok());
  Result<PackedRecord> none = ParsePackedRecord("", "empty");
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("\"key\""), std::string::npos);
}

}  // namespace
}  // namespace stallscope

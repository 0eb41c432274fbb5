// tf.train.Example wire format: varints, length-delimited fields, and the
// skipping of everything we do not know.
#include "data/example_proto.h"

#include <fmt/format.h>

#include <cstring>

namespace stallscope {
namespace {

constexpr int kWireVarint = 0;
constexpr int kWireFixed64 = 1;
constexpr int kWireLen = 2;
constexpr int kWireFixed32 = 5;
// A protobuf message is at most 2 GiB; nesting here is four levels deep.
constexpr uint64_t kMaxMessage = uint64_t{1} << 31;

void PutVarint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

uint64_t VarintSize(uint64_t v) {
  uint64_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}

// Size of a length-delimited field (tag 1 byte) with a body of n bytes.
uint64_t LenFieldSize(uint64_t n) { return 1 + VarintSize(n) + n; }

void PutLenHeader(std::string& out, int field, uint64_t n) {
  out.push_back(static_cast<char>((field << 3) | kWireLen));
  PutVarint(out, n);
}

// A map entry {key: name, value: Feature}, whose Feature body is `feature_size` bytes.
uint64_t EntrySize(std::string_view name, uint64_t feature_size) {
  return LenFieldSize(name.size()) + LenFieldSize(feature_size);
}

void PutEntryHeader(std::string& out, std::string_view name, uint64_t feature_size) {
  PutLenHeader(out, 1, EntrySize(name, feature_size));  // Features.feature
  PutLenHeader(out, 1, name.size());                    // entry.key
  out.append(name);
  PutLenHeader(out, 2, feature_size);  // entry.value
}

// Feature{bytes_list{value: one string of n bytes}} body size.
uint64_t BytesFeatureSize(uint64_t n) { return LenFieldSize(LenFieldSize(n)); }

void PutBytesFeature(std::string& out, std::string_view name, uint64_t n) {
  uint64_t list = LenFieldSize(n);
  PutEntryHeader(out, name, LenFieldSize(list));
  PutLenHeader(out, 1, list);  // Feature.bytes_list
  PutLenHeader(out, 1, n);     // BytesList.value
}

class Cursor {
 public:
  Cursor(std::string_view data, std::string_view source) : data_(data), source_(source) {}
  bool done() const { return pos_ >= data_.size(); }

  Result<uint64_t> Varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (pos_ >= data_.size()) return Error("varint runs past the end");
      auto b = static_cast<uint8_t>(data_[pos_++]);
      v |= uint64_t{b & 0x7fu} << shift;
      if (!(b & 0x80)) return v;
    }
    return Error("varint longer than 10 bytes");
  }
  Result<std::string_view> Bytes(uint64_t n) {
    if (n > data_.size() - pos_)
      return Error(fmt::format("field of {} bytes runs past the end", n));
    std::string_view v = data_.substr(pos_, n);
    pos_ += n;
    return v;
  }
  Result<std::string_view> LenDelimited() {
    Result<uint64_t> n = Varint();
    if (!n.ok()) return n.status();
    if (*n > kMaxMessage) return Error("length over 2 GiB");
    return Bytes(*n);
  }
  Status Skip(int wire) {
    switch (wire) {
      case kWireVarint:
        return Varint().status();
      case kWireFixed64:
        return Bytes(8).status();
      case kWireFixed32:
        return Bytes(4).status();
      case kWireLen:
        return LenDelimited().status();
      default:
        return Error(fmt::format("unsupported wire type {}", wire));
    }
  }
  // Reads a tag; returns {field, wire}.
  Result<std::pair<uint64_t, int>> Tag() {
    Result<uint64_t> t = Varint();
    if (!t.ok()) return t.status();
    if ((*t >> 3) == 0) return Error("field number 0");
    return std::pair<uint64_t, int>{*t >> 3, static_cast<int>(*t & 7)};
  }
  Status Error(std::string_view what) const {
    return Status::ParseError(source_, 0, fmt::format("tf.train.Example byte {}: {}", pos_, what));
  }

 private:
  std::string_view data_;
  std::string_view source_;
  size_t pos_ = 0;
};

// Repeated numbers: packed (one LEN field) or one field per value.
template <typename T, typename Read>
Status ReadNumbers(std::string_view list, std::string_view source, int wire_one, Read read,
                   std::vector<T>& out) {
  Cursor c(list, source);
  while (!c.done()) {
    auto tag = c.Tag();
    if (!tag.ok()) return tag.status();
    auto [field, wire] = *tag;
    if (field != 1) {
      if (Status s = c.Skip(wire); !s.ok()) return s;
    } else if (wire == kWireLen) {
      auto packed = c.LenDelimited();
      if (!packed.ok()) return packed.status();
      Cursor p(*packed, source);
      while (!p.done()) {
        Result<T> v = read(p);
        if (!v.ok()) return v.status();
        out.push_back(*v);
      }
    } else if (wire == wire_one) {
      Result<T> v = read(c);
      if (!v.ok()) return v.status();
      out.push_back(*v);
    } else {
      return c.Error("number list value of the wrong wire type");
    }
  }
  return Status::Ok();
}

Status ParseFeature(std::string_view body, std::string_view source, ParsedFeature& f) {
  Cursor c(body, source);
  while (!c.done()) {
    auto tag = c.Tag();
    if (!tag.ok()) return tag.status();
    auto [field, wire] = *tag;
    if (field < 1 || field > 3) {
      if (Status s = c.Skip(wire); !s.ok()) return s;
      continue;
    }
    if (wire != kWireLen) return c.Error("Feature kind is not length-delimited");
    auto list = c.LenDelimited();
    if (!list.ok()) return list.status();
    // oneof: the last kind seen wins, as in protobuf.
    f = ParsedFeature{};
    if (field == 1) {
      f.kind = ParsedFeature::Kind::kBytes;
      Cursor l(*list, source);
      while (!l.done()) {
        auto t = l.Tag();
        if (!t.ok()) return t.status();
        if (t->first == 1 && t->second == kWireLen) {
          auto v = l.LenDelimited();
          if (!v.ok()) return v.status();
          f.bytes.push_back(*v);
        } else if (Status s = l.Skip(t->second); !s.ok()) {
          return s;
        }
      }
    } else if (field == 2) {
      f.kind = ParsedFeature::Kind::kFloat;
      auto read = [](Cursor& p) -> Result<float> {
        auto b = p.Bytes(4);
        if (!b.ok()) return b.status();
        float v;
        std::memcpy(&v, b->data(), 4);
        return v;
      };
      if (Status s = ReadNumbers<float>(*list, source, kWireFixed32, read, f.floats); !s.ok())
        return s;
    } else {
      f.kind = ParsedFeature::Kind::kInt64;
      auto read = [](Cursor& p) -> Result<int64_t> {
        auto v = p.Varint();
        if (!v.ok()) return v.status();
        return static_cast<int64_t>(*v);
      };
      if (Status s = ReadNumbers<int64_t>(*list, source, kWireVarint, read, f.ints); !s.ok())
        return s;
    }
  }
  return Status::Ok();
}

}  // namespace

ExampleFraming EncodeExampleFraming(std::string_view key, uint64_t data_size,
                                    std::optional<int64_t> label) {
  uint64_t data_entry = EntrySize("data", BytesFeatureSize(data_size));
  uint64_t key_entry = EntrySize("key", BytesFeatureSize(key.size()));
  uint64_t label_feature = 0;
  uint64_t label_list = 0;
  if (label) {
    label_list = LenFieldSize(VarintSize(static_cast<uint64_t>(*label)));  // packed
    label_feature = LenFieldSize(label_list);
  }
  uint64_t features = LenFieldSize(data_entry) + LenFieldSize(key_entry) +
                      (label ? LenFieldSize(EntrySize("label", label_feature)) : 0);
  ExampleFraming out;
  PutLenHeader(out.prefix, 1, features);  // Example.features
  PutBytesFeature(out.prefix, "data", data_size);
  PutBytesFeature(out.suffix, "key", key.size());
  out.suffix.append(key);
  if (label) {
    PutEntryHeader(out.suffix, "label", label_feature);
    PutLenHeader(out.suffix, 3, label_list);  // Feature.int64_list
    PutLenHeader(out.suffix, 1, VarintSize(static_cast<uint64_t>(*label)));
    PutVarint(out.suffix, static_cast<uint64_t>(*label));
  }
  return out;
}

const ParsedFeature* ParsedExample::Find(std::string_view name) const {
  const ParsedFeature* found = nullptr;
  for (const auto& [n, f] : features)
    if (n == name) found = &f;
  return found;
}

Result<ParsedExample> ParseExample(std::string_view message, std::string_view source) {
  ParsedExample ex;
  Cursor top(message, source);
  while (!top.done()) {
    auto tag = top.Tag();
    if (!tag.ok()) return tag.status();
    if (tag->first != 1 || tag->second != kWireLen) {
      if (Status s = top.Skip(tag->second); !s.ok()) return s;
      continue;
    }
    auto features = top.LenDelimited();
    if (!features.ok()) return features.status();
    Cursor fc(*features, source);
    while (!fc.done()) {
      auto ft = fc.Tag();
      if (!ft.ok()) return ft.status();
      if (ft->first != 1 || ft->second != kWireLen) {
        if (Status s = fc.Skip(ft->second); !s.ok()) return s;
        continue;
      }
      auto entry = fc.LenDelimited();
      if (!entry.ok()) return entry.status();
      std::string_view name;
      ParsedFeature feature;
      Cursor ec(*entry, source);
      while (!ec.done()) {
        auto et = ec.Tag();
        if (!et.ok()) return et.status();
        if (et->first == 1 && et->second == kWireLen) {
          auto n = ec.LenDelimited();
          if (!n.ok()) return n.status();
          name = *n;
        } else if (et->first == 2 && et->second == kWireLen) {
          auto body = ec.LenDelimited();
          if (!body.ok()) return body.status();
          if (Status s = ParseFeature(*body, source, feature); !s.ok()) return s;
        } else if (Status s = ec.Skip(et->second); !s.ok()) {
          return s;
        }
      }
      ex.features.emplace_back(name, std::move(feature));
    }
  }
  return ex;
}

Result<PackedRecord> ParsePackedRecord(std::string_view message, std::string_view source) {
  Result<ParsedExample> ex = ParseExample(message, source);
  if (!ex.ok()) return ex.status();
  auto one_bytes = [&](std::string_view name) -> Result<std::string_view> {
    const ParsedFeature* f = ex->Find(name);
    if (!f || f->kind != ParsedFeature::Kind::kBytes || f->bytes.size() != 1)
      return Status::ParseError(source, 0,
                                fmt::format("feature \"{}\" is not one bytes value", name));
    return f->bytes[0];
  };
  PackedRecord rec;
  auto key = one_bytes("key");
  if (!key.ok()) return key.status();
  auto data = one_bytes("data");
  if (!data.ok()) return data.status();
  rec.key = *key;
  rec.data = *data;
  if (const ParsedFeature* label = ex->Find("label")) {
    if (label->kind != ParsedFeature::Kind::kInt64 || label->ints.size() != 1)
      return Status::ParseError(source, 0, "feature \"label\" is not one int64 value");
    rec.label = label->ints[0];
  }
  return rec;
}

}  // namespace stallscope

// The pickle reader of builtin values (formats/flight_recorder/pickle.h) and
// the JSON reader beside it (formats/flight_recorder/json.h), opcode by
// opcode on pickles built here byte by byte as pickletools documents them:
// every value opcode, the memo (shared and self-containing values), marks,
// frames; every refused opcode named with its byte offset; truncation at
// every length; lengths and nesting that must not allocate or recurse.
#include "formats/flight_recorder/pickle.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "formats/flight_recorder/json.h"

namespace stallscope {
namespace {

// A pickle written by hand: opcodes and little-endian arguments.
class Bytes {
 public:
  Bytes& op(uint8_t c) {
    s_.push_back(static_cast<char>(c));
    return *this;
  }
  Bytes& le(uint64_t v, int n) {
    for (int i = 0; i < n; ++i) s_.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
    return *this;
  }
  Bytes& raw(std::string_view text) {
    s_.append(text);
    return *this;
  }
  Bytes& proto(int p = 2) { return op(0x80).le(static_cast<uint64_t>(p), 1); }
  Bytes& unicode(std::string_view t) { return op('X').le(t.size(), 4).raw(t); }
  Bytes& short_unicode(std::string_view t) { return op(0x8c).le(t.size(), 1).raw(t); }
  Bytes& int1(uint8_t v) { return op('K').le(v, 1); }
  Bytes& stop() { return op('.'); }
  const std::string& str() const { return s_; }

 private:
  std::string s_;
};

FrValueTree Parse(const Bytes& b) {
  Result<FrValueTree> t = ParsePickle(b.str(), "test.pkl");
  EXPECT_TRUE(t.ok()) << t.status().message();
  return t.ok() ? std::move(t.value()) : FrValueTree{};
}

std::string Error(const std::string& bytes) {
  Result<FrValueTree> t = ParsePickle(bytes, "test.pkl");
  EXPECT_FALSE(t.ok());
  return t.ok() ? "" : t.status().message();
}

const FrValue& Item(const FrValueTree& t, const FrValue& v, size_t i) {
  return t.at(v.items.at(i));
}

TEST(FlightRecorderPickle, ReadsEachScalarOpcode) {
  Bytes b;
  b.proto(2).op(']').op('(');
  b.op('N').op(0x88).op(0x89);
  b.op('J').le(static_cast<uint32_t>(-5), 4);                         // BININT
  b.int1(200);                                                        // BININT1
  b.op('M').le(60000, 2);                                             // BININT2
  b.op(0x8a).le(8, 1).le(1758610505592849034, 8);                     // LONG1
  b.op(0x8a).le(1, 1).le(0xff, 1);                                    // LONG1 -1
  b.op(0x8a).le(0, 1);                                                // LONG1 0 (no bytes)
  b.op(0x8b).le(2, 4).le(0x0100, 2);                                  // LONG4 256
  b.op('G').raw(std::string("\x3f\xf8\x00\x00\x00\x00\x00\x00", 8));  // BINFLOAT 1.5
  b.unicode("BFloat16").short_unicode("nccl:all_reduce");
  b.op(0x8d).le(3, 8).raw("abc");  // BINUNICODE8
  b.op('e').stop();
  FrValueTree t = Parse(b);
  const FrValue& list = t.at(t.root);
  ASSERT_EQ(list.kind, FrValueKind::kList);
  ASSERT_EQ(list.items.size(), 14u);
  EXPECT_EQ(Item(t, list, 0).kind, FrValueKind::kNone);
  EXPECT_TRUE(Item(t, list, 1).boolean);
  EXPECT_EQ(Item(t, list, 2).kind, FrValueKind::kBool);
  EXPECT_FALSE(Item(t, list, 2).boolean);
  EXPECT_EQ(Item(t, list, 3).integer, -5);
  EXPECT_EQ(Item(t, list, 4).integer, 200);
  EXPECT_EQ(Item(t, list, 5).integer, 60000);
  EXPECT_EQ(Item(t, list, 6).integer, 1758610505592849034);
  EXPECT_EQ(Item(t, list, 7).integer, -1);
  EXPECT_EQ(Item(t, list, 8).integer, 0);
  EXPECT_EQ(Item(t, list, 9).integer, 256);
  EXPECT_EQ(Item(t, list, 10).kind, FrValueKind::kFloat);
  EXPECT_DOUBLE_EQ(Item(t, list, 10).number, 1.5);
  EXPECT_EQ(Item(t, list, 11).text, "BFloat16");
  EXPECT_EQ(Item(t, list, 12).text, "nccl:all_reduce");
  EXPECT_EQ(Item(t, list, 13).text, "abc");
}

TEST(FlightRecorderPickle, LongsWiderThanEightBytesOnlyWhenSignExtended) {
  Bytes ok;
  ok.proto().op(0x8a).le(9, 1).le(static_cast<uint64_t>(-7), 8).le(0xff, 1).stop();
  FrValueTree t = Parse(ok);
  EXPECT_EQ(t.at(t.root).integer, -7);
  Bytes wide;
  wide.proto().op(0x8a).le(9, 1).le(0, 8).le(1, 1).stop();
  EXPECT_NE(Error(wide.str()).find("wider than 64 bits"), std::string::npos);
  Bytes top;  // 2^63 as 9 bytes: positive, but not an int64
  top.proto().op(0x8a).le(9, 1).le(uint64_t{1} << 63, 8).le(0, 1).stop();
  EXPECT_NE(Error(top.str()).find("wider than 64 bits"), std::string::npos);
}

TEST(FlightRecorderPickle, BuildsContainers) {
  // {"t1": (1,), "t2": (1, 2), "t3": (1, 2, 3), "t": (1, 2, 3, 4), "e": (),
  //  "l": [1, 2], "d": {"k": None}} with SETITEM and SETITEMS.
  Bytes b;
  b.proto(4).op(0x95).le(0, 8);  // an empty FRAME is allowed
  b.op('}').op(0x94);            // MEMOIZE
  b.short_unicode("t1").int1(1).op(0x85).op('s');
  b.op('(');
  b.short_unicode("t2").int1(1).int1(2).op(0x86);
  b.short_unicode("t3").int1(1).int1(2).int1(3).op(0x87);
  b.short_unicode("t").op('(').int1(1).int1(2).int1(3).int1(4).op('t');
  b.short_unicode("e").op(')');
  b.short_unicode("l").op(']').int1(1).op('a').int1(2).op('a');
  b.short_unicode("d").op('}').short_unicode("k").op('N').op('s');
  b.op('u').stop();
  FrValueTree t = Parse(b);
  const FrValue& d = t.at(t.root);
  ASSERT_EQ(d.kind, FrValueKind::kDict);
  ASSERT_EQ(d.items.size(), 14u);
  size_t sizes[] = {1, 2, 3, 4, 0, 2, 2};
  FrValueKind kinds[] = {FrValueKind::kTuple, FrValueKind::kTuple, FrValueKind::kTuple,
                         FrValueKind::kTuple, FrValueKind::kTuple, FrValueKind::kList,
                         FrValueKind::kDict};
  for (size_t i = 0; i < 7; ++i) {
    const FrValue& v = Item(t, d, 2 * i + 1);
    EXPECT_EQ(v.kind, kinds[i]) << i;
    EXPECT_EQ(v.items.size(), sizes[i]) << i;
  }
  EXPECT_EQ(Item(t, Item(t, d, 7), 3).integer, 4);
}

TEST(FlightRecorderPickle, MemoSharesOneValue) {
  // {"x": L, "y": L} with L = [] put in the memo, then 5 appended to L
  // through a GET: both keys see it, as Python's shared list does.
  Bytes b;
  b.proto().op('}').op('q').le(0, 1).op('(');
  b.unicode("x").op(']').op('q').le(1, 1);
  b.unicode("y").op('h').le(1, 1);
  b.op('u');
  b.op('h').le(1, 1).int1(5).op('a').op('0');           // GET L, append 5, POP it
  b.op('r').le(70000, 4).op('j').le(70000, 4).op('0');  // LONG_BINPUT / LONG_BINGET
  b.stop();
  FrValueTree t = Parse(b);
  const FrValue& d = t.at(t.root);
  ASSERT_EQ(d.kind, FrValueKind::kDict);
  EXPECT_EQ(d.items[1], d.items[3]);
  ASSERT_EQ(Item(t, d, 3).items.size(), 1u);
  EXPECT_EQ(Item(t, Item(t, d, 3), 0).integer, 5);
}

TEST(FlightRecorderPickle, ValueThatContainsItselfIsALoopOfIndexes) {
  Bytes b;
  b.proto().op(']').op('q').le(0, 1).op('h').le(0, 1).op('a').stop();
  FrValueTree t = Parse(b);
  ASSERT_EQ(t.at(t.root).items.size(), 1u);
  EXPECT_EQ(t.at(t.root).items[0], t.root);
}

TEST(FlightRecorderPickle, PopAndPopMark) {
  Bytes b;
  b.proto().int1(1).int1(2).op('0').op('(').int1(3).int1(4).op('1').stop();
  FrValueTree t = Parse(b);
  EXPECT_EQ(t.at(t.root).integer, 1);
}

TEST(FlightRecorderPickle, RefusesEveryOpcodeThatCouldRunOrImport) {
  struct Case {
    std::string bytes;
    std::string name;
  };
  const Case cases[] = {
      {"c__builtin__\neval\n", "GLOBAL"},
      {std::string("\x93", 1), "STACK_GLOBAL"},
      {"R", "REDUCE"},
      {"b", "BUILD"},
      {"ios\nsystem\n", "INST"},
      {"o", "OBJ"},
      {std::string("\x81", 1), "NEWOBJ"},
      {std::string("\x92", 1), "NEWOBJ_EX"},
      {"P0\n", "PERSID"},
      {"Q", "BINPERSID"},
      {std::string("\x82\x01", 2), "EXT1"},
      {std::string("\x83\x01\x00", 3), "EXT2"},
      {std::string("\x84\x01\x00\x00\x00", 5), "EXT4"},
      {std::string("B\x01\x00\x00\x00x", 6), "BINBYTES"},
      {std::string("C\x01x", 3), "SHORT_BINBYTES"},
      {std::string("\x8f", 1), "EMPTY_SET"},
      {std::string("\x91", 1), "FROZENSET"},
      {std::string("\x96", 1), "BYTEARRAY8"},
      {std::string("\x97", 1), "NEXT_BUFFER"},
      {"S'x'\n", "STRING"},
      {"I1\n", "INT"},
      {"Vx\n", "UNICODE"},
      {"F1.0\n", "FLOAT"},
      {"2", "DUP"},
      {"p0\n", "PUT"},
  };
  for (const Case& c : cases) {
    std::string bytes = std::string("\x80\x02", 2) + c.bytes + ".";
    std::string e = Error(bytes);
    EXPECT_NE(e.find("test.pkl: byte 2: opcode " + c.name + " "), std::string::npos) << e;
    EXPECT_NE(e.find("holds only str, int, float, bool, None, list, dict and tuple"),
              std::string::npos)
        << e;
  }
  // Past a valid prefix, the offset is the bad opcode's.
  Bytes late;
  late.proto().op(']').int1(1).op('a').raw("c");
  EXPECT_NE(Error(late.str()).find("byte 6: opcode GLOBAL"), std::string::npos);
  EXPECT_NE(Error(std::string("\x80\x02\xff", 3)).find("0xff is not a pickle opcode"),
            std::string::npos);
}

TEST(FlightRecorderPickle, TruncationAtEveryLengthNamesTheOffset) {
  Bytes b;
  b.proto().op('}').op('q').le(0, 1).op('(').unicode("version").unicode("2.9");
  b.unicode("t").op(0x8a).le(8, 1).le(1758610505592849034, 8).op('u').stop();
  const std::string& full = b.str();
  ASSERT_TRUE(ParsePickle(full, "x").ok());
  for (size_t n = 0; n < full.size(); ++n) {
    Result<FrValueTree> t = ParsePickle(full.substr(0, n), "cut.pkl");
    ASSERT_FALSE(t.ok()) << n;
    EXPECT_NE(t.status().message().find("cut.pkl: byte "), std::string::npos);
    EXPECT_NE(t.status().message().find("cut short"), std::string::npos)
        << n << ": " << t.status().message();
  }
  Bytes s;
  s.proto().op('X').le(16, 4).raw("abc");
  EXPECT_NE(Error(s.str()).find("byte 2: a string of 16 bytes goes past the end"),
            std::string::npos);
}

TEST(FlightRecorderPickle, HugeLengthsFailWithoutAllocating) {
  Bytes s8;
  s8.proto().op(0x8d).le(uint64_t{1} << 62, 8).raw("ab").stop();
  EXPECT_NE(Error(s8.str()).find("goes past the end"), std::string::npos);
  Bytes l4;
  l4.proto().op(0x8b).le(0x7ffffff0, 4).stop();
  EXPECT_NE(Error(l4.str()).find("goes past the end"), std::string::npos);
  Bytes neg;
  neg.proto().op(0x8b).le(0xfffffff0, 4).stop();
  EXPECT_NE(Error(neg.str()).find("negative length"), std::string::npos);
  Bytes frame;
  frame.proto(4).op(0x95).le(uint64_t{1} << 60, 8).op('N').stop();
  EXPECT_NE(Error(frame.str()).find("a frame of"), std::string::npos);
  Bytes memo;  // a memo index far past the memo: no table that size
  memo.proto().op('N').op('r').le(0xffffffff, 4).op('j').le(0xffffffff, 4).stop();
  EXPECT_TRUE(ParsePickle(memo.str(), "x").ok());
}

TEST(FlightRecorderPickle, NestingIsBounded) {
  std::string deep = std::string("\x80\x02", 2) + std::string(kPickleMaxMarks + 1, '(');
  EXPECT_NE(Error(deep).find("nested marks"), std::string::npos);
  // Lists inside lists without marks: only the stack grows, and the reader
  // walks nothing recursively.
  std::string lists =
      std::string("\x80\x02", 2) + std::string(100000, ']') + std::string(99999, 'a') + ".";
  Result<FrValueTree> t = ParsePickle(lists, "deep.pkl");
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->nodes.size(), 100000u);
}

TEST(FlightRecorderPickle, RefusesMalformedStacks) {
  EXPECT_NE(Error(std::string("\x80\x01.", 3)).find("protocol 1"), std::string::npos);
  EXPECT_NE(Error(std::string("\x80\x06.", 3)).find("protocol 6"), std::string::npos);
  EXPECT_NE(Error(std::string("\x80\x02.", 3)).find("STOP with nothing"), std::string::npos);
  EXPECT_NE(Error(std::string("\x80\x02}K\x01\x61.", 6)).find("APPEND"), std::string::npos);
  EXPECT_NE(Error(std::string("\x80\x02](K\x01K\x02u.", 9)).find("SETITEM into a list"),
            std::string::npos);
  EXPECT_NE(Error(std::string("\x80\x02}(K\x01u.", 7)).find("a key and no value"),
            std::string::npos);
  EXPECT_NE(Error(std::string("\x80\x02h\x05.", 5)).find("memo entry 5 was never PUT"),
            std::string::npos);
  EXPECT_NE(Error(std::string("\x80\x02", 2) + "0").find("POP on an empty stack"),
            std::string::npos);
  EXPECT_NE(Error(std::string("\x80\x02}]K\x01s.", 7)).find("a dict key of type list"),
            std::string::npos);
  EXPECT_NE(Error(std::string("\x80\x02(K\x01\x86.", 7)).find("TUPLE2 needs 2 values"),
            std::string::npos);
  EXPECT_NE(Error(std::string("\x80\x02\x8a\x01", 4)).find("cut short"), std::string::npos);
}

TEST(FlightRecorderJson, ReadsValuesAsThePickleReaderDoes) {
  Result<FrValueTree> t = ParseJsonValues(
      R"({"version": "2.10", "n": -3, "f": 0.5, "b": true, "z": null, "l": [1, [2]]})",
      "dump.json");
  ASSERT_TRUE(t.ok()) << t.status().message();
  const FrValue& d = t->at(t->root);
  ASSERT_EQ(d.kind, FrValueKind::kDict);
  ASSERT_EQ(d.items.size(), 12u);
  EXPECT_EQ(t->at(d.items[1]).text, "2.10");
  EXPECT_EQ(t->at(d.items[3]).integer, -3);
  EXPECT_DOUBLE_EQ(t->at(d.items[5]).number, 0.5);
  EXPECT_TRUE(t->at(d.items[7]).boolean);
  EXPECT_EQ(t->at(d.items[9]).kind, FrValueKind::kNone);
  EXPECT_EQ(t->at(d.items[11]).items.size(), 2u);
}

TEST(FlightRecorderJson, ErrorsNameTheByteAndDepthIsBounded) {
  Result<FrValueTree> bad = ParseJsonValues(R"({"version": "2.10",})", "dump.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("dump.json: byte "), std::string::npos);
  std::string deep = std::string(kFrJsonMaxDepth + 1, '[') + std::string(kFrJsonMaxDepth + 1, ']');
  Result<FrValueTree> d = ParseJsonValues(deep, "deep.json");
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("nested more than"), std::string::npos);
  Result<FrValueTree> big = ParseJsonValues("[18446744073709551615]", "big.json");
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.status().message().find("wider than 64 bits"), std::string::npos);
}

}  // namespace
}  // namespace stallscope

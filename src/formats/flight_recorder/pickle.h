// A reader of Python pickles that holds only builtin values: None, bool,
// int, float, str, list, tuple and dict, the types a PyTorch Flight Recorder
// dump is made of (torch's pickler writes protocol 2; Python's pickle.dump
// writes 2 to 5). It is no unpickler: it knows only the opcodes that build
// those values (and the memo, marks and frames around them), and stops at
// any other with the file and the byte offset. GLOBAL, STACK_GLOBAL, REDUCE,
// BUILD, INST, OBJ, NEWOBJ, PERSID and the rest are refused by name: nothing
// in a file is ever looked up or run.
//
// The values land in an arena (FrValueTree): a node per value, children by
// index, so the memo's shared references cost nothing and a value that
// contains itself is only a loop of indexes that its readers bound. Every
// length is checked against the bytes left before anything is allocated;
// nodes, memo entries and open marks are capped (kPickleMax*). The protocol
// 0 text opcodes are refused: neither torch nor protocol 2+ writes them.
// Pure: bytes and a source name in, values or a Status out. Thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace stallscope {

// Caps on one pickle: a real dump of 2,000 entries with stacks holds about
// 300,000 values and nests 6 deep.
inline constexpr size_t kPickleMaxNodes = size_t{4} << 20;
inline constexpr size_t kPickleMaxMemo = size_t{4} << 20;
inline constexpr size_t kPickleMaxMarks = 256;

enum class FrValueKind : uint8_t { kNone, kBool, kInt, kFloat, kString, kList, kTuple, kDict };

std::string_view FrValueKindName(FrValueKind kind);

// One value. Containers list their children's indexes; a dict's alternate
// key, value, key, value.
struct FrValue {
  FrValueKind kind = FrValueKind::kNone;
  bool boolean = false;
  int64_t integer = 0;
  double number = 0;
  std::string text;
  std::vector<uint32_t> items;
};

// The values of one file; the root is the value the file ends with.
struct FrValueTree {
  std::vector<FrValue> nodes;
  uint32_t root = 0;
  const FrValue& at(uint32_t index) const { return nodes[index]; }
};

// Reads a pickle (protocol 2 to 5) of builtin values. Errors:
// "SOURCE: byte N: what", N the offset of the opcode at fault.
Result<FrValueTree> ParsePickle(std::string_view bytes, std::string_view source);

}  // namespace stallscope

// The pickle reader of builtin values: see pickle.h. One
// pass over the bytes; each opcode is one short step of a small stack machine
// (the value stack, the marks, the memo), as pickletools documents them.
#include "formats/flight_recorder/pickle.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <optional>
#include <unordered_map>
#include <utility>

namespace stallscope {

std::string_view FrValueKindName(FrValueKind kind) {
  switch (kind) {
    case FrValueKind::kNone:
      return "None";
    case FrValueKind::kBool:
      return "bool";
    case FrValueKind::kInt:
      return "int";
    case FrValueKind::kFloat:
      return "float";
    case FrValueKind::kString:
      return "str";
    case FrValueKind::kList:
      return "list";
    case FrValueKind::kTuple:
      return "tuple";
    case FrValueKind::kDict:
      return "dict";
  }
  return "?";
}

namespace {

constexpr std::string_view kHolds =
    " (a Flight Recorder dump holds only str, int, float, bool, None, list, dict and tuple)";

// The opcodes refused by name, and why.
struct RefusedOp {
  uint8_t code;
  std::string_view name;
  std::string_view why;
};

constexpr std::string_view kImports =
    "names a Python object to import; nothing is looked up or run";
constexpr std::string_view kCalls = "calls or builds an object; nothing is run";
constexpr std::string_view kPersistent = "asks for a persistent object; refused";
constexpr std::string_view kOtherType = "makes bytes, a set or a buffer: not a type of these dumps";
constexpr std::string_view kTextOp = "is a protocol 0-1 text opcode, which torch never writes";

constexpr RefusedOp kRefused[] = {
    {'c', "GLOBAL", kImports},
    {0x93, "STACK_GLOBAL", kImports},
    {'i', "INST", kImports},
    {0x82, "EXT1", kImports},
    {0x83, "EXT2", kImports},
    {0x84, "EXT4", kImports},
    {'R', "REDUCE", kCalls},
    {'b', "BUILD", kCalls},
    {'o', "OBJ", kCalls},
    {0x81, "NEWOBJ", kCalls},
    {0x92, "NEWOBJ_EX", kCalls},
    {'P', "PERSID", kPersistent},
    {'Q', "BINPERSID", kPersistent},
    {'B', "BINBYTES", kOtherType},
    {'C', "SHORT_BINBYTES", kOtherType},
    {0x8e, "BINBYTES8", kOtherType},
    {0x96, "BYTEARRAY8", kOtherType},
    {0x97, "NEXT_BUFFER", kOtherType},
    {0x98, "READONLY_BUFFER", kOtherType},
    {0x8f, "EMPTY_SET", kOtherType},
    {0x90, "ADDITEMS", kOtherType},
    {0x91, "FROZENSET", kOtherType},
    {'S', "STRING", kTextOp},
    {'T', "BINSTRING", kTextOp},
    {'U', "SHORT_BINSTRING", kTextOp},
    {'V', "UNICODE", kTextOp},
    {'I', "INT", kTextOp},
    {'L', "LONG", kTextOp},
    {'F', "FLOAT", kTextOp},
    {'d', "DICT", kTextOp},
    {'l', "LIST", kTextOp},
    {'p', "PUT", kTextOp},
    {'g', "GET", kTextOp},
    {'2', "DUP", kTextOp},
};

bool IsScalar(FrValueKind k) {
  return k == FrValueKind::kNone || k == FrValueKind::kBool || k == FrValueKind::kInt ||
         k == FrValueKind::kFloat || k == FrValueKind::kString;
}

class Machine {
 public:
  Machine(std::string_view bytes, std::string_view source) : bytes_(bytes), source_(source) {}

  Result<FrValueTree> Run() {
    while (!stopped_) {
      if (at_ >= bytes_.size()) {
        op_at_ = at_;
        return Fail("the pickle ends without STOP (the file is cut short)");
      }
      op_at_ = at_;
      uint8_t op = static_cast<uint8_t>(bytes_[at_++]);
      if (Status s = Step(op); !s.ok()) return s;
    }
    return std::move(tree_);
  }

 private:
  Status Fail(std::string_view what) const {
    return Status::ParseError(source_, 0, fmt::format("byte {}: {}", op_at_, what));
  }

  // The next n argument bytes of the current opcode.
  std::optional<std::string_view> Take(uint64_t n) {
    if (n > bytes_.size() - at_) return std::nullopt;
    std::string_view out = bytes_.substr(at_, n);
    at_ += n;
    return out;
  }

  Status CutShort(std::string_view what) const {
    return Fail(fmt::format("{} goes past the end of the file (the file is cut short)", what));
  }

  // A little-endian unsigned argument of n bytes.
  std::optional<uint64_t> Unsigned(size_t n) {
    std::optional<std::string_view> raw = Take(n);
    if (!raw) return std::nullopt;
    uint64_t v = 0;
    for (size_t i = n; i-- > 0;) v = (v << 8) | static_cast<uint8_t>((*raw)[i]);
    return v;
  }

  Status Push(FrValue v) {
    if (tree_.nodes.size() >= kPickleMaxNodes) {
      return Fail(fmt::format("more than {} values in one pickle", kPickleMaxNodes));
    }
    tree_.nodes.push_back(std::move(v));
    stack_.push_back(static_cast<uint32_t>(tree_.nodes.size() - 1));
    return Status::Ok();
  }

  Status PushInt(int64_t v) {
    FrValue value;
    value.kind = FrValueKind::kInt;
    value.integer = v;
    return Push(std::move(value));
  }

  Status PushKind(FrValueKind kind, bool boolean = false) {
    FrValue value;
    value.kind = kind;
    value.boolean = boolean;
    return Push(std::move(value));
  }

  // The values above the last mark, popped with it.
  std::optional<std::vector<uint32_t>> PopToMark() {
    if (marks_.empty()) return std::nullopt;
    size_t from = marks_.back();
    marks_.pop_back();
    std::vector<uint32_t> items(stack_.begin() + static_cast<std::ptrdiff_t>(from), stack_.end());
    stack_.resize(from);
    return items;
  }

  // Python's stack has a floor at the last mark: values below it are not
  // reachable until the mark is popped.
  size_t Floor() const { return marks_.empty() ? 0 : marks_.back(); }

  Status Step(uint8_t op);
  Status Scalar(uint8_t op);
  Status Mark();
  Status Pop();
  Status SmallInt(size_t bytes, std::string_view what);
  Status Protocol();
  Status Frame();
  Status Long(size_t length_bytes);
  Status Float();
  Status Unicode(size_t length_bytes);
  Status Append(bool many);
  Status SetItems(bool many);
  Status Tuple(std::optional<size_t> arity);
  Status Put(size_t index_bytes);
  Status Get(size_t index_bytes);
  Status Stop();
  Status Refuse(uint8_t op) const;

  std::string_view bytes_;
  std::string_view source_;
  size_t at_ = 0;
  size_t op_at_ = 0;
  bool stopped_ = false;
  FrValueTree tree_;
  std::vector<uint32_t> stack_;
  std::vector<size_t> marks_;
  std::unordered_map<uint64_t, uint32_t> memo_;
};

// The opcodes of structure: protocol, frames, marks, containers, memo.
Status Machine::Step(uint8_t op) {
  switch (op) {
    case 0x80:
      return Protocol();
    case 0x95:
      return Frame();
    case '.':
      return Stop();
    case '(':
      return Mark();
    case '0':
      return Pop();
    case '1':
      return PopToMark() ? Status::Ok() : Fail("POP_MARK with no mark");
    case ']':
      return PushKind(FrValueKind::kList);
    case '}':
      return PushKind(FrValueKind::kDict);
    case ')':
      return PushKind(FrValueKind::kTuple);
    case 'a':
      return Append(false);
    case 'e':
      return Append(true);
    case 's':
      return SetItems(false);
    case 'u':
      return SetItems(true);
    case 't':
      return Tuple(std::nullopt);
    case 0x85:
      return Tuple(1);
    case 0x86:
      return Tuple(2);
    case 0x87:
      return Tuple(3);
    case 'q':
      return Put(1);
    case 'r':
      return Put(4);
    case 0x94:
      return Put(0);
    case 'h':
      return Get(1);
    case 'j':
      return Get(4);
    default:
      return Scalar(op);
  }
}

// The opcodes of scalars: None, bools, ints, floats, strings.
Status Machine::Scalar(uint8_t op) {
  switch (op) {
    case 'N':
      return PushKind(FrValueKind::kNone);
    case 0x88:
      return PushKind(FrValueKind::kBool, true);
    case 0x89:
      return PushKind(FrValueKind::kBool, false);
    case 'J':
      return SmallInt(4, "BININT's 4 bytes");
    case 'K':
      return SmallInt(1, "BININT1's byte");
    case 'M':
      return SmallInt(2, "BININT2's 2 bytes");
    case 0x8a:
      return Long(1);
    case 0x8b:
      return Long(4);
    case 'G':
      return Float();
    case 0x8c:
      return Unicode(1);
    case 'X':
      return Unicode(4);
    case 0x8d:
      return Unicode(8);
    default:
      return Refuse(op);
  }
}

Status Machine::Mark() {
  if (marks_.size() >= kPickleMaxMarks) {
    return Fail(fmt::format("more than {} nested marks", kPickleMaxMarks));
  }
  marks_.push_back(stack_.size());
  return Status::Ok();
}

// POP: the top value, or with none above the last mark, the mark itself.
Status Machine::Pop() {
  if (stack_.size() > Floor()) {
    stack_.pop_back();
  } else if (!marks_.empty()) {
    marks_.pop_back();
  } else {
    return Fail("POP on an empty stack");
  }
  return Status::Ok();
}

// BININT (4 bytes, signed), BININT1 and BININT2 (unsigned).
Status Machine::SmallInt(size_t bytes, std::string_view what) {
  std::optional<uint64_t> v = Unsigned(bytes);
  if (!v) return CutShort(what);
  if (bytes == 4) return PushInt(static_cast<int32_t>(static_cast<uint32_t>(*v)));
  return PushInt(static_cast<int64_t>(*v));
}

Status Machine::Refuse(uint8_t op) const {
  for (const RefusedOp& r : kRefused) {
    if (r.code == op) {
      return Fail(fmt::format("opcode {} (0x{:02x}) {}{}", r.name, op, r.why, kHolds));
    }
  }
  return Fail(fmt::format("0x{:02x} is not a pickle opcode this reader knows{}", op, kHolds));
}

Status Machine::Protocol() {
  std::optional<uint64_t> v = Unsigned(1);
  if (!v) return CutShort("PROTO's byte");
  if (*v < 2 || *v > 5) return Fail(fmt::format("pickle protocol {}: only 2 to 5 are read", *v));
  return Status::Ok();
}

// A frame only groups opcodes for buffering: its length must fit the file.
Status Machine::Frame() {
  std::optional<uint64_t> n = Unsigned(8);
  if (!n) return CutShort("FRAME's 8-byte length");
  if (*n > bytes_.size() - at_) return CutShort(fmt::format("a frame of {} bytes", *n));
  return Status::Ok();
}

// LONG1/LONG4: a little-endian two's complement integer of n bytes; more than
// 64 bits of value is refused (no dump field is wider).
Status Machine::Long(size_t length_bytes) {
  std::optional<uint64_t> n = Unsigned(length_bytes);
  if (!n) return CutShort(length_bytes == 1 ? "LONG1's length" : "LONG4's length");
  if (length_bytes == 4 && *n > 0x7fffffffu) return Fail("LONG4 with a negative length");
  std::optional<std::string_view> raw = Take(*n);
  if (!raw) return CutShort(fmt::format("an integer of {} bytes", *n));
  if (raw->empty()) return PushInt(0);
  bool negative = (static_cast<uint8_t>(raw->back()) & 0x80) != 0;
  uint8_t fill = negative ? 0xff : 0x00;
  for (size_t i = 8; i < raw->size(); ++i) {
    if (static_cast<uint8_t>((*raw)[i]) != fill) return Fail("an integer wider than 64 bits");
  }
  uint64_t v = negative ? ~uint64_t{0} : 0;
  for (size_t i = std::min<size_t>(raw->size(), 8); i-- > 0;) {
    v = (v << 8) | static_cast<uint8_t>((*raw)[i]);
  }
  if (raw->size() > 8 && ((v >> 63) != 0) != negative) return Fail("an integer wider than 64 bits");
  return PushInt(static_cast<int64_t>(v));
}

// BINFLOAT: an IEEE 754 double, big-endian.
Status Machine::Float() {
  std::optional<std::string_view> raw = Take(8);
  if (!raw) return CutShort("BINFLOAT's 8 bytes");
  uint64_t bits = 0;
  for (char c : *raw) bits = (bits << 8) | static_cast<uint8_t>(c);
  FrValue value;
  value.kind = FrValueKind::kFloat;
  value.number = std::bit_cast<double>(bits);
  return Push(std::move(value));
}

Status Machine::Unicode(size_t length_bytes) {
  std::optional<uint64_t> n = Unsigned(length_bytes);
  if (!n) return CutShort("a string's length");
  std::optional<std::string_view> raw = Take(*n);
  if (!raw) return CutShort(fmt::format("a string of {} bytes", *n));
  FrValue value;
  value.kind = FrValueKind::kString;
  value.text.assign(*raw);
  return Push(std::move(value));
}

// APPEND / APPENDS: onto the list below the value (or below the mark).
Status Machine::Append(bool many) {
  std::vector<uint32_t> items;
  if (many) {
    std::optional<std::vector<uint32_t>> popped = PopToMark();
    if (!popped) return Fail("APPENDS with no mark");
    items = std::move(*popped);
  } else {
    if (stack_.size() < Floor() + 2) return Fail("APPEND needs a list and a value");
    items.push_back(stack_.back());
    stack_.pop_back();
  }
  if (stack_.size() <= Floor()) return Fail("APPENDS with no list below its mark");
  FrValue& list = tree_.nodes[stack_.back()];
  if (list.kind != FrValueKind::kList) {
    return Fail(fmt::format("APPEND onto a {}, not a list", FrValueKindName(list.kind)));
  }
  list.items.insert(list.items.end(), items.begin(), items.end());
  return Status::Ok();
}

// SETITEM / SETITEMS: key, value pairs into the dict below them. A key is a
// scalar or a tuple of scalars (Python's keys must be hashable; these dumps
// key by str).
Status Machine::SetItems(bool many) {
  std::vector<uint32_t> items;
  if (many) {
    std::optional<std::vector<uint32_t>> popped = PopToMark();
    if (!popped) return Fail("SETITEMS with no mark");
    items = std::move(*popped);
    if (items.size() % 2 != 0) return Fail("SETITEMS with a key and no value");
  } else {
    if (stack_.size() < Floor() + 3) return Fail("SETITEM needs a dict, a key and a value");
    items.assign(stack_.end() - 2, stack_.end());
    stack_.resize(stack_.size() - 2);
  }
  if (stack_.size() <= Floor()) return Fail("SETITEMS with no dict below its mark");
  uint32_t dict_index = stack_.back();
  if (tree_.nodes[dict_index].kind != FrValueKind::kDict) {
    return Fail(fmt::format("SETITEM into a {}, not a dict",
                            FrValueKindName(tree_.nodes[dict_index].kind)));
  }
  for (size_t i = 0; i < items.size(); i += 2) {
    const FrValue& key = tree_.nodes[items[i]];
    bool ok = IsScalar(key.kind);
    if (key.kind == FrValueKind::kTuple) {
      ok = true;
      for (uint32_t k : key.items) ok = ok && IsScalar(tree_.nodes[k].kind);
    }
    if (!ok) return Fail(fmt::format("a dict key of type {}", FrValueKindName(key.kind)));
  }
  FrValue& dict = tree_.nodes[dict_index];
  dict.items.insert(dict.items.end(), items.begin(), items.end());
  return Status::Ok();
}

Status Machine::Tuple(std::optional<size_t> arity) {
  FrValue value;
  value.kind = FrValueKind::kTuple;
  if (!arity) {
    std::optional<std::vector<uint32_t>> popped = PopToMark();
    if (!popped) return Fail("TUPLE with no mark");
    value.items = std::move(*popped);
  } else {
    if (stack_.size() < Floor() + *arity) {
      return Fail(fmt::format("TUPLE{} needs {} values on the stack", *arity, *arity));
    }
    value.items.assign(stack_.end() - static_cast<std::ptrdiff_t>(*arity), stack_.end());
    stack_.resize(stack_.size() - *arity);
  }
  return Push(std::move(value));
}

// BINPUT / LONG_BINPUT, or MEMOIZE (no index bytes: the memo's size).
Status Machine::Put(size_t index_bytes) {
  std::optional<uint64_t> index =
      index_bytes == 0 ? std::optional<uint64_t>(memo_.size()) : Unsigned(index_bytes);
  if (!index) return CutShort("a memo index");
  if (stack_.size() <= Floor()) return Fail("a memo PUT with nothing on the stack");
  if (memo_.size() >= kPickleMaxMemo) {
    return Fail(fmt::format("more than {} memo entries", kPickleMaxMemo));
  }
  memo_[*index] = stack_.back();
  return Status::Ok();
}

Status Machine::Get(size_t index_bytes) {
  std::optional<uint64_t> index = Unsigned(index_bytes);
  if (!index) return CutShort("a memo index");
  auto it = memo_.find(*index);
  if (it == memo_.end()) return Fail(fmt::format("memo entry {} was never PUT", *index));
  if (stack_.size() >= kPickleMaxNodes) return Fail("too many values on the stack");
  stack_.push_back(it->second);
  return Status::Ok();
}

Status Machine::Stop() {
  if (stack_.size() <= Floor()) return Fail("STOP with nothing on the stack");
  tree_.root = stack_.back();
  stopped_ = true;
  return Status::Ok();
}

}  // namespace

Result<FrValueTree> ParsePickle(std::string_view bytes, std::string_view source) {
  Machine machine(bytes, source);
  return machine.Run();
}

}  // namespace stallscope

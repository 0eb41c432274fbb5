// JSON into Flight Recorder values: see json.h.
#include "formats/flight_recorder/json.h"

#include <fmt/format.h>

#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace stallscope {
namespace {

// Builds the tree as nlohmann's SAX parser walks the text. Every method
// returns false to stop the parse, with `error` saying why.
class TreeBuilder : public nlohmann::json_sax<nlohmann::json> {
 public:
  bool null() override { return Add(FrValueKind::kNone); }
  bool boolean(bool v) override {
    if (!Add(FrValueKind::kBool)) return false;
    tree.nodes.back().boolean = v;
    return true;
  }
  bool number_integer(number_integer_t v) override {
    if (!Add(FrValueKind::kInt)) return false;
    tree.nodes.back().integer = v;
    return true;
  }
  bool number_unsigned(number_unsigned_t v) override {
    if (v > static_cast<number_unsigned_t>(std::numeric_limits<int64_t>::max())) {
      return Stop("an integer wider than 64 bits");
    }
    return number_integer(static_cast<int64_t>(v));
  }
  bool number_float(number_float_t v, const string_t&) override {
    if (!Add(FrValueKind::kFloat)) return false;
    tree.nodes.back().number = v;
    return true;
  }
  bool string(string_t& v) override {
    if (!Add(FrValueKind::kString)) return false;
    tree.nodes.back().text = std::move(v);
    return true;
  }
  bool binary(binary_t&) override { return Stop("binary values are not JSON text"); }
  bool start_object(std::size_t) override { return Open(FrValueKind::kDict); }
  bool key(string_t& v) override { return string(v); }
  bool end_object() override { return Close(); }
  bool start_array(std::size_t) override { return Open(FrValueKind::kList); }
  bool end_array() override { return Close(); }
  bool parse_error(std::size_t position, const std::string&,
                   const nlohmann::detail::exception& ex) override {
    if (error.empty()) error = ex.what();
    at = position;
    return false;
  }

  FrValueTree tree;
  std::string error;
  std::optional<size_t> at;  // where the text stops being JSON
  bool done = false;

 private:
  bool Stop(std::string why) {
    error = std::move(why);
    return false;
  }

  // A new value, attached to the open container (or made the root).
  bool Add(FrValueKind kind) {
    if (tree.nodes.size() >= kPickleMaxNodes) {
      return Stop(fmt::format("more than {} values in one dump", kPickleMaxNodes));
    }
    FrValue value;
    value.kind = kind;
    tree.nodes.push_back(std::move(value));
    uint32_t index = static_cast<uint32_t>(tree.nodes.size() - 1);
    if (open_.empty()) {
      tree.root = index;
    } else {
      tree.nodes[open_.back()].items.push_back(index);
    }
    return true;
  }

  bool Open(FrValueKind kind) {
    if (open_.size() >= kFrJsonMaxDepth) {
      return Stop(fmt::format("nested more than {} deep", kFrJsonMaxDepth));
    }
    if (!Add(kind)) return false;
    open_.push_back(static_cast<uint32_t>(tree.nodes.size() - 1));
    return true;
  }

  bool Close() {
    open_.pop_back();
    done = open_.empty();
    return true;
  }

  std::vector<uint32_t> open_;
};

}  // namespace

Result<FrValueTree> ParseJsonValues(std::string_view text, std::string_view source) {
  TreeBuilder builder;
  bool ok = false;
  try {
    ok = nlohmann::json::sax_parse(text, &builder);
  } catch (const std::exception& e) {  // none expected: the builder throws nothing
    builder.error = e.what();
  }
  if (!ok || builder.tree.nodes.empty()) {
    std::string why = builder.error.empty() ? "not JSON" : builder.error;
    if (!builder.at) return Status::ParseError(source, 0, why);
    return Status::ParseError(source, 0, fmt::format("byte {}: {}", *builder.at, why));
  }
  return std::move(builder.tree);
}

}  // namespace stallscope

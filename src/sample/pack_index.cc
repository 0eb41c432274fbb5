#include "sample/pack_index.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "core/json_text.h"
#include "core/text.h"

namespace stallscope {

std::string_view PackFormatName(PackFormat f) {
  return f == PackFormat::kTfRecord ? "tfrecord" : "wds";
}
std::string_view ShardExtension(PackFormat f) {
  return f == PackFormat::kTfRecord ? "tfrecord" : "tar";
}
std::string ShardName(PackFormat f, uint64_t number) {
  return fmt::format("shard-{:05d}.{}", number, ShardExtension(f));
}

std::string FormatIndexLine(const IndexEntry& e) {
  return fmt::format("{} {}\n", e.offset, e.length);
}

Result<std::vector<IndexEntry>> ParseIndex(std::string_view text, std::string_view source) {
  std::vector<IndexEntry> out;
  if (!text.empty() && text.back() != '\n')
    return Status::ParseError(source, static_cast<int>(SplitLines(text).size()),
                              "last line has no newline (truncated index?)");
  int line_no = 0;
  uint64_t end = 0;
  for (std::string_view line : SplitLines(text)) {
    ++line_no;
    size_t space = line.find(' ');
    if (space == std::string_view::npos || line.find(' ', space + 1) != std::string_view::npos)
      return Status::ParseError(source, line_no, "expected \"OFFSET LENGTH\"");
    std::optional<uint64_t> offset = ParseUint(line.substr(0, space));
    std::optional<uint64_t> length = ParseUint(line.substr(space + 1));
    if (!offset || !length)
      return Status::ParseError(source, line_no, "OFFSET and LENGTH must be decimal numbers");
    if (*length == 0) return Status::ParseError(source, line_no, "zero LENGTH");
    if (*offset < end)
      return Status::ParseError(
          source, line_no,
          fmt::format("offset {} overlaps the entry before (ends at {})", *offset, end));
    if (*length > UINT64_MAX - *offset)
      return Status::ParseError(source, line_no, "OFFSET + LENGTH overflows");
    end = *offset + *length;
    out.push_back({*offset, *length});
  }
  return out;
}

std::string ManifestToJson(const Manifest& m) {
  nlohmann::ordered_json j;
  j["schema"] = kPackSchema;
  j["format"] = PackFormatName(m.format);
  j["samples"] = m.samples;
  j["records"] = m.records;
  j["classes"] = m.classes;
  j["shuffle"] = m.shuffle;
  j["seed"] = m.seed;
  j["shards"] = nlohmann::ordered_json::array();
  for (const ShardInfo& s : m.shards)
    j["shards"].push_back({{"name", s.name},
                           {"index", s.index},
                           {"samples", s.samples},
                           {"records", s.records},
                           {"bytes", s.bytes}});
  return JsonText(j) + "\n";
}

namespace {
bool PlainFileName(const std::string& name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos &&
         name.find('\0') == std::string::npos;
}
}  // namespace

Result<Manifest> ParseManifest(std::string_view text, std::string_view source) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return Status::ParseError(source, 0, "not a JSON object");
  try {
    if (j.value("schema", "") != kPackSchema)
      return Status::ParseError(source, 0, fmt::format("schema is not {}", kPackSchema));
    Manifest m;
    std::string format = j.at("format").get<std::string>();
    if (format == "tfrecord")
      m.format = PackFormat::kTfRecord;
    else if (format == "wds")
      m.format = PackFormat::kWds;
    else
      return Status::ParseError(source, 0, fmt::format("unknown format \"{}\"", format));
    m.samples = j.at("samples").get<uint64_t>();
    m.records = j.at("records").get<uint64_t>();
    m.classes = j.at("classes").get<std::vector<std::string>>();
    m.shuffle = j.at("shuffle").get<bool>();
    m.seed = j.at("seed").get<uint64_t>();
    for (const auto& s : j.at("shards")) {
      ShardInfo info{s.at("name").get<std::string>(), s.at("index").get<std::string>(),
                     s.at("samples").get<uint64_t>(), s.at("records").get<uint64_t>(),
                     s.at("bytes").get<uint64_t>()};
      if (!PlainFileName(info.name) || !PlainFileName(info.index))
        return Status::ParseError(source, 0,
                                  fmt::format("shard \"{}\" is not a plain file name", info.name));
      m.shards.push_back(std::move(info));
    }
    return m;
  } catch (const nlohmann::json::exception& e) {
    return Status::ParseError(source, 0, e.what());
  }
}

}  // namespace stallscope

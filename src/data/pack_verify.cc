// VerifyPack: a packed folder read back against its manifest and indexes.
#include "data/pack_verify.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include "core/file.h"
#include "data/crc32c.h"
#include "data/example_proto.h"
#include "data/packer.h"
#include "data/tar_reader.h"
#include "data/tfrecord.h"

namespace stallscope {
namespace {

constexpr size_t kMaxManifest = 256 << 20;
constexpr size_t kMaxIndex = size_t{2} << 30;

struct ShardCount {
  uint64_t records = 0, samples = 0;
};

Status Mismatch(const std::string& what, std::string_view field, uint64_t manifest,
                uint64_t found) {
  return Status::ParseError(
      what, 0, fmt::format("manifest says {} {}, the shard has {}", manifest, field, found));
}

Result<ShardCount> VerifyTfRecordShard(const std::string& path,
                                       const std::vector<IndexEntry>& index,
                                       std::vector<VerifiedEntry>* entries) {
  Result<TfRecordFile> file = TfRecordFile::Open(path);
  if (!file.ok()) return file.status();
  ShardCount count;
  uint64_t expect = 0;
  std::string last_key;
  for (const IndexEntry& e : index) {
    std::string where = fmt::format("{}@{}", path, e.offset);
    if (e.offset != expect)
      return Status::ParseError(where, 0,
                                fmt::format("index skips bytes {}..{}", expect, e.offset));
    uint64_t framed = 0;
    Result<std::string_view> data = file->ReadAt(e.offset, &framed);
    if (!data.ok()) return data.status();
    if (framed != e.length)
      return Status::ParseError(
          where, 0, fmt::format("index says {} bytes, the record has {}", e.length, framed));
    Result<PackedRecord> rec = ParsePackedRecord(*data, where);
    if (!rec.ok()) return rec.status();
    std::string key(SplitKey(rec->key).first);
    if (count.records == 0 || key != last_key) ++count.samples;
    last_key = std::move(key);
    ++count.records;
    if (entries) entries->push_back({std::string(rec->key), rec->data.size(), Crc32c(rec->data)});
    expect += framed;
  }
  if (expect != file->size())
    return Status::ParseError(
        path, 0, fmt::format("{} bytes after the last indexed record", file->size() - expect));
  return count;
}

Result<ShardCount> VerifyWdsShard(const std::string& path, const std::vector<IndexEntry>& index,
                                  std::vector<VerifiedEntry>* entries) {
  Result<TarFile> file = TarFile::Open(path);
  if (!file.ok()) return file.status();
  ShardCount count;
  uint64_t expect = 0;
  for (const IndexEntry& e : index) {
    std::string where = fmt::format("{}@{}", path, e.offset);
    if (e.offset != expect)
      return Status::ParseError(where, 0,
                                fmt::format("index skips bytes {}..{}", expect, e.offset));
    Result<TarRun> run = file->ReadRange(e.offset, e.length);
    if (!run.ok()) return run.status();
    if (run->end_of_archive || run->members.empty() || run->end != e.offset + e.length)
      return Status::ParseError(where, 0, "index entry is not a run of whole tar members");
    std::string_view key = SplitKey(run->members.front().name).first;
    for (const TarMember& m : run->members) {
      if (SplitKey(m.name).first != key)
        return Status::ParseError(where, 0,
                                  fmt::format("member {} is not of sample {}", m.name, key));
      if (entries) entries->push_back({m.name, m.size, Crc32c(m.data)});
    }
    ++count.samples;
    ++count.records;
    expect = e.offset + e.length;
  }
  uint64_t tail = file->size() - std::min(expect, file->size());
  Result<TarRun> end = file->ReadRange(expect, tail);
  if (!end.ok()) return end.status();
  if (!end->members.empty() || !end->end_of_archive || tail < 2 * kTarBlock)
    return Status::ParseError(fmt::format("{}@{}", path, expect), 0,
                              "no end-of-archive blocks after the last indexed sample");
  return count;
}

}  // namespace

Result<VerifySummary> VerifyPack(const std::string& out, bool keep_entries) {
  std::string manifest_path = fmt::format("{}/{}", out, kManifestName);
  Result<std::string> text = ReadFile(manifest_path, kMaxManifest);
  if (!text.ok()) return text.status();
  Result<Manifest> m = ParseManifest(*text, manifest_path);
  if (!m.ok()) return m.status();
  VerifySummary v;
  for (const ShardInfo& s : m->shards) {
    std::string path = fmt::format("{}/{}", out, s.name);
    std::string idx_path = fmt::format("{}/{}", out, s.index);
    Result<std::string> idx_text = ReadFile(idx_path, kMaxIndex);
    if (!idx_text.ok()) return idx_text.status();
    Result<std::vector<IndexEntry>> index = ParseIndex(*idx_text, idx_path);
    if (!index.ok()) return index.status();
    std::vector<VerifiedEntry>* entries = keep_entries ? &v.entries : nullptr;
    Result<ShardCount> count = m->format == PackFormat::kTfRecord
                                   ? VerifyTfRecordShard(path, *index, entries)
                                   : VerifyWdsShard(path, *index, entries);
    if (!count.ok()) return count.status();
    struct stat st;
    if (stat(path.c_str(), &st) != 0) return Status::FromErrno(path, errno);
    if (static_cast<uint64_t>(st.st_size) != s.bytes)
      return Mismatch(path, "bytes", s.bytes, static_cast<uint64_t>(st.st_size));
    if (count->records != s.records) return Mismatch(path, "records", s.records, count->records);
    if (count->samples != s.samples) return Mismatch(path, "samples", s.samples, count->samples);
    ++v.shards;
    v.records += count->records;
    v.samples += count->samples;
    v.bytes += s.bytes;
  }
  if (v.samples != m->samples) return Mismatch(manifest_path, "samples", m->samples, v.samples);
  if (v.records != m->records) return Mismatch(manifest_path, "records", m->records, v.records);
  return v;
}

}  // namespace stallscope

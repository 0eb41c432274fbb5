#include "app/doctor_data.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

#include "analyze/host/dataset_rules.h"
#include "analyze/host/storage_rules.h"
#include "bench/io_bench.h"
#include "core/child_call.h"
#include "core/json_text.h"
#include "core/text.h"
#include "data/census.h"
#include "probe/remote_path.h"

namespace stallscope {
namespace {

using nlohmann::json;

// The storage bench of --data: long enough to get past the first requests,
// short enough for the whole doctor to stay under 30 s.
constexpr uint64_t kDoctorBenchBytes = 256ull << 20;
constexpr double kDoctorBenchSeconds = 2.0;
constexpr uint64_t kDoctorBenchMetadataFiles = 256;

// What the calls on the data path gave, before any judging.
struct DataLook {
  Result<DatasetCensus> census = Status::Unavailable("not taken");
  std::optional<StorageSpeed> bench;
  std::string bench_read_mode;
  std::vector<std::string> bench_notes;
  std::string bench_skipped;  // why there is no bench (without --quick)
};

// The census and the bench, in this process. `advance` (may be empty) is
// called after each call on the data that answered.
DataLook LookAtData(const DoctorRequest& r, const Progress& progress,
                    const std::function<void(std::string_view)>& step,
                    const std::function<void()>& advance) {
  DataLook look;
  CensusOptions options;
  options.residency_sample_files = r.quick ? 1000 : 10000;
  options.latency_sample_files = r.quick ? 100 : 1000;
  options.latency_budget_seconds = r.quick ? 0.3 : 1.5;
  options.step = step;
  options.advance = advance;
  progress(fmt::format("walking {}...", r.data));
  look.census = TakeCensus(r.data, options);
  progress("");
  if (r.quick) return look;
  // The bench writes its test file beside the data: in PATH, or in the
  // directory of a file PATH. Never above a directory PATH that cannot take
  // it (read-only, missing): the parent may be another file system (a
  // read-only mount's mount point), whose speed would pass for the data's.
  std::string dir = r.data;
  if (step) step("bench of the storage beside " + r.data);
  if (Status s = CheckIoBenchPath(dir); s.code() == Status::Code::kInvalidArgument) {
    dir = r.data.find('/') == std::string::npos ? "." : r.data.substr(0, r.data.rfind('/'));
    if (dir.empty()) dir = "/";
  }
  if (Status s = CheckIoBenchPath(dir); !s.ok()) {
    look.bench_skipped = "io: storage bench skipped: " + s.message();
    return look;
  }
  IoBenchOptions bench;
  bench.path = dir;
  bench.size_bytes = kDoctorBenchBytes;
  bench.runtime_seconds = kDoctorBenchSeconds;
  bench.metadata_files = kDoctorBenchMetadataFiles;
  bench.advance = advance;
  bench.progress = [&](std::string_view text) {
    progress(text);
    if (step && !text.empty()) step(fmt::format("storage bench in {} ({})", dir, text));
  };
  Result<IoBenchResult> result = RunIoBench(bench);
  progress("");
  if (!result.ok()) {
    look.bench_skipped = "io: storage bench of " + dir + ": " + result.status().message();
    return look;
  }
  look.bench = SpeedOf(*result);
  look.bench_read_mode = result->read_mode;
  look.bench_notes = result->notes;
  return look;
}

void Judge(const DoctorRequest& r, const DataLook& look, uint64_t memory_total_bytes, Triage& t) {
  TriageCensus(r.data, look.census, memory_total_bytes, t);
  if (r.quick) {
    t.notes.push_back("io: --quick: no storage bench; run without it or `stallscope bench io " +
                      ShellQuote(r.data) + "`");
  } else if (!look.bench_skipped.empty()) {
    t.notes.push_back(look.bench_skipped);
  } else if (look.bench) {
    TriageStorageSpeed(*look.bench, look.bench_read_mode, look.bench_notes, kDoctorBenchBytes,
                       kDoctorBenchSeconds, t);
  }
}

json SpeedToWire(const StorageSpeed& s) {
  return {{"path", s.path},
          {"fs_type", s.fs_type},
          {"remote", s.remote},
          {"direct", s.direct},
          {"jobs", s.jobs},
          {"iodepth", s.iodepth},
          {"sequential_bytes_per_second", s.sequential_bytes_per_second},
          {"sequential_p99_ms", s.sequential_p99_ms},
          {"random_iops", s.random_iops},
          {"random_p99_ms", s.random_p99_ms}};
}

StorageSpeed SpeedFromWire(const json& j) {
  StorageSpeed s;
  s.path = j.at("path").get<std::string>();
  s.fs_type = j.at("fs_type").get<std::string>();
  s.remote = j.at("remote").get<bool>();
  s.direct = j.at("direct").get<bool>();
  s.jobs = j.at("jobs").get<unsigned>();
  s.iodepth = j.at("iodepth").get<unsigned>();
  s.sequential_bytes_per_second = j.at("sequential_bytes_per_second").get<double>();
  s.sequential_p99_ms = j.at("sequential_p99_ms").get<double>();
  s.random_iops = j.at("random_iops").get<double>();
  s.random_p99_ms = j.at("random_p99_ms").get<double>();
  return s;
}

std::string LookToWire(const DataLook& look) {
  json j;
  if (look.census.ok()) {
    j["census"] = json::parse(CensusToWire(*look.census));
  } else {
    j["census_error"] = look.census.status().message();
  }
  if (look.bench) j["bench"] = SpeedToWire(*look.bench);
  j["bench_read_mode"] = look.bench_read_mode;
  j["bench_notes"] = look.bench_notes;
  j["bench_skipped"] = look.bench_skipped;
  return JsonText(j, -1);
}

Result<DataLook> LookFromWire(const std::string& text) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    return Status::InvalidArgument("the census child's answer is not JSON");
  }
  DataLook look;
  try {
    if (j.contains("census")) {
      look.census = CensusFromWire(j.at("census").dump());
    } else {
      look.census = Status::Unavailable(j.at("census_error").get<std::string>());
    }
    if (j.contains("bench")) look.bench = SpeedFromWire(j.at("bench"));
    look.bench_read_mode = j.at("bench_read_mode").get<std::string>();
    look.bench_notes = j.at("bench_notes").get<std::vector<std::string>>();
    look.bench_skipped = j.at("bench_skipped").get<std::string>();
  } catch (const json::exception& e) {
    return Status::InvalidArgument(std::string("the census child's answer: ") + e.what());
  }
  return look;
}

// On a remote mount: the census and the bench in a child, given up one
// idle deadline after the mount's last answer.
Result<DataLook> LookAtRemoteData(const DoctorRequest& r, const MountEntry& mount,
                                  const Progress& progress) {
  progress(fmt::format("walking {} (a remote mount, in a child process)...", r.data));
  const double deadline = RemoteCallDeadlineSeconds();
  Result<ChildAnswer> answer = CallInChild(
      [&](const ChildProgress& child) {
        DataLook look = LookAtData(
            r, [](std::string_view) {}, [&](std::string_view what) { child.Step(what); },
            [&] { child.Advance(); });
        return ChildAnswer{0, LookToWire(look), ""};
      },
      deadline);
  progress("");
  if (!answer.ok()) {
    return Status::Unavailable(fmt::format(
        "io: no answer from the {} within {:.0f} s to the {}: the dataset's census and the "
        "storage bench are missing; the file server or the link to it may be down",
        DescribeMount(mount), deadline, answer.status().message()));
  }
  Result<DataLook> look = LookFromWire(answer->out);
  if (!look.ok())
    return Status::Unavailable("io: --data " + r.data + ": " + look.status().message());
  return look;
}

}  // namespace

void TriageDataset(const Root& root, const DoctorRequest& r, uint64_t memory_total_bytes, Triage& t,
                   const Progress& progress) {
  if (r.data.empty()) {
    t.notes.push_back("io: the dataset and its storage were not checked; pass --data PATH");
    return;
  }
  std::optional<MountEntry> remote = RemoteMountHolding(root, r.data);
  if (!remote) {
    Judge(r, LookAtData(r, progress, {}, {}), memory_total_bytes, t);
    return;
  }
  Result<DataLook> look = LookAtRemoteData(r, *remote, progress);
  if (!look.ok()) {
    t.notes.push_back(look.status().message());
    return;
  }
  Judge(r, *look, memory_total_bytes, t);
}

std::string CensusToWire(const DatasetCensus& c) {
  json histogram = json::array();
  for (const SizeBucket& b : c.histogram) histogram.push_back({b.files, b.bytes});
  json j = {{"path", c.path},
            {"resolved_path", c.resolved_path},
            {"threads", c.threads},
            {"walk_seconds", c.walk_seconds},
            {"files", c.files},
            {"bytes", c.bytes},
            {"directories", c.directories},
            {"symlinks", c.symlinks},
            {"other_entries", c.other_entries},
            {"empty_files", c.empty_files},
            {"histogram", histogram},
            {"max_depth", c.max_depth},
            {"deepest_path", c.deepest_path},
            {"largest_file_bytes", c.largest_file_bytes},
            {"unreadable", c.unreadable},
            {"unreadable_examples", c.unreadable_examples},
            {"fs_type", c.fs_type},
            {"statfs_name", c.statfs_name},
            {"statfs_type", c.statfs_type ? json(*c.statfs_type) : json(nullptr)},
            {"mount_point", c.mount_point},
            {"source", c.source},
            {"mount_options", c.mount_options},
            {"device", c.device},
            {"disk", c.disk},
            {"backing_disks", c.backing_disks},
            {"remote", c.remote},
            {"residency",
             {c.residency.sampled, c.residency.files_checked, c.residency.files_failed,
              c.residency.bytes_checked, c.residency.resident_bytes, c.residency.resident_fraction,
              c.residency.first_error}},
            {"notes", c.notes}};
  if (c.latency) {
    j["latency"] = {c.latency->files,       c.latency->stat_p50_us, c.latency->stat_p99_us,
                    c.latency->open_p50_us, c.latency->open_p99_us, c.latency->fetch_p50_us,
                    c.latency->fetch_p99_us};
  }
  // A file name need not be UTF-8: its odd bytes go as U+FFFD (dump would throw).
  return JsonText(j, -1);
}

Result<DatasetCensus> CensusFromWire(const std::string& text) {
  const json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return Status::InvalidArgument("census wire: not JSON");
  DatasetCensus c;
  try {
    j.at("path").get_to(c.path);
    j.at("resolved_path").get_to(c.resolved_path);
    j.at("threads").get_to(c.threads);
    j.at("walk_seconds").get_to(c.walk_seconds);
    j.at("files").get_to(c.files);
    j.at("bytes").get_to(c.bytes);
    j.at("directories").get_to(c.directories);
    j.at("symlinks").get_to(c.symlinks);
    j.at("other_entries").get_to(c.other_entries);
    j.at("empty_files").get_to(c.empty_files);
    const json& histogram = j.at("histogram");
    if (histogram.size() != kSizeBuckets) return Status::InvalidArgument("census wire: histogram");
    for (size_t b = 0; b < kSizeBuckets; ++b) {
      histogram.at(b).at(0).get_to(c.histogram[b].files);
      histogram.at(b).at(1).get_to(c.histogram[b].bytes);
    }
    j.at("max_depth").get_to(c.max_depth);
    j.at("deepest_path").get_to(c.deepest_path);
    j.at("largest_file_bytes").get_to(c.largest_file_bytes);
    j.at("unreadable").get_to(c.unreadable);
    j.at("unreadable_examples").get_to(c.unreadable_examples);
    j.at("fs_type").get_to(c.fs_type);
    j.at("statfs_name").get_to(c.statfs_name);
    if (!j.at("statfs_type").is_null()) c.statfs_type = j.at("statfs_type").get<int64_t>();
    j.at("mount_point").get_to(c.mount_point);
    j.at("source").get_to(c.source);
    c.mount_options = j.value("mount_options", std::string());  // absent from older children
    j.at("device").get_to(c.device);
    j.at("disk").get_to(c.disk);
    j.at("backing_disks").get_to(c.backing_disks);
    j.at("remote").get_to(c.remote);
    const json& r = j.at("residency");
    r.at(0).get_to(c.residency.sampled);
    r.at(1).get_to(c.residency.files_checked);
    r.at(2).get_to(c.residency.files_failed);
    r.at(3).get_to(c.residency.bytes_checked);
    r.at(4).get_to(c.residency.resident_bytes);
    r.at(5).get_to(c.residency.resident_fraction);
    r.at(6).get_to(c.residency.first_error);
    if (j.contains("latency")) {
      const json& l = j.at("latency");
      MetadataLatency m;
      l.at(0).get_to(m.files);
      l.at(1).get_to(m.stat_p50_us);
      l.at(2).get_to(m.stat_p99_us);
      l.at(3).get_to(m.open_p50_us);
      l.at(4).get_to(m.open_p99_us);
      if (l.size() >= 7) {  // absent from older children
        l.at(5).get_to(m.fetch_p50_us);
        l.at(6).get_to(m.fetch_p99_us);
      }
      c.latency = m;
    }
    j.at("notes").get_to(c.notes);
  } catch (const json::exception& e) {
    return Status::InvalidArgument(std::string("census wire: ") + e.what());
  }
  return c;
}

}  // namespace stallscope

// io.small_files, io.remote_fs and io.cold_cache on synthetic censuses, and
// the dataset JSON (the findings contract plus the census).
#include "analyze/host/dataset_rules.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "analyze/catalog.h"
#include "analyze/report.h"
#include "finding_matchers.h"
#include "render/dataset.h"

namespace stallscope {
namespace {

// `small` files of 100 KB and `large` of 1 GiB, all cached, on a local ext4.
DatasetCensus Census(uint64_t small, uint64_t large) {
  DatasetCensus c;
  c.path = "/data/imgs";
  c.resolved_path = "/data/imgs";
  c.files = small + large;
  c.histogram[2] = {small, small * 100000};
  c.histogram[5] = {large, large << 30};
  c.bytes = small * 100000 + (large << 30);
  c.fs_type = "ext4";
  c.source = "/dev/nvme0n1p2";
  c.residency.files_checked = std::min<uint64_t>(c.files, 10000);
  c.residency.bytes_checked = 1 << 30;
  c.residency.resident_bytes = 1 << 30;
  c.residency.resident_fraction = 1.0;
  return c;
}

TEST(SmallFiles, FiresAtTenThousandWithThePackCommand) {
  std::vector<Finding> findings = CheckDataset(Census(12000, 0), {}).findings;
  const std::optional<Finding> f = FindCopy(findings, "io.small_files");
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->layer, Layer::kIo);
  EXPECT_EQ(f->severity, Severity::kWarning);
  EXPECT_EQ(std::get<int64_t>(*EvidenceValueOf(*f, "small_files")), 12000);
  EXPECT_DOUBLE_EQ(std::get<double>(*EvidenceValueOf(*f, "small_files_share")), 1.0);
  EXPECT_DOUBLE_EQ(std::get<double>(*EvidenceValueOf(*f, "seconds_per_epoch_at_5000_iops")), 2.4);
  EXPECT_NE(f->next.find("stallscope pack /data/imgs /data/imgs-wds --format wds"),
            std::string::npos)
      << f->next;
  EXPECT_NE(f->summary.find("12000 of 12000"), std::string::npos) << f->summary;
  EXPECT_FALSE(FindCopy(findings, "io.remote_fs"));
  EXPECT_FALSE(FindCopy(findings, "io.cold_cache"));  // all cached
}

TEST(SmallFiles, Thresholds) {
  EXPECT_FALSE(FindCopy(CheckDataset(Census(9999, 0), {}).findings, "io.small_files"));
  // Small files that are a minority of the files (a few thousand large ones
  // alongside) still fire only when they are half the files.
  EXPECT_FALSE(FindCopy(CheckDataset(Census(10000, 10001), {}).findings, "io.small_files"));
  EXPECT_TRUE(FindCopy(CheckDataset(Census(10000, 10000), {}).findings, "io.small_files"));
  const std::optional<Finding> critical =
      FindCopy(CheckDataset(Census(150000, 0), {}).findings, "io.small_files");
  ASSERT_TRUE(critical.has_value());
  EXPECT_EQ(critical->severity, Severity::kCritical);
  EXPECT_FALSE(FindCopy(CheckDataset(Census(0, 4), {}).findings, "io.small_files"));
}

TEST(RemoteFs, SeverityFollowsWhatIsOnIt) {
  DatasetCensus nfs = Census(20000, 0);
  nfs.fs_type = "nfs4";
  nfs.source = "filer:/export/imgs";
  nfs.remote = true;
  nfs.latency = MetadataLatency{1000, 300, 900, 1200, 8000};
  std::vector<Finding> findings = CheckDataset(nfs, {}).findings;
  const std::optional<Finding> remote = FindCopy(findings, "io.remote_fs");
  ASSERT_TRUE(remote.has_value());
  EXPECT_EQ(remote->severity, Severity::kCritical);
  EXPECT_DOUBLE_EQ(std::get<double>(*EvidenceValueOf(*remote, "open_p50_ms")), 1.2);
  EXPECT_DOUBLE_EQ(std::get<double>(*EvidenceValueOf(*remote, "open_p99_ms")), 8.0);
  EXPECT_DOUBLE_EQ(std::get<double>(*EvidenceValueOf(*remote, "open_seconds_per_epoch")), 24.0);
  EXPECT_EQ(std::get<std::string>(*EvidenceValueOf(*remote, "fs_type")), "nfs4");
  EXPECT_NE(remote->summary.find("nfs4"), std::string::npos);
  EXPECT_NE(remote->summary.find("p99 8.00 ms"), std::string::npos) << remote->summary;
  // Small files on a share are critical whatever their count.
  ASSERT_TRUE(FindCopy(findings, "io.small_files"));
  EXPECT_EQ(FindCopy(findings, "io.small_files")->severity, Severity::kCritical);

  DatasetCensus big = Census(0, 4);
  big.remote = true;
  big.fs_type = "lustre";
  const std::optional<Finding> info = FindCopy(CheckDataset(big, {}).findings, "io.remote_fs");
  ASSERT_TRUE(info.has_value());
  EXPECT_EQ(info->severity, Severity::kInfo);
  EXPECT_EQ(EvidenceValueOf(*info, "open_p50_ms"), nullptr);  // none measured

  DatasetCensus medium = Census(0, 5000);
  medium.remote = true;
  EXPECT_EQ(FindCopy(CheckDataset(medium, {}).findings, "io.remote_fs")->severity,
            Severity::kWarning);
}

TEST(RemoteFs, PerEpochCostFromSampleAndWalk) {
  // 20,000 files of 100 KiB (from the walk), open p50 2 ms (from the sample).
  const RemoteEpochCost cost = RemoteCostPerEpoch(20000, 20000ull * 100 * 1024, 2000, 4);
  EXPECT_DOUBLE_EQ(cost.remote_seconds, 20000 * 0.002 / 4);  // 10 s
  EXPECT_DOUBLE_EQ(cost.local_seconds, 20000 / kFloorRandomIops);
  EXPECT_EQ(cost.shards, 8u);  // 1.95 GiB in 256 MiB shards
  EXPECT_DOUBLE_EQ(cost.packed_seconds, 8 * 0.002 / 4);
  EXPECT_DOUBLE_EQ(cost.saved_seconds, cost.remote_seconds - cost.packed_seconds);
  EXPECT_EQ(RemoteCostPerEpoch(0, 0, 2000, 4).shards, 0u);
  EXPECT_EQ(RemoteCostPerEpoch(10, 10, 2000, 0).workers, 1);  // never divides by zero

  DatasetCensus sshfs = Census(20000, 0);
  sshfs.fs_type = "fuse.sshfs";
  sshfs.source = "user@host:/data";
  sshfs.remote = true;
  sshfs.latency = MetadataLatency{1000, 1500, 3000, 2000, 6000};
  DatasetContext context;
  context.loader_workers = 4;
  const std::optional<Finding> remote =
      FindCopy(CheckDataset(sshfs, context).findings, "io.remote_fs");
  ASSERT_TRUE(remote.has_value());
  EXPECT_EQ(std::get<int64_t>(*EvidenceValueOf(*remote, "loader_workers")), 4);
  const double expected = 20000.0 * 0.002 / 4;
  EXPECT_DOUBLE_EQ(std::get<double>(*EvidenceValueOf(*remote, "loader_seconds_per_epoch")),
                   expected);
  EXPECT_GT(std::get<double>(*EvidenceValueOf(*remote, "pack_saves_seconds_per_epoch")), 0);
  EXPECT_LT(std::get<double>(*EvidenceValueOf(*remote, "pack_saves_seconds_per_epoch")), expected);
  // The summary says which figure is sampled and which is walked.
  EXPECT_NE(remote->summary.find("sample of 1000 files"), std::string::npos) << remote->summary;
  EXPECT_NE(remote->summary.find("of the walk"), std::string::npos) << remote->summary;
  EXPECT_NE(remote->summary.find("4 workers"), std::string::npos) << remote->summary;
  // The client's own knob, from the mount's type.
  EXPECT_NE(remote->next.find("attr_timeout"), std::string::npos) << remote->next;
  EXPECT_NE(remote->next.find("stallscope pack"), std::string::npos) << remote->next;
  // Without the user's count, the assumed one.
  const std::optional<Finding> assumed = FindCopy(CheckDataset(sshfs, {}).findings, "io.remote_fs");
  EXPECT_EQ(std::get<int64_t>(*EvidenceValueOf(*assumed, "loader_workers")), kAssumedLoaderWorkers);
  EXPECT_NE(assumed->summary.find("--workers N"), std::string::npos) << assumed->summary;

  // Where the census fetched files as a loader does (open, read, close), a
  // loader pays the fetch, not the open alone.
  sshfs.latency->fetch_p50_us = 5000;
  sshfs.latency->fetch_p99_us = 9000;
  const std::optional<Finding> fetched =
      FindCopy(CheckDataset(sshfs, context).findings, "io.remote_fs");
  ASSERT_TRUE(fetched.has_value());
  EXPECT_DOUBLE_EQ(std::get<double>(*EvidenceValueOf(*fetched, "loader_seconds_per_epoch")),
                   20000.0 * 0.005 / 4);
  EXPECT_DOUBLE_EQ(std::get<double>(*EvidenceValueOf(*fetched, "fetch_p50_ms")), 5.0);
  EXPECT_NE(fetched->summary.find("a whole fetch (open, read, close) p50 5.00 ms"),
            std::string::npos)
      << fetched->summary;
}

TEST(ColdCache, LowResidencyFitsOrNot) {
  DatasetCensus c = Census(12000, 0);  // 1.2 GB in 12,000 files: 2.4 s + 2.4 s at the floor
  c.residency.resident_bytes = c.residency.bytes_checked / 20;
  c.residency.resident_fraction = 0.05;
  c.residency.sampled = true;
  DatasetContext big_memory{64ull << 30, std::nullopt};
  const std::optional<Finding> warm_next =
      FindCopy(CheckDataset(c, big_memory).findings, "io.cold_cache");
  ASSERT_TRUE(warm_next.has_value());
  EXPECT_EQ(warm_next->severity, Severity::kWarning);
  EXPECT_DOUBLE_EQ(std::get<double>(*EvidenceValueOf(*warm_next, "resident_fraction")), 0.05);
  EXPECT_TRUE(std::get<bool>(*EvidenceValueOf(*warm_next, "sampled")));
  EXPECT_NEAR(std::get<double>(*EvidenceValueOf(*warm_next, "cold_read_seconds_at_floor")),
              0.95 * (1.2e9 / 500e6 + 12000 / 5000.0), 1e-9);
  EXPECT_NE(warm_next->next.find("xargs -0"), std::string::npos);

  DatasetContext small_memory{2ull << 30, std::nullopt};  // 1.2 GB > half of 2 GiB
  const std::optional<Finding> never =
      FindCopy(CheckDataset(c, small_memory).findings, "io.cold_cache");
  ASSERT_TRUE(never.has_value());
  EXPECT_EQ(never->severity, Severity::kInfo);
  EXPECT_NE(never->next.find("stallscope bench io /data/imgs"), std::string::npos);

  c.residency.resident_fraction = 0.5;
  EXPECT_FALSE(FindCopy(CheckDataset(c, big_memory).findings, "io.cold_cache"));

  // A cold dataset that reads in well under a second is not worth a finding.
  DatasetCensus tiny = Census(10, 0);
  tiny.residency.resident_fraction = 0;
  EXPECT_FALSE(FindCopy(CheckDataset(tiny, big_memory).findings, "io.cold_cache"));
  // Nothing looked at: no verdict on the cache.
  DatasetCensus unknown = Census(12000, 0);
  unknown.residency = ResidencyCensus{};
  EXPECT_FALSE(FindCopy(CheckDataset(unknown, big_memory).findings, "io.cold_cache"));
}

TEST(DatasetRules, EveryIdIsInTheCatalog) {
  DatasetCensus c = Census(200000, 0);
  c.remote = true;
  c.residency.resident_fraction = 0;
  std::vector<Finding> findings = CheckDataset(c, {}).findings;
  ASSERT_EQ(findings.size(), 3u);
  for (const Finding& f : findings) {
    const Rule* rule = FindRule(f.id);
    ASSERT_NE(rule, nullptr) << f.id;
    EXPECT_EQ(rule->layer, f.layer);
    EXPECT_FALSE(f.evidence.empty());
    EXPECT_FALSE(f.next.empty());
  }
}

TEST(DatasetRules, ShellQuote) {
  EXPECT_EQ(ShellQuote("/data/imgs-1"), "/data/imgs-1");
  EXPECT_EQ(ShellQuote("/data/my imgs"), "'/data/my imgs'");
  EXPECT_EQ(ShellQuote("it's"), "'it'\\''s'");
  EXPECT_EQ(ShellQuote(""), "''");
  DatasetCensus c = Census(20000, 0);
  c.path = "/data/my imgs/";
  const std::optional<Finding> f = FindCopy(CheckDataset(c, {}).findings, "io.small_files");
  ASSERT_TRUE(f.has_value());
  EXPECT_NE(f->next.find("stallscope pack '/data/my imgs/' '/data/my imgs-wds' --format wds"),
            std::string::npos)
      << f->next;
}

TEST(DatasetRender, JsonCarriesTheContractAndTheCensus) {
  DatasetCensus c = Census(12000, 2);
  c.deepest_path = "/data/imgs/\xff\xfe-not-utf8";
  Report report = MakeReport(CheckDataset(c, {}).findings, {Layer::kIo}, {"a note"});
  nlohmann::ordered_json j =
      DatasetToJson({"dataset", "host", "2026-01-01T00:00:00Z", 1.5}, c, report);
  EXPECT_EQ(j["schema"], "stallscope.report/1");
  EXPECT_EQ(j["command"], "dataset");
  EXPECT_EQ(j["findings"][0]["id"], "io.small_files");
  EXPECT_EQ(j["dataset"]["files"], 12002u);
  EXPECT_EQ(j["dataset"]["small_files"], 12000u);
  ASSERT_EQ(j["dataset"]["size_histogram"].size(), kSizeBuckets);
  EXPECT_EQ(j["dataset"]["size_histogram"][2]["bucket"], "64K-1M");
  EXPECT_EQ(j["dataset"]["size_histogram"][2]["files"], 12000u);
  EXPECT_TRUE(j["dataset"]["size_histogram"][5]["max_bytes_exclusive"].is_null());
  EXPECT_EQ(j["dataset"]["file_system"]["type"], "ext4");
  // File names need not be UTF-8: the dump replaces, never throws.
  std::string text;
  EXPECT_NO_THROW(text = j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace));
  EXPECT_NE(text.find("-not-utf8"), std::string::npos);

  const std::string rendered = RenderDatasetText(c, report);
  EXPECT_NE(rendered.find("[warning] io.small_files"), std::string::npos) << rendered;
  EXPECT_NE(rendered.find("64K-1M"), std::string::npos);
  EXPECT_NE(rendered.find("note: a note"), std::string::npos);
}

}  // namespace
}  // namespace stallscope

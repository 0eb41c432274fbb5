#include "analyze/host/baseline.h"

#include <gtest/gtest.h>

#include "analyze/catalog.h"
#include "analyze/host/triage_table.h"

namespace stallscope {
namespace {

HostBaseline Healthy() {
  HostBaseline b;
  b.host = "n1";
  b.time_utc = "2026-11-01T10:00:00Z";
  b.metrics = {{"memory.total_bytes", Layer::kMemory, 64e9, "bytes"},
               {"network.eth0.speed_mbps", Layer::kNetwork, 100000, "Mb/s"},
               {"network.eth0.mtu_bytes", Layer::kNetwork, 9000, "bytes"},
               {"io.bench.sequential_mb_per_s", Layer::kIo, 2000, "MB/s"},
               {"io.bench.random_iops", Layer::kIo, 50000, "IOPS"}};
  return b;
}

const EvidenceValue* Find(const Finding& f, std::string_view name) {
  for (const Evidence& e : f.evidence) {
    if (e.name == name) return &e.value;
  }
  return nullptr;
}

TEST(Baseline, SameFiguresRaiseNothing) {
  std::vector<std::string> not_compared;
  EXPECT_TRUE(CompareBaseline(Healthy(), Healthy(), 0.10, &not_compared).findings.empty());
  EXPECT_TRUE(not_compared.empty());
}

TEST(Baseline, DropWithinShareIsNoise) {
  HostBaseline now = Healthy();
  now.metrics[3].value = 1850;  // 7.5% below
  EXPECT_TRUE(CompareBaseline(Healthy(), now, 0.10, nullptr).findings.empty());
  // Higher is never drift.
  now.metrics[3].value = 2600;
  EXPECT_TRUE(CompareBaseline(Healthy(), now, 0.10, nullptr).findings.empty());
}

TEST(Baseline, DropBeyondShareNamesMetricBaselineAndNow) {
  HostBaseline now = Healthy();
  now.metrics[3].value = 1500;  // 25% below
  std::vector<Finding> f = CompareBaseline(Healthy(), now, 0.10, nullptr).findings;
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].id, "io.baseline_drift");
  EXPECT_EQ(f[0].layer, Layer::kIo);
  EXPECT_EQ(f[0].severity, Severity::kWarning);
  EXPECT_EQ(std::get<std::string>(*Find(f[0], "metric")), "io.bench.sequential_mb_per_s");
  EXPECT_DOUBLE_EQ(std::get<double>(*Find(f[0], "baseline")), 2000);
  EXPECT_DOUBLE_EQ(std::get<double>(*Find(f[0], "now")), 1500);
  EXPECT_DOUBLE_EQ(std::get<double>(*Find(f[0], "drop_fraction")), 0.25);
  EXPECT_NE(f[0].summary.find("25% below"), std::string::npos) << f[0].summary;
  EXPECT_FALSE(f[0].next.empty());
  // A stricter share lets it through only below it.
  EXPECT_TRUE(CompareBaseline(Healthy(), now, 0.30, nullptr).findings.empty());
}

TEST(Baseline, HalfOrWorseIsCriticalAndGoneNicIsFlagged) {
  HostBaseline now = Healthy();
  now.metrics[1].value = 25000;                // 100G renegotiated to 25G
  now.metrics.erase(now.metrics.begin() + 2);  // eth0's MTU no longer known
  std::vector<Finding> f = CompareBaseline(Healthy(), now, 0.10, nullptr).findings;
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0].id, "network.baseline_drift");
  EXPECT_EQ(f[0].severity, Severity::kCritical);
  EXPECT_EQ(std::get<std::string>(*Find(f[1], "metric")), "network.eth0.mtu_bytes");
  EXPECT_EQ(std::get<std::string>(*Find(f[1], "now")), "absent");
}

TEST(Baseline, BenchNotRunNowIsNotComparedButNamed) {
  HostBaseline now = Healthy();
  now.metrics.resize(3);  // --quick: no bench figures
  std::vector<std::string> not_compared;
  EXPECT_TRUE(CompareBaseline(Healthy(), now, 0.10, &not_compared).findings.empty());
  EXPECT_EQ(not_compared,
            (std::vector<std::string>{"io.bench.sequential_mb_per_s", "io.bench.random_iops"}));
}

TEST(Baseline, JsonRoundTrips) {
  Result<HostBaseline> back = ParseBaseline(BaselineToJson(Healthy()), "B.json");
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->host, "n1");
  EXPECT_EQ(back->time_utc, "2026-11-01T10:00:00Z");
  ASSERT_EQ(back->metrics.size(), 5u);
  EXPECT_EQ(back->metrics[1].name, "network.eth0.speed_mbps");
  EXPECT_EQ(back->metrics[1].layer, Layer::kNetwork);
  EXPECT_DOUBLE_EQ(back->metrics[1].value, 100000);
  EXPECT_EQ(back->metrics[1].unit, "Mb/s");
}

void ExpectError(std::string_view text, std::string_view want) {
  Result<HostBaseline> r = ParseBaseline(text, "B.json");
  ASSERT_FALSE(r.ok()) << text;
  EXPECT_NE(r.status().message().find("B.json"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find(want), std::string::npos) << r.status().message();
}

TEST(Baseline, BadFilesSayWhatIsWrong) {
  ExpectError("", "not JSON");
  ExpectError("{\"schema\": ", "not JSON");
  ExpectError("[1, 2]", "not a JSON object");
  ExpectError("{\"metrics\": []}", "not a stallscope baseline");
  ExpectError("{\"schema\": \"stallscope.report/1\", \"metrics\": []}", "stallscope.report/1");
  ExpectError("{\"schema\": \"stallscope.baseline/1\"}", "no \"metrics\"");
  ExpectError(R"({"schema": "stallscope.baseline/1", "metrics": [{"layer": "io", "value": 1}]})",
              "metrics[0]: no \"name\"");
  ExpectError(
      R"({"schema": "stallscope.baseline/1", "metrics": [{"name": "x", "layer": "disk", "value": 1}]})",
      "layer \"disk\"");
  ExpectError(
      R"({"schema": "stallscope.baseline/1", "metrics": [{"name": "x", "layer": "io", "value": "9"}]})",
      "no numeric \"value\"");
  ExpectError(
      R"({"schema": "stallscope.baseline/1", "metrics": [{"name": "x", "layer": "io", "value": -1}]})",
      "not a finite number >= 0");
  ExpectError(R"({"schema": "stallscope.baseline/1", "metrics": [
      {"name": "x", "layer": "io", "value": 1}, {"name": "x", "layer": "io", "value": 2}]})",
              "metrics[1]: \"x\" appears twice");
}

TEST(Baseline, FromSnapshotKeepsPhysicalFigures) {
  Snapshot s;
  s.hostname = "n2";
  s.after.memory.total_bytes = 32ull << 30;
  s.after.memory.swap_total_bytes = 2ull << 30;
  BlockDevice disk;
  disk.name = "nvme0n1";
  disk.size_bytes = 1ull << 40;
  BlockDevice part = disk;
  part.name = "nvme0n1p1";
  part.is_partition = true;
  BlockDevice loop = disk;
  loop.name = "loop0";
  loop.is_virtual = true;
  s.block_devices = {disk, part, loop};
  NetInterface eth;
  eth.name = "eth0";
  eth.kind = InterfaceKind::kEthernet;
  eth.speed_mbps = 25000;
  eth.mtu_bytes = 1500;
  NetInterface lo;
  lo.name = "lo";
  lo.kind = InterfaceKind::kLoopback;
  lo.mtu_bytes = 65536;
  s.interfaces = {eth, lo};
  StorageSpeed bench;
  bench.sequential_bytes_per_second = 750e6;
  bench.random_iops = 12000;
  HostBaseline b = BaselineFromSnapshot(s, &bench);
  std::vector<std::string> names;
  for (const BaselineMetric& m : b.metrics) names.push_back(m.name);
  EXPECT_EQ(names,
            (std::vector<std::string>{"memory.total_bytes", "memory.swap_total_bytes",
                                      "io.disk.nvme0n1.size_bytes", "network.eth0.speed_mbps",
                                      "network.eth0.mtu_bytes", "io.bench.sequential_mb_per_s",
                                      "io.bench.random_iops"}));
  EXPECT_DOUBLE_EQ(b.metrics[5].value, 750);
}

TEST(Baseline, DriftIdsAreInTheCatalog) {
  for (const char* id : {"memory.baseline_drift", "io.baseline_drift", "network.baseline_drift"}) {
    const Rule* rule = FindRule(id);
    ASSERT_NE(rule, nullptr) << id;
    EXPECT_NE(rule->threshold.find("10%"), std::string::npos) << id;
  }
}

TEST(TriageTable, EveryLayerInOrderWithChecks) {
  std::span<const Suspect> table = TriageTable();
  ASSERT_FALSE(table.empty());
  for (size_t i = 1; i < table.size(); ++i) {
    EXPECT_LE(table[i - 1].layer, table[i].layer) << "row " << i << " out of triage order";
  }
  for (Layer layer : kTriageOrder) {
    EXPECT_FALSE(SuspectsOf(layer).empty()) << LayerName(layer);
  }
  for (const Suspect& s : table) {
    EXPECT_FALSE(s.quick_check.empty()) << s.suspect;
    EXPECT_TRUE(s.stallscope.starts_with("stallscope ")) << s.suspect;
    // Each id names its own layer, and the ids the catalog holds are spelled as there.
    std::string ids(s.findings);
    EXPECT_EQ(ids.rfind(std::string(LayerName(s.layer)) + ".", 0), 0u) << ids;
  }
  // The memory rows point at the memory rules that exist.
  for (const Suspect& s : SuspectsOf(Layer::kMemory)) {
    std::string first(s.findings.substr(0, s.findings.find(' ')));
    EXPECT_NE(FindRule(first), nullptr) << first;
  }
}

}  // namespace
}  // namespace stallscope

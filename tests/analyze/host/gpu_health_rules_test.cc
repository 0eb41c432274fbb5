// GPU and link health rules on hand-built samples: every branch of
// io.pcie_degraded / network.link_degraded (narrower, slower while busy,
// slower while idle, the port as the limit), memory.gpu_ecc, memory.gpu_remap,
// code.gpu_persistence_off, code.gpu_xid and the kernel-log port errors.
#include "analyze/host/gpu_health_rules.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "analyze/catalog.h"
#include "analyze/run/rules.h"
#include "finding_matchers.h"

namespace stallscope {
namespace {

PcieLink Link(PcieDeviceKind kind, const std::string& address, PcieLinkEnd current, PcieLinkEnd max,
              PcieLinkEnd port) {
  PcieLink l;
  l.kind = kind;
  l.name = kind == PcieDeviceKind::kGpu ? address : "mlx5_0";
  l.pci_address = address;
  l.current = current;
  l.max = max;
  l.port_address = "0000:16:01.0";
  l.port_max = port;
  return l;
}

GpuObservation Gpus(double util) {
  GpuObservation o;
  o.available = true;
  GpuState g;
  g.index = 0;
  g.name = "NVIDIA A100";
  g.pci_bus_id = "00000000:17:00.0";
  g.utilization_gpu_percent = util;
  o.gpus.push_back(g);
  return o;
}

const Evidence* EvidenceNamed(const Finding& f, std::string_view name) {
  for (const Evidence& e : f.evidence) {
    if (e.name == name) return &e;
  }
  return nullptr;
}

TEST(PcieDegraded, NarrowerIsJudgedEvenWhenIdleAndHalfIsAWarning) {
  std::vector<PcieLink> links = {
      Link(PcieDeviceKind::kGpu, "0000:17:00.0", {16, 8}, {16, 16}, {16, 16})};
  FindingsWithNotes idle = CheckPcieLinks(links, Gpus(0));
  const Finding* f = Find(idle.findings, "io.pcie_degraded");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::kWarning);  // half the ceiling: one step
  EXPECT_EQ(f->layer, Layer::kIo);
  EXPECT_NE(f->summary.find("x8 of x16"), std::string::npos) << f->summary;
  EXPECT_NE(f->summary.find("15.8 GB/s"), std::string::npos) << f->summary;
  EXPECT_NE(f->summary.find("31.5 GB/s"), std::string::npos) << f->summary;
  EXPECT_NE(f->summary.find("GPU 0 (NVIDIA A100"), std::string::npos) << f->summary;
  const Evidence* share = EvidenceNamed(*f, "ceiling_share");
  ASSERT_NE(share, nullptr);
  EXPECT_DOUBLE_EQ(std::get<double>(share->value), 0.5);
  EXPECT_NE(EvidenceNamed(*f, "upstream_port_max_link"), nullptr);
}

TEST(PcieDegraded, SlowerCountsOnlyWhileTheGpuWorks) {
  std::vector<PcieLink> links = {
      Link(PcieDeviceKind::kGpu, "0000:17:00.0", {8, 16}, {16, 16}, {16, 16})};
  FindingsWithNotes idle = CheckPcieLinks(links, Gpus(3));
  EXPECT_TRUE(idle.findings.empty());
  ASSERT_EQ(idle.notes.size(), 1u);
  EXPECT_NE(idle.notes[0].find("save power"), std::string::npos) << idle.notes[0];
  FindingsWithNotes busy = CheckPcieLinks(links, Gpus(kPcieBusyUtilPercent));
  const Finding* f = Find(busy.findings, "io.pcie_degraded");
  ASSERT_NE(f, nullptr);
  EXPECT_NE(f->summary.find("8 GT/s (Gen3) of 16 GT/s (Gen4)"), std::string::npos) << f->summary;
  // Without NVML a slower link is not judged either: nobody says it works.
  EXPECT_TRUE(CheckPcieLinks(links, GpuObservation{}).findings.empty());
  // Slower and narrower while idle: only the width counts.
  links[0].current = {2.5, 8};
  FindingsWithNotes both = CheckPcieLinks(links, Gpus(0));
  f = Find(both.findings, "io.pcie_degraded");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::kWarning);
  EXPECT_NE(f->summary.find("x8 of x16"), std::string::npos) << f->summary;
  EXPECT_EQ(f->summary.find("2.5 GT/s (Gen1) of"), std::string::npos) << f->summary;
}

TEST(PcieDegraded, AQuarterIsCriticalAndThePortSetsWhatIsPossible) {
  // x8 Gen3 where x16 Gen4 was possible: a quarter.
  std::vector<PcieLink> links = {
      Link(PcieDeviceKind::kGpu, "0000:17:00.0", {8, 8}, {16, 16}, {16, 16})};
  const Finding* f = nullptr;
  FindingsWithNotes out = CheckPcieLinks(links, Gpus(90));
  f = Find(out.findings, "io.pcie_degraded");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::kCritical);
  // A Gen5 GPU in a Gen4 slot at Gen4: as good as the slot allows.
  links[0] = Link(PcieDeviceKind::kGpu, "0000:17:00.0", {16, 16}, {32, 16}, {16, 16});
  EXPECT_TRUE(CheckPcieLinks(links, Gpus(90)).findings.empty());
  // A link down (width 0) is a note, not a ceiling of 0.
  links[0].current = {std::nullopt, 0};
  out = CheckPcieLinks(links, Gpus(90));
  EXPECT_TRUE(out.findings.empty());
  ASSERT_EQ(out.notes.size(), 1u);
  EXPECT_NE(out.notes[0].find("link down"), std::string::npos);
}

TEST(LinkDegraded, AnHcaAtAQuarterOfItsLanes) {
  std::vector<PcieLink> links = {
      Link(PcieDeviceKind::kHca, "0000:ca:00.0", {16, 4}, {16, 16}, {16, 16}),
      Link(PcieDeviceKind::kNic, "0000:18:00.0", {8, 8}, {8, 8}, {8, 8})};
  FindingsWithNotes out = CheckPcieLinks(links, GpuObservation{});
  ASSERT_EQ(out.findings.size(), 1u);
  const Finding& f = out.findings[0];
  EXPECT_EQ(f.id, "network.link_degraded");
  EXPECT_EQ(f.layer, Layer::kNetwork);
  EXPECT_EQ(f.severity, Severity::kCritical);
  EXPECT_NE(f.summary.find("hca mlx5_0 (0000:ca:00.0)"), std::string::npos) << f.summary;
}

TEST(GpuHealth, EccRemapAndPersistence) {
  GpuObservation o = Gpus(50);
  GpuState& g = o.gpus[0];
  EXPECT_TRUE(CheckGpuHealth(o, {}).findings.empty());  // nothing reported: nothing judged
  g.ecc_volatile_uncorrected = 0;
  g.ecc_aggregate_uncorrected = 0;
  g.persistence_mode = true;
  EXPECT_TRUE(CheckGpuHealth(o, {}).findings.empty());
  // Corrected errors that grew over the interval: a warning.
  FindingsWithNotes grew = CheckGpuHealth(o, {{0, 15}});
  const Finding* f = Find(grew.findings, "memory.gpu_ecc");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::kWarning);
  EXPECT_NE(f->summary.find("15 correctable"), std::string::npos) << f->summary;
  EXPECT_TRUE(CheckGpuHealth(o, {{1, 15}}).findings.empty());  // another GPU's growth
  // Lifetime uncorrectable only: a warning; since the driver loaded: critical.
  g.ecc_aggregate_uncorrected = 3;
  f = nullptr;
  FindingsWithNotes life = CheckGpuHealth(o, {});
  f = Find(life.findings, "memory.gpu_ecc");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::kWarning);
  g.ecc_volatile_uncorrected = 2;
  FindingsWithNotes now = CheckGpuHealth(o, {});
  f = Find(now.findings, "memory.gpu_ecc");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::kCritical);
  EXPECT_EQ(f->layer, Layer::kMemory);
  // Remaps: pending is a warning, failed critical.
  g.remap_pending = true;
  FindingsWithNotes pending = CheckGpuHealth(o, {});
  f = Find(pending.findings, "memory.gpu_remap");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::kWarning);
  EXPECT_NE(f->summary.find("needs a reset"), std::string::npos);
  g.remap_failed = true;
  FindingsWithNotes failed = CheckGpuHealth(o, {});
  f = Find(failed.findings, "memory.gpu_remap");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::kCritical);
  // Persistence off: info, in the code layer.
  g.persistence_mode = false;
  FindingsWithNotes off = CheckGpuHealth(o, {});
  f = Find(off.findings, "code.gpu_persistence_off");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::kInfo);
  EXPECT_EQ(f->layer, Layer::kCode);
  // A lost GPU's figures are not trusted.
  g.lost = true;
  EXPECT_TRUE(CheckGpuHealth(o, {{0, 15}}).findings.empty());
}

TEST(GpuXids, OnePerGpuTheWorstLeads) {
  auto xid = [](int n, const std::string& bus, const std::string& process = "") {
    GpuXid x;
    x.xid = n;
    x.bus_id = bus;
    x.process = process;
    x.message = "NVRM: Xid (PCI:" + bus + "): " + std::to_string(n) + ", ...";
    return x;
  };
  std::vector<GpuXid> xids = {
      xid(13, "0000:3b:00", "python3"), xid(13, "0000:3b:00"), xid(63, "0000:17:00"),
      xid(48, "0000:17:00", "python3"), xid(94, "0000:17:00"), xid(79, "0000:99:00")};
  FindingsWithNotes out = CheckGpuXids(xids, Gpus(0), "since boot");
  std::vector<const Finding*> all = FindAll(out.findings, "code.gpu_xid");
  ASSERT_EQ(all.size(), 3u);
  // 0000:3b:00: the application's 13 twice: a warning that says so.
  EXPECT_EQ(all[0]->severity, Severity::kWarning);
  EXPECT_NE(all[0]->summary.find("Xid 13 x2: graphics engine exception"), std::string::npos)
      << all[0]->summary;
  EXPECT_NE(all[0]->next.find("compute-sanitizer"), std::string::npos);
  // 0000:17:00 is NVML's GPU 0; the 48 leads and makes it critical.
  EXPECT_EQ(all[1]->severity, Severity::kCritical);
  EXPECT_NE(all[1]->summary.find("GPU 0 (NVIDIA A100, 0000:17:00)"), std::string::npos)
      << all[1]->summary;
  const Evidence* worst = EvidenceNamed(*all[1], "worst_xid");
  ASSERT_NE(worst, nullptr);
  EXPECT_EQ(std::get<int64_t>(worst->value), 48);
  EXPECT_NE(EvidenceNamed(*all[1], "xid_94_count"), nullptr);
  // A bus NVML does not know (fallen off it): named by its bus alone.
  EXPECT_EQ(all[2]->severity, Severity::kCritical);
  EXPECT_NE(all[2]->summary.find("GPU at 0000:99:00"), std::string::npos) << all[2]->summary;
  EXPECT_NE(all[2]->summary.find("fallen off the bus"), std::string::npos);
  EXPECT_TRUE(CheckGpuXids({}, Gpus(0), "since boot").findings.empty());
}

TEST(PortLog, LinkDownsAreOnePortErrorsFinding) {
  EXPECT_FALSE(PortLogFinding({}, "since boot").has_value());
  PortLogEvent a{"0000:ca:00.0", 310.2, 9, "mlx5_core 0000:ca:00.0 ens1f0np0: Link down"};
  PortLogEvent b{"mlx5_1", std::nullopt, 12, "mlx5_1: Cable unplugged"};
  std::optional<Finding> f = PortLogFinding({a, a, b}, "since boot");
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->id, "network.port_errors");
  EXPECT_EQ(f->severity, Severity::kWarning);
  EXPECT_NE(f->summary.find("0000:ca:00.0 (2x), mlx5_1 (1x)"), std::string::npos) << f->summary;
}

// A run's kernel log: the GPU named from the run's samples, the time into
// the run, and the Xid judged as doctor judges it.
Timeline RunWithGpu() {
  Timeline t;
  GpuState g;
  g.index = 1;
  g.name = "NVIDIA H100 80GB HBM3";
  g.pci_bus_id = "00000000:17:00.0";
  t.gpus.push_back({0.5, g});
  t.gpus.push_back({1.0, g});
  return t;
}

TEST(RunKernelLog, NamesTheGpuAndWhenIntoTheRun) {
  Timeline t = RunWithGpu();
  t.kernel_events_recorded = true;
  t.xids.push_back({79, "0000:17:00", 4242, "python3", 12.34, 0, "NVRM: Xid (PCI:0000:17:00): 79"});
  t.xids.push_back({13, "0000:17:00", 4242, "python3", 20.0, 0, "NVRM: Xid (PCI:0000:17:00): 13"});
  FindingsWithNotes judged = CheckRunKernelLog(t);
  ASSERT_EQ(judged.findings.size(), 1u);
  const Finding& f = judged.findings[0];
  EXPECT_EQ(f.id, "code.gpu_xid");
  EXPECT_EQ(f.severity, Severity::kCritical);
  EXPECT_NE(f.summary.find("GPU 1 (NVIDIA H100 80GB HBM3"), std::string::npos) << f.summary;
  EXPECT_NE(f.summary.find("during the run"), std::string::npos) << f.summary;
  EXPECT_NE(f.summary.find("at 12.3 s into the run, last at 20.0 s"), std::string::npos)
      << f.summary;
  EXPECT_TRUE(judged.notes.empty());
  // Through the run's rules too: one code.gpu_xid among the run's findings.
  FindingsWithNotes run = CheckRun(t, true);
  EXPECT_EQ(std::count_if(run.findings.begin(), run.findings.end(),
                          [](const Finding& x) { return x.id == "code.gpu_xid"; }),
            1);
}

TEST(RunKernelLog, AnOlderFileSaysXidsAreNotKnownOnlyWhereTheRunHadGpus) {
  Timeline t = RunWithGpu();
  FindingsWithNotes judged = CheckRunKernelLog(t);
  EXPECT_TRUE(judged.findings.empty());
  ASSERT_EQ(judged.notes.size(), 1u);
  EXPECT_NE(judged.notes[0].find("predates"), std::string::npos);
  EXPECT_TRUE(CheckRunKernelLog(Timeline{}).notes.empty());
  // Recorded and quiet: nothing to say.
  t.kernel_events_recorded = true;
  judged = CheckRunKernelLog(t);
  EXPECT_TRUE(judged.findings.empty());
  EXPECT_TRUE(judged.notes.empty());
}

TEST(GpuHealthCatalog, EveryIdIsInTheCatalogWithItsLayer) {
  for (const auto& [id, layer] :
       std::vector<std::pair<std::string, Layer>>{{"io.pcie_degraded", Layer::kIo},
                                                  {"network.link_degraded", Layer::kNetwork},
                                                  {"memory.gpu_ecc", Layer::kMemory},
                                                  {"memory.gpu_remap", Layer::kMemory},
                                                  {"code.gpu_persistence_off", Layer::kCode},
                                                  {"code.gpu_xid", Layer::kCode}}) {
    const Rule* rule = FindRule(id);
    ASSERT_NE(rule, nullptr) << id;
    EXPECT_EQ(rule->layer, layer) << id;
  }
}

}  // namespace
}  // namespace stallscope

// The io rules that read what the loader read and how its workers spent
// their time (analyze/run/inputs.h, loader_rules.h, the schedstat path
// of io.cpu_bound_loader), on timelines built here in the shapes of known
// slow loaders: a zip decompressed by two workers on a quiet 2-CPU host, a
// cold first epoch, another job's CPU hog, a folder of small files.
#include "analyze/run/loader_rules.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "analyze/run/inputs.h"
#include "analyze/run/rules.h"
#include "finding_matchers.h"

namespace stallscope {
namespace {

constexpr int kRank = 100;

struct Shape {
  int seconds = 60;
  int cpus = 2;
  double worker_cpu = 70;    // each worker, percent of a CPU
  double worker_delay = 28;  // each worker's run delay, percent of the interval
  double disk_util = 2;
  double disk_read_kib = 0;
  double outside_busy = 0;  // percent of one CPU taken outside the tree
  std::function<double(double)> wait = [](double) { return 0.12; };  // of 0.2 s steps
  double epoch_s = 0;                                                // 0: no epoch marks
  std::function<double(double)> read_kib = nullptr;                  // disk reads at t, overrides
};

// One rank (pid 100) with two DataLoader workers (101, 102), a sample and
// the three processes' points every second, a step every 0.2 s.
Timeline Make(const Shape& shape) {
  Timeline tl;
  tl.info.root_pid = kRank;
  tl.info.cpu_count = shape.cpus;
  tl.info.interval_seconds = 1;
  tl.info.duration_seconds = shape.seconds;
  tl.info.data_device = "loop7";
  tl.inputs_recorded = true;
  tl.loaders.push_back({0, kRank, 16, 2, false, 2, true, 4000, false});
  tl.ranks.push_back({kRank, 0, 0, 1, "node1"});
  for (int t = 1; t <= shape.seconds; ++t) {
    TimelineSample s;
    s.t = t;
    s.processes = 3;
    s.loader_cpu_percent = 2 * shape.worker_cpu;
    s.tree_cpu_percent = s.loader_cpu_percent + 38;
    s.cpu_busy_percent = std::min(100.0, (s.tree_cpu_percent + shape.outside_busy) / shape.cpus);
    s.disk_util_percent = shape.disk_util;
    s.disk_read_kib_per_s = shape.read_kib ? shape.read_kib(t) : shape.disk_read_kib;
    tl.samples.push_back(s);
    for (int pid : {kRank, kRank + 1, kRank + 2}) {
      ProcessPoint p;
      p.t = t;
      p.pid = pid;
      p.ppid = pid == kRank ? 1 : kRank;
      p.comm = "python3";
      p.cpu_percent = pid == kRank ? 38 : shape.worker_cpu;
      if (t > 1) p.run_delay_percent = pid == kRank ? 5 : shape.worker_delay;
      tl.processes.push_back(p);
    }
  }
  int epoch = -1;
  for (int k = 1; k * 0.2 <= shape.seconds; ++k) {
    const double t = k * 0.2;
    if (shape.epoch_s > 0 && static_cast<int>((t - 0.2) / shape.epoch_s) > epoch) {
      epoch = static_cast<int>((t - 0.2) / shape.epoch_s);
      tl.epochs.push_back({0, epoch, t - 0.2});
    }
    tl.steps.push_back({0, k, t, shape.wait(t) * 0.2, 0.2});
  }
  return tl;
}

InputSeen Zip() {
  InputSeen zip;
  zip.path = "/data/train.zip";
  zip.role = "worker";
  zip.readers = 2;
  zip.samples = 110;
  zip.size_bytes = 200 << 20;
  zip.fs_type = "ext4";
  zip.device = "vda1";
  zip.format = "zip";
  zip.archive = true;
  zip.compressed = true;
  zip.method = "deflate";
  return zip;
}

TEST(WorkerPids, ARunWithoutARootOrHookNamesNoWorker) {
  // `watch --slurm-job`: processes adopted one by one, no root, no hook.
  Timeline tl;
  tl.info.root_pid = 0;
  for (int pid : {300, 301, 302}) {
    ProcessPoint p;
    p.pid = pid;
    p.ppid = 1;
    tl.processes.push_back(p);
  }
  EXPECT_TRUE(WorkerPids(tl).empty());
  // With a root, its descendants are the workers, as before.
  tl.info.root_pid = 300;
  EXPECT_EQ(WorkerPids(tl), (std::set<int>{301, 302}));
}

TEST(CpuBoundLoader, WorkersOnACpuOrWaitingForOneOnAQuietHostNameTheZip) {
  Timeline tl = Make({});
  tl.inputs.push_back(Zip());
  std::vector<Finding> findings = CheckRun(tl).findings;
  const Finding* f = Find(findings, "io.cpu_bound_loader");
  ASSERT_NE(f, nullptr) << Ids(findings);
  EXPECT_EQ(f->severity, Severity::kWarning);  // steps wait 12%
  EXPECT_EQ(EvidenceOf<std::string>(*f, "input"), "/data/train.zip");
  EXPECT_EQ(EvidenceOf<std::string>(*f, "input_format"), "zip");
  EXPECT_TRUE(EvidenceOf<bool>(*f, "input_compressed"));
  EXPECT_DOUBLE_EQ(EvidenceOf<double>(*f, "worker_cpu_percent"), 70);
  EXPECT_DOUBLE_EQ(EvidenceOf<double>(*f, "worker_run_delay_percent"), 28);
  EXPECT_NE(f->summary.find("/data/train.zip (zip, deflate, 200.0 MiB, ext4 on vda1)"),
            std::string::npos)
      << f->summary;
  EXPECT_NE(f->next.find("unzip -q /data/train.zip -d /local/data"), std::string::npos) << f->next;
  EXPECT_NE(f->next.find("stallscope pack /local/data"), std::string::npos) << f->next;
  EXPECT_NE(f->next.find("py-spy top --pid 10"), std::string::npos) << f->next;
  EXPECT_EQ(f->next.find("DATA_DIR"), std::string::npos) << f->next;
  EXPECT_EQ(Find(findings, "io.cpu_contention"), nullptr) << Ids(findings);
  EXPECT_NE(Find(findings, "io.input_bound"), nullptr);
}

TEST(CpuBoundLoader, TheFixFollowsWhatTheInputIs) {
  auto next_for = [](InputSeen in) {
    Timeline tl = Make({});
    tl.inputs.push_back(std::move(in));
    std::optional<Finding> f = FindCopy(CheckRun(tl).findings, "io.cpu_bound_loader");
    return f ? f->next : std::string("(no finding)");
  };
  InputSeen stored = Zip();  // a zip of stored members is not decompressed
  stored.compressed = false;
  stored.method = "stored";
  EXPECT_EQ(next_for(stored).find("decompressed"), std::string::npos) << next_for(stored);
  InputSeen tgz = Zip();
  tgz.path = "/data/shards/train-000.tar.gz";
  tgz.format = "tar.gz";
  tgz.method.clear();
  EXPECT_NE(next_for(tgz).find("tar -xf /data/shards/train-000.tar.gz -C /local/data"),
            std::string::npos)
      << next_for(tgz);
  InputSeen npy = Zip();
  npy.path = "/data/features.npy.gz";
  npy.format = "gzip";
  npy.archive = false;
  npy.method.clear();
  EXPECT_NE(next_for(npy).find("gzip -dc /data/features.npy.gz > /local/data/features.npy.gz"),
            std::string::npos)
      << next_for(npy);
}

TEST(CpuBoundLoader, IdleCpusOnTheHostSayMoreWorkersFirst) {
  Shape shape;
  shape.cpus = 16;  // 2 workers and a rank use about 2.4 of 16 CPUs
  Timeline tl = Make(shape);
  std::optional<Finding> f = FindCopy(CheckRun(tl).findings, "io.cpu_bound_loader");
  ASSERT_TRUE(f.has_value());
  EXPECT_NE(f->next.find("idle CPUs: raise num_workers first"), std::string::npos) << f->next;
  EXPECT_GT(EvidenceOf<double>(*f, "idle_cpus"), 12);
}

TEST(CpuBoundLoader, WithoutTheHookTheWorkersAreNotJudgedByRunDelay) {
  // Every process below the command would count as a worker (ranks too):
  // the older judgment (the CPUs the workers use) stands instead.
  Shape shape;
  shape.worker_cpu = 90;  // 180% of the 162% the rank leaves: saturated by the older measure
  shape.worker_delay = 2;
  Timeline tl = Make(shape);
  tl.loaders.clear();
  tl.ranks.clear();
  std::optional<Finding> f = FindCopy(CheckRun(tl).findings, "io.cpu_bound_loader");
  ASSERT_TRUE(f.has_value());
  EXPECT_GT(EvidenceOf<double>(*f, "loader_cpu_share"), 0.9);
  for (const Evidence& e : f->evidence) EXPECT_NE(e.name, "worker_run_delay_percent");
}

TEST(CpuBoundLoader, WorkersThatSleepOnTheDiskOrIdleAreNot) {
  Shape disk;
  disk.worker_cpu = 20;
  disk.worker_delay = 2;
  disk.disk_util = 99;
  EXPECT_EQ(Find(CheckRun(Make(disk)).findings, "io.cpu_bound_loader"), nullptr);
  Shape busy_disk;  // on a CPU, but the disk is saturated: the disk decides
  busy_disk.disk_util = 95;
  EXPECT_EQ(Find(CheckRun(Make(busy_disk)).findings, "io.cpu_bound_loader"), nullptr);
  Shape waiting;  // waiting for CPUs more than using them: contention's
  waiting.worker_cpu = 30;
  waiting.worker_delay = 65;
  EXPECT_EQ(Find(CheckRun(Make(waiting)).findings, "io.cpu_bound_loader"), nullptr);
}

TEST(CpuContention, AHogBesideTheJobIsNamedAndNoLoaderFinding) {
  Shape shape;
  shape.worker_cpu = 30;
  shape.worker_delay = 60;
  shape.outside_busy = 120;
  Timeline tl = Make(shape);
  for (int t = 2; t <= shape.seconds; ++t) {
    tl.other_processes.push_back({static_cast<double>(t), 555, "hog.py", 118});
  }
  std::vector<Finding> findings = CheckRun(tl).findings;
  const Finding* f = Find(findings, "io.cpu_contention");
  ASSERT_NE(f, nullptr) << Ids(findings);
  EXPECT_EQ(f->severity, Severity::kWarning);
  EXPECT_NEAR(EvidenceOf<double>(*f, "outside_cpu_share"), 0.59,
              1e-9);  // hog.py: 118% of 200%
  EXPECT_EQ(EvidenceOf<std::string>(*f, "top_processes"), "hog.py (pid 555, 118% of a CPU)");
  EXPECT_DOUBLE_EQ(EvidenceOf<double>(*f, "worker_run_delay_percent"), 60);
  EXPECT_EQ(Find(findings, "io.cpu_bound_loader"), nullptr) << Ids(findings);
}

Shape ColdFirstEpoch() {
  Shape shape;
  shape.seconds = 40;
  shape.epoch_s = 10;
  shape.worker_cpu = 20;
  shape.worker_delay = 1;
  // Epoch 0 (steps until t=10) is stretched: its steps wait 60%.
  shape.wait = [](double t) { return t <= 10 ? 0.6 : 0.02; };
  shape.read_kib = [](double t) { return t <= 10 ? 40.0 * 1024 : 50; };
  return shape;
}

// Epoch 0 made 20 s long, the others 10 (their samples moved on), its disk
// read throughout.
void StretchFirstEpoch(Timeline& tl) {
  for (EpochEvent& e : tl.epochs) {
    if (e.epoch > 0) e.t += 10;
  }
  for (StepEvent& s : tl.steps) {
    if (s.t > 10) s.t += 10;
  }
  for (int t = 41; t <= 50; ++t) {  // the samples of the later epochs' extra 10 s
    TimelineSample s = tl.samples.back();
    s.t = t;
    tl.samples.push_back(s);
  }
  for (TimelineSample& s : tl.samples) s.disk_read_kib_per_s = s.t <= 20 ? 40.0 * 1024 : 50;
}

TEST(ColdCache, SlowFirstEpochThatReadTheDiskAndLaterOnesThatDidNot) {
  // Epochs by the hook's marks: 0 and 1 last 10 s; make epoch 0 longer.
  Timeline tl = Make(ColdFirstEpoch());
  StretchFirstEpoch(tl);
  tl.inputs.push_back({"/mnt/slow/images/0001.ppm", "worker", false, 1, 1, 3, 3, 4096, 0, "ext4",
                       false, "loop7", "", false, false, ""});
  tl.inputs.push_back({"/mnt/slow/images/0777.ppm", "worker", false, 1, 1, 8, 8, 4096, 0, "ext4",
                       false, "loop7", "", false, false, ""});
  std::vector<Finding> findings = CheckRun(tl).findings;
  const Finding* f = Find(findings, "io.cold_cache");
  ASSERT_NE(f, nullptr) << Ids(findings);
  EXPECT_EQ(f->severity, Severity::kWarning);
  EXPECT_NEAR(EvidenceOf<double>(*f, "epoch0_s"), 20, 0.3);
  EXPECT_NEAR(EvidenceOf<double>(*f, "later_epoch_s"), 10, 0.3);
  EXPECT_EQ(EvidenceOf<std::string>(*f, "device"), "loop7");
  EXPECT_EQ(EvidenceOf<std::string>(*f, "input"), "/mnt/slow/images");
  EXPECT_NE(f->summary.find("epoch 0 read 800.0 MiB from loop7"), std::string::npos) << f->summary;
  EXPECT_NE(f->next.find("vmtouch -t /mnt/slow/images"), std::string::npos) << f->next;
  // The waits hold in epoch 0 only: io.input_bound points at the cache.
  const Finding* bound = Find(findings, "io.input_bound");
  ASSERT_NE(bound, nullptr) << Ids(findings);
  EXPECT_EQ(bound->severity, Severity::kInfo);
  EXPECT_NE(bound->summary.find("see io.cold_cache"), std::string::npos) << bound->summary;
  EXPECT_EQ(EvidenceOf<std::string>(*bound, "explained_by"), "io.cold_cache");
}

// A loaded host: the later epochs wait too (15%, their workers fall
// behind), epoch 0 much more. io.input_bound is judged on the later epochs
// alone (a warning, not epoch 0's critical 60%) and says epoch 0's waits
// are the cache's.
TEST(ColdCache, LaterEpochsThatWaitTooAreJudgedWithoutEpochZero) {
  Shape shape = ColdFirstEpoch();
  shape.wait = [](double t) { return t <= 10 ? 0.6 : 0.15; };
  shape.worker_delay = 60;  // a hog beside the job: the later epochs' cause
  shape.outside_busy = 120;
  Timeline tl = Make(shape);
  for (int t = 2; t <= shape.seconds; ++t) {
    tl.other_processes.push_back({static_cast<double>(t), 555, "hog.py", 118});
  }
  StretchFirstEpoch(tl);
  std::vector<Finding> findings = CheckRun(tl).findings;
  ASSERT_NE(Find(findings, "io.cold_cache"), nullptr) << Ids(findings);
  const Finding* bound = Find(findings, "io.input_bound");
  ASSERT_NE(bound, nullptr) << Ids(findings);
  EXPECT_EQ(bound->severity, Severity::kWarning);
  EXPECT_NEAR(EvidenceOf<double>(*bound, "worst_rank_wait_fraction"), 0.15, 0.02);
  EXPECT_EQ(EvidenceOf<std::string>(*bound, "explained_by"), "io.cold_cache");
  EXPECT_EQ(EvidenceOf<int64_t>(*bound, "judged_from_epoch"), 1);
  EXPECT_NE(bound->summary.find("in epochs 1..3 (epoch 0 waited more, for a cold cache"),
            std::string::npos)
      << bound->summary;
  // Its cause is judged on the same steps: never more severe than it (the
  // whole run's waits, epoch 0's counted, are over 30%).
  const Finding* contention = Find(findings, "io.cpu_contention");
  ASSERT_NE(contention, nullptr) << Ids(findings);
  EXPECT_EQ(contention->severity, Severity::kWarning);
  EXPECT_NEAR(EvidenceOf<double>(*contention, "data_wait_fraction"), 0.15, 0.02);
}

TEST(ColdCache, EveryEpochReadingTheDiskIsNotACacheStory) {
  Shape shape = ColdFirstEpoch();
  shape.read_kib = [](double) { return 40.0 * 1024; };
  shape.wait = [](double) { return 0.6; };
  Timeline tl = Make(shape);
  std::vector<Finding> findings = CheckRun(tl).findings;
  EXPECT_EQ(Find(findings, "io.cold_cache"), nullptr) << Ids(findings);
  const Finding* bound = Find(findings, "io.input_bound");
  ASSERT_NE(bound, nullptr);
  EXPECT_EQ(bound->severity, Severity::kCritical);
}

TEST(WhatTheLoaderReads, SmallFilesCaughtOnceAreTheirDirectoryAndInterpreterFilesAreLeftOut) {
  Timeline tl;
  auto seen = [](std::string path, std::string role, int64_t samples) {
    InputSeen f;
    f.path = std::move(path);
    f.role = std::move(role);
    f.samples = samples;
    f.size_bytes = 1000;
    f.device = "sda1";
    return f;
  };
  tl.inputs = {seen("/data/imagenet/train/n01440764/a.JPEG", "worker", 1),
               seen("/data/imagenet/train/n01443537/b.JPEG", "worker", 2),
               seen("/data/imagenet/train/n01484850/c.JPEG", "worker", 1),
               seen("/usr/lib/python3/dist-packages/torch/functional.py", "worker", 1),
               seen("/data/imagenet/index.lmdb", "worker", 40),
               seen("/home/me/config.yaml", "rank", 9)};
  tl.info.interval_seconds = 1;
  std::vector<LoaderInput> got = WhatTheLoaderReads(tl);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].kind, "file");
  EXPECT_EQ(got[0].path, "/data/imagenet/index.lmdb");
  EXPECT_EQ(got[1].kind, "directory");
  EXPECT_EQ(got[1].path, "/data/imagenet/train");
  EXPECT_EQ(got[1].files, 3);
  EXPECT_EQ(got[1].samples, 4);
  EXPECT_EQ(got[1].Describe(), "/data/imagenet/train (3 files caught open)");
  // Train and val folders side by side stay two folders.
  tl.inputs.push_back(seen("/data/imagenet/val/n01440764/d.JPEG", "worker", 1));
  tl.inputs.push_back(seen("/data/imagenet/val/n01443537/e.JPEG", "worker", 1));
  got = WhatTheLoaderReads(tl);
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[1].path, "/data/imagenet/train");
  EXPECT_EQ(got[2].path, "/data/imagenet/val");
  EXPECT_EQ(got[2].files, 2);
  // A small file re-read every epoch, caught 4 times over a long run, is
  // still one of the folder's, not a file held open.
  tl.info.interval_seconds = 1;
  InputSeen reread = seen("/data/imagenet/train/n01484850/f.JPEG", "worker", 4);
  reread.first_t = 10;
  reread.last_t = 900;
  tl.inputs.push_back(reread);
  got = WhatTheLoaderReads(tl);
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[1].files, 4);
  // With workers configured, the rank's own files are never the loader's.
  tl.inputs = {seen("/home/me/config.yaml", "rank", 9)};
  tl.loaders.push_back({0, 100, 16, 2, false, 2, true, 4000, false});
  EXPECT_TRUE(WhatTheLoaderReads(tl).empty());
  tl.loaders.clear();
  // Without workers' files, the ranks' (num_workers=0).
  tl.inputs = {seen("/home/me/config.yaml", "rank", 9)};
  got = WhatTheLoaderReads(tl);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].role, "rank");
  tl.inputs.clear();
  EXPECT_TRUE(WhatTheLoaderReads(tl).empty());
}

}  // namespace
}  // namespace stallscope

namespace stallscope {
namespace {

// The loader's small files on an sshfs mount: io.input_bound names the remote
// file system as its cause, with the per-file cost the steps show, and
// `next` is the pack command; on a local disk it is not named.
TEST(InputBoundRemoteFs, TheMountIsTheCauseWithItsPerFileCost) {
  Timeline tl = Make({});
  for (int i = 0; i < 40; ++i) {
    InputSeen f;
    f.path = fmt::format("/mnt/remote/imgs/{:05}.bin", i);
    f.role = "worker";
    f.readers = 1;
    f.samples = 1;
    f.size_bytes = 4096;
    f.fs_type = "fuse.sshfs";
    f.remote = true;
    tl.inputs.push_back(f);
  }
  const std::vector<Finding> findings = CheckRun(tl).findings;
  std::optional<Finding> f = FindCopy(findings, "io.input_bound");
  ASSERT_TRUE(f.has_value()) << Ids(findings);
  EXPECT_EQ(EvidenceOf<std::string>(*f, "cause"), "io.remote_fs");
  EXPECT_EQ(EvidenceOf<std::string>(*f, "data_fs_type"), "fuse.sshfs");
  EXPECT_EQ(EvidenceOf<std::string>(*f, "data_path"), "/mnt/remote/imgs");
  // 0.2 s steps x 2 workers / batch 16.
  EXPECT_NEAR(EvidenceOf<double>(*f, "per_file_ms"), 25.0, 1e-6);
  EXPECT_NE(f->next.find("stallscope pack /mnt/remote/imgs"), std::string::npos) << f->next;
  EXPECT_NE(f->next.find("expected gain"), std::string::npos) << f->next;
  EXPECT_NE(f->summary.find("fuse.sshfs"), std::string::npos) << f->summary;
  // One finding: the cause is in io.input_bound, not beside it.
  EXPECT_EQ(Find(findings, "io.remote_fs"), nullptr) << Ids(findings);

  for (InputSeen& in : tl.inputs) {
    in.remote = false;
    in.fs_type = "ext4";
  }
  std::optional<Finding> local = FindCopy(CheckRun(tl).findings, "io.input_bound");
  ASSERT_TRUE(local.has_value());
  EXPECT_EQ(EvidenceValueOf(*local, "cause"), nullptr);
}

}  // namespace
}  // namespace stallscope

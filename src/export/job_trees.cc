#include "export/job_trees.h"

#include <vector>

#include "probe/diskstats.h"
#include "probe/process_tree.h"

namespace stallscope {

std::string JobTrees::Update(JobTable& jobs) {
  std::vector<int32_t> pids;
  for (const auto& [pid, p] : jobs.processes()) pids.push_back(pid);
  if (pids.empty()) return {};
  ProcessReadOptions options;
  options.read_cmdline = false;
  options.read_io = false;
  options.read_pss = false;
  options.read_schedstat = true;
  Result<std::vector<ProcessTree>> trees = ReadProcessTrees(root_, pids, options);
  if (!trees.ok()) return "job trees: " + trees.status().message();

  // Whose descriptors to read: the workers of each rank, or the rank itself
  // when it has none (num_workers=0 reads in the rank).
  std::vector<int32_t> readers;
  std::map<int32_t, int32_t> rank_of;  // reader pid -> rank pid
  for (size_t i = 0; i < pids.size(); ++i) {
    const ProcessTree& tree = (*trees)[i];
    jobs.UpdateTree(pids[i], tree);
    bool workers = tree.processes.size() > 1;
    for (const ProcessSample& m : tree.processes) {
      if (workers && m.pid == pids[i]) continue;
      readers.push_back(m.pid);
      rank_of.emplace(m.pid, pids[i]);
    }
  }
  for (const OpenInput& file : inputs_.Sample(readers)) {
    auto rank = rank_of.find(file.pid);
    if (rank == rank_of.end()) continue;
    std::string disk;
    if (file.major != 0 || !file.device.empty()) {
      auto key = std::make_pair(file.major, file.minor);
      auto known = disks_.find(key);
      if (known == disks_.end()) {
        Result<BlockDevice> dev = ReadBlockDeviceByNumber(root_, file.major, file.minor);
        std::string name = dev.ok() ? (dev->disk.empty() ? dev->name : dev->disk) : file.device;
        if (disks_.size() > 256) disks_.clear();
        known = disks_.emplace(key, name).first;
      }
      disk = known->second;
    }
    jobs.SeenInput(rank->second, disk, file.fs_type);
  }
  return {};
}

}  // namespace stallscope

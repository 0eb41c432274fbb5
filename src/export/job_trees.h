// JobTrees: what the exporter reads of each reporting rank's processes at a
// scrape: the rank's tree (the rank and everything below it: DataLoader
// workers) with its RSS, CPU and run-queue delay by role, and the disk behind
// the input files the workers (else the rank) hold open. The figures go into
// the JobTable (export/job_metrics.h), which serves them.
//
// Cost per scrape: one listing of /proc for all ranks together, then stat,
// status and schedstat of each member; the open descriptors of at most
// kInputPidsPerScrape members (those read longest ago first), so a node with
// many ranks and workers is read a few processes at a time. Not thread-safe
// (one owner: the exporter loop).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/file.h"
#include "export/job_metrics.h"
#include "probe/open_files.h"

namespace stallscope {

inline constexpr size_t kInputPidsPerScrape = 8;

class JobTrees {
 public:
  explicit JobTrees(Root root) : root_(root), inputs_(root, kInputPidsPerScrape) {}
  // Reads the trees of every process the table knows and updates it.
  // Returns a note when /proc could not be listed (empty otherwise).
  std::string Update(JobTable& jobs);
  // Remote mounts given up by the open-file probe since the last call: the
  // exporter stats no file on a remote mount itself, and keeps at most
  // kMaxRemoteProbeChildren children asking (probe/remote_file_facts.h).
  std::vector<std::string> TakeNotes() { return inputs_.TakeNotes(); }
  size_t remote_children() const { return inputs_.remote_children(); }

 private:
  Root root_;
  OpenInputSampler inputs_;
  // major:minor -> the whole disk's name ("" when /sys has none), so a
  // device is looked up once.
  std::map<std::pair<uint32_t, uint32_t>, std::string> disks_;
};

}  // namespace stallscope

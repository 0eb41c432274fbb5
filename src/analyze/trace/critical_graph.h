// HTA's critical path graph (CPGraph) over the rows of one window
// (critical_rows.h): a start and an end node for each CPU op, runtime
// call, data loader step and GPU row; edges for the CUDA runtime lock that
// launches and host allocations share across threads, through each
// (pid, tid) thread's call stack (the backward thread merged into the
// forward one, as HTA does), from a launch to its GPU row (launch overhead,
// when the stream was idle) or from the previous GPU row on its stream
// (kernel-to-kernel overhead), from a GPU row to the host call that waited
// for it (cudaStreamSynchronize, cudaDeviceSynchronize,
// cudaEventSynchronize through the cudaEventRecord it names), and from one
// stream's GPU row to another's that cudaStreamWaitEvent made wait. The
// longest path is found as networkx's dag_longest_path finds it, ties
// included. Linear in the rows after sorts by time. Pure.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "analyze/trace/critical_rows.h"

namespace stallscope {

enum class CpEdgeType : uint8_t {
  kOperatorKernel,     // time inside an op or on a GPU row
  kDependency,         // between top-level ops, and runtime lock order: no time
  kKernelLaunchDelay,  // launch call's start -> its GPU row's start
  kKernelKernelDelay,  // one GPU row's end -> the next one's start on its stream
  kSyncDependency,     // a GPU row -> what waited for it: no time
};

struct CpEdge {
  uint32_t from = 0, to = 0;
  CpEdgeType type = CpEdgeType::kDependency;
  double weight = 0;               // as HTA: the time between the nodes, 0 for no-time edges
  int64_t charged = -1;            // the row (HTA index) its time is charged to; -1 none
  uint32_t next_out = UINT32_MAX;  // the next edge out of `from`, in the order added
};

class CpGraph {
 public:
  explicit CpGraph(const HtaRows& rows);

  // The nodes of the longest path, first to last; nullopt (with why) where
  // HTA's own check refuses the graph (a sync between rows of one stream, a
  // cycle).
  std::optional<std::vector<uint32_t>> LongestPath(std::string* why_not) const;

  const CpEdge& EdgeBetween(uint32_t from, uint32_t to) const;
  // The row (HTA index) an edge's time is charged to; -1 none.
  int64_t AttributedEvent(const CpEdge& e) const;
  bool IsDataLoading(uint32_t name) const;

 private:
  struct Node {
    double ts = 0;
    int64_t ev = 0;  // HTA index of its row
    bool start = false, blocking = false, lock = false;
  };
  bool HasNodes(int64_t ev) const;
  uint32_t StartOf(int64_t ev) const { return start_[static_cast<size_t>(ev)]; }
  uint32_t EndOf(int64_t ev) const { return end_[static_cast<size_t>(ev)]; }
  void Touch(uint32_t node);
  uint32_t FindEdge(uint32_t from, uint32_t to) const;  // UINT32_MAX none
  uint32_t AddEdge(uint32_t from, uint32_t to, CpEdgeType type, bool zero = false);
  void Attribute(uint32_t edge, int64_t src_parent);
  void CreateNodes();
  void AddRuntimeLock();
  void AddCallStacks();
  void AddCallStack(const std::vector<const HtaRow*>& thread);
  void AddGpuRows();
  void HandleSync(const HtaRow& r, const std::vector<std::pair<int, uint32_t>>& last_node,
                  std::unordered_map<int64_t, int64_t>& kernel_sync);
  bool SharesLock(const Node& a, const Node& b) const {
    return a.lock && b.lock && (a.start || !b.start);
  }

  const HtaRows& h_;
  std::vector<Node> nodes_;
  std::vector<uint32_t> start_, end_;  // by HTA index; UINT32_MAX none
  std::vector<CpEdge> edges_;
  std::vector<uint32_t> first_out_, last_out_;  // per node: its edges out, a list
  std::vector<uint32_t> order_;                 // nodes as networkx first saw them
  std::vector<bool> seen_;
  std::vector<int8_t> loader_;  // by name: data loading
};

}  // namespace stallscope

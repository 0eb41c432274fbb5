#include "sample/node_summary.h"

#include <algorithm>

namespace stallscope {

bool operator==(const NodeSummary& a, const NodeSummary& b) {
  auto same_env = [](const std::vector<EnvironmentVariable>& x,
                     const std::vector<EnvironmentVariable>& y) {
    return std::equal(x.begin(), x.end(), y.begin(), y.end(), [](const auto& p, const auto& q) {
      return p.name == q.name && p.value == q.value;
    });
  };
  return a.rank == b.rank && a.hostname == b.hostname && a.kernel == b.kernel &&
         a.cpu_model == b.cpu_model && a.cpu_count == b.cpu_count && a.gpus == b.gpus &&
         a.gpu_note == b.gpu_note && a.driver_version == b.driver_version &&
         a.cuda_version == b.cuda_version && a.interfaces == b.interfaces &&
         a.rdma_ports == b.rdma_ports && same_env(a.environment, b.environment) &&
         a.route_interface == b.route_interface && a.route_peer == b.route_peer &&
         a.topology == b.topology;
}

}  // namespace stallscope

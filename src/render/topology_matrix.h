// Rendering the GPU/NIC path matrix (sample/topology_matrix.h): the text in
// the shape of `nvidia-smi topo -m` (GPUs and NICs as rows and columns, the
// NUMA node of each row, the legend, each GPU's closest NIC) and its object
// in stallscope.snapshot/1 JSON ("topology"."matrix"). Pure; thread-safe.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>

#include "sample/topology_matrix.h"

namespace stallscope {

// Empty when the matrix has no GPU (there is no path to show).
std::string RenderTopologyMatrixText(const TopologyMatrix& matrix);
nlohmann::ordered_json TopologyMatrixToJson(const TopologyMatrix& matrix);

}  // namespace stallscope

// The report of a triage: findings sorted into the seed's layer order, each
// layer's status and the verdict. Pure; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "sample/finding.h"

namespace stallscope {

// Sorts findings into triage order and picks the verdict: the first critical
// finding in layer order, or "none".
Report MakeReport(std::vector<Finding> findings, const std::vector<Layer>& checked_layers,
                  std::vector<std::string> notes);

}  // namespace stallscope

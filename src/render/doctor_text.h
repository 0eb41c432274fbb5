// What `stallscope doctor` prints for people: each layer in triage order
// with its status (ok / warning / critical / not checked, and why not), the
// evidence of each finding, the verdict, the next check for every finding in
// the order to run them, and the suspects-and-quick-checks table
// (analyze/host/triage_table.h). Pure; thread-safe.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "sample/finding.h"

namespace stallscope {

struct DoctorTextInput {
  std::string host;
  std::string time_utc;
  double window_seconds = 0;
  const Report* report = nullptr;  // required
  std::vector<std::pair<Layer, std::string>> not_checked_why;
  // Lines printed under a layer's status even when it has no finding
  // ("disk vda: 3% util, 0.4 ms await"), so "ok" shows what it rests on.
  std::vector<std::pair<Layer, std::string>> layer_facts;
};

std::string RenderDoctorText(const DoctorTextInput& input);
std::string RenderTriageTableText();

}  // namespace stallscope

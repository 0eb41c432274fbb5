// The triage table: per layer of the ordered triage (memory -> io -> network
// -> distributed -> code), the usual suspects and the quick way to confirm
// or clear each, as `stallscope doctor` prints them under "suspects and quick
// checks" and the HTML report lists them.
//
// The rows are the checks an engineer runs by hand on each layer (free -h,
// ps rss, iostat -x, fio, ping -M do, NCCL_SOCKET_IFNAME, scaling runs),
// each paired with the stallscope command that does the same and the
// finding ids that report it. Constant data; thread-safe.
#pragma once

#include <span>
#include <string_view>
#include <vector>

#include "sample/finding.h"

namespace stallscope {

struct Suspect {
  Layer layer;
  std::string_view suspect;      // what might be wrong, in the user's words
  std::string_view quick_check;  // the classic command that confirms or clears it
  std::string_view stallscope;   // the stallscope command that does the same
  std::string_view findings;     // catalog ids that report it, space separated
};

// In triage order; several rows per layer.
std::span<const Suspect> TriageTable();

// The rows of one layer.
std::vector<Suspect> SuspectsOf(Layer layer);

}  // namespace stallscope

// Rendering a Snapshot: text in the shape of the classic tools a user knows
// (free -b/-h, iostat -x, ip link, ibstatus) and the `stallscope.snapshot/1`
// JSON documented in docs/snapshot-schema.md. Pure; thread-safe.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "sample/snapshot.h"

namespace stallscope {

std::string RenderSnapshotText(const Snapshot& snapshot);
nlohmann::ordered_json SnapshotToJson(const Snapshot& snapshot);

}  // namespace stallscope

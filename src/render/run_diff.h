// Rendering `stallscope diff`: the text a user reads (the headline, the step
// decomposed, what else changed, notes) and the stallscope.diff/1 JSON
// (docs/commands/diff.md). Pure; thread-safe.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "analyze/run/diff.h"

namespace stallscope {

std::string RenderDiffText(const RunDiff& diff);
nlohmann::ordered_json DiffJson(const RunDiff& diff);
// `diff --html F`: one self-contained page (no request leaves it): the
// headline, the lowest rank's step time and data wait of both runs as
// charts, the parts of the step, what else changed, the notes.
std::string RenderDiffHtml(const RunDiff& diff);

}  // namespace stallscope

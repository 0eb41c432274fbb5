// The codec of the run file's stored findings (see stored_findings.h).
#include "store/stored_findings.h"

#include <nlohmann/json.hpp>
#include <variant>

namespace stallscope::store {

std::string EvidenceToJsonText(const std::vector<Evidence>& evidence) {
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  for (const Evidence& e : evidence) {
    std::visit([&](const auto& v) { out[e.name] = v; }, e.value);
  }
  // Evidence quotes files and logs: bytes that are not UTF-8 become U+FFFD
  // rather than an exception.
  return out.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

Result<std::vector<Evidence>> EvidenceFromJsonText(std::string_view text, std::string_view what) {
  nlohmann::ordered_json j =
      nlohmann::ordered_json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) {
    return Status::InvalidArgument(std::string(what) + ": evidence_json is not a JSON object");
  }
  std::vector<Evidence> out;
  for (const auto& [name, value] : j.items()) {
    if (value.is_boolean()) {
      out.push_back({name, value.get<bool>()});
    } else if (value.is_number_integer()) {
      out.push_back({name, value.get<int64_t>()});
    } else if (value.is_number()) {
      out.push_back({name, value.get<double>()});
    } else if (value.is_string()) {
      out.push_back({name, value.get<std::string>()});
    } else {
      return Status::InvalidArgument(std::string(what) + ": evidence \"" + name +
                                     "\" is not a number, a string or a boolean");
    }
  }
  return out;
}

std::string ImpactToJsonText(const Impact& impact) {
  nlohmann::ordered_json j;
  j["wall_fraction"] = impact.wall_fraction;
  if (impact.seconds_per_epoch) j["seconds_per_epoch"] = *impact.seconds_per_epoch;
  j["basis"] = impact.basis;
  return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

Result<Impact> ImpactFromJsonText(std::string_view text, std::string_view what) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("wall_fraction") || !j["wall_fraction"].is_number() ||
      !j.contains("basis") || !j["basis"].is_string() ||
      (j.contains("seconds_per_epoch") && !j["seconds_per_epoch"].is_number())) {
    return Status::InvalidArgument(std::string(what) +
                                   ": impact_json is not {wall_fraction, basis[, "
                                   "seconds_per_epoch]}");
  }
  Impact impact;
  impact.wall_fraction = j["wall_fraction"].get<double>();
  if (j.contains("seconds_per_epoch"))
    impact.seconds_per_epoch = j["seconds_per_epoch"].get<double>();
  impact.basis = j["basis"].get<std::string>();
  return impact;
}

}  // namespace stallscope::store

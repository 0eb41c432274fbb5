#include "probe/captured_addresses.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "core/json_text.h"
#include "core/text.h"

namespace stallscope {

std::string AddressesToCaptureJson(const InterfaceAddresses& addresses) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for (const auto& [name, list] : addresses) {
    nlohmann::ordered_json each = nlohmann::ordered_json::array();
    for (const IpAddress& a : list)
      each.push_back(fmt::format("{}/{}", a.address, a.prefix_length));
    j[name] = std::move(each);
  }
  return JsonText(j) + "\n";
}

Result<InterfaceAddresses> ParseCapturedAddresses(std::string_view text, std::string_view source) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    return Status::ParseError(source, 0, "not a JSON object of interface -> addresses");
  }
  InterfaceAddresses out;
  for (const auto& [name, list] : j.items()) {
    if (!list.is_array()) {
      return Status::ParseError(source, 0, fmt::format("{}: not a list of addresses", name));
    }
    for (const nlohmann::json& entry : list) {
      const std::string text_form = entry.is_string() ? entry.get<std::string>() : std::string();
      const size_t slash = text_form.rfind('/');
      std::optional<uint64_t> prefix =
          slash == std::string::npos ? std::nullopt
                                     : ParseUint(std::string_view(text_form).substr(slash + 1));
      if (!prefix || *prefix > 128 || slash == 0) {
        return Status::ParseError(source, 0,
                                  fmt::format("{}: \"{}\" is not ADDRESS/PREFIX", name,
                                              entry.is_string() ? text_form : entry.dump()));
      }
      IpAddress a;
      a.address = text_form.substr(0, slash);
      a.family = a.address.find(':') != std::string::npos ? IpAddress::Family::kIpv6
                                                          : IpAddress::Family::kIpv4;
      a.prefix_length = static_cast<int>(*prefix);
      out[name].push_back(std::move(a));
    }
  }
  return out;
}

}  // namespace stallscope

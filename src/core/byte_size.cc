#include "core/byte_size.h"

#include <cctype>
#include <cmath>

namespace stallscope {

std::optional<uint64_t> ParseByteSize(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) {
    text.remove_prefix(1);
  }
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) {
    text.remove_suffix(1);
  }
  // The number: digits with at most one decimal point.
  size_t i = 0;
  uint64_t whole = 0;
  bool digits = false;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
    uint64_t d = static_cast<uint64_t>(text[i] - '0');
    if (whole > (UINT64_MAX - d) / 10) return std::nullopt;
    whole = whole * 10 + d;
    digits = true;
    ++i;
  }
  double fraction = 0;
  bool has_fraction = false;
  if (i < text.size() && text[i] == '.') {
    ++i;
    double scale = 0.1;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
      fraction += scale * (text[i] - '0');
      scale /= 10;
      digits = true;
      has_fraction = true;
      ++i;
    }
  }
  if (!digits) return std::nullopt;
  // The unit.
  std::string_view unit = text.substr(i);
  while (!unit.empty() && unit.front() == ' ') unit.remove_prefix(1);
  int shift = 0;
  if (!unit.empty()) {
    switch (std::tolower(static_cast<unsigned char>(unit.front()))) {
      case 'k':
        shift = 10;
        break;
      case 'm':
        shift = 20;
        break;
      case 'g':
        shift = 30;
        break;
      case 't':
        shift = 40;
        break;
      case 'p':
        shift = 50;
        break;
      case 'b':
        shift = 0;
        break;
      default:
        return std::nullopt;
    }
    std::string_view rest = unit.substr(1);
    if (shift == 0) {
      if (!rest.empty()) return std::nullopt;  // "5bx"
    } else {
      if (!rest.empty() && std::tolower(static_cast<unsigned char>(rest.front())) == 'i') {
        rest.remove_prefix(1);
      }
      if (!rest.empty() && std::tolower(static_cast<unsigned char>(rest.front())) == 'b') {
        rest.remove_prefix(1);
      }
      if (!rest.empty()) return std::nullopt;
    }
  }
  if (has_fraction && shift == 0) return std::nullopt;
  if (shift > 0 && whole > (UINT64_MAX >> shift)) return std::nullopt;
  uint64_t bytes = whole << shift;
  uint64_t extra = static_cast<uint64_t>(std::floor(fraction * std::ldexp(1.0, shift)));
  if (bytes > UINT64_MAX - extra) return std::nullopt;
  return bytes + extra;
}

}  // namespace stallscope

#include "export/web_config.h"

#include <crypt.h>
#include <fmt/format.h>

#include <memory>

#include "core/file.h"

namespace stallscope {
namespace {

struct Line {
  int number = 0;
  int indent = 0;
  std::string key;
  std::string value;  // empty: a mapping follows
};

// Drops a comment: '#' at the start or after a blank, outside quotes.
std::string_view StripComment(std::string_view line) {
  char quote = 0;
  for (size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if (quote) {
      if (c == quote) quote = 0;
    } else if (c == '"' || c == '\'') {
      quote = c;
    } else if (c == '#' && (i == 0 || line[i - 1] == ' ' || line[i - 1] == '\t')) {
      return line.substr(0, i);
    }
  }
  return line;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

// A plain or quoted scalar; false when a quote is left open or text follows it.
bool Scalar(std::string_view s, std::string& out) {
  out.clear();
  if (s.empty() || (s.front() != '"' && s.front() != '\'')) {
    out = s;
    return true;
  }
  char quote = s.front();
  if (s.size() < 2 || s.back() != quote) return false;
  std::string_view inner = s.substr(1, s.size() - 2);
  for (size_t i = 0; i < inner.size(); ++i) {
    if (inner[i] == quote) {
      // '' inside single quotes is one quote; nothing else may close early.
      if (quote == '\'' && i + 1 < inner.size() && inner[i + 1] == '\'') {
        out.push_back('\'');
        ++i;
        continue;
      }
      return false;
    }
    if (quote == '"' && inner[i] == '\\') return false;  // escapes: not in this subset
    out.push_back(inner[i]);
  }
  return true;
}

Result<std::vector<Line>> SplitLines(std::string_view text, std::string_view file) {
  std::vector<Line> lines;
  int number = 0;
  while (!text.empty()) {
    size_t end = text.find('\n');
    std::string_view raw = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
    ++number;
    std::string_view line = StripComment(raw);
    if (Trim(line).empty() || Trim(line) == "---") continue;
    Line l;
    l.number = number;
    while (l.indent < static_cast<int>(line.size()) && line[l.indent] == ' ') ++l.indent;
    if (line[l.indent] == '\t') {
      return Status::ParseError(file, number, "a tab in the indentation (YAML allows spaces only)");
    }
    std::string_view body = Trim(line.substr(l.indent));
    size_t colon = body.find(": ");
    if (colon == std::string_view::npos && body.back() == ':') colon = body.size() - 1;
    if (colon == std::string_view::npos || colon == 0) {
      return Status::ParseError(file, number, "expected `key: value` or `key:`");
    }
    if (!Scalar(Trim(body.substr(0, colon)), l.key) ||
        !Scalar(Trim(body.substr(colon + 1)), l.value)) {
      return Status::ParseError(file, number, "a quoted string is not closed where it should be");
    }
    if (l.value.empty() && Trim(body.substr(colon + 1)).size() > 0) {
      return Status::ParseError(file, number, "an empty value");
    }
    lines.push_back(std::move(l));
  }
  return lines;
}

bool IsBcrypt(const std::string& hash) {
  return hash.size() == 60 && hash[0] == '$' && hash[1] == '2' &&
         (hash[2] == 'a' || hash[2] == 'b' || hash[2] == 'y') && hash[3] == '$';
}

// One entry under a top-level section.
Status AddEntry(WebConfig& config, const std::string& section, const Line& l, std::string_view file,
                std::string_view folder) {
  if (l.value.empty()) return Status::ParseError(file, l.number, "`" + l.key + "` needs a value");
  if (section == "tls_server_config") {
    std::string path = l.value;
    if (!folder.empty() && path[0] != '/') path = std::string(folder) + "/" + path;
    if (l.key == "cert_file") {
      config.cert_file = path;
    } else if (l.key == "key_file") {
      config.key_file = path;
    } else {
      return Status::ParseError(
          file, l.number,
          "tls_server_config." + l.key + " is not supported (only cert_file and key_file)");
    }
    return Status::Ok();
  }
  if (!IsBcrypt(l.value)) {
    return Status::ParseError(file, l.number,
                              "the password of `" + l.key +
                                  "` is not a bcrypt hash ($2y$..., as `htpasswd -nB` prints it)");
  }
  for (const auto& [name, hash] : config.users) {
    if (name == l.key) return Status::ParseError(file, l.number, "user `" + l.key + "` twice");
  }
  config.users.emplace_back(l.key, l.value);
  return Status::Ok();
}

}  // namespace

Result<WebConfig> ParseWebConfig(std::string_view text, std::string_view file,
                                 std::string_view folder) {
  Result<std::vector<Line>> lines = SplitLines(text, file);
  if (!lines.ok()) return lines.status();
  WebConfig config;
  std::string section;
  int section_indent = -1;
  for (const Line& l : *lines) {
    if (l.indent == 0) {
      if (l.key != "tls_server_config" && l.key != "basic_auth_users") {
        return Status::ParseError(file, l.number,
                                  "`" + l.key +
                                      "` is not supported (only tls_server_config and "
                                      "basic_auth_users)");
      }
      if (!l.value.empty() && l.value != "{}") {
        return Status::ParseError(file, l.number, "`" + l.key + "` must be a mapping");
      }
      section = l.key;
      section_indent = -1;
      continue;
    }
    if (section.empty())
      return Status::ParseError(file, l.number, "indented line outside a section");
    if (section_indent < 0) section_indent = l.indent;
    if (l.indent != section_indent) {
      return Status::ParseError(file, l.number, "indentation differs from the lines above");
    }
    if (Status s = AddEntry(config, section, l, file, folder); !s.ok()) return s;
  }
  if (config.cert_file.empty() != config.key_file.empty()) {
    return Status::ParseError(file, 0, "tls_server_config needs both cert_file and key_file");
  }
  return config;
}

Result<WebConfig> LoadWebConfig(const std::string& path) {
  Result<std::string> text = ReadFile(path, 1 << 20);
  if (!text.ok()) return text.status();
  size_t slash = path.rfind('/');
  std::string folder = slash == std::string::npos ? "." : path.substr(0, slash);
  if (folder.empty()) folder = "/";
  Result<WebConfig> config = ParseWebConfig(*text, path, folder);
  if (!config.ok() || config->cert_file.empty()) return config;
  Result<std::string> cert = ReadFile(config->cert_file, 1 << 20);
  if (!cert.ok()) return Status::InvalidArgument(path + ": cert_file: " + cert.status().message());
  Result<std::string> key = ReadFile(config->key_file, 1 << 20);
  if (!key.ok()) return Status::InvalidArgument(path + ": key_file: " + key.status().message());
  config->cert_pem = std::move(*cert);
  config->key_pem = std::move(*key);
  return config;
}

bool BcryptMatches(std::string_view password, const std::string& hash) {
  if (password.find('\0') != std::string_view::npos) return false;
  std::string pass(password);
  auto data = std::make_unique<crypt_data>();
  const char* out = crypt_rn(pass.c_str(), hash.c_str(), data.get(), sizeof(crypt_data));
  if (out == nullptr || out[0] == '*') return false;
  std::string_view got(out);
  if (got.size() != hash.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < got.size(); ++i) diff |= static_cast<unsigned char>(got[i] ^ hash[i]);
  return diff == 0;
}

bool CheckWebPassword(const WebConfig& config, std::string_view user, std::string_view password) {
  const std::string* hash = nullptr;
  for (const auto& [name, h] : config.users) {
    if (name == user) hash = &h;
  }
  // An unknown user costs a bcrypt run too, so timing does not tell names apart.
  static const std::string kDummy = "$2y$10$" + std::string(53, '.');
  bool match = BcryptMatches(password, hash ? *hash : kDummy);
  return hash != nullptr && match;
}

}  // namespace stallscope

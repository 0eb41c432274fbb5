// The exporter's --web-config FILE, in the Prometheus exporter-toolkit's
// format (the file node_exporter reads with --web.config.file):
//
//   tls_server_config:
//     cert_file: server.crt     # PEM; relative paths are from the file's folder
//     key_file: server.key
//   basic_auth_users:
//     alice: $2y$10$...         # bcrypt, as `htpasswd -nBC 10 alice` prints it
//
// Read with a parser for the YAML subset this format uses (block mappings two
// levels deep, plain or quoted scalars, comments); anything else is an error
// naming the file and line. Passwords are checked against the bcrypt hashes
// with libcrypt's crypt_rn and a constant-time compare.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/status.h"

namespace stallscope {

struct WebConfig {
  std::string cert_file;  // empty: plain HTTP
  std::string key_file;
  std::vector<std::pair<std::string, std::string>> users;  // name, bcrypt hash
  // Filled by LoadWebConfig: the PEM contents of cert_file and key_file.
  std::string cert_pem;
  std::string key_pem;
};

// Parses the text of a web config; `file` names it in errors. Relative
// cert/key paths are resolved against `folder` (empty: as they are).
Result<WebConfig> ParseWebConfig(std::string_view text, std::string_view file,
                                 std::string_view folder);

// Reads and parses the file, then reads the certificate and key it names.
Result<WebConfig> LoadWebConfig(const std::string& path);

// True when `password` matches the bcrypt `hash` (constant-time compare of
// crypt_rn's output).
bool BcryptMatches(std::string_view password, const std::string& hash);

// True when the config has the user and the password matches its hash.
bool CheckWebPassword(const WebConfig& config, std::string_view user, std::string_view password);

}  // namespace stallscope

// The --web-config reader: the exporter-toolkit's format (TLS files, bcrypt
// users), errors that name file and line, and bcrypt checks against a hash
// that Apache's `htpasswd -nbBC 4 alice 'secret pass'` printed.
#include "export/web_config.h"

#include <gtest/gtest.h>

namespace stallscope {
namespace {

constexpr const char* kHash = "$2y$04$keQBn3hdupOSDNJgHAknjuiApWyA4QV0XraqlZ3/wFvmnLDib9Gz.";

TEST(WebConfig, ReadsTlsFilesAndUsers) {
  std::string text = std::string(
                         "# comment\n"
                         "tls_server_config:\n"
                         "  cert_file: server.crt   # relative: from the config's folder\n"
                         "  key_file: '/keys/server.key'\n"
                         "\n"
                         "basic_auth_users:\n"
                         "    alice: ") +
                     kHash + "\n    \"bob\": '" + kHash + "'\n";
  Result<WebConfig> c = ParseWebConfig(text, "web.yml", "/etc/stallscope");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->cert_file, "/etc/stallscope/server.crt");
  EXPECT_EQ(c->key_file, "/keys/server.key");
  ASSERT_EQ(c->users.size(), 2u);
  EXPECT_EQ(c->users[1].first, "bob");
  EXPECT_EQ(c->users[1].second, kHash);
}

TEST(WebConfig, BadFilesNameFileAndLine) {
  struct Case {
    std::string text;
    std::string message;
  } cases[] = {
      {"tls_server_config:\n  cert_file: a\n  client_ca_file: b\n", "web.yml:3: "},
      {"http_server_config:\n  http2: false\n", "web.yml:1: "},
      {"basic_auth_users:\n  alice: plaintext\n", "web.yml:2: "},
      {"basic_auth_users:\n\talice: x\n", "web.yml:2: "},
      {"basic_auth_users:\n  alice: 'open\n", "web.yml:2: "},
      {"  alice: x\n", "web.yml:1: "},
      {"basic_auth_users:\n  a: " + std::string(kHash) + "\n   b: " + kHash + "\n", "web.yml:3: "},
      {"basic_auth_users:\n  a: " + std::string(kHash) + "\n  a: " + kHash + "\n", "web.yml:3: "},
      {"tls_server_config:\n  cert_file: a\n", "web.yml: "},
      {"just text\n", "web.yml:1: "},
  };
  for (const Case& c : cases) {
    Result<WebConfig> r = ParseWebConfig(c.text, "web.yml", "");
    ASSERT_FALSE(r.ok()) << c.text;
    EXPECT_EQ(r.status().message().rfind(c.message, 0), 0u) << r.status().message();
  }
}

TEST(WebConfig, BcryptChecksThePassword) {
  EXPECT_TRUE(BcryptMatches("secret pass", kHash));
  EXPECT_FALSE(BcryptMatches("secret pas", kHash));
  EXPECT_FALSE(BcryptMatches(std::string_view("secret pass\0x", 13), kHash));
  WebConfig config;
  config.users = {{"alice", kHash}};
  EXPECT_TRUE(CheckWebPassword(config, "alice", "secret pass"));
  EXPECT_FALSE(CheckWebPassword(config, "bob", "secret pass"));
  EXPECT_FALSE(CheckWebPassword(config, "alice", ""));
}

TEST(WebConfig, LoadNamesTheMissingFile) {
  Result<WebConfig> r = LoadWebConfig("/nonexistent/web.yml");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("/nonexistent/web.yml"), std::string::npos);
}

}  // namespace
}  // namespace stallscope

// InputFormatOf on files the real tools wrote (tests/fixtures/input_formats):
// each archive and stream named, compression told from storage, tar inside a
// stream told by the name, and plain or short or odd bytes named nothing.
#include "sample/input_format.h"

#include <gtest/gtest.h>

#include <string>

#include "core/file.h"

namespace stallscope {
namespace {

InputFormat Of(const std::string& name) {
  Result<std::string> text = ReadFile(STALLSCOPE_FIXTURES "/input_formats/" + name);
  EXPECT_TRUE(text.ok()) << name;
  std::string head = text.ok() ? text->substr(0, kInputFormatHeadBytes) : std::string();
  return InputFormatOf(head, "/data/" + name);
}

TEST(InputFormat, ZipMembersStoredOrCompressed) {
  InputFormat deflate = Of("shard-deflate.zip");
  EXPECT_EQ(deflate.kind, "zip");
  EXPECT_TRUE(deflate.archive);
  EXPECT_TRUE(deflate.compressed);
  EXPECT_EQ(deflate.method, "deflate");
  InputFormat stored = Of("shard-stored.zip");
  EXPECT_EQ(stored.kind, "zip");
  EXPECT_FALSE(stored.compressed);
  EXPECT_EQ(stored.method, "stored");
  EXPECT_EQ(Of("shard-bzip2.zip").method, "bzip2");
  InputFormat empty = Of("empty.zip");
  EXPECT_EQ(empty.kind, "zip");
  EXPECT_FALSE(empty.compressed);
}

TEST(InputFormat, TarPlainAndInsideEveryStream) {
  for (const char* name : {"shard-posix.tar", "shard-gnu.tar"}) {
    InputFormat f = Of(name);
    EXPECT_EQ(f.kind, "tar") << name;
    EXPECT_TRUE(f.archive);
    EXPECT_FALSE(f.compressed);
  }
  EXPECT_EQ(Of("shard.tar.gz").kind, "tar.gz");
  EXPECT_EQ(Of("shard.tgz").kind, "tar.gz");
  EXPECT_EQ(Of("shard.tar.xz").kind, "tar.xz");
  EXPECT_EQ(Of("shard.tar.zst").kind, "tar.zst");
  EXPECT_TRUE(Of("shard.tar.zst").archive);
  EXPECT_TRUE(Of("shard.tar.zst").compressed);
}

TEST(InputFormat, LoneStreams) {
  struct Case {
    const char* name;
    const char* kind;
  };
  for (Case c :
       {Case{"labels.csv.gz", "gzip"}, Case{"labels.csv.bz2", "bzip2"}, Case{"labels.csv.xz", "xz"},
        Case{"labels.csv.zst", "zstd"}, Case{"labels.csv.lz4", "lz4"}}) {
    InputFormat f = Of(c.name);
    EXPECT_EQ(f.kind, c.kind) << c.name;
    EXPECT_TRUE(f.compressed) << c.name;
    EXPECT_FALSE(f.archive) << c.name;
  }
  // The bytes decide, not the name: a gzip stream named .bin is gzip.
  Result<std::string> gz = ReadFile(STALLSCOPE_FIXTURES "/input_formats/labels.csv.gz");
  ASSERT_TRUE(gz.ok());
  EXPECT_EQ(InputFormatOf(*gz, "/data/blob.bin").kind, "gzip");
}

TEST(InputFormat, SevenZipPlainTextAndShortHeads) {
  InputFormat seven = InputFormatOf(std::string("7z\xbc\xaf\x27\x1c\x00\x04", 8), "a.7z");
  EXPECT_EQ(seven.kind, "7z");
  EXPECT_TRUE(seven.compressed);
  EXPECT_EQ(Of("labels.csv").kind, "");
  EXPECT_FALSE(Of("labels.csv").compressed);
  EXPECT_EQ(InputFormatOf("", "x.zip").kind, "");  // an empty file: nothing, whatever its name
  EXPECT_EQ(InputFormatOf("PK\x03", "x.zip").kind, "");  // cut before the magic ends
  InputFormat short_zip = InputFormatOf("PK\x03\x04\x14", "x.zip");
  EXPECT_EQ(short_zip.kind, "zip");  // too short for the method: not called compressed
  EXPECT_FALSE(short_zip.compressed);
  EXPECT_EQ(InputFormatOf(std::string(300, 'u'), "x.tar").kind, "");
}

}  // namespace
}  // namespace stallscope

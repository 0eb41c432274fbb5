// pack on real folders in a temporary directory: round trips (tfrecord and
// wds) read back with the C++ readers, class labels, the shard size bound,
// determinism (threads, shuffle seeds), refusing to overwrite, unreadable
// and changed files, and --verify catching a damaged shard.
#include "data/packer.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <string>

#include "core/file.h"
#include "data/example_proto.h"
#include "data/pack_census.h"
#include "data/pack_verify.h"
#include "data/sample_writer.h"
#include "data/tar_reader.h"
#include "data/tfrecord.h"

namespace stallscope {
namespace {

namespace fs = std::filesystem;

class PackTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/stallscope-pack-test-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    src_ = dir_ + "/src";
    out_ = dir_ + "/out";
    fs::create_directories(src_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string Write(const std::string& rel, const std::string& bytes) {
    fs::path p = fs::path(src_) / rel;
    fs::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << bytes;
    files_[rel] = bytes;
    return p;
  }
  static std::string Random(size_t n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::string s(n, '\0');
    for (char& c : s) c = static_cast<char>(rng());
    return s;
  }
  PackOptions Options(PackFormat format) {
    PackOptions o;
    o.src = src_;
    o.out = out_;
    o.format = format;
    o.jobs = 4;
    return o;
  }
  std::vector<std::string> PackNames() {
    std::vector<std::string> names;
    if (!fs::exists(out_)) return names;
    for (const auto& e : fs::directory_iterator(out_)) names.push_back(e.path().filename());
    std::sort(names.begin(), names.end());
    return names;
  }
  static std::string Slurp(const std::string& path) {
    Result<std::string> r = ReadFile(path, 1 << 30);
    return r.ok() ? *r : "";
  }

  std::string dir_, src_, out_;
  std::map<std::string, std::string> files_;
};

TEST_F(PackTest, TfRecordRoundTripWithClassLabels) {
  Write("dog/c.jpg", Random(5000, 3));
  Write("cat/b.jpg", Random(70000, 2));
  Write("cat/a.jpg", Random(100, 1));
  Write("dog/c.json", "{\"x\":1}");
  Result<PackSummary> s = Pack(Options(PackFormat::kTfRecord));
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->manifest.classes, (std::vector<std::string>{"cat", "dog"}));
  EXPECT_EQ(s->manifest.samples, 3u);
  EXPECT_EQ(s->manifest.records, 4u);
  ASSERT_EQ(s->manifest.shards.size(), 1u);
  EXPECT_EQ(PackNames(), (std::vector<std::string>{"manifest.json", "shard-00000.tfrecord",
                                                   "shard-00000.tfrecord.idx"}));

  Result<std::vector<IndexEntry>> index =
      ParseIndex(Slurp(out_ + "/shard-00000.tfrecord.idx"), "idx");
  ASSERT_TRUE(index.ok()) << index.status().message();
  ASSERT_EQ(index->size(), 4u);
  Result<TfRecordFile> file = TfRecordFile::Open(out_ + "/shard-00000.tfrecord");
  ASSERT_TRUE(file.ok());
  std::vector<std::string> keys;
  for (const IndexEntry& e : *index) {
    uint64_t framed = 0;
    Result<std::string_view> data = file->ReadAt(e.offset, &framed);
    ASSERT_TRUE(data.ok()) << data.status().message();
    EXPECT_EQ(framed, e.length);
    Result<PackedRecord> rec = ParsePackedRecord(*data, "t");
    ASSERT_TRUE(rec.ok()) << rec.status().message();
    std::string key(rec->key);
    keys.push_back(key);
    EXPECT_EQ(rec->data, files_[key]) << key;  // byte-exact
    EXPECT_EQ(rec->label, key.starts_with("cat/") ? 0 : 1) << key;
  }
  // Byte order of keys, then extensions within a sample.
  EXPECT_EQ(keys, (std::vector<std::string>{"cat/a.jpg", "cat/b.jpg", "dog/c.jpg", "dog/c.json"}));
  Result<VerifySummary> v = VerifyPack(out_);
  ASSERT_TRUE(v.ok()) << v.status().message();
  EXPECT_EQ(v->records, 4u);
  EXPECT_EQ(v->samples, 3u);
}

TEST_F(PackTest, WdsRoundTripGroupsMembersByKey) {
  Write("cat/a.jpg", Random(1000, 1));
  Write("cat/a.json", "{}");
  Write("dog/b.jpg", Random(513, 2));
  PackOptions o = Options(PackFormat::kWds);
  o.verify = true;
  Result<PackSummary> s = Pack(o);
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_TRUE(s->verified);
  Result<std::vector<IndexEntry>> index = ParseIndex(Slurp(out_ + "/shard-00000.tar.idx"), "idx");
  ASSERT_TRUE(index.ok());
  ASSERT_EQ(index->size(), 2u);
  EXPECT_EQ((*index)[0].offset, 0u);
  Result<TarFile> tar = TarFile::Open(out_ + "/shard-00000.tar");
  ASSERT_TRUE(tar.ok());
  Result<TarRun> first = tar->ReadRange((*index)[0].offset, (*index)[0].length);
  ASSERT_TRUE(first.ok()) << first.status().message();
  ASSERT_EQ(first->members.size(), 3u);
  EXPECT_EQ(first->members[0].name, "cat/a.cls");
  EXPECT_EQ(first->members[0].data, "0");
  EXPECT_EQ(first->members[1].name, "cat/a.jpg");
  EXPECT_EQ(first->members[1].data, files_["cat/a.jpg"]);
  EXPECT_EQ(first->members[2].name, "cat/a.json");
  Result<TarRun> second = tar->ReadRange((*index)[1].offset, (*index)[1].length);
  ASSERT_TRUE(second.ok()) << second.status().message();
  ASSERT_EQ(second->members.size(), 2u);
  EXPECT_EQ(second->members[0].name, "dog/b.cls");
  EXPECT_EQ(second->members[0].data, "1");
  EXPECT_EQ(second->members[1].data, files_["dog/b.jpg"]);
}

TEST_F(PackTest, ShardSizeBoundAndOversizedSampleAlone) {
  for (int i = 0; i < 40; ++i) Write(fmt::format("f{:03d}.bin", i), Random(10000, i));
  Write("f020.bin", Random(300000, 99));  // bigger than a shard
  for (PackFormat format : {PackFormat::kTfRecord, PackFormat::kWds}) {
    PackOptions o = Options(format);
    o.shard_size = 64 << 10;
    o.force = true;
    o.verify = true;
    Result<PackSummary> s = Pack(o);
    ASSERT_TRUE(s.ok()) << s.status().message();
    EXPECT_TRUE(s->manifest.classes.empty());
    ASSERT_GT(s->manifest.shards.size(), 6u);
    int alone = 0;
    for (size_t i = 0; i < s->manifest.shards.size(); ++i) {
      const ShardInfo& sh = s->manifest.shards[i];
      EXPECT_EQ(sh.name, ShardName(format, i));
      EXPECT_EQ(fs::file_size(out_ + "/" + sh.name), sh.bytes);
      if (sh.bytes > o.shard_size) {
        EXPECT_EQ(sh.samples, 1u) << sh.name;
        ++alone;
      }
    }
    EXPECT_EQ(alone, 1);
    EXPECT_EQ(s->manifest.samples, 40u);
  }
}

TEST_F(PackTest, DeterministicAcrossThreadsAndSeeds) {
  for (int i = 0; i < 60; ++i)
    Write(fmt::format("c{}/img{:02d}.jpg", i % 3, i), Random(3000 + i, i));
  auto pack = [&](int jobs, bool shuffle, uint64_t seed) {
    PackOptions o = Options(PackFormat::kTfRecord);
    o.jobs = jobs;
    o.shuffle = shuffle;
    o.seed = seed;
    o.force = true;
    o.shard_size = 50000;
    Result<PackSummary> s = Pack(o);
    EXPECT_TRUE(s.ok()) << s.status().message();
    std::string all;
    for (const std::string& n : PackNames()) all += n + "\n" + Slurp(out_ + "/" + n);
    return all;
  };
  std::string plain1 = pack(1, false, 0), plain8 = pack(8, false, 0);
  EXPECT_EQ(plain1, plain8);
  std::string a = pack(8, true, 42), b = pack(2, true, 42), c = pack(8, true, 43);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  EXPECT_NE(a, plain1);
  Result<VerifySummary> v = VerifyPack(out_, true);  // seed 43: every file once
  ASSERT_TRUE(v.ok()) << v.status().message();
  std::vector<std::string> names;
  for (const VerifiedEntry& e : v->entries) names.push_back(e.name);
  std::vector<std::string> sorted = names;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_NE(names, sorted);
  EXPECT_EQ(sorted.size(), 60u);
  EXPECT_EQ(std::unique(sorted.begin(), sorted.end()), sorted.end());
}

TEST_F(PackTest, RefusesToOverwriteUnlessForced) {
  Write("a.bin", "one");
  ASSERT_TRUE(Pack(Options(PackFormat::kWds)).ok());
  std::string before = Slurp(out_ + "/shard-00000.tar");
  Write("a.bin", "two!");
  Result<PackSummary> again = Pack(Options(PackFormat::kWds));
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.status().code(), Status::Code::kInvalidArgument);
  EXPECT_NE(again.status().message().find("--force"), std::string::npos);
  EXPECT_EQ(Slurp(out_ + "/shard-00000.tar"), before);
  // A stale higher shard of an earlier, larger pack disappears with --force.
  std::ofstream(out_ + "/shard-00007.tar") << "stale";
  PackOptions o = Options(PackFormat::kWds);
  o.force = true;
  ASSERT_TRUE(Pack(o).ok());
  EXPECT_FALSE(fs::exists(out_ + "/shard-00007.tar"));
  EXPECT_NE(Slurp(out_ + "/shard-00000.tar"), before);
}

TEST_F(PackTest, FifoIsNamedAndNothingIsLeftUnlessSkipped) {
  Write("a.bin", Random(100, 1));
  Write("z.bin", Random(100, 2));
  ASSERT_EQ(mkfifo((src_ + "/m.pipe").c_str(), 0644), 0);
  Result<PackSummary> s = Pack(Options(PackFormat::kTfRecord));
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find(src_ + "/m.pipe: a FIFO"), std::string::npos)
      << s.status().message();
  EXPECT_TRUE(PackNames().empty()) << PackNames().front();  // no shard, no temp file

  PackOptions o = Options(PackFormat::kTfRecord);
  o.skip_unreadable = true;
  Result<PackSummary> skipped = Pack(o);
  ASSERT_TRUE(skipped.ok()) << skipped.status().message();
  ASSERT_EQ(skipped->skipped.size(), 1u);
  EXPECT_EQ(skipped->skipped[0].path, "m.pipe");
  EXPECT_EQ(skipped->files, 2u);
  EXPECT_EQ(skipped->manifest.samples, 2u);
}

TEST_F(PackTest, ChangedFileIsRefusedByName) {
  std::string path = Write("x.bin", Random(1000, 1));
  Result<SourceCensus> census = TakeSourceCensus({src_, std::nullopt});
  ASSERT_TRUE(census.ok());
  const SourceFile& f = census->samples.at(0).files.at(0);
  ASSERT_TRUE(ReadPackSource(src_, f).ok());
  std::ofstream(path, std::ios::app) << "more";
  Result<SampleFile> r = ReadPackSource(src_, f);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find(path + ": changed during packing"), std::string::npos)
      << r.status().message();
  // Same size, new mtime: still a change.
  std::ofstream(path, std::ios::binary | std::ios::trunc) << Random(1000, 1);
  Result<SourceCensus> again = TakeSourceCensus({src_, std::nullopt});
  ASSERT_TRUE(again.ok());
  SourceFile old = again->samples.at(0).files.at(0);
  old.mtime_ns -= 1000000000;
  EXPECT_FALSE(ReadPackSource(src_, old).ok());
}

TEST_F(PackTest, VerifyNamesTheDamagedRecord) {
  for (int i = 0; i < 5; ++i) Write(fmt::format("f{}.bin", i), Random(2000, i));
  ASSERT_TRUE(Pack(Options(PackFormat::kTfRecord)).ok());
  std::string shard = out_ + "/shard-00000.tfrecord";
  Result<std::vector<IndexEntry>> index = ParseIndex(Slurp(shard + ".idx"), "idx");
  ASSERT_TRUE(index.ok());
  int fd = open(shard.c_str(), O_RDWR);
  ASSERT_GE(fd, 0);
  uint64_t at = (*index)[3].offset + 500;
  char c;
  ASSERT_EQ(pread(fd, &c, 1, at), 1);
  c ^= 0x40;
  ASSERT_EQ(pwrite(fd, &c, 1, at), 1);
  close(fd);
  Result<VerifySummary> v = VerifyPack(out_);
  ASSERT_FALSE(v.ok());
  EXPECT_NE(v.status().message().find(fmt::format("{}@{}", shard, (*index)[3].offset)),
            std::string::npos)
      << v.status().message();
  EXPECT_NE(v.status().message().find("CRC"), std::string::npos);
}

TEST_F(PackTest, HiddenNamesAndOutInsideSrcAreNotPacked) {
  Write("a.bin", "a");
  Write(".hidden", "h");
  out_ = src_ + "/packed";
  ASSERT_TRUE(Pack(Options(PackFormat::kWds)).ok());
  PackOptions o = Options(PackFormat::kWds);
  o.force = true;
  Result<PackSummary> s = Pack(o);  // the first pack's shards are not sources now
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->files, 1u);
  EXPECT_EQ(s->hidden_skipped, 1u);
}

TEST_F(PackTest, CensusOfTheParallelWalkIsSortedAndComplete) {
  // 40 class folders of 15 files, deeper folders, and every kind of entry
  // the census keeps with a reason; listed on several walk threads.
  std::vector<std::string> expected;
  for (int c = 0; c < 40; ++c) {
    for (int i = 0; i < 15; ++i) {
      std::string rel = fmt::format("c{:02}/f{:03}.bin", c, (i * 7) % 15);
      Write(rel, std::string(static_cast<size_t>(c + i), 'x'));
    }
  }
  Write("c05/deep/er/g.bin", "deep");
  Write(".hidden-dir/inside.bin", "never listed");  // not descended: counts once
  Write("c07/.hidden.bin", "h");
  fs::create_symlink(src_ + "/c01/f000.bin", src_ + "/c02/link.bin");
  fs::create_symlink(src_ + "/c03", src_ + "/c04/folder-link");
  fs::create_symlink(src_ + "/nowhere", src_ + "/c06/dangling.bin");
  ASSERT_EQ(mkfifo((src_ + "/c08/pipe.bin").c_str(), 0644), 0);

  Result<SourceCensus> census = TakeSourceCensus({src_, std::nullopt});
  ASSERT_TRUE(census.ok()) << census.status().message();
  EXPECT_EQ(census->hidden_skipped, 2u);
  std::vector<std::string> paths;
  std::map<std::string, const SourceFile*> by_path;
  for (const SourceSample& sample : census->samples) {
    for (const SourceFile& f : sample.files) {
      paths.push_back(f.path);
      by_path[f.path] = &f;
    }
  }
  EXPECT_EQ(paths.size(), 600u + 5u);
  EXPECT_EQ(census->files, paths.size());
  EXPECT_TRUE(
      std::is_sorted(census->samples.begin(), census->samples.end(),
                     [](const SourceSample& a, const SourceSample& b) { return a.key < b.key; }));
  EXPECT_FALSE(by_path.count("c04/folder-link/f000.bin")) << "a link to a folder was followed";
  ASSERT_TRUE(by_path.count("c05/deep/er/g.bin"));
  EXPECT_EQ(by_path.at("c05/deep/er/g.bin")->size, 4u);
  // A link to a file is the file, with the file's size and mtime.
  ASSERT_TRUE(by_path.count("c02/link.bin"));
  EXPECT_EQ(by_path.at("c02/link.bin")->problem, "");
  EXPECT_EQ(by_path.at("c02/link.bin")->size, 1u);
  struct stat st;
  ASSERT_EQ(::stat((src_ + "/c01/f000.bin").c_str(), &st), 0);
  EXPECT_EQ(by_path.at("c02/link.bin")->mtime_ns,
            int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec);
  EXPECT_EQ(by_path.at("c01/f000.bin")->mtime_ns, by_path.at("c02/link.bin")->mtime_ns);
  EXPECT_EQ(by_path.at("c04/folder-link")->problem, "symbolic link to a folder (not followed)");
  EXPECT_EQ(by_path.at("c06/dangling.bin")->problem.rfind("symbolic link to nothing: ", 0), 0u);
  EXPECT_EQ(by_path.at("c08/pipe.bin")->problem, "a FIFO");
  // Not class folders (deep files): no labels.
  EXPECT_TRUE(census->classes.empty());

  // The same census however SRC is spelled: with a trailing slash, and
  // through a link to the folder.
  fs::create_symlink(src_, dir_ + "/src-link");
  for (const std::string& spelled : {src_ + "/", dir_ + "/src-link", dir_ + "/src-link/"}) {
    Result<SourceCensus> again = TakeSourceCensus({spelled, std::nullopt});
    ASSERT_TRUE(again.ok()) << spelled << ": " << again.status().message();
    std::vector<std::string> again_paths;
    for (const SourceSample& sample : again->samples) {
      for (const SourceFile& f : sample.files) again_paths.push_back(f.path);
    }
    EXPECT_EQ(again_paths, paths) << spelled;
    EXPECT_EQ(again->hidden_skipped, 2u) << spelled;
  }
  // A missing SRC names itself.
  Result<SourceCensus> missing = TakeSourceCensus({dir_ + "/nope", std::nullopt});
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find(dir_ + "/nope"), std::string::npos);
}

TEST(TarReader, SplitKeyFollowsWebDataset) {
  EXPECT_EQ(SplitKey("cat/img001.jpg"),
            (std::pair<std::string_view, std::string_view>{"cat/img001", "jpg"}));
  EXPECT_EQ(SplitKey("a.b/c.seg.png").first, "a.b/c");
  EXPECT_EQ(SplitKey("a.b/c.seg.png").second, "seg.png");
  EXPECT_EQ(SplitKey("noext").first, "noext");
  EXPECT_EQ(SplitKey("noext").second, "");
}

TEST(PackIndex, ParsesAndRefuses) {
  Result<std::vector<IndexEntry>> ok = ParseIndex("0 100\n100 50\n", "i");
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->size(), 2u);
  EXPECT_EQ((*ok)[1], (IndexEntry{100, 50}));
  EXPECT_NE(ParseIndex("0 100\n50 10\n", "x.idx").status().message().find("x.idx:2"),
            std::string::npos);
  EXPECT_FALSE(ParseIndex("0 100", "i").ok());
  EXPECT_FALSE(ParseIndex("0 0\n", "i").ok());
  EXPECT_FALSE(ParseIndex("a b\n", "i").ok());
  EXPECT_FALSE(ParseIndex("1  2\n", "i").ok());
  EXPECT_TRUE(ParseIndex("", "i").ok());
}

TEST(PackIndex, ManifestRoundTrips) {
  Manifest m;
  m.format = PackFormat::kWds;
  m.samples = 3;
  m.records = 3;
  m.classes = {"a", "b"};
  m.shuffle = true;
  m.seed = 9;
  m.shards = {{"shard-00000.tar", "shard-00000.tar.idx", 3, 3, 4096}};
  Result<Manifest> back = ParseManifest(ManifestToJson(m), "m");
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->classes, m.classes);
  EXPECT_EQ(back->shards[0].bytes, 4096u);
  EXPECT_EQ(back->format, PackFormat::kWds);
  std::string evil = ManifestToJson(m);
  evil.replace(evil.find("shard-00000.tar\""), 15, "../../etc/passwd");
  EXPECT_FALSE(ParseManifest(evil, "m").ok());
}

}  // namespace
}  // namespace stallscope

// The capture archive written and read back, and what the reader refuses:
// a truncated or corrupt archive, a name with "..", an absolute name, a link
// out of its tree, an entry over the size limit, a device, a manifest that
// is not a capture's; a newer format reads with a note. The recorder's list
// of allowed places, and a capture of a fixture tree taken through the
// ReadLog: the link and the file at its target, the environment's training
// variables only.
#include "capture/capture_archive.h"

#include <archive.h>
#include <archive_entry.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "capture/node_recorder.h"
#include "core/file.h"
#include "core/read_log.h"
#include "probe/captured_addresses.h"
#include "probe/gpu_capture.h"

namespace stallscope {
namespace {

using Kind = CaptureEntry::Kind;

CaptureManifest Manifest() {
  CaptureManifest m;
  m.stallscope_version = "9.9.9";
  m.host = "gpu-node-07";
  m.time_utc = "2026-12-05T08:00:00Z";
  m.interval_seconds = 1;
  return m;
}

std::string Build(const std::vector<CaptureEntry>& entries) {
  Result<std::string> bytes = BuildCaptureArchive(Manifest(), entries);
  EXPECT_TRUE(bytes.ok()) << bytes.status().message();
  return bytes.ok() ? *bytes : "";
}

// An archive libarchive writes with any entries (the reader's adversary).
struct RawEntry {
  std::string name;
  unsigned type = AE_IFREG;
  std::string data;  // a file's bytes, a link's target
};

la_ssize_t Append(archive*, void* out, const void* buffer, size_t length) {
  static_cast<std::string*>(out)->append(static_cast<const char*>(buffer), length);
  return static_cast<la_ssize_t>(length);
}

std::string Raw(const std::vector<RawEntry>& entries, bool gzip = true) {
  std::string out;
  archive* a = archive_write_new();
  if (gzip) archive_write_add_filter_gzip(a);
  archive_write_set_format_pax_restricted(a);
  archive_write_set_bytes_in_last_block(a, 1);
  archive_write_open(a, &out, nullptr, Append, nullptr);
  for (const RawEntry& r : entries) {
    archive_entry* e = archive_entry_new();
    archive_entry_set_pathname(e, r.name.c_str());
    archive_entry_set_filetype(e, r.type);
    archive_entry_set_perm(e, 0644);
    if (r.type == AE_IFLNK) archive_entry_set_symlink(e, r.data.c_str());
    if (r.type == AE_IFREG) archive_entry_set_size(e, static_cast<la_int64_t>(r.data.size()));
    archive_write_header(a, e);
    if (r.type == AE_IFREG) archive_write_data(a, r.data.data(), r.data.size());
    archive_entry_free(e);
  }
  archive_write_close(a);
  archive_write_free(a);
  return out;
}

const std::string kManifest = "{\"format\": \"stallscope.capture/1\", \"host\": \"n1\"}";

std::string ErrorOf(const std::string& bytes) {
  Result<CaptureContents> c = ParseCaptureArchive(bytes, "NODE.tar.gz");
  EXPECT_FALSE(c.ok());
  return c.ok() ? "" : c.status().message();
}

TEST(CaptureArchive, RoundTripKeepsManifestFilesDirectoriesAndLinks) {
  std::vector<CaptureEntry> entries = {
      {"node", Kind::kDirectory, ""},
      {"node/proc", Kind::kDirectory, ""},
      {"node/proc/meminfo", Kind::kFile, "MemTotal: 1 kB\n"},
      {"node/sys/class/net/eth0", Kind::kLink, "../../devices/virtual/net/eth0"},
      {"before/proc/stat", Kind::kFile, ""}};
  Result<CaptureContents> c = ParseCaptureArchive(Build(entries), "NODE.tar.gz");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->manifest.format, kCaptureFormat);
  EXPECT_EQ(c->manifest.host, "gpu-node-07");
  EXPECT_EQ(c->manifest.stallscope_version, "9.9.9");
  ASSERT_EQ(c->entries.size(), entries.size());
  for (size_t i = 0; i < entries.size(); ++i) {
    EXPECT_EQ(c->entries[i].path, entries[i].path);
    EXPECT_EQ(c->entries[i].kind, entries[i].kind);
    EXPECT_EQ(c->entries[i].data, entries[i].data);
  }
  EXPECT_TRUE(c->notes.empty());
}

TEST(CaptureArchive, TruncatedArchiveNamesTheFileAndTheEntry) {
  std::string big(200000, 'x');
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>('a' + (i * 7919) % 26);
  std::string tar =
      Raw({{"manifest.json", AE_IFREG, kManifest}, {"node/proc/meminfo", AE_IFREG, big}}, false);
  std::string message = ErrorOf(tar.substr(0, tar.size() / 2));
  EXPECT_NE(message.find("NODE.tar.gz"), std::string::npos) << message;
  EXPECT_NE(message.find("node/proc/meminfo"), std::string::npos) << message;
  // Compressed and cut: the same names.
  std::string gz =
      Raw({{"manifest.json", AE_IFREG, kManifest}, {"node/proc/meminfo", AE_IFREG, big}});
  message = ErrorOf(gz.substr(0, gz.size() / 2));
  EXPECT_NE(message.find("NODE.tar.gz"), std::string::npos) << message;
  EXPECT_NE(message.find("node/proc/meminfo"), std::string::npos) << message;
}

TEST(CaptureArchive, GarbageIsNotACapture) {
  EXPECT_NE(ErrorOf("not an archive at all").find("NODE.tar.gz"), std::string::npos);
  EXPECT_NE(ErrorOf(Raw({{"node/proc/meminfo", AE_IFREG, "x"}})).find("no entry manifest.json"),
            std::string::npos);
  std::string message = ErrorOf(Raw({{"manifest.json", AE_IFREG, "{\"format\": \"other/1\"}"}}));
  EXPECT_NE(message.find("entry manifest.json"), std::string::npos) << message;
  EXPECT_NE(message.find("not a stallscope capture"), std::string::npos) << message;
}

TEST(CaptureArchive, RefusesNamesAndLinksThatLeaveTheTrees) {
  std::string message =
      ErrorOf(Raw({{"manifest.json", AE_IFREG, kManifest}, {"node/../../etc/x", AE_IFREG, "x"}}));
  EXPECT_NE(message.find("entry node/../../etc/x"), std::string::npos) << message;
  message = ErrorOf(Raw({{"manifest.json", AE_IFREG, kManifest}, {"/etc/x", AE_IFREG, "x"}}));
  EXPECT_NE(message.find("entry /etc/x"), std::string::npos) << message;
  message = ErrorOf(
      Raw({{"manifest.json", AE_IFREG, kManifest}, {"node/sys/a", AE_IFLNK, "/etc/shadow"}}));
  EXPECT_NE(message.find("entry node/sys/a"), std::string::npos) << message;
  message =
      ErrorOf(Raw({{"manifest.json", AE_IFREG, kManifest}, {"node/sys/a", AE_IFLNK, "../../x"}}));
  EXPECT_NE(message.find("leaves its tree"), std::string::npos) << message;
  message = ErrorOf(Raw({{"manifest.json", AE_IFREG, kManifest}, {"node/dev/sda", AE_IFBLK, ""}}));
  EXPECT_NE(message.find("entry node/dev/sda"), std::string::npos) << message;
}

TEST(CaptureArchive, ReadsTheTopFolderEntryTarWritesFirst) {
  // `tar -C DIR -czf node.tar.gz .` writes "./" first; "." alike.
  for (const char* top : {"./", ".", "./."}) {
    Result<CaptureContents> read =
        ParseCaptureArchive(Raw({{top, AE_IFDIR, ""},
                                 {"./manifest.json", AE_IFREG, kManifest},
                                 {"./node/proc/meminfo", AE_IFREG, "MemTotal: 1 kB\n"}}),
                            "NODE.tar.gz");
    ASSERT_TRUE(read.ok()) << top << ": " << read.status().message();
    ASSERT_EQ(read->entries.size(), 1u) << top;
    EXPECT_EQ(read->entries[0].path, "node/proc/meminfo");
  }
  // An absolute root, a parent, and ".." under "./" stay refused.
  for (const char* bad : {"/", "..", "./..", "../"}) {
    std::string message =
        ErrorOf(Raw({{"manifest.json", AE_IFREG, kManifest}, {bad, AE_IFDIR, ""}}));
    EXPECT_NE(message.find("not a plain relative path"), std::string::npos)
        << bad << ": " << message;
  }
}

TEST(CaptureArchive, RefusesAnEntryOverTheLimit) {
  std::string message =
      ErrorOf(Raw({{"manifest.json", AE_IFREG, kManifest},
                   {"node/proc/big", AE_IFREG, std::string(kCaptureMaxEntryBytes + 1, '\0')}}));
  EXPECT_NE(message.find("entry node/proc/big"), std::string::npos) << message;
  EXPECT_NE(message.find("over the limit"), std::string::npos) << message;
}

TEST(CaptureArchive, NewerFormatReadsWithANoteNamingItsVersion) {
  Result<CaptureContents> c = ParseCaptureArchive(
      Raw({{"manifest.json", AE_IFREG,
            "{\"format\": \"stallscope.capture/2\", \"stallscope_version\": \"3.0.0\"}"},
           {"node/proc/meminfo", AE_IFREG, "x"},
           {"extras/new-thing", AE_IFREG, "y"}}),
      "NODE.tar.gz");
  ASSERT_TRUE(c.ok()) << c.status().message();
  ASSERT_EQ(c->notes.size(), 2u);
  EXPECT_NE(c->notes[0].find("stallscope 3.0.0"), std::string::npos) << c->notes[0];
  EXPECT_NE(c->notes[0].find("stallscope.capture/2"), std::string::npos) << c->notes[0];
  EXPECT_NE(c->notes[1].find("1 entries"), std::string::npos) << c->notes[1];
  ASSERT_EQ(c->entries.size(), 1u);
}

TEST(CaptureRecorder, AllowedPlaces) {
  EXPECT_TRUE(AllowedInCapture("/proc/meminfo"));
  EXPECT_TRUE(AllowedInCapture("/proc/1234/status"));
  EXPECT_TRUE(AllowedInCapture("/proc/self/environ"));
  EXPECT_TRUE(AllowedInCapture("/sys/class/net/eth0/mtu"));
  EXPECT_TRUE(AllowedInCapture("/dev/kmsg"));
  EXPECT_TRUE(AllowedInCapture("/ethtool/eth0"));
  EXPECT_TRUE(AllowedInCapture("/stallscope/nvml.json"));
  EXPECT_FALSE(AllowedInCapture("/proc/1234/environ"));
  EXPECT_FALSE(AllowedInCapture("/proc/1234/cmdline"));
  EXPECT_FALSE(AllowedInCapture("/proc/self/cmdline"));
  EXPECT_FALSE(AllowedInCapture("/proc/1234/fd/3"));
  EXPECT_FALSE(AllowedInCapture("/proc/1234/maps"));
  EXPECT_FALSE(AllowedInCapture("/etc/shadow"));
  EXPECT_FALSE(AllowedInCapture("/home/user/.ssh/id_rsa"));
  EXPECT_FALSE(AllowedInCapture("/dev/sda"));
}

const CaptureEntry* Find(const std::vector<CaptureEntry>& entries, const std::string& path) {
  for (const CaptureEntry& e : entries) {
    if (e.path == path) return &e;
  }
  return nullptr;
}

TEST(CaptureRecorder, KeepsTheLinkAndTheFileAtItsTargetInTheirTrees) {
  const std::string host = std::string(STALLSCOPE_FIXTURES) + "/gpu_health_host";
  Root root(host);
  NodeRecorder recorder(root);
  {
    ScopedReadLog scoped(&recorder);
    ASSERT_TRUE(ReadFile(root.Path("/proc/meminfo")).ok());
    recorder.StartSecondSample();
    ASSERT_TRUE(ReadAttribute(root.Path("/sys/bus/pci/devices/0000:17:00.0/numa_node")).ok());
    NoteWrittenForCapture("/proc/self/environ", "NCCL_DEBUG=INFO");
    recorder.NoteFile(root.Path("/proc/self/environ"),
                      std::string("NCCL_DEBUG=INFO\0AWS_SECRET_ACCESS_KEY=abc\0", 42));
  }
  std::vector<CaptureEntry> entries = recorder.Entries();
  ASSERT_NE(Find(entries, "before/proc/meminfo"), nullptr);
  ASSERT_NE(Find(entries, "node/proc/meminfo"), nullptr);  // the node tree holds it too
  const CaptureEntry* link = Find(entries, "node/sys/bus/pci/devices/0000:17:00.0");
  ASSERT_NE(link, nullptr);
  EXPECT_EQ(link->kind, Kind::kLink);
  EXPECT_EQ(link->data, "../../../devices/pci0000:16/0000:16:01.0/0000:17:00.0");
  const CaptureEntry* file =
      Find(entries, "node/sys/devices/pci0000:16/0000:16:01.0/0000:17:00.0/numa_node");
  ASSERT_NE(file, nullptr);
  EXPECT_EQ(file->kind, Kind::kFile);
  const CaptureEntry* env = Find(entries, "node/proc/self/environ");
  ASSERT_NE(env, nullptr);
  EXPECT_EQ(env->data, std::string("NCCL_DEBUG=INFO\0", 16));
  // Nothing read outside the root is kept.
  {
    ScopedReadLog scoped(&recorder);
    (void)ReadFile("/proc/meminfo");
  }
  EXPECT_EQ(recorder.Entries().size(), entries.size());
}

TEST(NvmlCapture, RoundTripOfEveryField) {
  GpuState g;
  g.index = 1;
  g.name = "NVIDIA H100";
  g.pci_bus_id = "00000000:3B:00.0";
  g.numa_node = 1;
  g.memory_total_bytes = 80ull << 30;
  g.ecc_volatile_uncorrected = 3;
  g.remap_failed = true;
  g.persistence_mode = false;
  g.processes = {{4242, 1000}};
  g.gpm = GpmMetrics{};
  g.gpm->sm_active_percent = 41.5;
  NvmlCapture c{true, "", {GpuObservation{true, "", {g}}, GpuObservation{true, "", {g}}}};
  Result<NvmlCapture> back = ParseNvmlCapture(NvmlCaptureToJson(c), "nvml.json");
  ASSERT_TRUE(back.ok()) << back.status().message();
  ASSERT_EQ(back->samples.size(), 2u);
  const GpuState& b = back->samples[1].gpus.at(0);
  EXPECT_EQ(b.index, 1u);
  EXPECT_EQ(b.name, g.name);
  EXPECT_EQ(b.numa_node, 1);
  EXPECT_EQ(b.memory_total_bytes, g.memory_total_bytes);
  EXPECT_EQ(b.ecc_volatile_uncorrected, 3u);
  EXPECT_FALSE(b.ecc_volatile_corrected.has_value());
  EXPECT_TRUE(b.remap_failed);
  EXPECT_EQ(b.persistence_mode, false);
  ASSERT_EQ(b.processes.size(), 1u);
  EXPECT_EQ(b.processes[0].pid, 4242);
  ASSERT_TRUE(b.gpm.has_value());
  EXPECT_EQ(b.gpm->sm_active_percent, 41.5);
  EXPECT_FALSE(ParseNvmlCapture("[1,2", "nvml.json").ok());
  Result<NvmlCapture> wrong =
      ParseNvmlCapture("{\"samples\": [{\"gpus\": [{\"index\": \"x\"}]}]}", "nvml.json");
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.status().message().find("nvml.json"), std::string::npos);
}

TEST(CapturedAddresses, RoundTripAndBadEntriesNamed) {
  InterfaceAddresses in = {
      {"eth0",
       {{IpAddress::Family::kIpv4, "10.0.0.5", 24}, {IpAddress::Family::kIpv6, "fe80::1", 64}}}};
  Result<InterfaceAddresses> back = ParseCapturedAddresses(AddressesToCaptureJson(in), "a.json");
  ASSERT_TRUE(back.ok()) << back.status().message();
  ASSERT_EQ(back->at("eth0").size(), 2u);
  EXPECT_EQ(back->at("eth0")[0].address, "10.0.0.5");
  EXPECT_EQ(back->at("eth0")[0].prefix_length, 24);
  EXPECT_EQ(back->at("eth0")[1].family, IpAddress::Family::kIpv6);
  Result<InterfaceAddresses> bad = ParseCapturedAddresses("{\"eth1\": [\"10.0.0.5\"]}", "a.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("a.json"), std::string::npos);
  EXPECT_NE(bad.status().message().find("eth1"), std::string::npos);
  EXPECT_FALSE(ParseCapturedAddresses("[]", "a.json").ok());
}

}  // namespace
}  // namespace stallscope

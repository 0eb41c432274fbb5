#include "record/hook_receiver.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>

namespace stallscope {
namespace {

constexpr int64_t kStart = 1'000'000'000;  // the run began 1 s after boot

TEST(HookDatagram, ParsesEveryRecordType) {
  HookEvents e;
  ParseHookDatagram(
      "hello 42 0 0 1\n"
      "loader 42 0 64 4 1 2 1 50000 0\n"
      "epoch 42 0 1 1500000000\n"
      "step 42 0 7 3000000000 250000000 1000000000\n"
      "dropped 42 0 3\n",
      kStart, e);
  EXPECT_EQ(e.pids.count(42), 1u);
  ASSERT_EQ(e.loaders.size(), 1u);
  EXPECT_EQ(e.loaders[0].batch_size, 64);
  EXPECT_EQ(e.loaders[0].num_workers, 4);
  EXPECT_TRUE(e.loaders[0].pin_memory);
  EXPECT_EQ(e.loaders[0].prefetch_factor, 2);
  EXPECT_TRUE(e.loaders[0].persistent_workers);
  EXPECT_EQ(e.loaders[0].dataset_length, 50000);
  EXPECT_FALSE(e.loaders[0].gpu_available);
  ASSERT_EQ(e.epochs.size(), 1u);
  EXPECT_DOUBLE_EQ(e.epochs[0].t, 0.5);
  ASSERT_EQ(e.steps.size(), 1u);
  EXPECT_EQ(e.steps[0].step, 7);
  EXPECT_DOUBLE_EQ(e.steps[0].t, 2.0);
  EXPECT_DOUBLE_EQ(e.steps[0].wait_seconds, 0.25);
  EXPECT_DOUBLE_EQ(e.steps[0].step_seconds, 1.0);
  EXPECT_EQ(e.dropped, 3);
  EXPECT_EQ(e.malformed, 0);
}

TEST(HookDatagram, CountsMalformedAndSkipsUnknown) {
  HookEvents e;
  ParseHookDatagram(
      "step 42 0 7 3000000000 250000000\n"  // a field short
      "step 42 0 x 3000000000 1 2\n"        // not a number
      "step 42 0 8 3000000000 -5 2\n"       // negative wait
      "gpu 42 0 99 1 2 3\n"                 // a newer hook's record
      "\n"
      "epoch 42 0 2 2000000000",  // no trailing newline: still read
      kStart, e);
  EXPECT_EQ(e.malformed, 3);
  EXPECT_TRUE(e.steps.empty());
  ASSERT_EQ(e.epochs.size(), 1u);
  EXPECT_EQ(e.epochs[0].epoch, 2);
}

TEST(HookReceiver, ReceivesRealDatagramsAndCleansUp) {
  std::string path, dir;
  {
    Result<HookReceiver> r = HookReceiver::Create();
    ASSERT_TRUE(r.ok()) << r.status().message();
    path = r->socket_path();
    dir = path.substr(0, path.rfind('/'));
    int fd = socket(AF_UNIX, SOCK_DGRAM, 0);
    ASSERT_GE(fd, 0);
    struct sockaddr_un addr {};
    addr.sun_family = AF_UNIX;
    std::strcpy(addr.sun_path, path.c_str());
    for (int i = 0; i < 3; ++i) {
      std::string msg = "step 7 0 " + std::to_string(i) + " 2000000000 1000 2000\n";
      ASSERT_EQ(
          sendto(fd, msg.data(), msg.size(), 0, reinterpret_cast<sockaddr*>(&addr), sizeof addr),
          static_cast<ssize_t>(msg.size()));
    }
    close(fd);
    HookEvents e;
    r->Drain(kStart, e);
    ASSERT_EQ(e.steps.size(), 3u);
    EXPECT_EQ(e.steps[2].step, 2);
    r->Drain(kStart, e);  // nothing more waiting: returns at once
    EXPECT_EQ(e.steps.size(), 3u);
    EXPECT_EQ(access(path.c_str(), F_OK), 0);
  }
  EXPECT_NE(access(path.c_str(), F_OK), 0) << "socket left behind";
  EXPECT_NE(access(dir.c_str(), F_OK), 0) << "directory left behind";
}

}  // namespace
}  // namespace stallscope

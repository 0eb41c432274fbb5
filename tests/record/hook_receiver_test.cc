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

TEST(HookDatagram, BucketRecordsAndTheirMalformedForms) {
  HookEvents e;
  ParseHookDatagram(
      "bucket 42 1 7 3 2000000000 2500000000\n"
      "bucket 42 1 7 -1 2000000000 2500000000\n"  // no such bucket
      "bucket 42 1 7 4 2500000000 2000000000\n"   // done before its launch
      "bucket 42 1 7 4 2000000000\n",             // a field short
      kStart, e);
  EXPECT_EQ(e.malformed, 3);
  ASSERT_EQ(e.buckets.size(), 1u);
  EXPECT_EQ(e.buckets[0].rank, 1);
  EXPECT_EQ(e.buckets[0].step, 7);
  EXPECT_EQ(e.buckets[0].bucket, 3);
  EXPECT_DOUBLE_EQ(e.buckets[0].launch_seconds, 1.0);
  EXPECT_DOUBLE_EQ(e.buckets[0].done_seconds, 1.5);
}

TEST(HookDatagram, SpansAndTheirMalformedForms) {
  HookEvents e;
  ParseHookDatagram(
      "span 42 1 checkpoint 2000000000 2500000000\n"
      "span 42 1 eval 3000000000 4000000000\n"
      "span 42 1 profile 4000000000 4500000000\n"      // run --profile's trace written
      "span 42 1 warmup 3000000000 4000000000\n"       // a newer hook's kind: skipped
      "span 42 1 eval 4000000000 3000000000\n"         // ends before it starts
      "span 42 1 eval 3000000000\n"                    // a field short
      "span 42 x checkpoint 2000000000 2500000000\n",  // no rank
      kStart, e);
  EXPECT_EQ(e.malformed, 3);
  ASSERT_EQ(e.spans.size(), 3u);
  EXPECT_EQ(e.spans[2].kind, "profile");
  EXPECT_EQ(e.spans[0].pid, 42);
  EXPECT_EQ(e.spans[0].rank, 1);
  EXPECT_EQ(e.spans[0].kind, "checkpoint");
  EXPECT_DOUBLE_EQ(e.spans[0].start_t, 1.0);
  EXPECT_DOUBLE_EQ(e.spans[0].end_t, 1.5);
  EXPECT_EQ(e.spans[1].kind, "eval");
  EXPECT_DOUBLE_EQ(e.spans[1].end_t, 3.0);
}

TEST(HookDatagram, HostSyncsAndTheirMalformedForms) {
  HookEvents e;
  ParseHookDatagram(
      "step 42 1 7 3000000000 100 200000000\n"
      "hostsync 42 1 7 25000000 3\n"
      "hostsync 42 1 8 -5 1\n"           // a negative time
      "hostsync 42 1 9 25000000\n"       // a field short
      "hostsync 42 1 x 25000000 1\n"     // no step
      "hostsync 42 1 9 25000000 1 7\n",  // a field more
      kStart, e);
  EXPECT_EQ(e.malformed, 4);
  ASSERT_EQ(e.host_syncs.size(), 1u);
  EXPECT_EQ(e.host_syncs[0].rank, 1);
  EXPECT_EQ(e.host_syncs[0].step, 7);
  EXPECT_DOUBLE_EQ(e.host_syncs[0].seconds, 0.025);
  EXPECT_EQ(e.host_syncs[0].calls, 3);
}

TEST(HookDatagram, HowRanksStop) {
  HookEvents e;
  ParseHookDatagram(
      "exception 42 1 2000000000 loader\tMainThread\tRuntimeError\tDataLoader worker (pid "
      "77) is killed by signal: Killed.\t/x/train.py:3 in main\n"
      "bye 42 1 2500000000\n"
      "exit 42 1 3000000000 signal 9\n"
      "exit 43 0 3100000000 code 0\n"
      "sent_signal 43 0 3000500000 15\n",
      kStart, e);
  EXPECT_EQ(e.malformed, 0);
  ASSERT_EQ(e.stops.size(), 5u);
  EXPECT_EQ(e.stops[0].how, "loader_error");
  EXPECT_EQ(e.stops[0].source, "hook");
  EXPECT_EQ(e.stops[0].rank, 1);
  EXPECT_DOUBLE_EQ(e.stops[0].t, 1.0);
  EXPECT_NE(e.stops[0].detail.find("pid 77"), std::string::npos);
  EXPECT_EQ(e.stops[1].how, "bye");
  EXPECT_EQ(e.stops[2].how, "signal");
  EXPECT_EQ(e.stops[2].signal, 9);
  EXPECT_FALSE(e.stops[2].exit_code);
  EXPECT_EQ(e.stops[2].source, "launcher");
  EXPECT_EQ(e.stops[3].how, "exit");
  EXPECT_EQ(e.stops[3].exit_code, 0);
  EXPECT_EQ(e.stops[4].how, "sent_signal");
  EXPECT_EQ(e.stops[4].signal, 15);
}

TEST(HookDatagram, MalformedStopRecords) {
  HookEvents e;
  ParseHookDatagram(
      "exit 42 1 3000000000 signal\n"          // no number
      "exit 42 1 3000000000 status 3\n"        // not code or signal
      "exit 42 1 3000000000 code 300\n"        // not a status
      "sent_signal 42 1 3000000000 0\n"        // no signal 0
      "bye 42 1\n"                             // no time
      "bye 42 x 1\n"                           // no rank
      "exception 42 1 2000000000\n"            // no detail
      "exit 4294967296 1 3000000000 code 0\n"  // a pid past int
      "exit 42 1 3000000000 \n",               // nothing after the time (read past the end)
      kStart, e);
  EXPECT_EQ(e.malformed, 9);
  EXPECT_TRUE(e.stops.empty());
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

// The allocation tracing's records (python/stallscope/_leak.py): the text
// after the fixed fields is kept whole, spaces and all.
TEST(HookDatagram, AllocationRecordsKeepTheirTexts) {
  HookEvents e;
  ParseHookDatagram(
      "alloc_note 42 1 2000000000 tracing started: RSS rose at each of 5 readings, 219 MiB\n"
      "alloc_site 42 1 3000000000 99328 2131 my dir/train.py:201\n"
      "alloc_holder 42 1 3000000000 73 299892736 156237824 my%20dir/train.py:210 the "
      "module-level list 'KEPT' in train.py\n"
      "alloc_holder 42 1 3000000000 5 6 7 - the local dict 'cache' of step() in t.py\n"
      "alloc_site 42 1 x 1 2 a.py:1\n"          // not a number
      "alloc_holder 42 1 3000000000 1 2 3 -\n"  // no description
      "alloc_note 42 1 3000000000\n",           // no text
      kStart, e);
  EXPECT_EQ(e.malformed, 3);
  ASSERT_EQ(e.allocations.size(), 4u);
  const AllocationReport& note = e.allocations[0];
  EXPECT_EQ(note.kind, "note");
  EXPECT_EQ(note.rank, 1);
  EXPECT_EQ(note.pid, 42);
  EXPECT_DOUBLE_EQ(note.t, 1.0);
  EXPECT_EQ(note.text, "tracing started: RSS rose at each of 5 readings, 219 MiB");
  const AllocationReport& site = e.allocations[1];
  EXPECT_EQ(site.kind, "site");
  EXPECT_EQ(site.bytes, 99328);
  EXPECT_EQ(site.count, 2131);
  EXPECT_EQ(site.where, "my dir/train.py:201");
  const AllocationReport& holder = e.allocations[2];
  EXPECT_EQ(holder.kind, "holder");
  EXPECT_EQ(holder.count, 73);
  EXPECT_EQ(holder.bytes, 299892736);
  EXPECT_EQ(holder.grew_bytes, 156237824);
  EXPECT_EQ(holder.where, "my dir/train.py:210");
  EXPECT_EQ(holder.text, "the module-level list 'KEPT' in train.py");
  EXPECT_EQ(e.allocations[3].where, "");  // "-": no line found
  EXPECT_EQ(e.allocations[3].text, "the local dict 'cache' of step() in t.py");
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

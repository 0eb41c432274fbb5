#include "probe/python_stacks.h"

#include <gtest/gtest.h>

namespace stallscope {
namespace {

// As CPython 3.11's faulthandler.dump_traceback(all_threads=True) writes it
// (a thread in time.sleep, the main thread dumping); the second dump of the
// same file is the one that counts.
constexpr std::string_view kTwoDumps =
    "Thread 0x00007f6830bf16c0 (most recent call first):\n"
    "  File \"/tmp/fh.py\", line 3 in worker\n"
    "  File \"/usr/lib/python3.11/threading.py\", line 975 in run\n"
    "\n"
    "Current thread 0x00007f6830eac2c0 (most recent call first):\n"
    "  File \"/tmp/fh.py\", line 6 in <module>\n"
    "Thread 0x00007f6830bf16c0 (most recent call first):\n"
    "  File \"/tmp/fh.py\", line 3 in worker\n"
    "  File \"/usr/lib/python3.11/threading.py\", line 975 in run\n"
    "  File \"/usr/lib/python3.11/threading.py\", line 1038 in _bootstrap_inner\n"
    "\n"
    "Current thread 0x00007f6830eac2c0 (most recent call first):\n"
    "  File \"/usr/lib/python3/dist-packages/torch/distributed/distributed_c10d.py\", line 3159 "
    "in barrier\n"
    "  File \"/usr/lib/python3.11/threading.py\", line 320 in wait\n"
    "  File \"/home/u/my job/train.py\", line 57 in evaluate\n"
    "  File \"/home/u/my job/train.py\", line 90 in <module>\n";

TEST(PythonStacks, TheLastDumpOfAFile) {
  std::vector<PythonThreadStack> threads = ParseFaulthandlerDump(kTwoDumps);
  ASSERT_EQ(threads.size(), 2u);
  EXPECT_EQ(threads[0].thread_id, 0x00007f6830bf16c0u);
  EXPECT_FALSE(threads[0].current);
  EXPECT_EQ(threads[0].frames.size(), 3u);
  EXPECT_TRUE(threads[1].current);
  ASSERT_EQ(threads[1].frames.size(), 4u);
  EXPECT_EQ(threads[1].frames[2].file, "/home/u/my job/train.py");
  EXPECT_EQ(threads[1].frames[2].line, 57);
  EXPECT_EQ(threads[1].frames[2].function, "evaluate");
}

TEST(PythonStacks, TheMainThreadAndTheJobsOwnFrame) {
  std::vector<PythonThreadStack> threads = ParseFaulthandlerDump(kTwoDumps);
  // By the id the hook wrote; else the current thread.
  std::optional<PythonThreadStack> main = MainThreadStack(threads, 0x00007f6830eac2c0u);
  ASSERT_TRUE(main);
  EXPECT_TRUE(main->current);
  EXPECT_EQ(MainThreadStack(threads, 0x00007f6830bf16c0u)->thread_id, 0x00007f6830bf16c0u);
  EXPECT_TRUE(MainThreadStack(threads, 0)->current);
  // torch and the standard library are skipped; a packages folder under
  // /usr/lib/python3 is not the standard library, but torch is skipped.
  std::optional<PythonFrame> own = JobFrame(*main);
  ASSERT_TRUE(own);
  EXPECT_EQ(own->Where(), "/home/u/my job/train.py:57 in evaluate");
  EXPECT_TRUE(InCollectiveFrame(*main));
  EXPECT_FALSE(InCollectiveFrame(threads[0]));
}

TEST(PythonStacks, GarbageAndLimits) {
  EXPECT_TRUE(ParseFaulthandlerDump("").empty());
  EXPECT_TRUE(ParseFaulthandlerDump("Thread 0xzz (most recent call first):\n").empty());
  // Frames before any thread, a frame line cut short: skipped.
  std::vector<PythonThreadStack> t = ParseFaulthandlerDump(
      "  File \"/a.py\", line 1 in f\n"
      "Thread 0x1 (most recent call first):\n"
      "  File \"/a.py\", line\n"
      "  File \"/a.py\", line 2 in g\n"
      "  <no Python frame>\n");
  ASSERT_EQ(t.size(), 1u);
  ASSERT_EQ(t[0].frames.size(), 1u);
  EXPECT_EQ(t[0].frames[0].line, 2);
  std::string many;
  for (size_t i = 0; i < kMaxStackThreads + 10; ++i) {
    many += "Thread 0x" + std::to_string(i + 1) + " (most recent call first):\n";
  }
  EXPECT_EQ(ParseFaulthandlerDump(many).size(), kMaxStackThreads);
  PythonThreadStack empty;
  EXPECT_FALSE(JobFrame(empty));
  EXPECT_FALSE(MainThreadStack({}, 7));
}

}  // namespace
}  // namespace stallscope

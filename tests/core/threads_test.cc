// UsableCpus counts the affinity mask, not the host's cores; RunOnThreads
// runs each index once, index 0 on the caller's thread.
#include "core/threads.h"

#include <gtest/gtest.h>
#include <sched.h>

#include <atomic>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

namespace stallscope {
namespace {

TEST(Threads, UsableCpusIsTheAffinityMask) {
  cpu_set_t mine;
  CPU_ZERO(&mine);
  ASSERT_EQ(sched_getaffinity(0, sizeof(mine), &mine), 0);
  EXPECT_EQ(UsableCpus(), static_cast<size_t>(CPU_COUNT(&mine)));
  // A thread held to one CPU (as a job's 1-CPU cpuset holds it) counts 1,
  // whatever the host has.
  size_t seen = 0;
  std::thread one([&] {
    int first = 0;
    while (!CPU_ISSET(first, &mine)) ++first;
    cpu_set_t single;
    CPU_ZERO(&single);
    CPU_SET(first, &single);
    if (sched_setaffinity(0, sizeof(single), &single) == 0) seen = UsableCpus();
  });
  one.join();
  EXPECT_EQ(seen, 1u);
}

TEST(Threads, EveryIndexOnceAndTheFirstOnTheCaller) {
  for (size_t n : {0u, 1u, 2u, 7u}) {
    std::mutex lock;
    std::vector<size_t> ran;
    std::set<std::thread::id> threads;
    std::thread::id first;
    RunOnThreads(n, [&](size_t i) {
      std::lock_guard<std::mutex> hold(lock);
      ran.push_back(i);
      threads.insert(std::this_thread::get_id());
      if (i == 0) first = std::this_thread::get_id();
    });
    const size_t want = n == 0 ? 1 : n;
    ASSERT_EQ(ran.size(), want) << n;
    EXPECT_EQ(std::set<size_t>(ran.begin(), ran.end()).size(), want) << n;
    EXPECT_EQ(threads.size(), want) << n;
    EXPECT_EQ(first, std::this_thread::get_id()) << n;
  }
}

}  // namespace
}  // namespace stallscope

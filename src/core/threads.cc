// UsableCpus and RunOnThreads (see threads.h).
#include "core/threads.h"

#include <sched.h>

#include <algorithm>
#include <thread>
#include <vector>

namespace stallscope {

size_t UsableCpus() {
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  if (sched_getaffinity(0, sizeof(cpus), &cpus) != 0) return 1;
  return static_cast<size_t>(std::max(1, CPU_COUNT(&cpus)));
}

void RunOnThreads(size_t threads, const std::function<void(size_t index)>& work) {
  std::vector<std::thread> pool;
  pool.reserve(threads > 1 ? threads - 1 : 0);
  for (size_t i = 1; i < threads; ++i) pool.emplace_back(work, i);
  work(0);
  for (std::thread& t : pool) t.join();
}

}  // namespace stallscope

// How many threads a command's own parallel work gets, and running it on
// them. UsableCpus counts the CPUs this process may run on (its affinity:
// a job's 2-CPU cpuset on a 64-core host is 2), not the host's cores, so a
// command run inside a container or a Slurm allocation does not start a
// thread per host core. RunOnThreads is the one pool: the caller's thread
// works too, and every thread is joined before it returns.
#pragma once

#include <cstddef>
#include <functional>

namespace stallscope {

// The CPUs in this process's affinity mask (sched_getaffinity); at least 1.
size_t UsableCpus();

// Runs work(0) .. work(threads - 1) at once, work(0) on the calling thread;
// returns when all have. threads 0 is taken as 1.
void RunOnThreads(size_t threads, const std::function<void(size_t index)>& work);

}  // namespace stallscope

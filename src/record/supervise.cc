#include "record/supervise.h"

#include <poll.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "core/host_clock.h"

namespace stallscope {

SupervisedRun SuperviseJob(Job& job, HookReceiver& hook, const SuperviseOptions& options,
                           HookEvents& events) {
  SupervisedRun run;
  for (;;) {
    struct pollfd fds[2] = {{options.signal_fd, POLLIN, 0}, {hook.fd(), POLLIN, 0}};
    poll(fds, 2, options.poll_ms);
    if (fds[0].revents & POLLIN) {
      struct signalfd_siginfo si;
      while (read(options.signal_fd, &si, sizeof si) == sizeof si) {
        if (si.ssi_signo == SIGCHLD) continue;
        run.interrupted = true;
        // From the terminal the job already got it (same process group).
        if (si.ssi_code == SI_USER || si.ssi_code == SI_QUEUE) {
          job.Forward(static_cast<int>(si.ssi_signo));
        }
      }
    }
    hook.Drain(options.start_ns, events);
    if (std::optional<JobExit> exit = job.Poll()) {
      hook.Drain(options.start_ns, events);
      run.exit = *exit;
      return run;
    }
    if (!run.timed_out && options.deadline_ns && MonotonicNs() > *options.deadline_ns) {
      run.timed_out = true;
      job.Forward(options.timeout_signal);
    }
  }
}

}  // namespace stallscope

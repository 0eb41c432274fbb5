// libFuzzer target: what the Slurm side reads (probe/slurm_job.h,
// app/slurm_job.h): a process's cgroup and environ text, the settings file,
// the folder pattern and the job line. A match needs the id in the text.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "app/slurm_job.h"
#include "probe/slurm_job.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  for (std::string_view id : {std::string_view("7"), std::string_view("123")}) {
    if (stallscope::CgroupNamesSlurmJob(text, id) && text.find(id) == std::string_view::npos) {
      std::abort();
    }
    if (stallscope::EnvironNamesSlurmJob(text, id) && text.find(id) == std::string_view::npos) {
      std::abort();
    }
  }
  (void)stallscope::ParseSlurmSettings(text, "slurm.conf");
  (void)stallscope::ExpandSlurmFolder(text, "/w", "1", "u");
  if (auto pid = stallscope::RecorderOfSlurmJobLine(text); pid && *pid <= 1) std::abort();
  (void)stallscope::CheckSlurmJobId(text);
  return 0;
}

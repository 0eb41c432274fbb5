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
  if (auto line = stallscope::ParseSlurmJobLine(text, "jobs/1"); line.ok()) {
    if (line->job_id.empty() || line->recorder_pid < 0) std::abort();
    // What is written reads back as the same line.
    auto again = stallscope::ParseSlurmJobLine(stallscope::FormatSlurmJobLine(*line), "again");
    if (!again.ok() || again->job_id != line->job_id || again->uid != line->uid ||
        again->recorder_pid != line->recorder_pid) {
      std::abort();
    }
  }
  for (char c : stallscope::CleanSlurmJobName(text)) {
    if (c <= 32 || c >= 127) std::abort();
  }
  (void)stallscope::CheckSlurmJobId(text);
  return 0;
}

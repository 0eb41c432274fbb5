// `stallscope history PATH...`: a job's runs over days, the run that slowed
// it, and why. Pure: one summary per run file in (SummarizeRunFile), the
// runs (the files of one job's nodes merged), the jobs (same command and
// world size) and the change points of each job's series out. Thread-safe.
//
// - One run: files with the same master address, port and world size (and
//   launcher job where both have one) whose recordings overlap in wall time
//   (kJobOverlapSlackSeconds), as `report A.db B.db` reads them.
// - One job: runs of one user and world size with the same name (run
//   --job, STALLSCOPE_JOB, SLURM_JOB_NAME unless Slurm's default), else the
//   same script (as the hook saw it), else the same program and script file
//   (without a hook), so that a changed flag is a change within the job,
//   not a new job. Files written before table job_identity keep grouping by
//   their whole command line (JobIdentityOf).
// - Change points: binary segmentation of the per-run medians of the chosen
//   metric, over the complete runs only. The series' noise is the robust
//   spread of successive differences (1.4826 x their median absolute value
//   / sqrt 2, blind to a few level shifts); a split is a change when the two
//   segments' medians differ by more than kHistoryNoiseSigmas x that noise
//   and by more than kHistoryMinChangeFraction of the earlier one, and each
//   segment holds at least kHistoryMinSegmentRuns runs (one or two odd runs
//   are outliers, marked, never a change), and the runs either side of the
//   split each lie nearer their own segment's median (a change starts at a
//   run that shows it). Of the splits that pass, the one
//   with the least L1 cost (the absolute deviations from each segment's
//   median, summed) is taken, then each side is split again.
// - Each change's representatives: the last run of the segment before and
//   the first after; the caller fills `diff` with analyze/run/diff.h.
//   InputNear gives a side the input another run of its segment caught,
//   where the representative's own samples caught no file open.
#pragma once

#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "analyze/run/analysis.h"
#include "analyze/run/diff.h"
#include "analyze/run/inputs.h"
#include "core/status.h"

namespace stallscope {

inline constexpr double kHistoryNoiseSigmas = 4.0;
inline constexpr double kHistoryMinChangeFraction = 0.10;
inline constexpr size_t kHistoryMinSegmentRuns = 3;

enum class HistoryMetric { kStep, kDataWait, kStepsPerS };
// "step", "data_wait", "steps_per_s"; nullopt for anything else.
std::optional<HistoryMetric> HistoryMetricNamed(const std::string& name);
const char* HistoryMetricName(HistoryMetric metric);

// What makes runs one job: `by` says which ("name", "script", "program" or
// "command"), `name` is what it is.
struct JobIdentity {
  std::string by;
  std::string name;
  std::optional<int64_t> uid;
  bool operator<(const JobIdentity& o) const {
    return std::tie(by, name, uid) < std::tie(o.by, o.name, o.uid);
  }
  bool operator==(const JobIdentity& o) const = default;
};
JobIdentity JobIdentityOf(const RunInfo& info);

struct HistoryRun {
  int index = 0;  // 1-based within its job, by start time
  std::vector<std::string> files;
  std::string started_utc;
  double start_s = 0;  // wall clock, seconds since the epoch
  double end_s = 0;
  JobIdentity job;
  std::vector<std::string> argv;  // empty in files without it
  std::string command;
  int world_size = 0;
  std::string master_addr;
  std::optional<int> master_port;
  std::string launcher_job;
  std::vector<std::string> hosts;
  std::string data_device;
  std::vector<std::string> loaders;  // "num_workers=8 batch_size=32 ..." per distinct setting
  std::optional<double> step_median_s, step_p90_s, data_wait_s, sync_wait_s, steps_per_s;
  std::vector<std::string> findings;  // ids
  // What the loader read most (WhatTheLoaderReads), with the file it was
  // caught in; nullopt when no sample caught a file open. A run's nodes:
  // the first that caught one.
  std::optional<LoaderInput> input;
  std::string input_file;
  bool complete = true;  // exited 0, no signal, not OOM-killed
  bool outlier = false;  // off its segment by more than the noise
};

// One file's summary; `files` holds its path.
HistoryRun SummarizeRunFile(const RunAnalysis& run);

struct HistoryChange {
  size_t before = 0;  // the representatives: positions in HistoryJob::runs
  size_t after = 0;
  double before_value = 0;  // the segments' medians of the metric
  double after_value = 0;
  double before_s_per_step = 0;  // the representatives' median steps
  double after_s_per_step = 0;
  double ratio = 0;  // after / before of the metric's segment medians
  std::optional<RunDiff> diff;
};

struct HistoryJob {
  JobIdentity identity;
  std::string command;  // its first run's
  int world_size = 0;
  std::vector<HistoryRun> runs;
  double noise = 0;  // the series' run-to-run spread, in the metric's unit
  std::vector<HistoryChange> changes;
};

// Merges the files of one run, groups runs into jobs, orders each job's
// runs by start time and numbers them, finds the change points and marks
// the outliers. Jobs with the most runs first.
std::vector<HistoryJob> BuildHistory(std::vector<HistoryRun> files, HistoryMetric metric);

// What the loader read on one side of `change`, from the run nearest the
// representative within its segment (the runs up to the previous or next
// change, never across one), nearest first, complete runs that are not
// outliers only; nullopt when none caught a file. `after`: the side after
// the change. Pure.
std::optional<InputElsewhere> InputNear(const HistoryJob& job, size_t change, bool after);

// `--since DATE` as seconds since the epoch. DATE is an ISO 8601 date or
// time in UTC unless it carries an offset (2026-03-04, 2026-03-04T09:12,
// 2026-03-04 09:12:30Z, 2026-03-04T09:12+01:00), or an age before `now`:
// a whole number and m, h, d or w (30m, 12h, 7d, 2w). Anything else is an
// error naming the flag and the value.
Result<double> ParseSince(const std::string& text, double now);

// The pieces, for tests: the robust noise of a series, and the indexes at
// which a new segment begins (sorted).
double SeriesNoise(const std::vector<double>& series);
std::vector<size_t> SplitSeries(const std::vector<double>& series, double noise);

}  // namespace stallscope

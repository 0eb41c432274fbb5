// One job from several run files: the run files of a job's nodes (one
// `stallscope run` per node) read as one job, as `report A.db B.db ...` and
// `doctor --run A.db --run B.db` print it.
//
// The files must be of one job: the same master, port and world size (and
// SLURM job, where recorded), recordings that overlap in wall time, and no
// global rank in two files; otherwise nothing is merged and the error names
// the files. Each file keeps its own host findings (memory, io, network),
// tagged with its host, so one node's swapping is never the job's; the
// distributed rules judge every rank of every file together, on the first
// file's clock (each file shifted by the wall clocks at their starts, less
// the offsets to node 0 measured at start). A missing node, missing ranks or
// a file cut short are notes; the rest is reported. Pure; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "analyze/run/analysis.h"
#include "core/status.h"

namespace stallscope {

// A file whose recording ends more than this before the job's last file
// (and more than 3 of its intervals) is called cut short.
inline constexpr double kNodeEndedEarlySeconds = 10.0;
// Recordings of one job overlap in wall time; slack for clocks and for a
// node started late.
inline constexpr double kJobOverlapSlackSeconds = 60.0;

// `nodes`: each file's own analysis (AnalyzeRun), at least two. The result
// holds the merged timeline (the first node's samples, every file's steps in
// time order), the findings, notes, ranks and epochs of the whole job, and
// one NodeRow per file, ordered by node rank (then host). The files' sync
// records are judged where they are (rank_rules.h JudgeRanks) and then
// dropped, not merged: a job's steps and sync records are held once, and
// the timeline's step_syncs is empty.
// `described`: each file's DescribeNode, in the order of `nodes`, when the
// caller made them (reading the files in parallel); else none, and
// AnalyzeJob describes each file itself.
Result<RunAnalysis> AnalyzeJob(std::vector<RunAnalysis> nodes, std::vector<NodeRow> described = {});

// A file's row of the job's node table, from its own records: host, node
// rank, ranks, steps per second, waits, peak RSS, swap, disk, CPU, receive
// rate while syncing (all but the clock shift, which takes the job).
NodeRow DescribeNode(const RunAnalysis& node);

// What AnalyzeJob needs of a node other than node 0 once AnalyzeRun has
// judged it: its steps, syncs, epochs, loaders, ranks, samples and facts.
// Drops the rest (its processes, GPU and port samples, inputs, allocation
// reports), so a job of many nodes' files is held in memory once, and only
// when its node rank is known not to be 0. True when it dropped them. The
// job's timeline is that of FirstNodeOfJob: a caller whose files lack node
// 0 (or whose node 0 predates the node table) reads that one again whole.
bool KeepWhatTheJobNeeds(RunAnalysis& node);
// The index of the file AnalyzeJob orders first (node rank, then host, then
// path), whose timeline becomes the job's.
size_t FirstNodeOfJob(const std::vector<RunAnalysis>& nodes);

// A sorted list of ranks in ranges: {0, 1, 2, 7} -> "0-2, 7"; "-" for none.
std::string RankRangeText(const std::vector<int>& ranks);

}  // namespace stallscope

// A failure in an NCCL log, whatever its words: each WARN judged by what its
// process did after it, and a failure that no rule of causes.h reads
// raised in the layer of where NCCL raised it. The consequences of a failure
// (an init that never completed, a peer lost) become its evidence.
//
// A WARN is a failure when, on the process that printed it:
//   - an error-return line follows it ("init.cc:1270 -> 2": NCCLCHECK's,
//     printed at INFO as each caller returns the failed call's ncclResult_t);
//   - the process aborts a communicator after it ("- Abort COMPLETE");
//   - during init, the process prints no other INFO line after it (it
//     stopped there; a log at NCCL_DEBUG=WARN cannot show this);
//   - the job printed an NCCL error or a timeout after it (PyTorch's
//     "NCCL error in:", its watchdog).
// and NCCL did not carry on: no Init COMPLETE of the process follows it.
// Otherwise it is a note. Per process, its first failure is its cause; the
// failures after it on the same process are what followed.
//
// Pure; called by CheckNcclLog (rules.h). The ids, thresholds and
// reasoning are in the catalog.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "sample/finding.h"
#include "sample/nccl_log.h"

namespace stallscope {

// One WARN on one process, judged.
struct NcclJudgedWarn {
  const NcclWarning* warning = nullptr;
  const NcclProcess* process = nullptr;
  const NcclWarnOnProcess* at = nullptr;
  bool failure = false;
  // The process's cause: of its failures, the one shown first (by its
  // error-return line where it has one, else by its own line).
  bool first_on_process = false;
  // No failure, and the log shows NCCL went on: Init COMPLETE after it, or
  // (after init) more lines of the process.
  bool carried_on = false;
  std::string why;  // what made it a failure, or what NCCL did after it
};

// Every WARN the processes printed (NcclProcess::warns), in log order per
// process, judged. WARNs without a prefix (no process) are left out. Judged
// once per log (CheckNcclLog) and passed to the functions below; the
// entries point into `log`, which must outlive them.
std::vector<NcclJudgedWarn> JudgeNcclWarnings(const NcclLogSummary& log);

// The line of the WARN that is `p`'s cause (its first failure); 0: none.
uint64_t NcclFirstFailureLine(const std::vector<NcclJudgedWarn>& judged, const NcclProcess& p);

// The id of a failure no rule reads, from where NCCL raised it: `source` the
// WARN's "file:line" (or, when it printed none, the first error-return
// line's), `result` the ncclResult_t returned (-1: not printed), `text` the
// WARN's own words (only its tag, "NET/IB :", and whether it names a peer or
// an interface are read). network.nccl_error, distributed.nccl_setup_error,
// code.nccl_usage_error or distributed.nccl_cuda_failure.
std::string_view NcclFailureId(std::string_view source, int result, std::string_view text);

// Whether a WARN's words say a peer was lost or could not be reached (a
// connect refused, reset, timed out; a peer that closed): what another
// rank's failure causes, as often as a network's.
bool NcclWarningLostPeer(std::string_view text);

// The texts of the failures raised where NCCL returned a CUDA error
// (ncclUnhandledCudaError), for CheckNcclCudaFailure, whatever their words.
std::vector<std::string> NcclCudaFailureTexts(const std::vector<NcclJudgedWarn>& judged);

// Whether a finding quotes a WARN: its first 40 bytes in the summary or the
// evidence, or a first_at that is the FILE:LINE of one of its lines.
bool NcclFindingQuotes(const Finding& f, const NcclLogSummary& log, const NcclWarning& w,
                       std::string_view source);

// Failures that no critical finding already in `out` quotes (nor, for a
// lost peer, the connect rules read), one finding per id appended (the
// first in log order summarised, every other in evidence); then the WARNs
// NCCL carried on from that no rule reads, as one info finding
// (distributed.nccl_warning). Run after the other rules.
void CheckNcclFailures(const NcclLogSummary& log, const std::vector<NcclJudgedWarn>& judged,
                       std::string_view source, std::vector<Finding>& out);

// A critical finding that rests on WARNs' words alone, where the log shows
// NCCL carried on from every WARN it quotes, becomes a warning
// (`carried_on`; a WARN that ends an excerpt shows neither); where every
// WARN it quotes came after its process had already failed, info with
// `consequence_of` (time order within a process before the cause order).
void GradeNcclCarriedOn(const NcclLogSummary& log, const std::vector<NcclJudgedWarn>& judged,
                        std::string_view source, std::vector<Finding>& out);

// Makes consequences evidence of their cause: distributed.init_incomplete,
// and network.connect_failed where the first failure of another process (or
// an earlier one of its own) is no lost peer, are made info with
// `consequence_of`, and the cause lists them in `consequences`.
void DemoteNcclConsequences(const NcclLogSummary& log, const std::vector<NcclJudgedWarn>& judged,
                            std::vector<Finding>& out);

}  // namespace stallscope

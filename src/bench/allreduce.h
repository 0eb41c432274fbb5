// `bench allreduce`: the all-reduce bandwidth test as nccl-tests'
// all_reduce_perf measures it, over MPI (CPU buffers) or NCCL (GPU
// buffers). Sizes from --begin to --end times --factor; per size, warm-up
// iterations, then timed ones back to back; time is the slowest rank's mean
// per iteration; algbw = size / time; busbw = algbw x 2(n-1)/n, the bytes
// each rank's link carries in a ring all-reduce, so busbw is comparable with
// the link's line rate whatever n is. Every element of every size is
// checked against the exact sum (values are small integers, so a float sum
// is exact in any order) and #wrong counts the elements that differ.
// The plan, fill and check are pure; RunAllreduce drives a backend under an
// MpiWorld. Not thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"
#include "sample/allreduce.h"

namespace stallscope {

class MpiWorld;

// Checks the flags: begin <= end, factor >= 2, iterations >= 1, warmup >= 0.
Status ValidateAllreducePlan(const AllreducePlan& plan);
// Sizes in bytes, each a whole number of floats (rounded down, at least one
// float): begin, begin*factor, ... up to end.
std::vector<uint64_t> AllreduceSizes(const AllreducePlan& plan);

// busbw from algbw for an all-reduce over `ranks` ranks.
double BusBandwidth(double algbw, int ranks);

// The value rank `rank` contributes at element `index`, and the exact sum
// over `ranks` ranks. Integers below 2^24 / ranks, so float sums are exact.
float AllreduceFillValue(int rank, int ranks, uint64_t index);
// The expected sums by residue: expected(i) = table[i % table.size()].
std::vector<float> AllreduceExpectedTable(int ranks);
void FillAllreduceInput(int rank, int ranks, std::span<float> values);
// Elements of `result` that differ from the expected sum.
uint64_t CountWrongElements(std::span<const float> result, const std::vector<float>& expected);

// One all-reduce implementation: out of place, float, sum.
class AllreduceBackend {
 public:
  virtual ~AllreduceBackend() = default;
  virtual std::string Name() const = 0;         // "mpi", "nccl"
  virtual std::string Description() const = 0;  // "Open MPI v4.1.4", "NCCL 2.21.5 on GPU 0"
  virtual Status Allocate(uint64_t max_count) = 0;
  virtual Status Upload(std::span<const float> input) = 0;  // into the send buffer
  virtual Status ClearOutput(uint64_t count) = 0;           // sentinel into the receive buffer
  virtual Status Launch(uint64_t count) = 0;                // one all-reduce, may be async
  virtual Status Wait() = 0;                                // all launched ones complete
  virtual Status Download(std::span<float> output) = 0;     // from the receive buffer
};

class MpiAllreduceBackend : public AllreduceBackend {
 public:
  explicit MpiAllreduceBackend(MpiWorld& world) : world_(world) {}
  std::string Name() const override { return "mpi"; }
  std::string Description() const override;
  Status Allocate(uint64_t max_count) override;
  Status Upload(std::span<const float> input) override;
  Status ClearOutput(uint64_t count) override;
  Status Launch(uint64_t count) override;
  Status Wait() override { return Status::Ok(); }
  Status Download(std::span<float> output) override;

 private:
  MpiWorld& world_;
  std::vector<float> send_, recv_;
};

// Runs every size of the plan; every rank calls it and gets the same rows.
// A failed allocation on any rank fails every rank (they agree first); a
// failure mid-run is returned to the rank that saw it, whose caller must
// Abort the job, as the others wait in a collective.
Result<std::vector<AllreduceRow>> RunAllreduce(MpiWorld& world, AllreduceBackend& backend,
                                               const AllreducePlan& plan);

}  // namespace stallscope

// The all-reduce bench: see allreduce.h.
#include "bench/allreduce.h"

#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <limits>
#include <new>

#include "dist/mpi_world.h"

namespace stallscope {
namespace {

// Values are residues modulo this (a prime, so the pattern does not line up
// with power-of-two sizes and a shifted or truncated result shows).
constexpr uint64_t kFillModulus = 1021;
// Floats hold integers exactly up to 2^24.
constexpr uint64_t kExactFloatLimit = uint64_t{1} << 24;
// Out-of-place results are cleared to this before the timed loop, so an
// all-reduce that writes nothing is caught.
constexpr float kSentinel = -1.0f;

uint64_t ModulusFor(int ranks) {
  uint64_t n = ranks < 1 ? 1 : static_cast<uint64_t>(ranks);
  uint64_t limit = kExactFloatLimit / n;  // every sum stays below 2^24
  return limit < kFillModulus ? (limit < 2 ? 2 : limit) : kFillModulus;
}

}  // namespace

Status ValidateAllreducePlan(const AllreducePlan& plan) {
  if (plan.begin_bytes < 4)
    return Status::InvalidArgument(
        fmt::format("-b {}: at least 4 bytes (one float)", plan.begin_bytes));
  if (plan.end_bytes < plan.begin_bytes)
    return Status::InvalidArgument(
        fmt::format("-e {} is below -b {}", plan.end_bytes, plan.begin_bytes));
  if (plan.factor < 2)
    return Status::InvalidArgument(fmt::format("-f {}: the factor must be >= 2", plan.factor));
  if (plan.iterations < 1)
    return Status::InvalidArgument(fmt::format("--iters {}: at least 1", plan.iterations));
  if (plan.warmup < 0)
    return Status::InvalidArgument(fmt::format("--warmup {}: must be >= 0", plan.warmup));
  return Status::Ok();
}

std::vector<uint64_t> AllreduceSizes(const AllreducePlan& plan) {
  std::vector<uint64_t> sizes;
  for (uint64_t size = plan.begin_bytes; size <= plan.end_bytes;) {
    uint64_t floats = size / sizeof(float);
    sizes.push_back((floats == 0 ? 1 : floats) * sizeof(float));
    if (size > std::numeric_limits<uint64_t>::max() / plan.factor) break;
    size *= plan.factor;
  }
  return sizes;
}

double BusBandwidth(double algbw, int ranks) {
  if (ranks < 1) return 0;
  return algbw * 2.0 * (ranks - 1) / ranks;
}

float AllreduceFillValue(int rank, int ranks, uint64_t index) {
  uint64_t m = ModulusFor(ranks);
  return static_cast<float>((index + 31 * static_cast<uint64_t>(rank)) % m);
}

std::vector<float> AllreduceExpectedTable(int ranks) {
  uint64_t m = ModulusFor(ranks);
  std::vector<float> table(m);
  for (uint64_t i = 0; i < m; ++i) {
    uint64_t sum = 0;
    for (int r = 0; r < ranks; ++r) sum += (i + 31 * static_cast<uint64_t>(r)) % m;
    table[i] = static_cast<float>(sum);
  }
  return table;
}

void FillAllreduceInput(int rank, int ranks, std::span<float> values) {
  uint64_t m = ModulusFor(ranks);
  uint64_t v = (31 * static_cast<uint64_t>(rank)) % m;
  for (float& x : values) {
    x = static_cast<float>(v);
    if (++v == m) v = 0;
  }
}

uint64_t CountWrongElements(std::span<const float> result, const std::vector<float>& expected) {
  if (expected.empty()) return result.size();
  uint64_t wrong = 0;
  size_t j = 0;
  for (float x : result) {
    wrong += x != expected[j];
    if (++j == expected.size()) j = 0;
  }
  return wrong;
}

std::string MpiAllreduceBackend::Description() const {
  // "Open MPI v4.1.4, package: Debian OpenMPI, ...": the name and version are enough.
  const std::string& v = world_.library_version();
  return v.empty() ? "MPI" : v.substr(0, v.find(','));
}

Status MpiAllreduceBackend::Allocate(uint64_t max_count) {
  try {
    send_.assign(max_count, 0.0f);
    recv_.assign(max_count, 0.0f);
  } catch (const std::bad_alloc&) {
    send_ = {};
    recv_ = {};
    return Status::Unavailable(
        fmt::format("cannot allocate 2 x {} bytes of buffers", max_count * sizeof(float)));
  }
  return Status::Ok();
}

Status MpiAllreduceBackend::Upload(std::span<const float> input) {
  std::copy(input.begin(), input.end(), send_.begin());
  return Status::Ok();
}

Status MpiAllreduceBackend::ClearOutput(uint64_t count) {
  std::fill(recv_.begin(), recv_.begin() + static_cast<ptrdiff_t>(count), kSentinel);
  return Status::Ok();
}

Status MpiAllreduceBackend::Launch(uint64_t count) {
  return world_.AllreduceFloatSum(send_.data(), recv_.data(), count);
}

Status MpiAllreduceBackend::Download(std::span<float> output) {
  std::copy(recv_.begin(), recv_.begin() + static_cast<ptrdiff_t>(output.size()), output.begin());
  return Status::Ok();
}

Result<std::vector<AllreduceRow>> RunAllreduce(MpiWorld& world, AllreduceBackend& backend,
                                               const AllreducePlan& plan) {
  std::vector<uint64_t> sizes = AllreduceSizes(plan);
  uint64_t max_count = sizes.empty() ? 0 : sizes.back() / sizeof(float);
  const int rank = world.rank(), ranks = world.size();

  // Every rank agrees before anyone enters a collective it could not finish.
  std::vector<float> host;
  Status allocated = backend.Allocate(max_count);
  if (allocated.ok()) {
    try {
      host.resize(max_count);
    } catch (const std::bad_alloc&) {
      allocated = Status::Unavailable(
          fmt::format("cannot allocate {} bytes of host memory", max_count * sizeof(float)));
    }
  }
  Result<int64_t> all_ok = world.AllreduceMin(allocated.ok() ? 1 : 0);
  if (!all_ok.ok()) return all_ok.status();
  if (!allocated.ok()) return allocated;
  if (*all_ok == 0) return Status::Unavailable("another rank could not allocate its buffers");

  FillAllreduceInput(rank, ranks, host);
  if (Status s = backend.Upload(host); !s.ok()) return s;
  std::vector<float> expected = AllreduceExpectedTable(ranks);

  std::vector<AllreduceRow> rows;
  for (uint64_t size : sizes) {
    uint64_t count = size / sizeof(float);
    if (Status s = backend.ClearOutput(count); !s.ok()) return s;
    for (int i = 0; i < plan.warmup; ++i) {
      if (Status s = backend.Launch(count); !s.ok()) return s;
    }
    if (Status s = backend.Wait(); !s.ok()) return s;
    if (Status s = world.Barrier(); !s.ok()) return s;
    auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < plan.iterations; ++i) {
      if (Status s = backend.Launch(count); !s.ok()) return s;
    }
    if (Status s = backend.Wait(); !s.ok()) return s;
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    Result<double> slowest = world.AllreduceMax(seconds / plan.iterations);
    if (!slowest.ok()) return slowest.status();

    std::span<float> out(host.data(), count);
    if (Status s = backend.Download(out); !s.ok()) return s;
    Result<int64_t> wrong =
        world.AllreduceSum(static_cast<int64_t>(CountWrongElements(out, expected)));
    if (!wrong.ok()) return wrong.status();

    AllreduceRow row;
    row.size_bytes = size;
    row.count = count;
    row.time_us = *slowest * 1e6;
    row.algbw_gbps = *slowest > 0 ? static_cast<double>(size) / *slowest / 1e9 : 0;
    row.busbw_gbps = BusBandwidth(row.algbw_gbps, ranks);
    row.wrong = *wrong;
    rows.push_back(row);
  }
  return rows;
}

}  // namespace stallscope

// A PyTorch profiler trace as stallscope keeps it: the events of one rank's
// Chrome-trace JSON (Kineto's, or the legacy autograd profiler's bare list)
// that the analyses need, in a few bytes each, plus what the file said about
// itself (rank, world size, GPU). formats/trace/file.h fills it while
// streaming the file; analyze/trace/breakdown.h and analyze/trace/rules.h read it.
//
// Kept: every event with a stream (kernels, memcpy, memset, stream syncs),
// every CPU event with a correlation id (the launches), the ProfilerStep#N
// rows, and the CPU ops the findings name (synchronisation, the data
// loader's next). The other CPU rows that last are kept aside (`cpu_rows`),
// for the critical path's call stacks only; the rest is counted, not kept.
// Each event knows its place in the file and its (pid, tid). Times are µs as
// written in the file. Plain data; thread-compatible.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace stallscope {

// Kineto's `cat`, the ones the analyses tell apart.
enum class TraceCategory : uint8_t {
  kKernel,          // "kernel" (and the older "Kernel")
  kMemcpy,          // "gpu_memcpy"
  kMemset,          // "gpu_memset"
  kCudaSync,        // "cuda_sync": Stream Sync, Event Sync, Stream Wait Event
  kRuntime,         // "cuda_runtime", "cuda_driver" (and the hip ones' spellings)
  kCpuOp,           // "cpu_op", "operator", and the legacy list's uncategorised events
  kUserAnnotation,  // "user_annotation": ProfilerStep#N, record_function
  kGpuAnnotation,   // "gpu_user_annotation"
  kOther,
};
TraceCategory TraceCategoryOf(std::string_view cat);

// What a kept CPU op is to the findings.
enum class TraceCpuRole : uint8_t {
  kNone,
  kSync,        // blocks the host until the GPU catches up
  kDataLoader,  // enumerate(DataLoader)#_...Iter.__next__
};
TraceCpuRole TraceCpuRoleOf(std::string_view name);

struct TraceEvent {
  double ts = 0;   // start, µs
  double dur = 0;  // µs
  int64_t correlation = -1;
  int32_t stream = -1;        // args.stream; -1 when absent (a CPU-side event)
  uint32_t name = 0;          // index into TraceFile::names
  float bandwidth_gbps = -1;  // args["memory bandwidth (GB/s)"] of memcpy/memset; -1 absent
  TraceCategory cat = TraceCategory::kOther;
  TraceCpuRole role = TraceCpuRole::kNone;
  int16_t device = -1;  // args.device of GPU events
  uint32_t index = 0;   // place in the file's list of events (HTA's index)
  uint32_t thread = 0;  // TraceFile::threads: its pid and tid
};

// The pid and tid an event names, as written (numbers or text).
struct TraceThread {
  std::string pid, tid;
};

// A cuda_sync's wait: the stream and the cudaEventRecord it waits on.
struct TraceSyncWait {
  uint32_t index = 0;               // TraceEvent::index of the sync
  int64_t stream = -1;              // args.wait_on_stream
  int64_t record_correlation = -1;  // args.wait_on_cuda_event_record_corr_id
};

// What a communication kernel's args say about its collective (Kineto
// copies them from PyTorch's record_param_comms onto the kernel in
// PyTorch 2.1 and later): the process group it ran on and the message.
// Empty / -1 where the args lack a field.
struct TraceCommArgs {
  uint32_t index = 0;       // TraceEvent::index of the kernel
  std::string group;        // "Process Group Name"
  std::string group_ranks;  // "Process Group Ranks", as written ("[0, 1]")
  std::string collective;   // "Collective name" ("allreduce", "_allgather_base", ...)
  std::string dtype;        // "dtype" ("Float", "BFloat16", ...)
  int64_t in_nelems = -1;   // "In msg nelems"
  int64_t out_nelems = -1;  // "Out msg nelems"
  int32_t group_size = -1;  // "Group size"
};

// ProfilerStep#N: its number, from the name.
std::optional<int64_t> ProfilerStepNumber(std::string_view name);

struct TraceFile {
  std::string path;
  bool legacy = false;                               // the autograd profiler's bare list of events
  std::optional<int> rank;                           // distributedInfo.rank
  std::optional<int> world_size;                     // distributedInfo.world_size
  std::string backend;                               // distributedInfo.backend
  std::vector<std::pair<int, std::string>> devices;  // deviceProperties: id, name
  std::vector<std::string> names;  // event names, each once; TraceEvent::name indexes it
  std::vector<TraceEvent> events;  // in file order
  // The CPU rows with a dur the analysed rows leave out (TraceRows::kAnalysed):
  // only the critical path's call stacks read them. In file order.
  std::vector<TraceEvent> cpu_rows;
  std::vector<TraceThread> threads;
  std::vector<TraceSyncWait> sync_waits;  // of kept events, in file order
  std::vector<TraceCommArgs> comm_args;   // of kept GPU events with any, in file order
  bool fractional_times = false;          // some ts not a whole µs: HTA rounds every row then
  uint64_t complete_events = 0;           // every event with a dur and a cat
  uint64_t skipped_events = 0;            // events missing a field the reader needs
  uint64_t bytes = 0;                     // of JSON text read
  bool read_whole = false;  // the text was held whole (libdeflate), not streamed (zlib)
  uint32_t parts = 1;       // of a text held whole, the parts read by threads of their own
};

// The name of the GPU the trace's kernels ran on: deviceProperties' entry for
// the first device a GPU event names, else the first entry, else "".
std::string TraceGpuName(const TraceFile& trace);

}  // namespace stallscope

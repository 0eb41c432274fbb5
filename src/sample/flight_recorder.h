// What a PyTorch Flight Recorder dump says, as plain values: one rank's dump
// (its process groups, their status, the collectives still in its ring
// buffer), as formats/flight_recorder/flight_recorder.h reads it from the pickle or the JSON
// form torch writes, and the analysis of a job's dumps that
// analyze/flight_recorder/rules.h builds and render/flight_recorder.h prints.
// Header-only plain data; thread-compatible.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace stallscope {

// One frame of an entry's stack, as torch symbolized it.
struct FrFrame {
  std::string name;
  std::string filename;
  int64_t line = 0;
};

// One entry of the ring buffer: a collective, a point-to-point op, or the
// end of a coalesced group ("nccl:coalesced", "nccl:allreduce_coalesced").
struct FrEntry {
  int64_t record_id = 0;          // the rank's own counter: not comparable across ranks
  int64_t pg_id = 0;              // the rank's own index of the group: not comparable either
  std::string pg_name;            // the group's name, the same on every member
  std::string pg_desc;            // "TENSOR_MODEL_PARALLEL_GROUP", "default_pg", "undefined"
  int64_t collective_seq_id = 0;  // counts the group's collectives (format 2.2 on)
  int64_t p2p_seq_id = 0;         // counts the rank's point-to-point ops in the group
  int64_t op_id = 0;
  bool is_p2p = false;
  std::string profiling_name;  // "nccl:all_reduce", "nccl:send 0->1"
  std::string state;           // "scheduled", "started" or "completed"
  std::vector<std::vector<int64_t>> input_sizes;
  std::vector<std::vector<int64_t>> output_sizes;
  std::vector<std::string> input_dtypes;
  std::vector<std::string> output_dtypes;
  std::optional<int64_t> time_created_ns;
  std::optional<int64_t> time_discovered_started_ns;
  std::optional<int64_t> time_discovered_completed_ns;
  std::optional<double> duration_ms;
  std::optional<int64_t> timeout_ms;
  bool retired = false;
  std::string thread_name;
  std::vector<FrFrame> frames;
};

// A group as the rank's pg_config lists it.
struct FrGroupConfig {
  std::string name;
  std::string desc;
  std::vector<int64_t> ranks;  // global ranks, as listed
};

// A group's counters as the rank's pg_status lists them (format 2.3 on),
// keyed by the rank's own pg_id. -1: not known (started is -1 without
// TORCH_NCCL_ENABLE_TIMING).
struct FrGroupStatus {
  int64_t pg_id = 0;
  int64_t last_enqueued = -1;
  int64_t last_started = -1;
  int64_t last_completed = -1;
};

// One rank's dump.
struct FlightRecorderDump {
  std::string source;  // the file it was read from
  std::string format;  // "pickle" or "json"
  int64_t rank = -1;   // from the file name's last digits (torch writes PREFIX<rank>)
  std::string version;
  int version_major = 0;
  int version_minor = 0;
  std::string comm_lib_version;  // "nccl_version" (2.x), "comm_lib_version" (2.10)
  std::vector<FrGroupConfig> groups;
  std::vector<FrGroupStatus> statuses;
  std::vector<FrEntry> entries;  // in the order recorded
};

// --- the analysis of a job's dumps (analyze/flight_recorder/rules.h) ---

// Where one member rank stands in one group's collectives.
struct FrRankPosition {
  int64_t rank = -1;
  bool dumped = false;                    // a dump of this rank was read
  bool has_entries = false;               // it has entries of this group
  std::optional<int64_t> last_enqueued;   // collective_seq_id
  std::optional<int64_t> last_completed;  // collective_seq_id
  std::string last_completed_op;          // its profiling name, where an entry says it
  std::string state;                      // its entry at the diverging collective, if any
  std::string thread_name;                // the thread that entered it
  std::vector<FrFrame> frames;            // that entry's stack, when dumped with one
};

// One op a rank's entry differs from another's on (fr_trace's mismatch kinds).
struct FrMismatch {
  int64_t seq = 0;
  std::string kind;  // "type", "size", "dtype", "coalesced_count"
  int64_t rank = -1;
  int64_t other_rank = -1;
  std::string detail;
};

// A point-to-point op one rank waits in that its peer has no matching op for.
struct FrUnmatchedP2p {
  int64_t rank = -1;
  int64_t peer = -1;
  std::string op;  // "nccl:send 0->1"
  int64_t p2p_seq_id = 0;
};

// One process group (the same name and members on every rank).
struct FrGroupAnalysis {
  std::string name;
  std::string desc;
  std::vector<int64_t> ranks;
  bool p2p_only = false;  // its entries are all point-to-point ops
  // The first collective not completed everywhere, when one is pending.
  std::optional<int64_t> diverging_seq;
  std::string op;  // its profiling name ("nccl:all_reduce")
  std::vector<std::vector<int64_t>> input_sizes;
  std::vector<std::string> input_dtypes;
  std::vector<int64_t> entered;             // ranks that enqueued it
  std::vector<int64_t> missing;             // dumped ranks that never enqueued it
  std::vector<int64_t> not_dumped;          // members without a dump: not judged
  std::vector<int64_t> completion_stalled;  // completed less than their peers did
  std::vector<FrRankPosition> positions;    // every member, by rank
  std::vector<FrMismatch> mismatches;       // first few differences between ranks
  std::vector<FrUnmatchedP2p> unmatched_p2p;
  bool diverges() const {
    return !missing.empty() || !completion_stalled.empty() || !mismatches.empty();
  }
};

// What a job's dumps say together.
struct FlightRecorderAnalysis {
  std::vector<int64_t> ranks_dumped;
  std::vector<int64_t> ranks_without_entries;  // dumped nothing in flight
  std::vector<int64_t> ranks_not_dumped;       // members of a group, no dump read
  std::string version;                         // the dumps' format version
  std::vector<FrGroupAnalysis> groups;         // diverging groups first
  // The ranks the others wait for: missing from a collective others entered
  // while waiting on no one themselves, or whose GPU stopped completing.
  std::vector<int64_t> culprits;
  std::vector<std::string> notes;
};

}  // namespace stallscope

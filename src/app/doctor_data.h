// `doctor --data PATH`: the census of the dataset and the short storage
// bench beside it, judged into the doctor's triage.
//
// On a local file system both run in this process. On a remote mount
// (probe/remote_path.h) both run in a child process (core/child_call.h)
// with the idle deadline: a file server that dies before or during the walk
// or the bench, or a top directory still in the attribute cache of a dead
// mount, costs the doctor one deadline after the last answer, and a note
// naming the mount and the call that did not answer. The child sends back
// the census and the bench's speed as JSON through its pipe (a wire between
// this process and its own child, read from nowhere else), and the judging
// is done here, as for a local path.
//
// Why a full census may run in a forked child: doctor may hold threads by
// then (NVML starts its own), so the child may only use what survives a fork
// of a threaded process. The child is single-purpose and exec-free: it walks
// (open, getdents64, fstatat, its own threads), benches (files, io_uring)
// and writes one answer with write(2). It allocates, which glibc's fork
// makes safe (malloc's locks are taken across the fork and reset in the
// child); it touches no stdio, dlopen'ed library or NVML, whose locks are
// not reset. strerror (the census's notes) reads the message catalogue,
// whose lock a thread holds only while it translates a message, which
// doctor's other threads (NVML's) never do. Thread-compatible.
#pragma once

#include <cstdint>
#include <string>

#include "analyze/host/doctor_triage.h"
#include "app/doctor_host.h"
#include "core/file.h"
#include "core/status.h"
#include "sample/dataset.h"

namespace stallscope {

// --data: the census and, without --quick, the storage bench; a note when
// no --data was given. `root` is the probe root whose mount table says
// whether the path is remote.
void TriageDataset(const Root& root, const DoctorRequest& request, uint64_t memory_total_bytes,
                   Triage& t, const Progress& progress);

// The census as the child's JSON wire, and back (InvalidArgument when the
// text is not such a wire). Exposed for tests.
std::string CensusToWire(const DatasetCensus& census);
Result<DatasetCensus> CensusFromWire(const std::string& text);

}  // namespace stallscope

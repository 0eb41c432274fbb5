// Reading a job's training environment (sample/environment.h) from this
// process's environ or /proc/PID/environ. Thread-safe (ReadCurrentEnvironment
// reads `environ`, which setenv() in another thread may change).
#pragma once

#include <cstdint>

#include "core/file.h"
#include "core/status.h"
#include "sample/environment.h"

namespace stallscope {

// This process's environment (source "environ").
Result<TrainingEnvironment> ReadCurrentEnvironment();
// /proc/PID/environ under root; PermissionDenied for other users' processes.
Result<TrainingEnvironment> ReadProcessEnvironment(const Root& root, int32_t pid);

}  // namespace stallscope

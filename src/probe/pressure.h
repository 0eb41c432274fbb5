// Pressure stall information: /proc/pressure/{cpu,memory,io,irq} and the
// cgroup v2 <resource>.pressure files, which share one format.
//
// ParsePressure is pure; the readers read under a Root. A host without PSI
// is a Pressure with present=false, not an error. Stateless; thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "core/file.h"
#include "core/status.h"
#include "sample/pressure.h"

namespace stallscope {

// Lines are "some avg10=1.23 avg60=0.50 avg300=0.10 total=12345" and the
// same with "full". Returns present=true. An unknown line kind, a missing
// or malformed key, or a file with neither line is a ParseError naming
// `source` and the line.
Result<Pressure> ParsePressure(std::string_view text, std::string_view source);

// One pressure file at `path` (already under a Root). A missing file, or one
// the kernel refuses to read (EOPNOTSUPP when booted with psi=0), gives
// present=false; a malformed file is a ParseError.
Result<Pressure> ReadPressureFile(const std::string& path);

// /proc/pressure/* under `root`; each resource independently present or not.
Result<HostPressure> ReadHostPressure(const Root& root);

}  // namespace stallscope

// libFuzzer target: CensusFromWire, the reader of the census doctor's child
// sends back (app/doctor_data.h). What it accepts writes back and reads
// again to the same wire; what it refuses is InvalidArgument.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "app/doctor_data.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  stallscope::Result<stallscope::DatasetCensus> census = stallscope::CensusFromWire(text);
  if (!census.ok()) {
    if (census.status().code() != stallscope::Status::Code::kInvalidArgument) std::abort();
    return 0;
  }
  const std::string wire = stallscope::CensusToWire(*census);
  stallscope::Result<stallscope::DatasetCensus> again = stallscope::CensusFromWire(wire);
  if (!again.ok() || stallscope::CensusToWire(*again) != wire) std::abort();
  return 0;
}

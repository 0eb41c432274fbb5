#include "sample/io_bench.h"

namespace stallscope {

std::string_view ReadEngineName(ReadEngine engine) {
  return engine == ReadEngine::kIoUring ? "io_uring" : "psync";
}

}  // namespace stallscope

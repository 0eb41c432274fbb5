// libFuzzer target for ParseEnviron (probe/environment.h): the input is a
// NUL-separated environment block. Checks that nothing outside the collected
// names comes out and that the result is sorted and free of duplicates.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "probe/environment.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  stallscope::Result<stallscope::TrainingEnvironment> env =
      stallscope::ParseEnviron(text, "environ");
  if (!env.ok()) return 0;
  for (size_t i = 0; i < env->variables.size(); ++i) {
    if (!stallscope::IsTrainingVariable(env->variables[i].name)) __builtin_trap();
    if (i > 0 && !(env->variables[i - 1].name < env->variables[i].name)) __builtin_trap();
  }
  (void)env->Rank();
  (void)env->LocalRank();
  (void)env->WorldSize();
  return 0;
}

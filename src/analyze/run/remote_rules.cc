// io.input_bound's remote-file-system cause (remote_rules.h).
#include "analyze/run/remote_rules.h"

#include <fmt/format.h>

#include <algorithm>

#include "analyze/host/dataset_rules.h"
#include "core/units.h"

namespace stallscope {

bool AddRemoteFsCause(const std::vector<LoaderInput>& inputs, const LoaderConfig* loader,
                      const RemoteInputFacts& facts, Finding& f) {
  auto remote =
      std::find_if(inputs.begin(), inputs.end(), [](const LoaderInput& in) { return in.remote; });
  if (remote == inputs.end() || remote != inputs.begin()) return false;
  const std::string data = DataDirOf(inputs);
  f.evidence.push_back({"cause", std::string("io.remote_fs")});
  f.evidence.push_back({"data_fs_type", remote->fs_type});
  f.evidence.push_back({"data_path", data});
  std::string cost;
  if (loader && loader->batch_size > 0 && loader->num_workers > 0 && facts.steps > 0) {
    const double step = facts.step_seconds / static_cast<double>(facts.steps);
    const double per_file = step * loader->num_workers / loader->batch_size;
    f.evidence.push_back({"per_file_ms", per_file * 1e3});
    cost = fmt::format(": {:.2f} ms per file ({:.0f} ms a step x {} workers / batch {})",
                       per_file * 1e3, step * 1e3, loader->num_workers, loader->batch_size);
  }
  f.summary += fmt::format("; the data is on {} {}{}, where every file's open is a round trip",
                           remote->fs_type, data, cost);
  const std::string gain =
      facts.wait_per_epoch
          ? fmt::format("up to the {:.0f} s per epoch the steps wait now", *facts.wait_per_epoch)
          : fmt::format(
                "up to the {} of step time the steps wait now",
                FormatPercent(facts.step_seconds > 0 ? facts.wait_seconds / facts.step_seconds
                                                     : 0.0));
  f.next = fmt::format(
      "stallscope pack {} {}-wds --format wds onto a local disk, then read the shards "
      "(stallscope.data.ShardDataset): one round trip per 256 MiB shard instead of one per "
      "file, expected gain {}; stallscope dataset {} measures the round trip",
      ShellQuote(data), data == "/" ? std::string("/packed") : data, gain, ShellQuote(data));
  return true;
}

}  // namespace stallscope

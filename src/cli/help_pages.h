// What the command line says about itself, written from the one command tree
// RunCli builds from the command tables (kCommands and the groups' tables):
// the top-level usage `stallscope --help` and `stallscope help` print, the
// man page stallscope(1) and the bash completion. The build runs the built
// binary's hidden `stallscope help --man-page` / `help --bash-completion` to
// write the last two, so they never drift from --help (docs/install.md).
#pragma once

#include <string>
#include <vector>

#include "core/status.h"

namespace CLI {
class App;
}

namespace stallscope {

// The top-level help: every command with its summary, each group's
// subcommands (bench io, plan memory, net serve, ...) under it, and the
// top-level options (--help, --version) and `help COMMAND`.
std::string Usage(CLI::App& app);

// The command that WORDS name ({"bench", "io"}), or an error naming the first
// word that is not a command there.
Result<CLI::App*> FindCommand(CLI::App& app, const std::vector<std::string>& words);

// stallscope(1) in roff (man(7) macros): every command, subcommand and option.
std::string ManPage(CLI::App& app);

// A bash completion script: commands, subcommands and each one's options;
// file names where nothing else fits.
std::string BashCompletion(CLI::App& app);

}  // namespace stallscope

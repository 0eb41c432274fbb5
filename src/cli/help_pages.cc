// Usage, man page and bash completion from the command tree: see help_pages.h.
#include "cli/help_pages.h"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <functional>

#include "core/version.h"

namespace stallscope {
namespace {

std::vector<CLI::App*> Subcommands(CLI::App& app) {
  return app.get_subcommands([](CLI::App*) { return true; });
}

// Every command below APP, depth first, with its words ("bench io").
void Walk(CLI::App& app, const std::string& words,
          const std::function<void(CLI::App&, const std::string&)>& visit) {
  for (CLI::App* sub : Subcommands(app)) {
    std::string path = words.empty() ? sub->get_name() : words + " " + sub->get_name();
    visit(*sub, path);
    Walk(*sub, path, visit);
  }
}

// roff text: a backslash printed, minus signs as minus, no line that a
// leading dot or quote would turn into a request.
std::string Roff(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '\\') {
      out += "\\e";
    } else if (c == '-') {
      out += "\\-";
    } else {
      out += c;
    }
  }
  if (!out.empty() && (out[0] == '.' || out[0] == '\'')) out.insert(0, "\\&");
  return out;
}

// "--out PATH" or "--json" or "CMD..." as the option is written.
std::string OptionSynopsis(const CLI::Option& opt) {
  if (opt.get_positional()) return opt.get_name(true);
  std::string names = opt.get_name(false, true);
  if (opt.get_type_size_max() == 0) return names;
  std::string type = opt.get_type_name();
  return type.empty() ? names : names + " " + type;
}

void ManOptions(CLI::App& app, std::string& out) {
  for (const CLI::Option* opt : app.get_options()) {
    if (opt == app.get_help_ptr()) continue;
    out +=
        fmt::format(".TP\n.B {}\n{}\n", Roff(OptionSynopsis(*opt)), Roff(opt->get_description()));
  }
}

}  // namespace

std::string Usage(CLI::App& app) {
  std::string out =
      "stallscope: finds why training is slower than its hardware\n\n"
      "usage: stallscope COMMAND [OPTIONS]   (stallscope help COMMAND, or COMMAND --help, "
      "for its options)\n\n"
      "commands:\n";
  for (CLI::App* sub : Subcommands(app)) {
    out += fmt::format("  {:<10} {}\n", sub->get_name(), sub->get_description());
    for (CLI::App* leaf : Subcommands(*sub)) {
      out += fmt::format("    {:<16} {}\n", sub->get_name() + " " + leaf->get_name(),
                         leaf->get_description());
    }
  }
  out +=
      "\noptions:\n"
      "  --help     this list (help COMMAND [SUBCOMMAND]: that command's options)\n"
      "  --version  the version and the git commit it was built from\n";
  return out;
}

Result<CLI::App*> FindCommand(CLI::App& app, const std::vector<std::string>& words) {
  CLI::App* at = &app;
  std::string path;
  for (const std::string& word : words) {
    CLI::App* next = nullptr;
    std::string names;
    for (CLI::App* sub : Subcommands(*at)) {
      if (sub->get_name() == word) next = sub;
      names += (names.empty() ? "" : ", ") + sub->get_name();
    }
    if (next == nullptr) {
      if (names.empty()) {
        return Status::InvalidArgument(
            fmt::format("'{}': stallscope {} has no subcommands", word, path));
      }
      return Status::InvalidArgument(
          fmt::format("'{}' is not a command of stallscope{}{}: one of {}", word,
                      path.empty() ? "" : " ", path, names));
    }
    path += (path.empty() ? "" : " ") + word;
    at = next;
  }
  return at;
}

std::string ManPage(CLI::App& app) {
  std::string out = fmt::format(
      ".TH STALLSCOPE 1 \"\" \"stallscope {}\" \"User Commands\"\n"
      ".SH NAME\nstallscope \\- finds why training is slower than its hardware\n"
      ".SH SYNOPSIS\n.B stallscope\n.I COMMAND\n[\\fIOPTIONS\\fR]\n.br\n"
      ".B stallscope help\n[\\fICOMMAND\\fR [\\fISUBCOMMAND\\fR]]\n"
      ".SH DESCRIPTION\n"
      "stallscope records a training job with the host under it and says which layer "
      "(memory, io, network, distributed, code) holds it back, with the evidence.\n"
      "Exit status: 0 the check ran, whatever it found; 1 it could not run; 2 bad usage; "
      "3 no GPU (bench h2d); 4 doctor \\-\\-fail\\-on: a finding reached that level. "
      "run exits with CMD's status (127 not found, 126 not executable).\n"
      ".SH OPTIONS\n.TP\n.B \\-\\-help\nthe commands and their summaries\n"
      ".TP\n.B \\-\\-version\nthe version and the git commit it was built from\n"
      ".SH COMMANDS\n",
      Roff(Version()));
  Walk(app, "", [&](CLI::App& sub, const std::string& words) {
    out += fmt::format(".SS \"stallscope {}\"\n{}\n", Roff(words), Roff(sub.get_description()));
    ManOptions(sub, out);
  });
  out +=
      ".SH ENVIRONMENT\n"
      ".TP\n.B STALLSCOPE_SOCKET\nthe Unix datagram socket the Python hook reports to\n"
      ".TP\n.B PYTHONPATH\nholds the hook's directory in a hooked job (stallscope hook\\-env)\n"
      ".TP\n.B STALLSCOPE_CRC32C\nthe hook's native CRC32C library; empty: pure Python\n"
      ".TP\n.B STALLSCOPE_MPI_PLUGIN\nthe MPI plugin to load instead of the installed one\n"
      ".SH FILES\n"
      ".TP\n.I PREFIX/lib/stallscope/python\nthe Python hook (import stallscope)\n"
      ".TP\n.I PREFIX/lib/stallscope/libstallscope_crc32c.so\nthe hook's CRC32C\n"
      ".TP\n.I PREFIX/lib/stallscope/libstallscope_mpi.so\nthe MPI plugin of cluster and "
      "bench allreduce\n"
      ".PP\nPREFIX is the directory above the one holding the stallscope binary.\n"
      ".SH SEE ALSO\n"
      ".I PREFIX/share/doc/stallscope\n";
  return out;
}

std::string BashCompletion(CLI::App& app) {
  std::string paths;  // "|bench|bench io|...|": the commands bash may walk into
  std::string cases;
  auto add = [&](CLI::App& at, const std::string& words) {
    std::string list;
    for (CLI::App* sub : Subcommands(at)) list += (list.empty() ? "" : " ") + sub->get_name();
    for (const CLI::Option* opt : at.get_options()) {
      for (const std::string& name : opt->get_lnames()) {
        list += (list.empty() ? "" : " ") + ("--" + name);
      }
    }
    if (&at == &app) list += " help";
    paths += words + "|";
    cases += fmt::format("    '{}') words='{}' ;;\n", words, list);
  };
  add(app, "");
  Walk(app, "", add);
  return fmt::format(
      "# bash completion for stallscope {0}, written by `stallscope help --bash-completion`\n"
      "_stallscope() {{\n"
      "  local cur=${{COMP_WORDS[COMP_CWORD]}} path='' w i words\n"
      "  local known='|{1}'\n"
      "  for ((i = 1; i < COMP_CWORD; i++)); do\n"
      "    w=${{COMP_WORDS[i]}}\n"
      "    [ \"$w\" = help ] && [ -z \"$path\" ] && continue\n"
      "    if [[ $known == *\"|${{path:+$path }}$w|\"* ]]; then path=${{path:+$path }}$w; fi\n"
      "  done\n"
      "  case \"$path\" in\n"
      "{2}"
      "  esac\n"
      "  COMPREPLY=($(compgen -W \"$words\" -- \"$cur\"))\n"
      "}}\n"
      "complete -o default -F _stallscope stallscope\n",
      Version(), paths, cases);
}

}  // namespace stallscope

// The one version of stallscope. It is written once, in CMake's
// project(VERSION); the build writes it, and the git commit of the checkout
// it was built from (empty outside a checkout), into a generated header that
// only version.cc includes, so a new commit recompiles one file. Every JSON
// output carries Version() beside its schema, the run file records it, and
// the exporter's build_info uses it. Thread-safe (constants).
#pragma once

#include <string>
#include <string_view>

namespace stallscope {

std::string_view Version();    // "0.1.0"
std::string_view GitCommit();  // "c6e7184" from a checkout, "" otherwise
// "stallscope 0.1.0 (git c6e7184)", as --version prints it.
std::string VersionLine();

}  // namespace stallscope

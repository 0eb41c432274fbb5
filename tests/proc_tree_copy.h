// A writable copy of tests/fixtures/proc_tree for one test, removed at its
// end: the base of the fixtures that change a process's files between
// samples (tests/probe/process_sampler_test.cc, slurm_job_test.cc).
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <string>

namespace stallscope {

class ProcTreeCopyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = ::testing::TempDir() + "proc_tree_XXXXXX";
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
    std::filesystem::copy(std::string(STALLSCOPE_FIXTURES) + "/proc_tree", dir_,
                          std::filesystem::copy_options::recursive);
    for (const auto& e : std::filesystem::recursive_directory_iterator(dir_)) {
      std::filesystem::permissions(e.path(), std::filesystem::perms::owner_write,
                                   std::filesystem::perm_options::add);
    }
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path dir_;
};

}  // namespace stallscope

// The `scellis` command's tests' shared pieces: the shipped examples by path, and a fixture with a
// scratch directory for documents and outputs of their own.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "support/cli.h"

namespace scellis::testing {

inline std::string Example(const std::string& name) {
  return (std::filesystem::path(SCELLIS_SOURCE_DIR) / "examples" / name).string();
}

class Cli : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = MakeTempDir("scellis-cli-test"); }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name) << text;
    return (dir_ / name).string();
  }
  std::filesystem::path dir_;
};

}  // namespace scellis::testing

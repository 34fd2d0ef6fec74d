// Documents under examples/, read from the source tree the tests were built from: tests that
// exercise the shipped examples read the very files users run.
#pragma once

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

namespace scellis::testing {

inline std::string ExampleText(const std::string& name) {
  std::ifstream in(std::string(SCELLIS_SOURCE_DIR) + "/examples/" + name);
  EXPECT_TRUE(in.good()) << "examples/" << name << " is missing";
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The main job's workflow: the 784-256-10 MLP on Fashion-MNIST.
inline std::string FashionMlp() { return ExampleText("fashion_mlp.json"); }

}  // namespace scellis::testing

#include "kernel/ref/ref.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <thread>

namespace scellis::kernel::ref {
namespace {

TEST(ThreadsFor, ZeroIsOnePerHardwareThread) {
  const int hardware = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  EXPECT_EQ(ThreadsFor(0), hardware);
  EXPECT_EQ(ThreadsFor(-1), hardware);
  EXPECT_EQ(ThreadsFor(1), 1);
  EXPECT_EQ(ThreadsFor(hardware + 3), hardware + 3);  // honoured: the determinism tests need it
}

}  // namespace
}  // namespace scellis::kernel::ref

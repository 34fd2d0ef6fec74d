#include "base/host_heap.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace scellis {
namespace {

#if defined(__GLIBC__)
// glibc counts the blocks it holds as their own mappings (mallinfo2().hblks). After the call, a
// step-sized block (1 MiB) comes from the heap, while one past the threshold (64 MiB) is still
// mapped on its own.
TEST(HostHeap, StepSizedBlocksComeFromTheHeapAndHugeOnesAreStillMapped) {
  KeepStepSizedBlocksOnHeap();
  const size_t mapped_before = mallinfo2().hblks;
  void* step_block = std::malloc(1 << 20);
  ASSERT_NE(step_block, nullptr);
  EXPECT_EQ(mallinfo2().hblks, mapped_before);
  void* huge_block = std::malloc(size_t{64} << 20);
  ASSERT_NE(huge_block, nullptr);
  EXPECT_EQ(mallinfo2().hblks, mapped_before + 1);
  std::free(huge_block);
  std::free(step_block);
}
#endif

}  // namespace
}  // namespace scellis

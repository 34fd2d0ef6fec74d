// Checked shape arithmetic: element counts never overflow, and a zero-sized dimension never hides
// the size of the others.
#include "base/tensor_type.h"

#include <gtest/gtest.h>

#include <limits>

namespace scellis {
namespace {

constexpr int64_t k2e20 = int64_t{1} << 20;
constexpr int64_t k2e40 = int64_t{1} << 40;
constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();

TEST(CheckedElements, CountsOrdinaryShapes) {
  EXPECT_EQ(CheckedElements(std::vector<int64_t>{}), 1);  // a scalar
  EXPECT_EQ(CheckedElements(std::vector<int64_t>{7}), 7);
  EXPECT_EQ(CheckedElements(std::vector<int64_t>{3, 5, 7}), 105);
  EXPECT_EQ(CheckedElements(std::vector<int64_t>{k2e20, k2e20}), k2e40) << "the limit is inclusive";
}

TEST(CheckedElements, EmptyShapesHaveNoElements) {
  EXPECT_EQ(CheckedElements(std::vector<int64_t>{0}), 0);
  EXPECT_EQ(CheckedElements(std::vector<int64_t>{5, 0}), 0);
  EXPECT_EQ(CheckedElements(std::vector<int64_t>{0, k2e20, k2e20}), 0) << "the others fit";
}

TEST(CheckedElements, RefusesTooManyElements) {
  EXPECT_FALSE(CheckedElements(std::vector<int64_t>{k2e40 + 1}));
  EXPECT_FALSE(CheckedElements(std::vector<int64_t>{k2e20, k2e20, 2}));
  EXPECT_FALSE(CheckedElements(std::vector<int64_t>{kInt64Max, kInt64Max}));
  EXPECT_FALSE(CheckedElements(std::vector<int64_t>{-1, 4}));
}

// The inputs of the reported crashes: the product of the non-zero sizes counts, wherever the zero.
TEST(CheckedElements, AZeroDoesNotHideTheOthers) {
  EXPECT_FALSE(CheckedElements(std::vector<int64_t>{0, 4294967297, 4294967295, 1}));
  EXPECT_FALSE(CheckedElements(std::vector<int64_t>{0, k2e40, k2e40, k2e40}));
  EXPECT_FALSE(CheckedElements(std::vector<int64_t>{int64_t{1} << 62, int64_t{1} << 62, 0}));
  EXPECT_FALSE(CheckedElements(std::vector<int64_t>{k2e20, 0, k2e20, 2}));
}

TEST(CheckedElements, DimsAndBytesAgreeWithSizes) {
  TensorType t = MakeType({3, 0, 5});
  EXPECT_EQ(CheckedElements(t.dims), 0);
  EXPECT_EQ(CheckedBytes(t), 0);
  EXPECT_EQ(CheckedBytes(MakeType({3, 5}, DType::kF16)), 30);
  EXPECT_EQ(CheckedBytes(MakeType({k2e20, k2e20}, DType::kF32)), 4 * k2e40);
  EXPECT_FALSE(CheckedBytes(MakeType({0, k2e40, 2})));
}

// Once a shape is checked, its strides (partial products of the sizes) are within the limit too.
TEST(CheckedElements, StridesOfACheckedShapeFit) {
  std::vector<int64_t> sizes = {k2e20, 0, k2e20};
  ASSERT_TRUE(CheckedElements(sizes));
  EXPECT_EQ(RowMajorStrides(sizes), (std::vector<int64_t>{0, k2e20, 1}));
}

}  // namespace
}  // namespace scellis

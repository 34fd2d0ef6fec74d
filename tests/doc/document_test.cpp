#include <gtest/gtest.h>

#include "doc/document.h"

namespace scellis::doc {
namespace {

TEST(Document, ParsesSeedGraph) {
  auto d = Parse(R"({"version":1,"nodes":[{"id":0,"op":"input","shape":[3],"data":[-2,3,4]},
    {"id":1,"op":"input","shape":[3],"data":[10,20,30]},{"id":2,"op":"mul","a":0,"b":1},
    {"id":3,"op":"relu","a":2}],"outputs":[{"name":"values","id":3}]})");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->nodes.size(), 4u);
  EXPECT_EQ(d->outputs[0].source, "3");
}

}  // namespace
}  // namespace scellis::doc

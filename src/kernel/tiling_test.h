// Shared by the tile planning tests (and the WebGPU tiling tests, for their documents): graph
// documents lowered to kernels under the production options, and the kernels and windows they
// check.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "kernel/tiling.h"
#include "support/graph.h"

namespace scellis::kernel::testing {

inline Module LowerToKernel(const Json& doc) {
  pipeline::CompileOptions o = scellis::testing::ProdOptions();
  o.up_to = pipeline::Rung::kKernel;
  auto c = pipeline::Compile(doc.dump(), o);
  EXPECT_TRUE(c.ok()) << c.errors().front().Format();
  return std::move(*c->module);
}

inline std::pair<int64_t, int64_t> Range(int64_t first, int64_t last) {
  return {first, last};
}

inline const Kernel& OnlyOp(const Module& m, const std::string& op) {
  for (const Kernel& k : m.kernels)
    if (k.op == op) return k;
  ADD_FAILURE() << "no " << op << " kernel";
  return m.kernels.front();
}

inline Json CopyDoc(std::vector<int64_t> shape, Json op) {
  op["id"] = 1;
  op["a"] = 0;
  return {{"version", 4},
          {"nodes", {{{"id", 0}, {"op", "input"}, {"name", "x"}, {"shape", shape}}, op}},
          {"outputs", {{{"name", "y"}, {"id", 1}}}}};
}

// x [`base`] with the slice from `starts` to `stops` by `steps` replaced by s of `src`.
inline Json ScatterDoc(std::vector<int64_t> base, std::vector<int64_t> src, Json starts, Json stops,
                       Json steps) {
  return {{"version", 4},
          {"nodes",
           {{{"id", 0}, {"op", "input"}, {"name", "x"}, {"shape", base}},
            {{"id", 1}, {"op", "input"}, {"name", "s"}, {"shape", src}},
            {{"id", 2},
             {"op", "slice_scatter"},
             {"a", 0},
             {"src", 1},
             {"starts", starts},
             {"stops", stops},
             {"steps", steps}}}},
          {"outputs", {{{"name", "y"}, {"id", 2}}}}};
}

}  // namespace scellis::kernel::testing

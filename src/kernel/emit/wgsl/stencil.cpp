#include <algorithm>

#include "kernel/emit/wgsl/codegen.h"

namespace scellis::kernel::wgsl {

// One Game-of-Life step on a torus, one invocation per cell; cells are alive when > 0.5, as in
// the reference, and a NaN among the nine cells read makes the result NaN.
bool GenerateStencil(const Module& m, const Kernel& k, Generated& out) {
  if (k.kind != KernelKind::kOp || k.op != "life") return false;
  const TensorType& t = m.graph().at(k.output).type;
  // Sizes of at least 1 keep the literals valid for empty grids, which return before reading.
  int64_t rows = std::max<int64_t>(t.dims[0].size, 1), cols = std::max<int64_t>(t.dims[1].size, 1);
  out.source =
      Bindings(m, k) + kSpecialValueFns + "\n" + LinearEntry(t.elements()) + "  let r = i / " +
      U32(cols) +
      ";\n"
      "  let c = i % " +
      U32(cols) +
      ";\n"
      "  var n = 0u;\n"
      "  var nan = false;\n"
      "  for (var dr = 0u; dr < 3u; dr = dr + 1u) {\n"
      "    for (var dc = 0u; dc < 3u; dc = dc + 1u) {\n"
      "      let rr = (r + dr + " +
      U32(rows - 1) + ") % " + U32(rows) +
      ";\n"
      "      let cc = (c + dc + " +
      U32(cols - 1) + ") % " + U32(cols) +
      ";\n"
      "      let cell = in0[rr * " +
      U32(cols) +
      " + cc];\n"
      "      nan = nan || is_nan_f32(cell);\n"
      "      if (dr != 1u || dc != 1u) { n = n + select(0u, 1u, cell > 0.5); }\n"
      "    }\n"
      "  }\n"
      "  let alive = in0[i] > 0.5;\n"
      "  out[i] = select(select(0.0, 1.0, n == 3u || (alive && n == 2u)), nan_f32(), nan);\n"
      "}\n";
  out.workgroups = LinearGrid(t.elements());
  return true;
}

}  // namespace scellis::kernel::wgsl

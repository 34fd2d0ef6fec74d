// WGSL layout ops: one invocation per output element, reading the permuted input index.
#include <algorithm>

#include "kernel/emit/wgsl/codegen.h"

namespace scellis::kernel::wgsl {

bool GenerateLayout(const Module& m, const Kernel& k, Generated& out) {
  if (k.kind != KernelKind::kOp || (k.op != "transpose" && k.op != "permute" && k.op != "reshape"))
    return false;
  const webir::Node& node = m.graph().at(k.output);
  int64_t total = node.type.elements();
  std::string body;
  if (k.op == "reshape") {
    body = "  out[i] = in0[i];\n}\n";
  } else {
    std::vector<int> perm = {1, 0};
    if (k.op == "permute") {
      perm.clear();
      for (const Json& d : node.attrs["dims"]) perm.push_back(d.get<int>());
    }
    std::vector<int64_t> in_strides = RowMajorStrides(m.graph().at(k.inputs[0]).type.sizes());
    std::vector<int64_t> sizes = node.type.sizes();
    body = "  var rem = i;\n  var src = 0u;\n";
    for (int d = static_cast<int>(sizes.size()) - 1; d >= 0; --d) {
      // A size of 0 would be a constant division by zero, which WGSL rejects; an empty tensor
      // returns before reaching it, so 1 serves.
      int64_t size = std::max<int64_t>(sizes[d], 1);
      body += "  src = src + (rem % " + U32(size) + ") * " + U32(in_strides[perm[d]]) +
              ";\n  rem = rem / " + U32(size) + ";\n";
    }
    body += "  out[i] = in0[src];\n}\n";
  }
  out.source = Bindings(m, k) + "\n" + LinearEntry(total) + body;
  out.workgroups = LinearGrid(total);
  return true;
}

}  // namespace scellis::kernel::wgsl

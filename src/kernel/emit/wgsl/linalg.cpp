// WGSL matrix products. Each invocation owns one output element and accumulates along K in
// increasing order (no split-K), matching the reference's order. The usual kernel stages 16×16
// tiles of both operands in workgroup memory (one global load per element per tile instead of per
// product); a grid too large for it falls back to one invocation per element over a linear grid.
#include <algorithm>

#include "kernel/emit/wgsl/codegen.h"

namespace scellis::kernel::wgsl {

bool GenerateLinalg(const Module& m, const Kernel& k, Generated& out) {
  if (k.kind != KernelKind::kOp || k.op != "matmul") return false;
  // The operands' logical types: a folded transpose's, not its operand's.
  const webir::Node& node = m.graph().at(k.output);
  const TensorType& ta = m.graph().at(node.args[0]).type;
  const TensorType& tb = m.graph().at(node.args[1]).type;
  const TensorType& to = m.graph().at(k.output).type;
  int64_t M = ta.dims[ta.rank() - 2].size, K = ta.dims[ta.rank() - 1].size;
  int64_t N = tb.dims[tb.rank() - 1].size;
  std::vector<int64_t> out_sizes = to.sizes();
  std::vector<int64_t> batch(out_sizes.begin(), out_sizes.end() - 2);
  std::vector<int64_t> sizes_a = ta.sizes(), sizes_b = tb.sizes();
  std::vector<int64_t> sa = BroadcastStrides({sizes_a.begin(), sizes_a.end() - 2}, batch);
  std::vector<int64_t> sb = BroadcastStrides({sizes_b.begin(), sizes_b.end() - 2}, batch);

  const int64_t batches = static_cast<int64_t>(to.elements() / std::max<int64_t>(M * N, 1));
  // A folded transpose (rank 2 only) is read with swapped strides: A^T's element (r, k) is at
  // k * M + r of its operand, B^T's element (k, c) at c * K + k.
  const bool trans_a = k.transposed.size() > 0 && k.transposed[0];
  const bool trans_b = k.transposed.size() > 1 && k.transposed[1];
  auto a_at = [&](const std::string& row, const std::string& col) {
    return trans_a ? "in0[off_a + " + col + " * " + U32(M) + " + " + row + "]"
                   : "in0[off_a + " + row + " * " + U32(K) + " + " + col + "]";
  };
  auto b_at = [&](const std::string& row, const std::string& col) {
    return trans_b ? "in1[off_b + " + col + " * " + U32(K) + " + " + row + "]"
                   : "in1[off_b + " + row + " * " + U32(N) + " + " + col + "]";
  };
  const int64_t tiles_n = (N + 15) / 16, tiles_m = (M + 15) / 16;
  if (to.elements() > 0 && tiles_n <= kMaxWorkgroupsPerDim && tiles_m <= kMaxWorkgroupsPerDim &&
      batches <= kMaxWorkgroupsPerDim) {
    std::string offsets = "  var rem = wg.z;\n  var off_a = 0u;\n  var off_b = 0u;\n";
    for (int d = static_cast<int>(batch.size()) - 1; d >= 0; --d) {
      std::string size = U32(batch[d]);
      offsets += "  { let bd = rem % " + size + "; rem = rem / " + size +
                 "; off_a = off_a + bd * " + U32(sa[d] * M * K) + "; off_b = off_b + bd * " +
                 U32(sb[d] * K * N) + "; }\n";
    }
    // Rows and columns past the edge load zeros; their products add exact zeros after the last
    // real term, so every element still sums its K products in increasing order.
    out.source = "// 16x16 tiles\n" + Bindings(m, k) +
                 "var<workgroup> tile_a: array<f32, 256>;\n"
                 "var<workgroup> tile_b: array<f32, 256>;\n\n"
                 "@compute @workgroup_size(16, 16)\n"
                 "fn main(@builtin(workgroup_id) wg: vec3<u32>,\n"
                 "        @builtin(local_invocation_id) lid: vec3<u32>) {\n" +
                 offsets +
                 "  let r = wg.y * 16u + lid.y;\n"
                 "  let c = wg.x * 16u + lid.x;\n"
                 "  var acc = 0.0;\n"
                 "  for (var t = 0u; t < " +
                 U32(K) +
                 "; t = t + 16u) {\n"
                 "    let ka = t + lid.x;\n"
                 "    let kb = t + lid.y;\n"
                 "    tile_a[lid.y * 16u + lid.x] = select(0.0, " +
                 a_at("r", "ka") + ", r < " + U32(M) + " && ka < " + U32(K) +
                 ");\n"
                 "    tile_b[lid.y * 16u + lid.x] = select(0.0, " +
                 b_at("kb", "c") + ", kb < " + U32(K) + " && c < " + U32(N) +
                 ");\n"
                 "    workgroupBarrier();\n"
                 "    for (var kk = 0u; kk < 16u; kk = kk + 1u) {\n"
                 "      acc = acc + tile_a[lid.y * 16u + kk] * tile_b[kk * 16u + lid.x];\n"
                 "    }\n"
                 "    workgroupBarrier();\n"
                 "  }\n"
                 "  if (r < " +
                 U32(M) + " && c < " + U32(N) + ") { out[wg.z * " + U32(M * N) + " + r * " +
                 U32(N) +
                 " + c] = acc; }\n"
                 "}\n";
    out.workgroups = {static_cast<uint32_t>(tiles_n), static_cast<uint32_t>(tiles_m),
                      static_cast<uint32_t>(batches)};
    return true;
  }

  // Sizes of 0 would be constant divisions by zero, which WGSL rejects; an empty output returns
  // before reaching them, so 1 serves. (K = 0 is fine: the loop adds nothing and writes zeros.)
  auto nonzero = [](int64_t v) { return std::max<int64_t>(v, 1); };
  std::string batch_offsets =
      "  var rem = i / " + U32(nonzero(M * N)) + ";\n  var off_a = 0u;\n  var off_b = 0u;\n";
  for (int d = static_cast<int>(batch.size()) - 1; d >= 0; --d) {
    std::string size = U32(nonzero(batch[d]));
    batch_offsets += "  { let bd = rem % " + size + "; rem = rem / " + size +
                     "; off_a = off_a + bd * " + U32(sa[d] * M * K) + "; off_b = off_b + bd * " +
                     U32(sb[d] * K * N) + "; }\n";
  }
  out.source = Bindings(m, k) + "\n" + LinearEntry(to.elements()) + batch_offsets +
               "  let r = (i / " + U32(nonzero(N)) + ") % " + U32(nonzero(M)) +
               ";\n"
               "  let c = i % " +
               U32(nonzero(N)) +
               ";\n"
               "  var acc = 0.0;\n"
               "  for (var kk = 0u; kk < " +
               U32(K) +
               "; kk = kk + 1u) {\n"
               "    acc = acc + " +
               a_at("r", "kk") + " * " + b_at("kk", "c") +
               ";\n"
               "  }\n"
               "  out[i] = acc;\n}\n";
  out.workgroups = LinearGrid(to.elements());
  return true;
}

}  // namespace scellis::kernel::wgsl

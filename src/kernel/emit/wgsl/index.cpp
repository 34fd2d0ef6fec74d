// WGSL index ops: one invocation per output element. Indices are read as i32 and converted to u32
// as they are; the graph and the run check every index before a kernel reads it, so each lies in
// its axis. index_add and scatter_add add in the reference's order (kernel/ref/index.cpp): a's
// element, then the matching src elements in increasing index position — no atomics, so the sum
// does not depend on thread scheduling.
#include <algorithm>

#include "kernel/emit/wgsl/codegen.h"

namespace scellis::kernel::wgsl {
namespace {

// A size as a WGSL divisor: an empty output returns before any division, so 1 serves for 0.
std::string Divisor(int64_t size) {
  return U32(std::max<int64_t>(size, 1));
}

// Declares c<d> for every axis of the output, the coordinates of element i.
std::string Coordinates(const std::vector<int64_t>& sizes) {
  std::string body = "  var rem = i;\n";
  for (int d = static_cast<int>(sizes.size()) - 1; d >= 0; --d) {
    body += "  let c" + std::to_string(d) + " = rem % " + Divisor(sizes[d]) + ";\n";
    body += "  rem = rem / " + Divisor(sizes[d]) + ";\n";
  }
  return body;
}

// index_select reads the slice at in1[c_axis]; gather at in1[i]. Both read in0 at the
// coordinates with the axis one replaced.
std::string ReadAtIndexBody(const std::vector<int64_t>& out_sizes,
                            const std::vector<int64_t>& in_sizes, int axis,
                            const std::string& index_position) {
  const std::vector<int64_t> strides = RowMajorStrides(in_sizes);
  std::string body = Coordinates(out_sizes) + "  var src = 0u;\n";
  for (size_t d = 0; d < out_sizes.size(); ++d) {
    const std::string coord =
        static_cast<int>(d) == axis ? "u32(in1[" + index_position + "])" : "c" + std::to_string(d);
    body += "  src = src + " + coord + " * " + U32(strides[d]) + ";\n";
  }
  return body + "  out[i] = in0[src];\n}\n";
}

// index_add: src's slices k with in1[k] == c_axis, k rising.
std::string IndexAddBody(const std::vector<int64_t>& sizes, const std::vector<int64_t>& src_sizes,
                         int axis, int64_t count) {
  const std::vector<int64_t> strides = RowMajorStrides(src_sizes);
  std::string body = Coordinates(sizes) + "  var base = 0u;\n";
  for (size_t d = 0; d < sizes.size(); ++d)
    if (static_cast<int>(d) != axis)
      body += "  base = base + c" + std::to_string(d) + " * " + U32(strides[d]) + ";\n";
  const std::string at = "i32(c" + std::to_string(axis) + ")";
  return body + "  var acc = in0[i];\n  for (var k = 0u; k < " + U32(count) +
         "; k = k + 1u) {\n    if (in1[k] == " + at + ") { acc = acc + in2[base + k * " +
         U32(strides[axis]) + "]; }\n  }\n  out[i] = acc;\n}\n";
}

// scatter_add: the index positions q over this element (equal off the axis) with in1[q] ==
// c_axis, q's axis coordinate rising.
std::string ScatterAddBody(const std::vector<int64_t>& sizes,
                           const std::vector<int64_t>& index_sizes, int axis) {
  const std::vector<int64_t> strides = RowMajorStrides(index_sizes);
  std::string body = Coordinates(sizes) + "  var base = 0u;\n  var inside = true;\n";
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (static_cast<int>(d) == axis) continue;
    const std::string c = "c" + std::to_string(d);
    body += "  inside = inside && " + c + " < " + U32(index_sizes[d]) + ";\n";
    body += "  base = base + " + c + " * " + U32(strides[d]) + ";\n";
  }
  const std::string at = "i32(c" + std::to_string(axis) + ")";
  return body + "  var acc = in0[i];\n  if (inside) {\n    for (var k = 0u; k < " +
         U32(index_sizes[axis]) + "; k = k + 1u) {\n      let q = base + k * " +
         U32(strides[axis]) + ";\n      if (in1[q] == " + at +
         ") { acc = acc + in2[q]; }\n    }\n  }\n  out[i] = acc;\n}\n";
}

}  // namespace

bool IsIndexOp(const std::string& op) {
  return op == "index_select" || op == "gather" || op == "index_add" || op == "scatter_add";
}

bool GenerateIndex(const Module& m, const Kernel& k, Generated& out) {
  if (k.kind != KernelKind::kOp || !IsIndexOp(k.op)) return false;
  const webir::Node& node = m.graph().at(k.output);
  const int axis = node.attrs["axis"].get<int>();
  const int64_t total = node.type.elements();
  const std::vector<int64_t> sizes = node.type.sizes();
  const std::vector<int64_t> a_sizes = m.graph().at(k.inputs[0]).type.sizes();
  std::string body;
  if (k.op == "index_select") {
    body = ReadAtIndexBody(sizes, a_sizes, axis, "c" + std::to_string(axis));
  } else if (k.op == "gather") {
    body = ReadAtIndexBody(sizes, a_sizes, axis, "i");
  } else if (k.op == "index_add") {
    body = IndexAddBody(sizes, m.graph().at(k.inputs[2]).type.sizes(), axis,
                        m.graph().at(k.inputs[1]).type.elements());
  } else {
    body = ScatterAddBody(sizes, m.graph().at(k.inputs[1]).type.sizes(), axis);
  }
  out.source = Bindings(m, k) + "\n" + LinearEntry(total) + body;
  out.workgroups = LinearGrid(total);
  return true;
}

}  // namespace scellis::kernel::wgsl

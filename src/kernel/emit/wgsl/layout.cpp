// WGSL layout ops: one invocation per output element, reading the permuted, strided or scattered
// input index. Index arithmetic is u32 only: every coordinate is formed so it never goes below 0.
#include <algorithm>

#include "kernel/emit/wgsl/codegen.h"

namespace scellis::kernel::wgsl {
namespace {

// A size as a WGSL divisor. A size of 0 would be a constant division by zero, which WGSL rejects;
// an empty tensor returns before reaching it, so 1 serves.
std::string Divisor(int64_t size) {
  return U32(std::max<int64_t>(size, 1));
}

// slice and flip: output coordinate x of axis d reads input coordinate start + x * step.
std::string StridedViewBody(const std::vector<int64_t>& out_sizes,
                            const std::vector<int64_t>& in_sizes, const std::vector<int64_t>& start,
                            const std::vector<int64_t>& step) {
  // An empty output runs no element; its starts may be -1 (flip of an empty axis), which no u32
  // literal holds.
  for (int64_t n : out_sizes)
    if (n == 0) return "  out[i] = in0[i];\n}\n";
  std::vector<int64_t> in_strides = RowMajorStrides(in_sizes);
  std::string body = "  var rem = i;\n  var src = 0u;\n";
  for (int d = static_cast<int>(out_sizes.size()) - 1; d >= 0; --d) {
    std::string x = "(rem % " + Divisor(out_sizes[d]) + ")";
    std::string coord = step[d] > 0 ? U32(start[d]) + " + " + x + " * " + U32(step[d])
                                    : U32(start[d]) + " - " + x + " * " + U32(-step[d]);
    body += "  src = src + (" + coord + ") * " + U32(in_strides[d]) + ";\n  rem = rem / " +
            Divisor(out_sizes[d]) + ";\n";
  }
  return body + "  out[i] = in0[src];\n}\n";
}

// slice_scatter: src's element where the output coordinate lies on the slice of every axis,
// else a's. A coordinate c is on the slice when it is start + q * step for 0 <= q < count.
std::string SliceScatterBody(const std::vector<int64_t>& sizes,
                             const std::vector<int64_t>& src_sizes,
                             const std::vector<int64_t>& start, const std::vector<int64_t>& step) {
  // An empty slice replaces nothing. in1 is still named, so the shader's binding layout keeps
  // the binding the executor binds.
  for (int64_t n : src_sizes)
    if (n == 0) return "  _ = arrayLength(&in1);\n  out[i] = in0[i];\n}\n";
  std::vector<int64_t> src_strides = RowMajorStrides(src_sizes);
  std::string body = "  var rem = i;\n  var src = 0u;\n  var inside = true;\n";
  for (int d = static_cast<int>(sizes.size()) - 1; d >= 0; --d) {
    std::string c = "c" + std::to_string(d);
    body += "  let " + c + " = rem % " + Divisor(sizes[d]) + ";\n  rem = rem / " +
            Divisor(sizes[d]) + ";\n";
    // The distance from start in the step's direction; only read once it cannot underflow.
    std::string from_start, ahead;
    if (step[d] > 0) {
      ahead = c + " >= " + U32(start[d]);
      from_start = "(" + c + " - " + U32(start[d]) + ")";
    } else {
      ahead = c + " <= " + U32(start[d]);
      from_start = "(" + U32(start[d]) + " - " + c + ")";
    }
    std::string stride = U32(step[d] > 0 ? step[d] : -step[d]);
    body += "  inside = inside && " + ahead + " && " + from_start + " % " + stride + " == 0u && " +
            from_start + " / " + stride + " < " + U32(src_sizes[d]) + ";\n";
    body += "  if (inside) { src = src + (" + from_start + " / " + stride + ") * " +
            U32(src_strides[d]) + "; }\n";
  }
  return body +
         "  if (inside) {\n    out[i] = in1[src];\n  } else {\n    out[i] = in0[i];\n  }\n}\n";
}

// The pad value as a literal of the output's storage type (bool is stored as u32 0/1).
std::string StorageLiteral(DType t, double v) {
  switch (t) {
    case DType::kF32:
      return F32(v);
    case DType::kF16:
      return "f16(" + F32(v) + ")";
    case DType::kI32:
      return "i32(" + std::to_string(static_cast<int64_t>(v)) + ")";
    case DType::kU32:
    case DType::kBool:
      return U32(static_cast<int64_t>(v));
    case DType::kQ4K:  // no layout op takes blocks (the ops table)
    case DType::kQ6K:
      break;
  }
  return F32(v);
}

// pad: a's element where the coordinate lies inside a's place on every axis, else the value.
std::string PadBody(const std::vector<int64_t>& sizes, const std::vector<int64_t>& in_sizes,
                    const std::vector<int64_t>& before, const std::string& value) {
  for (int64_t n : in_sizes)
    if (n == 0) return "  _ = arrayLength(&in0);\n  out[i] = " + value + ";\n}\n";
  std::vector<int64_t> in_strides = RowMajorStrides(in_sizes);
  std::string body = "  var rem = i;\n  var src = 0u;\n  var inside = true;\n";
  for (int d = static_cast<int>(sizes.size()) - 1; d >= 0; --d) {
    std::string c = "c" + std::to_string(d);
    body += "  let " + c + " = rem % " + Divisor(sizes[d]) + ";\n  rem = rem / " +
            Divisor(sizes[d]) + ";\n";
    body += "  inside = inside && " + c + " >= " + U32(before[d]) + " && " + c + " - " +
            U32(before[d]) + " < " + U32(in_sizes[d]) + ";\n";
    body += "  if (inside) { src = src + (" + c + " - " + U32(before[d]) + ") * " +
            U32(in_strides[d]) + "; }\n";
  }
  return body + "  if (inside) {\n    out[i] = in0[src];\n  } else {\n    out[i] = " + value +
         ";\n  }\n}\n";
}

// concat and stack: output coordinate c of the axis lies in one entry's run [offset, offset +
// length); that entry is read at (outer * length + c - offset) * inner + x (see the reference).
// An entry empty along the axis holds no run, but is still named so the shader's binding layout
// keeps the binding the executor binds.
std::string JoinListBody(const std::vector<int64_t>& sizes, size_t axis,
                         const std::vector<int64_t>& lengths) {
  int64_t inner = 1;
  for (size_t d = axis + 1; d < sizes.size(); ++d) inner *= sizes[d];
  const int64_t along = sizes[axis];
  std::string body = "  let x = i % " + Divisor(inner) + ";\n  let c = (i / " + Divisor(inner) +
                     ") % " + Divisor(along) + ";\n  let o = i / " + Divisor(inner) + " / " +
                     Divisor(along) + ";\n";
  std::string chain;
  int64_t offset = 0;
  for (size_t k = 0; k < lengths.size(); ++k) {
    const std::string in = "in" + std::to_string(k);
    if (lengths[k] == 0) {
      body += "  _ = arrayLength(&" + in + ");\n";
      continue;
    }
    const std::string read = "out[i] = " + in + "[(o * " + U32(lengths[k]) + " + c - " +
                             U32(offset) + ") * " + U32(inner) + " + x];";
    offset += lengths[k];
    chain += (chain.empty() ? "  if (c < " : " else if (c < ") + U32(offset) + ") {\n    " + read +
             "\n  }";
  }
  return body + chain + "\n}\n";
}

std::vector<int64_t> IntsOf(const Json& list) {
  std::vector<int64_t> v;
  for (const Json& e : list) v.push_back(e.get<int64_t>());
  return v;
}

}  // namespace

bool IsLayoutOp(const std::string& op) {
  return op == "transpose" || op == "permute" || op == "reshape" || op == "slice" ||
         op == "slice_scatter" || op == "flip" || op == "pad" || op == "concat" || op == "stack";
}

bool GenerateLayout(const Module& m, const Kernel& k, Generated& out) {
  if (k.kind != KernelKind::kOp || !IsLayoutOp(k.op)) return false;
  const webir::Node& node = m.graph().at(k.output);
  int64_t total = node.type.elements();
  std::vector<int64_t> sizes = node.type.sizes();
  std::string body;
  if (k.op == "slice") {
    body = StridedViewBody(sizes, m.graph().at(k.inputs[0]).type.sizes(),
                           IntsOf(node.attrs["starts"]), IntsOf(node.attrs["steps"]));
  } else if (k.op == "flip") {
    std::vector<int64_t> start(sizes.size(), 0), step(sizes.size(), 1);
    for (const Json& a : node.attrs["axes"]) {
      size_t axis = a.get<size_t>();
      start[axis] = sizes[axis] - 1;
      step[axis] = -1;
    }
    body = StridedViewBody(sizes, sizes, start, step);
  } else if (k.op == "slice_scatter") {
    body = SliceScatterBody(sizes, m.graph().at(k.inputs[1]).type.sizes(),
                            IntsOf(node.attrs["starts"]), IntsOf(node.attrs["steps"]));
  } else if (k.op == "pad") {
    std::vector<int64_t> before;
    for (const Json& p : node.attrs["pads"]) before.push_back(p[0].get<int64_t>());
    body = PadBody(sizes, m.graph().at(k.inputs[0]).type.sizes(), before,
                   StorageLiteral(node.type.dtype, node.attrs["value"].get<double>()));
  } else if (k.op == "concat" || k.op == "stack") {
    const size_t axis = node.attrs["axis"].get<size_t>();
    std::vector<int64_t> lengths;
    for (int in : k.inputs)
      lengths.push_back(k.op == "stack" ? 1 : m.graph().at(in).type.sizes()[axis]);
    if (total == 0) {  // nothing to write; every binding still named
      for (size_t j = 0; j < k.inputs.size(); ++j)
        body += "  _ = arrayLength(&in" + std::to_string(j) + ");\n";
      body += "  _ = arrayLength(&out);\n}\n";
    } else {
      body = JoinListBody(sizes, axis, lengths);
    }
  } else if (k.op == "reshape") {
    body = "  out[i] = in0[i];\n}\n";
  } else {
    std::vector<int> perm = {1, 0};
    if (k.op == "permute") {
      perm.clear();
      for (const Json& d : node.attrs["dims"]) perm.push_back(d.get<int>());
    }
    std::vector<int64_t> in_strides = RowMajorStrides(m.graph().at(k.inputs[0]).type.sizes());
    body = "  var rem = i;\n  var src = 0u;\n";
    for (int d = static_cast<int>(sizes.size()) - 1; d >= 0; --d) {
      body += "  src = src + (rem % " + Divisor(sizes[d]) + ") * " + U32(in_strides[perm[d]]) +
              ";\n  rem = rem / " + Divisor(sizes[d]) + ";\n";
    }
    body += "  out[i] = in0[src];\n}\n";
  }
  out.source = Bindings(m, k) + "\n" + LinearEntry(total) + body;
  out.workgroups = LinearGrid(total);
  return true;
}

Generated CopyTile(const Module& m, const Kernel& k, const Tiling& tiling, const Tile& t,
                   const std::vector<int64_t>& offsets) {
  // One invocation per element of the tile's box, (a, b, c) along rows, columns and depth (and of
  // a tile of several boxes of a batch, g the box); each binding's element is its offset plus the
  // box's coordinates through its strides (and the box's coordinates along the batch dims through
  // theirs).
  const TileSpace& sp = SpaceOf(tiling.space, t);
  const int64_t box = t.rows * t.cols * t.depth;
  const bool boxes = t.batch_count > 1;
  // Terms of one binding's element, added, then subtracted: a negative stride (a flip, a slice's
  // negative step, a batch's start below the tile's first) is subtracted after every positive
  // term is added, so each partial sum is at least the element's own index and the u32
  // arithmetic never goes below 0.
  auto at = [&](int b) {
    const TileStrides& st = sp.layouts[static_cast<size_t>(b)];
    int64_t start = offsets[static_cast<size_t>(b)];
    // A tile of one box of a batch: the box's start is a constant of the tile.
    if (sp.batches > 1 && !boxes) start += BatchOffset(sp, b, t.batch0);
    std::vector<std::pair<std::string, int64_t>> terms = {{"", start}};
    const char* coord[3] = {"a", "b", "c"};
    for (int axis = 0; axis < 3; ++axis) terms.push_back({coord[axis], st[axis]});
    if (boxes) {
      int64_t inner = 1;  // boxes of the dims inside dim d
      for (size_t d = sp.batch_dims.size(); d-- > 0;) {
        terms.push_back({"((g / " + Divisor(inner) + ") % " + Divisor(sp.batch_dims[d]) + ")",
                         sp.batch_strides[static_cast<size_t>(b)][d]});
        inner *= sp.batch_dims[d];
      }
    }
    auto term = [](const std::pair<std::string, int64_t>& x) {
      const std::string n = U32(x.second < 0 ? -x.second : x.second);
      return x.first.empty() ? n : x.first + " * " + n;
    };
    std::string e = U32(std::max<int64_t>(start, 0));
    for (size_t j = 1; j < terms.size(); ++j)
      if (terms[j].second > 0) e += " + " + term(terms[j]);
    for (size_t j = 0; j < terms.size(); ++j)
      if (terms[j].second < 0) e += " - " + term(terms[j]);
    return e;
  };
  // The input the tile moves: the only one, or (a concat's, stack's or slice_scatter's part) its
  // part's; every other input is still named, so the shader's binding layout keeps the binding the
  // tile binds. A pad's fill box reads no input and writes the pad value.
  const int read = sp.copy_input;
  std::string named;
  for (size_t j = 0; j < k.inputs.size(); ++j)
    if (static_cast<int>(j) != read) named += "  _ = arrayLength(&in" + std::to_string(j) + ");\n";
  const webir::Node& node = m.graph().at(k.output);
  const std::string value =
      read >= 0 ? "in" + std::to_string(read) + "[" + at(read) + "]"
                : StorageLiteral(node.type.dtype, node.attrs["value"].get<double>());
  const std::string j = boxes ? "(i % " + Divisor(box) + ")" : "i";
  std::string coords = "  let c = " + j + " % " + Divisor(t.depth) + ";\n  let b = (" + j + " / " +
                       Divisor(t.depth) + ") % " + Divisor(t.cols) + ";\n  let a = " + j + " / " +
                       Divisor(t.depth * t.cols) + ";\n";
  if (boxes) coords += "  let g = " + U32(t.batch0) + " + i / " + Divisor(box) + ";\n";
  Generated out;
  const int64_t count = box * t.batch_count;
  out.source = Bindings(m, k) + "\n" + LinearEntry(count) + named + coords + "  out[" +
               at(static_cast<int>(k.inputs.size())) + "] = " + value + ";\n}\n";
  out.workgroups = LinearGrid(count);
  return out;
}

}  // namespace scellis::kernel::wgsl

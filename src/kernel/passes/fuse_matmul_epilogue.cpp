#include <algorithm>
#include <set>

#include "kernel/passes/passes.h"

namespace scellis::kernel {
namespace {

// WebGPU guarantees 8 storage buffers per shader stage; the fused kernel binds the matmul's two
// operands, the epilogue's other inputs and the output.
constexpr size_t kMaxBindings = 8;

bool F32OrBool(DType t) {
  return t == DType::kF32 || t == DType::kBool;
}

// Whether elementwise kernel `e` can be the epilogue of matmul kernel `mm` whose output it reads
// as its input `x`: the same shape as the matmul's output, read at each element's own index, by
// steps over f32 (or bool) values alone, with an f32 result, binding no more than WebGPU allows.
// Positional steps (shift, butterfly, arange, an inlined uniform) read other indices or need the
// element's index: not in an epilogue.
bool FitsEpilogue(const Module& m, const Kernel& mm, const Kernel& e, int x) {
  const webir::Graph& g = m.graph();
  const TensorType& mt = g.at(mm.output).type;
  const TensorType& et = g.at(e.output).type;
  if (mt.dtype != DType::kF32 || et.dtype != DType::kF32 || !mt.SameShape(et)) return false;
  if (mm.inputs.size() + e.inputs.size() > kMaxBindings) return false;  // - x + output
  for (const ExprStep& s : e.expr)
    if (IsPermutedLoad(s.op) || IsIndexedStep(s.op) || !F32OrBool(g.at(s.node).type.dtype))
      return false;
  for (int in : e.inputs)
    if (!F32OrBool(g.at(in).type.dtype)) return false;
  // A matmul over the binding cap runs in tiles, which take no epilogue: it stays unfused, and
  // the elementwise kernel tiles on its own.
  if (m.binding_cap > 0) {
    auto over = [&](int node) {
      return static_cast<uint64_t>(g.at(node).type.bytes()) > m.binding_cap;
    };
    if (over(mm.output) || std::any_of(mm.inputs.begin(), mm.inputs.end(), over) ||
        std::any_of(e.inputs.begin(), e.inputs.end(), over))
      return false;
  }
  return !ReadsShifted(e, x);
}

// `mm` with `e` (which reads mm's output as its input `x`) as its epilogue.
Kernel Fuse(const Kernel& mm, const Kernel& e, int x) {
  Kernel k = mm;
  ExprStep head;
  head.op = "matmul";
  head.node = mm.output;
  head.operands = {0, 1};
  k.expr = {head};
  std::vector<int> input_of(e.inputs.size(), -1);
  for (size_t i = 0; i < e.inputs.size(); ++i) {
    if (static_cast<int>(i) == x) continue;
    input_of[i] = static_cast<int>(k.inputs.size());
    k.inputs.push_back(e.inputs[i]);
  }
  for (ExprStep s : e.expr) {
    for (int& o : s.operands)
      o = IsStepRef(o) ? StepRef(StepOf(o) + 1) : o == x ? StepRef(0) : input_of[o];
    k.expr.push_back(std::move(s));
  }
  k.nodes.insert(k.nodes.end(), e.nodes.begin(), e.nodes.end());
  k.output = e.output;
  return k;
}

// In a repeated graph, whether each value changes between iterations (a carried input, or
// computed from one), as hoist-loop-invariants finds it: a matmul that does not must not take an
// epilogue that does, or the fused kernel would redo the invariant product every iteration.
std::vector<bool> Varies(const Module& m) {
  const webir::Graph& g = m.graph();
  std::vector<bool> varies(g.nodes.size(), false);
  if (g.repeat <= 1) return varies;
  for (const webir::Carry& c : g.carries) varies[c.to] = true;
  std::vector<bool> carried_out(g.nodes.size(), false);
  for (const webir::Carry& c : g.carries) carried_out[c.from] = true;
  for (const Kernel& k : m.kernels) {
    bool v = false;
    for (int o : k.Outputs()) v = v || carried_out[o];
    for (int in : k.inputs) v = v || varies[in];
    for (int o : k.Outputs()) varies[o] = v;
  }
  return varies;
}

}  // namespace

Status FuseMatmulEpilogue(Module& m) {
  const webir::Graph& g = m.graph();
  std::set<int> outputs;
  for (const webir::Output& o : g.outputs) outputs.insert(o.node);
  // Kernels reading each value, once per kernel.
  std::vector<int> readers(g.nodes.size(), 0);
  for (const Kernel& k : m.kernels) {
    std::set<int> read(k.inputs.begin(), k.inputs.end());
    for (int in : read) ++readers[in];
  }
  std::vector<int> producer(g.nodes.size(), -1);
  for (size_t i = 0; i < m.kernels.size(); ++i) producer[m.kernels[i].output] = static_cast<int>(i);

  const std::vector<bool> varies = Varies(m);
  std::vector<bool> removed(m.kernels.size(), false);
  for (size_t j = 0; j < m.kernels.size(); ++j) {
    Kernel& e = m.kernels[j];
    if (e.kind != KernelKind::kElementwise) continue;
    for (size_t x = 0; x < e.inputs.size(); ++x) {
      const int value = e.inputs[x];
      const int p = producer[value];
      if (p < 0 || removed[p]) continue;
      const Kernel& mm = m.kernels[p];
      // The matmul's result gets no buffer: nothing else may read it.
      if (mm.kind != KernelKind::kOp || mm.op != "matmul" || mm.HasEpilogue() ||
          readers[value] != 1 || outputs.count(value) || varies[value] != varies[e.output])
        continue;
      if (!FitsEpilogue(m, mm, e, static_cast<int>(x))) continue;
      // The fused kernel takes the epilogue's place: everything it reads is written by then, and
      // only the epilogue read the matmul's result in between.
      e = Fuse(mm, e, static_cast<int>(x));
      removed[p] = true;
      break;
    }
  }
  EraseKernels(m, removed);
  return Status::Ok();
}

}  // namespace scellis::kernel

#include <algorithm>
#include <cstdlib>

#include "base/sha256.h"
#include "kernel/emit/wgsl/codegen.h"
#include "kernel/passes/passes.h"

namespace scellis::kernel {
namespace {

// A 32×32 tile with a halo of at most 8 keeps the block (48×48 f32, 9 KiB) within WebGPU's
// guaranteed 16 KiB of workgroup memory, and recomputes at most (48² − 32²)/32² ≈ 1.25 extra
// cells per output cell in the first iteration, fewer in each later one.
constexpr int64_t kTile = 32;
constexpr int64_t kMaxHalo = 8;
constexpr int64_t kMaxSteps = 8;

// Why the body kernel `k` cannot be blocked ("" when it can), with its carried input, the
// radius its carried value is read at, and the boundary of those reads.
std::string Blockable(const Module& m, const Kernel& k, int carried_node, wgsl::BlockShape& b) {
  const webir::Graph& g = m.graph();
  const TensorType& out = g.at(k.output).type;
  if (out.rank() != 2) return "the loop body's grid has rank " + std::to_string(out.rank()) + ", not 2";
  if (out.dtype != DType::kF32) return "the loop body computes " + std::string(DTypeName(out.dtype));
  auto carry = std::find(k.inputs.begin(), k.inputs.end(), carried_node);
  if (carry == k.inputs.end()) return "the loop body's kernel does not read its carried value";
  b.carry = static_cast<int>(carry - k.inputs.begin());
  if (k.kind == KernelKind::kOp && k.op == "life") {
    b.radius = 1;
    b.boundary = "wrap";
    return "";
  }
  if (k.kind != KernelKind::kElementwise)
    return "the loop body is a " + k.op + " kernel, not a stencil";
  for (int in : k.inputs)
    if (g.at(in).type.dtype != DType::kF32)
      return "the loop body reads %" + g.at(in).name + " of dtype " + DTypeName(g.at(in).type.dtype);
  std::string boundary;
  for (const ExprStep& e : k.expr) {
    // A tile's halo holds the carried value's neighbours by offset, not its partners by index,
    // nor the indices a ramp reads outside the grid.
    if (e.op == "butterfly" || IsIndexedStep(e.op))
      return "the loop body reads by " + e.op + ", which a tile with a halo cannot";
    if (e.op != "shift" || e.operands.at(0) != b.carry) continue;
    const webir::Node& n = g.at(e.node);
    const std::string bnd = n.attrs.at("boundary").get<std::string>();
    if (!boundary.empty() && bnd != boundary)
      return "the carried value is shifted with both `" + boundary + "` and `" + bnd +
             "` boundaries";
    boundary = bnd;
    for (int64_t s : n.attrs.at("shifts").get<std::vector<int64_t>>())
      b.radius = std::max<int64_t>(b.radius, std::llabs(s));
  }
  b.boundary = boundary.empty() ? "zero" : boundary;
  if (b.radius > kMaxHalo / 2)
    return "the carried value is shifted by " + std::to_string(b.radius) + " cells, over " +
           std::to_string(kMaxHalo / 2);
  return "";
}

}  // namespace

Status BlockTemporally(Module& m) {
  m.not_blocked_because.clear();
  const webir::Graph& g = m.graph();
  const int64_t repeat = g.repeat;
  if (repeat <= 1) return Status::Ok();
  // Hoisted kernels run once before the loop; the body is what remains.
  const int hoisted = m.HoistedKernels();
  const size_t body = m.kernels.size() - hoisted;
  if (body != 1) {
    m.not_blocked_because = "the loop body is " + std::to_string(body) +
                            " kernels; only a one-kernel body is blocked";
    return Status::Ok();
  }
  Kernel& k = m.kernels[hoisted];
  if (g.carries.size() != 1 || g.carries[0].from != k.output) {
    m.not_blocked_because = "the loop body's kernel is not the one carried value's update";
    return Status::Ok();
  }
  wgsl::BlockShape b;
  b.tile = kTile;
  m.not_blocked_because = Blockable(m, k, g.carries[0].to, b);
  if (!m.not_blocked_because.empty()) return Status::Ok();
  // The most iterations per dispatch that divide the loop (so every dispatch is the same kernel)
  // and whose halo fits the block.
  const int64_t most = std::min(kMaxSteps, b.radius ? kMaxHalo / b.radius : kMaxSteps);
  for (int64_t steps = most; steps >= 2; --steps) {
    if (repeat % steps == 0) {
      b.steps = steps;
      break;
    }
  }
  if (b.steps < 2) {
    m.not_blocked_because = "no count of iterations from 2 to " + std::to_string(most) +
                            " divides the loop's " + std::to_string(repeat);
    return Status::Ok();
  }
  b.halo = b.radius * b.steps;
  wgsl::Generated gen = wgsl::TemporalBlock(m, k, b);
  EmittedSource* src = nullptr;
  for (EmittedSource& s : k.sources)
    if (s.target == kWgslBlockedTarget) src = &s;
  if (!src) src = &k.sources.emplace_back(EmittedSource{kWgslBlockedTarget, "", "main", ""});
  src->source = std::move(gen.source);
  src->source_hash = Sha256Hex(src->source);
  k.blocking = {b.steps, b.tile, b.halo, gen.workgroups};
  return Status::Ok();
}

}  // namespace scellis::kernel

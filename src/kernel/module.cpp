#include "kernel/module.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>

#include "base/sha256.h"

namespace scellis::kernel {

std::vector<int> Kernel::Outputs() const {
  std::vector<int> all = {output};
  all.insert(all.end(), extra_outputs.begin(), extra_outputs.end());
  return all;
}

int Kernel::StorageBindings() const {
  int n = 0;
  for (size_t i = 0; i < inputs.size(); ++i) n += UniformInput(i) ? 0 : 1;
  for (size_t j = 0; j <= extra_outputs.size(); ++j) n += InPlaceOf(j) >= 0 ? 0 : 1;
  return n;
}

bool IsOptimizerOp(const Module& m, const std::string& op) {
  const ops::OpSpec* spec = m.graph().ops->Find(op);
  return spec && spec->kind == ops::OpKind::kOptimizer;
}

std::vector<std::vector<size_t>> OptimizerParts(const Module& m, const Kernel& k) {
  std::vector<std::vector<size_t>> parts;
  const std::vector<int> outs = k.Outputs();
  for (size_t j = 0; j < outs.size(); ++j) {
    if (j == 0 || m.graph().at(outs[j]).args != m.graph().at(outs[j - 1]).args)
      parts.emplace_back();
    parts.back().push_back(j);
  }
  return parts;
}

const EmittedSource* Kernel::Source(std::string_view target) const {
  for (const EmittedSource& s : sources)
    if (s.target == target) return &s;
  return nullptr;
}

const EmittedSource& Kernel::Wgsl() const {
  static const EmittedSource kNone{kWgslTarget, "", "main", ""};
  const EmittedSource* s = Source(kWgslTarget);
  return s ? *s : kNone;
}

EmittedSource& Kernel::Wgsl() {
  for (EmittedSource& s : sources)
    if (s.target == kWgslTarget) return s;
  sources.push_back({kWgslTarget, "", "main", ""});
  return sources.back();
}

void NameKernels(Module& m) {
  for (size_t i = 0; i < m.kernels.size(); ++i) {
    Kernel& k = m.kernels[i];
    k.id = static_cast<int>(i);
    std::string title = k.op;
    if (k.kind == KernelKind::kElementwise) {
      title = "fused";
      for (const ExprStep& s : k.expr)
        if (s.op != "full") title += "_" + s.op;
    }
    // A kernel of row stages after its stages, in turn ("k2_cross_entropy_cross_entropy_grad_...").
    if (k.kind == KernelKind::kRowStages) {
      title.clear();
      for (const Kernel& st : k.stages)
        title += (title.empty() ? "" : "_") + st.name.substr(st.name.find('_') + 1);
    }
    for (size_t s = 1; k.HasEpilogue() && s < k.expr.size(); ++s)
      if (k.expr[s].op != "full") title += "_" + k.expr[s].op;
    // An optimizer kernel over several parameters is named after the first's outputs and the
    // count ("k6_adam_update_adam_m_adam_v_x2"); a matmul updating parameters after its update
    // ("k4_matmul_adam_update_adam_m_adam_v_x2").
    const bool optimizer = k.kind == KernelKind::kOp && IsOptimizerOp(m, k.op);
    const std::vector<std::vector<size_t>> parts = optimizer || k.UpdatesParameters()
                                                       ? OptimizerParts(m, k)
                                                       : std::vector<std::vector<size_t>>{};
    const std::vector<int> outs = k.Outputs();
    const size_t named = parts.size() > 1 ? parts.front().size() : outs.size();
    for (size_t j = optimizer ? 1 : 0; k.kind == KernelKind::kOp && j < named; ++j)
      if (j || k.UpdatesParameters()) title += "_" + m.graph().at(outs[j]).op;
    if (parts.size() > 1) title += "_x" + std::to_string(parts.size());
    k.name = "k" + std::to_string(k.id) + "_" + title;
  }
}

void EraseKernels(Module& m, const std::vector<bool>& erased) {
  std::vector<Kernel> kept;
  for (size_t i = 0; i < m.kernels.size(); ++i)
    if (i >= erased.size() || !erased[i]) kept.push_back(std::move(m.kernels[i]));
  m.kernels = std::move(kept);
  NameKernels(m);
}

bool IsPermutedLoad(std::string_view op) {
  return op == "shift" || op == "butterfly";
}

bool IsIndexedStep(std::string_view op) {
  return op == "arange" || op == "uniform";
}

bool IsFreeStep(std::string_view op) {
  return op == "full" || op == "arange";
}

Kernel EpilogueKernel(const Kernel& matmul) {
  Kernel e;
  e.kind = KernelKind::kElementwise;
  e.op = "fused";
  e.name = matmul.name + "_epilogue";
  e.output = matmul.output;
  e.inputs = {matmul.OpNode()};
  e.inputs.insert(e.inputs.end(), matmul.inputs.begin() + 2, matmul.inputs.end());
  for (size_t s = 1; s < matmul.expr.size(); ++s) {
    ExprStep step = matmul.expr[s];
    for (int& o : step.operands)
      o = !IsStepRef(o) ? o - 1 : StepOf(o) == 0 ? 0 : StepRef(StepOf(o) - 1);
    e.nodes.push_back(step.node);
    e.expr.push_back(std::move(step));
  }
  return e;
}

size_t RowGatherIndexInputs(const Kernel& k) {
  std::set<int> indices;
  for (const Kernel::RowGather& g : k.row_gathers) indices.insert(g.index);
  return indices.size();
}

Kernel UnfoldRowGathers(const Kernel& k) {
  if (k.row_gathers.empty()) return k;
  Kernel u = k;
  for (const Kernel::RowGather& g : k.row_gathers) u.inputs[g.input] = g.node;
  const size_t read = k.inputs.size() - RowGatherIndexInputs(k);
  u.inputs.resize(read);
  u.uniform_inputs.resize(std::min(u.uniform_inputs.size(), read));
  if (std::none_of(u.uniform_inputs.begin(), u.uniform_inputs.end(), [](bool b) { return b; }))
    u.uniform_inputs.clear();
  if (u.transposed.size() > read) u.transposed.resize(read);
  u.row_gathers.clear();
  return u;
}

Kernel UpdateKernel(const Module& m, const Kernel& matmul) {
  Kernel u;
  u.kind = KernelKind::kOp;
  u.op = m.graph().at(matmul.output).op;
  u.name = matmul.name + "_update";
  u.output = matmul.output;
  u.extra_outputs = matmul.extra_outputs;
  u.nodes = matmul.Outputs();
  // The reference's update reads its first part's arguments in their order: they come first, then
  // the other parameters' and the matmul's own operands, which no part reads.
  auto add = [&u](int node) {
    if (node >= 0 && std::find(u.inputs.begin(), u.inputs.end(), node) == u.inputs.end())
      u.inputs.push_back(node);
  };
  for (int a : m.graph().at(matmul.output).args) add(a);
  for (int in : matmul.inputs) add(in);
  add(matmul.update_product);
  add(matmul.update_column_sums);
  auto index_in_update = [&](int input) {
    return static_cast<int>(std::find(u.inputs.begin(), u.inputs.end(), matmul.inputs[input]) -
                            u.inputs.begin());
  };
  for (size_t j = 0; j < matmul.in_place.size(); ++j)
    u.in_place.push_back(matmul.in_place[j] < 0 ? -1 : index_in_update(matmul.in_place[j]));
  if (!matmul.uniform_inputs.empty()) {
    u.uniform_inputs.assign(u.inputs.size(), false);
    for (size_t i = 0; i < matmul.inputs.size(); ++i)
      if (matmul.UniformInput(i)) u.uniform_inputs[index_in_update(static_cast<int>(i))] = true;
  }
  return u;
}

bool Module::OverBindingCap(const std::vector<int>& nodes) const {
  return binding_cap > 0 && std::any_of(nodes.begin(), nodes.end(), [&](int n) {
           return static_cast<uint64_t>(graph().at(n).type.bytes()) > binding_cap;
         });
}

bool BindsOverCap(const Module& m, const Kernel& k) {
  std::vector<int> nodes = k.inputs;
  for (int o : k.Outputs()) nodes.push_back(o);
  return m.OverBindingCap(nodes);
}

int Module::HoistedKernels() const {
  int n = 0;
  while (n < static_cast<int>(kernels.size()) && kernels[n].hoisted) ++n;
  return n;
}

bool ReadsShifted(const Kernel& k, int input) {
  for (const ExprStep& s : k.expr)
    if (IsPermutedLoad(s.op) && s.operands.at(0) == input) return true;
  return false;
}

std::optional<int64_t> ReadPeriod(const Module& m, const Kernel& k, int input) {
  if (ReadsShifted(k, input)) return std::nullopt;
  const std::vector<int64_t> out = m.graph().at(k.output).type.sizes();
  const std::vector<int64_t> strides =
      BroadcastStrides(m.graph().at(k.inputs[input]).type.sizes(), out);
  // From the last dimension, the input's strides are the output's row-major ones for as long as
  // it spans the output; before that it must be broadcast (stride 0). Size-1 dimensions take
  // either, since they never move the index.
  int64_t period = 1;
  int d = static_cast<int>(out.size()) - 1;
  for (; d >= 0; --d) {
    if (out[d] == 1) continue;
    if (strides[d] != period) break;
    period *= out[d];
  }
  for (; d >= 0; --d)
    if (out[d] != 1 && strides[d] != 0) return std::nullopt;
  return period;
}

Result<Module> FromWebir(std::shared_ptr<const webir::Graph> g) {
  SCELLIS_TRY(webir::Verify(*g));
  Module m;
  m.graph_ref = std::move(g);
  return m;
}

int64_t MatmulSchedule::WorkgroupBytes() const {
  if (kind == Kind::kPerElement) return 0;
  // The one-output kernel staging K deeper than its tile pads each of A's rows by 16 floats, so
  // the two rows a warp reads lie in different banks (wgsl::GenerateLinalg).
  const int64_t row_a = block_m == 1 && block_n == 1 && tile_k > tile_m ? tile_k + 16 : tile_k;
  return int64_t{4} * (tile_m * row_a + tile_k * tile_n);
}

std::string MatmulSchedule::Name() const {
  if (kind == Kind::kPerElement) return "per-element";
  std::string name = std::to_string(tile_m) + "x" + std::to_string(tile_n) + "x" +
                     std::to_string(tile_k) + "/" + std::to_string(block_m) + "x" +
                     std::to_string(block_n);
  if (vec4_a && vec4_b)
    name += "/vec4";
  else if (vec4_a)
    name += "/vec4a";
  else if (vec4_b)
    name += "/vec4b";
  if (prefetch) name += "/pf";
  return name;
}

std::string ElementwiseSchedule::Name() const {
  if (width == 1 && per_invocation == 1) return "scalar";
  return (width == 1 ? std::string("scalar") : "vec" + std::to_string(width)) + "/" +
         std::to_string(workgroup_size) + "x" + std::to_string(per_invocation);
}

SumSchedule SumSchedule::For(int64_t elements, int64_t rows, int64_t chunk) {
  SumSchedule s;
  s.rows = rows;
  const int64_t steps = (std::max<int64_t>(elements, 1) + kStep - 1) / kStep;
  // Up to kMaxStepsPerChunk passes per lane while the grid keeps kFullGrid workgroups: a chunk
  // of one or two passes spends as long on its workgroup's final tree as on its loads (an H100,
  // 2026-12-07, warm: 16 rows of 2^22 at 2.41 TB/s with 32 768 chunks of 2 passes, 2.61 with
  // 8 192 of 8; 2^28 floats 3.03-3.05 from 2 to 128 passes). A whole-tensor sum, at most
  // kMaxGroups chunks, is never cut that fine.
  constexpr int64_t kFullGrid = 8192, kMaxStepsPerChunk = 8;
  const int64_t fill = std::clamp<int64_t>(rows * steps / kFullGrid, 1, kMaxStepsPerChunk);
  const int64_t wanted = chunk > 0 ? (chunk + kStep - 1) / kStep : fill;
  s.chunk = std::max(wanted, (steps + kMaxGroups - 1) / kMaxGroups) * kStep;
  s.groups = (std::max<int64_t>(elements, 1) + s.chunk - 1) / s.chunk;
  return s;
}

SumSchedule SumSchedule::ForColumns(int64_t length, int64_t rows, int64_t inner) {
  constexpr int64_t kFillWorkgroups = 1024, kStepsPerLane = 16;
  SumSchedule s;
  s.rows = rows;
  s.inner = inner;
  while (s.columns < 64 && s.columns < inner) s.columns *= 2;
  const int64_t lanes = 256 / s.columns;
  const int64_t blocks = rows * ((inner + s.columns - 1) / s.columns);
  const int64_t want_groups = std::max<int64_t>(1, (kFillWorkgroups + blocks - 1) / blocks);
  int64_t chunk = std::max(lanes * kStepsPerLane,
                           (std::max<int64_t>(length, 1) + want_groups - 1) / want_groups);
  chunk = (chunk + lanes - 1) / lanes * lanes;
  // At most kMaxGroups chunks, as a row's.
  const int64_t least = (std::max<int64_t>(length, 1) + kMaxGroups - 1) / kMaxGroups;
  if (chunk < least) chunk = (least + lanes - 1) / lanes * lanes;
  s.chunk = chunk;
  s.groups = (std::max<int64_t>(length, 1) + chunk - 1) / chunk;
  return s;
}

std::array<uint32_t, 3> SumSchedule::FinishWorkgroups() const {
  if (inner == 1) return {static_cast<uint32_t>(rows), 1, 1};
  return {static_cast<uint32_t>((inner + FinishColumns() - 1) / FinishColumns()),
          static_cast<uint32_t>(rows), 1};
}

std::string SumSchedule::Name() const {
  std::string name = "wide " + (rows > 1 ? std::to_string(rows) + "x" : std::string()) +
                     std::to_string(groups) + "x" + std::to_string(chunk);
  if (inner > 1) name += " of " + std::to_string(inner) + " columns by " + std::to_string(columns);
  return name;
}

MatmulShape MatmulShapeOf(const Module& m, const Kernel& k) {
  // The operands' logical types: a folded transpose's, not its operand's.
  const webir::Node& node = m.graph().at(k.OpNode());
  const TensorType& ta = m.graph().at(node.args[0]).type;
  const TensorType& tb = m.graph().at(node.args[1]).type;
  const TensorType& to = node.type;
  MatmulShape shape;
  shape.m = ta.dims[ta.rank() - 2].size;
  shape.k = ta.dims[ta.rank() - 1].size;
  shape.n = tb.dims[tb.rank() - 1].size;
  shape.batches = shape.m * shape.n > 0 ? to.elements() / (shape.m * shape.n) : 0;
  shape.trans_a = k.transposed.size() > 0 && k.transposed[0];
  shape.trans_b = k.transposed.size() > 1 && k.transposed[1];
  return shape;
}

// What kernel `k` computes: "%out [shape], %extra <- op(%a, %b) ...".
std::string Computes(const Module& m, const Kernel& k) {
  const webir::Node& o = m.graph().at(k.output);
  std::string out = "%" + o.name + " " + o.type.ShapeString();
  for (int x : k.extra_outputs) out += ", %" + m.graph().at(x).name;
  out += " <- ";
  for (size_t j = 0; j < k.in_place.size(); ++j)
    if (k.in_place[j] >= 0)
      out += "(%" + m.graph().at(k.Outputs()[j]).name + " over %" +
             m.graph().at(k.inputs[k.in_place[j]]).name + ") ";
  // Steps [first, end) of kernel kk's expression, each `s<n>=op(operands)`.
  auto steps_of = [&](const Kernel& kk, size_t first) {
    std::string expr;
    // Built by appending: `"s" + std::to_string(...)` draws a false -Wrestrict from GCC 12.
    auto operand = [&](int x) {
      std::string name = IsStepRef(x) ? "s" : "%";
      name += IsStepRef(x) ? std::to_string(StepOf(x)) : m.graph().at(kk.inputs[x]).name;
      return name;
    };
    for (size_t s = first; s < kk.expr.size(); ++s) {
      const ExprStep& e = kk.expr[s];
      if (s > first) expr += "; ";
      expr += "s";
      expr += std::to_string(s);
      expr += "=";
      expr += e.op;
      expr += "(";
      if (e.op == "full") {
        expr += std::isinf(e.value) ? (e.value > 0 ? "inf" : "-inf") : CanonicalJson(Json(e.value));
      } else {
        for (size_t i = 0; i < e.operands.size(); ++i) {
          if (i) expr += ", ";
          expr += operand(e.operands[i]);
        }
      }
      expr += ")";
    }
    return expr;
  };
  auto steps = [&](size_t first) { return steps_of(k, first); };
  if (k.kind == KernelKind::kElementwise) {
    out += "fused[" + steps(0) + "]";
  } else {
    out += k.op + "(";
    const size_t operands = k.HasEpilogue() || k.UpdatesParameters() ? 2 : k.inputs.size();
    for (size_t i = 0; i < operands; ++i) {
      out += (i ? ", %" : "%") + m.graph().at(k.inputs[i]).name;
      if (i < k.transposed.size() && k.transposed[i]) out += "^T";
    }
    for (size_t j = 0; j < k.literals.size(); ++j)
      out += (operands + j ? ", " : "") + CanonicalJson(Json(k.literals[j].value));
    out += ")";
    if (k.HasEpilogue()) out += " as s0, epilogue[" + steps(1) + "]";
    if (k.UpdatesParameters()) {
      out += " as %" + m.graph().at(k.update_product).name;
      if (k.update_column_sums >= 0)
        out += " and its column sums %" + m.graph().at(k.update_column_sums).name;
      // Each parameter's update, as its op over its arguments.
      std::string parts;
      for (const std::vector<size_t>& part : OptimizerParts(m, k)) {
        const webir::Node& n = m.graph().at(k.Outputs()[part.front()]);
        parts += (parts.empty() ? "" : "; ") + n.op + "(";
        for (size_t a = 0; a < n.args.size(); ++a)
          parts += (a ? ", %" : "%") + m.graph().at(n.args[a]).name;
        parts += ")";
      }
      out += ", update[" + parts + "]";
    }
  }
  return out;
}

std::string Print(const Module& m) {
  std::string out = "kernels";
  if (!m.graph().name.empty()) out += " \"" + m.graph().name + "\"";
  out += std::string("  tier=") + policy::TierName(m.graph().tier) + "  (" +
         std::to_string(m.kernels.size()) + " kernels for " +
         std::to_string(m.graph().nodes.size()) + " nodes)\n";
  for (const Kernel& bound : m.kernels) {
    const Kernel k = UnfoldRowGathers(bound);
    out += "  " + k.name + ": " + Computes(m, k);
    for (const Kernel::RowGather& g : bound.row_gathers) {
      const webir::Node& n = m.graph().at(g.node);
      out += "  (%" + n.name + ": rows %" + m.graph().at(n.args[1]).name + " of %" +
             m.graph().at(n.args[0]).name + ", read in place)";
    }
    if (k.matmul_schedule) out += "  schedule " + k.matmul_schedule->Name();
    if (k.elementwise_schedule) out += "  schedule " + k.elementwise_schedule->Name();
    if (k.sum_schedule) out += "  schedule " + k.sum_schedule->Name();
    if (k.Source(kWgslTarget)) {
      out += "  grid " + std::to_string(k.workgroups[0]) + "x" + std::to_string(k.workgroups[1]) +
             "  wgsl " + k.Wgsl().source_hash.substr(0, 12);
    } else {
      out += "  (not emitted)";
    }
    if (k.hoisted) out += "  hoisted";
    out += "\n";
    if (k.kind == KernelKind::kTiledStages) {
      out += "    butterfly blocking: " + std::to_string(k.stages.size()) +
             " stages per dispatch, tiles of " + std::to_string(k.stage_tile) + " elements, " +
             std::to_string(k.stage_workgroup_bytes) + " B of workgroup memory\n";
      for (size_t j = 0; j < k.stages.size(); ++j) {
        const Kernel& st = k.stages[j];
        out += "      stage " + std::to_string(j) + ": " + Computes(m, st) + "\n";
      }
    }
    if (k.kind == KernelKind::kRowStages) {
      out += "    workgroup 0 stage 0, each other workgroup (" + std::to_string(kWorkgroupLanes) +
             " invocations) a block of " + std::to_string(k.stage_tile) +
             (k.stage_tile == 1 ? " row" : " rows") + " through stages 1.." +
             std::to_string(k.stages.size() - 1) + " in turn:\n";
      for (size_t j = 0; j < k.stages.size(); ++j)
        out += "      stage " + std::to_string(j) + ": " + Computes(m, k.stages[j]) + "\n";
    }
    if (k.blocking.steps > 1) {
      out += "    temporal blocking: " + std::to_string(k.blocking.steps) +
             " iterations per dispatch, " + std::to_string(k.blocking.tile) + "x" +
             std::to_string(k.blocking.tile) + " tiles, halo " + std::to_string(k.blocking.halo) +
             ", grid " + std::to_string(k.blocking.workgroups[0]) + "x" +
             std::to_string(k.blocking.workgroups[1]) + "  wgsl " +
             k.Source(kWgslBlockedTarget)->source_hash.substr(0, 12) + "\n";
    }
  }
  if (!m.not_blocked_because.empty())
    out += "  not temporally blocked: " + m.not_blocked_because + "\n";
  return out;
}

std::string PrintWgsl(const Module& m) {
  std::string out;
  for (const Kernel& k : m.kernels) {
    out += "// ---- " + k.name + " ----\n" + k.Wgsl().source + "\n";
    if (const EmittedSource* blocked = k.Source(kWgslBlockedTarget))
      out += "// ---- " + k.name + " (temporally blocked) ----\n" + blocked->source + "\n";
    if (const EmittedSource* finish = k.Source(kWgslSumFinishTarget))
      out += "// ---- " + k.name + " (the partial sums) ----\n" + finish->source + "\n";
  }
  return out;
}

Json ToJson(const Module& m) {
  Json j;
  j["kernels"] = Json::array();
  for (const Kernel& k : m.kernels) {
    Json jk;
    jk["name"] = k.name;
    jk["kind"] = k.kind == KernelKind::kElementwise   ? "elementwise"
                 : k.kind == KernelKind::kTiledStages ? "tiled_stages"
                 : k.kind == KernelKind::kRowStages   ? "row_stages"
                                                      : "op";
    jk["op"] = k.op;
    jk["nodes"] = k.nodes;
    jk["inputs"] = k.inputs;
    if (!k.transposed.empty()) jk["transposed"] = k.transposed;
    for (const Kernel::RowGather& g : k.row_gathers)
      jk["row_gathers"].push_back({{"node", g.node}, {"input", g.input}, {"index", g.index}});
    if (k.UpdatesParameters()) {
      jk["update_product"] = k.update_product;
      if (k.update_column_sums >= 0) jk["update_column_sums"] = k.update_column_sums;
    }
    jk["output"] = k.output;
    if (!k.extra_outputs.empty()) jk["extra_outputs"] = k.extra_outputs;
    if (!k.in_place.empty()) jk["in_place"] = k.in_place;
    if (!k.uniform_inputs.empty()) jk["uniform_inputs"] = k.uniform_inputs;
    for (const Kernel::Literal& l : k.literals)
      jk["literals"].push_back({{"node", l.node}, {"value", l.value}});
    if (const auto& s = k.matmul_schedule) {
      jk["matmul_schedule"] = {
          {"name", s->Name()},
          {"kind", s->kind == MatmulSchedule::Kind::kTiled ? "tiled" : "per-element"},
          {"tile", {s->tile_m, s->tile_n, s->tile_k}},
          {"block", {s->block_m, s->block_n}},
          {"vec4", {s->vec4_a, s->vec4_b}},
          {"prefetch", s->prefetch}};
    }
    if (const auto& s = k.elementwise_schedule) {
      jk["elementwise_schedule"] = {{"name", s->Name()},
                                    {"width", s->width},
                                    {"workgroup_size", s->workgroup_size},
                                    {"per_invocation", s->per_invocation}};
    }
    if (const auto& s = k.sum_schedule) {
      jk["sum_schedule"] = {{"name", s->Name()}, {"chunk", s->chunk}, {"groups", s->groups},
                            {"rows", s->rows},   {"inner", s->inner}, {"columns", s->columns}};
      if (const EmittedSource* finish = k.Source(kWgslSumFinishTarget))
        jk["sum_schedule"]["finish_wgsl_sha256"] = finish->source_hash;
    }
    if (k.hoisted) jk["hoisted"] = true;
    jk["workgroups"] = k.workgroups;
    jk["wgsl_sha256"] = k.Wgsl().source_hash;
    if (k.blocking.steps > 1) {
      jk["blocking"] = {{"steps", k.blocking.steps},
                        {"tile", k.blocking.tile},
                        {"halo", k.blocking.halo},
                        {"workgroups", k.blocking.workgroups},
                        {"wgsl_sha256", k.Source(kWgslBlockedTarget)->source_hash}};
    }
    if (k.kind == KernelKind::kTiledStages) {
      jk["stage_tile"] = k.stage_tile;
      jk["stage_workgroup_bytes"] = k.stage_workgroup_bytes;
      for (const Kernel& st : k.stages) {
        Json js = {{"output", st.output}, {"inputs", st.inputs}, {"nodes", st.nodes}};
        for (const ExprStep& s : st.expr)
          js["expr"].push_back({{"op", s.op}, {"operands", s.operands}, {"value", s.value}});
        jk["stages"].push_back(js);
      }
    }
    if (k.kind == KernelKind::kElementwise || k.HasEpilogue()) {
      for (const ExprStep& s : k.expr)
        jk["expr"].push_back({{"op", s.op}, {"operands", s.operands}, {"value", s.value}});
    }
    j["kernels"].push_back(jk);
  }
  if (!m.not_blocked_because.empty()) j["not_blocked_because"] = m.not_blocked_because;
  return j;
}

namespace {

// A kernel of stages: elementwise stages, each reading the kernel's inputs or earlier stages'
// outputs, tiled by a power of two that divides their rank-1 output, every butterfly partner of
// an earlier stage's value inside the tile; the kernel writes stage outputs, in stage order.
Status VerifyStages(const Module& m, const Kernel& k, const std::set<int>& produced) {
  auto bad = [&](const std::string& why) { return InternalError("kernel.Verify", k.name + why); };
  if (k.stages.size() < 2 || k.stage_tile < 1 || (k.stage_tile & (k.stage_tile - 1)))
    return bad(" has fewer than two stages or a tile that is no power of two");
  std::set<int> available(k.inputs.begin(), k.inputs.end()), written;
  for (int in : k.inputs)
    if (!produced.count(in)) return bad(" reads a value before any kernel writes it");
  const int64_t n = m.graph().at(k.output).type.elements();
  for (const Kernel& st : k.stages) {
    if (st.kind != KernelKind::kElementwise || m.graph().at(st.output).type.elements() != n ||
        n % k.stage_tile)
      return bad(" has a stage that is not elementwise over its tiles");
    for (int in : st.inputs)
      if (!available.count(in)) return bad(" has a stage reading what no earlier stage wrote");
    for (const ExprStep& e : st.expr)
      if (e.op == "butterfly" && written.count(st.inputs[e.operands[0]]) &&
          m.graph().at(e.node).attrs.at("mask").get<int64_t>() >= k.stage_tile)
        return bad(" has a butterfly partner outside its tile");
    available.insert(st.output);
    written.insert(st.output);
  }
  size_t next = 0;
  const std::vector<int> outs = k.Outputs();
  for (const Kernel& st : k.stages)
    if (next < outs.size() && st.output == outs[next]) ++next;
  if (next != outs.size()) return bad(" writes values that are not its stages' outputs in order");
  return Status::Ok();
}

}  // namespace

namespace {

// Outputs over inputs of their own type, each input replaced once, in an optimizer kernel; uniform
// inputs single f32 elements.
Status VerifyInPlace(const Module& m, const Kernel& k) {
  auto bad = [&](const std::string& what) { return InternalError("kernel.Verify", k.name + what); };
  if (!k.uniform_inputs.empty() && k.uniform_inputs.size() != k.inputs.size())
    return bad(" marks uniform inputs other than its own");
  for (size_t i = 0; i < k.inputs.size(); ++i)
    if (k.UniformInput(i) && (m.graph().at(k.inputs[i]).type.elements() != 1 ||
                              m.graph().at(k.inputs[i]).type.dtype != DType::kF32))
      return bad(" binds %" + m.graph().at(k.inputs[i]).name + " as a uniform, no f32 scalar");
  if (k.in_place.empty()) return Status::Ok();
  const std::vector<int> outs = k.Outputs();
  const bool optimizer = IsOptimizerOp(m, k.op) || (k.UpdatesParameters() && k.op == "matmul");
  if (k.in_place.size() != outs.size() || k.kind != KernelKind::kOp || !optimizer)
    return bad(" writes in place, but is no optimizer kernel over its outputs");
  std::set<int> replaced;
  for (size_t j = 0; j < outs.size(); ++j) {
    const int i = k.in_place[j];
    if (i < 0) continue;
    if (i >= static_cast<int>(k.inputs.size()) || !replaced.insert(i).second || k.UniformInput(i) ||
        !m.graph().at(k.inputs[i]).type.SameShape(m.graph().at(outs[j]).type) ||
        m.graph().at(k.inputs[i]).type.dtype != m.graph().at(outs[j]).type.dtype)
      return bad(" writes %" + m.graph().at(outs[j]).name + " over an input it cannot replace");
  }
  return Status::Ok();
}

// Row gathers (Kernel::row_gathers): each an index_select of rows whose table is bound where the
// kernel reads it, its rank-1 index bound after the inputs the kernel reads itself, and each of
// those bindings some gather's index.
Status VerifyRowGathers(const Module& m, const Kernel& k) {
  if (k.row_gathers.empty()) return Status::Ok();
  auto bad = [&](const std::string& why) { return InternalError("kernel.Verify", k.name + why); };
  const int read = static_cast<int>(k.inputs.size() - RowGatherIndexInputs(k));
  std::set<int> inputs, indices;
  for (const Kernel::RowGather& g : k.row_gathers) {
    if (g.input < 0 || g.input >= read || g.index < read ||
        g.index >= static_cast<int>(k.inputs.size()) || !inputs.insert(g.input).second)
      return bad(" binds a row gather's table or index out of place");
    indices.insert(g.index);
    const webir::Node& n = m.graph().at(g.node);
    if (n.op != "index_select" || n.attrs.at("axis").get<int>() != 0 ||
        n.args != std::vector<int>{k.inputs[g.input], k.inputs[g.index]} ||
        m.graph().at(n.args[1]).type.rank() != 1)
      return bad(" folds %" + n.name + ", which is no gather of rows");
    if (k.UniformInput(g.index) && !RowIndexFitsUniform(m.graph().at(n.args[1]).type.elements()))
      return bad(" binds the index of %" + n.name + " as a uniform it does not fit");
  }
  if (static_cast<int>(indices.size()) + read != static_cast<int>(k.inputs.size()))
    return bad(" binds an index no row gather reads");
  return Status::Ok();
}

// A kernel of row stages: a loss, its gradient and products of it, each reading the kernel's
// inputs or what an earlier stage wrote; its outputs and literals are the stages', in order.
Status VerifyRowStages(const Module& m, const Kernel& k) {
  auto bad = [&](const std::string& why) { return InternalError("kernel.Verify", k.name + why); };
  if (k.stages.size() < 3 || k.stages[0].op != "cross_entropy" ||
      k.stages[1].op != "cross_entropy_grad")
    return bad(" is not a loss, its gradient and products of it");
  for (size_t s = 2; s < k.stages.size(); ++s)
    if (k.stages[s].op != "matmul" || k.stages[s].inputs.empty() ||
        k.stages[s].inputs[0] != k.stages[1].output)
      return bad(" has a stage that is no product of the loss's gradient");
  if (k.stage_tile < 1) return bad(" has no rows per block");
  std::set<int> available(k.inputs.begin(), k.inputs.end()), read;
  std::vector<int> outs;
  std::vector<Kernel::Literal> literals;
  for (const Kernel& st : k.stages) {
    if (st.kind != KernelKind::kOp || !st.stages.empty())
      return bad(" has a stage that is no kernel of one op");
    for (int in : st.inputs) {
      if (!available.count(in)) return bad(" has a stage reading what no earlier stage wrote");
      read.insert(in);
    }
    for (int o : st.Outputs()) {
      available.insert(o);
      outs.push_back(o);
    }
    literals.insert(literals.end(), st.literals.begin(), st.literals.end());
  }
  for (int in : k.inputs)
    if (!read.count(in)) return bad(" binds an input no stage reads");
  if (outs != k.Outputs()) return bad(" writes values that are not its stages' outputs in order");
  if (literals.size() != k.literals.size() ||
      !std::equal(literals.begin(), literals.end(), k.literals.begin(),
                  [](const Kernel::Literal& a, const Kernel::Literal& b) {
                    return a.node == b.node && a.value == b.value;
                  }))
    return bad(" folds literals that are not its stages'");
  if (!k.in_place.empty() || !k.uniform_inputs.empty())
    return bad(" writes in place or binds uniforms");
  return Status::Ok();
}

}  // namespace

Status Verify(const Module& m) {
  std::set<int> produced;
  for (const webir::Node& n : m.graph().nodes)
    if (n.role == webir::Role::kInput || n.role == webir::Role::kParam) produced.insert(n.id);
  for (const Kernel& bound : m.kernels) {
    for (int in : bound.inputs)
      if (!produced.count(in))
        return InternalError("kernel.Verify", bound.name + " reads %" + m.graph().at(in).name +
                                                  " before any kernel writes it");
    SCELLIS_TRY(VerifyRowGathers(m, bound));
    // The rest holds of the kernel as it reads, its gathered values its inputs.
    const Kernel k = UnfoldRowGathers(bound);
    if (k.HasEpilogue()) {
      // Step 0 is the matmul over inputs 0 and 1; the epilogue reads neither of them directly.
      const ExprStep& head = k.expr.front();
      if (k.op != "matmul" || head.op != "matmul" || head.operands != std::vector<int>{0, 1} ||
          k.inputs.size() < 2 || m.graph().at(head.node).op != "matmul")
        return InternalError("kernel.Verify", k.name + " has an epilogue but is no matmul");
      for (size_t s = 1; s < k.expr.size(); ++s)
        for (int o : k.expr[s].operands)
          if (IsStepRef(o) ? StepOf(o) >= static_cast<int>(s)
                           : o < 2 || o >= static_cast<int>(k.inputs.size()))
            return InternalError("kernel.Verify", k.name + " has a bad epilogue operand");
      if (k.expr.back().node != k.output)
        return InternalError("kernel.Verify", k.name + " does not write its epilogue's result");
    }
    if (k.kind == KernelKind::kElementwise) {
      for (size_t s = 0; s < k.expr.size(); ++s)
        for (int o : k.expr[s].operands)
          if (IsStepRef(o) ? StepOf(o) >= static_cast<int>(s)
                           : o >= static_cast<int>(k.inputs.size()))
            return InternalError("kernel.Verify", k.name + " has a bad operand");
      // A permuted load reads a buffer: its operand can never be a value computed in registers.
      for (const ExprStep& s : k.expr)
        if (IsPermutedLoad(s.op) && (s.operands.size() != 1 || IsStepRef(s.operands[0])))
          return InternalError("kernel.Verify",
                               k.name + " permutes a value that is not in a buffer");
    }
    if (k.kind == KernelKind::kTiledStages) {
      SCELLIS_TRY(VerifyStages(m, k, produced));
      for (int x : k.extra_outputs) produced.insert(x);
    }
    if (k.kind == KernelKind::kRowStages) {
      SCELLIS_TRY(VerifyRowStages(m, k));
      for (int x : k.extra_outputs) produced.insert(x);
    }
    SCELLIS_TRY(VerifyInPlace(m, k));
    for (const EmittedSource& src : k.sources)
      if (src.source.empty() || src.source_hash != Sha256Hex(src.source))
        return InternalError("kernel.Verify",
                             k.name + " has an empty or mismatched " + src.target + " source");
    // Extra outputs: ops each of whose arguments is an input of the kernel or an output it
    // writes before (the loss's gradient beside the loss, the bias gradient summed from it),
    // none of them read by the kernel as an input and none written twice.
    std::set<int> written_before = {k.output};
    if (k.UpdatesParameters()) {
      // The product and its column sums are gradients in registers; the outputs are an
      // optimizer's, over them.
      const webir::Node& product = m.graph().at(k.update_product);
      if (k.op != "matmul" || k.HasEpilogue() || product.op != "matmul" || k.inputs.size() < 2 ||
          !IsOptimizerOp(m, m.graph().at(k.output).op) ||
          (k.update_column_sums >= 0 &&
           m.graph().at(k.update_column_sums).args != std::vector<int>{k.inputs[1]}))
        return InternalError("kernel.Verify",
                             k.name +
                                 " updates parameters but is no matmul taking their "
                                 "gradients to an optimizer");
      written_before.insert(k.update_product);
      if (k.update_column_sums >= 0) written_before.insert(k.update_column_sums);
    }
    for (const Kernel::Literal& l : k.literals) {
      const webir::Node& n = m.graph().at(l.node);
      const bool staged = k.kind == KernelKind::kRowStages;  // its stages' literals
      if ((k.kind != KernelKind::kOp && !staged) || k.HasEpilogue() || n.op != "full" ||
          n.type.elements() != 1 || n.type.dtype != DType::kF32 ||
          n.attrs.at("value").get<double>() != l.value)
        return InternalError("kernel.Verify", k.name + " folds %" + n.name +
                                                  " in as a literal, but it is no f32 constant");
      written_before.insert(l.node);  // available to every output, as an input is
    }
    // A kernel of stages writes its stages' outputs (checked above).
    const bool of_stages = k.kind == KernelKind::kTiledStages || k.kind == KernelKind::kRowStages;
    for (int x : of_stages ? std::vector<int>{} : k.extra_outputs) {
      bool args_available = true;
      for (int a : m.graph().at(x).args)
        args_available =
            args_available && (written_before.count(a) ||
                               std::find(k.inputs.begin(), k.inputs.end(), a) != k.inputs.end());
      if (k.kind != KernelKind::kOp || !args_available ||
          std::find(k.inputs.begin(), k.inputs.end(), x) != k.inputs.end() || produced.count(x) ||
          written_before.count(x))
        return InternalError("kernel.Verify",
                             k.name + " writes %" + m.graph().at(x).name +
                                 " besides its output, but not as an op over its inputs and "
                                 "earlier outputs");
      produced.insert(x);
      written_before.insert(x);
    }
    produced.insert(k.output);
  }
  // Hoisted kernels run before the loop: they come first and read nothing the body computes.
  const int hoisted = m.HoistedKernels();
  for (size_t i = hoisted; i < m.kernels.size(); ++i)
    if (m.kernels[i].hoisted)
      return InternalError(
          "kernel.Verify",
          m.kernels[i].name + " is hoisted but follows the loop body's " + m.kernels[hoisted].name);
  for (int i = 0; i < hoisted; ++i)
    for (int in : m.kernels[i].inputs)
      for (size_t j = hoisted; j < m.kernels.size(); ++j)
        if (m.kernels[j].output == in ||
            std::count(m.kernels[j].extra_outputs.begin(), m.kernels[j].extra_outputs.end(), in))
          return InternalError("kernel.Verify", m.kernels[i].name + " is hoisted but reads %" +
                                                    m.graph().at(in).name + " from the loop body");
  for (const webir::Output& o : m.graph().outputs)
    if (!produced.count(o.node))
      return InternalError("kernel.Verify", "output " + o.name + " is never written");
  return Status::Ok();
}

}  // namespace scellis::kernel

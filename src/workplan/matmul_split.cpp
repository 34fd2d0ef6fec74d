#include "workplan/matmul_split.h"

#include <algorithm>
#include <cstring>

namespace scellis::workplan {

using execplan::FormatBytes;
using execplan::SaturatingAdd;
using execplan::SaturatingMul;

namespace {

constexpr const char* kWhatPartitions =
    "a run partitions over ranks when its graph is one matmul of two rank-2 f32 inputs, params "
    "or constants whose product is the only output; train a training document with --ranks";

Diagnostic Unsupported(const webir::Node& n, const std::string& why) {
  return UserError("workplan-unsupported", n.origin, why, kWhatPartitions);
}

bool IsSource(const webir::Node& n) {
  return n.role == webir::Role::kInput || n.role == webir::Role::kParam ||
         n.role == webir::Role::kConst;
}

Verdict Worse(Verdict a, Verdict b) {
  return static_cast<int>(a) > static_cast<int>(b) ? a : b;
}

std::string RangeText(int64_t lo, int64_t hi) {
  return "[" + std::to_string(lo) + "," + std::to_string(hi) + ")";
}

}  // namespace

Result<MatmulSite> FindSplittableMatmul(const webir::Graph& g) {
  if (g.nodes.empty()) return UserError("workplan-unsupported", "", "the graph is empty");
  if (!g.carries.empty())
    return Unsupported(g.at(g.carries.front().to),
                       "the graph carries values between steps; a split run is one step");
  MatmulSite s;
  for (const webir::Node& n : g.nodes) {
    if (IsSource(n)) continue;
    if (n.op != "matmul" || s.matmul >= 0)
      return Unsupported(
          n, "the node %" + n.name + " (" + n.op + ") is not the one matmul a run partitions");
    s.matmul = n.id;
  }
  if (s.matmul < 0) return Unsupported(g.nodes.front(), "the graph has no matmul");
  const webir::Node& mm = g.at(s.matmul);
  s.a = mm.args.at(0);
  s.b = mm.args.at(1);
  for (int operand : {s.a, s.b}) {
    const webir::Node& o = g.at(operand);
    if (o.type.rank() != 2 || o.type.dtype != DType::kF32)
      return Unsupported(o, "the operand %" + o.name + " is " + o.type.ShapeString() + " " +
                                DTypeName(o.type.dtype) + ", not a rank-2 f32 matrix");
  }
  if (s.a == s.b) return Unsupported(mm, "the matmul multiplies %" + g.at(s.a).name + " by itself");
  if (g.outputs.size() != 1 || g.outputs.front().node != s.matmul)
    return Unsupported(mm, "the product must be the graph's only output");
  const std::vector<int64_t> a = g.at(s.a).type.sizes(), b = g.at(s.b).type.sizes();
  s.m = a[0];
  s.k = a[1];
  s.n = b[1];
  s.output = g.outputs.front().name;
  return s;
}

const char* SplitAxisName(SplitAxis a) {
  return a == SplitAxis::kRows ? "rows" : "columns";
}

SplitAxis ChooseAxis(const MatmulSite& s) {
  // a is m x k, b is k x n: compare m with n.
  return s.m >= s.n ? SplitAxis::kRows : SplitAxis::kColumns;
}

std::vector<OutputBlock> CutBlocks(int64_t extent, int ranks) {
  std::vector<OutputBlock> blocks;
  for (int r = 0; r < ranks; ++r)
    blocks.push_back({r, extent * r / ranks, extent * (r + 1) / ranks});
  return blocks;
}

webir::Graph RankGraph(const webir::Graph& g, const MatmulSite& s, SplitAxis axis,
                       const OutputBlock& block) {
  webir::Graph out = g;
  const int64_t size = block.hi - block.lo;
  const bool rows = axis == SplitAxis::kRows;
  webir::Node& cut = out.nodes[static_cast<size_t>(rows ? s.a : s.b)];
  cut.type.dims[rows ? 0 : 1] = Dim{size, ""};
  if (cut.role != webir::Role::kConst) {
    // Its values are the whole operand's slice, fed by name.
    cut.op = "input";
    cut.role = webir::Role::kInput;
    cut.data.reset();
    cut.init.reset();
  }
  out.nodes[static_cast<size_t>(s.matmul)].type.dims[rows ? 0 : 1] = Dim{size, ""};
  return out;
}

const char* MatmulStepKindName(MatmulStepKind k) {
  switch (k) {
    case MatmulStepKind::kCompute:
      return "compute";
    case MatmulStepKind::kGather:
      return "gather";
    case MatmulStepKind::kAssemble:
      return "assemble";
  }
  return "?";
}

Result<MatmulWorkPlan> FromBlockPlans(std::shared_ptr<const execplan::Plan> whole,
                                      std::vector<std::shared_ptr<const execplan::Plan>> rank_plans,
                                      DeviceSet devices, const MatmulSite& site, SplitAxis axis,
                                      std::vector<OutputBlock> blocks) {
  if (!whole) return InternalError("workplan.FromBlockPlans", "the whole product's plan is needed");
  if (devices.ranks.empty())
    return UserError("bad-flag", "", "a work plan needs at least one rank",
                     "use --ranks=1 or more");
  MatmulWorkPlan w;
  w.whole = std::move(whole);
  w.devices = std::move(devices);
  w.site = site;
  w.axis = axis;
  const int ranks = w.ranks();
  if (w.extent() < ranks) {
    w.findings.push_back(UserError("too-few-blocks", "",
                                   "the product's " + std::to_string(w.extent()) + " " +
                                       SplitAxisName(axis) + " leave ranks without a block (" +
                                       std::to_string(ranks) + " ranks)",
                                   "use at most " + std::to_string(w.extent()) + " ranks"));
    w.verdict = Verdict::kRed;
    return w;
  }
  if (rank_plans.size() != static_cast<size_t>(ranks) ||
      blocks.size() != static_cast<size_t>(ranks))
    return InternalError("workplan.FromBlockPlans", "not one plan and one block per rank");
  w.rank_plans = std::move(rank_plans);
  w.blocks = std::move(blocks);
  for (const auto& p : w.rank_plans) w.rank_hashes.push_back(PlanHash(*p));

  const int64_t whole_bytes = SaturatingMul(SaturatingMul(site.m, site.n), 4);
  for (int r = 0; r < ranks; ++r) w.steps.push_back({MatmulStepKind::kCompute, r, 0});
  if (ranks > 1) w.steps.push_back({MatmulStepKind::kGather, -1, whole_bytes});
  w.steps.push_back({MatmulStepKind::kAssemble, 0, 0});

  for (int r = 0; r < ranks; ++r) {
    const execplan::Plan& p = *w.rank_plans[r];
    BlockMemory m;
    m.rank = r;
    m.plan = p.memory.allocated;
    m.staging = p.memory.host_staging;
    m.gathered = r == 0 && ranks > 1 ? whole_bytes : 0;
    m.budget = p.memory.budget;
    m.verdict = p.verdict;
    m.findings = p.findings;
    w.verdict = Worse(w.verdict, m.verdict);
    w.memory.push_back(std::move(m));
  }
  return w;
}

std::string Print(const MatmulWorkPlan& w) {
  const execplan::Plan& whole = *w.whole;
  const RungHeader& h = whole.header();
  const webir::Graph& g = whole.graph();
  std::string out = "workplan";
  if (!h.name.empty()) out += " \"" + h.name + "\"";
  out += "\n";
  auto row = [&](const std::string& key, const std::string& value) {
    out += "  " + key + std::string(17 - key.size(), ' ') + ": " + value + "\n";
  };
  const bool rows = w.axis == SplitAxis::kRows;
  const std::string a = "%" + g.at(w.site.a).name, b = "%" + g.at(w.site.b).name;
  row("determinism_tier", policy::TierName(h.tier));
  row("parallelism", std::string("the output's ") + SplitAxisName(w.axis) + " over " +
                         std::to_string(w.ranks()) + " rank" + (w.ranks() == 1 ? "" : "s"));
  row("matmul", "%" + g.at(w.site.matmul).name + " [" + std::to_string(w.site.m) + ", " +
                    std::to_string(w.site.n) + "] = " + a + " [" + std::to_string(w.site.m) + ", " +
                    std::to_string(w.site.k) + "] @ " + b + " [" + std::to_string(w.site.k) + ", " +
                    std::to_string(w.site.n) + "]");
  row("cut", rows ? a + "'s rows (the larger operand); " + b + " replicated"
                  : b + "'s columns (the larger operand); " + a + " replicated");
  std::string one = execplan::VerdictName(whole.verdict);
  for (const Diagnostic& d : whole.findings)
    if (d.severity == Severity::kError) one += "  " + d.code;
  row("one_device", one + "  (" + FormatBytes(whole.memory.allocated) + " of " +
                        FormatBytes(whole.memory.budget) + ")");
  std::string verdict = execplan::VerdictName(w.verdict);
  if (w.verdict != Verdict::kRed) verdict += "  every rank fits";
  row("verdict", verdict);
  for (const Diagnostic& d : w.findings) out += "    " + d.Format() + "\n";
  if (w.blocks.empty()) return out;
  out += "  ranks:\n";
  for (const OutputBlock& blk : w.blocks) {
    const execplan::DeviceLimits& d = w.devices.ranks[blk.rank];
    out += "    rank " + std::to_string(blk.rank) + "  " + d.backend + " (" + d.device + ")  " +
           SplitAxisName(w.axis) + " " + RangeText(blk.lo, blk.hi) +
           "  plan sha256:" + w.rank_hashes[blk.rank].substr(0, 16) + "\n";
  }
  out += "  steps:\n";
  for (const MatmulStep& s : w.steps) {
    out += "    " + std::string(MatmulStepKindName(s.kind)) + "  " +
           (s.rank < 0 ? std::string("every rank") : "rank " + std::to_string(s.rank));
    switch (s.kind) {
      case MatmulStepKind::kCompute: {
        const OutputBlock& blk = w.blocks[s.rank];
        const std::string range = RangeText(blk.lo, blk.hi);
        out +=
            rows ? ": out" + range + " = " + a + range + " @ " + b
                 : ": out[:, " + range.substr(1) + " = " + a + " @ " + b + "[:, " + range.substr(1);
        break;
      }
      case MatmulStepKind::kGather:
        out += ": each block to rank 0, " + FormatBytes(s.bytes) + " in all (host buffers)";
        break;
      case MatmulStepKind::kAssemble:
        out += std::string(": the blocks placed by ") + (rows ? "rows" : "columns") + " into \"" +
               w.site.output + "\"";
        break;
    }
    out += "\n";
  }
  out += "  memory:\n";
  for (const BlockMemory& m : w.memory) {
    out += "    rank " + std::to_string(m.rank) + "  " + FormatBytes(m.plan) + " of " +
           FormatBytes(m.budget) + "  (host staging " + FormatBytes(m.staging) +
           (m.gathered ? ", gathered output " + FormatBytes(m.gathered) + " on the host" : "") +
           ")  " + execplan::VerdictName(m.verdict) + "\n";
    for (const Diagnostic& d : m.findings) out += "      " + d.Format() + "\n";
  }
  return out;
}

Json ToJson(const MatmulWorkPlan& w) {
  const execplan::Plan& whole = *w.whole;
  const webir::Graph& g = whole.graph();
  auto findings = [](const std::vector<Diagnostic>& ds) {
    Json j = Json::array();
    for (const Diagnostic& d : ds)
      j.push_back({{"code", d.code}, {"message", d.message}, {"help", d.help}});
    return j;
  };
  Json j;
  j["determinism_tier"] = policy::TierName(whole.header().tier);
  j["parallelism"] = "matmul_blocks";
  j["ranks"] = w.ranks();
  j["matmul"] = {{"node", g.at(w.site.matmul).name},
                 {"a", g.at(w.site.a).name},
                 {"b", g.at(w.site.b).name},
                 {"m", w.site.m},
                 {"k", w.site.k},
                 {"n", w.site.n},
                 {"output", w.site.output}};
  j["axis"] = SplitAxisName(w.axis);
  j["one_device"] = {{"verdict", execplan::VerdictName(whole.verdict)},
                     {"allocated", whole.memory.allocated},
                     {"budget", whole.memory.budget},
                     {"findings", findings(whole.findings)}};
  j["verdict"] = execplan::VerdictName(w.verdict);
  j["findings"] = findings(w.findings);
  j["blocks"] = Json::array();
  for (const OutputBlock& blk : w.blocks) {
    const execplan::DeviceLimits& d = w.devices.ranks[blk.rank];
    j["blocks"].push_back({{"rank", blk.rank},
                           {"backend", d.backend},
                           {"device", d.device},
                           {"lo", blk.lo},
                           {"hi", blk.hi},
                           {"plan", w.rank_hashes[blk.rank]}});
  }
  j["steps"] = Json::array();
  for (const MatmulStep& s : w.steps) {
    Json step = {{"kind", MatmulStepKindName(s.kind)}, {"rank", s.rank}};
    if (s.kind == MatmulStepKind::kGather) step["bytes"] = s.bytes;
    j["steps"].push_back(step);
  }
  j["memory"] = Json::array();
  for (const BlockMemory& m : w.memory) {
    j["memory"].push_back({{"rank", m.rank},
                           {"plan", m.plan},
                           {"staging", m.staging},
                           {"gathered", m.gathered},
                           {"budget", m.budget},
                           {"verdict", execplan::VerdictName(m.verdict)},
                           {"findings", findings(m.findings)}});
  }
  return j;
}

Status Verify(const MatmulWorkPlan& w) {
  auto bad = [](const std::string& what) { return InternalError("workplan.Verify", what); };
  if (w.verdict == Verdict::kRed && w.blocks.empty()) return Status::Ok();  // refused cut
  const size_t ranks = static_cast<size_t>(w.ranks());
  if (w.blocks.size() != ranks || w.rank_plans.size() != ranks || w.memory.size() != ranks)
    return bad("not one block, one plan and one memory plan per rank");
  // The blocks tile the output's extent in rank order, each non-empty: every element once.
  int64_t next = 0;
  const bool rows = w.axis == SplitAxis::kRows;
  Verdict worst = Verdict::kGreen;
  for (size_t r = 0; r < ranks; ++r) {
    const OutputBlock& blk = w.blocks[r];
    if (blk.rank != static_cast<int>(r) || blk.lo != next || blk.hi <= blk.lo)
      return bad("the blocks do not tile the output's " + std::string(SplitAxisName(w.axis)));
    next = blk.hi;
    // The rank's plan computes its block from operands of its block's shapes.
    const webir::Graph& g = w.rank_plans[r]->graph();
    const int64_t size = blk.hi - blk.lo;
    const std::vector<int64_t> want_a = {rows ? size : w.site.m, w.site.k};
    const std::vector<int64_t> want_b = {w.site.k, rows ? w.site.n : size};
    const std::vector<int64_t> want_out = {rows ? size : w.site.m, rows ? w.site.n : size};
    if (g.outputs.size() != 1 || g.at(g.outputs[0].node).type.sizes() != want_out ||
        g.at(w.site.a).type.sizes() != want_a || g.at(w.site.b).type.sizes() != want_b)
      return bad("rank " + std::to_string(r) + "'s plan does not compute its block");
    if (w.memory[r].verdict != w.rank_plans[r]->verdict)
      return bad("rank " + std::to_string(r) + "'s verdict is not its plan's");
    worst = Worse(worst, w.memory[r].verdict);
  }
  if (next != w.extent()) return bad("the blocks do not cover the output");
  if (worst == Verdict::kRed && w.verdict != Verdict::kRed)
    return bad("a rank is red but the plan is not");
  return Status::Ok();
}

HostTensor SliceOperand(const MatmulWorkPlan& w, const HostTensor& whole, int rank) {
  const OutputBlock& blk = w.blocks[rank];
  const int64_t size = blk.hi - blk.lo;
  std::span<const float> v = whole.view<float>();
  std::vector<float> part;
  if (w.axis == SplitAxis::kRows) {
    // a [m, k]: rows [lo, hi) are contiguous.
    part.assign(v.begin() + blk.lo * w.site.k, v.begin() + blk.hi * w.site.k);
    return HostTensor::FromFloats(MakeType({size, w.site.k}), part);
  }
  // b [k, n]: columns [lo, hi) of every row.
  part.reserve(static_cast<size_t>(w.site.k * size));
  for (int64_t i = 0; i < w.site.k; ++i)
    part.insert(part.end(), v.begin() + i * w.site.n + blk.lo, v.begin() + i * w.site.n + blk.hi);
  return HostTensor::FromFloats(MakeType({w.site.k, size}), part);
}

std::vector<int64_t> BlockCounts(const MatmulWorkPlan& w) {
  std::vector<int64_t> counts;
  const int64_t across = w.axis == SplitAxis::kRows ? w.site.n : w.site.m;
  for (const OutputBlock& blk : w.blocks) counts.push_back((blk.hi - blk.lo) * across);
  return counts;
}

HostTensor Assemble(const MatmulWorkPlan& w, std::span<const float> blocks) {
  const int64_t m = w.site.m, n = w.site.n;
  std::vector<float> out(static_cast<size_t>(m * n));
  if (w.axis == SplitAxis::kRows) {
    // Row blocks in rank order are the output in row-major order.
    std::copy(blocks.begin(), blocks.begin() + m * n, out.begin());
  } else {
    int64_t at = 0;  // where the rank's block [m, width] starts in `blocks`
    for (const OutputBlock& blk : w.blocks) {
      const int64_t width = blk.hi - blk.lo;
      for (int64_t i = 0; i < m; ++i)
        std::copy(blocks.begin() + at + i * width, blocks.begin() + at + (i + 1) * width,
                  out.begin() + i * n + blk.lo);
      at += m * width;
    }
  }
  return HostTensor::FromFloats(w.whole->graph().at(w.site.matmul).type, out);
}

}  // namespace scellis::workplan

#include "workplan/workplan.h"

#include <algorithm>
#include <functional>

#include "base/sha256.h"
#include "webir/passes/append_train_step.h"  // GradName

namespace scellis::workplan {

using execplan::FormatBytes;
using execplan::SaturatingAdd;
using execplan::SaturatingMul;

DeviceSet DeviceSet::Uniform(int n, const execplan::DeviceLimits& limits) {
  return DeviceSet{
      std::vector<execplan::DeviceLimits>(static_cast<size_t>(std::max(n, 0)), limits)};
}

const char* StepKindName(StepKind k) {
  switch (k) {
    case StepKind::kGradients:
      return "gradients";
    case StepKind::kLocalReduce:
      return "local_reduce";
    case StepKind::kAllGather:
      return "all_gather";
    case StepKind::kCombine:
      return "combine";
    case StepKind::kScale:
      return "scale";
    case StepKind::kApply:
      return "apply";
  }
  return "?";
}

namespace {

int Mid(int lo, int hi) {
  return lo + (hi - lo) / 2;
}

// The rank whose shard holds every chunk of [lo, hi), or -1.
int OwnerOf(const std::vector<Shard>& shards, Span s) {
  for (const Shard& sh : shards)
    if (s.lo >= sh.first_chunk && s.hi <= sh.first_chunk + sh.chunks) return sh.rank;
  return -1;
}

// Walks the tree over [0, chunks): the maximal subtrees owned by one rank are the partials (in
// tree order); the additions inside them go to their rank, those above them to the combine step,
// each list in post-order (operands before their sum).
void Walk(const std::vector<Shard>& shards, Span s, std::vector<Partial>& partials,
          std::vector<std::vector<Add>>& local, std::vector<Add>& combine, int inside = -1) {
  int owner = inside >= 0 ? inside : OwnerOf(shards, s);
  if (inside < 0 && owner >= 0) partials.push_back({s, owner});
  if (s.hi - s.lo == 1) return;
  int mid = Mid(s.lo, s.hi);
  Walk(shards, {s.lo, mid}, partials, local, combine, owner);
  Walk(shards, {mid, s.hi}, partials, local, combine, owner);
  if (owner >= 0)
    local[owner].push_back({s.lo, mid, s.hi});
  else
    combine.push_back({s.lo, mid, s.hi});
}

int64_t PlanBytes(const execplan::Plan& p) {
  return SaturatingAdd(p.memory.allocated, p.memory.host_staging);
}

Verdict Worse(Verdict a, Verdict b) {
  return static_cast<int>(a) > static_cast<int>(b) ? a : b;
}

// The tree's additions on vectors: `leaf(span)` gives a leaf's values (a chunk or a partial).
// Adds element by element, left operand first, in the order `adds` lists them.
std::vector<float> Evaluate(const std::vector<Add>& adds, Span root,
                            const std::function<std::vector<float>(Span)>& leaf) {
  std::vector<std::pair<Span, std::vector<float>>> done;
  auto take = [&](Span s) {
    for (auto it = done.begin(); it != done.end(); ++it)
      if (it->first == s) {
        std::vector<float> v = std::move(it->second);
        done.erase(it);
        return v;
      }
    return leaf(s);
  };
  for (const Add& a : adds) {
    std::vector<float> left = take({a.lo, a.mid});
    std::vector<float> right = take({a.mid, a.hi});
    for (size_t i = 0; i < left.size(); ++i) left[i] = left[i] + right[i];
    done.push_back({{a.lo, a.hi}, std::move(left)});
  }
  return take(root);
}

}  // namespace

std::string PlanHash(const execplan::Plan& p) {
  Json j = execplan::ToJson(p);
  // What is judged, and how the run keeps its dataset on the host, leave the computation as it is.
  for (const char* judged : {"memory", "verdict", "findings", "dataset"}) j.erase(judged);
  j["kernels"] = kernel::ToJson(p.module());
  return Sha256Hex(j.dump());
}

Result<WorkPlan> FromExecPlans(std::shared_ptr<const execplan::Plan> gradients,
                               std::shared_ptr<const execplan::Plan> update, DeviceSet devices,
                               int64_t batch, const WorkPlanOptions& options) {
  if (!gradients || !update)
    return InternalError("workplan.FromExecPlans", "both halves of the step are needed");
  if (devices.ranks.empty())
    return UserError("bad-flag", "", "a work plan needs at least one rank",
                     "use --ranks=1 or more");
  WorkPlan w;
  w.gradients = std::move(gradients);
  w.update = std::move(update);
  w.gradients_hash = PlanHash(*w.gradients);
  w.update_hash = PlanHash(*w.update);
  w.devices = std::move(devices);
  w.batch = batch;
  const int ranks = w.ranks();
  w.chunks = options.chunks > 0 ? options.chunks : ranks;

  // The gradients reduced: every output of the gradient half named "<param>@grad" (in the
  // update half's input order), and the loss.
  const webir::Graph& ug = w.update->graph();
  for (const webir::Node& n : ug.nodes)
    if (n.role == webir::Role::kInput && n.purpose == webir::Purpose::kGradient) {
      std::string param = n.name.substr(0, n.name.size() - webir::GradName("").size());
      w.params.push_back(param);
      w.gradient_elements += n.type.elements();
    }
  w.gradient_elements += 1;  // the loss

  if (batch <= 0 || batch % w.chunks != 0) {
    w.findings.push_back(
        UserError("batch-not-divisible", "/train/batch",
                  "the batch of " + std::to_string(batch) + " does not divide into " +
                      std::to_string(w.chunks) + " equal chunks",
                  "use a batch that is a multiple of " + std::to_string(w.chunks) +
                      " (unequal chunks would weigh their examples unequally in the mean)"));
  }
  if (w.chunks < ranks) {
    w.findings.push_back(UserError("too-few-chunks", "",
                                   std::to_string(w.chunks) + " chunks leave ranks without work (" +
                                       std::to_string(ranks) + " ranks)",
                                   "use at least one chunk per rank"));
  }
  if (!w.findings.empty()) {
    w.verdict = Verdict::kRed;
    return w;
  }
  w.chunk_examples = batch / w.chunks;
  if (w.chunks % ranks != 0) {
    w.findings.push_back(Warning("uneven-shards", "",
                                 std::to_string(w.chunks) + " chunks do not divide among " +
                                     std::to_string(ranks) +
                                     " ranks: the ranks with one chunk more set the pace",
                                 "use a multiple of " + std::to_string(ranks) + " chunks"));
    w.verdict = Verdict::kYellow;
  }

  for (int r = 0; r < ranks; ++r) {
    int first = static_cast<int>(int64_t{r} * w.chunks / ranks);
    int end = static_cast<int>(int64_t{r + 1} * w.chunks / ranks);
    w.shards.push_back(
        {r, first, end - first, first * w.chunk_examples, (end - first) * w.chunk_examples});
  }
  std::vector<std::vector<Add>> local(static_cast<size_t>(ranks));
  std::vector<Add> combine;
  Walk(w.shards, {0, w.chunks}, w.partials, local, combine);

  const int64_t set_bytes = SaturatingMul(w.gradient_elements, 4);
  for (int r = 0; r < ranks; ++r) w.steps.push_back({StepKind::kGradients, r, {}, 0});
  for (int r = 0; r < ranks; ++r) w.steps.push_back({StepKind::kLocalReduce, r, local[r], 0});
  if (ranks > 1) {
    w.steps.push_back({StepKind::kAllGather,
                       -1,
                       {},
                       SaturatingMul(static_cast<int64_t>(w.partials.size()), set_bytes)});
  }
  w.steps.push_back({StepKind::kCombine, -1, combine, 0});
  w.steps.push_back({StepKind::kScale, -1, {}, 0});
  w.steps.push_back({StepKind::kApply, -1, {}, 0});

  for (int r = 0; r < ranks; ++r) {
    RankMemory m;
    m.rank = r;
    m.gradient_plan = PlanBytes(*w.gradients);
    m.update_plan = PlanBytes(*w.update);
    m.chunk_gradients = SaturatingMul(w.shards[r].chunks, set_bytes);
    m.gathered = SaturatingMul(static_cast<int64_t>(w.partials.size()) + 1, set_bytes);
    m.total = SaturatingAdd(SaturatingAdd(m.gradient_plan, m.update_plan),
                            SaturatingAdd(m.chunk_gradients, m.gathered));
    m.budget = w.gradients->memory.budget;
    m.verdict = Worse(w.gradients->verdict, w.update->verdict);
    for (const auto* p : {w.gradients.get(), w.update.get()})
      for (const Diagnostic& d : p->findings) m.findings.push_back(d);
    if (m.budget > 0 && m.total > m.budget) {
      m.verdict = Verdict::kRed;
      m.findings.push_back(UserError(
          "over-budget", "",
          "rank " + std::to_string(r) + " needs " + FormatBytes(m.total) +
              " (both halves of the step, its chunks' gradients and the gathered partials), "
              "over its budget of " +
              FormatBytes(m.budget),
          "use more ranks or smaller chunks (more of them), or raise the budget"));
    }
    w.verdict = Worse(w.verdict, m.verdict);
    w.memory.push_back(std::move(m));
  }
  return w;
}

std::vector<int64_t> GatherCounts(const WorkPlan& w) {
  std::vector<int64_t> counts(static_cast<size_t>(w.ranks()), 0);
  for (const Partial& p : w.partials) counts[p.rank] += w.gradient_elements;
  return counts;
}

std::vector<float> ReduceLocal(const WorkPlan& w, int rank,
                               const std::vector<std::vector<float>>& chunk_values) {
  const Shard& sh = w.shards[rank];
  std::vector<Add> adds;
  for (const WorkStep& s : w.steps)
    if (s.kind == StepKind::kLocalReduce && s.rank == rank) adds = s.adds;
  std::vector<float> out;
  for (const Partial& p : w.partials) {
    if (p.rank != rank) continue;
    std::vector<Add> inside;
    for (const Add& a : adds)
      if (a.lo >= p.span.lo && a.hi <= p.span.hi) inside.push_back(a);
    std::vector<float> sum =
        Evaluate(inside, p.span, [&](Span s) { return chunk_values[s.lo - sh.first_chunk]; });
    out.insert(out.end(), sum.begin(), sum.end());
  }
  return out;
}

std::vector<float> Combine(const WorkPlan& w, std::span<const float> partials) {
  std::vector<Add> adds;
  for (const WorkStep& s : w.steps)
    if (s.kind == StepKind::kCombine) adds = s.adds;
  const size_t width = static_cast<size_t>(w.gradient_elements);
  std::vector<float> sum = Evaluate(adds, {0, w.chunks}, [&](Span s) {
    for (size_t i = 0; i < w.partials.size(); ++i)
      if (w.partials[i].span == s)
        return std::vector<float>(partials.begin() + i * width, partials.begin() + (i + 1) * width);
    return std::vector<float>(width, 0.0f);  // unreachable in a verified plan
  });
  const float chunks = static_cast<float>(w.chunks);
  for (float& v : sum) v = v / chunks;
  return sum;
}

namespace {

std::string AddsText(const std::vector<Add>& adds) {
  std::string out;
  for (const Add& a : adds)
    out += " [" + std::to_string(a.lo) + "," + std::to_string(a.hi) + ")=[" + std::to_string(a.lo) +
           "," + std::to_string(a.mid) + ")+[" + std::to_string(a.mid) + "," +
           std::to_string(a.hi) + ")";
  return out.empty() ? " -" : out;
}

std::string SpanText(Span s) {
  return "[" + std::to_string(s.lo) + "," + std::to_string(s.hi) + ")";
}

std::string RankText(int rank) {
  return rank < 0 ? "every rank" : "rank " + std::to_string(rank);
}

}  // namespace

std::string Print(const WorkPlan& w) {
  const RungHeader& h = w.header();
  std::string out = "workplan";
  if (!h.name.empty()) out += " \"" + h.name + "\"";
  out += "\n";
  auto row = [&](const std::string& key, const std::string& value) {
    out += "  " + key + std::string(17 - key.size(), ' ') + ": " + value + "\n";
  };
  row("determinism_tier", policy::TierName(h.tier));
  row("parallelism", "data parallel over the batch, " + std::to_string(w.ranks()) + " rank" +
                         (w.ranks() == 1 ? "" : "s"));
  row("batch", std::to_string(w.batch) + " examples in " + std::to_string(w.chunks) +
                   (w.batch % w.chunks == 0 ? " chunks of " + std::to_string(w.chunk_examples)
                                             : " chunks (it does not divide into them)"));
  row("gradients_plan", "sha256:" + w.gradients_hash.substr(0, 16) + "  (" +
                            std::to_string(w.gradients->steps.size()) + " kernels per chunk)");
  row("update_plan", "sha256:" + w.update_hash.substr(0, 16) + "  (" +
                         std::to_string(w.update->steps.size()) + " kernels)");
  row("gradient_set", std::to_string(w.params.size()) + " params and the loss, " +
                          std::to_string(w.gradient_elements) + " floats (" +
                          FormatBytes(w.gradient_elements * 4) + ")");
  if (w.gradients->dataset)
    row("dataset", execplan::DescribeDataset(*w.gradients) + "; on every rank");
  std::string verdict = execplan::VerdictName(w.verdict);
  if (w.verdict == Verdict::kGreen) verdict += "  every rank fits";
  row("verdict", verdict);
  for (const Diagnostic& d : w.findings) out += "    " + d.Format() + "\n";
  if (w.verdict == Verdict::kRed && w.shards.empty()) return out;
  out += "  ranks:\n";
  for (const Shard& s : w.shards) {
    const execplan::DeviceLimits& d = w.devices.ranks[s.rank];
    out += "    rank " + std::to_string(s.rank) + "  " + d.backend + " (" + d.device +
           ")  chunks " + SpanText({s.first_chunk, s.first_chunk + s.chunks}) + "  examples [" +
           std::to_string(s.first_example) + "," + std::to_string(s.first_example + s.examples) +
           ")\n";
  }
  out += "  partials:";
  for (const Partial& p : w.partials) out += " " + SpanText(p.span) + "@" + std::to_string(p.rank);
  out += "\n  steps:\n";
  for (const WorkStep& s : w.steps) {
    out += "    " + std::string(StepKindName(s.kind)) + "  " + RankText(s.rank);
    switch (s.kind) {
      case StepKind::kGradients: {
        const Shard& sh = w.shards[s.rank];
        out += ": the gradients plan over chunks " +
               SpanText({sh.first_chunk, sh.first_chunk + sh.chunks});
        break;
      }
      case StepKind::kLocalReduce:
      case StepKind::kCombine:
        out += ":" + AddsText(s.adds);
        break;
      case StepKind::kAllGather:
        out += ": " + std::to_string(w.partials.size()) + " partials, " + FormatBytes(s.bytes) +
               " into each rank (host buffers)";
        break;
      case StepKind::kScale:
        out += ": divide by " + std::to_string(w.chunks);
        break;
      case StepKind::kApply:
        out += ": the update plan, the same gradient on every rank";
        break;
    }
    out += "\n";
  }
  out += "  memory:\n";
  for (const RankMemory& m : w.memory) {
    out += "    rank " + std::to_string(m.rank) + "  " + FormatBytes(m.total) + " of " +
           FormatBytes(m.budget) + "  (gradients plan " + FormatBytes(m.gradient_plan) +
           ", update plan " + FormatBytes(m.update_plan) + ", chunk gradients " +
           FormatBytes(m.chunk_gradients) + ", gathered " + FormatBytes(m.gathered) + ")  " +
           execplan::VerdictName(m.verdict) + "\n";
    for (const Diagnostic& d : m.findings) out += "      " + d.Format() + "\n";
  }
  return out;
}

Json ToJson(const WorkPlan& w) {
  Json j;
  j["determinism_tier"] = policy::TierName(w.header().tier);
  j["ranks"] = w.ranks();
  j["batch"] = w.batch;
  j["chunks"] = w.chunks;
  j["chunk_examples"] = w.chunk_examples;
  j["gradients_plan"] = w.gradients_hash;
  j["update_plan"] = w.update_hash;
  j["params"] = w.params;
  j["gradient_elements"] = w.gradient_elements;
  j["verdict"] = execplan::VerdictName(w.verdict);
  j["findings"] = Json::array();
  for (const Diagnostic& d : w.findings)
    j["findings"].push_back({{"code", d.code}, {"message", d.message}, {"help", d.help}});
  j["shards"] = Json::array();
  for (const Shard& s : w.shards) {
    const execplan::DeviceLimits& d = w.devices.ranks[s.rank];
    j["shards"].push_back({{"rank", s.rank},
                           {"backend", d.backend},
                           {"device", d.device},
                           {"first_chunk", s.first_chunk},
                           {"chunks", s.chunks},
                           {"first_example", s.first_example},
                           {"examples", s.examples}});
  }
  j["partials"] = Json::array();
  for (const Partial& p : w.partials)
    j["partials"].push_back({{"lo", p.span.lo}, {"hi", p.span.hi}, {"rank", p.rank}});
  j["steps"] = Json::array();
  for (const WorkStep& s : w.steps) {
    Json step = {{"kind", StepKindName(s.kind)}, {"rank", s.rank}};
    if (s.kind == StepKind::kLocalReduce || s.kind == StepKind::kCombine) {
      step["adds"] = Json::array();
      for (const Add& a : s.adds) step["adds"].push_back({a.lo, a.mid, a.hi});
    }
    if (s.kind == StepKind::kAllGather) step["bytes"] = s.bytes;
    j["steps"].push_back(step);
  }
  j["memory"] = Json::array();
  for (const RankMemory& m : w.memory) {
    Json mj = {{"rank", m.rank},
               {"gradients_plan", m.gradient_plan},
               {"update_plan", m.update_plan},
               {"chunk_gradients", m.chunk_gradients},
               {"gathered", m.gathered},
               {"total", m.total},
               {"budget", m.budget},
               {"verdict", execplan::VerdictName(m.verdict)},
               {"findings", Json::array()}};
    for (const Diagnostic& d : m.findings)
      mj["findings"].push_back({{"code", d.code}, {"message", d.message}, {"help", d.help}});
    j["memory"].push_back(mj);
  }
  return j;
}

Status Verify(const WorkPlan& w) {
  auto bad = [](const std::string& what) { return InternalError("workplan.Verify", what); };
  if (w.verdict == Verdict::kRed && w.shards.empty()) return Status::Ok();  // refused chunking
  if (static_cast<int>(w.shards.size()) != w.ranks() ||
      static_cast<int>(w.memory.size()) != w.ranks())
    return bad("not one shard and one memory plan per rank");
  // The shards tile the chunks in rank order, each a contiguous, non-empty run.
  int next = 0;
  for (const Shard& s : w.shards) {
    if (s.first_chunk != next || s.chunks < 1) return bad("the shards do not tile the chunks");
    if (s.first_example != s.first_chunk * w.chunk_examples ||
        s.examples != s.chunks * w.chunk_examples)
      return bad("rank " + std::to_string(s.rank) + "'s examples are not its chunks'");
    next += s.chunks;
  }
  if (next != w.chunks || w.chunk_examples * w.chunks != w.batch)
    return bad("the chunks do not cover the batch");
  // Every tree node is summed exactly once, after its operands, and by a rank that holds them:
  // the partials and the additions together are the whole tree over [0, chunks).
  std::vector<std::pair<Span, int>> have;  // node, rank holding it (-1: every rank)
  for (int c = 0; c < w.chunks; ++c) {
    int owner = OwnerOf(w.shards, {c, c + 1});
    have.push_back({{c, c + 1}, owner});
  }
  auto held = [&](Span s, int rank) {
    for (const auto& [span, r] : have)
      if (span == s && (r == rank || r == -1 || (rank == -1 && w.ranks() == 1))) return true;
    return false;
  };
  auto is_partial = [&](Span s) {
    for (const Partial& p : w.partials)
      if (p.span == s) return true;
    return false;
  };
  // The all-gather concatenates the ranks' partials in rank order: it must be the tree's order.
  for (size_t i = 1; i < w.partials.size(); ++i)
    if (w.partials[i].rank < w.partials[i - 1].rank)
      return bad("the partials are not in rank order");
  int combines = 0;
  for (const WorkStep& step : w.steps) {
    if (step.kind == StepKind::kAllGather) {
      for (auto& [span, r] : have)
        if (is_partial(span)) r = -1;
    }
    if (step.kind == StepKind::kCombine) ++combines;
    if (step.kind != StepKind::kLocalReduce && step.kind != StepKind::kCombine) continue;
    for (const Add& a : step.adds) {
      if (a.mid != Mid(a.lo, a.hi)) return bad("an addition off the tree's fixed split");
      if (!held({a.lo, a.mid}, step.rank) || !held({a.mid, a.hi}, step.rank))
        return bad(RankText(step.rank) + " adds " + SpanText({a.lo, a.hi}) +
                   " before holding both operands");
      if (held({a.lo, a.hi}, step.rank)) return bad(SpanText({a.lo, a.hi}) + " is summed twice");
      have.push_back({{a.lo, a.hi}, step.rank});
    }
  }
  if (combines != 1 || !held({0, w.chunks}, -1))
    return bad("the tree's root is not summed on every rank");
  if (w.ranks() > 1 && GatherCounts(w).size() != static_cast<size_t>(w.ranks()))
    return bad("the all-gather's counts are not one per rank");
  return Status::Ok();
}

}  // namespace scellis::workplan

#include "conform/runner.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>

#include "base/sha256.h"
#include "pipeline/compile.h"
#include "runtime/backends/cpu/executor.h"

namespace scellis::conform {
namespace {

// A case whose output sums many products or terms (matmul, sum, mean): its rounding scales with
// the magnitude of the terms, not of the result.
bool IsSum(const Case& c) {
  bool sum = false;
  for (const std::string& op : c.ops) {
    if (op == "matmul" || op == "sum" || op == "mean")
      sum = true;
    else if (op != "transpose")
      return false;  // transposes only move the terms
  }
  return sum;
}

pipeline::CompileOptions OptionsFor(policy::Tier tier, pipeline::Rung up_to,
                                    const execplan::DeviceLimits& limits) {
  pipeline::CompileOptions o;
  o.lower.tier = tier;
  o.up_to = up_to;
  o.plan.limits = limits;
  return o;
}

std::string FirstMessage(const std::vector<Diagnostic>& errors) {
  return errors.empty() ? "unknown error" : errors.front().Format();
}

// Appends one case's kernels to the running hash input.
void HashKernels(const kernel::Module& m, std::string& acc) {
  for (const kernel::Kernel& k : m.kernels) acc += k.Wgsl().source + "\n";
}

std::string Num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

std::string Index(int64_t i, const std::vector<int64_t>& sizes) {
  std::string s = "[";
  std::vector<int64_t> idx(sizes.size());
  for (int d = static_cast<int>(sizes.size()) - 1; d >= 0; --d) {
    idx[d] = sizes[d] ? i % sizes[d] : 0;
    i = sizes[d] ? i / sizes[d] : 0;
  }
  for (size_t d = 0; d < idx.size(); ++d) s += (d ? ", " : "") + std::to_string(idx[d]);
  return s + "]";
}

}  // namespace

std::string CaseResult::Failure() const {
  if (!error.empty()) return error;
  std::string s;
  const Comparison& c = comparison;
  if (c.mismatches) {
    s = std::to_string(c.mismatches) + " of " + std::to_string(c.elements) +
        " elements outside tolerance";
    if (c.unwritten) {
      s += " (" + std::to_string(c.unwritten) + " unwritten element" +
           (c.unwritten > 1 ? "s" : "") + ")";
    }
    s += "; first at " + first_bad_at + ": got " + Num(c.first_got) + ", want " + Num(c.first_want);
  }
  if (!rerun_identical)
    s += std::string(s.empty() ? "" : "; ") + "a second GPU run gave different bits";
  return s;
}

bool GroupResult::passed() const {
  if (cases.empty()) return false;
  for (const CaseResult& c : cases)
    if (!c.passed()) return false;
  return true;
}

uint64_t FreshSeed() {
  std::random_device rd;
  uint64_t t = static_cast<uint64_t>(std::chrono::system_clock::now().time_since_epoch().count());
  uint64_t s = (static_cast<uint64_t>(rd()) << 32) ^ rd() ^ (t * 0x9E3779B97F4A7C15ull);
  return s % 1000000000000ull;  // short enough to type back with --seed
}

Result<execplan::Plan> CompileCase(const Case& c, policy::Tier tier,
                                   const execplan::DeviceLimits& limits) {
  auto compiled =
      pipeline::Compile(CanonicalJson(c.doc), OptionsFor(tier, pipeline::Rung::kExecplan, limits));
  if (!compiled.ok()) return compiled.status();
  return std::move(*compiled->plan);
}

Result<std::string> SourceHash(const std::string& group, policy::Tier tier) {
  std::vector<Case> cases = CasesFor(group);
  if (cases.empty()) {
    return UserError("unknown-op", "", "conformance has no cases for \"" + group + "\"");
  }
  std::string acc;
  for (const Case& c : cases) {
    auto compiled =
        pipeline::Compile(CanonicalJson(c.doc), OptionsFor(tier, pipeline::Rung::kKernel, {}));
    if (!compiled.ok()) return compiled.status();
    HashKernels(*compiled->module, acc);
  }
  return "sha256:" + Sha256Hex(acc);
}

Result<std::vector<GroupResult>> Run(runtime::Executor& gpu, const Options& options) {
  std::vector<std::string> groups = options.groups.empty() ? Groups() : options.groups;
  for (const std::string& g : groups) {
    if (CasesFor(g).empty()) {
      std::string known;
      for (const std::string& k : Groups()) known += (known.empty() ? "" : ", ") + k;
      return UserError("unknown-op", "", "conformance has no cases for \"" + g + "\"",
                       "known ops: " + known);
    }
  }
  const execplan::DeviceLimits limits = gpu.limits();
  const kernel::ref::Parallel parallel(kernel::ref::ThreadsFor(options.cpu_threads));
  const bool debug = options.tier == policy::Tier::kDebug;

  std::vector<GroupResult> results;
  for (const std::string& group : groups) {
    GroupResult gr;
    gr.group = group;
    std::string hash_input;
    for (const Case& c : CasesFor(group)) {
      CaseResult cr;
      cr.id = c.id();
      cr.tolerance = c.tolerance;
      cr.thresholds = policy::ResolveThresholds(c.tolerance, options.tier);
      gr.tolerance = std::max(gr.tolerance, c.tolerance);

      auto plan = CompileCase(c, options.tier, limits);
      if (!plan.ok()) {
        cr.error = "does not compile: " + FirstMessage(plan.errors());
        gr.cases.push_back(std::move(cr));
        continue;
      }
      if (plan->verdict == execplan::Verdict::kRed) {
        cr.error = "its plan is red: " + FirstMessage(plan->findings);
        gr.cases.push_back(std::move(cr));
        continue;
      }
      execplan::Plan gpu_plan = *plan;
      if (options.tamper) {
        auto tampered = std::make_shared<kernel::Module>(plan->module());
        for (kernel::Kernel& k : tampered->kernels) options.tamper(k);
        gpu_plan.module_ref = std::move(tampered);
      }
      HashKernels(gpu_plan.module(), hash_input);
      const TensorType& out_type = plan->graph().at(plan->graph().outputs.at(0).node).type;
      cr.shape = out_type.ShapeString();

      runtime::Feeds feeds = MakeFeeds(c, options.seed);
      auto want = runtime::cpu::RunPlan<float>(*plan, feeds, parallel);
      if (!want.ok()) {
        cr.error = "the CPU reference failed: " + FirstMessage(want.errors());
        gr.cases.push_back(std::move(cr));
        continue;
      }
      auto got = gpu.Run(gpu_plan, feeds, {.poison_outputs = true});
      if (!got.ok()) {
        // A device that failed after work began is poisoned: nothing after this can run.
        if (!gpu.health().ok()) return got.status();
        cr.error = "the GPU run failed: " + FirstMessage(got.errors());
        gr.cases.push_back(std::move(cr));
        continue;
      }
      const std::vector<float> got_data = got->outputs.at(0).second.ToFloats();
      // Sums are judged against the magnitude of their terms: the reference over |inputs|.
      std::vector<float> magnitude;
      if (IsSum(c)) {
        runtime::Feeds abs_feeds = feeds;
        for (auto& [name, t] : abs_feeds)
          for (float& v : t.view<float>()) v = std::fabs(v);
        auto m = runtime::cpu::RunPlan<float>(*plan, abs_feeds, parallel);
        if (m.ok()) magnitude = std::move(m->at(0));
      }
      cr.comparison =
          Compare(got_data, want->at(0), cr.thresholds, runtime::kPoisonBits, magnitude);
      if (cr.comparison.first_bad >= 0)
        cr.first_bad_at = Index(cr.comparison.first_bad, out_type.sizes());
      if (debug) {
        auto again = gpu.Run(gpu_plan, feeds, {.poison_outputs = true});
        if (!again.ok()) {
          if (!gpu.health().ok()) return again.status();
          cr.error = "the second GPU run failed: " + FirstMessage(again.errors());
        } else {
          cr.rerun_identical = BitIdentical(got_data, again->outputs.at(0).second.ToFloats());
        }
      }
      gr.max_abs = std::max(gr.max_abs, cr.comparison.max_abs);
      gr.max_rel = std::max(gr.max_rel, cr.comparison.max_rel);
      gr.elements += cr.comparison.elements;
      gr.cases.push_back(std::move(cr));
    }
    gr.thresholds = policy::ResolveThresholds(gr.tolerance, options.tier);
    gr.source_hash = "sha256:" + Sha256Hex(hash_input);
    if (options.on_group) options.on_group(gr);
    results.push_back(std::move(gr));
  }
  return results;
}

}  // namespace scellis::conform

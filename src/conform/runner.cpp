#include "conform/runner.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <optional>
#include <random>

#include "base/sha256.h"
#include "conform/user_gradcheck.h"
#include "ops/user_op.h"
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

// What a group's hash starts from: a user op's definition (its WGSL, reference and signature),
// nothing for a built-in, whose definition is the build.
std::string HashSeed(const std::string& group, const ops::OpTable& ops) {
  const ops::OpSpec* spec = ops.Find(group);
  return spec && spec->user ? spec->user->definition_hash + "\n" : "";
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
  pipeline::CompileOptions options = OptionsFor(tier, pipeline::Rung::kExecplan, limits);
  if (c.table) options.lower.ops = c.table;
  auto compiled = pipeline::Compile(CanonicalJson(c.doc), options);
  if (!compiled.ok()) return compiled.status();
  return std::move(*compiled->plan);
}

Result<std::string> SourceHash(const std::string& group, policy::Tier tier,
                               const ops::OpTable& ops) {
  std::vector<Case> cases = CasesFor(group, ops);
  if (cases.empty()) {
    return UserError("unknown-op", "", "conformance has no cases for \"" + group + "\"");
  }
  std::string acc = HashSeed(group, ops);
  for (const Case& c : cases) {
    pipeline::CompileOptions options = OptionsFor(tier, pipeline::Rung::kKernel, {});
    if (c.table) options.lower.ops = c.table;
    auto compiled = pipeline::Compile(CanonicalJson(c.doc), options);
    if (!compiled.ok()) return compiled.status();
    HashKernels(*compiled->module, acc);
  }
  return "sha256:" + Sha256Hex(acc);
}

namespace {

Status CheckGroups(const std::vector<std::string>& groups,
                   const ops::OpTable& ops = *ops::BuiltinOps()) {
  for (const std::string& g : groups) {
    if (CasesFor(g, ops).empty()) {
      std::string known;
      for (const std::string& k : Groups()) known += (known.empty() ? "" : ", ") + k;
      return UserError("unknown-op", "", "conformance has no cases for \"" + g + "\"",
                       "known ops: " + known);
    }
  }
  return Status::Ok();
}

// A case ready to run on a device: its plan compiled for the device's limits and its fresh feeds.
// When it cannot run, `result.error` says why and the plan is empty.
struct ReadyCase {
  CaseResult result;
  std::optional<execplan::Plan> plan;
  runtime::Feeds feeds;
};

ReadyCase Ready(const Case& c, policy::Tier tier, const execplan::DeviceLimits& limits,
                uint64_t seed) {
  ReadyCase r;
  r.result.id = c.id();
  r.result.tolerance = c.tolerance;
  r.result.thresholds = policy::ResolveThresholds(c.tolerance, tier);
  auto plan = CompileCase(c, tier, limits);
  if (!plan.ok()) {
    r.result.error = "does not compile: " + FirstMessage(plan.errors());
    return r;
  }
  if (plan->verdict == execplan::Verdict::kRed) {
    r.result.error = "its plan is red: " + FirstMessage(plan->findings);
    return r;
  }
  r.result.shape = plan->graph().at(plan->graph().outputs.at(0).node).type.ShapeString();
  r.feeds = MakeFeeds(c, seed);
  r.plan = std::move(*plan);
  return r;
}

bool IsIntegerOutput(const execplan::Plan& plan) {
  const DType t = plan.graph().at(plan.graph().outputs.at(0).node).type.dtype;
  return t == DType::kI32 || t == DType::kU32;
}

// A device's output as the reference's f32 buffers hold it (kernel/ref/ref.h): values, except
// integers, which are their bits.
std::vector<float> Slots(const runtime::HostTensor& t) {
  if (t.type.dtype != DType::kI32 && t.type.dtype != DType::kU32) return t.ToFloats();
  std::vector<float> slots(static_cast<size_t>(t.elements()));
  if (!slots.empty()) std::memcpy(slots.data(), t.bytes.data(), t.bytes.size());
  return slots;
}

// Judges what a device computed for a ready case (and, in the debug tier, what it computed the
// second time) against the CPU reference, into r.result.
void Judge(const Case& c, ReadyCase& r, const std::vector<float>& got,
           const std::optional<std::vector<float>>& again, const kernel::ref::Parallel& parallel) {
  CaseResult& cr = r.result;
  const execplan::Plan& plan = *r.plan;
  auto want = runtime::cpu::RunPlan<float>(plan, r.feeds, parallel);
  if (!want.ok()) {
    cr.error = "the CPU reference failed: " + FirstMessage(want.errors());
    return;
  }
  // Sums are judged against the magnitude of their terms: the reference over |inputs|.
  std::vector<float> magnitude;
  if (IsSum(c)) {
    runtime::Feeds abs_feeds = r.feeds;
    for (auto& [name, t] : abs_feeds)
      for (float& v : t.view<float>()) v = std::fabs(v);
    auto m = runtime::cpu::RunPlan<float>(plan, abs_feeds, parallel);
    if (m.ok()) magnitude = std::move(m->at(0));
  }
  cr.comparison = IsIntegerOutput(plan)
                      ? CompareBits(got, want->at(0), runtime::kPoisonBits)
                      : Compare(got, want->at(0), cr.thresholds, runtime::kPoisonBits, magnitude);
  if (cr.comparison.first_bad >= 0) {
    const TensorType& out_type = plan.graph().at(plan.graph().outputs.at(0).node).type;
    cr.first_bad_at = PositionText(cr.comparison.first_bad, out_type.sizes());
  }
  if (again) cr.rerun_identical = BitIdentical(got, *again);
}

void AddCase(GroupResult& gr, CaseResult cr) {
  gr.tolerance = std::max(gr.tolerance, cr.tolerance);
  gr.max_abs = std::max(gr.max_abs, cr.comparison.max_abs);
  gr.max_rel = std::max(gr.max_rel, cr.comparison.max_rel);
  gr.elements += cr.comparison.elements;
  gr.cases.push_back(std::move(cr));
}

void FinishGroup(GroupResult& gr, policy::Tier tier, const std::string& hash_input) {
  gr.thresholds = policy::ResolveThresholds(gr.tolerance, tier);
  gr.source_hash = "sha256:" + Sha256Hex(hash_input);
}

}  // namespace

Result<std::vector<GroupResult>> Run(runtime::Executor& gpu, const Options& options) {
  std::vector<std::string> groups = options.groups.empty() ? Groups() : options.groups;
  SCELLIS_TRY(CheckGroups(groups, *options.ops));
  const execplan::DeviceLimits limits = gpu.limits();
  const kernel::ref::Parallel parallel(kernel::ref::ThreadsFor(options.cpu_threads));
  const bool debug = options.tier == policy::Tier::kDebug;

  std::vector<GroupResult> results;
  for (const std::string& group : groups) {
    GroupResult gr;
    gr.group = group;
    std::string hash_input = HashSeed(group, *options.ops);
    for (const Case& c : CasesFor(group, *options.ops)) {
      ReadyCase r = Ready(c, options.tier, limits, options.seed);
      if (!r.plan) {
        AddCase(gr, std::move(r.result));
        continue;
      }
      execplan::Plan gpu_plan = *r.plan;
      if (options.tamper) {
        auto tampered = std::make_shared<kernel::Module>(r.plan->module());
        for (kernel::Kernel& k : tampered->kernels) options.tamper(k);
        gpu_plan.module_ref = std::move(tampered);
      }
      HashKernels(gpu_plan.module(), hash_input);
      // One poisoned run of the case: its output, or why the case failed. A device that failed
      // after work began is poisoned, and nothing after it can run: conformance ends there.
      Status device_lost;
      auto run = [&](const char* which) -> std::optional<std::vector<float>> {
        auto out = gpu.Run(gpu_plan, r.feeds, {.poison_outputs = true});
        if (out.ok()) return Slots(out->outputs.at(0).second);
        if (!gpu.health().ok()) device_lost = out.status();
        r.result.error = std::string(which) + " failed: " + FirstMessage(out.errors());
        return std::nullopt;
      };
      std::optional<std::vector<float>> got = run("the GPU run");
      std::optional<std::vector<float>> again;
      if (got && debug) again = run("the second GPU run");
      if (!device_lost.ok()) return device_lost;
      if (!got || (debug && !again)) {
        AddCase(gr, std::move(r.result));
        continue;
      }
      Judge(c, r, *got, again, parallel);
      AddCase(gr, std::move(r.result));
    }
    // A user op's gradient is also held to its forward: finite differences of its reference.
    // Their errors, judged by other thresholds, stay out of the group's (the device's) figures.
    if (const ops::OpSpec* spec = options.ops->Find(group); spec && spec->user)
      for (CaseResult& cr : GradcheckUserOp(*spec, *options.ops, options.seed, parallel))
        gr.cases.push_back(std::move(cr));
    FinishGroup(gr, options.tier, hash_input);
    if (options.on_group) options.on_group(gr);
    results.push_back(std::move(gr));
  }
  return results;
}

Result<std::vector<RemoteCase>> RemoteCases(const std::string& group, policy::Tier tier,
                                            uint64_t seed, const RemoteDevice& device) {
  SCELLIS_TRY(CheckGroups({group}));
  std::vector<RemoteCase> out;
  for (const Case& c : CasesFor(group)) {
    ReadyCase r = Ready(c, tier, device.limits, seed);
    RemoteCase rc;
    rc.id = r.result.id;
    rc.error = r.result.error;
    if (r.plan) {
      auto program = runtime::BuildDeviceProgram(*r.plan, {}, device.program_limits);
      if (program.ok()) {
        rc.program = std::move(program.value());
        rc.feeds = std::move(r.feeds);
      } else {
        rc.error = "has no device program: " + FirstMessage(program.errors());
      }
    }
    out.push_back(std::move(rc));
  }
  return out;
}

Result<GroupResult> JudgeRemote(const std::string& group, policy::Tier tier, uint64_t seed,
                                const RemoteDevice& device,
                                const std::map<std::string, RemoteAnswer>& answers,
                                int cpu_threads) {
  SCELLIS_TRY(CheckGroups({group}));
  const kernel::ref::Parallel parallel(kernel::ref::ThreadsFor(cpu_threads));
  GroupResult gr;
  gr.group = group;
  std::string hash_input;
  for (const Case& c : CasesFor(group)) {
    ReadyCase r = Ready(c, tier, device.limits, seed);
    if (!r.plan) {
      AddCase(gr, std::move(r.result));
      continue;
    }
    // The hash covers the WGSL this engine generated, which is what the device was given.
    HashKernels(r.plan->module(), hash_input);
    auto a = answers.find(r.result.id);
    if (a == answers.end()) {
      r.result.error = "the device gave no answer for this case";
    } else if (!a->second.error.empty()) {
      r.result.error = "the device's run failed: " + a->second.error;
    } else if (tier == policy::Tier::kDebug && !a->second.rerun) {
      r.result.error = "the debug tier needs a second run of every case, and none was given";
    } else {
      Judge(c, r, a->second.out, a->second.rerun, parallel);
    }
    AddCase(gr, std::move(r.result));
  }
  FinishGroup(gr, tier, hash_input);
  return gr;
}

}  // namespace scellis::conform

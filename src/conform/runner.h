// Conformance: every case of every group runs on the CPU reference (the oracle) and on the
// executor under test (a WebGPU device, in practice) with poisoned outputs; every output element
// must agree within the tolerance class of the op (for a fused chain, the loosest class of its ops)
// resolved for the tier. In the debug tier each case also runs a second time on the GPU and must
// reproduce its bits exactly.
//
// Example
//
//   auto sel = runtime::SelectBackend({.requested = "webgpu", .allow_software_adapter = true});
//   runtime::Executor& gpu = *sel->executor;
//   auto results = conform::Run(gpu, {.tier = policy::Tier::kProd, .seed = conform::FreshSeed()});
//   for (const conform::GroupResult& g : *results)
//     if (g.passed()) conform::MintReceipt(store, g, gpu.profile(), ...);
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/determinism.h"
#include "conform/cases.h"
#include "conform/compare.h"
#include "kernel/module.h"
#include "runtime/device_program.h"
#include "runtime/executor.h"

namespace scellis::conform {

struct CaseResult {
  std::string id;     // "add/bcast_row"
  std::string shape;  // of the output, e.g. "[7, 97]"
  policy::ToleranceClass tolerance = policy::ToleranceClass::kExact;
  policy::Thresholds thresholds;
  Comparison comparison;
  std::string first_bad_at;     // multi-index of the first mismatch, e.g. "[3, 96]"
  bool rerun_identical = true;  // debug tier: the second GPU run gave the same bits
  std::string error;            // the case could not run: compile or dispatch failed

  bool passed() const { return error.empty() && comparison.ok() && rerun_identical; }
  // One line saying what failed, "" when it passed.
  std::string Failure() const;
};

struct GroupResult {
  std::string group;  // an op, or kFusedGroup
  // The loosest class over the cases, and its thresholds (what the table prints).
  policy::ToleranceClass tolerance = policy::ToleranceClass::kExact;
  policy::Thresholds thresholds;
  std::vector<CaseResult> cases;
  double max_abs = 0, max_rel = 0;
  int64_t elements = 0;
  // sha256 over the WGSL of every kernel of every case, in order: a change to the generated code
  // (or to the cases) gives a new hash, and receipts for the old one no longer count.
  std::string source_hash;

  bool passed() const;
};

struct Options {
  policy::Tier tier = policy::Tier::kProd;
  uint64_t seed = 0;
  std::vector<std::string> groups;  // empty: every group (Groups())
  // Where the groups' ops are found: the built-ins, or a document's table with its own ops (a
  // user op's group is named after it and proves its WGSL against its reference).
  std::shared_ptr<const ops::OpTable> ops = ops::BuiltinOps();
  int cpu_threads = 0;              // 0: the machine's hardware threads
  // Called on every kernel of the plan the GPU runs, after the reference plan is fixed. Tests
  // use it to break a kernel on purpose and check that conformance catches it.
  std::function<void(kernel::Kernel&)> tamper;
  // Called after each group, e.g. to print progress.
  std::function<void(const GroupResult&)> on_group;
};

// A seed from the clock and the OS's entropy, for fresh data on every run.
uint64_t FreshSeed();

// Runs the groups. An unknown group is a user error (`unknown-op`); a device failure ends the run
// with its runtime error; a case that fails to compile or run is a failed case.
Result<std::vector<GroupResult>> Run(runtime::Executor& gpu, const Options& options);

// ---- conformance of a device the engine reaches only through its caller (a browser tab) ----
//
// The caller asks for a group's cases (RemoteCases): each is a device program, the exact WGSL and
// dispatches the engine generated for the device's limits, with its fresh feeds. The device runs
// each once (twice in the debug tier) with its outputs poisoned first, and the caller hands the
// outputs back; JudgeRemote compiles the cases again from the same seed, so nothing but the
// outputs is taken from the device, and judges them against the CPU reference exactly as Run
// judges its own device's. The result mints receipts like any other group.

struct RemoteDevice {
  execplan::DeviceLimits limits;          // what the plans are judged against
  runtime::ProgramLimits program_limits;  // what the programs are laid out for
};

struct RemoteCase {
  std::string id;
  std::string error;  // the case cannot run (does not compile, red plan): nothing to send
  std::optional<runtime::DeviceProgram> program;
  runtime::Feeds feeds;
};

// What the device computed for one case: the output's elements, the second run's in the debug
// tier, or the error its run ended with.
struct RemoteAnswer {
  std::vector<float> out;
  std::optional<std::vector<float>> rerun;
  std::string error;
};

Result<std::vector<RemoteCase>> RemoteCases(const std::string& group, policy::Tier tier,
                                            uint64_t seed, const RemoteDevice& device);

// A case without an answer fails; answers for ids the group does not have are ignored.
Result<GroupResult> JudgeRemote(const std::string& group, policy::Tier tier, uint64_t seed,
                                const RemoteDevice& device,
                                const std::map<std::string, RemoteAnswer>& answers,
                                int cpu_threads = 0);

// The source hash of a group's cases as compiled for `tier`, without running anything: what a
// receipt must name to count for the code this build generates. A user op's (found in `ops`)
// also covers its whole definition, so a receipt counts only for the reference it was proved
// against.
Result<std::string> SourceHash(const std::string& group, policy::Tier tier,
                               const ops::OpTable& ops = *ops::BuiltinOps());

// Compiles one case through the real ladder (pipeline::Compile) for `tier` and device `limits`.
Result<execplan::Plan> CompileCase(const Case& c, policy::Tier tier,
                                   const execplan::DeviceLimits& limits);

}  // namespace scellis::conform

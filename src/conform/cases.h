// Conformance cases, generated from each registered op's signature (its kind, inputs and
// attributes): edge sizes (0, 1, primes, sizes that are not multiples of the workgroup size), a
// grid of more than 65535 workgroups for cheap ops, broadcasting variants, batched matmuls,
// reductions over every axis, layout changes, Game-of-Life grids, and fused elementwise chains.
//
// A case is a graph-protocol document whose inputs carry no data: data is generated per run from
// a seed (fresh by default, reproducible with the same seed) and fed, so the document — and hence
// the generated WGSL and its hash — does not depend on the seed. Every case goes through the real
// compiler (pipeline::Compile), so lowering and fusion are exercised as users meet them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/determinism.h"
#include "base/json_util.h"
#include "runtime/executor.h"

namespace scellis::conform {

// Where an input's values are drawn from. Never zero; always inside the op's domain.
enum class Domain {
  kSigned,        // uniform in [-2, 2], zero excluded
  kPositive,      // uniform in [0.125, 4] (log, sqrt)
  kAwayFromZero,  // magnitude in [0.5, 2], either sign (divisors)
  kBinary,        // 0 or 1, at least one 1 (Game-of-Life cells)
  kLabels,        // class indices 0 .. classes-1, as f32 (cross-entropy targets)
  kStep,          // an optimizer step number, an integer in 1 .. 1000
};

struct CaseInput {
  std::string name;  // the input node's "name", which is also its feed name
  std::vector<int64_t> shape;
  Domain domain = Domain::kSigned;
  int classes = 0;  // kLabels only
};

struct Case {
  std::string group;             // the op it conforms, or "fused" for elementwise chains
  std::string name;              // unique within its group, e.g. "bcast_row"
  std::vector<std::string> ops;  // the ops it exercises (several for a fused chain)
  std::vector<CaseInput> inputs;
  Json doc;  // graph protocol; its single output is named "out"
  // The tolerance class the comparison uses: the loosest class of `ops`.
  policy::ToleranceClass tolerance = policy::ToleranceClass::kExact;

  std::string id() const { return group + "/" + name; }
};

// The name of the group of fused elementwise chains.
inline constexpr const char* kFusedGroup = "fused";

// Every group that conformance covers: each non-source op of the registry, in registry order,
// then the fused chains.
std::vector<std::string> Groups();

// The cases of one group; empty when the group is unknown or its op has no case generator (a
// registry test fails on that).
std::vector<Case> CasesFor(const std::string& group);

// Fresh input data for `c`: a pure function of (seed, case, input, element).
runtime::Feeds MakeFeeds(const Case& c, uint64_t seed);

}  // namespace scellis::conform

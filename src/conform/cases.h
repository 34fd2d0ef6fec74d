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
#include "ops/op_table.h"
#include "runtime/executor.h"

namespace scellis::conform {

// Where an input's values are drawn from. Never zero (but for kCoarse and kMask); always inside
// the op's domain.
enum class Domain {
  kSigned,        // uniform in [-2, 2], zero excluded
  kPositive,      // uniform in [0.125, 4] (log, sqrt)
  kAwayFromZero,  // magnitude in [0.5, 2], either sign (divisors)
  kBinary,        // 0 or 1, at least one 1 (Game-of-Life cells)
  kLabels,        // class indices 0 .. classes-1, as f32 (cross-entropy targets)
  kStep,          // an optimizer step number, an integer in 1 .. 1000
  kCoarse,        // multiples of 0.5 in [-2, 2], +-0 included: comparisons meet ties and zeros
  kMask,          // a bool tensor, 0 or 1 at random
  kInt32,         // an i32 tensor over the whole range: the extremes, 0, +-1, values past 2^24
                  // (one f32 cannot hold) and random ones
  kUInt32,        // a u32 tensor over the whole range: 0, 2^32 - 1, 2^31, values past 2^24 and
                  // random ones
  kSmallInt32,    // an i32 tensor of -3 .. 3: comparisons and selections meet ties
  kIndex,         // an i32 tensor of indices 0 .. classes-1 (gathers), repeats likely
  kWide,          // f32 of magnitude 2^-2 .. 2^33, either sign: fractions to truncate and values
                  // past the i32 range to saturate
  kFixed,         // i32 fixed-point values in [-2^13, 2^13] (matmul_fixed: every case's sums fit)
  kBlocks,        // k-quant blocks (q4_k, q6_k): random bytes, each block's f16 d (and dmin) a
                  // finite random value of magnitude below 1/32
};

struct CaseInput {
  std::string name;  // the input node's "name", which is also its feed name
  std::vector<int64_t> shape;
  Domain domain = Domain::kSigned;
  int classes = 0;            // kLabels only
  DType dtype = DType::kF32;  // bool for kMask, i32 for kInt32, kSmallInt32, kIndex and kFixed,
                              // u32 for kUInt32, q4_k/q6_k for kBlocks
};

struct Case {
  std::string group;             // the op it conforms, or "fused" for elementwise chains
  std::string name;              // unique within its group, e.g. "bcast_row"
  std::vector<std::string> ops;  // the ops it exercises (several for a fused chain)
  std::vector<CaseInput> inputs;
  Json doc;  // graph protocol; its single output is named "out"
  // The tolerance class the comparison uses: the loosest class of `ops`.
  policy::ToleranceClass tolerance = policy::ToleranceClass::kExact;
  // The table `doc` is read against when it is not the built-ins: a user op defined through the
  // API (api/user_ops.h), whose callable reference no document can carry.
  std::shared_ptr<const ops::OpTable> table;

  std::string id() const { return group + "/" + name; }
};

// The name of the group of fused elementwise chains.
inline constexpr const char* kFusedGroup = "fused";

// Every group that conformance covers: each non-source op of the registry, in registry order,
// then the fused chains.
std::vector<std::string> Groups();

// The cases of one group; empty when the group is unknown or its op has no case generator (a
// registry test fails on that). A user op of `ops` (a document's table) gets UserOpCases.
std::vector<Case> CasesFor(const std::string& group, const ops::OpTable& ops = *ops::BuiltinOps());

// The cases of a user op (conform/user_cases.cpp), from its signature: each input of the output's
// shape, at edge sizes of the declared rank; each case's document carries the op's definition (or,
// for a callable reference, the case its table).
std::vector<Case> UserOpCases(const ops::OpSpec& spec);
// The group of a user op: its cases, then those of each gradient it defines ("grad_x/r2_7x13"),
// whose ops are found in `table`; none for a gradient's own op, conformed with its forward.
std::vector<Case> UserOpGroupCases(const ops::OpSpec& spec, const ops::OpTable& table);

// Fresh input data for `c`: a pure function of (seed, case, input, element).
runtime::Feeds MakeFeeds(const Case& c, uint64_t seed);

// A case with fixed inputs holding NaN, +-inf and +-0, and the output PyTorch gives for them
// (float32; life, which PyTorch lacks, by its stated rule in NumPy), so both the CPU reference
// and every GPU are held to PyTorch's NaN semantics and not merely to each other. The
// expectations are generated by tools/special_value_expectations.py.
struct SpecialValueCase {
  Case c;  // its group is the op; tolerance as the op's
  runtime::Feeds feeds;
  std::vector<float> want;
};

// At least one per non-source op of the registry.
std::vector<SpecialValueCase> SpecialValueCases();

}  // namespace scellis::conform

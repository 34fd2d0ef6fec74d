// Determinism tiers and tolerance classes: the numeric contract every run declares.
//
// Tiers, strictest first: debug (bitwise-identical runs on the same device), prod (deterministic
// within the declared tolerance class), fast (throughput first). A run never gets a tier by
// default: no effective tier is the diagnostic `missing-determinism-tier`.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "base/result.h"

namespace scellis::policy {

enum class Tier { kDebug = 0, kProd = 1, kFast = 2 };  // lower = stricter
enum class ToleranceClass { kExact, kTight, kDefault, kLoose };

const char* TierName(Tier t);
std::optional<Tier> ParseTier(const std::string& s);
const char* ToleranceName(ToleranceClass c);
std::optional<ToleranceClass> ParseTolerance(const std::string& s);

// Where a tier was declared, for composition and for explaining the outcome.
struct TierDeclaration {
  Tier tier;
  std::string source;   // "document", "node x", "--tier"
  std::string pointer;  // JSON pointer of the declaration, "" for the command line
};

struct TierResolution {
  Tier tier;
  std::string source;
  std::vector<Diagnostic> notes;  // e.g. the override that dropped a stricter tier
};

// Strictest declaration wins. An explicit override replaces the result and, when it is less strict
// than what was declared, announces itself with the warning `tier-override-drops-stricter`.
Result<TierResolution> ResolveTier(const std::vector<TierDeclaration>& declared,
                                   const std::optional<TierDeclaration>& override_tier);

// |got - want| <= atol + rtol * |want|, elementwise.
struct Thresholds {
  double atol = 0;
  double rtol = 0;
  bool Accepts(double got, double want) const;
};

// The explicit numbers a tolerance class means under a tier. `exact` is bitwise in every tier.
Thresholds ResolveThresholds(ToleranceClass c, Tier t);

// Thresholds for comparing a gradient with central finite differences (float64).
Thresholds GradcheckThresholds();

}  // namespace scellis::policy

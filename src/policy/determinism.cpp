#include "policy/determinism.h"

#include <cmath>

namespace scellis::policy {

const char* TierName(Tier t) {
  switch (t) {
    case Tier::kDebug:
      return "debug";
    case Tier::kProd:
      return "prod";
    case Tier::kFast:
      return "fast";
  }
  return "?";
}

std::optional<Tier> ParseTier(const std::string& s) {
  if (s == "debug") return Tier::kDebug;
  if (s == "prod") return Tier::kProd;
  if (s == "fast") return Tier::kFast;
  return std::nullopt;
}

const char* ToleranceName(ToleranceClass c) {
  switch (c) {
    case ToleranceClass::kExact:
      return "exact";
    case ToleranceClass::kTight:
      return "tight";
    case ToleranceClass::kDefault:
      return "default";
    case ToleranceClass::kLoose:
      return "loose";
  }
  return "?";
}

std::optional<ToleranceClass> ParseTolerance(const std::string& s) {
  if (s == "exact") return ToleranceClass::kExact;
  if (s == "tight") return ToleranceClass::kTight;
  if (s == "default") return ToleranceClass::kDefault;
  if (s == "loose") return ToleranceClass::kLoose;
  return std::nullopt;
}

Result<TierResolution> ResolveTier(const std::vector<TierDeclaration>& declared,
                                   const std::optional<TierDeclaration>& override_tier) {
  const TierDeclaration* strictest = nullptr;
  for (const TierDeclaration& d : declared)
    if (!strictest || d.tier < strictest->tier) strictest = &d;

  if (override_tier) {
    TierResolution r{override_tier->tier, override_tier->source, {}};
    if (strictest && strictest->tier < override_tier->tier) {
      r.notes.push_back(Warning("tier-override-drops-stricter", override_tier->pointer,
                                std::string("the override to tier ") +
                                    TierName(override_tier->tier) + " (" + override_tier->source +
                                    ") drops the stricter tier " + TierName(strictest->tier) +
                                    " declared by " + strictest->source,
                                "remove the override to keep the stricter guarantee"));
    }
    return r;
  }
  if (!strictest) {
    return UserError("missing-determinism-tier", "",
                     "no determinism tier is declared for this run; Scellis never assumes one",
                     "declare \"determinism\": \"debug\" | \"prod\" | \"fast\" in the document, "
                     "or pass --tier=debug|prod|fast");
  }
  TierResolution r{strictest->tier, strictest->source, {}};
  return r;
}

bool Thresholds::Accepts(double got, double want) const {
  if (std::isnan(want)) return std::isnan(got);
  if (std::isinf(want)) return got == want;
  if (atol == 0 && rtol == 0) return got == want;
  return std::fabs(got - want) <= atol + rtol * std::fabs(want);
}

Thresholds ResolveThresholds(ToleranceClass c, Tier t) {
  // Rows: tolerance class; columns: debug, prod, fast. f32 has about 6e-8 relative precision;
  // `tight` allows a few ulps of reordering, `default` the reordering of long reductions, `loose`
  // approximate transcendental functions on GPUs.
  static const Thresholds kTable[4][3] = {
      {{0, 0}, {0, 0}, {0, 0}},
      {{1e-7, 1e-6}, {1e-6, 2e-6}, {1e-5, 1e-5}},
      {{1e-6, 1e-5}, {1e-5, 1e-4}, {1e-4, 1e-3}},
      {{1e-4, 1e-3}, {1e-3, 1e-2}, {1e-2, 5e-2}},
  };
  return kTable[static_cast<int>(c)][static_cast<int>(t)];
}

Thresholds GradcheckThresholds() {
  return {1e-6, 1e-4};
}

}  // namespace scellis::policy

#include "base/determinism.h"

#include <cmath>

#include "base/enum_table.h"

namespace scellis::policy {

namespace {
constexpr EnumTable<Tier, 3> kTiers({{{Tier::kDebug, "debug"}, {Tier::kProd, "prod"}, {Tier::kFast, "fast"}}});
constexpr EnumTable<ToleranceClass, 4> kTolerances({{{ToleranceClass::kExact, "exact"},
                                                     {ToleranceClass::kTight, "tight"},
                                                     {ToleranceClass::kDefault, "default"},
                                                     {ToleranceClass::kLoose, "loose"}}});
}  // namespace

const char* TierName(Tier t) {
  return kTiers.Name(t);
}
std::optional<Tier> ParseTier(const std::string& s) {
  return kTiers.Parse(s);
}
const char* ToleranceName(ToleranceClass c) {
  return kTolerances.Name(c);
}
std::optional<ToleranceClass> ParseTolerance(const std::string& s) {
  return kTolerances.Parse(s);
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

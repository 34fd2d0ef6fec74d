#include "api/conform.h"

#include <algorithm>
#include <cmath>

#include "conform/receipt.h"
#include "store/store.h"

namespace scellis::api {
namespace {

Json Number(double v) {
  return std::isfinite(v) ? Json(v) : Json(std::isnan(v) ? "nan" : "inf");
}

}  // namespace

int ConformReport::failed() const {
  int n = 0;
  for (const conform::GroupResult& g : groups) n += !g.passed();
  return n;
}

Json ConformReport::ToJson() const {
  Json ops = Json::array();
  for (const conform::GroupResult& g : groups) {
    Json failures = Json::array();
    for (const conform::CaseResult& c : g.cases)
      if (!c.passed())
        failures.push_back({{"case", c.id},
                            {"message", c.Failure()},
                            {"unwritten", c.comparison.unwritten},
                            {"mismatches", c.comparison.mismatches}});
    auto r = receipts.find(g.group);
    ops.push_back({{"op", g.group},
                   {"cases", g.cases.size()},
                   {"elements", g.elements},
                   {"tolerance", policy::ToleranceName(g.tolerance)},
                   {"thresholds", {{"atol", g.thresholds.atol}, {"rtol", g.thresholds.rtol}}},
                   {"max_abs_error", Number(g.max_abs)},
                   {"max_rel_error", Number(g.max_rel)},
                   {"passed", g.passed()},
                   {"source_hash", g.source_hash},
                   {"receipt", r == receipts.end() ? Json() : Json(r->second)},
                   {"failures", failures}});
  }
  return {{"ok", failed() == 0},
          {"tier", policy::TierName(tier)},
          {"seed", seed},
          {"profile", profile.key},
          {"device",
           {{"device", profile.device},
            {"vendor", profile.vendor},
            {"architecture", profile.architecture},
            {"driver", profile.driver},
            {"backend_api", profile.backend_api},
            {"dawn_version", profile.dawn_version},
            {"is_software", profile.is_software}}},
          {"store", store_root ? Json(*store_root) : Json()},
          {"ops", ops}};
}

std::vector<Diagnostic> CheckConformOptions(const ConformOptions& o) {
  std::vector<Diagnostic> errors;
  if (!policy::ParseTier(o.tier)) {
    errors.push_back(UserError("missing-determinism-tier", "",
                               "conform needs a determinism tier; Scellis never assumes one",
                               "pass --tier=debug, --tier=prod or --tier=fast"));
  }
  std::vector<std::string> known = conform::Groups();
  for (const std::string& op : o.ops) {
    if (std::find(known.begin(), known.end(), op) == known.end()) {
      std::string list;
      for (const std::string& k : known) list += (list.empty() ? "" : ", ") + k;
      errors.push_back(UserError("unknown-op", "",
                                 "--ops names \"" + op + "\", which conformance does not know",
                                 "known: " + list));
    }
  }
  return errors;
}

Result<ConformReport> Conform(const ConformOptions& o) {
  if (std::vector<Diagnostic> errors = CheckConformOptions(o); !errors.empty())
    return Status(errors);
  ConformReport report;
  report.tier = *policy::ParseTier(o.tier);
  report.seed = o.seed ? *o.seed : conform::FreshSeed();

  // Conformance without a GPU has nothing to check.
  SCELLIS_ASSIGN_OR_RETURN(runtime::Selection selection, runtime::SelectBackend(o.select));
  if (selection.backend != "webgpu") {
    std::string why = selection.fallback_reason.value_or("no WebGPU adapter is usable");
    return UserError("no-gpu", "",
                     "no GPU to check: conformance compares GPU kernels with the CPU reference, "
                     "and " + why,
                     "run it on a machine with a GPU; to check against a software adapter, pass "
                     "--backend=webgpu --allow-software-adapter");
  }
  runtime::Executor& gpu = *selection.executor;
  report.profile = gpu.profile();

  std::optional<store::Store> store;
  if (auto s = store::Store::Open(o.store_root); s.ok()) {
    store = std::move(s.value());
    report.store_root = store->root();
  } else {
    report.store_problems = s.errors();
  }
  if (o.started) o.started(report.profile, report.tier, report.seed);

  conform::Options options;
  options.tier = report.tier;
  options.seed = report.seed;
  options.groups = o.ops;
  options.on_group = [&](const conform::GroupResult& g) {
    std::string receipt;
    if (g.passed() && store) {
      auto id = conform::MintReceipt(*store, g, report.profile, report.tier, report.seed);
      if (id.ok()) {
        report.receipts[g.group] = id.value();
        receipt = id.value();
      } else {
        report.store_problems.insert(report.store_problems.end(), id.errors().begin(),
                                     id.errors().end());
        receipt = "(not stored)";
      }
    }
    if (o.group) o.group(g, receipt);
  };
  SCELLIS_ASSIGN_OR_RETURN(report.groups, conform::Run(gpu, options));
  // A store that cannot be written costs the receipts, not the verdict.
  for (Diagnostic& d : report.store_problems) d.severity = Severity::kWarning;
  return report;
}

}  // namespace scellis::api

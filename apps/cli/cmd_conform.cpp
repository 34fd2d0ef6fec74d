// `scellis conform`: every GPU kernel against the CPU reference on generated cases, on this
// machine's WebGPU device; each op that passes gets a receipt scoped to the device profile.
// Exit 0 when every op passes, 4 when any fails (a failing kernel is an engine bug, not a user
// error), 2 for bad flags or when there is no GPU to check.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>

#include "common.h"
#include "conform/receipt.h"
#include "conform/runner.h"
#include "runtime/backends/select.h"

namespace scellis::cli {
namespace {

std::string Sci(double v) {
  if (v == 0) return "0";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2e", v);
  return buf;
}

Json Number(double v) {
  return std::isfinite(v) ? Json(v) : Json(std::isnan(v) ? "nan" : "inf");
}

std::string ThresholdText(const conform::GroupResult& g) {
  return std::string(policy::ToleranceName(g.tolerance)) + " (" + Sci(g.thresholds.atol) + "/" +
         Sci(g.thresholds.rtol) + ")";
}

std::string ShortId(const std::string& id) {
  // "sha256:" and 12 hex digits name a receipt unambiguously for a reader.
  return id.size() > 19 ? id.substr(0, 19) : id;
}

void PrintRow(const std::string& op, const std::string& cases, const std::string& abs,
              const std::string& rel, const std::string& threshold, const std::string& result,
              const std::string& receipt) {
  std::printf("%-18s %5s  %-11s  %-11s  %-28s  %-6s  %s\n", op.c_str(), cases.c_str(), abs.c_str(),
              rel.c_str(), threshold.c_str(), result.c_str(), receipt.c_str());
  std::fflush(stdout);
}

}  // namespace

std::vector<Diagnostic> CheckConformFlags(const ConformFlags& f) {
  std::vector<Diagnostic> flag_errors;
  if (!policy::ParseTier(f.tier)) {
    flag_errors.push_back(UserError("missing-determinism-tier", "",
                                    "conform needs a determinism tier; Scellis never assumes one",
                                    "pass --tier=debug, --tier=prod or --tier=fast"));
  }
  std::vector<std::string> known = conform::Groups();
  for (const std::string& op : f.ops) {
    if (std::find(known.begin(), known.end(), op) == known.end()) {
      std::string list;
      for (const std::string& k : known) list += (list.empty() ? "" : ", ") + k;
      flag_errors.push_back(UserError("unknown-op", "",
                                      "--ops names \"" + op + "\", which conformance does not know",
                                      "known: " + list));
    }
  }
  return flag_errors;
}

int ConformCommand(const ConformFlags& f) {
  if (std::vector<Diagnostic> flag_errors = CheckConformFlags(f); !flag_errors.empty())
    return Report(flag_errors, "", f.json);
  const std::optional<policy::Tier> tier = policy::ParseTier(f.tier);
  const uint64_t seed = f.seed ? *f.seed : conform::FreshSeed();

  // ---- the GPU: conformance without one has nothing to check ----
  auto selection = runtime::SelectBackend(
      {.requested = f.backend, .allow_software_adapter = f.allow_software_adapter});
  if (!selection.ok()) return Report(selection.errors(), "", f.json);
  if (selection->backend != "webgpu") {
    std::string why = selection->fallback_reason.value_or("no WebGPU adapter is usable");
    return Report({UserError("no-gpu", "",
                             "no GPU to check: conformance compares GPU kernels with the CPU "
                             "reference, and " +
                                 why,
                             "run it on a machine with a GPU; to check against a software "
                             "adapter, pass --backend=webgpu --allow-software-adapter")},
                  "", f.json);
  }
  runtime::Executor& gpu = *selection->executor;
  const conform::DeviceProfile profile = gpu.profile();

  std::optional<store::Store> store;
  std::vector<Diagnostic> store_problems;
  if (auto s = store::Store::Open(); s.ok())
    store = std::move(s.value());
  else
    store_problems = s.errors();

  if (!f.json) {
    std::cout << "device : " << profile.device << " (" << profile.backend_api << ", "
              << profile.driver << ", " << profile.dawn_version << ")"
              << (profile.is_software ? "  [software adapter]" : "") << "\n"
              << "profile: " << profile.key << "\n"
              << "tier   : " << policy::TierName(*tier) << "\n"
              << "seed   : " << seed << "  (reproduce with --seed " << seed << ")\n\n";
    PrintRow("op", "cases", "max abs err", "max rel err", "threshold (atol/rtol)", "result",
             "receipt");
  }

  std::map<std::string, std::string> receipts;  // group -> id
  conform::Options options;
  options.tier = *tier;
  options.seed = seed;
  options.groups = f.ops;
  options.on_group = [&](const conform::GroupResult& g) {
    std::string receipt = "-";
    if (g.passed() && store) {
      auto id = conform::MintReceipt(*store, g, profile, *tier, seed);
      if (id.ok()) {
        receipts[g.group] = id.value();
        receipt = ShortId(id.value());
      } else {
        store_problems.insert(store_problems.end(), id.errors().begin(), id.errors().end());
        receipt = "(not stored)";
      }
    }
    if (!f.json) {
      PrintRow(g.group, std::to_string(g.cases.size()), Sci(g.max_abs), Sci(g.max_rel),
               ThresholdText(g), g.passed() ? "pass" : "FAIL", receipt);
    }
  };
  auto results = conform::Run(gpu, options);
  if (!results.ok()) {
    if (!f.json) std::cerr << "seed " << seed << "\n";
    return Report(results.errors(), "", f.json);
  }

  int failed = 0;
  for (const conform::GroupResult& g : *results) failed += !g.passed();

  if (f.json) {
    Json ops = Json::array();
    for (const conform::GroupResult& g : *results) {
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
    Json out = {{"ok", failed == 0},
                {"tier", policy::TierName(*tier)},
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
                {"store", store ? Json(store->root()) : Json()},
                {"ops", ops}};
    std::cout << out.dump(2) << "\n";
  } else {
    std::cout << "\n";
    for (const conform::GroupResult& g : *results)
      for (const conform::CaseResult& c : g.cases)
        if (!c.passed())
          std::cout << "FAIL " << c.id << " " << c.shape << ": " << c.Failure() << "\n";
    std::cout << (results->size() - failed) << "/" << results->size()
              << " ops conform on this profile";
    if (store && !receipts.empty()) std::cout << "; receipts in " << store->root();
    std::cout << "\n";
    if (failed) std::cout << "seed " << seed << " reproduces this run: --seed " << seed << "\n";
  }
  // A store that cannot be written costs the receipts, not the verdict.
  for (Diagnostic& d : store_problems) d.severity = Severity::kWarning;
  PrintNotes(store_problems, "");
  return failed ? 4 : 0;
}

}  // namespace scellis::cli

// `scellis conform`: every GPU kernel against the CPU reference on generated cases, on this
// machine's WebGPU device; each op that passes gets a receipt scoped to the device profile.
// Exit 0 when every op passes, 4 when any fails (a failing kernel is an engine bug, not a user
// error), 2 for bad flags or when there is no GPU to check.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>

#include "api/conform.h"
#include "base/atomic_file.h"
#include "common.h"

namespace scellis::cli {
namespace {

std::string Sci(double v) {
  if (v == 0) return "0";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2e", v);
  return buf;
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

namespace {

Result<api::ConformOptions> OptionsFrom(const ConformFlags& f) {
  api::ConformOptions o;
  o.tier = f.tier;
  o.ops = f.ops;
  o.seed = f.seed;
  o.select = {.requested = f.backend, .allow_software_adapter = f.allow_software_adapter};
  if (!f.doc.empty()) {
    SCELLIS_ASSIGN_OR_RETURN(o.document, ReadFile(f.doc, size_t{256} << 20));
  }
  return o;
}

}  // namespace

std::vector<Diagnostic> CheckConformFlags(const ConformFlags& f) {
  auto options = OptionsFrom(f);
  if (!options.ok()) return options.errors();
  return api::CheckConformOptions(options.value());
}

int ConformCommand(const ConformFlags& f) {
  auto read = OptionsFrom(f);
  if (!read.ok()) return Report(read.errors(), f.doc, f.json);
  api::ConformOptions options = std::move(read.value());
  std::optional<uint64_t> seed_used;
  options.started = [&](const runtime::DeviceProfile& profile, policy::Tier tier, uint64_t seed) {
    seed_used = seed;
    if (f.json) return;
    std::cout << "device : " << profile.device << " (" << profile.backend_api << ", "
              << profile.driver << ", " << profile.dawn_version << ")"
              << (profile.is_software ? "  [software adapter]" : "") << "\n"
              << "profile: " << profile.key << "\n"
              << "tier   : " << policy::TierName(tier) << "\n"
              << "seed   : " << seed << "  (reproduce with --seed " << seed << ")\n\n";
    PrintRow("op", "cases", "max abs err", "max rel err", "threshold (atol/rtol)", "result",
             "receipt");
  };
  options.group = [&](const conform::GroupResult& g, const std::string& receipt) {
    if (f.json) return;
    PrintRow(g.group, std::to_string(g.cases.size()), Sci(g.max_abs), Sci(g.max_rel),
             ThresholdText(g), g.passed() ? "pass" : "FAIL",
             receipt.empty() ? "-" : ShortId(receipt));
  };
  auto report = api::Conform(options);
  if (!report.ok()) {
    if (!f.json && seed_used) std::cerr << "seed " << *seed_used << "\n";
    return Report(report.errors(), "", f.json);
  }
  const api::ConformReport& r = report.value();
  const int failed = r.failed();
  if (f.json) {
    std::cout << r.ToJson().dump(2) << "\n";
  } else {
    std::cout << "\n";
    for (const conform::GroupResult& g : r.groups)
      for (const conform::CaseResult& c : g.cases)
        if (!c.passed())
          std::cout << "FAIL " << c.id << " " << c.shape << ": " << c.Failure() << "\n";
    std::cout << (r.groups.size() - failed) << "/" << r.groups.size()
              << " ops conform on this profile";
    if (r.store_root && !r.receipts.empty()) std::cout << "; receipts in " << *r.store_root;
    std::cout << "\n";
    if (failed) std::cout << "seed " << r.seed << " reproduces this run: --seed " << r.seed << "\n";
  }
  PrintNotes(r.store_problems, "");
  return failed ? 4 : 0;
}

}  // namespace scellis::cli

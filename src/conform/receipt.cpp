#include "conform/receipt.h"

#include <algorithm>
#include <cmath>
#include <ctime>
#include <map>

namespace scellis::conform {
namespace {

// JSON has no infinities; a receipt only holds finite errors, but stay well-formed regardless.
Json Number(double v) {
  return std::isfinite(v) ? Json(v) : Json(std::isnan(v) ? "nan" : "inf");
}

Json ThresholdsJson(const policy::Thresholds& t) {
  return {{"atol", t.atol}, {"rtol", t.rtol}};
}

}  // namespace

std::string NowUtc() {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

Json ReceiptJson(const GroupResult& g, const DeviceProfile& profile, policy::Tier tier,
                 uint64_t seed, const std::string& date) {
  Json cases = Json::array();
  for (const CaseResult& c : g.cases) {
    cases.push_back({{"case", c.id},
                     {"shape", c.shape},
                     {"elements", c.comparison.elements},
                     {"tolerance", policy::ToleranceName(c.tolerance)},
                     {"thresholds", ThresholdsJson(c.thresholds)},
                     {"max_abs_error", Number(c.comparison.max_abs)},
                     {"max_rel_error", Number(c.comparison.max_rel)}});
  }
  Json j = {
      {"kind", kReceiptKind},
      {"schema", 1},
      {"op", g.group},
      {"source_hash", g.source_hash},
      {"profile", profile.key},
      {"device",
       {{"vendor", profile.vendor},
        {"architecture", profile.architecture},
        {"device", profile.device},
        {"driver", profile.driver},
        {"backend_api", profile.backend_api},
        {"dawn_version", profile.dawn_version},
        {"adapter_type", profile.adapter_type},
        {"is_software", profile.is_software}}},
      {"tier", policy::TierName(tier)},
      {"tolerance", policy::ToleranceName(g.tolerance)},
      {"thresholds", ThresholdsJson(g.thresholds)},
      {"cases", cases},
      {"case_count", g.cases.size()},
      {"elements", g.elements},
      {"max_abs_error", Number(g.max_abs)},
      {"max_rel_error", Number(g.max_rel)},
      {"seed", seed},
      {"date", date},
  };
  if (tier == policy::Tier::kDebug) j["bit_identical_reruns"] = true;
  return j;
}

Result<std::string> MintReceipt(const store::Store& store, const GroupResult& g,
                                const DeviceProfile& profile, policy::Tier tier, uint64_t seed) {
  if (!g.passed()) {
    return InternalError("conform.MintReceipt", "\"" + g.group + "\" did not pass; no receipt");
  }
  SCELLIS_ASSIGN_OR_RETURN(std::string id,
                           store.Put(ReceiptJson(g, profile, tier, seed, NowUtc())));
  SCELLIS_TRY(store.Index(kReceiptKind, profile.key, g.group, id));
  return id;
}

bool HasReceipt(const store::Store& store, const std::string& profile, const std::string& op,
                const std::string& source_hash, policy::Tier tier) {
  for (const std::string& id : store.Lookup(kReceiptKind, profile, op)) {
    auto r = store.Get(id);
    if (!r.ok()) continue;
    const Json& j = r.value();
    if (j.value("kind", "") != kReceiptKind || j.value("profile", "") != profile ||
        j.value("op", "") != op || j.value("source_hash", "") != source_hash)
      continue;
    auto minted = policy::ParseTier(j.value("tier", ""));
    if (minted && *minted <= tier) return true;  // lower is stricter
  }
  return false;
}

int ReceiptReport::conformed() const {
  return static_cast<int>(std::count_if(kernels.begin(), kernels.end(),
                                        [](const KernelReceipts& k) { return k.missing.empty(); }));
}

std::vector<std::string> ReceiptReport::missing() const {
  std::vector<std::string> out;
  for (const KernelReceipts& k : kernels)
    for (const std::string& g : k.missing)
      if (std::find(out.begin(), out.end(), g) == out.end()) out.push_back(g);
  return out;
}

std::string ReceiptReport::Line() const {
  std::string s = "receipts: " + std::to_string(conformed()) + "/" +
                  std::to_string(kernels.size()) + " kernels conformed on this profile";
  std::vector<std::string> miss = missing();
  if (!miss.empty()) {
    s += " (missing: ";
    for (size_t i = 0; i < miss.size(); ++i) s += (i ? ", " : "") + miss[i];
    s += ")";
  }
  return s;
}

Json ReceiptReport::ToJson() const {
  Json by_kernel = Json::object();
  for (const KernelReceipts& k : kernels)
    by_kernel[k.kernel] = {
        {"needs", k.groups}, {"missing", k.missing}, {"conformed", k.missing.empty()}};
  return {{"profile", profile},
          {"kernels", kernels.size()},
          {"conformed", conformed()},
          {"missing", missing()},
          {"by_kernel", by_kernel}};
}

ReceiptReport CheckReceipts(const store::Store& store, const std::string& profile,
                            const kernel::Module& m, policy::Tier tier) {
  ReceiptReport report;
  report.profile = profile;
  std::map<std::string, bool> held;  // per group, computed once
  auto holds = [&](const std::string& group) {
    auto it = held.find(group);
    if (it != held.end()) return it->second;
    auto hash = SourceHash(group, tier);
    bool ok = hash.ok() && HasReceipt(store, profile, group, hash.value(), tier);
    held[group] = ok;
    return ok;
  };
  for (const kernel::Kernel& k : m.kernels) {
    KernelReceipts kr;
    kr.kernel = k.name;
    if (k.kind == kernel::KernelKind::kElementwise) {
      int steps = 0;
      for (const kernel::ExprStep& s : k.expr) {
        if (s.op == "full") continue;
        ++steps;
        if (std::find(kr.groups.begin(), kr.groups.end(), s.op) == kr.groups.end())
          kr.groups.push_back(s.op);
      }
      if (steps > 1) kr.groups.push_back(kFusedGroup);
    } else {
      kr.groups.push_back(k.op);
    }
    for (const std::string& g : kr.groups)
      if (!holds(g)) kr.missing.push_back(g);
    report.kernels.push_back(std::move(kr));
  }
  return report;
}

}  // namespace scellis::conform

#include "conform/receipt.h"

#include <algorithm>
#include <cmath>
#include <ctime>
#include <map>

#include "conform/cases.h"
#include "conform/user_gradcheck.h"
#include "ops/user_op.h"

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
  double max_bound_ratio = 0;
  for (const CaseResult& c : g.cases) {
    max_bound_ratio = std::max(max_bound_ratio, c.comparison.max_bound_ratio);
    cases.push_back({{"case", c.id},
                     {"shape", c.shape},
                     {"elements", c.comparison.elements},
                     {"tolerance", policy::ToleranceName(c.tolerance)},
                     {"thresholds", ThresholdsJson(c.thresholds)},
                     {"max_abs_error", Number(c.comparison.max_abs)},
                     {"max_rel_error", Number(c.comparison.max_rel)},
                     {"max_bound_ratio", Number(c.comparison.max_bound_ratio)}});
  }
  Json j = {
      {"kind", kReceiptKind},
      {"schema", kReceiptSchema},
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
      {"max_bound_ratio", Number(max_bound_ratio)},
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

namespace {

bool IsNumber(const Json& j, const char* key) {
  return j.is_object() && j.contains(key) && j[key].is_number();
}

// Why receipt `j` does not vouch for `op` compiled to `source_hash` on `profile` at `tier`, or ""
// when it does. A receipt is a claim anyone who can write the store can make: it counts only if
// it is about this code on this device at this tier, and if what it records passed by its own
// thresholds, which must be those the tier gives its tolerance class.
std::string ReceiptProblem(const Json& j, const std::string& profile, const std::string& op,
                           const std::string& source_hash, policy::Tier tier,
                           const ops::OpTable& ops) {
  if (!j.is_object() || j.value("kind", "") != kReceiptKind) return "it is not a receipt";
  if (!j["schema"].is_number_integer() || j["schema"].get<int64_t>() != kReceiptSchema)
    return "its schema is not " + std::to_string(kReceiptSchema) + "; run scellis conform again";
  if (j.value("op", "") != op) return "it is for op \"" + j.value("op", "") + "\"";
  if (j.value("profile", "") != profile) return "its device profile is another device's";
  if (j.value("source_hash", "") != source_hash) return "its kernel hash is not this code's";
  const std::string tier_name = j.value("tier", "");
  auto minted = policy::ParseTier(tier_name);
  if (!minted) return "its tier \"" + tier_name + "\" is not a tier";
  if (*minted > tier) return "its tier " + tier_name + " is looser than " + policy::TierName(tier);
  if (*minted == policy::Tier::kDebug && j.value("bit_identical_reruns", false) != true)
    return "it is a debug receipt without bit-identical reruns";

  auto thresholds_problem = [&](const Json& r, const std::string& what) -> std::string {
    auto tolerance = policy::ParseTolerance(r.value("tolerance", ""));
    if (!tolerance) return what + " names no tolerance class";
    policy::Thresholds want = policy::ResolveThresholds(*tolerance, *minted);
    const Json& t = r.contains("thresholds") ? r["thresholds"] : Json();
    if (!IsNumber(t, "atol") || !IsNumber(t, "rtol") || t["atol"].get<double>() != want.atol ||
        t["rtol"].get<double>() != want.rtol) {
      return what + "'s thresholds are not those of " + r.value("tolerance", "") + " at tier " +
             tier_name;
    }
    for (const char* key : {"max_abs_error", "max_rel_error", "max_bound_ratio"}) {
      if (!IsNumber(r, key)) return what + " records no finite " + key;
    }
    if (r["max_bound_ratio"].get<double>() > 1)
      return what + " records errors above its thresholds";
    if (*tolerance == policy::ToleranceClass::kExact && r["max_abs_error"].get<double>() != 0)
      return what + " records errors but its class is exact";
    return "";
  };
  if (std::string p = thresholds_problem(j, "the receipt"); !p.empty()) return p;
  const std::vector<Case> cases = CasesFor(op, ops);
  // A user op's gradient checks follow its cases, held to the gradient-check thresholds.
  const std::vector<std::string> checks = GradcheckIds(op, ops);
  const Json& recorded = j.contains("cases") ? j["cases"] : Json();
  if (!recorded.is_array() || recorded.size() != cases.size() + checks.size())
    return "it does not record the " + std::to_string(cases.size() + checks.size()) +
           " cases of \"" + op + "\"";
  for (size_t i = 0; i < checks.size(); ++i) {
    const Json& c = recorded[cases.size() + i];
    const policy::Thresholds want = policy::GradcheckThresholds();
    if (!c.is_object() || c.value("case", "") != checks[i] || !IsNumber(c, "max_bound_ratio") ||
        c["max_bound_ratio"].get<double>() > 1 || !c.contains("thresholds") ||
        c["thresholds"].value("atol", -1.0) != want.atol ||
        c["thresholds"].value("rtol", -1.0) != want.rtol)
      return "its gradient check " + checks[i] + " is missing or did not pass";
  }
  for (size_t i = 0; i < cases.size(); ++i) {
    const Json& c = recorded[i];
    if (!c.is_object() || c.value("case", "") != cases[i].id())
      return "its case " + std::to_string(i) + " is not " + cases[i].id();
    if (c.value("tolerance", "") != policy::ToleranceName(cases[i].tolerance))
      return "its case " + cases[i].id() + " names another tolerance class";
    if (std::string p = thresholds_problem(c, "its case " + cases[i].id()); !p.empty()) return p;
  }
  return "";
}

}  // namespace

bool HasReceipt(const store::Store& store, const std::string& profile, const std::string& op,
                const std::string& source_hash, policy::Tier tier,
                std::vector<std::string>* warnings, const ops::OpTable& ops) {
  return !FindReceipt(store, profile, op, source_hash, tier, warnings, ops).empty();
}

std::string FindReceipt(const store::Store& store, const std::string& profile,
                        const std::string& op, const std::string& source_hash, policy::Tier tier,
                        std::vector<std::string>* warnings, const ops::OpTable& ops) {
  for (const std::string& id : store.Lookup(kReceiptKind, profile, op)) {
    auto r = store.Get(id);
    if (!r.ok()) {
      // A receipt whose file no longer matches its name was changed after it was minted.
      if (warnings)
        warnings->push_back("receipt " + id + " for \"" + op + "\" is ignored: " +
                            r.errors().front().code + ": " + r.errors().front().message);
      continue;
    }
    std::string problem = ReceiptProblem(r.value(), profile, op, source_hash, tier, ops);
    if (problem.empty()) return id;
    // Receipts for other code or a stricter tier are expected after an upgrade; say nothing.
    if (warnings && problem.find("kernel hash") == std::string::npos &&
        problem.find("is looser than") == std::string::npos) {
      warnings->push_back("receipt " + id + " for \"" + op + "\" is ignored: " + problem);
    }
  }
  return "";
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

std::vector<std::pair<std::string, bool>> ReceiptReport::user_ops() const {
  std::vector<std::pair<std::string, bool>> out;
  for (const KernelReceipts& k : kernels) {
    if (!k.user || k.groups.empty()) continue;
    const std::string& op = k.groups.front();
    if (std::none_of(out.begin(), out.end(), [&](const auto& u) { return u.first == op; }))
      out.emplace_back(op, k.missing.empty());
  }
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
  for (const auto& [op, conformed] : user_ops())
    s += "; user op " + op + ": " + (conformed ? "conformed" : "unconformed");
  return s;
}

Json ReceiptReport::ToJson() const {
  Json by_kernel = Json::object();
  for (const KernelReceipts& k : kernels)
    by_kernel[k.kernel] = {
        {"needs", k.groups}, {"missing", k.missing}, {"conformed", k.missing.empty()}};
  Json users = Json::object();
  for (const auto& [op, conformed] : user_ops())
    users[op] = conformed ? "conformed" : "unconformed";
  return {{"profile", profile},   {"kernels", kernels.size()}, {"conformed", conformed()},
          {"missing", missing()}, {"warnings", warnings},      {"by_kernel", by_kernel},
          {"used", used},         {"user_ops", users}};
}

ReceiptReport CheckReceipts(const store::Store& store, const std::string& profile,
                            const kernel::Module& m, policy::Tier tier) {
  ReceiptReport report;
  report.profile = profile;
  std::map<std::string, bool> held;  // per group, computed once
  auto holds = [&](const std::string& group) {
    auto it = held.find(group);
    if (it != held.end()) return it->second;
    auto hash = SourceHash(group, tier, *m.graph().ops);
    std::string id = hash.ok() ? FindReceipt(store, profile, group, hash.value(), tier,
                                             &report.warnings, *m.graph().ops)
                               : "";
    bool ok = !id.empty();
    if (ok) report.used.push_back(id);
    held[group] = ok;
    return ok;
  };
  for (const kernel::Kernel& k : m.kernels) {
    KernelReceipts kr;
    kr.kernel = k.name;
    if (k.kind == kernel::KernelKind::kElementwise || k.kind == kernel::KernelKind::kTiledStages) {
      // A kernel of stages is its stages' fused expressions: their groups, and the fused one.
      int steps = 0;
      std::vector<const kernel::Kernel*> exprs = {&k};
      for (const kernel::Kernel& st : k.stages) exprs.push_back(&st);
      for (const kernel::Kernel* e : exprs) {
        for (const kernel::ExprStep& s : e->expr) {
          if (s.op == "full") continue;
          ++steps;
          if (std::find(kr.groups.begin(), kr.groups.end(), s.op) == kr.groups.end())
            kr.groups.push_back(s.op);
        }
      }
      if (steps > 1) kr.groups.push_back(kFusedGroup);
    } else if (k.kind == kernel::KernelKind::kRowStages) {
      // Each stage computes as its own kernel did: its op's group holds it.
      for (const kernel::Kernel& st : k.stages)
        if (std::find(kr.groups.begin(), kr.groups.end(), st.op) == kr.groups.end())
          kr.groups.push_back(st.op);
    } else {
      const ops::OpSpec* spec = m.graph().ops->Find(k.op);
      kr.user = spec && spec->user;
      // A user op's gradient is conformed with the op: one receipt covers both.
      kr.groups.push_back(kr.user && !spec->user->gradient_of.empty() ? spec->user->gradient_of
                                                                      : k.op);
    }
    for (const std::string& g : kr.groups)
      if (!holds(g)) kr.missing.push_back(g);
    report.kernels.push_back(std::move(kr));
  }
  return report;
}

}  // namespace scellis::conform

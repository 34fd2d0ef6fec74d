#include "api/conform.h"

#include <algorithm>
#include <cmath>

#include "conform/receipt.h"
#include "doc/document.h"
#include "ops/user_op.h"
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

namespace {

// The ops conformance may check: the built-ins, with the document's own when it defines some.
Result<std::shared_ptr<const ops::OpTable>> OpsOf(const ConformOptions& o) {
  std::shared_ptr<const ops::OpTable> base = o.user_ops ? o.user_ops : ops::BuiltinOps();
  if (o.document.empty()) return base;
  SCELLIS_ASSIGN_OR_RETURN(doc::Document d, doc::Parse(o.document, *base));
  return d.ops ? d.ops : base;
}

// The groups a run covers: those named, else the document's own ops, else every group.
std::vector<std::string> GroupsOf(const ConformOptions& o, const ops::OpTable& table) {
  if (!o.ops.empty() || (o.document.empty() && !o.user_ops)) return o.ops;
  std::vector<std::string> user;
  for (const ops::OpSpec& s : table.ops())
    if (s.user && s.user->gradient_of.empty()) user.push_back(s.name);
  return user;
}

}  // namespace

std::vector<Diagnostic> CheckConformOptions(const ConformOptions& o) {
  std::vector<Diagnostic> errors;
  if (!policy::ParseTier(o.tier)) {
    errors.push_back(UserError("missing-determinism-tier", "",
                               "conform needs a determinism tier; Scellis never assumes one",
                               "pass --tier=debug, --tier=prod or --tier=fast"));
  }
  auto table = OpsOf(o);
  if (!table.ok()) {
    errors.insert(errors.end(), table.errors().begin(), table.errors().end());
    return errors;
  }
  std::vector<std::string> known = conform::Groups();
  for (const ops::OpSpec& s : table.value()->ops())
    if (s.user && s.user->gradient_of.empty()) known.push_back(s.name);
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
                     "and " +
                         why,
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
  SCELLIS_ASSIGN_OR_RETURN(options.ops, OpsOf(o));
  options.groups = GroupsOf(o, *options.ops);
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

namespace {

// The checks of CheckConformOptions for one group of a browser job.
Status CheckBrowserRequest(const std::string& group, const std::string& tier) {
  ConformOptions options;
  options.tier = tier;
  options.ops = {group};
  if (auto errors = CheckConformOptions(options); !errors.empty()) return Status(errors);
  return Status::Ok();
}

}  // namespace

runtime::DeviceProfile BrowserProfile(const BrowserAdapter& a) {
  runtime::DeviceProfile p;
  p.key = "webgpu;browser;vendor=" + runtime::ProfileKeyPart(a.vendor) +
          ";arch=" + runtime::ProfileKeyPart(a.architecture) +
          ";device=" + runtime::ProfileKeyPart(a.device) +
          ";description=" + runtime::ProfileKeyPart(a.description) +
          ";software=" + (a.is_software ? "1" : "0");
  p.vendor = a.vendor;
  p.architecture = a.architecture;
  p.device = a.device.empty() ? a.description : a.device;
  p.backend_api = "browser";
  p.adapter_type = a.is_software ? "software" : "gpu";
  p.is_software = a.is_software;
  return p;
}

conform::RemoteDevice BrowserDevice(const BrowserAdapter& a) {
  conform::RemoteDevice d;
  d.limits.backend = "webgpu";
  d.limits.device = BrowserProfile(a).device;
  d.limits.max_buffer_bytes = static_cast<int64_t>(a.max_buffer_size);
  d.limits.max_binding_bytes = static_cast<int64_t>(a.max_storage_buffer_binding_size);
  // The tab's memory cannot be told from inside it; the host's is what its buffers come from.
  d.limits.buffers_in_host_memory = a.is_software;
  d.program_limits.max_storage_buffer_binding_size = a.max_storage_buffer_binding_size;
  d.program_limits.min_storage_buffer_offset_alignment = a.min_storage_buffer_offset_alignment;
  d.program_limits.max_compute_workgroups_per_dimension = a.max_compute_workgroups_per_dimension;
  return d;
}

Result<std::vector<conform::RemoteCase>> BrowserCases(const std::string& group,
                                                      const std::string& tier, uint64_t seed,
                                                      const BrowserAdapter& adapter) {
  SCELLIS_TRY(CheckBrowserRequest(group, tier));
  return conform::RemoteCases(group, *policy::ParseTier(tier), seed, BrowserDevice(adapter));
}

Result<ConformReport> JudgeBrowser(const std::string& group, const std::string& tier, uint64_t seed,
                                   const BrowserAdapter& adapter,
                                   const std::map<std::string, conform::RemoteAnswer>& answers,
                                   const std::string& store_root) {
  SCELLIS_TRY(CheckBrowserRequest(group, tier));
  ConformReport report;
  report.tier = *policy::ParseTier(tier);
  report.seed = seed;
  report.profile = BrowserProfile(adapter);
  SCELLIS_ASSIGN_OR_RETURN(
      conform::GroupResult g,
      conform::JudgeRemote(group, report.tier, seed, BrowserDevice(adapter), answers));
  if (auto s = store::Store::Open(store_root); !s.ok()) {
    report.store_problems = s.errors();
  } else {
    report.store_root = s->root();
    if (g.passed()) {
      auto id = conform::MintReceipt(s.value(), g, report.profile, report.tier, seed);
      if (id.ok())
        report.receipts[g.group] = id.value();
      else
        report.store_problems = id.errors();
    }
  }
  for (Diagnostic& d : report.store_problems) d.severity = Severity::kWarning;
  report.groups.push_back(std::move(g));
  return report;
}

}  // namespace scellis::api

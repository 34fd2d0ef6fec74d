// Conformance as one call, for every front end (`scellis conform`, the Studio server): choose the
// GPU, run every group against the CPU reference, mint a receipt in the store for each group that
// passes, and report it all as one value with one JSON form.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/json_util.h"
#include "base/result.h"
#include "conform/runner.h"
#include "runtime/backends/select.h"

namespace scellis::api {

struct ConformOptions {
  std::string tier;              // required: "debug" | "prod" | "fast"
  std::vector<std::string> ops;  // empty: every group (with `document`: every op it defines)
  // A document (its text) whose own ops — its "ops" section — `ops` may name: each is proved
  // against its reference on cases generated from its signature. "" for none.
  std::string document;
  // A table with ops defined through the API (api/user_ops.h, callable references) that `ops`
  // may name; with neither `ops` nor `document`, every user op of it is checked. Null: built-ins.
  std::shared_ptr<const ops::OpTable> user_ops;
  std::optional<uint64_t> seed;  // none: a fresh one
  runtime::SelectOptions select;
  std::string store_root;  // "" : the default store
  // Before the first group, once the device is known.
  std::function<void(const runtime::DeviceProfile&, policy::Tier, uint64_t seed)> started;
  // After each group; `receipt` is its id, "" when it failed, "(not stored)" when minting failed.
  std::function<void(const conform::GroupResult&, const std::string& receipt)> group;
};

struct ConformReport {
  policy::Tier tier = policy::Tier::kProd;
  uint64_t seed = 0;
  runtime::DeviceProfile profile;
  std::optional<std::string> store_root;  // none: no store could be opened
  std::vector<conform::GroupResult> groups;
  std::map<std::string, std::string> receipts;  // group -> receipt id
  std::vector<Diagnostic> store_problems;       // warnings: receipts that could not be kept

  int failed() const;
  // {"ok", "tier", "seed", "profile", "device": {...}, "store", "ops": [{"op", "cases",
  //  "elements", "tolerance", "thresholds", "max_abs_error", "max_rel_error", "passed",
  //  "source_hash", "receipt", "failures"}]}
  Json ToJson() const;
};

// The option problems seen without a device: no tier (`missing-determinism-tier`), a document
// that does not parse (its own diagnostics), an op conformance does not know (`unknown-op`).
std::vector<Diagnostic> CheckConformOptions(const ConformOptions& o);

// Runs conformance. Without a WebGPU device it refuses with `no-gpu` (there is nothing to check).
Result<ConformReport> Conform(const ConformOptions& o);

// ---- conformance of the Studio's browser tab (a device reached only through its caller) ----

// What a browser says of its WebGPU adapter (GPUAdapterInfo and the limits it was granted). The
// receipts minted for it are scoped to this profile: "webgpu;browser;vendor=...;arch=...;
// device=...;description=...;software=0|1".
struct BrowserAdapter {
  std::string vendor, architecture, device, description;
  bool is_software = false;
  uint64_t max_storage_buffer_binding_size = uint64_t{128} << 20;
  uint64_t max_buffer_size = uint64_t{256} << 20;
  uint32_t min_storage_buffer_offset_alignment = 256;
  uint32_t max_compute_workgroups_per_dimension = 65535;
};
runtime::DeviceProfile BrowserProfile(const BrowserAdapter& a);
conform::RemoteDevice BrowserDevice(const BrowserAdapter& a);

// The cases of one group for the tab: device programs and feeds (conform::RemoteCases), with the
// checks of CheckConformOptions.
Result<std::vector<conform::RemoteCase>> BrowserCases(const std::string& group,
                                                      const std::string& tier, uint64_t seed,
                                                      const BrowserAdapter& adapter);

// Judges the tab's outputs for one group (conform::JudgeRemote) and, when it passes, mints its
// receipt for the browser's profile in the store at `store_root` ("" : the default store).
Result<ConformReport> JudgeBrowser(const std::string& group, const std::string& tier, uint64_t seed,
                                   const BrowserAdapter& adapter,
                                   const std::map<std::string, conform::RemoteAnswer>& answers,
                                   const std::string& store_root);

}  // namespace scellis::api

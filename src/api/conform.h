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
  std::vector<std::string> ops;  // empty: every group
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

// The option problems seen without a device: no tier (`missing-determinism-tier`), an op
// conformance does not know (`unknown-op`).
std::vector<Diagnostic> CheckConformOptions(const ConformOptions& o);

// Runs conformance. Without a WebGPU device it refuses with `no-gpu` (there is nothing to check).
Result<ConformReport> Conform(const ConformOptions& o);

}  // namespace scellis::api

// Receipts are claims anyone who can write the store can make: they are verified before they are
// trusted. A receipt minted here (from a group result written by hand, no device needed) is
// trusted; copies of it edited in the stored JSON — errors above the thresholds, thresholds
// loosened, a prod receipt relabelled debug, another profile, another kernel hash — are not, and
// each is reported with the check it failed.
#include "conform/receipt.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include "conform/cases.h"
#include "store/store.h"

namespace scellis::conform {
namespace {

namespace fs = std::filesystem;

constexpr const char* kProfile = "webgpu;backend=vulkan;vendor=test;device=Receipt Test";

// What a passing run of every case of `op` at `tier` gives, errors well within the thresholds.
GroupResult PassingGroup(const std::string& op, policy::Tier tier) {
  GroupResult g;
  g.group = op;
  for (const Case& c : CasesFor(op)) {
    CaseResult cr;
    cr.id = c.id();
    cr.tolerance = c.tolerance;
    cr.thresholds = policy::ResolveThresholds(c.tolerance, tier);
    cr.comparison.elements = 16;
    if (c.tolerance != policy::ToleranceClass::kExact) {
      cr.comparison.max_abs = cr.thresholds.atol / 4;
      cr.comparison.max_bound_ratio = 0.25;
    }
    g.tolerance = std::max(g.tolerance, c.tolerance);
    g.max_abs = std::max(g.max_abs, cr.comparison.max_abs);
    g.elements += cr.comparison.elements;
    g.cases.push_back(cr);
  }
  g.thresholds = policy::ResolveThresholds(g.tolerance, tier);
  auto hash = SourceHash(op, tier);
  g.source_hash = hash.ok() ? hash.value() : "";
  return g;
}

class ReceiptTrustTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("scellis-receipt-test-" + std::to_string(::getpid()));
    fs::remove_all(root_);
    auto s = store::Store::Open(root_.string());
    ASSERT_TRUE(s.ok());
    store_.emplace(std::move(s.value()));
    profile_.key = kProfile;
  }
  void TearDown() override { fs::remove_all(root_); }

  // Mints the receipt of a passing `op` at prod, and returns its stored JSON.
  Json Genuine(const std::string& op) {
    GroupResult g = PassingGroup(op, policy::Tier::kProd);
    EXPECT_FALSE(g.source_hash.empty());
    auto id = MintReceipt(*store_, g, profile_, policy::Tier::kProd, 7);
    EXPECT_TRUE(id.ok());
    auto j = store_->Get(id.value());
    EXPECT_TRUE(j.ok());
    return j.value();
  }

  // Stores `receipt` as if it had been minted, in a fresh store holding nothing else.
  void Forge(const Json& receipt) {
    fs::remove_all(root_);
    auto id = store_->Put(receipt);
    ASSERT_TRUE(id.ok());
    ASSERT_TRUE(store_->Index(kReceiptKind, kProfile, receipt["op"], id.value()).ok());
  }

  // Whether the store's receipt for `op` counts at `tier`, and the warnings.
  bool Trusted(const std::string& op, policy::Tier tier, std::vector<std::string>* warnings) {
    auto hash = SourceHash(op, tier);
    EXPECT_TRUE(hash.ok());
    return HasReceipt(*store_, kProfile, op, hash.value(), tier, warnings);
  }

  fs::path root_;
  std::optional<store::Store> store_;
  DeviceProfile profile_;
};

TEST_F(ReceiptTrustTest, AGenuineReceiptIsTrusted) {
  for (const std::string op : {"neg", "matmul"}) {
    SCOPED_TRACE(op);
    Genuine(op);
    std::vector<std::string> warnings;
    EXPECT_TRUE(Trusted(op, policy::Tier::kProd, &warnings));
    EXPECT_TRUE(Trusted(op, policy::Tier::kFast, &warnings));  // a stricter tier covers a looser
    EXPECT_TRUE(warnings.empty()) << warnings.front();
  }
}

TEST_F(ReceiptTrustTest, AReceiptEditedInTheStoreIsIgnoredAndNamedCorrupt) {
  Json genuine = Genuine("neg");
  const std::string id = store_->Lookup(kReceiptKind, kProfile, "neg").front();
  const std::string hex = id.substr(7);
  // Edited in place: its content no longer matches its name.
  genuine["seed"] = genuine.value("seed", 0) + 1;
  std::ofstream(root_ / "objects" / hex.substr(0, 2) / (hex + ".json")) << genuine.dump();
  std::vector<std::string> warnings;
  EXPECT_FALSE(Trusted("neg", policy::Tier::kProd, &warnings));
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("receipt " + id + " for \"neg\" is ignored: store-object-corrupt"),
            std::string::npos)
      << warnings[0];
}

TEST_F(ReceiptTrustTest, AForgedReceiptIsIgnoredWithTheFailedCheckNamed) {
  struct Forgery {
    std::string what;
    std::string op;
    policy::Tier checked_at;
    std::function<void(Json&)> edit;
    std::string warning;  // "" when it is passed over silently
  };
  const std::vector<Forgery> forgeries = {
      {"an error above the thresholds", "matmul", policy::Tier::kProd,
       [](Json& r) { r["cases"][0]["max_bound_ratio"] = 3.5; }, "case matmul/"},
      {"the group's error above its thresholds", "matmul", policy::Tier::kProd,
       [](Json& r) { r["max_bound_ratio"] = 1.5; },
       "the receipt records errors above its thresholds"},
      {"an error in an exact op", "neg", policy::Tier::kProd,
       [](Json& r) { r["cases"][1]["max_abs_error"] = 0.5; },
       "records errors but its class is exact"},
      {"loosened thresholds", "matmul", policy::Tier::kProd,
       [](Json& r) { r["thresholds"]["rtol"] = 0.5; }, "the receipt's thresholds are not those of"},
      {"a non-finite error", "matmul", policy::Tier::kProd,
       [](Json& r) { r["cases"][0]["max_abs_error"] = "inf"; }, "records no finite max_abs_error"},
      {"prod relabelled debug", "neg", policy::Tier::kDebug, [](Json& r) { r["tier"] = "debug"; },
       "a debug receipt without bit-identical reruns"},
      {"prod relabelled debug, reruns claimed", "matmul", policy::Tier::kDebug,
       [](Json& r) {
         r["tier"] = "debug";
         r["bit_identical_reruns"] = true;
       },
       "thresholds are not those of"},
      {"a case dropped", "matmul", policy::Tier::kProd,
       [](Json& r) { r["cases"].erase(r["cases"].size() - 1); }, "does not record the"},
      {"another device's profile", "neg", policy::Tier::kProd,
       [](Json& r) { r["profile"] = "webgpu;backend=vulkan;vendor=other"; },
       "its device profile is another device's"},
      {"an old schema", "neg", policy::Tier::kProd, [](Json& r) { r["schema"] = 1; },
       "its schema is not 2"},
      {"another kernel hash", "neg", policy::Tier::kProd,
       [](Json& r) { r["source_hash"] = "sha256:" + std::string(64, '0'); }, ""},
  };
  for (const Forgery& f : forgeries) {
    SCOPED_TRACE(f.what);
    Json r = Genuine(f.op);
    f.edit(r);
    Forge(r);
    std::vector<std::string> warnings;
    EXPECT_FALSE(Trusted(f.op, f.checked_at, &warnings));
    if (f.warning.empty()) {
      EXPECT_TRUE(warnings.empty()) << warnings.front();
      continue;
    }
    ASSERT_EQ(warnings.size(), 1u);
    EXPECT_NE(warnings[0].find("is ignored: "), std::string::npos) << warnings[0];
    EXPECT_NE(warnings[0].find(f.warning), std::string::npos) << warnings[0];
  }
}

}  // namespace
}  // namespace scellis::conform

// ConformanceReceipts: what a passing conformance run leaves behind. A receipt names the op, the
// hash of the WGSL its cases compiled to, the device profile it ran on, the tier and the explicit
// thresholds, the cases and the largest errors seen, the seed and the date. It is stored
// content-addressed (store::Store) and indexed by (device profile, op).
//
// A receipt is scoped to its device profile: one minted on another GPU, driver or Dawn build does
// not count here, and one for other WGSL (the generator changed since) does not count either. A
// receipt at a stricter tier covers a looser one (its thresholds are tighter, and debug also
// checked bit-identical reruns). Receipts gate trust, not execution: an unconformed kernel still
// runs; `scellis run` says which kernels hold a receipt.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/determinism.h"
#include "base/json_util.h"
#include "conform/runner.h"
#include "kernel/module.h"
#include "runtime/device_profile.h"
#include "store/store.h"

namespace scellis::conform {

inline constexpr const char* kReceiptKind = "conformance-receipt";
// Schema 2 records each case's largest error in units of its thresholds (max_bound_ratio).
inline constexpr int kReceiptSchema = 2;

// The device a receipt is scoped to: its key plus the parts a reader wants to see. Every executor
// reports its own (runtime::Executor::profile()).
using runtime::DeviceProfile;

// The receipt for a passing group. `date` is UTC ISO-8601 (NowUtc()).
Json ReceiptJson(const GroupResult& g, const DeviceProfile& profile, policy::Tier tier,
                 uint64_t seed, const std::string& date);
std::string NowUtc();

// Stores the receipt of a passing group and indexes it under (profile, op); returns its id. A
// failing group gets no receipt (internal error if asked).
Result<std::string> MintReceipt(const store::Store& store, const GroupResult& g,
                                const DeviceProfile& profile, policy::Tier tier, uint64_t seed);

// True when the store holds a receipt for `op` on exactly this profile, for exactly this source
// hash, minted at `tier` or a stricter one, that is verified before it is trusted: its schema is
// this build's, its thresholds (the group's and every case's) are those its tier gives their
// tolerance classes, it records every case of the op and every recorded error is within its
// thresholds, and a debug receipt records bit-identical reruns. A receipt whose stored file fails
// its integrity check (store-object-corrupt), or that fails verification, is ignored, and when
// `warnings` is given a line naming the receipt and the failed check is added to it (receipts for other code or
// a looser tier are passed over silently: they are expected after an upgrade).
// `ops` is where the op is found (a document's table for a user op: its cases are its own).
bool HasReceipt(const store::Store& store, const std::string& profile, const std::string& op,
                const std::string& source_hash, policy::Tier tier,
                std::vector<std::string>* warnings = nullptr,
                const ops::OpTable& ops = *ops::BuiltinOps());
// The id of the receipt HasReceipt would accept; "" when there is none.
std::string FindReceipt(const store::Store& store, const std::string& profile,
                        const std::string& op, const std::string& source_hash, policy::Tier tier,
                        std::vector<std::string>* warnings = nullptr,
                        const ops::OpTable& ops = *ops::BuiltinOps());

// Which kernels of a module hold receipts on a profile, for `scellis run`. A kernel needs a
// receipt for its op; a fused kernel for each op in it, plus the fused group when it chains more
// than one op.
struct KernelReceipts {
  std::string kernel;
  std::vector<std::string> groups;   // the receipts it needs
  std::vector<std::string> missing;  // those not held
  bool user = false;                 // the kernel of an op the document defines
};
struct ReceiptReport {
  std::string profile;
  std::vector<KernelReceipts> kernels;
  std::vector<std::string> warnings;  // receipts ignored because they failed verification
  std::vector<std::string> used;      // the ids of the receipts held, each once
  int conformed() const;
  std::vector<std::string> missing() const;  // groups missing for any kernel, each once
  // The user ops the module runs, each once, with whether it is conformed on this profile: an
  // unconformed one runs all the same, marked so in the result.
  std::vector<std::pair<std::string, bool>> user_ops() const;
  // "receipts: 3/4 kernels conformed on this profile (missing: matmul)", then per user op
  // "; user op stencil5: unconformed" (or conformed).
  std::string Line() const;
  Json ToJson() const;
};
ReceiptReport CheckReceipts(const store::Store& store, const std::string& profile,
                            const kernel::Module& m, policy::Tier tier);

}  // namespace scellis::conform

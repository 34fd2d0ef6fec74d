// Run records: what `scellis run` and `scellis train` leave in the content-addressed store so a
// run can be listed, inspected and replayed (record/replay.h). A record names the document (kept
// as an object of its own), the plan's hash, the tier, the tolerance class and its thresholds,
// the device profile, backend and executor, the conformance receipts it relied on, a digest of
// every fed input and every output (SHA-256 over dtype, shape and bytes), the engine's version,
// the settings that reproduce the run, and the time it was made. A run given user ops with callable
// references (api/user_ops.h) records each one's definition as its receipts key on it — the
// signature, the WGSL and the version strings of its reference and gradients — and that
// definition's hash: the callable itself cannot be stored, so a replay must be handed it again
// (record/replay.h).
//
// Tensors of at most kKeptTensorBytes are also kept as blobs, so a replay can compare values
// within a tolerance (and name the first differing element); larger ones are kept as digests
// only, which a replay can compare for equality but not within a tolerance.
//
// Records are indexed by the UTC day they were made (index/run-record/<profile ""> /<day>/), so
// listing the newest reads only the days it needs.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "api/run.h"
#include "store/store.h"
#include "train/trainer.h"

namespace scellis::record {

inline constexpr const char* kRunRecordKind = "scellis.run-record/2";
inline constexpr const char* kRecordIndex = "run-record";
inline constexpr int64_t kKeptTensorBytes = int64_t{4} << 20;

// "<dtype>;<d0>,<d1>,...;" followed by the bytes, hashed: two tensors with the same bytes but
// another shape or dtype have other digests.
std::string TensorHash(const runtime::HostTensor& t);

// {"dtype", "shape", "sha256", "blob"}: blob is the id of the bytes in `store`, or null when the
// tensor is larger than kKeptTensorBytes.
Result<Json> TensorDigest(const store::Store& store, const runtime::HostTensor& t);
// {name: TensorDigest} of named tensors (Feeds, or a run's outputs as name-tensor pairs).
template <typename NamedTensors>
Result<Json> DigestsOf(const store::Store& store, const NamedTensors& tensors) {
  Json j = Json::object();
  for (const auto& [name, t] : tensors) {
    SCELLIS_ASSIGN_OR_RETURN(Json d, TensorDigest(store, t));
    j[name] = std::move(d);
  }
  return j;
}
// The tensor a digest kept as a blob, checked against the digest (`store-object-corrupt` when its
// bytes no longer match; `record-tensor-not-kept` when it was too large to keep).
Result<runtime::HostTensor> KeptTensor(const store::Store& store, const Json& digest);

// The compile and backend settings as JSON, and back.
Json CompileSettingsJson(const pipeline::CompileOptions& o);
Result<pipeline::CompileOptions> CompileSettingsFrom(const Json& j);

// The user ops with callable references in `table` (gradient ops aside: their definitions are
// within their op's), as a record holds them: [{"name", "definition", "definition_hash"}] in
// table order; empty for none.
Json CallableUserOpsJson(const ops::OpTable* table);

// Stores `record` (any command's: run, train, session) beside its document, with the fields every
// record carries (document id, kind, engine version, date), and indexes it under its day; returns
// the run id.
Result<std::string> PutRecord(const store::Store& store, std::string_view document, Json record);

// Stores the record of a finished run (and its document) and indexes it; returns the run id.
Result<std::string> RecordRun(const store::Store& store, std::string_view document,
                              const api::RunOptions& options, const api::RunReport& report);
// The same for a training run: its outputs are the loss of every step and the test accuracy of
// every epoch (f32 tensors "losses" and "test_accuracy").
Result<std::string> RecordTraining(const store::Store& store, std::string_view document,
                                   const train::TrainOptions& options,
                                   const train::TrainResult& result);
// The outputs a training run records, as tensors.
std::vector<std::pair<std::string, runtime::HostTensor>> TrainingOutputs(
    const train::TrainResult& result);

// The record with this id: `store-object-corrupt` when tampered with, `not-a-run-record` when
// the id names something else.
Result<Json> LoadRecord(const store::Store& store, const std::string& run_id);

struct RunSummary {
  std::string id, date, command, backend, tier, content_id;
  Json ToJson() const;
};
// The newest `limit` records (0: all), newest first. A record that cannot be read (corrupt) is
// left out and named in `problems`.
std::vector<RunSummary> ListRuns(const store::Store& store, size_t limit,
                                 std::vector<Diagnostic>* problems = nullptr);

// The record as a reader shows it (the Studio's /api/runs/<id>): the record with "run_id", and
// under "values" every output it kept, read back through KeptTensor and given as a run report
// gives tensors ({"shape", "dtype", "data"}); an output kept only as a digest is null there. A
// kept tensor that no longer matches its digest refuses the whole record
// (`store-object-corrupt`), as a tampered record does.
Result<Json> RecordWithValues(const store::Store& store, const std::string& run_id);

// Whether runs are recorded: yes unless $SCELLIS_NO_RECORD is set to anything but "" or "0"
// (front ends also offer a flag, --no-record).
bool RecordingEnabled();

// Whether a stored object is a record of some kind (this one's, the Studio's run and training
// records, data-parallel shard records): the roots `scellis store gc` keeps besides the index.
bool IsRecordObject(const Json& object);

}  // namespace scellis::record

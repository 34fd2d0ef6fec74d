// Verifiable shards of a data-parallel run. With --record-shards, rank 0 records the run's last
// step in the store: the document, the weights before the step, where the batch lies in the
// epoch's order, the gradient half's plan hash and every rank's partials (the sums it sent to the
// all-gather). `scellis verify RUN_ID --shard K` re-runs rank K's chunks alone on the CPU
// reference and compares its partials with the record: bit for bit on the reference, within the
// plan's tolerance class when the run used another backend.
#pragma once

#include <string>
#include <vector>

#include "api/session.h"
#include "data/dataset.h"
#include "workplan/workplan.h"

namespace scellis::train {

// The gradient set (every param's gradient, then the loss; workplan::WorkPlan::params order) of
// each chunk of `rank`'s shard, for the batch that starts at `batch_start` in `order`, at the
// weights the gradient session holds (its params are resident). The split is held whole or
// streamed from its files: the same chunks either way.
struct ShardInputs {
  const data::SplitReader* train = nullptr;
  const std::vector<int64_t>* order = nullptr;
  int64_t batch_start = 0;
  std::string images_feed, labels_feed;
};
Result<std::vector<std::vector<float>>> ShardGradients(api::Session& gradients,
                                                       const workplan::WorkPlan& w, int rank,
                                                       const ShardInputs& in);

struct ShardCheck {
  std::string run_id;
  int shard = 0, ranks = 0;
  int first_chunk = 0, chunks = 0;
  int64_t first_example = 0, examples = 0;  // within the recorded batch
  int64_t global_step = 0;
  std::string recorded_backend;
  int partials = 0;
  bool bit_exact = false;  // every partial equal bit for bit
  double max_abs_diff = 0, atol = 0, rtol = 0;
  bool ok = false;  // bit for bit, or within atol + rtol * |recorded| everywhere

  // {"run", "shard", "ranks", "first_chunk", "chunks", "partials", "recorded_backend",
  //  "bit_exact", "max_abs_diff", "ok"}: what `scellis verify --json` prints.
  Json ToJson() const;
};
// `bad-flag` for a shard the run did not have; `not-a-shard-record` for another object;
// `plan-mismatch` when this build's gradient half is not the recorded one.
Result<ShardCheck> VerifyShard(const std::string& run_id, int shard,
                               const std::string& store_root = "");

}  // namespace scellis::train

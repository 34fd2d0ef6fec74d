// The host memory a training workflow's dataset takes: the trainer decodes both splits whole
// (images and labels as f32, data::LoadDataset) and keeps them for the whole run, gathering every
// batch from them in an order shuffled over all examples (data::EpochOrder). It therefore cannot
// stream the set from its files, and `scellis plan` states the bytes rather than a streaming plan.
#pragma once

#include <optional>
#include <string>

#include "base/json_util.h"
#include "block/program.h"
#include "data/dataset.h"

namespace scellis::train {

struct HeldDataset {
  std::string source;
  data::DatasetShape train, test;
  int64_t bytes = 0;  // both splits' images and labels as f32

  // `"fashion-mnist": 60000 train + 10000 test examples of 784 f32 with labels, 209.8 MiB of host
  // memory, held whole for the run`.
  std::string Describe() const;
  Json ToJson() const;
};

// The dataset the training workflow `p` reads, measured from its files' headers (nothing is
// decoded); nullopt for a program without a dataset.
Result<std::optional<HeldDataset>> DatasetHeld(const block::Program& p);

}  // namespace scellis::train

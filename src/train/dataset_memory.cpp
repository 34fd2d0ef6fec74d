#include "train/dataset_memory.h"

#include "execplan/plan.h"

namespace scellis::train {

std::string HeldDataset::Describe() const {
  return "\"" + source + "\": " + std::to_string(train.examples) + " train + " +
         std::to_string(test.examples) + " test examples of " + std::to_string(train.features) +
         " f32 with labels, " + execplan::FormatBytes(bytes) +
         " of host memory, held whole for the run (batches are drawn from every example in a "
         "shuffled order, so the set is not streamed; not counted against the budget)";
}

Json HeldDataset::ToJson() const {
  return {{"source", source},
          {"train_examples", train.examples},
          {"test_examples", test.examples},
          {"features", train.features},
          {"host_bytes", bytes},
          {"streamed", false}};
}

Result<std::optional<HeldDataset>> DatasetHeld(const block::Program& p) {
  if (!p.train || p.train->dataset < 0) return std::optional<HeldDataset>();
  const Json& source = p.blocks[p.train->dataset].params["source"];
  if (!source.is_string()) return std::optional<HeldDataset>();
  HeldDataset d;
  d.source = source.get<std::string>();
  SCELLIS_ASSIGN_OR_RETURN(d.train, data::MeasureDataset(d.source, "train"));
  SCELLIS_ASSIGN_OR_RETURN(d.test, data::MeasureDataset(d.source, "test"));
  // What LoadDataset keeps per split: count x features image values and count labels, as f32.
  for (const data::DatasetShape& s : {d.train, d.test})
    d.bytes += int64_t{4} * (s.examples * s.features + s.examples);
  return std::optional<HeldDataset>(std::move(d));
}

}  // namespace scellis::train

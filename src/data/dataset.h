// Labelled image datasets for training: loaded from IDX files (plain or gzipped), images scaled to
// [0, 1] and flattened, and served in batches whose order is a seeded, counter-based shuffle — the
// same batches on every backend, every run, and after a resume.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/result.h"

namespace scellis::data {

struct Dataset {
  std::string name;
  int64_t count = 0;
  int64_t features = 0;            // e.g. 784 for 28x28 images
  std::vector<float> images;       // count × features, in [0, 1]
  std::vector<float> labels;       // count class indices, as f32
  std::vector<std::string> files;  // what it was read from: no output may overwrite them
};

// Loads a split ("train" or "test") of a named source. Sources: "fashion-mnist" (Debian's
// dataset-fashion-mnist, or $SCELLIS_FASHION_MNIST_DIR), or "idx:<images file>,<labels file>".
Result<Dataset> LoadDataset(const std::string& source, const std::string& split);

// What a dataset holds, read from its files' IDX headers alone (nothing is decoded).
struct DatasetShape {
  int64_t examples = 0;
  int64_t features = 0;  // values per example (784 for 28x28 images)
};

// The shape of a split of a source, as LoadDataset would load it, from the headers of its images
// and labels files; the same diagnostics when the files are missing or are not IDX.
Result<DatasetShape> MeasureDataset(const std::string& source, const std::string& split);

// Refuses labels that are not class indices of a model with `classes` outputs: NaN, fractional,
// negative or >= classes (`bad-dataset`, at `pointer`, naming the split and the first bad example).
// Caught when the data is read, not as a NaN loss some steps later.
Status CheckLabels(const Dataset& d, int64_t classes, const std::string& pointer);

// The example order of `epoch`: a Fisher-Yates shuffle driven by counter-based random numbers of
// (seed, epoch), so any epoch's order can be recomputed alone (a resume needs exactly that).
std::vector<int64_t> EpochOrder(int64_t count, uint64_t seed, int64_t epoch);

// Fills `images` (batch × features) and `labels` (batch) with examples order[first .. first+batch).
void GatherBatch(const Dataset& d, const std::vector<int64_t>& order, int64_t first, int64_t batch,
                 std::vector<float>& images, std::vector<float>& labels);

}  // namespace scellis::data

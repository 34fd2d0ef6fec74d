// Labelled image datasets for training: loaded from IDX files (plain or gzipped), images scaled to
// [0, 1] and flattened, and served in batches whose order is a seeded, counter-based shuffle — the
// same batches on every backend, every run, and after a resume.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "data/idx.h"

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

// The images and labels files of a split ("train" or "test") of a source, as LoadDataset reads
// them.
Result<std::pair<std::string, std::string>> DatasetFiles(const std::string& source,
                                                         const std::string& split);

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

// A split read from its files on demand instead of decoded whole: each batch's examples are read
// at their offsets in plain IDX files (a gzipped file is inflated once, elsewhere:
// train/dataset_memory.h) and scaled as LoadDataset scales them, so a batch gathered here equals,
// bit for bit, GatherBatch's from the loaded set. Holds the batch being gathered, nothing more.
class StreamedSplit {
 public:
  // `images_raw`, `labels_raw`: plain IDX files with the split's content; `files`: the files the
  // split was named by (for messages, and so no output overwrites them). `dataset-mismatch` and
  // IdxRows's diagnostics.
  static Result<StreamedSplit> Open(const std::string& name, const std::string& images_raw,
                                    const std::string& labels_raw, std::vector<std::string> files);

  const std::string& name() const { return name_; }
  int64_t count() const { return images_.rows(); }
  int64_t features() const { return images_.row_elements(); }
  const std::vector<std::string>& files() const { return files_; }

  // GatherBatch's batch, read from the files.
  Status Gather(const std::vector<int64_t>& order, int64_t first, int64_t batch,
                std::vector<float>& images, std::vector<float>& labels) const;
  // data::CheckLabels over the labels file, read in chunks.
  Status CheckLabels(int64_t classes, const std::string& pointer) const;

 private:
  StreamedSplit(IdxRows images, IdxRows labels)
      : images_(std::move(images)), labels_(std::move(labels)) {}
  std::string name_;
  std::vector<std::string> files_;
  IdxRows images_, labels_;
  float scale_ = 1.0f;
};

// A split as a run reads it: decoded whole (LoadDataset) or streamed from its files; the same
// batches either way.
struct SplitReader {
  Dataset held;
  std::optional<StreamedSplit> streamed;

  int64_t count() const { return streamed ? streamed->count() : held.count; }
  int64_t features() const { return streamed ? streamed->features() : held.features; }
  const std::string& name() const { return streamed ? streamed->name() : held.name; }
  const std::vector<std::string>& files() const {
    return streamed ? streamed->files() : held.files;
  }
  Status Gather(const std::vector<int64_t>& order, int64_t first, int64_t batch,
                std::vector<float>& images, std::vector<float>& labels) const;
  Status CheckLabels(int64_t classes, const std::string& pointer) const;
};

}  // namespace scellis::data

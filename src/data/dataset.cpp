#include "data/dataset.h"

#include <zlib.h>

#include <cmath>
#include <filesystem>
#include <sstream>

#include "base/random.h"
#include "data/idx.h"

namespace scellis::data {

Result<std::pair<std::string, std::string>> DatasetFiles(const std::string& source,
                                                         const std::string& split) {
  if (split != "train" && split != "test") {
    return UserError("bad-dataset-split", "",
                     "the split is \"" + split + "\", expected train or test");
  }
  std::string images_path, labels_path;
  if (source == "fashion-mnist") {
    auto dir = FindFashionMnistDir();
    if (!dir) {
      return UserError("dataset-not-found", "", "the Fashion-MNIST files are not installed",
                       "install Debian's dataset-fashion-mnist (make setup does), or set "
                       "SCELLIS_FASHION_MNIST_DIR to a folder holding the four IDX files");
    }
    bool train = split == "train";
    images_path =
        (std::filesystem::path(*dir) / (train ? kFashionMnistTrainImages : kFashionMnistTestImages))
            .string();
    labels_path =
        (std::filesystem::path(*dir) / (train ? kFashionMnistTrainLabels : kFashionMnistTestLabels))
            .string();
  } else if (source.rfind("idx:", 0) == 0) {
    std::string rest = source.substr(4);
    size_t comma = rest.find(',');
    if (comma == std::string::npos)
      return UserError("bad-dataset-source", "", "an idx source is \"idx:<images>,<labels>\"");
    images_path = rest.substr(0, comma);
    labels_path = rest.substr(comma + 1);
  } else {
    return UserError("unknown-dataset", "", "the dataset source \"" + source + "\" is not known",
                     "sources: fashion-mnist, idx:<images>,<labels>");
  }
  return std::make_pair(images_path, labels_path);
}

namespace {

// The factor LoadDataset scales a file's values by: u8 pixels to [0, 1], other types as they are.
float ImageScale(IdxType t) {
  return t == IdxType::kU8 ? 1.0f / 255.0f : 1.0f;
}

// The dimensions an IDX file declares, from its header (gzip or plain alike: zlib reads both).
Result<std::vector<int64_t>> IdxDims(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f) return UserError("file-not-found", "", "cannot open '" + path + "'");
  unsigned char head[4 + 4 * 255];
  int got = gzread(f, head, 4);
  const int ndims = got == 4 ? head[3] : 0;
  if (got == 4 && ndims > 0) got += gzread(f, head + 4, 4 * ndims);
  gzclose(f);
  if (got != 4 + 4 * ndims || head[0] != 0 || head[1] != 0)
    return UserError("idx-truncated", "", "'" + path + "' does not start with an IDX header");
  std::vector<int64_t> dims;
  for (int i = 0; i < ndims; ++i) {
    const unsigned char* d = head + 4 + 4 * i;
    dims.push_back((int64_t{d[0]} << 24) | (d[1] << 16) | (d[2] << 8) | d[3]);
  }
  return dims;
}

}  // namespace

Result<DatasetShape> MeasureDataset(const std::string& source, const std::string& split) {
  SCELLIS_ASSIGN_OR_RETURN(auto files, DatasetFiles(source, split));
  SCELLIS_ASSIGN_OR_RETURN(std::vector<int64_t> images, IdxDims(files.first));
  if (images.empty()) return UserError("dataset-mismatch", "", "the images file holds no examples");
  DatasetShape shape;
  shape.examples = images[0];
  shape.features = 1;
  for (size_t i = 1; i < images.size(); ++i) shape.features *= images[i];
  return shape;
}

Result<Dataset> LoadDataset(const std::string& source, const std::string& split) {
  SCELLIS_ASSIGN_OR_RETURN(auto files, DatasetFiles(source, split));
  const auto& [images_path, labels_path] = files;
  SCELLIS_ASSIGN_OR_RETURN(IdxArray images, ReadIdx(images_path));
  SCELLIS_ASSIGN_OR_RETURN(IdxArray labels, ReadIdx(labels_path));
  if (images.dims.empty() || labels.dims.size() != 1 || images.dims[0] != labels.dims[0]) {
    return UserError("dataset-mismatch", "",
                     "the images (" + images_path + ") and labels (" + labels_path +
                         ") do not have the same number of examples");
  }
  Dataset d;
  d.name = source + ":" + split;
  d.count = images.dims[0];
  d.features = d.count ? static_cast<int64_t>(images.values.size()) / d.count : 0;
  const float scale = ImageScale(images.type);
  d.images = std::move(images.values);
  for (float& v : d.images) v *= scale;
  d.labels = std::move(labels.values);
  d.files = {images_path, labels_path};
  return d;
}

namespace {

// One label against the classes of the model: written so that NaN fails it too.
Status CheckLabel(float l, size_t i, const std::string& name, int64_t classes,
                  const std::string& pointer) {
  if (l >= 0 && l < static_cast<float>(classes) && std::floor(l) == l) return Status::Ok();
  std::ostringstream v;
  v << l;
  return UserError("bad-dataset", pointer,
                   "example " + std::to_string(i) + " of \"" + name + "\" has label " + v.str() +
                       ", not a class index of the model's " + std::to_string(classes) +
                       " outputs (0 to " + std::to_string(classes - 1) + ")",
                   "the labels file does not fit this model: check the dataset and the size of "
                   "the output layer");
}

}  // namespace

Status CheckLabels(const Dataset& d, int64_t classes, const std::string& pointer) {
  for (size_t i = 0; i < d.labels.size(); ++i)
    SCELLIS_TRY(CheckLabel(d.labels[i], i, d.name, classes, pointer));
  return Status::Ok();
}

std::vector<int64_t> EpochOrder(int64_t count, uint64_t seed, int64_t epoch) {
  std::vector<int64_t> order(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) order[i] = i;
  uint64_t stream = CounterHash(seed, static_cast<uint64_t>(epoch));
  for (int64_t i = count - 1; i > 0; --i) {
    // Multiply-shift maps 64 random bits to [0, i]; bias is below 2^-32 for these sizes.
    uint64_t r = CounterHash(stream, static_cast<uint64_t>(i));
    int64_t j = static_cast<int64_t>(
        (static_cast<unsigned __int128>(r) * static_cast<uint64_t>(i + 1)) >> 64);
    std::swap(order[i], order[j]);
  }
  return order;
}

void GatherBatch(const Dataset& d, const std::vector<int64_t>& order, int64_t first, int64_t batch,
                 std::vector<float>& images, std::vector<float>& labels) {
  images.resize(static_cast<size_t>(batch * d.features));
  labels.resize(static_cast<size_t>(batch));
  for (int64_t b = 0; b < batch; ++b) {
    int64_t ex = order[static_cast<size_t>(first + b)];
    std::copy(d.images.begin() + ex * d.features, d.images.begin() + (ex + 1) * d.features,
              images.begin() + b * d.features);
    labels[b] = d.labels[ex];
  }
}

Result<StreamedSplit> StreamedSplit::Open(const std::string& name, const std::string& images_raw,
                                          const std::string& labels_raw,
                                          std::vector<std::string> files) {
  SCELLIS_ASSIGN_OR_RETURN(IdxRows images, IdxRows::Open(images_raw));
  SCELLIS_ASSIGN_OR_RETURN(IdxRows labels, IdxRows::Open(labels_raw));
  if (labels.dims().size() != 1 || images.rows() != labels.rows()) {
    return UserError("dataset-mismatch", "",
                     "the images (" + files.front() + ") and labels (" + files.back() +
                         ") do not have the same number of examples");
  }
  StreamedSplit s(std::move(images), std::move(labels));
  s.name_ = name;
  s.files_ = std::move(files);
  s.scale_ = ImageScale(s.images_.type());
  return s;
}

Status StreamedSplit::Gather(const std::vector<int64_t>& order, int64_t first, int64_t batch,
                             std::vector<float>& images, std::vector<float>& labels) const {
  const int64_t f = features();
  images.resize(static_cast<size_t>(batch * f));
  labels.resize(static_cast<size_t>(batch));
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t ex = order[static_cast<size_t>(first + b)];
    SCELLIS_TRY(images_.Read(ex, 1, images.data() + b * f));
    SCELLIS_TRY(labels_.Read(ex, 1, labels.data() + b));
  }
  // The same product LoadDataset takes, so the values are bit for bit the held set's.
  for (float& v : images) v *= scale_;
  return Status::Ok();
}

Status StreamedSplit::CheckLabels(int64_t classes, const std::string& pointer) const {
  constexpr int64_t kChunk = 4096;
  std::vector<float> chunk;
  for (int64_t first = 0; first < count(); first += kChunk) {
    const int64_t n = std::min(kChunk, count() - first);
    chunk.resize(static_cast<size_t>(n));
    SCELLIS_TRY(labels_.Read(first, n, chunk.data()));
    for (int64_t i = 0; i < n; ++i)
      SCELLIS_TRY(CheckLabel(chunk[i], static_cast<size_t>(first + i), name_, classes, pointer));
  }
  return Status::Ok();
}

Status SplitReader::Gather(const std::vector<int64_t>& order, int64_t first, int64_t batch,
                           std::vector<float>& images, std::vector<float>& labels) const {
  if (streamed) return streamed->Gather(order, first, batch, images, labels);
  GatherBatch(held, order, first, batch, images, labels);
  return Status::Ok();
}

Status SplitReader::CheckLabels(int64_t classes, const std::string& pointer) const {
  if (streamed) return streamed->CheckLabels(classes, pointer);
  return data::CheckLabels(held, classes, pointer);
}

}  // namespace scellis::data

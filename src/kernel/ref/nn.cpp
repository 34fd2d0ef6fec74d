// Row-wise normalizations and cross entropy on the CPU. Each row: the maximum, then exp(x - max)
// summed in index order; the WGSL kernels (kernel/emit/wgsl/nn.cpp) walk rows the same way. The
// mean over rows of cross_entropy uses the GPU's order exactly: the fixed 256-wide tree
// (tree_sum.h).
#include <cmath>
#include <limits>

#include "base/detmath.h"
#include "kernel/ref/ref.h"
#include "kernel/ref/tree_sum.h"

namespace scellis::kernel::ref {
namespace {

// Max and sum of exp(x - max) of one row of n >= 1 elements. A NaN anywhere in the row makes the
// sum NaN (the comparison skips it for the maximum, the exponential does not).
template <typename T>
void RowMaxSum(const T* x, int64_t n, T& max, T& sum) {
  max = x[0];
  for (int64_t j = 1; j < n; ++j)
    if (x[j] > max) max = x[j];
  sum = T(0);
  for (int64_t j = 0; j < n; ++j) sum += detmath::Exp(x[j] - max);
}

template <typename T>
void Rowwise(const OpArgs<T>& a, bool log) {
  const TensorType& t = a.in_type(0);
  int64_t n = t.dims.back().size;
  int64_t rows = n ? t.elements() / n : 0;
  a.parallel->For((rows + 63) / 64, [&](int64_t c) {
    for (int64_t r = c * 64; r < std::min(rows, (c + 1) * 64); ++r) {
      const T* x = a.inputs[0] + r * n;
      T* y = a.output + r * n;
      T max, sum;
      RowMaxSum(x, n, max, sum);
      if (log) {
        T log_sum = detmath::Log(sum);
        for (int64_t j = 0; j < n; ++j) y[j] = (x[j] - max) - log_sum;
      } else {
        for (int64_t j = 0; j < n; ++j) y[j] = detmath::Exp(x[j] - max) / sum;
      }
    }
  });
}

template <typename T>
void Softmax(const OpArgs<T>& a) {
  Rowwise(a, false);
}
template <typename T>
void LogSoftmax(const OpArgs<T>& a) {
  Rowwise(a, true);
}

// The class of a label, or -1 when it is not an integer in [0, classes).
template <typename T>
int64_t LabelClass(T label, int64_t classes) {
  if (!(label >= T(0)) || !(label < static_cast<T>(classes))) return -1;  // also NaN
  if (std::floor(label) != label) return -1;
  return static_cast<int64_t>(label);
}

template <typename T>
void CrossEntropy(const OpArgs<T>& a) {
  const TensorType& t = a.in_type(0);
  int64_t rows = t.dims[0].size, classes = t.dims[1].size;
  auto row_loss = [&](int64_t r) {
    const T* x = a.inputs[0] + r * classes;
    int64_t k = LabelClass(a.inputs[1][r], classes);
    if (k < 0) return std::numeric_limits<T>::quiet_NaN();
    T max, sum;
    RowMaxSum(x, classes, max, sum);
    return -((x[k] - max) - detmath::Log(sum));
  };
  const T total = TreeSum256<T>(rows, row_loss, *a.parallel);
  a.output[0] = rows ? total / static_cast<T>(rows) : std::numeric_limits<T>::quiet_NaN();
}

// PyTorch's order: with p = exp(log_softmax) and r = b / N, out = p * r, minus r at the label.
template <typename T>
void CrossEntropyGrad(const OpArgs<T>& a) {
  const TensorType& t = a.in_type(0);
  int64_t rows = t.dims[0].size, classes = t.dims[1].size;
  T r = a.inputs[2][0] / static_cast<T>(rows);
  a.parallel->For((rows + 63) / 64, [&](int64_t c) {
    for (int64_t row = c * 64; row < std::min(rows, (c + 1) * 64); ++row) {
      const T* x = a.inputs[0] + row * classes;
      T* y = a.output + row * classes;
      int64_t k = LabelClass(a.inputs[1][row], classes);
      if (k < 0) {
        std::fill(y, y + classes, std::numeric_limits<T>::quiet_NaN());
        continue;
      }
      T max, sum;
      RowMaxSum(x, classes, max, sum);
      T log_sum = detmath::Log(sum);
      for (int64_t j = 0; j < classes; ++j) {
        T p = detmath::Exp((x[j] - max) - log_sum);
        y[j] = j == k ? p * r - r : p * r;
      }
    }
  });
}

}  // namespace

void AddNnOps(std::vector<std::pair<std::string, OpImpl>>& t) {
  t.push_back({"softmax", {Softmax<float>, Softmax<double>}});
  t.push_back({"log_softmax", {LogSoftmax<float>, LogSoftmax<double>}});
  t.push_back({"cross_entropy", {CrossEntropy<float>, CrossEntropy<double>}});
  t.push_back({"cross_entropy_grad", {CrossEntropyGrad<float>, CrossEntropyGrad<double>}});
}

}  // namespace scellis::kernel::ref

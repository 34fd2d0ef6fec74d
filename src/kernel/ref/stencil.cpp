#include <cmath>
#include <limits>

#include "kernel/ref/ref.h"

namespace scellis::kernel::ref {
namespace {

// One Game-of-Life step on a torus: a cell is alive next if it has 3 live neighbours, or 2 and is
// alive now. Cells are read as alive when > 0.5 so the rule is robust to non-exact 0/1 inputs. A
// NaN among the nine cells a result reads makes the result NaN: the step cannot say whether that
// cell lives, and NaN never silently turns into a state.
template <typename T>
void Life(const OpArgs<T>& a) {
  int64_t rows = a.node->type.dims[0].size, cols = a.node->type.dims[1].size;
  const T* x = a.inputs[0];
  a.parallel->For((rows + 63) / 64, [&](int64_t c) {
    for (int64_t r = c * 64; r < std::min(rows, (c + 1) * 64); ++r) {
      for (int64_t q = 0; q < cols; ++q) {
        int n = 0;
        bool nan = false;
        for (int dr = -1; dr <= 1; ++dr)
          for (int dq = -1; dq <= 1; ++dq) {
            int64_t rr = (r + dr + rows) % rows, qq = (q + dq + cols) % cols;
            T cell = x[rr * cols + qq];
            nan = nan || std::isnan(cell);
            if (dr || dq) n += cell > T(0.5);
          }
        bool alive = x[r * cols + q] > T(0.5);
        a.output[r * cols + q] = nan ? std::numeric_limits<T>::quiet_NaN()
                                 : (n == 3 || (alive && n == 2)) ? T(1)
                                                                 : T(0);
      }
    }
  });
}

}  // namespace

void AddStencilOps(std::vector<std::pair<std::string, OpImpl>>& t) {
  t.push_back({"life", {Life<float>, Life<double>}});
}

}  // namespace scellis::kernel::ref

#include "kernel/ref/ref.h"

#include <algorithm>
#include <atomic>
#include <thread>

namespace scellis::kernel::ref {

int ThreadsFor(int requested) {
  if (requested > 0) return requested;
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

Parallel::Parallel(int threads) : threads_(threads < 1 ? 1 : threads) {}

void Parallel::For(int64_t chunks, const std::function<void(int64_t)>& fn) const {
  int workers = static_cast<int>(std::min<int64_t>(threads_, chunks));
  if (workers <= 1) {
    for (int64_t c = 0; c < chunks; ++c) fn(c);
    return;
  }
  std::atomic<int64_t> next{0};
  auto work = [&] {
    for (int64_t c = next++; c < chunks; c = next++) fn(c);
  };
  std::vector<std::thread> pool;
  for (int i = 1; i < workers; ++i) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
}

std::vector<int64_t> Unravel(int64_t index, const std::vector<int64_t>& sizes) {
  std::vector<int64_t> idx(sizes.size(), 0);
  for (int i = static_cast<int>(sizes.size()) - 1; i >= 0; --i) {
    if (sizes[i] == 0) return idx;
    idx[i] = index % sizes[i];
    index /= sizes[i];
  }
  return idx;
}

namespace {

const std::vector<std::pair<std::string, ScalarImpl>>& Scalars() {
  static const auto table = [] {
    std::vector<std::pair<std::string, ScalarImpl>> t;
    AddElementwiseScalars(t);
    return t;
  }();
  return table;
}

const std::vector<std::pair<std::string, OpImpl>>& Ops() {
  static const auto table = [] {
    std::vector<std::pair<std::string, OpImpl>> t;
    AddReduceOps(t);
    AddLinalgOps(t);
    AddLayoutOps(t);
    AddStencilOps(t);
    AddNnOps(t);
    AddOptimOps(t);
    AddRandomOps(t);
    AddIndexOps(t);
    return t;
  }();
  return table;
}

template <typename T>
ScalarFn<T> Pick(const ScalarImpl& s);
template <>
ScalarFn<float> Pick<float>(const ScalarImpl& s) {
  return s.f32;
}
template <>
ScalarFn<double> Pick<double>(const ScalarImpl& s) {
  return s.f64;
}

template <typename T>
OpFn<T> PickOp(const OpImpl& s);
template <>
OpFn<float> PickOp<float>(const OpImpl& s) {
  return s.f32;
}
template <>
OpFn<double> PickOp<double>(const OpImpl& s) {
  return s.f64;
}

// As torch's conversion to bool: every value but +-0 is true, NaN included.
template <typename T>
T BoolOf(T v) {
  return v != T(0) ? T(1) : T(0);
}

// A shift step's read: input `sizes` (broadcast into the output, trailing axes aligned) at the
// output element `idx` moved back by `shifts`; -1 where the zero boundary reads nothing.
struct ShiftedRead {
  std::vector<int64_t> sizes, shifts;
  std::string boundary;

  int64_t Offset(const std::vector<int64_t>& idx) const {
    const size_t lead = idx.size() - sizes.size();
    int64_t off = 0;
    for (size_t j = 0; j < sizes.size(); ++j) {
      const int64_t n = sizes[j];
      int64_t c = (n == 1 ? 0 : idx[lead + j]) - shifts[j];
      if (c < 0 || c >= n) {
        if (boundary == "zero") return -1;
        c = boundary == "wrap" ? ((c % n) + n) % n : std::clamp<int64_t>(c, 0, n - 1);
      }
      off = off * n + c;
    }
    return off;
  }
};

// A fused elementwise kernel: per output element, gather each input through its broadcast
// strides (or, for a shift step, at its shifted index), then evaluate the steps in order.
template <typename T>
Status RunFused(const Module& m, const Kernel& k, const std::vector<const T*>& inputs, T* out,
                const Parallel& parallel) {
  const TensorType& out_type = m.graph().at(k.output).type;
  std::vector<int64_t> sizes = out_type.sizes();
  int64_t total = out_type.elements();
  std::vector<std::vector<int64_t>> strides;
  for (int in : k.inputs) strides.push_back(BroadcastStrides(m.graph().at(in).type.sizes(), sizes));
  std::vector<ScalarFn<T>> fns;
  std::vector<ShiftedRead> shifted(k.expr.size());
  for (size_t i = 0; i < k.expr.size(); ++i) {
    const ExprStep& s = k.expr[i];
    if (s.op == "shift") {
      const webir::Node& n = m.graph().at(s.node);
      shifted[i] = {m.graph().at(k.inputs[s.operands[0]]).type.sizes(),
                    n.attrs.at("shifts").get<std::vector<int64_t>>(),
                    n.attrs.at("boundary").get<std::string>()};
      fns.push_back(nullptr);
      continue;
    }
    if (s.op == "full") {
      fns.push_back(nullptr);
      continue;
    }
    const ScalarImpl* impl = FindScalar(s.op);
    if (!impl) return InternalError("ref.RunFused", "no scalar reference for " + s.op);
    fns.push_back(Pick<T>(*impl));
  }
  std::vector<DType> cast_to;  // per step: the dtype a cast makes (f32 for every other step)
  for (const ExprStep& s : k.expr)
    cast_to.push_back(s.op == "cast" ? m.graph().at(s.node).type.dtype : DType::kF32);
  std::vector<DType> in_dtypes;
  for (int in : k.inputs) in_dtypes.push_back(m.graph().at(in).type.dtype);
  const DType out_dtype = out_type.dtype;
  int64_t chunks = (total + kChunk - 1) / kChunk;
  parallel.For(chunks, [&](int64_t c) {
    std::vector<T> step(k.expr.size());
    std::vector<int64_t> idx;
    int64_t end = std::min(total, (c + 1) * kChunk);
    for (int64_t i = c * kChunk; i < end; ++i) {
      idx = Unravel(i, sizes);
      auto operand = [&](int o) -> T {
        if (IsStepRef(o)) return step[StepOf(o)];
        int64_t off = 0;
        for (size_t d = 0; d < idx.size(); ++d) off += idx[d] * strides[o][d];
        // An integer is read as its value: exact in f64, rounded once to nearest in f32.
        if (IsIntegerDType(in_dtypes[o]))
          return static_cast<T>(IntegerOf(inputs[o][off], in_dtypes[o]));
        return inputs[o][off];
      };
      for (size_t s = 0; s < k.expr.size(); ++s) {
        const ExprStep& e = k.expr[s];
        if (e.op == "full") {
          step[s] = static_cast<T>(static_cast<float>(e.value));
          continue;
        }
        if (e.op == "shift") {
          const int64_t off = shifted[s].Offset(idx);
          step[s] = off < 0 ? T(0) : inputs[e.operands[0]][off];
          continue;
        }
        T a = operand(e.operands[0]);
        T b = e.operands.size() > 1 ? operand(e.operands[1]) : T(0);
        T c = e.operands.size() > 2 ? operand(e.operands[2]) : T(0);
        step[s] = fns[s](a, b, c);
        // A cast to bool or i32 makes its value one of that dtype in the register already, so
        // that later steps of the expression see it; a cast to f32 keeps the value (f32 is the
        // register). An i32 in the register is the integer rounded to T (2^31 - 1 becomes 2^31
        // in f32, which the store saturates back).
        if (cast_to[s] == DType::kBool) step[s] = BoolOf(step[s]);
        if (cast_to[s] == DType::kI32) step[s] = static_cast<T>(SaturateToI32(step[s]));
      }
      out[i] = out_dtype == DType::kI32 ? IntegerSlot<T>(SaturateToI32(step.back()), DType::kI32)
                                        : step.back();
    }
  });
  return Status::Ok();
}

}  // namespace

const ScalarImpl* FindScalar(const std::string& op) {
  for (const auto& [name, impl] : Scalars())
    if (name == op) return &impl;
  return nullptr;
}

const OpImpl* FindOp(const std::string& op) {
  for (const auto& [name, impl] : Ops())
    if (name == op) return &impl;
  return nullptr;
}

template <typename T>
Status RunKernel(const Module& m, const Kernel& k, const std::vector<const T*>& inputs, T* out,
                 const Parallel& parallel) {
  if (k.kind == KernelKind::kElementwise) return RunFused(m, k, inputs, out, parallel);
  const OpImpl* impl = FindOp(k.op);
  if (!impl) return InternalError("ref.RunKernel", "no CPU reference for op " + k.op);
  OpArgs<T> args{&m.graph(), &m.graph().at(k.output), inputs, out, &parallel, k.transposed};
  PickOp<T> (*impl)(args);
  return Status::Ok();
}

template Status RunKernel<float>(const Module&, const Kernel&, const std::vector<const float*>&,
                                 float*, const Parallel&);
template Status RunKernel<double>(const Module&, const Kernel&, const std::vector<const double*>&,
                                  double*, const Parallel&);

}  // namespace scellis::kernel::ref

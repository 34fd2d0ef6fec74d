// The CPU reference: the oracle every GPU kernel is checked against. Deterministic everywhere —
// no FMA contraction, no fast-math, fixed reduction order, own exp/log/tanh/erf — and parallel
// only over a fixed partition of the output, so its bits do not depend on the thread count.
// Templated on the element type: f32 is what runs; f64 serves gradient checks.
#pragma once

#include <bit>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "base/host_tensor.h"
#include "base/result.h"
#include "kernel/module.h"

namespace scellis::kernel::ref {

// The threads the reference runs on for a request: 0 means one per hardware thread. More than the
// machine has are honoured (tests prove the bits do not depend on the count with more threads than
// cores); front ends cap a user's request at the machine and say so.
int ThreadsFor(int requested);

// Runs chunk indices [0, n) on a fixed number of threads. Work is split into chunks whose
// boundaries depend only on the problem size, never on the thread count. The threads are started
// once and kept (a training step runs dozens of kernels); a For called from inside a chunk, or
// while another caller's For holds the threads, runs its chunks on the calling thread.
class Parallel {
 public:
  explicit Parallel(int threads = 1);
  int threads() const { return threads_; }
  void For(int64_t chunks, const std::function<void(int64_t)>& fn) const;

 private:
  class Pool;
  int threads_;
  std::shared_ptr<Pool> pool_;  // null with one thread
};

// Integer elements (i32, u32) in the reference's buffers. An f32 slot holds the integer's 32 bits,
// because an f32 value cannot hold every i32 (2^24 + 1 is none); an f64 slot holds the value
// itself, which it always can. Layout ops move slots as they are either way; a kernel that reads
// an index or converts a value goes through these two, so integers are never rounded.
inline bool IsIntegerDType(DType t) {
  return t == DType::kI32 || t == DType::kU32;
}
template <typename T>
int64_t IntegerOf(T slot, DType t) {
  if constexpr (std::is_same_v<T, float>) {
    return t == DType::kU32 ? int64_t{std::bit_cast<uint32_t>(slot)}
                            : int64_t{std::bit_cast<int32_t>(slot)};
  } else {
    (void)t;
    return static_cast<int64_t>(slot);
  }
}
template <typename T>
T IntegerSlot(int64_t v, DType t) {
  if constexpr (std::is_same_v<T, float>) {
    return t == DType::kU32 ? std::bit_cast<float>(static_cast<uint32_t>(v))
                            : std::bit_cast<float>(static_cast<int32_t>(v));
  } else {
    (void)t;
    return static_cast<T>(v);
  }
}

// A value converted to i32 as cast{a, "i32"} does on every backend: toward zero, saturating at
// -2^31 and 2^31 - 1, NaN to 0 (PyTorch leaves out-of-range and NaN conversions undefined).
inline int64_t SaturateToI32(double v) {
  if (v != v) return 0;
  if (v >= 2147483647.0) return 2147483647;
  if (v <= -2147483648.0) return -2147483648LL;
  return static_cast<int64_t>(v);  // truncates toward zero
}

// A value converted to u32 as cast{a, "u32"} does: toward zero, saturating at 0 and 2^32 - 1,
// NaN to 0 (the rule of SaturateToI32, for u32's range).
inline int64_t SaturateToU32(double v) {
  if (v != v || v <= 0) return 0;
  if (v >= 4294967295.0) return 4294967295LL;
  return static_cast<int64_t>(v);
}

// An integer result as `t` stores it: its low 32 bits, read as two's complement for i32. Integer
// arithmetic wraps modulo 2^32 on every backend, as WGSL's i32 and u32 and torch's int32 do.
inline int64_t WrapToDType(uint64_t v, DType t) {
  return t == DType::kU32 ? int64_t{static_cast<uint32_t>(v)}
                          : int64_t{static_cast<int32_t>(static_cast<uint32_t>(v))};
}

// `v` rounded to the nearest f16 (even on ties; overflow to infinity, NaN stays NaN), as a T: an
// f16 step of an elementwise kernel computes in T and rounds its result with this, once.
template <typename T>
T RoundToHalf(T v) {
  return static_cast<T>(HalfToFloat(FloatToHalf(static_cast<float>(v))));
}

// Integer forms of elementwise ops, on values (i32 and u32 exactly, bool 0 or 1) in int64; the
// caller wraps the result to the step's dtype. nullptr where the op has none.
using IntegerFn = int64_t (*)(int64_t a, int64_t b, int64_t c);
IntegerFn FindIntegerScalar(const std::string& op);

// The widest vector instructions this machine runs, for the kernels compiled once per instruction
// set (matmul_tile.inc, adam_loops.inc). Only the speed depends on it, never a bit.
enum class VectorIsa { kBase, kAvx2, kAvx512 };
VectorIsa MachineVectorIsa();

// Elements per chunk of elementwise work.
inline constexpr int64_t kChunk = 16384;

template <typename T>
struct OpArgs {
  const webir::Graph* graph;
  const webir::Node* node;
  std::vector<const T*> inputs;  // one per node arg, row-major
  T* output;
  const Parallel* parallel;
  std::vector<bool> transposed;  // per input: read the (rank-2) operand transposed
  // >= 0: compute only outputs [only_chunk * kChunk, (only_chunk + 1) * kChunk) on the calling
  // thread (ops for which WritesByChunk holds).
  int64_t only_chunk = -1;

  const TensorType& in_type(size_t i) const { return graph->at(node->args[i]).type; }
  bool is_transposed(size_t i) const { return i < transposed.size() && transposed[i]; }
};

// out[i] = element(i) for every output element, in chunks of kChunk spread over the pool. Each
// element is computed alone, so the result does not depend on how the chunks are scheduled.
template <typename T, typename Element>
void SetEachOutput(const OpArgs<T>& a, const Element& element) {
  const int64_t total = a.node->type.elements();
  auto chunk = [&](int64_t c) {
    for (int64_t i = c * kChunk; i < std::min(total, (c + 1) * kChunk); ++i)
      a.output[i] = element(i);
  };
  if (a.only_chunk >= 0) return chunk(a.only_chunk);
  a.parallel->For((total + kChunk - 1) / kChunk, chunk);
}

// As SetEachOutput, for kernels that write each chunk [begin, end) in one loop of their own (so
// that the loop vectorises); output i must still depend only on the inputs at i.
template <typename T, typename Range>
void SetEachOutputRange(const OpArgs<T>& a, const Range& range) {
  const int64_t total = a.node->type.elements();
  auto chunk = [&](int64_t c) { range(c * kChunk, std::min(total, (c + 1) * kChunk)); };
  if (a.only_chunk >= 0) return chunk(a.only_chunk);
  a.parallel->For((total + kChunk - 1) / kChunk, chunk);
}

template <typename T>
using OpFn = void (*)(const OpArgs<T>&);

struct OpImpl {
  OpFn<float> f32;
  OpFn<double> f64;
  // Whether the op reads its argument `arg` (null: every argument). An op's output written over
  // an input keeps to scratch only while a later op of its kernel reads that input.
  bool (*reads)(const webir::Node& node, size_t arg) = nullptr;
};

// Scalar definitions of elementwise ops (unary ops ignore `b` and `c`, binary ops `c`). Every
// value is computed in T: a bool is 0 or 1 (comparisons give exactly those, a bool input is read
// as them), and it is stored as 0/1 by the executor that writes the output.
template <typename T>
using ScalarFn = T (*)(T a, T b, T c);

// The same function over n elements: out[j] = f(a[j], b[j], c[j]), with f inlined into the loop
// (a fused kernel calls it once per block of elements rather than f once per element).
template <typename T>
using BlockFn = void (*)(const T* a, const T* b, const T* c, T* out, int64_t n);

struct ScalarImpl {
  int arity;
  ScalarFn<float> f32;
  ScalarFn<double> f64;
  BlockFn<float> block_f32;
  BlockFn<double> block_f64;
};

const ScalarImpl* FindScalar(const std::string& op);
const OpImpl* FindOp(const std::string& op);

// Family tables (one file per family).
void AddElementwiseScalars(std::vector<std::pair<std::string, ScalarImpl>>& t);
void AddReduceOps(std::vector<std::pair<std::string, OpImpl>>& t);
void AddLinalgOps(std::vector<std::pair<std::string, OpImpl>>& t);
void AddLayoutOps(std::vector<std::pair<std::string, OpImpl>>& t);
void AddStencilOps(std::vector<std::pair<std::string, OpImpl>>& t);
void AddNnOps(std::vector<std::pair<std::string, OpImpl>>& t);
void AddOptimOps(std::vector<std::pair<std::string, OpImpl>>& t);
void AddRandomOps(std::vector<std::pair<std::string, OpImpl>>& t);
void AddIndexOps(std::vector<std::pair<std::string, OpImpl>>& t);

// dropout keeps element i where the top 24 bits of its hash are at least this: ceil(p * 2^24),
// which is uniform(seed, step, i) >= p exactly (uniform is those bits over 2^24).
uint32_t DropoutThreshold(double p);
// The `seed` attribute of a counter-hash op (uniform, dropout): 0 when absent.
uint32_t RandomSeed(const webir::Node& n);

// Runs one kernel of `m`: `inputs` follow Kernel::inputs, `out` is the kernel's output and
// `extra_outs` its extra outputs (Kernel::extra_outputs), in order; with only_chunk >= 0, only
// that chunk of its outputs (see OpArgs::only_chunk).
template <typename T>
Status RunKernel(const Module& m, const Kernel& k, const std::vector<const T*>& inputs, T* out,
                 const Parallel& parallel, int64_t only_chunk = -1,
                 const std::vector<T*>& extra_outs = {});

// A user op's kernel (ops/user_op.h): its reference graph of built-in ops, planned for the
// kernel's input types and run kernel by kernel (kernel/ref/user.cpp). RunKernel calls it.
template <typename T>
Status RunUserReference(const Module& m, const Kernel& k, const std::vector<const T*>& inputs,
                        T* out, const Parallel& parallel);

// Whether the kernel computes output i from inputs at i and whole-tensor scalars only, chunk by
// chunk of kChunk (SetEachOutput): then consecutive such kernels over outputs of one size may run
// chunk by chunk together, each chunk through all of them while it is in cache, with the same
// bits as one kernel after the other (the optimizer updates of one parameter, say).
bool WritesByChunk(const Module& m, const Kernel& k);

// Multi-index helpers shared by families.
std::vector<int64_t> Unravel(int64_t index, const std::vector<int64_t>& sizes);

}  // namespace scellis::kernel::ref

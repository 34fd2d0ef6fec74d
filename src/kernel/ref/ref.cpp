#include "kernel/ref/ref.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "base/random.h"

namespace scellis::kernel::ref {

int ThreadsFor(int requested) {
  if (requested > 0) return requested;
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

// Threads - 1 workers that wait for a job; the caller of Run works too. Each job hands out chunk
// indices from one counter, so any thread may run any chunk: the kernels' results do not depend
// on which thread runs a chunk. A training step runs its kernels back to back, so a worker (and
// the caller waiting for the workers) spins a little before sleeping: waking a sleeping thread
// costs more than a small kernel. Not when there are more threads than the machine has, where
// spinning would take the cores from the threads with work.
class Parallel::Pool {
 public:
  explicit Pool(int threads)
      : spin_(threads <= static_cast<int>(std::max(1u, std::thread::hardware_concurrency()))) {
    for (int i = 1; i < threads; ++i) workers_.emplace_back([this] { Work(); });
  }
  ~Pool() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    wake_.notify_all();
    for (auto& t : workers_) t.join();
  }

  // Runs the job on the pool; false (nothing run) when the pool is busy with another job or the
  // caller is itself running a chunk of one.
  bool Run(int64_t chunks, const std::function<void(int64_t)>& fn) {
    if (in_chunk_) return false;
    std::unique_lock<std::mutex> run(run_mu_, std::try_to_lock);
    if (!run.owns_lock()) return false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      fn_ = &fn;
      chunks_ = chunks;
      next_ = 0;
      busy_ = static_cast<int>(workers_.size());
      ++generation_;
    }
    wake_.notify_all();
    RunChunks(fn, chunks);
    SpinWhile([this] { return busy_.load() != 0; });
    std::unique_lock<std::mutex> lock(mu_);
    done_.wait(lock, [this] { return busy_ == 0; });
    fn_ = nullptr;
    return true;
  }

 private:
  template <typename Condition>
  void SpinWhile(const Condition& condition) const {
    if (!spin_) return;
    for (int i = 0; i < kSpins && condition(); ++i) {
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#else
      std::this_thread::yield();
#endif
    }
  }

  void RunChunks(const std::function<void(int64_t)>& fn, int64_t chunks) {
    in_chunk_ = true;
    for (int64_t c = next_++; c < chunks; c = next_++) fn(c);
    in_chunk_ = false;
  }

  void Work() {
    uint64_t seen = 0;
    for (;;) {
      const std::function<void(int64_t)>* fn;
      int64_t chunks;
      SpinWhile([&] { return generation_.load() == seen && !stop_.load(); });
      {
        std::unique_lock<std::mutex> lock(mu_);
        wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
        if (stop_) return;
        seen = generation_;
        fn = fn_;
        chunks = chunks_;
      }
      RunChunks(*fn, chunks);
      std::lock_guard<std::mutex> lock(mu_);
      if (--busy_ == 0) done_.notify_one();
    }
  }

  // About 100 microseconds of pause instructions.
  static constexpr int kSpins = 4000;
  static thread_local bool in_chunk_;
  const bool spin_;
  std::mutex run_mu_;  // held by the caller of a job for the whole job
  std::mutex mu_;      // guards the job's fields; the atomics are also read while spinning
  std::condition_variable wake_, done_;
  const std::function<void(int64_t)>* fn_ = nullptr;
  int64_t chunks_ = 0;
  std::atomic<int64_t> next_{0};
  std::atomic<int> busy_{0};
  std::atomic<uint64_t> generation_{0};
  std::atomic<bool> stop_{false};
  std::vector<std::thread> workers_;
};

thread_local bool Parallel::Pool::in_chunk_ = false;

VectorIsa MachineVectorIsa() {
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
  static const VectorIsa isa = __builtin_cpu_supports("avx512f") ? VectorIsa::kAvx512
                               : __builtin_cpu_supports("avx2")  ? VectorIsa::kAvx2
                                                                 : VectorIsa::kBase;
  return isa;
#else
  return VectorIsa::kBase;
#endif
}

Parallel::Parallel(int threads) : threads_(threads < 1 ? 1 : threads) {
  if (threads_ > 1) pool_ = std::make_shared<Pool>(threads_);
}

void Parallel::For(int64_t chunks, const std::function<void(int64_t)>& fn) const {
  if (chunks <= 1 || !pool_ || !pool_->Run(chunks, fn))
    for (int64_t c = 0; c < chunks; ++c) fn(c);
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

// n values left unset (new T[n] does not zero them): for buffers written whole before any read.
template <typename T>
std::unique_ptr<T[]> Unset(size_t n) {
  return std::unique_ptr<T[]>(new T[n]);
}

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
BlockFn<T> PickBlock(const ScalarImpl& s);
template <>
BlockFn<float> PickBlock<float>(const ScalarImpl& s) {
  return s.block_f32;
}
template <>
BlockFn<double> PickBlock<double>(const ScalarImpl& s) {
  return s.block_f64;
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

// An integer step over n elements: each operand read as its value (IntegerOf for i32 and u32,
// 0 or 1 for a bool; an f32 or f16 only reaches a cast, which converts it as SaturateToI32 or
// SaturateToU32 do), the op applied in int64, the result stored in the step's dtype: wrapped
// modulo 2^32 for i32 and u32, != 0 for bool, rounded to nearest (even) for f32 (a cast from an
// integer; the caller rounds an f16 result on to f16).
template <typename T>
void IntegerStep(IntegerFn fn, const std::vector<DType>& dtypes, DType out_dtype, const T* a,
                 const T* b, const T* c, T* result, int64_t n) {
  const T* operands[3] = {a, b, c};
  auto value = [&](size_t o, int64_t j) -> int64_t {
    if (o >= dtypes.size()) return 0;
    const T slot = operands[o][j];
    switch (dtypes[o]) {
      case DType::kI32:
      case DType::kU32:
        return IntegerOf(slot, dtypes[o]);
      case DType::kBool:
        return slot != T(0);
      default:  // f32, converted by a cast
        return out_dtype == DType::kU32 ? SaturateToU32(slot) : SaturateToI32(slot);
    }
  };
  for (int64_t j = 0; j < n; ++j) {
    const int64_t r = fn(value(0, j), value(1, j), value(2, j));
    switch (out_dtype) {
      case DType::kI32:
      case DType::kU32:
        result[j] = IntegerSlot<T>(WrapToDType(static_cast<uint64_t>(r), out_dtype), out_dtype);
        break;
      case DType::kBool:
        result[j] = r != 0 ? T(1) : T(0);
        break;
      default:
        result[j] = static_cast<T>(r);
    }
  }
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

// A butterfly step's read: input `sizes` (broadcast into the output, trailing axes aligned) at
// the output element `idx` with its coordinate along the input's `axis` XOR `mask` (which the
// shape rule has proved stays inside the axis).
struct PartnerRead {
  std::vector<int64_t> sizes;
  size_t axis = 0;
  int64_t mask = 0;

  int64_t Offset(const std::vector<int64_t>& idx) const {
    const size_t lead = idx.size() - sizes.size();
    int64_t off = 0;
    for (size_t j = 0; j < sizes.size(); ++j) {
      int64_t c = sizes[j] == 1 ? 0 : idx[lead + j];
      if (j == axis) c ^= mask;
      off = off * sizes[j] + c;
    }
    return off;
  }
};

// An arange step's value at the output element `idx`: its index along `axis` of the ramp's
// `sizes` (broadcast into the output, trailing axes aligned), in the step's dtype: an integer's
// slot, or the index rounded to f32.
struct IndexRamp {
  std::vector<int64_t> sizes;
  size_t axis = 0;
  DType dtype = DType::kI32;

  template <typename T>
  T At(const std::vector<int64_t>& idx) const {
    const int64_t i = sizes[axis] == 1 ? 0 : idx[idx.size() - sizes.size() + axis];
    return IsIntegerDType(dtype) ? IntegerSlot<T>(i, dtype) : static_cast<T>(static_cast<float>(i));
  }
};

// A fused elementwise kernel: per output element, gather each input through its broadcast
// strides (or, for a shift or butterfly step, at its permuted index; an arange step is the
// element's index, an inlined uniform the hash of its linear index), then evaluate the steps in
// order.
// Elements go in blocks: each step runs over the whole block before the next, which changes no
// element's operations, only their interleaving.
template <typename T>
Status RunFused(const Module& m, const Kernel& k, const std::vector<const T*>& inputs, T* out,
                const Parallel& parallel) {
  const TensorType& out_type = m.graph().at(k.output).type;
  std::vector<int64_t> sizes = out_type.sizes();
  const size_t rank = sizes.size();
  int64_t total = out_type.elements();
  std::vector<std::vector<int64_t>> strides;
  std::vector<DType> in_dtypes;
  for (int in : k.inputs) {
    strides.push_back(BroadcastStrides(m.graph().at(in).type.sizes(), sizes));
    in_dtypes.push_back(m.graph().at(in).type.dtype);
  }
  // An input laid out as the output is read in place at the element's index. Integer inputs keep
  // their slots (IntegerSlot) in the kernel: only integer steps read them, as integers.
  std::vector<int64_t> row_major(rank, 1);
  for (size_t d = rank; d-- > 1;) row_major[d - 1] = row_major[d] * sizes[d];
  std::vector<char> in_place(inputs.size(), 1);
  for (size_t o = 0; o < inputs.size(); ++o) {
    for (size_t d = 0; d < rank; ++d)
      if (sizes[d] > 1 && strides[o][d] != row_major[d]) in_place[o] = 0;
  }
  struct Step {
    // null: a constant, a positional step (shift, butterfly, arange: filled while gathering) or
    // an integer step
    BlockFn<T> fn = nullptr;
    IntegerFn integer = nullptr;  // an integer step: it or an operand is i32 or u32
    T value = T(0);
    DType dtype = DType::kF32;  // the dtype of the step's node
    std::vector<DType> operand_dtypes;
    std::vector<int> operands;
    std::optional<ShiftedRead> shift;
    std::optional<PartnerRead> partner;
    std::optional<IndexRamp> ramp;
    // An inlined uniform: its seed and step number (the step operand is one element).
    std::optional<std::pair<uint32_t, uint32_t>> uniform;
    bool positional() const { return shift || partner || ramp || uniform; }
  };
  std::vector<Step> steps;
  bool any_positional = false;
  for (const ExprStep& e : k.expr) {
    Step s;
    s.operands = e.operands;
    s.dtype = m.graph().at(e.node).type.dtype;
    bool integer = IsIntegerDType(s.dtype);
    for (int o : e.operands) {
      s.operand_dtypes.push_back(IsStepRef(o) ? steps[StepOf(o)].dtype : in_dtypes[o]);
      integer |= IsIntegerDType(s.operand_dtypes.back());
    }
    const webir::Node& n = m.graph().at(e.node);
    if (e.op == "full") {
      s.value = IsIntegerDType(s.dtype)  ? IntegerSlot<T>(static_cast<int64_t>(e.value), s.dtype)
                : s.dtype == DType::kF16 ? RoundToHalf(static_cast<T>(e.value))
                                         : static_cast<T>(static_cast<float>(e.value));
    } else if (e.op == "shift") {
      s.shift = ShiftedRead{m.graph().at(k.inputs[e.operands[0]]).type.sizes(),
                            n.attrs.at("shifts").get<std::vector<int64_t>>(),
                            n.attrs.at("boundary").get<std::string>()};
    } else if (e.op == "butterfly") {
      s.partner = PartnerRead{m.graph().at(k.inputs[e.operands[0]]).type.sizes(),
                              n.attrs.at("axis").get<size_t>(), n.attrs.at("mask").get<int64_t>()};
    } else if (e.op == "arange") {
      s.ramp = IndexRamp{n.type.sizes(), n.attrs.at("axis").get<size_t>(), s.dtype};
    } else if (e.op == "uniform") {
      s.uniform = {RandomSeed(n), StepNumber(static_cast<double>(inputs[e.operands.at(0)][0]))};
    } else if (integer) {
      s.integer = FindIntegerScalar(e.op);
      if (!s.integer) return InternalError("ref.RunFused", "no integer reference for " + e.op);
    } else {
      const ScalarImpl* impl = FindScalar(e.op);
      if (!impl) return InternalError("ref.RunFused", "no scalar reference for " + e.op);
      s.fn = PickBlock<T>(*impl);
    }
    any_positional |= s.positional();
    steps.push_back(std::move(s));
  }
  const bool gathers =
      any_positional || std::find(in_place.begin(), in_place.end(), 0) != in_place.end();
  // Without positional steps a block ends where the innermost dimension does, and along it each
  // input gathered is read whole: its elements in a row (stride 1) are read in place, others
  // (a broadcast: stride 0) a stride apart. Positional steps need each element's multi-index and
  // go element by element.
  const bool by_rows = gathers && !any_positional && rank > 0;
  constexpr int64_t kBlock = 256;
  int64_t chunks = (total + kChunk - 1) / kChunk;
  parallel.For(chunks, [&](int64_t c) {
    std::vector<T> values(steps.size() * kBlock), gathered(inputs.size() * kBlock);
    const std::vector<T> zeros(kBlock, T(0));
    const int64_t begin = c * kChunk, end = std::min(total, (c + 1) * kChunk);
    // The multi-index of the next element to gather and each input's offset at it, carried from
    // one element to the next like an odometer.
    std::vector<int64_t> idx, offset(inputs.size(), 0);
    if (gathers) {
      idx = Unravel(begin, sizes);
      for (size_t o = 0; o < inputs.size(); ++o)
        for (size_t d = 0; d < rank; ++d) offset[o] += idx[d] * strides[o][d];
    }
    // One step of the odometer along dimension d - 1, carried into the outer ones at their ends.
    auto carry = [&](size_t d) {
      while (d-- > 0) {
        for (size_t o = 0; o < inputs.size(); ++o) offset[o] += strides[o][d];
        if (++idx[d] < sizes[d]) break;
        for (size_t o = 0; o < inputs.size(); ++o) offset[o] -= strides[o][d] * sizes[d];
        idx[d] = 0;
      }
    };
    // Where each input's values of the block are: in place, or in `gathered`.
    std::vector<const T*> read(inputs.size());
    for (int64_t first = begin, n = 0; first < end; first += n) {
      n = std::min(kBlock, end - first);
      for (size_t o = 0; o < inputs.size(); ++o)
        read[o] = in_place[o] ? inputs[o] + first : gathered.data() + o * kBlock;
      if (by_rows) {
        const size_t last = rank - 1;
        n = std::min(n, sizes[last] - idx[last]);
        for (size_t o = 0; o < inputs.size(); ++o) {
          if (in_place[o]) continue;
          const int64_t stride = strides[o][last];
          const T* from = inputs[o] + offset[o];
          T* to = gathered.data() + o * kBlock;
          if (stride == 1)
            read[o] = from;
          else
            for (int64_t j = 0; j < n; ++j) to[j] = from[j * stride];
          offset[o] += n * stride;
        }
        idx[last] += n;
        if (idx[last] == sizes[last]) {
          for (size_t o = 0; o < inputs.size(); ++o) offset[o] -= strides[o][last] * sizes[last];
          idx[last] = 0;
          carry(last);
        }
      } else if (gathers) {
        for (int64_t j = 0; j < n; ++j) {
          for (size_t o = 0; o < inputs.size(); ++o) {
            if (in_place[o]) continue;
            gathered[o * kBlock + j] = inputs[o][offset[o]];
          }
          for (size_t si = 0; si < steps.size(); ++si) {
            const Step& s = steps[si];
            T& value = values[si * kBlock + j];
            if (s.shift) {
              const int64_t off = s.shift->Offset(idx);
              value = off < 0 ? T(0) : inputs[s.operands[0]][off];
            } else if (s.partner) {
              value = inputs[s.operands[0]][s.partner->Offset(idx)];
            } else if (s.ramp) {
              value = s.ramp->template At<T>(idx);
            } else if (s.uniform) {
              // The element's index modulo 2^32, as the uniform kernel's u32 counter.
              value = static_cast<T>(StreamUniform(s.uniform->first, s.uniform->second,
                                                   static_cast<uint32_t>(first + j)));
            }
          }
          carry(rank);
        }
      }
      auto operand = [&](const Step& s, size_t i) -> const T* {
        if (i >= s.operands.size()) return zeros.data();
        const int o = s.operands[i];
        if (IsStepRef(o)) return values.data() + StepOf(o) * kBlock;
        return read[o];
      };
      for (size_t si = 0; si < steps.size(); ++si) {
        const Step& s = steps[si];
        T* result = values.data() + si * kBlock;
        if (s.positional()) continue;
        const T *a = operand(s, 0), *b = operand(s, 1), *cc = operand(s, 2);
        if (!s.fn && !s.integer) {
          std::fill(result, result + n, s.value);
          continue;
        }
        if (s.integer)
          IntegerStep(s.integer, s.operand_dtypes, s.dtype, a, b, cc, result, n);
        else
          s.fn(a, b, cc, result, n);
        // An f16 step computes in T and rounds its result once (a cast to f16 included).
        if (s.dtype == DType::kF16)
          for (int64_t j = 0; j < n; ++j) result[j] = RoundToHalf(result[j]);
        if (s.integer) continue;
        // A cast to bool makes its value 0 or 1 in the register already, so that later steps of
        // the expression see it; a cast to f32 keeps the value (f32 is the register).
        if (s.dtype == DType::kBool && k.expr[si].op == "cast")
          for (int64_t j = 0; j < n; ++j) result[j] = BoolOf(result[j]);
      }
      // Integer results are slots already (IntegerSlot), bools 0 or 1: the store copies.
      const T* last = values.data() + (steps.size() - 1) * kBlock;
      std::copy(last, last + n, out + first);
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

bool WritesByChunk(const Module& m, const Kernel& k) {
  // The optimizer updates: each is a SetEachOutput over its parameter (optim.cpp). One written in
  // place keeps values in scratch until its last op ran (RunKernel): whole tensors only.
  return k.kind == KernelKind::kOp && k.in_place.empty() && IsOptimizerOp(m, k.op);
}

namespace {

// A kernel of stages: each stage as its own kernel, in order, over the whole tensor; the values
// no later kernel reads are kept here rather than in the plan's buffers.
template <typename T>
Status RunStages(const Module& m, const Kernel& k, const std::vector<const T*>& inputs, T* out,
                 const Parallel& parallel, const std::vector<T*>& extra_outs) {
  std::map<int, const T*> at;
  for (size_t i = 0; i < k.inputs.size(); ++i) at[k.inputs[i]] = inputs[i];
  std::vector<std::vector<T>> kept;
  for (const Kernel& st : k.stages) {
    std::vector<const T*> stage_inputs;
    for (int in : st.inputs) {
      auto it = at.find(in);
      if (it == at.end())
        return InternalError("ref.RunKernel", k.name + " lacks an input of a stage");
      stage_inputs.push_back(it->second);
    }
    T* result = nullptr;
    if (st.output == k.output) result = out;
    for (size_t j = 0; j < k.extra_outputs.size() && !result; ++j)
      if (k.extra_outputs[j] == st.output) result = extra_outs.at(j);
    if (!result)
      result =
          kept.emplace_back(static_cast<size_t>(m.graph().at(st.output).type.elements())).data();
    SCELLIS_TRY(RunFused(m, st, stage_inputs, result, parallel));
    at[st.output] = result;
  }
  return Status::Ok();
}

// A kernel of row stages: each stage as the kernel it was, in order, into the kernel's own
// outputs (every stage's output is one), reading what earlier stages wrote there.
template <typename T>
Status RunRowStages(const Module& m, const Kernel& k, const std::vector<const T*>& inputs, T* out,
                    const Parallel& parallel, const std::vector<T*>& extra_outs) {
  const std::vector<int> outs = k.Outputs();
  if (extra_outs.size() + 1 != outs.size())
    return InternalError("ref.RunKernel", k.name + " is given the wrong number of outputs");
  std::map<int, T*> written;
  for (size_t j = 0; j < outs.size(); ++j) written[outs[j]] = j ? extra_outs[j - 1] : out;
  std::map<int, const T*> at;
  for (size_t i = 0; i < k.inputs.size(); ++i) at[k.inputs[i]] = inputs[i];
  for (const Kernel& st : k.stages) {
    std::vector<const T*> stage_inputs;
    for (int in : st.inputs) {
      auto it = at.find(in);
      if (it == at.end())
        return InternalError("ref.RunKernel", k.name + " lacks an input of a stage");
      stage_inputs.push_back(it->second);
    }
    const std::vector<int> stage_outs = st.Outputs();
    std::vector<T*> stage_extra;
    for (size_t j = 1; j < stage_outs.size(); ++j) stage_extra.push_back(written.at(stage_outs[j]));
    SCELLIS_TRY(
        RunKernel(m, st, stage_inputs, written.at(stage_outs[0]), parallel, -1, stage_extra));
    for (int o : stage_outs) at[o] = written.at(o);
  }
  return Status::Ok();
}

// A matmul that updates parameters (Kernel::update_product): the matmul as it runs alone, and the
// column sums of its B, each stored as f32 as the unfused plan stores them; then the update as the
// optimizer kernel it was (UpdateKernel), reading them where it read their buffers.
template <typename T>
Status RunUpdate(const Module& m, const Kernel& k, const std::vector<const T*>& inputs, T* out,
                 const Parallel& parallel, const std::vector<T*>& extra_outs) {
  const webir::Node& product = m.graph().at(k.update_product);
  // Every element is written by the product: no zeros first.
  const auto sums = Unset<T>(static_cast<size_t>(product.type.elements()));
  OpArgs<T> args{&m.graph(),   &product, {inputs[0], inputs[1]}, sums.get(), &parallel,
                 k.transposed, -1};
  PickOp<T> (*FindOp("matmul"))(args);
  std::vector<T> column_sums;
  if (k.update_column_sums >= 0) {
    const webir::Node& node = m.graph().at(k.update_column_sums);
    const OpImpl* sum = FindOp(node.op);
    if (!sum) return InternalError("ref.RunKernel", "no CPU reference for op " + node.op);
    column_sums.resize(static_cast<size_t>(node.type.elements()));
    OpArgs<T> sum_args{&m.graph(), &node, {inputs[1]}, column_sums.data(), &parallel, {}, -1};
    PickOp<T> (*sum)(sum_args);
  }
  const Kernel update = UpdateKernel(m, k);
  std::vector<const T*> update_inputs;
  for (int node : update.inputs) {
    if (node == k.update_product) {
      update_inputs.push_back(sums.get());
    } else if (node == k.update_column_sums) {
      update_inputs.push_back(column_sums.data());
    } else {
      const size_t i =
          static_cast<size_t>(std::find(k.inputs.begin(), k.inputs.end(), node) - k.inputs.begin());
      update_inputs.push_back(inputs.at(i));
    }
  }
  return RunKernel(m, update, update_inputs, out, parallel, -1, extra_outs);
}

// A kernel with folded row gathers (Kernel::row_gathers): each gathered value made by
// index_select's own reference from the table and index bound in its place, then the kernel as it
// reads (UnfoldRowGathers) over them. A gather moves elements unchanged, so this is the kernel's
// answer before the fold.
template <typename T>
Status RunRowGathered(const Module& m, const Kernel& k, const std::vector<const T*>& inputs, T* out,
                      const Parallel& parallel, int64_t only_chunk,
                      const std::vector<T*>& extra_outs) {
  const Kernel unfolded = UnfoldRowGathers(k);
  const OpImpl* select = FindOp("index_select");
  if (!select || inputs.size() != k.inputs.size())
    return InternalError("ref.RunKernel", k.name + " cannot read its row gathers");
  std::vector<const T*> reads(inputs.begin(), inputs.begin() + unfolded.inputs.size());
  std::vector<std::vector<T>> gathered(k.row_gathers.size());
  for (size_t j = 0; j < k.row_gathers.size(); ++j) {
    const Kernel::RowGather& g = k.row_gathers[j];
    const webir::Node& node = m.graph().at(g.node);
    gathered[j].resize(static_cast<size_t>(node.type.elements()));
    OpArgs<T> args{
        &m.graph(), &node, {inputs[g.input], inputs[g.index]}, gathered[j].data(), &parallel,
        {},         -1};
    PickOp<T> (*select)(args);
    reads[g.input] = gathered[j].data();
  }
  return RunKernel(m, unfolded, reads, out, parallel, only_chunk, extra_outs);
}

}  // namespace

template <typename T>
Status RunKernel(const Module& m, const Kernel& k, const std::vector<const T*>& inputs, T* out,
                 const Parallel& parallel, int64_t only_chunk, const std::vector<T*>& extra_outs) {
  if (!k.row_gathers.empty())
    return RunRowGathered(m, k, inputs, out, parallel, only_chunk, extra_outs);
  if (k.kind == KernelKind::kElementwise) return RunFused(m, k, inputs, out, parallel);
  if (k.kind == KernelKind::kTiledStages) {
    if (only_chunk >= 0) return InternalError("ref.RunKernel", k.name + " does not run by chunk");
    return RunStages(m, k, inputs, out, parallel, extra_outs);
  }
  if (k.kind == KernelKind::kRowStages) {
    if (only_chunk >= 0) return InternalError("ref.RunKernel", k.name + " does not run by chunk");
    return RunRowStages(m, k, inputs, out, parallel, extra_outs);
  }
  if (const ops::OpSpec* spec = m.graph().ops->Find(k.op); spec && spec->user) {
    if (only_chunk >= 0) return InternalError("ref.RunKernel", k.op + " does not run by chunk");
    return RunUserReference(m, k, inputs, out, parallel);
  }
  if (k.UpdatesParameters()) {
    if (only_chunk >= 0) return InternalError("ref.RunKernel", k.name + " does not run by chunk");
    return RunUpdate(m, k, inputs, out, parallel, extra_outs);
  }
  const OpImpl* impl = FindOp(k.op);
  if (!impl) return InternalError("ref.RunKernel", "no CPU reference for op " + k.op);
  if (only_chunk >= 0 && !WritesByChunk(m, k))
    return InternalError("ref.RunKernel", k.op + " does not run by chunk");
  if (k.HasEpilogue()) {
    // The matmul as it runs alone, then its epilogue as the elementwise kernel it was: the sums
    // are stored as f32 before the epilogue reads them, as the unfused plan stores them.
    const webir::Node& node = m.graph().at(k.OpNode());
    const auto sums = Unset<T>(static_cast<size_t>(node.type.elements()));
    OpArgs<T> args{&m.graph(),   &node, {inputs[0], inputs[1]}, sums.get(), &parallel,
                   k.transposed, -1};
    PickOp<T> (*impl)(args);
    std::vector<const T*> epilogue_inputs = {sums.get()};
    epilogue_inputs.insert(epilogue_inputs.end(), inputs.begin() + 2, inputs.end());
    return RunFused(m, EpilogueKernel(k), epilogue_inputs, out, parallel);
  }
  // Literal arguments (Kernel::literals) follow the bound inputs, each its constant's f32 value.
  std::vector<T> literal_values;
  for (const Kernel::Literal& l : k.literals)
    literal_values.push_back(static_cast<T>(static_cast<float>(l.value)));
  std::vector<const T*> op_inputs = inputs;
  for (const T& v : literal_values) op_inputs.push_back(&v);
  if (extra_outs.size() != k.extra_outputs.size())
    return InternalError("ref.RunKernel",
                         k.name + " writes " + std::to_string(k.extra_outputs.size() + 1) +
                             " outputs, given " + std::to_string(extra_outs.size() + 1));
  // An output written over an input (Kernel::in_place) that a later op of the kernel takes as an
  // argument goes to scratch first, and over the input once every op ran: each op reads the
  // values it read when every output had a buffer of its own (on the GPU each invocation reads
  // all of its element before writing any of it).
  std::vector<T*> outs = {out};
  outs.insert(outs.end(), extra_outs.begin(), extra_outs.end());
  const std::vector<T*> buffers = outs;
  const std::vector<int> out_nodes = k.Outputs();
  std::vector<std::unique_ptr<T[]>> scratch(outs.size());
  std::vector<int64_t> scratch_size(outs.size(), 0);
  for (size_t j = 0; j < outs.size(); ++j) {
    const int over = k.InPlaceOf(j);
    if (over < 0) continue;
    bool read_later = false;
    for (size_t l = j + 1; l < outs.size(); ++l) {
      const webir::Node& later = m.graph().at(out_nodes[l]);
      for (size_t a = 0; a < later.args.size() && !read_later; ++a) {
        if (later.args[a] != k.inputs[over]) continue;
        const OpImpl* later_impl = FindOp(later.op);
        read_later = !later_impl || !later_impl->reads || later_impl->reads(later, a);
      }
    }
    if (!read_later) continue;
    scratch_size[j] = m.graph().at(out_nodes[j]).type.elements();
    scratch[j] = Unset<T>(static_cast<size_t>(scratch_size[j]));
    outs[j] = scratch[j].get();
  }
  out = outs[0];
  std::vector<T*> extras(outs.begin() + 1, outs.end());
  struct OpRun {
    const OpImpl* impl;
    OpArgs<T> args;
  };
  std::vector<OpRun> runs = {
      {impl,
       {&m.graph(), &m.graph().at(k.output), op_inputs, out, &parallel, k.transposed, only_chunk}}};
  // Extra outputs are ops of their own over the kernel's inputs and the outputs it wrote before
  // them, none of which they overwrite: each runs, in order, as its own kernel would.
  for (size_t j = 0; j < k.extra_outputs.size(); ++j) {
    const webir::Node& node = m.graph().at(k.extra_outputs[j]);
    const OpImpl* extra = FindOp(node.op);
    if (!extra) return InternalError("ref.RunKernel", "no CPU reference for op " + node.op);
    std::vector<const T*> args;
    for (int a : node.args) {
      const T* at = nullptr;
      for (size_t i = 0; i < k.inputs.size() && !at; ++i)
        if (k.inputs[i] == a) at = inputs[i];
      for (size_t i = 0; i < k.literals.size() && !at; ++i)
        if (k.literals[i].node == a) at = &literal_values[i];
      if (a == k.output) at = out;
      for (size_t e = 0; e < j && !at; ++e)
        if (k.extra_outputs[e] == a) at = extras[e];
      if (!at) return InternalError("ref.RunKernel", k.name + " lacks an argument of " + node.op);
      args.push_back(at);
    }
    // Folded transposes are the primary's: they hold only where the arguments are its inputs.
    const std::vector<bool> transposed = node.args == k.inputs ? k.transposed : std::vector<bool>{};
    runs.push_back(
        {extra,
         {&m.graph(), &node, std::move(args), extras[j], &parallel, transposed, only_chunk}});
  }
  auto copy_scratch = [&](int64_t begin, int64_t end) {
    for (size_t j = 0; j < outs.size(); ++j)
      if (begin < scratch_size[j])
        std::copy(scratch[j].get() + begin, scratch[j].get() + std::min(end, scratch_size[j]),
                  buffers[j] + begin);
  };
  // Optimizer updates compute each element from their inputs at that element alone (and the
  // one-element step): they go chunk by chunk through all the ops, each chunk's parameter,
  // gradient and moments kept in cache from the first op to the last. Element i sees the values
  // it sees when each op runs whole, in the same order.
  bool chunkwise = only_chunk < 0;
  int64_t chunks = 0;
  for (const OpRun& r : runs) {
    chunkwise &= IsOptimizerOp(m, r.args.node->op);
    chunks = std::max(chunks, (r.args.node->type.elements() + kChunk - 1) / kChunk);
  }
  if (chunkwise) {
    parallel.For(chunks, [&](int64_t c) {
      for (const OpRun& r : runs) {
        if (c * kChunk >= r.args.node->type.elements()) continue;
        OpArgs<T> args = r.args;
        args.only_chunk = c;
        PickOp<T> (*r.impl)(args);
      }
      copy_scratch(c * kChunk, (c + 1) * kChunk);
    });
    return Status::Ok();
  }
  for (const OpRun& r : runs) PickOp<T> (*r.impl)(r.args);
  copy_scratch(0, std::numeric_limits<int64_t>::max());
  return Status::Ok();
}

template Status RunKernel<float>(const Module&, const Kernel&, const std::vector<const float*>&,
                                 float*, const Parallel&, int64_t, const std::vector<float*>&);
template Status RunKernel<double>(const Module&, const Kernel&, const std::vector<const double*>&,
                                  double*, const Parallel&, int64_t, const std::vector<double*>&);

}  // namespace scellis::kernel::ref

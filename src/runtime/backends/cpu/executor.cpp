#include "runtime/backends/cpu/executor.h"

#include <chrono>
#include <cmath>
#include <cstring>
#include <mutex>

namespace scellis::runtime::cpu {
namespace {

// Integers go in as kernel::ref::IntegerSlot keeps them (their bits in an f32 slot), blocks as
// their bytes (matmul_q decodes them from the buffer's first bytes), every other dtype as its
// value.
template <typename T>
void LoadValues(const HostTensor& t, T* dst) {
  if (IsBlockDType(t.type.dtype)) {
    if (!t.bytes.empty()) std::memcpy(dst, t.bytes.data(), t.bytes.size());
    return;
  }
  if (t.type.dtype == DType::kF32) {
    std::span<const float> v = t.view<float>();
    std::copy(v.begin(), v.end(), dst);
    return;
  }
  if (kernel::ref::IsIntegerDType(t.type.dtype)) {
    for (int64_t i = 0; i < t.elements(); ++i)
      dst[i] = kernel::ref::IntegerSlot<T>(static_cast<int64_t>(t.ValueAt(i)), t.type.dtype);
    return;
  }
  for (int64_t i = 0; i < t.elements(); ++i) dst[i] = static_cast<T>(t.ValueAt(i));
}

// The first type.elements() values of `src` as a host tensor of `type`.
HostTensor ToHost(const TensorType& type, const float* src) {
  HostTensor t = HostTensor::Zeros(type);
  if (type.dtype == DType::kF32 || kernel::ref::IsIntegerDType(type.dtype) ||
      IsBlockDType(type.dtype)) {
    // f32 values, the bits of integers (kernel::ref::IntegerSlot) or blocks: the slots are the
    // bytes.
    if (!t.bytes.empty()) std::memcpy(t.bytes.data(), src, t.bytes.size());
  } else {
    for (int64_t i = 0; i < type.elements(); ++i) t.SetValue(i, src[i]);
  }
  return t;
}

// The plan's buffers in element type T, with sources loaded.
template <typename T>
struct Resident {
  const execplan::Plan* plan;
  std::vector<std::vector<T>> buffers;

  std::vector<T>& of(int node) { return buffers[plan->buffer_of[node]]; }

  // A node's values between steps: a carry's source whose storage went to its target (see Carry)
  // gets a copy back first.
  const std::vector<T>& Read(int node) {
    const int b = plan->buffer_of[node];
    if (!lent_to.empty() && lent_to[b] >= 0) {
      buffers[b] = buffers[lent_to[b]];
      lent_to[b] = -1;
    }
    return buffers[b];
  }

  Status Load(const webir::Node& n, const Feeds& feeds, const ExactFeeds<T>* exact = nullptr) {
    // Exact feeds (f64 values for gradient checks) bypass the f32 host data.
    if (exact) {
      if (auto it = exact->find(FeedName(n)); it != exact->end()) {
        if (static_cast<int64_t>(it->second.size()) != n.type.elements())
          return UserError("bad-feed", n.origin,
                           "the feed \"" + FeedName(n) + "\" has " +
                               std::to_string(it->second.size()) + " values, the input holds " +
                               std::to_string(n.type.elements()));
        std::copy(it->second.begin(), it->second.end(), of(n.id).begin());
        return Status::Ok();
      }
    }
    // A feed is read where it is (SourceData would copy it first).
    if (auto it = feeds.find(FeedName(n)); it != feeds.end()) {
      LoadValues(it->second, of(n.id).data());
      return Status::Ok();
    }
    SCELLIS_ASSIGN_OR_RETURN(HostTensor data, SourceData(n, feeds));
    LoadValues(data, of(n.id).data());
    return Status::Ok();
  }

  void Store(int node, const HostTensor& value) {
    LoadValues(value, of(node).data());
    if (!lent_to.empty()) lent_to[plan->buffer_of[node]] = -1;
  }

  static Result<Resident> Make(const execplan::Plan& plan, const Feeds& feeds, bool defer_fed,
                               const ExactFeeds<T>* exact = nullptr) {
    Resident r{&plan, std::vector<std::vector<T>>(plan.buffers.size()), {}, {}, {}, {}};
    // Buffers hold values, one per element whatever the storage width; blocks (q4_k, q6_k) hold
    // their bytes, in as few slots as they fill (never one per value they decode to).
    std::vector<int64_t> elements(plan.buffers.size(), 0);
    for (const webir::Node& n : plan.graph().nodes) {
      int b = plan.buffer_of[n.id];
      const int64_t slots = IsBlockDType(n.type.dtype)
                                ? (n.type.bytes() + static_cast<int64_t>(sizeof(T)) - 1) /
                                      static_cast<int64_t>(sizeof(T))
                                : n.type.elements();
      if (b >= 0) elements[b] = std::max(elements[b], slots);
    }
    for (const execplan::Buffer& b : plan.buffers)
      r.buffers[b.id].resize(static_cast<size_t>(std::max(elements[b.id], b.bytes / 4)));
    std::vector<int> fed = FedInputs(plan.graph());
    for (const webir::Node& n : plan.graph().nodes) {
      if (n.role != webir::Role::kInput && n.role != webir::Role::kParam) continue;
      bool is_fed = std::find(fed.begin(), fed.end(), n.id) != fed.end();
      if (defer_fed && is_fed) continue;
      if (!n.data && !n.init && !feeds.count(FeedName(n)) && defer_fed)
        continue;  // carried, fed at first run
      SCELLIS_TRY(r.Load(n, feeds, exact));
    }
    r.FindLendableCarries();
    r.FindChunkGroups();
    return r;
  }

  // Runs of consecutive steps whose kernels write by chunk (kernel::ref::WritesByChunk) over
  // outputs of one size, where no kernel of the run writes a buffer that one of them reads
  // other than element for element (a scalar, say): such a run goes chunk by chunk through all
  // its kernels (see RunSteps). group_end[s] is one past the run that starts at step s.
  void FindChunkGroups() {
    const std::vector<execplan::Step>& steps = plan->steps;
    const webir::Graph& g = plan->graph();
    group_end.assign(steps.size(), 0);
    // The hoisted steps run apart from the body's (once, before the loop): no run spans both.
    const size_t hoisted = static_cast<size_t>(plan->module().HoistedKernels());
    auto kernel = [&](size_t s) -> const kernel::Kernel& {
      return plan->module().kernels[steps[s].kernel];
    };
    // A kernel's outputs of several sizes (an optimizer kernel over several parameters) have no
    // one chunking: -1, which no run shares.
    auto elements = [&](size_t s) -> int64_t {
      const int64_t n = g.at(kernel(s).output).type.elements();
      for (int o : kernel(s).Outputs())
        if (g.at(o).type.elements() != n) return -1;
      return n;
    };
    for (size_t first = 0; first < steps.size(); ++first) {
      size_t end = first + 1;
      if (kernel::ref::WritesByChunk(plan->module(), kernel(first)) && elements(first) >= 0) {
        const int64_t n = elements(first);
        std::vector<int> written = steps[first].Writes();
        std::vector<int> whole_reads;  // buffers read not element for element
        auto add_reads = [&](size_t s) {
          const kernel::Kernel& k = kernel(s);
          for (size_t i = 0; i < k.inputs.size(); ++i)
            if (g.at(k.inputs[i]).type.elements() != n) whole_reads.push_back(steps[s].reads[i]);
        };
        add_reads(first);
        auto overlaps = [](const std::vector<int>& a, const std::vector<int>& b) {
          for (int x : a)
            if (std::find(b.begin(), b.end(), x) != b.end()) return true;
          return false;
        };
        const size_t limit = first < hoisted ? hoisted : steps.size();
        while (end < limit && kernel::ref::WritesByChunk(plan->module(), kernel(end)) &&
               elements(end) == n) {
          std::vector<int> w = written, r = whole_reads;
          for (int b : steps[end].Writes()) written.push_back(b);
          add_reads(end);
          if (overlaps(written, whole_reads)) {
            written = std::move(w);
            whole_reads = std::move(r);
            break;
          }
          ++end;
        }
        if (overlaps(written, whole_reads)) end = first + 1;
      }
      group_end[first] = end;
    }
  }

  // A carry whose source buffer only ever holds values its step computes (every node in it is a
  // kernel's output, and it is no carry's target nor another carry's source) can hand the
  // source's storage to the target and take the target's old storage in exchange, instead of
  // copying: the step overwrites the source buffer before anything reads it.
  void FindLendableCarries() {
    const webir::Graph& g = plan->graph();
    lent_to.assign(buffers.size(), -1);
    lendable.assign(g.carries.size(), 0);
    std::vector<char> computed(buffers.size(), 0), other(buffers.size(), 0);
    std::vector<char> is_output(g.nodes.size(), 0);
    for (const execplan::Step& s : plan->steps)
      for (int out : plan->module().kernels[s.kernel].Outputs()) is_output[out] = 1;
    for (const execplan::Step& s : plan->steps)
      for (int b : s.Writes()) computed[b] = 1;
    for (const webir::Node& n : g.nodes) {
      const int b = plan->buffer_of[n.id];
      if (b >= 0 && !is_output[n.id]) other[b] = 1;
    }
    std::vector<int> uses(buffers.size(), 0);
    for (const webir::Carry& c : g.carries)
      for (int node : {c.from, c.to})
        if (plan->buffer_of[node] >= 0) ++uses[plan->buffer_of[node]];
    for (size_t i = 0; i < g.carries.size(); ++i) {
      const int from = plan->buffer_of[g.carries[i].from], to = plan->buffer_of[g.carries[i].to];
      lendable[i] =
          from >= 0 && to >= 0 && from != to && computed[from] && !other[from] && uses[from] == 1;
    }
  }

  // One step of a run: the hoisted kernels once, then `iterations` of the loop body.
  Status Run(int64_t iterations, const kernel::ref::Parallel& parallel) {
    const size_t hoisted = static_cast<size_t>(plan->module().HoistedKernels());
    SCELLIS_TRY(RunSteps(0, hoisted, parallel));
    for (int64_t it = 0; it < iterations; ++it) {
      std::fill(lent_to.begin(), lent_to.end(), -1);  // the iteration rewrites those buffers
      SCELLIS_TRY(RunSteps(hoisted, plan->steps.size(), parallel));
      Carry();
    }
    return Status::Ok();
  }

  // Plan steps [begin, end), the chunk-wise runs among them chunk by chunk.
  Status RunSteps(size_t begin, size_t end_of_steps, const kernel::ref::Parallel& parallel) {
    const std::vector<execplan::Step>& steps = plan->steps;
    auto inputs_of = [&](const execplan::Step& s) {
      std::vector<const T*> inputs;
      for (int b : s.reads) inputs.push_back(buffers[b].data());
      return inputs;
    };
    auto extra_outs_of = [&](const execplan::Step& s) {
      std::vector<T*> outs;
      for (int b : s.extra_writes) outs.push_back(buffers[b].data());
      return outs;
    };
    for (size_t first = begin; first < end_of_steps;) {
      const size_t end = group_end[first];
      if (end == first + 1) {
        const execplan::Step& s = steps[first];
        SCELLIS_TRY(kernel::ref::RunKernel<T>(plan->module(), plan->module().kernels[s.kernel],
                                              inputs_of(s), buffers[s.write].data(), parallel, -1,
                                              extra_outs_of(s)));
        ++first;
        continue;
      }
      // Chunk by chunk through the run: element i sees the same values in the same order as
      // when the kernels run one after the other, and a chunk's operands stay in cache.
      std::vector<std::vector<const T*>> inputs;
      for (size_t s = first; s < end; ++s) inputs.push_back(inputs_of(steps[s]));
      const int64_t n =
          plan->graph().at(plan->module().kernels[steps[first].kernel].output).type.elements();
      std::mutex failed_mu;
      Status failed = Status::Ok();
      parallel.For((n + kernel::ref::kChunk - 1) / kernel::ref::kChunk, [&](int64_t c) {
        for (size_t s = first; s < end; ++s) {
          Status st = kernel::ref::RunKernel<T>(
              plan->module(), plan->module().kernels[steps[s].kernel], inputs[s - first],
              buffers[steps[s].write].data(), parallel, c, extra_outs_of(steps[s]));
          if (!st.ok()) {
            std::lock_guard<std::mutex> lock(failed_mu);
            failed = std::move(st);
          }
        }
      });
      SCELLIS_TRY(failed);
      first = end;
    }
    return Status::Ok();
  }

  void Carry() {
    // Carries read the step's results before any is overwritten. A lendable carry trades
    // storage with its target (FindLendableCarries); any other is copied into a spare buffer
    // that then trades places with its target (whose old storage is the next step's spare).
    // Either way a step allocates nothing.
    // A carry written in place (Kernel::in_place) is where it belongs already.
    const std::vector<webir::Carry>& carries = plan->graph().carries;
    carry_spare.resize(carries.size());
    std::vector<char> lend(carries.size(), 0), in_place(carries.size(), 0);
    for (size_t i = 0; i < carries.size(); ++i) {
      in_place[i] = plan->buffer_of[carries[i].from] == plan->buffer_of[carries[i].to];
      lend[i] = lendable[i] && of(carries[i].from).size() == of(carries[i].to).size();
      if (!lend[i] && !in_place[i]) carry_spare[i] = of(carries[i].from);
    }
    for (size_t i = 0; i < carries.size(); ++i) {
      if (in_place[i]) continue;
      if (lend[i]) {
        std::swap(of(carries[i].to), of(carries[i].from));
        lent_to[plan->buffer_of[carries[i].from]] = plan->buffer_of[carries[i].to];
      } else {
        std::swap(of(carries[i].to), carry_spare[i]);
      }
    }
  }

  std::vector<std::vector<T>> carry_spare;
  std::vector<char> lendable;     // per carry
  std::vector<int> lent_to;       // per buffer: -1, or where its values are while it is lent
  std::vector<size_t> group_end;  // per step: see FindChunkGroups
};

class CpuPrepared : public Prepared {
 public:
  CpuPrepared(const execplan::Plan& plan, const kernel::ref::Parallel& parallel)
      : Prepared(plan), parallel_(parallel) {}

  Status Init(const Feeds& feeds) {
    SCELLIS_ASSIGN_OR_RETURN(resident_, Resident<float>::Make(plan_, feeds, /*defer_fed=*/true));
    return Status::Ok();
  }

  std::string backend() const override { return "cpu"; }
  std::string executor() const override { return "reference"; }

 protected:
  Result<StepsResult> DoRunSteps(const std::vector<Feeds>& feeds,
                                 const std::vector<std::string>& names,
                                 const std::vector<int>& watch) override {
    auto start = std::chrono::steady_clock::now();
    const webir::Graph& g = plan_.graph();
    StepsResult r;
    for (const std::string& w : names) r.watched.push_back({w, {}});
    for (const Feeds& step_feeds : feeds) {
      for (const webir::Node& n : g.nodes) {
        if (n.role != webir::Role::kInput || n.data) continue;
        if (IsCarried(g, n.id) && initialized_) continue;
        SCELLIS_TRY(resident_->Load(n, step_feeds));
      }
      initialized_ = true;
      SCELLIS_TRY(resident_->Run(g.repeat, parallel_));
      for (size_t i = 0; i < watch.size(); ++i) {
        // Carried inputs were just updated; outputs hold this step's value.
        const webir::Node& n = g.at(watch[i]);
        r.watched[i].second.push_back(ToHost(n.type, resident_->Read(n.id).data()));
      }
    }
    double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    r.stats = {{"steps", feeds.size()}, {"wall_ms", ms}, {"threads", parallel_.threads()}};
    return r;
  }

  Result<HostTensor> DoDownload(int node) override {
    return ToHost(plan_.graph().at(node).type, resident_->Read(node).data());
  }

  Status DoUpload(int node, const HostTensor& value) override {
    resident_->Store(node, value);
    initialized_ |= IsCarried(plan_.graph(), node);
    return Status::Ok();
  }

 private:
  const kernel::ref::Parallel& parallel_;
  std::optional<Resident<float>> resident_;
  bool initialized_ = false;
};

}  // namespace

CpuExecutor::CpuExecutor(Options options) : parallel_(kernel::ref::ThreadsFor(options.threads)) {}

DeviceProfile ReferenceProfile() {
  DeviceProfile p;
  p.key = "cpu;reference";
  p.device = "the reference";
  p.adapter_type = "cpu";
  return p;
}

DeviceProfile CpuExecutor::profile() const {
  return ReferenceProfile();
}

// The reference keeps every buffer in host memory, next to the host copies of the run.
execplan::DeviceLimits CpuExecutor::limits() const {
  return execplan::HostMemoryLimits("cpu", "the CPU reference");
}

template <typename T>
Result<std::vector<std::vector<T>>> RunPlan(const execplan::Plan& plan, const Feeds& feeds,
                                            const kernel::ref::Parallel& parallel,
                                            const ExactFeeds<T>& exact) {
  if (plan.verdict == execplan::Verdict::kRed)
    return InternalError("cpu.RunPlan", "asked to run a red plan");
  SCELLIS_ASSIGN_OR_RETURN(Resident<T> r,
                           Resident<T>::Make(plan, feeds, /*defer_fed=*/false, &exact));
  SCELLIS_TRY(r.Run(plan.graph().repeat, parallel));
  std::vector<std::vector<T>> outputs;
  for (const webir::Output& o : plan.graph().outputs) {
    const std::vector<T>& b = r.Read(o.node);
    outputs.emplace_back(b.begin(), b.begin() + plan.graph().at(o.node).type.elements());
  }
  return outputs;
}

template Result<std::vector<std::vector<float>>> RunPlan<float>(const execplan::Plan&, const Feeds&,
                                                                const kernel::ref::Parallel&,
                                                                const ExactFeeds<float>&);
template Result<std::vector<std::vector<double>>> RunPlan<double>(const execplan::Plan&,
                                                                  const Feeds&,
                                                                  const kernel::ref::Parallel&,
                                                                  const ExactFeeds<double>&);

Result<std::unique_ptr<Prepared>> CpuExecutor::DoPrepare(const execplan::Plan& plan,
                                                         const Feeds& feeds, const RunOptions&) {
  auto p = std::make_unique<CpuPrepared>(plan, parallel_);
  SCELLIS_TRY(p->Init(feeds));
  return std::unique_ptr<Prepared>(std::move(p));
}

Result<RunResult> CpuExecutor::DoRun(const execplan::Plan& plan, const Feeds& feeds,
                                     const RunOptions&) {
  auto start = std::chrono::steady_clock::now();
  SCELLIS_ASSIGN_OR_RETURN(auto outputs, RunPlan<float>(plan, feeds, parallel_));
  double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  RunResult r;
  r.backend = "cpu";
  r.executor = "reference";
  const webir::Graph& g = plan.graph();
  for (size_t i = 0; i < g.outputs.size(); ++i)
    r.outputs.emplace_back(g.outputs[i].name,
                           ToHost(g.at(g.outputs[i].node).type, outputs[i].data()));
  r.stats = {{"kernels", plan.steps.size()},
             {"threads", parallel_.threads()},
             {"wall_ms", ms},
             {"memory_allocated_bytes", plan.memory.allocated}};
  return r;
}

}  // namespace scellis::runtime::cpu

// A plan resident on a Dawn device. Each fed input has one staging buffer per run with a slot per
// step, and each step binds its own slot directly. A loop's hoisted dispatches run once per step,
// before its first iteration. Carried values ping-pong: after an iteration, a carried output's
// buffer and its input's buffer swap roles, so no iteration copies state. The fused encoder
// records every iteration of a step (a plan's `repeat` gives a step many) into one submission, and
// sends a run of many steps in chunks of 1, 1, 2, 4 and then 8 steps, so the GPU starts while the
// host records the rest; the generic executor, pinned for comparisons, submits each iteration
// alone. Only the per-step history of watched outputs (all in one history buffer, where a value's
// kernel writes it in every step but the last, else one small copy per step) is read back, through
// one staging map. A run is started (recorded, sent, its map asked for) apart from being finished
// (the map waited for), so the host records the next run while the GPU runs this one; each run in
// flight owns its staging and history buffers.
//
// Buffers, sources, pipelines and dispatches come from the device program (runtime/
// device_program.h) built for this device's limits: the browser runtime executes the same program,
// so both run the same WGSL with the same bindings and grids.
#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <deque>
#include <map>
#include <set>

#include "runtime/backends/webgpu/executor.h"
#include "runtime/device_program.h"

namespace scellis::runtime::webgpu {
namespace {

// A run's dispatches as the GPU's clock saw them: how long the kernels ran (busy), from the first
// dispatch's start to the last one's end (span), and the idle time between one dispatch's end and
// the next one's start (gaps) — what each dependent dispatch costs beyond its kernel; each
// dispatch's time in recording order, and by kernel (`kernels[i]` the kernel of dispatch i) the
// dispatches and their busy time, which stay small however long a run is.
Json GpuTimesJson(const std::vector<GpuInterval>& times, const std::vector<std::string>& kernels) {
  double busy = 0, gaps = 0;
  Json durations = Json::array();
  Json by_kernel = Json::object();
  for (size_t i = 0; i < times.size(); ++i) {
    const double run = double(times[i].end_ns - times[i].begin_ns) / 1e3;
    busy += run;
    durations.push_back(run);
    if (i > 0 && times[i].begin_ns > times[i - 1].end_ns)
      gaps += double(times[i].begin_ns - times[i - 1].end_ns) / 1e3;
    Json& kernel = by_kernel[i < kernels.size() ? kernels[i] : "(unnamed)"];
    if (kernel.is_null()) kernel = {{"dispatches", 0}, {"busy_us", 0.0}};
    kernel["dispatches"] = kernel["dispatches"].get<int64_t>() + 1;
    kernel["busy_us"] = kernel["busy_us"].get<double>() + run;
  }
  return {{"dispatches", times.size()},
          {"busy_us", busy},
          {"gaps_us", gaps},
          {"span_us", double(times.back().end_ns - times.front().begin_ns) / 1e3},
          {"dispatch_us", std::move(durations)},
          {"by_kernel", std::move(by_kernel)}};
}

// The most steps one submission of a session's run holds: chunks grow 1, 1, 2, 4, 8 and stay at
// 8, so the queue's upload memory for the feeds of a chunk is a few MiB and is reused once the
// GPU has run the chunk before, where a chunk of 64 training batches (12.8 MiB) takes fresh
// upload memory every run.
constexpr size_t kMaxStepsPerChunk = 8;

uint64_t RoundUp4(uint64_t bytes) {
  return (bytes + 3) / 4 * 4;
}

// Fills a whole buffer with kPoisonBits. Written as u32 so no float path can quiet or canonicalize
// the NaN; the grid may be folded into y and z like any large dispatch.
std::string PoisonWgsl() {
  char bits[16];
  std::snprintf(bits, sizeof bits, "0x%08xu", kPoisonBits);
  return std::string(
             "@group(0) @binding(0) var<storage, read_write> out: array<u32>;\n"
             "@compute @workgroup_size(64)\n"
             "fn main(@builtin(global_invocation_id) gid: vec3<u32>,\n"
             "        @builtin(num_workgroups) groups: vec3<u32>) {\n"
             "  let i = gid.x + (gid.y + gid.z * groups.y) * groups.x * 64u;\n"
             "  if (i < arrayLength(&out)) { out[i] = ") +
         bits + "; }\n}\n";
}

class WebGpuPrepared : public Prepared {
 public:
  WebGpuPrepared(const execplan::Plan& plan, Device& device, const RunOptions& options)
      : Prepared(plan), d_(device), options_(options) {}
  ~WebGpuPrepared() override {
    // Runs still in flight are waited for (their results dropped): their read-backs' staging
    // buffers and their own buffers go back to the device's pools only once the GPU is done.
    while (!in_flight_.empty()) (void)Collect();
    for (BufferId b : buffers_) d_.ReleaseBuffer(b);
  }

  std::string backend() const override { return "webgpu"; }
  std::string executor() const override {
    return options_.executor.empty() ? kFusedEncoder : options_.executor;
  }

  Status Init(const Feeds& feeds) {
    SCELLIS_TRY(CheckDtypes());
    SCELLIS_ASSIGN_OR_RETURN(program_,
                             BuildDeviceProgram(plan_, feeds, ProgramLimitsOf(d_.info())));
    // The program's outputs are the graph's, in order.
    for (size_t i = 0; i < program_.outputs.size(); ++i)
      if (program_.outputs[i].writes_into_history_slot)
        writes_into_slot_.insert(plan_.graph().outputs[i].node);
    for (const ProgramBuffer& b : program_.buffers) buffers_.push_back(d_.CreateBuffer(b.size));
    phys_ = buffers_;
    fed_ = FedInputs(plan_.graph());
    for (const ProgramSource& src : program_.sources)
      SCELLIS_TRY(WriteBytes(buffers_[src.buffer], 0, src.data));
    for (const ProgramPipeline& pl : program_.pipelines) {
      std::vector<WgslMessage> errors;
      auto p = d_.Pipeline(pl.wgsl, pl.entry_point, &errors);
      // A user op's WGSL is the user's to fix; an engine kernel that fails to compile is a bug.
      const ops::OpSpec* user = pl.user_op.empty() ? nullptr : plan_.graph().ops->Find(pl.user_op);
      if (!p.ok() && user && user->user && !errors.empty())
        return UserWgslInvalid(*user, pl, errors);
      if (!p.ok()) {
        return InternalError("webgpu.Prepare", "kernel " + pl.kernel + " failed to compile: " +
                                                   p.errors().front().message);
      }
      pipelines_.push_back(p.value());
    }
    for (int i : options_.leave_out_dispatches)
      if (i < 0 || static_cast<size_t>(i) >= program_.dispatches.size())
        return InternalError("webgpu.Prepare", "dispatch " + std::to_string(i) +
                                                   " is left out, but the program has " +
                                                   std::to_string(program_.dispatches.size()));
    if (options_.poison_outputs) {
      auto p = d_.Pipeline(PoisonWgsl(), "main");
      if (!p.ok()) {
        return InternalError("webgpu.Prepare", "the poison fill kernel failed to compile: " +
                                                   p.errors().front().message);
      }
      poison_ = p.value();
    }
    return Status::Ok();
  }

  // f16 storage needs the device's shader-f16 feature, and a compiler that accepts `enable f16`
  // (some grant the feature and still refuse it); say so before any kernel compiles.
  Status CheckDtypes() {
    for (const webir::Node& n : plan_.graph().nodes) {
      if (n.type.dtype != DType::kF16 || plan_.buffer_of[n.id] < 0) continue;
      std::string why = "has no shader-f16 feature enabled";
      if (d_.info().shader_f16) {
        auto probe = d_.Pipeline(
            "enable f16;\n"
            "@group(0) @binding(0) var<storage, read_write> out: array<f16>;\n"
            "@compute @workgroup_size(1)\n"
            "fn main() { out[0] = f16(1.0); }\n",
            "main");
        if (probe.ok()) return Status::Ok();
        // The compiler's own words (the first 300 characters), so the refusal can be told apart
        // from a bug.
        std::string said = probe.errors().front().message.substr(0, 300);
        std::replace(said.begin(), said.end(), '\n', ' ');
        why = "enables shader-f16 but its WGSL compiler refuses `enable f16` (" + said + ")";
      }
      return UserError("shader-f16-unavailable", n.origin,
                       (n.role == webir::Role::kCompute ? "the " + n.Describe() + " computes in"
                                                        : "\"" + FeedName(n) + "\" is") +
                           " f16, and the WebGPU adapter \"" + d_.info().device + "\" " + why,
                       "declare it f32 (a train section's \"mixed_precision\" makes the "
                       "products f16), or run on an adapter with shader-f16 or on the CPU");
    }
    return Status::Ok();
  }

  // A fed value's bytes as the device takes them: the caller's own when they are whole words (a
  // batch is the largest data a training step moves, and a copy of it costs the host as much as
  // the queue's own), else SourceData's, held in `converted`.
  Result<const std::vector<std::byte>*> FedBytes(const webir::Node& n, const Feeds& feeds,
                                                 HostTensor& converted) const {
    auto fed = feeds.find(FeedName(n));
    if (fed != feeds.end() && fed->second.bytes.size() % 4 == 0) return &fed->second.bytes;
    SCELLIS_ASSIGN_OR_RETURN(converted, SourceData(n, feeds));
    return &converted.bytes;
  }

  Status WriteSource(const webir::Node& n, const Feeds& feeds, BufferId target, uint64_t offset) {
    HostTensor converted;
    SCELLIS_ASSIGN_OR_RETURN(const std::vector<std::byte>* bytes, FedBytes(n, feeds, converted));
    if (bytes == &converted.bytes) return WriteBytes(target, offset, std::move(converted.bytes));
    return bytes->empty() ? Status::Ok() : d_.Write(target, offset, bytes->data(), bytes->size());
  }

  Status WriteBytes(BufferId target, uint64_t offset, std::vector<std::byte> bytes) {
    if (bytes.empty()) return Status::Ok();
    // A slot of a 2-byte dtype may end mid-word; the device writes whole words.
    if (bytes.size() % 4) bytes.resize(RoundUp4(bytes.size()));
    return d_.Write(target, offset, bytes.data(), bytes.size());
  }

 protected:
  Result<StepsResult> DoRunSteps(const std::vector<Feeds>& feeds,
                                 const std::vector<std::string>& names,
                                 const std::vector<int>& watch) override {
    SCELLIS_TRY(DoStartSteps(feeds, names, watch));
    return DoFinishSteps();
  }

  // Records the run and sends it with the read-back of its watched values, without waiting for
  // them: the next run is recorded while the GPU runs this one (DoFinishSteps collects it).
  Status DoStartSteps(const std::vector<Feeds>& feeds, const std::vector<std::string>& names,
                      const std::vector<int>& watch) override {
    Run run;
    run.start = Clock::now();
    run.names = names;
    run.watch = watch;
    run.steps = feeds.size();
    run.overlapped = !in_flight_.empty();
    const webir::Graph& g = plan_.graph();
    const size_t steps = feeds.size();
    const DeviceStats before = d_.stats();
    auto release = [&] {
      for (BufferId b : run.scratch) d_.ReleaseBuffer(b);
    };

    // Inputs that take data this run: fed ones every step; carried ones only on the first run.
    // Fed inputs: one slot per step, each at an offset the adapter can bind, as storage or as a
    // uniform (an optimizer kernel over several parameters reads the step as one). Slots are
    // written as their steps are recorded (below); carried inputs' first values now. A run's
    // staging and history buffers are its own until it is finished, so a run started behind it
    // never writes what the GPU may still read.
    //
    // The small fed inputs (a step's number, its batch's row indices) share one staging buffer: a
    // record of their slots per step, written once per chunk of steps. Every write to a buffer is
    // a copy the GPU runs behind a barrier of its own, and a run of 8 steps of two such inputs
    // began with 16 of them. A larger input (a batch fed from the host) keeps a buffer of its own,
    // written step by step from the caller's memory, which a record would copy once more.
    std::map<int, Slots> fed_slots;
    const uint64_t align = std::max({d_.info().limits.min_storage_buffer_offset_alignment,
                                     d_.info().limits.min_uniform_buffer_offset_alignment, 4u});
    uint64_t record_bytes = 0;  // one step's record of the small fed inputs' slots
    for (const webir::Node& n : g.nodes) {
      if (n.role != webir::Role::kInput || n.data) continue;
      if (!IsFed(n.id)) {
        if (initialized_) continue;
        // A carried input's first value goes straight into its own buffer.
        Status s = WriteSource(n, feeds.front(), Phys(n.id), 0);
        if (!s.ok()) {
          release();
          return s;
        }
        continue;
      }
      const uint64_t bytes = std::max<uint64_t>(RoundUp4(n.type.bytes()), 4);
      const uint64_t stride = (bytes + align - 1) / align * align;
      if (bytes <= kRecordedFeedBytes) {
        fed_slots[n.id] = {BufferId{}, 0, bytes, record_bytes, /*in_record=*/true};
        record_bytes += stride;
        continue;
      }
      const BufferId staging = d_.CreateBuffer(stride * steps);
      run.scratch.push_back(staging);
      fed_slots[n.id] = {staging, stride, bytes};
    }
    if (record_bytes) {
      const BufferId records = d_.CreateBuffer(record_bytes * steps);
      run.scratch.push_back(records);
      for (auto& [node, slots] : fed_slots) {
        if (!slots.in_record) continue;
        slots.staging = records;
        slots.stride = record_bytes;
      }
    }

    // Every watched value of every step goes into one history buffer, so one map reads it all:
    // watched output i of step k at history_at[i] + k * slot[i]. A value its kernel can write
    // into its slot itself (ProgramOutput::writes_into_history_slot, outside the checking mode
    // that poisons outputs) is, in every step but the last: a copy per step is a transfer between
    // dispatches, with a barrier on either side, that the GPU waits for as for a dependent
    // dispatch. The last step's value stays in its own buffer, where a download after the run
    // reads it, and is copied.
    std::map<int, Slots> history_slots;  // by plan buffer, the values written into their slots
    std::vector<bool> written_in_slot;
    for (int node : watch) {
      const int buffer = plan_.buffer_of[node];
      const bool direct = steps > 1 && !options_.poison_outputs && writes_into_slot_.count(node) &&
                          !SharesADispatch(buffer, history_slots);
      const uint64_t size =
          direct ? program_.buffers[buffer].size : RoundUp4(g.at(node).type.bytes());
      if (direct) run.history_bytes = (run.history_bytes + align - 1) / align * align;
      run.slot.push_back(direct ? (size + align - 1) / align * align : size);
      run.history_at.push_back(run.history_bytes);
      run.history_bytes += run.slot.back() * steps;
      written_in_slot.push_back(direct);
      if (direct)
        history_slots[buffer] = {BufferId{}, run.slot.back(), size, run.history_at.back()};
    }
    BufferId history = d_.CreateBuffer(std::max<uint64_t>(run.history_bytes, 4));
    run.scratch.push_back(history);
    for (auto& [buffer, slots] : history_slots) slots.staging = history;

    // A binding of a fed input's buffer binds this step's slot of its staging buffer instead; in
    // every step but the last, a binding of a value written into its history slot binds that.
    std::map<int, const Slots*> fed_buffer;
    for (const auto& [node, slots] : fed_slots) fed_buffer[plan_.buffer_of[node]] = &slots;
    std::map<int, const Slots*> slotted_buffer = fed_buffer;
    for (const auto& [buffer, slots] : history_slots) slotted_buffer[buffer] = &slots;
    const bool generic = executor() == kGenericExecutor;
    const int64_t iterations = program_.Rounds();
    const size_t hoisted = static_cast<size_t>(program_.hoisted_dispatches);
    // The fused encoder sends a run's steps in chunks of 1, 1, 2, 4, 8, 8, ... steps as it records
    // them, so the GPU starts on the first step while the host records the rest, and the host,
    // which records a step in less time than the GPU runs it, stays ahead with a few submissions.
    // A run started behind another finds the GPU busy with that one, so its chunks start at 8:
    // small first chunks would only add submissions. The read at the end sends the last chunk.
    //
    // Where the host's part goes, for the stats: handing chunks to the queue, writing the feeds,
    // and recording the dispatches (with the generic executor's own submissions); before the
    // loop, the run's setup.
    Clock::duration sending{}, feeding{};
    const auto loop_start = Clock::now();
    size_t chunk_end = 0;
    for (size_t k = 0; k < steps; ++k) {
      if (k == chunk_end) {
        const size_t least = run.overlapped ? kMaxStepsPerChunk : 1;
        chunk_end = std::min(steps, k + std::clamp<size_t>(k, least, kMaxStepsPerChunk));
        const auto t0 = Clock::now();
        Status s = k > 0 && !generic ? d_.Send() : Status::Ok();
        const auto t1 = Clock::now();
        if (s.ok()) s = WriteFeeds(feeds, fed_slots, k, chunk_end);
        sending += t1 - t0;
        feeding += Clock::now() - t1;
        if (!s.ok()) {
          release();
          return s;
        }
      }
      // The loop's invariants, once per step; the body's dispatches every iteration.
      const bool last_step = k + 1 == steps;
      const std::map<int, const Slots*>& slotted = last_step ? fed_buffer : slotted_buffer;
      EncodeDispatches(k, slotted, 0, hoisted);
      for (int64_t it = 0; it < iterations; ++it) {
        EncodeDispatches(k, slotted, hoisted, program_.dispatches.size());
        // The last iteration's outputs are the step's.
        if (it + 1 == iterations) {
          for (size_t i = 0; i < watch.size(); ++i) {
            if (run.slot[i] && (last_step || !written_in_slot[i])) {
              d_.Copy(Phys(watch[i]), 0, history, run.history_at[i] + k * run.slot[i],
                      RoundUp4(g.at(watch[i]).type.bytes()));
            }
          }
        }
        // The carried outputs become the next iteration's inputs by swapping buffers, not by
        // copying.
        for (const ProgramCarry& c : program_.carries)
          std::swap(phys_[c.from_buffer], phys_[c.to_buffer]);
        if (generic && !(k + 1 == steps && it + 1 == iterations)) {
          Status s = d_.Submit();
          if (!s.ok()) {
            release();
            return s;
          }
        }
      }
    }
    // The host's part ends here (feeds queued, every dispatch recorded); the rest is the
    // submission, the GPU's run and the read back, which DoFinishSteps waits for.
    const auto recorded = Clock::now();
    // The read sends the recorded steps together with its copy to the staging buffer: one
    // submission and one map for the whole run.
    Status sent = Status::Ok();
    if (run.history_bytes) {
      auto ticket = d_.StartRead(history, 0, run.history_bytes);
      if (ticket.ok()) run.read = *ticket;
      sent = ticket.status();
    } else {
      sent = d_.Send();
    }
    if (!sent.ok()) {
      release();
      return sent;
    }
    // Carried inputs hold their first values now; a failure from here on poisons the device.
    initialized_ = true;
    const DeviceStats& after = d_.stats();
    const auto ms_of = [](Clock::duration d) {
      return std::chrono::duration<double, std::milli>(d).count();
    };
    run.stats = {{"steps", steps},
                 {"dispatches", after.dispatches - before.dispatches},
                 {"copies", after.copies - before.copies},
                 {"iterations_per_dispatch", program_.iterations_per_dispatch},
                 {"submissions", after.submits - before.submits},
                 {"maps", after.maps - before.maps},
                 {"writes", after.writes - before.writes},
                 {"bytes_uploaded", after.bytes_uploaded - before.bytes_uploaded},
                 {"readback_bytes", run.history_bytes},
                 {"overlapped_runs", run.overlapped ? 1 : 0},
                 {"host_record_ms", ms_of(recorded - run.start)},
                 {"host_setup_ms", ms_of(loop_start - run.start)},
                 {"host_send_ms", ms_of(sending)},
                 {"host_feed_ms", ms_of(feeding)},
                 {"host_encode_ms", ms_of(recorded - loop_start - sending - feeding)}};
    if (!options_.leave_out_dispatches.empty())
      run.stats["left_out_dispatches"] = options_.leave_out_dispatches;
    in_flight_.push_back(std::move(run));
    // A timed run is collected at once: the timestamps of a run recorded behind it would
    // otherwise be read back with its own.
    if (d_.gpu_timestamps()) {
      auto r = Collect();
      if (!r.ok()) return r.status();
      timed_results_.push_back(std::move(*r));
    }
    return Status::Ok();
  }

  Result<StepsResult> DoFinishSteps() override {
    if (!timed_results_.empty()) {
      StepsResult r = std::move(timed_results_.front());
      timed_results_.pop_front();
      return r;
    }
    return Collect();
  }

  Result<HostTensor> DoDownload(int node) override {
    // After a step a carried output's value lives in its input's buffer (they swapped).
    for (const webir::Carry& c : plan_.graph().carries)
      if (c.from == node) node = c.to;
    HostTensor t = HostTensor::Zeros(plan_.graph().at(node).type);
    if (!t.bytes.empty()) SCELLIS_TRY(d_.Read(Phys(node), 0, t.bytes.size(), t.bytes.data()));
    return t;
  }

  Status DoUpload(int node, const HostTensor& value) override {
    if (!value.bytes.empty()) {
      std::vector<std::byte> padded = value.bytes;
      padded.resize(RoundUp4(padded.size()));
      SCELLIS_TRY(d_.Write(Phys(node), 0, padded.data(), padded.size()));
    }
    initialized_ |= IsCarried(plan_.graph(), node);
    return Status::Ok();
  }

  // Between two plans of one device, a buffer copy: the value never leaves the device.
  Status DoCopyFrom(Prepared& source, int source_node, int node) override {
    auto* other = dynamic_cast<WebGpuPrepared*>(&source);
    if (!other || &other->d_ != &d_) return Prepared::DoCopyFrom(source, source_node, node);
    // After a step a carried output's value lives in its input's buffer (they swapped).
    for (const webir::Carry& c : other->plan_.graph().carries)
      if (c.from == source_node) source_node = c.to;
    const uint64_t bytes =
        RoundUp4(static_cast<uint64_t>(CheckedBytes(plan_.graph().at(node).type).value_or(0)));
    if (bytes) {
      d_.Copy(other->Phys(source_node), 0, Phys(node), 0, bytes);
      SCELLIS_TRY(d_.Submit());
    }
    initialized_ |= IsCarried(plan_.graph(), node);
    return Status::Ok();
  }

 private:
  using Clock = std::chrono::steady_clock;

  // A run started and not yet finished: its buffers (the fed inputs' staging, the history of the
  // watched values), where each watched value lies in the history, and its read-back.
  struct Run {
    Clock::time_point start;
    std::vector<std::string> names;
    std::vector<int> watch;
    size_t steps = 0;
    bool overlapped = false;  // started while a run before it was in flight
    std::vector<BufferId> scratch;
    std::vector<uint64_t> slot, history_at;
    uint64_t history_bytes = 0;
    ReadTicket read;  // none when nothing is watched
    Json stats;
  };

  // Waits for the oldest run's read-back (or, watching nothing, for the GPU) and hands back its
  // watched values and stats.
  Result<StepsResult> Collect() {
    Run run = std::move(in_flight_.front());
    in_flight_.pop_front();
    std::vector<std::byte> all(run.history_bytes);
    Status done = run.read.valid() ? d_.FinishRead(run.read, all.data()) : d_.Submit();
    for (BufferId b : run.scratch) d_.ReleaseBuffer(b);
    SCELLIS_TRY(done);

    const webir::Graph& g = plan_.graph();
    StepsResult r;
    for (size_t i = 0; i < run.watch.size(); ++i) {
      const TensorType& type = g.at(run.watch[i]).type;
      std::vector<HostTensor> per_step;
      for (size_t k = 0; k < run.steps; ++k) {
        const std::byte* first = all.data() + run.history_at[i] + k * run.slot[i];
        per_step.push_back({type, {first, first + type.bytes()}});
      }
      r.watched.push_back({run.names[i], std::move(per_step)});
    }
    r.stats = std::move(run.stats);
    // From the run's start to its values on the host: with runs in flight, overlapping the
    // runs beside it.
    r.stats["wall_ms"] =
        std::chrono::duration<double, std::milli>(Clock::now() - run.start).count();
    SCELLIS_ASSIGN_OR_RETURN(std::vector<GpuInterval> gpu, d_.TakeGpuTimes());
    if (!gpu.empty()) r.stats["gpu_timestamps"] = GpuTimesJson(gpu, timed_kernels_);
    timed_kernels_.clear();
    return r;
  }

  // A fed input's per-step values: one slot per step of a run in one staging buffer (or a watched
  // value's, in the run's history), step k's at first + k * stride.
  struct Slots {
    BufferId staging;
    uint64_t stride;
    uint64_t bytes;
    uint64_t first = 0;
    bool in_record = false;  // a small fed input's slot in the run's per-step record
  };
  // Fed inputs up to this size share the run's record (DoStartSteps).
  static constexpr uint64_t kRecordedFeedBytes = 4096;

  // Whether some dispatch binds `buffer` and one of `others`' too (or `buffer` is one of them): a
  // dispatch may not bind one buffer, the run's history, both as read-only and as writable.
  bool SharesADispatch(int buffer, const std::map<int, Slots>& others) const {
    if (others.count(buffer)) return true;
    for (const ProgramDispatch& d : program_.dispatches) {
      bool binds = false, binds_other = false;
      for (const ProgramBinding& b : d.bindings) {
        binds |= b.buffer == buffer;
        binds_other |= others.count(b.buffer) > 0;
      }
      if (binds && binds_other) return true;
    }
    return false;
  }

  // Steps [first, end)'s feeds into their slots of the fed inputs' staging buffers.
  Status WriteFeeds(const std::vector<Feeds>& feeds, const std::map<int, Slots>& fed_slots,
                    size_t first, size_t end) {
    const Slots* record = nullptr;
    for (const auto& [node, slots] : fed_slots) {
      const webir::Node& n = plan_.graph().at(node);
      if (!slots.in_record) {
        for (size_t k = first; k < end; ++k)
          SCELLIS_TRY(WriteSource(n, feeds[k], slots.staging, k * slots.stride));
        continue;
      }
      // The records of steps [first, end), padding zeroed, then one write.
      if (!record) records_.assign((end - first) * slots.stride, std::byte{0});
      record = &slots;
      for (size_t k = first; k < end; ++k) {
        HostTensor converted;
        SCELLIS_ASSIGN_OR_RETURN(const std::vector<std::byte>* bytes,
                                 FedBytes(n, feeds[k], converted));
        if (bytes->size() > slots.bytes)
          return InternalError("webgpu.WriteFeeds",
                               "input " + FeedName(n) + " holds " + std::to_string(bytes->size()) +
                                   " bytes, more than its slot's " + std::to_string(slots.bytes));
        std::copy(bytes->begin(), bytes->end(),
                  records_.data() + (k - first) * slots.stride + slots.first);
      }
    }
    if (!record) return Status::Ok();
    return d_.Write(record->staging, first * record->stride, records_.data(), records_.size());
  }

  // The program's dispatches [first, end), every binding of a slotted buffer (a fed input's, or a
  // watched value's written into the history) taking step `step`'s slot instead.
  void EncodeDispatches(size_t step, const std::map<int, const Slots*>& slotted, size_t first,
                        size_t end) {
    const std::vector<int>& left_out = options_.leave_out_dispatches;
    for (size_t i = first; i < end; ++i) {
      if (std::find(left_out.begin(), left_out.end(), static_cast<int>(i)) != left_out.end())
        continue;
      const ProgramDispatch& dispatch = program_.dispatches[i];
      std::vector<Binding>& bindings = bindings_;  // kept between dispatches: no allocation
      bindings.clear();
      for (const ProgramBinding& b : dispatch.bindings) {
        auto slot = slotted.find(b.buffer);
        if (slot != slotted.end()) {
          const Slots& sl = *slot->second;
          bindings.push_back(
              {sl.staging, sl.first + step * sl.stride + b.offset, b.size ? b.size : sl.bytes});
        } else {
          bindings.push_back({phys_[b.buffer], b.offset, b.size});
        }
      }
      if (options_.poison_outputs) {
        const bool tiled = dispatch.tile_count >= 0;
        const bool first_tile =
            tiled && (i == first || program_.dispatches[i - 1].step != dispatch.step);
        // A tiled step's output is poisoned once, before its first tile, in windows under the
        // cap: the tiles' windows overlap (they start at aligned offsets below their first
        // element), and a later tile along a reduced axis adds to what earlier ones stored.
        // A kernel's outputs are its last `writes` bindings.
        for (size_t w = bindings.size() - static_cast<size_t>(dispatch.writes); w < bindings.size();
             ++w) {
          if (first_tile) PoisonWhole(bindings[w].buffer);
          if (!tiled) Poison(bindings[w]);
        }
      }
      NoteTimedKernel(dispatch.kernel);
      d_.Dispatch(pipelines_[dispatch.pipeline], bindings, dispatch.workgroups[0],
                  dispatch.workgroups[1], dispatch.workgroups[2]);
    }
  }

  // With GPU timestamps, which kernel each timed dispatch ran, in recording order.
  void NoteTimedKernel(const std::string& kernel) {
    if (d_.gpu_timestamps() && timed_kernels_.size() < Device::kMaxTimedDispatches)
      timed_kernels_.push_back(kernel);
  }

  void Poison(const Binding& out) {
    NoteTimedKernel("poison");
    uint64_t words = out.size ? out.size / 4 : (d_.BufferSize(out.buffer) + 3) / 4;
    Grid grid =
        SplitWorkgroups((words + 63) / 64, d_.info().limits.max_compute_workgroups_per_dimension);
    d_.Dispatch(poison_, {out}, grid.x, grid.y, grid.z);
  }
  void PoisonWhole(BufferId buffer) {
    const uint64_t align =
        std::max<uint64_t>(program_.limits.min_storage_buffer_offset_alignment, 4);
    const uint64_t chunk = program_.limits.max_storage_buffer_binding_size / align * align;
    const uint64_t size = d_.BufferSize(buffer);
    for (uint64_t at = 0; at < size; at += chunk) Poison({buffer, at, std::min(chunk, size - at)});
  }

  bool IsFed(int node) const { return std::find(fed_.begin(), fed_.end(), node) != fed_.end(); }
  // The buffer holding `node` now (carried values move between their two buffers each step).
  BufferId Phys(int node) const { return phys_[plan_.buffer_of[node]]; }

  Device& d_;
  std::vector<BufferId> buffers_;  // owned, one per plan buffer
  std::vector<BufferId> phys_;     // plan buffer -> the device buffer holding it now
  DeviceProgram program_;
  std::vector<PipelineId> pipelines_;  // per program pipeline
  std::vector<int> fed_;
  std::set<int> writes_into_slot_;  // outputs' nodes their kernels can write into history slots
  RunOptions options_;
  std::vector<Binding> bindings_;   // EncodeDispatches' scratch
  std::vector<std::byte> records_;  // WriteFeeds' scratch: the small fed inputs' records
  PipelineId poison_;
  bool initialized_ = false;
  std::deque<Run> in_flight_;               // started, oldest first
  std::deque<StepsResult> timed_results_;   // collected at their start (GPU timestamps)
  std::vector<std::string> timed_kernels_;  // NoteTimedKernel's, since the last collection
};

}  // namespace

Result<std::unique_ptr<Prepared>> PrepareOn(Device& device, const execplan::Plan& plan,
                                            const Feeds& feeds, const RunOptions& options) {
  auto p = std::make_unique<WebGpuPrepared>(plan, device, options);
  SCELLIS_TRY(p->Init(feeds));
  return std::unique_ptr<Prepared>(std::move(p));
}

}  // namespace scellis::runtime::webgpu

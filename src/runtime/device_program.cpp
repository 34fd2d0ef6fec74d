#include "runtime/device_program.h"

#include <algorithm>
#include <map>
#include <optional>
#include <utility>

#include "base/sha256.h"
#include "kernel/emit/wgsl/codegen.h"
#include "kernel/tiling.h"

namespace scellis::runtime {
namespace {

uint64_t RoundUp4(uint64_t bytes) {
  return (bytes + 3) / 4 * 4;
}

const char* RoleName(webir::Role r) {
  switch (r) {
    case webir::Role::kInput:
      return "input";
    case webir::Role::kParam:
      return "param";
    case webir::Role::kConst:
      return "const";
    case webir::Role::kCompute:
      break;
  }
  return "compute";
}

// What a carry's `from` is called: the output it is published as, else its WebIR name.
std::string NodeName(const webir::Graph& g, int node) {
  for (const webir::Output& o : g.outputs)
    if (o.node == node) return o.name;
  return g.at(node).name;
}

class Builder {
 public:
  Builder(const execplan::Plan& plan, const ProgramLimits& limits) : plan_(plan), limits_(limits) {}

  Result<DeviceProgram> Build(const Feeds& feeds) {
    const webir::Graph& g = plan_.graph();
    const RungHeader& h = plan_.header();
    p_.name = h.name;
    p_.content_id = h.content_id;
    p_.tier = policy::TierName(h.tier);
    p_.tolerance = policy::ToleranceName(h.tolerance);
    p_.thresholds = plan_.thresholds;
    p_.limits = limits_;
    p_.repeat = std::max<int64_t>(g.repeat, 1);

    for (const execplan::Buffer& b : plan_.buffers) {
      p_.buffers.push_back(
          {b.id, b.bytes, std::max<uint64_t>(RoundUp4(b.bytes), 4), execplan::MemClassName(b.cls)});
    }

    // Sources: what is there before the first step. Inputs without inline data are not sources:
    // their first value comes with the first step's feeds (fed or carried alike).
    for (const webir::Node& n : g.nodes) {
      if (n.role == webir::Role::kCompute || plan_.buffer_of[n.id] < 0) continue;
      if (n.role == webir::Role::kInput && !n.data) continue;
      SCELLIS_ASSIGN_OR_RETURN(HostTensor data, SourceData(n, feeds));
      p_.sources.push_back(
          {FeedName(n), RoleName(n.role), plan_.buffer_of[n.id], std::move(data.bytes)});
    }
    for (const webir::Node& n : g.nodes) {
      if (n.role != webir::Role::kInput && n.role != webir::Role::kParam) continue;
      if (plan_.buffer_of[n.id] < 0) continue;
      ProgramInput in;
      in.name = FeedName(n);
      in.role = RoleName(n.role);
      in.buffer = plan_.buffer_of[n.id];
      in.shape = n.type.sizes();
      in.dtype = n.type.dtype;
      in.bytes = n.type.bytes();
      in.carried = IsCarried(g, n.id);
      in.fed = n.role == webir::Role::kInput && !n.data && !in.carried;
      in.initial = n.role == webir::Role::kParam || n.data.has_value();
      p_.inputs.push_back(std::move(in));
    }

    const int hoisted = plan_.module().HoistedKernels();
    for (size_t s = 0; s < plan_.steps.size(); ++s) {
      SCELLIS_TRY(AddStep(static_cast<int>(s)));
      if (static_cast<int>(s) + 1 == hoisted)
        p_.hoisted_dispatches = static_cast<int64_t>(p_.dispatches.size());
    }

    for (const webir::Carry& c : g.carries) {
      p_.carries.push_back({NodeName(g, c.from), plan_.buffer_of[c.from], FeedName(g.at(c.to)),
                            plan_.buffer_of[c.to]});
    }
    for (const webir::Output& o : g.outputs) {
      const webir::Node& n = g.at(o.node);
      p_.outputs.push_back({o.name, plan_.buffer_of[o.node], n.type.sizes(), n.type.dtype,
                            n.type.bytes(), WritesIntoHistorySlot(o.node)});
    }
    return std::move(p_);
  }

 private:
  Result<int> PipelineFor(const kernel::Kernel& k, const std::string& wgsl) {
    const std::string& entry = k.Wgsl().entry_point;
    auto key = std::make_pair(entry, wgsl);
    if (auto it = pipeline_of_.find(key); it != pipeline_of_.end()) return it->second;
    int id = static_cast<int>(p_.pipelines.size());
    ProgramPipeline pipeline;
    pipeline.id = id;
    pipeline.kernel = k.name;
    pipeline.entry_point = entry;
    pipeline.wgsl = wgsl;
    pipeline.hash = "sha256:" + Sha256Hex(wgsl);
    if (k.Wgsl().user_first_line > 0 && wgsl == k.Wgsl().source) {
      pipeline.user_op = k.op;
      pipeline.user_first_line = k.Wgsl().user_first_line;
      pipeline.user_lines = k.Wgsl().user_lines;
    }
    p_.pipelines.push_back(std::move(pipeline));
    pipeline_of_.emplace(std::move(key), id);
    return id;
  }

  Status CheckGrid(const kernel::Kernel& k, const std::array<uint32_t, 3>& grid) {
    for (uint32_t n : grid) {
      if (n > limits_.max_compute_workgroups_per_dimension) {
        return InternalError("device-program",
                             k.name + " dispatches " + std::to_string(n) +
                                 " workgroups in one dimension, over the limit of " +
                                 std::to_string(limits_.max_compute_workgroups_per_dimension));
      }
    }
    return Status::Ok();
  }

  // The dispatches of one plan step: the kernel over everything, or — where a buffer it binds is
  // over the storage-binding cap — the kernel in tiles that each bind at most the cap.
  // The plan's verdict already refused kernels that cannot be tiled.
  Status AddStep(int s) {
    const execplan::Step& st = plan_.steps[s];
    const kernel::Kernel& k = plan_.module().kernels[st.kernel];
    if (k.Wgsl().source.empty())
      return InternalError("device-program", "kernel " + k.name + " has no WGSL source");
    const webir::Graph& g = plan_.graph();
    const uint64_t cap = limits_.max_storage_buffer_binding_size;
    bool over = false;
    for (int b : st.Writes()) over |= static_cast<uint64_t>(plan_.buffers[b].bytes) > cap;
    for (int b : st.reads) over |= static_cast<uint64_t>(plan_.buffers[b].bytes) > cap;

    if (!over && k.sum_schedule && k.sum_schedule->TwoStages()) return AddWideSum(s);
    if (!over) {
      ProgramDispatch d;
      d.step = s;
      d.kernel = k.name;
      // A temporally blocked body runs its iterations per dispatch; bound whole, it needs no tiles.
      const kernel::EmittedSource* blocked = k.Source(kernel::kWgslBlockedTarget);
      SCELLIS_ASSIGN_OR_RETURN(d.pipeline,
                               PipelineFor(k, blocked ? blocked->source : k.Wgsl().source));
      if (blocked) p_.iterations_per_dispatch = k.blocking.steps;
      // An output written in place (Kernel::in_place) is written through its input's binding.
      for (int b : st.reads) d.bindings.push_back({b, 0, 0});
      const std::vector<int> writes = st.Writes();
      d.writes = 0;
      for (size_t j = 0; j < writes.size(); ++j) {
        if (k.InPlaceOf(j) >= 0) continue;
        d.bindings.push_back({writes[j], 0, 0});
        ++d.writes;
      }
      d.workgroups = blocked ? k.blocking.workgroups : k.workgroups;
      SCELLIS_TRY(CheckGrid(k, d.workgroups));
      p_.dispatches.push_back(std::move(d));
      return Status::Ok();
    }
    const uint64_t align = std::max<uint32_t>(limits_.min_storage_buffer_offset_alignment, 4);
    if (!kernel::TilesPerElement(k)) return AddTiles(s);
    if (!k.extra_outputs.empty())
      return InternalError("device-program",
                           k.name + " binds a buffer over the cap and cannot be tiled");
    const int64_t per_tile = static_cast<int64_t>(cap / align * align / 4);
    if (per_tile <= 0)
      return InternalError("device-program", "a storage binding cap below one aligned tile");
    const TensorType& out_type = g.at(k.output).type;
    const int64_t total = out_type.elements();
    for (int64_t base = 0; base < total; base += per_tile) {
      const int64_t count = std::min(per_tile, total - base);
      // A tile binds the window [base, base + count) of every operand of the output's shape and
      // the whole of the others (broadcast along it).
      const uint64_t offset = static_cast<uint64_t>(base) * 4;
      const uint64_t window = static_cast<uint64_t>(std::max<int64_t>(count, 1)) * 4;
      kernel::wgsl::Generated gen = kernel::wgsl::PerElementTile(plan_.module(), k, base, count);
      ProgramDispatch d;
      d.step = s;
      d.kernel = k.name;
      SCELLIS_ASSIGN_OR_RETURN(d.pipeline, PipelineFor(k, gen.source));
      for (size_t i = 0; i < st.reads.size(); ++i) {
        bool windowed = g.at(k.inputs[i]).type.SameShape(out_type);
        d.bindings.push_back({st.reads[i], windowed ? offset : 0, windowed ? window : 0});
      }
      d.bindings.push_back({st.write, offset, window});
      d.workgroups = gen.workgroups;
      d.tile_base = base;
      d.tile_count = count;
      SCELLIS_TRY(CheckGrid(k, d.workgroups));
      p_.dispatches.push_back(std::move(d));
    }
    return Status::Ok();
  }

  // A wide sum (kernel::SumSchedule) of several chunks per row: the first dispatch sums each chunk
  // into the scratch, the second each row's chunks' partial sums into the output. Within one
  // compute pass the second dispatch sees what the first wrote.
  Status AddWideSum(int s) {
    const execplan::Step& st = plan_.steps[s];
    const kernel::Kernel& k = plan_.module().kernels[st.kernel];
    const kernel::EmittedSource* finish = k.Source(kernel::kWgslSumFinishTarget);
    if (!finish || st.reads.size() != 1)
      return InternalError("device-program", k.name + " sums wide without its second kernel");
    const int scratch = ScratchBuffer(k.sum_schedule->Partials() * 4);
    ProgramDispatch chunks;
    chunks.step = s;
    chunks.kernel = k.name;
    SCELLIS_ASSIGN_OR_RETURN(chunks.pipeline, PipelineFor(k, k.Wgsl().source));
    chunks.bindings = {{st.reads[0], 0, 0}, {scratch, 0, 0}};
    chunks.workgroups = k.workgroups;
    SCELLIS_TRY(CheckGrid(k, chunks.workgroups));
    p_.dispatches.push_back(std::move(chunks));
    ProgramDispatch total;
    total.step = s;
    total.kernel = k.name;
    SCELLIS_ASSIGN_OR_RETURN(total.pipeline, PipelineFor(k, finish->source));
    total.bindings = {{scratch, 0, 0}, {st.write, 0, 0}};
    total.workgroups = k.sum_schedule->FinishWorkgroups();
    SCELLIS_TRY(CheckGrid(k, total.workgroups));
    p_.dispatches.push_back(std::move(total));
    return Status::Ok();
  }

  // A kernel with a buffer over the cap, in the tiles kernel::PlanTiles cuts it into (the plan's
  // verdict printed the same tiling): each tile binds, of every operand, the window from the
  // aligned element at or below the first it touches to one past the last, so neighbouring tiles'
  // windows may overlap (each writes only its own elements). Tiles along depth run in increasing
  // depth, those after the first marked `continues`: they add to the partial sums stored before.
  Status AddTiles(int s) {
    const execplan::Step& st = plan_.steps[s];
    const kernel::Kernel& k = plan_.module().kernels[st.kernel];
    std::optional<kernel::Tiling> tiling =
        kernel::PlanTiles(plan_.module(), k, limits_.max_storage_buffer_binding_size);
    if (!tiling) return InternalError("device-program", k.name + " cannot be tiled under the cap");
    std::vector<int> buffers = st.reads;
    const std::vector<int> writes = st.Writes();
    buffers.insert(buffers.end(), writes.begin(), writes.end());
    if (buffers.size() != tiling->space.layouts.size())
      return InternalError("device-program", k.name + " binds other buffers than its tiles");
    const int64_t align_elements = static_cast<int64_t>(kernel::kTileAlignment / 4);
    for (const kernel::Tile& t : tiling->tiles) {
      std::vector<ProgramBinding> bindings;
      std::vector<int64_t> window;
      for (size_t b = 0; b < buffers.size(); ++b) {
        auto [first, last] = kernel::TileRange(tiling->space, static_cast<int>(b), t);
        if (first == last) {  // touches nothing (an empty operand): bound whole
          bindings.push_back({buffers[b], 0, 0});
          window.push_back(0);
          continue;
        }
        const int64_t base = first / align_elements * align_elements;
        bindings.push_back(
            {buffers[b], static_cast<uint64_t>(base) * 4, static_cast<uint64_t>(last - base) * 4});
        window.push_back(base);
      }
      // The scratch sits between the inputs and the outputs.
      if (tiling->space.scratch_elements > 0)
        bindings.insert(bindings.begin() + static_cast<std::ptrdiff_t>(st.reads.size()),
                        ProgramBinding{ScratchBuffer(tiling->space.scratch_elements * 4), 0, 0});
      kernel::wgsl::Generated gen = kernel::wgsl::TileSource(plan_.module(), k, *tiling, t, window);
      ProgramDispatch d;
      d.step = s;
      d.kernel = k.name;
      SCELLIS_ASSIGN_OR_RETURN(d.pipeline, PipelineFor(k, gen.source));
      d.bindings = std::move(bindings);
      d.writes = static_cast<int>(writes.size());
      d.workgroups = gen.workgroups;
      auto [out_first, out_last] =
          kernel::TileRange(tiling->space, static_cast<int>(st.reads.size()), t);
      d.tile_base = out_first;
      d.tile_count = out_last - out_first;
      d.continues = t.Continues() && tiling->space.kind != kernel::TileSpace::Kind::kCopy;
      SCELLIS_TRY(CheckGrid(k, d.workgroups));
      p_.dispatches.push_back(std::move(d));
    }
    return Status::Ok();
  }

  // The buffer tiles hand partial results on in beyond their output (a whole-tensor sum's 256
  // lanes): the plan's tile scratch, counted in its memory plan, shared by every tiled kernel (they
  // run one at a time). A program built under a smaller cap than its plan's may tile where the
  // plan did not: then one after the plan's buffers.
  int ScratchBuffer(int64_t bytes) {
    if (scratch_ < 0)
      for (const execplan::Buffer& b : plan_.buffers)
        if (b.tile_scratch) scratch_ = b.id;
    if (scratch_ < 0) {
      scratch_ = static_cast<int>(p_.buffers.size());
      p_.buffers.push_back({scratch_, bytes, static_cast<uint64_t>(bytes), "working"});
    }
    ProgramBuffer& b = p_.buffers[static_cast<size_t>(scratch_)];
    b.bytes = std::max(b.bytes, bytes);
    b.size = std::max<uint64_t>(b.size, RoundUp4(static_cast<uint64_t>(bytes)));
    return scratch_;
  }

  // ProgramOutput::writes_into_history_slot of `node`, once the dispatches and carries are laid
  // out: a kernel's outputs are its dispatch's last `writes` bindings.
  bool WritesIntoHistorySlot(int node) const {
    const int buffer = plan_.buffer_of[node];
    const webir::Node& n = plan_.graph().at(node);
    if (buffer < 0 || n.role != webir::Role::kCompute || n.type.bytes() == 0 ||
        std::count(plan_.buffer_of.begin(), plan_.buffer_of.end(), buffer) != 1)
      return false;
    for (const ProgramCarry& c : p_.carries)
      if (c.from_buffer == buffer || c.to_buffer == buffer) return false;
    bool written = false;
    for (const ProgramDispatch& d : p_.dispatches) {
      for (size_t b = 0; b < d.bindings.size(); ++b) {
        if (d.bindings[b].buffer != buffer) continue;
        if (d.tile_count >= 0) return false;
        written |= b >= d.bindings.size() - static_cast<size_t>(d.writes);
      }
    }
    return written;
  }

  const execplan::Plan& plan_;
  ProgramLimits limits_;
  DeviceProgram p_;
  std::map<std::pair<std::string, std::string>, int> pipeline_of_;
  int scratch_ = -1;
};

}  // namespace

std::string Base64Encode(const std::vector<std::byte>& bytes) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    uint32_t v = (std::to_integer<uint32_t>(bytes[i]) << 16) |
                 (std::to_integer<uint32_t>(bytes[i + 1]) << 8) |
                 std::to_integer<uint32_t>(bytes[i + 2]);
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += kAlphabet[(v >> 6) & 63];
    out += kAlphabet[v & 63];
  }
  const size_t rest = bytes.size() - i;
  if (rest) {
    uint32_t v = std::to_integer<uint32_t>(bytes[i]) << 16;
    if (rest == 2) v |= std::to_integer<uint32_t>(bytes[i + 1]) << 8;
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += rest == 2 ? kAlphabet[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

Result<DeviceProgram> BuildDeviceProgram(const execplan::Plan& plan, const Feeds& feeds,
                                         const ProgramLimits& limits) {
  if (plan.verdict == execplan::Verdict::kRed) {
    if (!plan.findings.empty()) return Status(plan.findings);
    return InternalError("device-program", "asked for the program of a red plan");
  }
  SCELLIS_TRY(ValidateFeeds(plan.graph(), feeds));
  return Builder(plan, limits).Build(feeds);
}

Json ToJson(const DeviceProgram& p) {
  Json buffers = Json::array();
  for (const ProgramBuffer& b : p.buffers)
    buffers.push_back({{"id", b.id}, {"bytes", b.bytes}, {"size", b.size}, {"class", b.cls}});
  Json sources = Json::array();
  for (const ProgramSource& s : p.sources) {
    sources.push_back({{"name", s.name},
                       {"role", s.role},
                       {"buffer", s.buffer},
                       {"bytes", s.data.size()},
                       {"data", Base64Encode(s.data)}});
  }
  Json inputs = Json::array();
  for (const ProgramInput& in : p.inputs) {
    inputs.push_back({{"name", in.name},
                      {"role", in.role},
                      {"buffer", in.buffer},
                      {"shape", in.shape},
                      {"dtype", DTypeName(in.dtype)},
                      {"bytes", in.bytes},
                      {"fed", in.fed},
                      {"carried", in.carried},
                      {"initial", in.initial}});
  }
  Json pipelines = Json::array();
  for (const ProgramPipeline& pl : p.pipelines) {
    pipelines.push_back({{"id", pl.id},
                         {"kernel", pl.kernel},
                         {"entry_point", pl.entry_point},
                         {"wgsl", pl.wgsl},
                         {"hash", pl.hash}});
  }
  Json dispatches = Json::array();
  for (const ProgramDispatch& d : p.dispatches) {
    Json bindings = Json::array();
    for (const ProgramBinding& b : d.bindings)
      bindings.push_back({{"buffer", b.buffer}, {"offset", b.offset}, {"size", b.size}});
    Json jd = {{"step", d.step},
               {"kernel", d.kernel},
               {"pipeline", d.pipeline},
               {"bindings", bindings},
               {"workgroups", d.workgroups}};
    if (d.tile_count >= 0) {
      jd["tile"] = {{"base", d.tile_base}, {"count", d.tile_count}};
      if (d.continues) jd["tile"]["continues"] = true;
    }
    if (d.writes != 1) jd["writes"] = d.writes;
    dispatches.push_back(std::move(jd));
  }
  Json outputs = Json::array();
  for (const ProgramOutput& o : p.outputs) {
    outputs.push_back({{"name", o.name},
                       {"buffer", o.buffer},
                       {"shape", o.shape},
                       {"dtype", DTypeName(o.dtype)},
                       {"bytes", o.bytes},
                       {"writes_into_history_slot", o.writes_into_history_slot}});
  }
  Json carries = Json::array();
  for (const ProgramCarry& c : p.carries) {
    carries.push_back({{"from", c.from},
                       {"from_buffer", c.from_buffer},
                       {"to", c.to},
                       {"to_buffer", c.to_buffer}});
  }
  return {
      {"format", kDeviceProgramFormat},
      {"name", p.name},
      {"content_id", p.content_id},
      {"tier", p.tier},
      {"tolerance",
       {{"class", p.tolerance}, {"atol", p.thresholds.atol}, {"rtol", p.thresholds.rtol}}},
      {"limits",
       {{"max_storage_buffer_binding_size", p.limits.max_storage_buffer_binding_size},
        {"min_storage_buffer_offset_alignment", p.limits.min_storage_buffer_offset_alignment},
        {"max_compute_workgroups_per_dimension", p.limits.max_compute_workgroups_per_dimension}}},
      {"max_steps_per_submission", p.max_steps_per_submission},
      {"repeat", p.repeat},
      {"iterations_per_dispatch", p.iterations_per_dispatch},
      {"hoisted_dispatches", p.hoisted_dispatches},
      {"buffers", buffers},
      {"sources", sources},
      {"inputs", inputs},
      {"pipelines", pipelines},
      {"dispatches", dispatches},
      {"outputs", outputs},
      {"carries", carries}};
}

}  // namespace scellis::runtime

// Running a streamed document chunk by chunk (api/stream.h).
#include <cstring>

#include "api/stream.h"

namespace scellis::api {
namespace {

TensorType WithRows(TensorType t, int64_t rows) {
  t.dims[0].size = rows;
  return t;
}

// All N rows of the streamed input: fed by the caller, or the document's inline data.
Result<runtime::HostTensor> WholeInput(const StreamSpec& spec, const pipeline::Compiled& c,
                                       const runtime::Feeds& feeds) {
  auto fed = feeds.find(spec.input_name);
  if (fed != feeds.end()) {
    if (fed->second.type.sizes() != spec.input_type.sizes() ||
        fed->second.type.dtype != spec.input_type.dtype)
      return UserError("feed-type-mismatch", spec.pointer,
                       "the streamed input \"" + spec.input_name + "\" is fed " +
                           fed->second.type.ShapeStringWithSizes() + ", the document declares " +
                           spec.input_type.ShapeStringWithSizes());
    return fed->second;
  }
  if (c.program)
    for (const block::Block& b : c.program->blocks)
      if (b.pointer == spec.pointer && b.data)
        return runtime::HostTensor::FromValues(spec.input_type, *b.data);
  return UserError("missing-feed", spec.pointer,
                   "the streamed input \"" + spec.input_name + "\" has no data and is not fed");
}

// Rows [first, first + count) of `whole`.
runtime::HostTensor Rows(const runtime::HostTensor& whole, int64_t row_bytes, int64_t first,
                         int64_t count) {
  runtime::HostTensor t;
  t.type = WithRows(whole.type, count);
  t.bytes.assign(whole.bytes.begin() + first * row_bytes,
                 whole.bytes.begin() + (first + count) * row_bytes);
  return t;
}

// One output as the chunks build it up.
struct Assembly {
  std::vector<std::byte> rows;  // kRows: the chunks' bytes, in order
  std::vector<float> partial;   // k*OverRows: the running sum of each column
  std::optional<runtime::HostTensor> fixed;
};

// Adds a chunk's rows to the running column sums in the CPU reference's order for a sum over
// axis 0 (kernel/ref/reduce.cpp): each column's f32 sum starts at 0 and takes the rows one after
// another, so carrying it from chunk to chunk makes the same additions as one pass over N rows.
void AddRows(const runtime::HostTensor& chunk, std::vector<float>& partial) {
  std::span<const float> x = chunk.view<float>();
  const size_t inner = partial.size();
  for (size_t j = 0; j * inner < x.size(); ++j)
    for (size_t o = 0; o < inner; ++o) partial[o] += x[j * inner + o];
}

}  // namespace

Status RunStreamed(runtime::Executor& exec, const Streaming& s, const pipeline::Compiled& c,
                   const pipeline::CompileOptions& options, const runtime::Feeds& feeds,
                   const runtime::RunOptions& run_options, const RunEvents& events,
                   RunReport& report) {
  const StreamSpec& spec = s.spec;
  SCELLIS_ASSIGN_OR_RETURN(runtime::HostTensor whole, WholeInput(spec, c, feeds));
  // A shorter last chunk gets a plan of its own, made for its row count, rather than padding:
  // padded rows would be computed and dropped, and a padded sum would need masking.
  std::optional<pipeline::Compiled> last;
  if (s.last_chunk_rows != s.chunk_rows) {
    pipeline::CompileOptions o = options;
    o.up_to = pipeline::Rung::kExecplan;
    o.print_after.clear();
    o.lower.bind[spec.dim] = s.last_chunk_rows;
    SCELLIS_ASSIGN_OR_RETURN(pipeline::Compiled lc, pipeline::Compile(spec.chunk_text, o));
    // Fewer rows never take more memory than the chunk that fits: a red plan here is our bug.
    if (lc.plan->verdict == execplan::Verdict::kRed)
      return InternalError(
          "stream", "the last chunk of " + std::to_string(s.last_chunk_rows) + " rows plans red");
    last = std::move(lc);
  }
  std::vector<Assembly> built(spec.outputs.size());
  for (size_t i = 0; i < spec.outputs.size(); ++i) {
    const auto& out = spec.outputs[i];
    if (out.kind == StreamedOutput::kSumOverRows || out.kind == StreamedOutput::kMeanOverRows)
      built[i].partial.assign(static_cast<size_t>(out.type.elements()), 0.0f);
  }
  int64_t readback = 0;
  Json counters = Json::object();
  for (int64_t k = 0; k < s.chunks; ++k) {
    const int64_t first = k * s.chunk_rows;
    const bool is_last = k == s.chunks - 1;
    const int64_t count = is_last ? s.last_chunk_rows : s.chunk_rows;
    const execplan::Plan& plan = is_last && last ? *last->plan : *c.plan;
    runtime::Feeds chunk_feeds = feeds;
    chunk_feeds[spec.input_name] = Rows(whole, spec.row_bytes, first, count);
    SCELLIS_ASSIGN_OR_RETURN(runtime::RunResult r, exec.Run(plan, chunk_feeds, run_options));
    // The backend's counters add up over the chunks; its settings (threads) are the same each time.
    for (const auto& [key, value] : r.stats.items()) {
      if (key == "threads" || key == "iterations_per_dispatch" || !value.is_number_integer())
        counters[key] = value;
      else
        counters[key] = counters.value(key, int64_t{0}) + value.get<int64_t>();
    }
    report.executor = r.executor;
    for (size_t i = 0; i < spec.outputs.size(); ++i) {
      auto got = std::find_if(r.outputs.begin(), r.outputs.end(),
                              [&](const auto& o) { return o.first == spec.outputs[i].name; });
      if (got == r.outputs.end())
        return InternalError("stream", "a chunk gave no output " + spec.outputs[i].name);
      const runtime::HostTensor& t =
          spec.outputs[i].of_input ? chunk_feeds[spec.input_name] : got->second;
      readback += got->second.type.bytes();
      Assembly& a = built[i];
      switch (spec.outputs[i].kind) {
        case StreamedOutput::kRows:
          a.rows.insert(a.rows.end(), t.bytes.begin(), t.bytes.end());
          break;
        case StreamedOutput::kSumOverRows:
        case StreamedOutput::kMeanOverRows:
          AddRows(t, a.partial);
          break;
        case StreamedOutput::kFixed:
          if (!a.fixed) a.fixed = t;
          break;
      }
    }
    if (events.stream_progress) events.stream_progress(first + count, spec.rows);
    if (!is_last && events.cancelled && events.cancelled())
      return UserError("cancelled", "",
                       "the run was cancelled after " + std::to_string(first + count) + " of " +
                           std::to_string(spec.rows) + " rows");
  }
  for (size_t i = 0; i < spec.outputs.size(); ++i) {
    const auto& out = spec.outputs[i];
    Assembly& a = built[i];
    runtime::HostTensor t;
    t.type = out.type;
    switch (out.kind) {
      case StreamedOutput::kRows:
        t.bytes = std::move(a.rows);
        break;
      case StreamedOutput::kMeanOverRows:
        // The reference divides the finished sum by the axis' length, once.
        for (float& v : a.partial) v = v / static_cast<float>(spec.rows);
        [[fallthrough]];
      case StreamedOutput::kSumOverRows:
        t = runtime::HostTensor::FromFloats(out.type, a.partial);
        break;
      case StreamedOutput::kFixed:
        t = std::move(*a.fixed);
        break;
    }
    report.outputs.emplace_back(out.name, std::move(t));
  }
  report.streaming = {{"input", spec.input_name},
                      {"rows", spec.rows},
                      {"chunk_rows", s.chunk_rows},
                      {"chunks", s.chunks},
                      {"last_chunk_rows", s.last_chunk_rows},
                      {"plans", last ? 2 : 1}};
  report.stats = counters;
  report.stats.update(Json{{"steps", 1},
                           {"submissions", s.chunks},
                           {"streamed_chunks", s.chunks},
                           {"memory_allocated_bytes", c.plan->memory.allocated},
                           {"readback_bytes", readback}});
  return Status::Ok();
}

}  // namespace scellis::api

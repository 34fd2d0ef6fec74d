// Which documents stream, and in what chunks: the analysis of a streamed input's uses and the
// search for the largest chunk of rows that fits (api/stream.h).
#include <algorithm>

#include "api/fit_batch.h"
#include "api/stream.h"

namespace scellis::api {
namespace {

// What a WebIR value is, seen from the streamed input.
enum class RowState {
  kFixed,    // does not depend on the streamed rows
  kRows,     // its first axis is the streamed rows, each row computed from the same row alone
  kReduced,  // a sum or mean over the streamed rows (an output; nothing may read it)
};

Diagnostic Unsupported(const webir::Node& n, const std::string& why, std::string help = "") {
  return UserError("stream-unsupported", n.origin,
                   n.Describe() + " cannot run in chunks of the streamed rows: " + why,
                   help.empty() ? "take \"stream\": true off the input, or compute this from the "
                                  "whole input in another document"
                                : std::move(help));
}

bool MentionsDim(const TensorType& t, const std::string& dim) {
  return std::any_of(t.dims.begin(), t.dims.end(), [&](const Dim& d) { return d.symbol == dim; });
}

// The state of compute node `n` from its arguments' states; a refusal names the node.
Result<RowState> StateOf(const webir::Graph& g, const webir::Node& n,
                         const std::vector<RowState>& state, int64_t rows, const std::string& dim) {
  bool any_rows = false;
  for (int a : n.args) {
    if (state[a] == RowState::kReduced)
      return Status(Unsupported(n, "it reads " + g.at(a).Describe() +
                                       ", a reduction over the streamed rows, which is known "
                                       "only once every chunk has run"));
    any_rows = any_rows || state[a] == RowState::kRows;
  }
  if (!any_rows) {
    if (MentionsDim(n.type, dim))
      return Status(Unsupported(n, "its shape is sized by " + dim +
                                       " but it does not read the "
                                       "streamed input row by row"));
    return RowState::kFixed;
  }
  const ops::OpSpec* spec = g.ops->Find(n.op);
  const ops::OpKind kind = spec ? spec->kind : ops::OpKind::kUser;
  const int rank = n.type.rank();
  const bool rows_first = rank >= 1 && n.type.dims[0].size == rows;
  switch (kind) {
    case ops::OpKind::kElementwise: {
      // A fixed operand broadcasts along the rows only when it has no axis of its own there.
      for (int a : n.args) {
        const TensorType& t = g.at(a).type;
        const bool ok = state[a] == RowState::kRows
                            ? t.rank() == rank && t.dims[0].size == rows
                            : t.rank() < rank || (t.rank() >= 1 && t.dims[0].size == 1);
        if (!ok || !rows_first)
          return Status(Unsupported(n, "its operands do not line up row for row"));
      }
      return RowState::kRows;
    }
    case ops::OpKind::kMatmul:
      if (n.args.size() == 2 && state[n.args[0]] == RowState::kRows &&
          state[n.args[1]] == RowState::kFixed && g.at(n.args[0]).type.rank() >= 2 &&
          g.at(n.args[1]).type.rank() == 2 && rows_first)
        return RowState::kRows;
      return Status(Unsupported(n,
                                "the matmul contracts over or mixes the streamed rows; only "
                                "rows times a fixed matrix streams"));
    case ops::OpKind::kReduce: {
      const Json& axis = n.attrs.contains("axis") ? n.attrs["axis"] : Json();
      if (axis.is_null())
        return Status(Unsupported(
            n,
            "it reduces every element, which the CPU reference sums as a fixed two-level "
            "tree that chunks cannot reproduce bit for bit",
            "reduce over an axis (\"axis\": 0 sums over the rows in order)"));
      if (axis.get<int>() != 0) return RowState::kRows;
      if (n.type.dtype != DType::kF32 || g.at(n.args[0]).type.dtype != DType::kF32)
        return Status(Unsupported(n,
                                  "only an f32 sum or mean over the rows is carried across "
                                  "chunks"));
      return RowState::kReduced;
    }
    case ops::OpKind::kNormalize:
      // softmax and log_softmax normalize over the last axis: another one than the rows.
      if ((n.op == "softmax" || n.op == "log_softmax") && rank >= 2 && rows_first)
        return RowState::kRows;
      return Status(Unsupported(n, "it normalizes across the streamed rows"));
    default:
      return Status(Unsupported(n, n.op + " is not known to compute row by row"));
  }
}

const doc::Node* DocNodeAt(const doc::Document& d, const std::string& pointer) {
  for (const doc::Node& n : d.nodes)
    if (n.pointer == pointer) return &n;
  return nullptr;
}

// The chunk document: the streamed input's data removed, and every output over the rows naming
// the node whose rows it sums (`redirect`: output name -> the source's document id).
Result<std::string> ChunkText(std::string_view text, const std::string& input_pointer,
                              const doc::Document& d,
                              const std::vector<std::pair<std::string, std::string>>& redirect) {
  Json root = Json::parse(text, nullptr, false);
  if (root.is_discarded()) return InternalError("stream", "the document no longer parses");
  Json& node = root[Json::json_pointer(input_pointer)];
  if (node.contains("params") && node["params"].is_object())
    node["params"].erase("data");
  else
    node.erase("data");
  for (const auto& entry : redirect) {
    // Named copies: a lambda may not capture a structured binding before C++20 (Emscripten's
    // clang refuses it).
    const std::string& name = entry.first;
    const std::string& source = entry.second;
    auto out = std::find_if(d.outputs.begin(), d.outputs.end(),
                            [&](const doc::Output& o) { return o.name == name; });
    if (out == d.outputs.end()) return InternalError("stream", "no output named " + name);
    Json& o = root[Json::json_pointer(out->pointer)];
    const char* key = o.contains("from") ? "from" : "id";
    o[key] = o[key].is_number() ? Json(std::stoll(source)) : Json(source);
  }
  return root.dump();
}

}  // namespace

Result<std::optional<StreamSpec>> AnalyzeStream(std::string_view text,
                                                const pipeline::Compiled& c) {
  std::vector<const doc::Node*> declared;
  for (const doc::Node& n : c.doc.nodes)
    if (n.op == "input" && n.params.is_object() && n.params.contains("stream") &&
        n.params["stream"] == true)
      declared.push_back(&n);
  if (declared.empty() || !c.graph) return std::optional<StreamSpec>();
  if (declared.size() > 1)
    return UserError("stream-unsupported", declared[1]->pointer,
                     "a document streams one input; " + declared[0]->Describe() + " and " +
                         declared[1]->Describe() + " are both declared \"stream\": true");
  const webir::Graph& g = *c.graph;
  StreamSpec spec;
  spec.pointer = declared[0]->pointer;
  for (const webir::Node& n : g.nodes)
    if (n.role == webir::Role::kInput && n.origin == spec.pointer) spec.input_node = n.id;
  if (spec.input_node < 0) return InternalError("stream", "the streamed input has no WebIR node");
  const webir::Node& input = g.at(spec.input_node);
  if ((c.program && c.program->train) || g.repeat > 1 || !g.carries.empty())
    return Status(Unsupported(input,
                              "a training step, a repeat or a carried value runs over "
                              "the whole input every step",
                              "stream inputs of one-pass documents"));
  if (input.type.rank() < 1 || input.type.dims[0].symbol.empty() || IsBlockDType(input.type.dtype))
    return Status(
        Unsupported(input, "its rows are not a named dimension",
                    "name the rows: \"shape\": [\"N\", ...] with \"dims\": {\"N\": ...}"));
  spec.input_name = runtime::FeedName(input);
  spec.input_type = input.type;
  spec.dim = input.type.dims[0].symbol;
  spec.rows = input.type.dims[0].size;
  if (spec.rows < 1) return Status(Unsupported(input, "it has no rows"));
  spec.row_bytes = input.type.bytes() / spec.rows;

  std::vector<RowState> state(g.nodes.size(), RowState::kFixed);
  for (const webir::Node& n : g.nodes) {
    if (n.id == spec.input_node) {
      state[n.id] = RowState::kRows;
    } else if (n.role != webir::Role::kCompute) {
      if (MentionsDim(n.type, spec.dim))
        return Status(Unsupported(n, "it is sized by " + spec.dim +
                                         " but is not the streamed "
                                         "input, so a chunk would not hold its rows"));
    } else {
      SCELLIS_ASSIGN_OR_RETURN(state[n.id], StateOf(g, n, state, spec.rows, spec.dim));
    }
  }
  std::vector<std::pair<std::string, std::string>> redirect;
  for (const webir::Output& o : g.outputs) {
    const webir::Node& n = g.at(o.node);
    StreamedOutput kind = state[n.id] == RowState::kRows    ? StreamedOutput::kRows
                          : state[n.id] == RowState::kFixed ? StreamedOutput::kFixed
                          : n.op == "mean"                  ? StreamedOutput::kMeanOverRows
                                                            : StreamedOutput::kSumOverRows;
    // The streamed input itself, or a reduction of it: the host holds each chunk's rows already.
    const bool of_input = n.id == spec.input_node ||
                          (state[n.id] == RowState::kReduced && n.args[0] == spec.input_node);
    if (state[n.id] == RowState::kReduced && !of_input) {
      // The chunk document outputs the rows the reduction reads; the host carries the sum.
      const doc::Node* reduce = DocNodeAt(c.doc, n.origin);
      if (!reduce || reduce->inputs.size() != 1)
        return Status(Unsupported(n, "its rows cannot be named in the document"));
      redirect.emplace_back(o.name, reduce->inputs[0].source);
    }
    spec.outputs.push_back({o.name, kind, n.type, of_input});
  }
  SCELLIS_ASSIGN_OR_RETURN(spec.chunk_text, ChunkText(text, spec.pointer, c.doc, redirect));
  return std::optional<StreamSpec>(std::move(spec));
}

Result<std::optional<Streaming>> PlanStreaming(std::string_view text,
                                               const pipeline::CompileOptions& options,
                                               pipeline::Compiled& c) {
  SCELLIS_ASSIGN_OR_RETURN(std::optional<StreamSpec> spec, AnalyzeStream(text, c));
  if (!spec || !c.plan || c.plan->verdict != execplan::Verdict::kRed)
    return std::optional<Streaming>();
  // Fewer rows answer a memory refusal only; any other refusal stands as it is.
  const auto& findings = c.plan->findings;
  const bool memory = std::any_of(findings.begin(), findings.end(), [](const Diagnostic& d) {
    return d.severity == Severity::kError && d.code.rfind("memory-over-", 0) == 0;
  });
  const bool other = std::any_of(findings.begin(), findings.end(), [](const Diagnostic& d) {
    return d.severity == Severity::kError && d.code.rfind("memory-over-", 0) != 0;
  });
  if (!memory || other) return std::optional<Streaming>();
  // Each candidate row count is a real plan of the chunk document, as the batch search makes.
  SCELLIS_ASSIGN_OR_RETURN(execplan::BatchFit fit,
                           LargestBatchThatFits(spec->chunk_text, options, spec->dim, spec->rows));
  const int64_t whole_allocated = c.plan->memory.allocated;
  if (fit.largest == 0) {
    c.plan->findings.push_back(UserError(
        "stream-row-too-large", spec->pointer,
        "the input \"" + spec->input_name + "\" is streamed, but even a chunk of one row plans red",
        "raise the budget, or make a row smaller"));
    return std::optional<Streaming>();
  }
  Streaming s;
  s.chunk_rows = fit.largest_green > 0 ? fit.largest_green : fit.largest;
  s.chunks = (spec->rows + s.chunk_rows - 1) / s.chunk_rows;
  s.last_chunk_rows = spec->rows - (s.chunks - 1) * s.chunk_rows;
  pipeline::CompileOptions o = options;
  o.up_to = pipeline::Rung::kExecplan;
  o.print_after.clear();
  o.lower.bind[spec->dim] = s.chunk_rows;
  SCELLIS_ASSIGN_OR_RETURN(pipeline::Compiled chunk, pipeline::Compile(spec->chunk_text, o));
  c.graph = chunk.graph;
  c.module = chunk.module;
  c.plan = std::move(chunk.plan);
  execplan::Plan& plan = *c.plan;
  execplan::StreamFit f;
  f.input = spec->input_name;
  f.dim = spec->dim;
  f.rows = spec->rows;
  f.bytes = spec->input_type.bytes();
  f.chunk_rows = s.chunk_rows;
  f.chunks = s.chunks;
  f.last_chunk_rows = s.last_chunk_rows;
  f.whole_allocated = whole_allocated;
  f.plans = fit.plans;
  for (const auto& out : spec->outputs)
    if (out.kind == StreamedOutput::kSumOverRows || out.kind == StreamedOutput::kMeanOverRows)
      f.reduced_outputs.push_back(out.name);
  plan.stream = f;
  if (plan.verdict == execplan::Verdict::kGreen) plan.verdict = execplan::Verdict::kYellow;
  plan.findings.insert(
      plan.findings.begin(),
      Warning("streamed-input", spec->pointer,
              "input \"" + spec->input_name + "\" (" + std::to_string(spec->rows) + " rows, " +
                  execplan::FormatBytes(f.bytes) + ") is streamed in chunks of " +
                  std::to_string(s.chunk_rows) + " rows, " + std::to_string(s.chunks) +
                  " chunks: all rows at once would allocate " +
                  execplan::FormatBytes(whole_allocated) + ", over the budget of " +
                  execplan::FormatBytes(plan.memory.budget),
              "a larger budget runs it in one piece"));
  s.spec = std::move(*spec);
  return std::optional<Streaming>(std::move(s));
}

}  // namespace scellis::api

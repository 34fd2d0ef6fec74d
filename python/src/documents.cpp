// A document at a time: a one-shot run (api::Run, recorded as `scellis run` records it), its
// lowered rungs, its content id, and one node typed by the engine as a front end adds it.
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "api/run.h"
#include "doc/document.h"
#include "doc/traced_document.h"
#include "execplan/plan.h"
#include "module_support.h"
#include "ops/op_table.h"
#include "pipeline/compile.h"
#include "webir/type_node.h"

namespace nb = nanobind;

namespace scellis::python {
namespace {

// ---- one-shot runs, lowering ----

nb::dict RunDocument(const std::string& text, const std::string& backend,
                     const std::optional<std::string>& tier, bool allow_software_adapter,
                     int cpu_threads, const nb::dict& feeds,
                     const std::optional<std::string>& executor, const nb::list& user_ops,
                     bool record) {
  api::RunOptions options;
  options.compile = CompileOptionsFor(tier);
  if (auto table = TableOf(user_ops)) options.compile.lower.ops = table;
  options.select = SelectFor(backend, allow_software_adapter, cpu_threads);
  options.feeds = ToFeeds(feeds);
  // A pinned executor the backend lacks is the engine's `executor-unavailable`.
  if (executor) options.executor = *executor;
  std::optional<Result<api::RunReport>> result;
  {
    nb::gil_scoped_release unlocked;
    result.emplace(api::Run(text, options));
  }
  api::RunReport report = Take(std::move(*result));
  nb::dict out;
  // Recorded before the outputs move into NumPy arrays: the record digests them.
  out["run_id"] = RecordRunOf(record, text, options, report);
  out["backend"] = report.backend;
  out["executor"] = report.executor;
  out["fallback_reason"] = Optional(report.fallback_reason);
  out["attempts"] = report.attempts;
  out["determinism_tier"] = report.determinism_tier;
  out["content_id"] = report.content_id;
  nb::dict outputs;
  for (auto& [name, t] : report.outputs) outputs[name.c_str()] = ToNumpy(std::move(t));
  out["outputs"] = outputs;
  out["stats"] = JsonToPython(report.stats);
  // Which kernels hold conformance receipts on this device (WebGPU runs only), as the CLI's line.
  out["receipts"] = report.receipts ? JsonToPython(report.receipts->ToJson()) : nb::none();
  return out;
}

// The printed rung (or its JSON) of a document, as `scellis lower --to=RUNG` / `scellis plan`.
std::string LowerDocument(const std::string& text, const std::string& rung,
                          const std::optional<std::string>& tier, bool json) {
  std::optional<pipeline::Rung> r = pipeline::ParseRung(rung);
  if (!r) {
    throw EngineError({UserError(
        "bad-rung", "",
        "the rung is \"" + rung + "\", expected doc, block, webir, kernel or execplan")});
  }
  pipeline::CompileOptions o = CompileOptionsFor(tier);
  o.up_to = *r;
  std::optional<Result<pipeline::Compiled>> c;
  {
    nb::gil_scoped_release unlocked;
    c.emplace(pipeline::Compile(text, o));
  }
  pipeline::Compiled compiled = Take(std::move(*c));
  if (*r == pipeline::Rung::kExecplan) {
    return json ? execplan::ToJson(*compiled.plan).dump(2) : execplan::Print(*compiled.plan);
  }
  return json ? pipeline::RungJson(compiled, *r).dump(2) : pipeline::PrintRung(compiled, *r);
}

// The content id the engine gives a document (sha256 of its canonical form): what a front end
// caches compiled work by.
std::string DocumentContentId(const std::string& text) {
  return Take(doc::Parse(text)).content_id;
}

// ---- one node, typed by the engine ----

// A (shape, dtype name) pair as the engine's type; a dtype it does not know is `bad-dtype`.
TensorType TypeOfPair(const nb::handle& pair) {
  auto [shape, dtype] = nb::cast<std::pair<std::vector<int64_t>, std::string>>(pair);
  std::optional<DType> parsed = ParseDType(dtype);
  if (!parsed) {
    throw EngineError(
        {UserError("bad-dtype", "", "the dtype \"" + dtype + "\" is not one the engine stores",
                   "use " + DTypeChoices())});
  }
  return MakeType(shape, *parsed);
}

// One op node of the graph protocol typed by the engine (webir::InferNode), as a front end adds
// it: `node` its fields but the ports (id, op and attributes; JSON text), `inputs` {port: (shape,
// dtype)} with a list port's entries as a list, `pointer` the node's place in the document, and
// `user_ops` the user ops the graph uses. Returns ((shape, dtype), lowest protocol version); a
// refused node raises the engine's diagnostic.
nb::tuple InferNodeType(const std::string& node, const nb::dict& inputs, const std::string& pointer,
                        const nb::list& user_ops) {
  Json fields = Json::parse(node);
  webir::OpNode n;
  n.op = fields.value("op", "");
  n.where = n.op + " #" + fields.value("id", Json()).dump();  // as a document names it
  fields.erase("op");
  fields.erase("id");
  n.params = std::move(fields);
  n.pointer = pointer;
  for (auto [key, value] : inputs) {
    std::string port = nb::cast<std::string>(key);
    if (!nb::isinstance<nb::list>(value)) {
      n.inputs.push_back({port, TypeOfPair(value)});
      continue;
    }
    if (nb::len(value) == 0) n.empty_lists.push_back(port);
    for (nb::handle entry : nb::cast<nb::list>(value))
      n.inputs.push_back({port, TypeOfPair(entry)});
  }
  std::shared_ptr<const ops::OpTable> table = TableOf(user_ops);
  webir::NodeTypes t = Take(webir::InferNode(table ? *table : *ops::BuiltinOps(), n));
  nb::list sizes;
  for (int64_t size : t.type.sizes()) sizes.append(size);
  nb::tuple shape = nb::steal<nb::tuple>(PyList_AsTuple(sizes.ptr()));
  return nb::make_tuple(nb::make_tuple(shape, DTypeName(t.type.dtype)), t.min_version);
}

// A finished trace made into its document (doc::TracedDocument, which the browser runtime's
// tracer calls too): `trace` as JSON text, `user_ops` the user ops its nodes use. Returns the
// engine's answer as JSON text ({doc, repeat, fed, state, prologue}); a malformed trace raises the
// engine's diagnostic.
std::string TracedDocumentJson(const std::string& trace, const nb::list& user_ops) {
  Json parsed = Take(ParseUntrustedJson(trace));
  std::shared_ptr<const ops::OpTable> table = TableOf(user_ops);
  return Take(doc::TracedDocument(parsed, table ? *table : *ops::BuiltinOps())).dump();
}

}  // namespace

void BindDocuments(nb::module_& m) {
  m.def("run", &RunDocument, nb::arg("text"), nb::arg("backend"), nb::arg("tier").none(),
        nb::arg("allow_software_adapter"), nb::arg("cpu_threads"), nb::arg("feeds"),
        nb::arg("executor").none() = nb::none(), nb::arg("user_ops") = nb::list(),
        nb::arg("record") = true,
        "Runs a document once (api::Run); returns the report with NumPy outputs and the run "
        "record's id (`run_id`, None when not recorded). `executor` pins one of the backend's "
        "executors (\"fused-encoder\" | \"generic\" on WebGPU).");
  m.def("lower", &LowerDocument, nb::arg("text"), nb::arg("rung"), nb::arg("tier").none(),
        nb::arg("json"), "A document's rung, printed or as JSON.");
  m.def("content_id", &DocumentContentId, nb::arg("text"),
        "A document's content id (sha256 of its canonical form).");
  m.def("infer_node", &InferNodeType, nb::arg("node"), nb::arg("inputs"), nb::arg("pointer"),
        nb::arg("user_ops") = nb::list(),
        "One node's output type and lowest protocol version (webir::InferNode): ((shape, dtype), "
        "version); a refused node raises the engine's diagnostic.");
  m.def("traced_document", &TracedDocumentJson, nb::arg("trace"), nb::arg("user_ops") = nb::list(),
        "A finished trace's document (doc::TracedDocument) as JSON text: {doc, repeat, fed, "
        "state, prologue}.");
}

}  // namespace scellis::python

// `_scellis`: the engine API for the Python package (python/scellis). Like the command line, it
// parses, calls the engine and converts: documents arrive as graph-protocol JSON text, arrays as
// CPU buffers whose bytes are copied once into host tensors (no per-element Python work), and
// results leave as NumPy arrays that own the engine's bytes. Every check of a document, a feed or
// a session is the engine's (api::Run, api::Session, pipeline::Compile); this module only names
// what it cannot convert (an array dtype without engine storage, an unknown tier or rung name). A
// failure raises the package's ScellisError with the diagnostics. The GIL is released while the
// engine works, so a run on a worker thread does not stall the interpreter. This file holds the
// error translation and the module itself; its parts register their own functions: documents.cpp
// (one-shot runs, lowering, node types), user_ops.cpp, sessions.cpp and records.cpp (run records),
// all over arrays.cpp and options.cpp.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <exception>
#include <optional>
#include <string>

#include "api/run.h"
#include "base/diagnostic_json.h"
#include "base/host_heap.h"
#include "data/dataset.h"
#include "doc/document.h"
#include "module_support.h"
#include "ops/op_table.h"

namespace nb = nanobind;

namespace scellis::python {
namespace {

void TranslateEngineError(const std::exception_ptr& p, void*) {
  try {
    std::rethrow_exception(p);
  } catch (const EngineError& e) {
    // The diagnostics' one JSON form (what `scellis --json` prints), with each one's text.
    Json diagnostics = DiagnosticsToJson(e.diagnostics);
    for (size_t i = 0; i < e.diagnostics.size(); ++i)
      diagnostics[i]["text"] = e.diagnostics[i].Format();
    nb::object error =
        nb::module_::import_("scellis.errors").attr("from_engine")(diagnostics.dump());
    PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(error.ptr())), error.ptr());
  }
}

}  // namespace

nb::object JsonToPython(const Json& j) {
  return nb::module_::import_("json").attr("loads")(j.dump());
}

// A dataset as the engine reads it (data::LoadDataset: the same IDX reader, checks and files the
// trainer uses): {"images": [count, features] f32 in [0, 1], "labels": [count] f32 class indices,
// "files": [...]}.
nb::dict LoadDataset(const std::string& source, const std::string& split) {
  std::optional<Result<data::Dataset>> r;
  {
    nb::gil_scoped_release unlocked;
    r.emplace(data::LoadDataset(source, split));
  }
  data::Dataset d = Take(std::move(*r));
  nb::dict out;
  out["images"] = ToNumpy(HostTensor::FromFloats(MakeType({d.count, d.features}), d.images));
  out["labels"] = ToNumpy(HostTensor::FromFloats(MakeType({d.count}), d.labels));
  out["files"] = d.files;
  return out;
}

}  // namespace scellis::python

NB_MODULE(_scellis, m) {
  using namespace scellis;
  using namespace scellis::python;
  nb::register_exception_translator(TranslateEngineError);
  // A session a script still holds at exit is freed with the process, not reported as a leak.
  nb::set_leak_warnings(false);
  // Training from Python allocates per step as the command does (base/host_heap.h).
  KeepStepSizedBlocksOnHeap();

  m.attr("MAX_GRAPH_VERSION") = doc::kMaxGraphVersion;
  m.attr("MAX_STEPS_PER_SUBMISSION") = api::kMaxStepsPerSubmission;
  m.def(
      "ops_json", [] { return ops::ToJson(*ops::BuiltinOps()).dump(); },
      "The engine's op table as JSON (what `scellis ops --json` prints).");
  m.def("load_dataset", &LoadDataset, nb::arg("source"), nb::arg("split"),
        "Reads a dataset as the trainer does (data::LoadDataset).");
  BindDocuments(m);
  BindUserOps(m);
  BindRecords(m);
  BindSessions(m);
}

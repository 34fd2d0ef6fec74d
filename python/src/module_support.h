// What the parts of `_scellis` share: the engine error the exception translator raises as the
// package's ScellisError, the helpers that turn a Result into a value or that error, arrays and
// JSON into and out of Python objects, the caller's options as the engine's, the handle of a user
// op defined from Python, and the functions with which each part registers its bindings.
#pragma once

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "api/run.h"
#include "api/user_ops.h"
#include "base/diagnostic.h"
#include "base/json_util.h"
#include "base/result.h"
#include "ops/op_table.h"
#include "pipeline/compile.h"
#include "record/session_record.h"

namespace scellis::python {

// Carries the engine's diagnostics to the exception translator, which raises the package's
// ScellisError subclass for them.
struct EngineError : std::exception {
  std::vector<Diagnostic> diagnostics;
  explicit EngineError(std::vector<Diagnostic> d) : diagnostics(std::move(d)) {}
  const char* what() const noexcept override { return "scellis engine error"; }
};

[[noreturn]] inline void Raise(const Status& s) {
  throw EngineError(s.errors());
}

template <class T>
T Take(Result<T> r) {
  if (!r.ok()) Raise(r.status());
  return std::move(r).value();
}

// `j` as Python data (dicts, lists, str, numbers, None).
nanobind::object JsonToPython(const Json& j);

// Arrays (arrays.cpp). What the caller hands over: any C-contiguous CPU array (NumPy, or another
// buffer / DLPack exporter), read-only ones included (a memory-mapped dataset). What comes back:
// NumPy arrays.
using InArray = nanobind::ndarray<nanobind::ro, nanobind::c_contig, nanobind::device::cpu>;
using OutArray = nanobind::ndarray<nanobind::numpy, nanobind::c_contig, nanobind::device::cpu>;

// Writes the array `value` into `out`, reusing out's storage; `what` names it in a `bad-feed`.
void ToHostInto(const std::string& what, const nanobind::handle& value, HostTensor& out);
HostTensor ToHost(const std::string& what, const nanobind::handle& value);
runtime::Feeds ToFeeds(const nanobind::dict& feeds);
// A NumPy array that owns the host tensor's bytes.
nanobind::object ToNumpy(HostTensor t);

// The caller's options as the engine's (options.cpp); an unknown tier is `bad-tier`.
pipeline::CompileOptions CompileOptionsFor(const std::optional<std::string>& tier);
runtime::SelectOptions SelectFor(const std::string& backend, bool allow_software_adapter,
                                 int cpu_threads);
// `s` as a Python str, or None.
nanobind::object Optional(const std::optional<std::string>& s);

// A user op defined from Python: its definition, the reference a Python function.
struct PyUserOp {
  api::UserOpDefinition definition;
};

// The definitions of `user_ops` (PyUserOp handles).
std::vector<api::UserOpDefinition> DefinitionsOf(const nanobind::list& user_ops);
// The built-ins with the ops of `user_ops`; null for none (user_ops.cpp).
std::shared_ptr<const ops::OpTable> TableOf(const nanobind::list& user_ops);

// What each part registers on the module.
// `run`, `lower`, `content_id` and `infer_node` (documents.cpp).
void BindDocuments(nanobind::module_& m);
// `UserOp`, `define_op` and `conform` (user_ops.cpp).
void BindUserOps(nanobind::module_& m);
// `prepare` and `Session` (sessions.cpp).
void BindSessions(nanobind::module_& m);

// Run records (records.cpp). The id of the record of a finished one-shot run, as `scellis run`
// leaves it (None when `record` is false, $SCELLIS_NO_RECORD is set, or the store cannot take it,
// which is warned about as the command warns).
nanobind::object RecordRunOf(bool record, const std::string& text, const api::RunOptions& options,
                             const api::RunReport& report);
// A prepared session's recorder, or none when `record` is false, $SCELLIS_NO_RECORD is set or the
// store cannot take it (warned about). Call with the GIL held.
std::optional<record::SessionRecorder> StartSessionRecord(bool record, const std::string& text,
                                                          const pipeline::CompileOptions& compile,
                                                          const runtime::SelectOptions& select,
                                                          const runtime::Feeds& initial);
// Adds a run to the record; where the store cannot take it, warns and returns false: the
// session then records no more. Call with the GIL held.
bool AddSessionRun(record::SessionRecorder& recorder, const std::vector<runtime::Feeds>& steps,
                   const std::vector<std::string>& watch, const runtime::StepsResult& result);
// The oldest started run of a recorded session finished (`result`, or null when it failed):
// record::SessionRecorder::FinishStarted, warned about as AddSessionRun.
bool FinishStartedRun(record::SessionRecorder& recorder, const runtime::StepsResult* result);
// The id of the session's record, stored now (None where it could not be, warned about).
nanobind::object FinishSessionRecord(const record::SessionRecorder& recorder,
                                     const api::Session& session);
// `runs` (record::ListRuns) and `replay` (record::Replay).
void BindRecords(nanobind::module_& m);

}  // namespace scellis::python

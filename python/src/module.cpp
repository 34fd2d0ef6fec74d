// `_scellis`: the engine API for the Python package (python/scellis). Like the command line, it
// parses, calls the engine and converts: documents arrive as graph-protocol JSON text, arrays as
// CPU buffers whose bytes are copied once into host tensors (no per-element Python work), and
// results leave as NumPy arrays that own the engine's bytes. Every check of a document, a feed or
// a session is the engine's (api::Run, api::Session, pipeline::Compile); this module only names
// what it cannot convert (an array dtype without engine storage, an unknown tier or rung name). A
// failure raises the package's ScellisError with the diagnostics. The GIL is released while the
// engine works, so a run on a worker thread does not stall the interpreter. A one-shot run leaves a
// run record as `scellis run` does; listing and replaying records is records.cpp.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "api/conform.h"
#include "api/run.h"
#include "api/session.h"
#include "api/user_ops.h"
#include "base/diagnostic_json.h"
#include "base/host_heap.h"
#include "data/dataset.h"
#include "doc/document.h"
#include "execplan/plan.h"
#include "module_support.h"
#include "ops/op_table.h"
#include "pipeline/compile.h"
#include "webir/type_node.h"

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

// ---- arrays ----

// What the caller hands over: any C-contiguous CPU array (NumPy, or another buffer / DLPack
// exporter), read-only ones included (a memory-mapped dataset). What comes back: NumPy arrays.
using InArray = nb::ndarray<nb::ro, nb::c_contig, nb::device::cpu>;
using OutArray = nb::ndarray<nb::numpy, nb::c_contig, nb::device::cpu>;

std::optional<DType> DTypeOfArray(const nb::dlpack::dtype& t) {
  using Code = nb::dlpack::dtype_code;
  if (t.lanes != 1) return std::nullopt;
  if (t.code == static_cast<uint8_t>(Code::Float) && t.bits == 32) return DType::kF32;
  if (t.code == static_cast<uint8_t>(Code::Float) && t.bits == 16) return DType::kF16;
  if (t.code == static_cast<uint8_t>(Code::Int) && t.bits == 32) return DType::kI32;
  if (t.code == static_cast<uint8_t>(Code::UInt) && t.bits == 32) return DType::kU32;
  if (t.code == static_cast<uint8_t>(Code::Bool) && t.bits == 8) return DType::kBool;
  return std::nullopt;
}

// "float64", "int8", ...: the dtype of an array the engine does not store, for the diagnostic.
std::string DTypeText(const nb::dlpack::dtype& t) {
  using Code = nb::dlpack::dtype_code;
  std::string kind = "dlpack code " + std::to_string(t.code) + " of ";
  if (t.code == static_cast<uint8_t>(Code::Int)) kind = "int";
  if (t.code == static_cast<uint8_t>(Code::UInt)) kind = "uint";
  if (t.code == static_cast<uint8_t>(Code::Float)) kind = "float";
  if (t.code == static_cast<uint8_t>(Code::Bool)) kind = "bool";
  if (t.code == static_cast<uint8_t>(Code::Complex)) kind = "complex";
  if (t.code == static_cast<uint8_t>(Code::Bfloat)) kind = "bfloat";
  return kind + std::to_string(t.bits);
}

// The bytes of a C-contiguous array as a host tensor: one copy out of the caller's buffer (bool
// widened to the engine's 4-byte storage). A dtype the engine has no storage for is a `bad-feed`,
// never a silent conversion.
// Writes the array `value` into `out`, reusing out's storage: a prepared session feeds the same
// shapes step after step, and fresh buffers of a batch's size would be page-faulted in each time.
void ToHostInto(const std::string& what, const nb::handle& value, HostTensor& out) {
  InArray a;
  if (!nb::try_cast(value, a, /*convert=*/false)) {
    throw EngineError(
        {UserError("bad-feed", "", what + " is not a C-contiguous array in CPU memory",
                   "pass a NumPy array (numpy.ascontiguousarray(value))")});
  }
  std::optional<DType> dtype = DTypeOfArray(a.dtype());
  if (!dtype) {
    throw EngineError({UserError(
        "bad-feed", "",
        what + " has the dtype " + DTypeText(a.dtype()) + ", which the engine does not store",
        "convert it to float32 (or float16, int32, uint32, bool) first")});
  }
  if (a.ndim() > static_cast<size_t>(kMaxRank)) {
    throw EngineError({UserError("bad-feed", "",
                                 what + " has rank " + std::to_string(a.ndim()) + ", at most " +
                                     std::to_string(kMaxRank) + " is supported")});
  }
  std::vector<int64_t> sizes;
  for (size_t i = 0; i < a.ndim(); ++i) sizes.push_back(static_cast<int64_t>(a.shape(i)));
  out.type = MakeType(sizes, *dtype);
  if (*dtype == DType::kBool) {
    out.bytes.resize(static_cast<size_t>(out.type.bytes()));
    const auto* src = static_cast<const uint8_t*>(a.data());
    auto dst = out.view<uint32_t>();
    for (size_t i = 0; i < a.size(); ++i) dst[i] = src[i] ? 1u : 0u;
    return;
  }
  const auto* src = static_cast<const std::byte*>(a.data());
  out.bytes.assign(src, src + out.type.bytes());
}

HostTensor ToHost(const std::string& what, const nb::handle& value) {
  HostTensor t;
  ToHostInto(what, value, t);
  return t;
}

runtime::Feeds ToFeeds(const nb::dict& feeds) {
  runtime::Feeds out;
  for (auto [key, value] : feeds) {
    std::string name = nb::cast<std::string>(key);
    out.emplace(name, ToHost("the feed \"" + name + "\"", value));
  }
  return out;
}

// A NumPy array that owns the host tensor's bytes (moved, not copied); bool is narrowed to
// NumPy's one byte per element.
nb::object ToNumpy(HostTensor t) {
  std::vector<size_t> shape;
  for (int64_t s : t.type.sizes()) shape.push_back(static_cast<size_t>(s));
  if (t.type.dtype == DType::kBool) {
    auto* bools = new std::vector<uint8_t>(static_cast<size_t>(t.elements()));
    auto src = t.view<uint32_t>();
    for (size_t i = 0; i < bools->size(); ++i) (*bools)[i] = src[i] ? 1 : 0;
    nb::capsule owner(bools,
                      [](void* p) noexcept { delete static_cast<std::vector<uint8_t>*>(p); });
    return OutArray(bools->data(), shape.size(), shape.data(), owner, nullptr, nb::dtype<bool>())
        .cast();
  }
  nb::dlpack::dtype dtype;
  switch (t.type.dtype) {
    case DType::kF16:
      dtype = {static_cast<uint8_t>(nb::dlpack::dtype_code::Float), 16, 1};
      break;
    case DType::kI32:
      dtype = nb::dtype<int32_t>();
      break;
    case DType::kU32:
      dtype = nb::dtype<uint32_t>();
      break;
    default:
      dtype = nb::dtype<float>();
      break;
  }
  auto* held = new HostTensor(std::move(t));
  nb::capsule owner(held, [](void* p) noexcept { delete static_cast<HostTensor*>(p); });
  return OutArray(held->bytes.data(), shape.size(), shape.data(), owner, nullptr, dtype).cast();
}

// ---- compile options ----

pipeline::CompileOptions CompileOptionsFor(const std::optional<std::string>& tier) {
  pipeline::CompileOptions o;
  if (tier) {
    std::optional<policy::Tier> parsed = policy::ParseTier(*tier);
    if (!parsed) {
      throw EngineError(
          {UserError("bad-tier", "",
                     "the determinism tier is \"" + *tier + "\", expected debug, prod or fast")});
    }
    o.lower.tier = parsed;
  }
  return o;
}

runtime::SelectOptions SelectFor(const std::string& backend, bool allow_software_adapter,
                                 int cpu_threads) {
  return {.requested = backend,
          .allow_software_adapter = allow_software_adapter,
          .cpu_threads = cpu_threads};
}

nb::object Optional(const std::optional<std::string>& s) {
  return s ? nb::object(nb::str(s->c_str())) : nb::none();
}

// ---- user ops with a Python reference (api/user_ops.h) ----

// `fn(arrays)` (the Python package's wrapper: a list of NumPy arrays in port order in, a float32
// array out) as a reference. It runs with the GIL taken, from whichever engine thread calls it; a
// Python exception becomes `user-reference-failed` (the package re-raises it typed, chained to the
// original). The function is released with the GIL held, whichever thread drops it last.
ops::UserReference PythonReference(nb::object fn) {
  std::shared_ptr<nb::object> held(new nb::object(std::move(fn)), [](nb::object* o) {
    nb::gil_scoped_acquire gil;
    delete o;
  });
  return [held](std::span<const HostTensor> in) -> Result<HostTensor> {
    nb::gil_scoped_acquire gil;
    try {
      nb::list arrays;
      for (const HostTensor& t : in) arrays.append(ToNumpy(t));
      HostTensor out;
      ToHostInto("the reference's result", (*held)(arrays), out);
      return out;
    } catch (nb::python_error& e) {
      return UserError("user-reference-failed", "", e.what());
    } catch (const EngineError& e) {
      return Status(e.diagnostics);
    }
  };
}

// `fn(arrays)` as a reference's float64 form (the gradient check's): float64 NumPy arrays in, a
// float64 array out (the package's wrapper refuses any other dtype, which would blur the check).
ops::UserReference64 PythonReference64(nb::object fn) {
  std::shared_ptr<nb::object> held(new nb::object(std::move(fn)), [](nb::object* o) {
    nb::gil_scoped_acquire gil;
    delete o;
  });
  return [held](std::span<const ops::Float64Tensor> in) -> Result<ops::Float64Tensor> {
    nb::gil_scoped_acquire gil;
    try {
      nb::list arrays;
      for (const ops::Float64Tensor& t : in) {
        std::vector<size_t> shape(t.sizes.begin(), t.sizes.end());
        auto* values = new std::vector<double>(t.values);
        nb::capsule owner(values,
                          [](void* p) noexcept { delete static_cast<std::vector<double>*>(p); });
        arrays.append(OutArray(values->data(), shape.size(), shape.data(), owner, nullptr,
                               nb::dtype<double>())
                          .cast());
      }
      InArray a;
      if (!nb::try_cast((*held)(arrays), a, /*convert=*/false) || a.dtype() != nb::dtype<double>())
        return UserError("user-reference-failed", "",
                         "the float64 reference did not return a C-contiguous float64 array");
      ops::Float64Tensor out;
      for (size_t i = 0; i < a.ndim(); ++i) out.sizes.push_back(static_cast<int64_t>(a.shape(i)));
      const auto* src = static_cast<const double*>(a.data());
      out.values.assign(src, src + a.size());
      return out;
    } catch (nb::python_error& e) {
      return UserError("user-reference-failed", "", e.what());
    }
  };
}

// `gradients`: per port, (port, wgsl, fn, fn64, version), the gradient's WGSL and its reference
// in both forms as for the forward.
PyUserOp* DefineUserOp(const std::string& name, const std::string& signature, nb::object fn,
                       nb::object fn64, const std::string& version, const nb::list& gradients) {
  auto op = std::make_unique<PyUserOp>();
  op->definition = {name, Json::parse(signature), PythonReference(std::move(fn)), version,
                    PythonReference64(std::move(fn64))};
  for (nb::handle h : gradients) {
    nb::tuple g = nb::cast<nb::tuple>(h);
    op->definition.gradients[nb::cast<std::string>(g[0])] = {
        nb::cast<std::string>(g[1]), PythonReference(nb::borrow(g[2])),
        PythonReference64(nb::borrow(g[3])), nb::cast<std::string>(g[4])};
  }
  Take(api::DefineOps({op->definition}));  // a wrong definition is refused here, by name
  return op.release();
}

// The built-ins with the ops of `user_ops` (PyUserOp handles); null for none.
std::shared_ptr<const ops::OpTable> TableOf(const nb::list& user_ops) {
  if (nb::len(user_ops) == 0) return nullptr;
  return Take(api::DefineOps(DefinitionsOf(user_ops)));
}

// Conformance of user ops on the chosen device (api::Conform): its report's JSON form.
nb::object ConformUserOps(const nb::list& user_ops, const std::vector<std::string>& names,
                          const std::string& tier, const std::string& backend,
                          bool allow_software_adapter, const std::optional<uint64_t>& seed,
                          const std::string& store_root) {
  api::ConformOptions o;
  o.tier = tier;
  o.ops = names;
  o.user_ops = TableOf(user_ops);
  o.seed = seed;
  o.select = SelectFor(backend, allow_software_adapter, 0);
  o.store_root = store_root;
  std::optional<Result<api::ConformReport>> r;
  {
    nb::gil_scoped_release unlocked;
    r.emplace(api::Conform(o));
  }
  return JsonToPython(Take(std::move(*r)).ToJson());
}

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

// ---- prepared sessions ----

// One api::Session; a mutex keeps a worker thread and the caller from using it at once.
class PySession {
 public:
  PySession(std::unique_ptr<api::Session> s, runtime::Selection info,
            std::optional<record::SessionRecorder> recorder)
      : session_(std::move(s)),
        recorder_(std::move(recorder)),
        backend_(info.backend),
        fallback_reason_(info.fallback_reason),
        attempts_(info.attempts) {}

  // feeds: one dict per step; returns ({name: [array per step]}, stats).
  nb::tuple Run(const nb::list& steps, const std::vector<std::string>& watch) {
    std::optional<Result<runtime::StepsResult>> r;
    {
      // Waiting for the session without the GIL: its holder may need the GIL to finish.
      std::unique_lock<std::mutex> lock(mu_, std::defer_lock);
      {
        nb::gil_scoped_release unlocked;
        lock.lock();
      }
      // The feeds are written into the buffers of the previous call (kept in feed_pool_); the
      // steps beyond this call's count wait aside for a longer call.
      if (feed_pool_.size() < steps.size()) feed_pool_.resize(steps.size());
      std::vector<runtime::Feeds> spare(
          std::make_move_iterator(feed_pool_.begin() + static_cast<std::ptrdiff_t>(steps.size())),
          std::make_move_iterator(feed_pool_.end()));
      feed_pool_.resize(steps.size());
      for (size_t i = 0; i < steps.size(); ++i) {
        const nb::dict step = nb::cast<nb::dict>(steps[i]);
        runtime::Feeds& feeds = feed_pool_[i];
        std::erase_if(feeds, [&](const auto& kv) { return !step.contains(kv.first.c_str()); });
        for (auto [key, value] : step) {
          std::string name = nb::cast<std::string>(key);
          ToHostInto("the feed \"" + name + "\"", value, feeds[name]);
        }
      }
      {
        nb::gil_scoped_release unlocked;
        r.emplace(session_->Run(feed_pool_, watch));
      }
      // A recorded session digests the run before its outputs move into NumPy arrays.
      if (recorder_ && r->ok() && !AddSessionRun(*recorder_, feed_pool_, watch, r->value()))
        recorder_.reset();
      for (runtime::Feeds& f : spare) feed_pool_.push_back(std::move(f));
    }
    runtime::StepsResult result = Take(std::move(*r));
    nb::dict watched;
    for (auto& [name, values] : result.watched) {
      nb::list per_step;
      for (HostTensor& t : values) per_step.append(ToNumpy(std::move(t)));
      watched[name.c_str()] = per_step;
    }
    return nb::make_tuple(watched, JsonToPython(result.stats));
  }

  nb::object Download(const std::string& name) {
    std::optional<Result<HostTensor>> r;
    {
      nb::gil_scoped_release unlocked;
      std::lock_guard<std::mutex> lock(mu_);
      r.emplace(session_->Download(name));
    }
    return ToNumpy(Take(std::move(*r)));
  }

  void Upload(const std::string& name, const nb::handle& value) {
    HostTensor t = ToHost("the upload to \"" + name + "\"", value);
    Status s;
    {
      nb::gil_scoped_release unlocked;
      std::lock_guard<std::mutex> lock(mu_);
      s = session_->Upload(name, t);
    }
    if (!s.ok()) Raise(s);
  }

  void Dispose() {
    nb::gil_scoped_release unlocked;
    std::lock_guard<std::mutex> lock(mu_);
    session_->Dispose();
  }

  // Stores the record of the runs so far (a recorded session); its id, or None.
  nb::object Record() {
    std::unique_lock<std::mutex> lock(mu_, std::defer_lock);
    {
      nb::gil_scoped_release unlocked;
      lock.lock();
    }
    if (!recorder_) return nb::none();
    return FinishSessionRecord(*recorder_, *session_);
  }
  bool recording() const { return recorder_.has_value(); }

  std::string executor() const { return session_->executor(); }
  bool poisoned() const { return session_->poisoned(); }
  std::string content_id() const { return session_->compiled().doc.content_id; }
  std::string determinism_tier() const { return policy::TierName(session_->plan().graph().tier); }
  const std::string& backend() const { return backend_; }
  nb::object fallback_reason() const { return Optional(fallback_reason_); }
  const std::vector<std::string>& attempts() const { return attempts_; }

 private:
  std::mutex mu_;
  std::unique_ptr<api::Session> session_;
  std::optional<record::SessionRecorder> recorder_;  // guarded by mu_
  std::vector<runtime::Feeds> feed_pool_;            // guarded by mu_
  std::string backend_;
  std::optional<std::string> fallback_reason_;
  std::vector<std::string> attempts_;
};

PySession* PrepareDocument(const std::string& text, const std::string& backend,
                           const std::optional<std::string>& tier, bool allow_software_adapter,
                           int cpu_threads, const nb::dict& initial,
                           const std::optional<std::string>& executor, const nb::list& user_ops,
                           bool record) {
  pipeline::CompileOptions options = CompileOptionsFor(tier);
  if (auto table = TableOf(user_ops)) options.lower.ops = table;
  runtime::RunOptions run_options;
  if (executor) run_options.executor = *executor;
  runtime::Feeds feeds = ToFeeds(initial);
  std::optional<Result<std::unique_ptr<api::Session>>> s;
  runtime::Selection info;
  {
    nb::gil_scoped_release unlocked;
    auto selection =
        runtime::SelectBackend(SelectFor(backend, allow_software_adapter, cpu_threads));
    if (!selection.ok()) {
      s.emplace(selection.status());
    } else {
      info.backend = selection->backend;
      info.fallback_reason = selection->fallback_reason;
      if (auto pinned = api::PinnedExecutorFallback(run_options.executor))
        info.fallback_reason = pinned;
      info.attempts = selection->attempts;
      s.emplace(
          api::Session::Prepare(text, options, std::move(selection).value(), feeds, run_options));
    }
  }
  std::unique_ptr<api::Session> session = Take(std::move(*s));
  auto recorder = StartSessionRecord(
      record, text, options, SelectFor(backend, allow_software_adapter, cpu_threads), feeds);
  return new PySession(std::move(session), std::move(info), std::move(recorder));
}

}  // namespace

nb::object JsonToPython(const Json& j) {
  return nb::module_::import_("json").attr("loads")(j.dump());
}

std::vector<api::UserOpDefinition> DefinitionsOf(const nb::list& user_ops) {
  std::vector<api::UserOpDefinition> definitions;
  for (nb::handle h : user_ops) definitions.push_back(nb::cast<PyUserOp&>(h).definition);
  return definitions;
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
  m.def("prepare", &PrepareDocument, nb::arg("text"), nb::arg("backend"), nb::arg("tier").none(),
        nb::arg("allow_software_adapter"), nb::arg("cpu_threads"), nb::arg("initial"),
        nb::arg("executor").none() = nb::none(), nb::arg("user_ops") = nb::list(),
        nb::arg("record") = false, nb::rv_policy::take_ownership,
        "Prepares a session (api::Session::Prepare); `record`: keep a run record of its runs "
        "(record::SessionRecorder), stored by `record()`.");

  nb::class_<PyUserOp>(m, "UserOp");
  m.def("define_op", &DefineUserOp, nb::arg("name"), nb::arg("signature"), nb::arg("reference"),
        nb::arg("reference_f64"), nb::arg("version"), nb::arg("gradients") = nb::list(),
        nb::rv_policy::take_ownership,
        "A user op with a Python reference (api::DefineOps); `user_ops` of run and conform take "
        "it.");
  m.def("conform", &ConformUserOps, nb::arg("user_ops"), nb::arg("ops"), nb::arg("tier"),
        nb::arg("backend"), nb::arg("allow_software_adapter"), nb::arg("seed").none(),
        nb::arg("store_root"), "Conformance of user ops (api::Conform); the report as JSON.");
  BindRecords(m);

  nb::class_<PySession>(m, "Session")
      .def("run", &PySession::Run, nb::arg("steps"), nb::arg("watch"))
      .def("download", &PySession::Download, nb::arg("name"))
      .def("upload", &PySession::Upload, nb::arg("name"), nb::arg("value"))
      .def("dispose", &PySession::Dispose)
      .def("record", &PySession::Record)
      .def_prop_ro("recording", &PySession::recording)
      .def_prop_ro("executor", &PySession::executor)
      .def_prop_ro("poisoned", &PySession::poisoned)
      .def_prop_ro("content_id", &PySession::content_id)
      .def_prop_ro("determinism_tier", &PySession::determinism_tier)
      .def_prop_ro("backend", &PySession::backend)
      .def_prop_ro("fallback_reason", &PySession::fallback_reason)
      .def_prop_ro("attempts", &PySession::attempts);
}

// User ops defined from Python (api/user_ops.h): `define_op` with Python functions as the
// references, the op table a run or session with user ops lowers against, and their conformance.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "api/conform.h"
#include "module_support.h"
#include "ops/op_table.h"

namespace nb = nanobind;

namespace scellis::python {
namespace {

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

}  // namespace

// The built-ins with the ops of `user_ops` (PyUserOp handles); null for none.
std::shared_ptr<const ops::OpTable> TableOf(const nb::list& user_ops) {
  if (nb::len(user_ops) == 0) return nullptr;
  return Take(api::DefineOps(DefinitionsOf(user_ops)));
}

std::vector<api::UserOpDefinition> DefinitionsOf(const nb::list& user_ops) {
  std::vector<api::UserOpDefinition> definitions;
  for (nb::handle h : user_ops) definitions.push_back(nb::cast<PyUserOp&>(h).definition);
  return definitions;
}

void BindUserOps(nb::module_& m) {
  nb::class_<PyUserOp>(m, "UserOp");
  m.def("define_op", &DefineUserOp, nb::arg("name"), nb::arg("signature"), nb::arg("reference"),
        nb::arg("reference_f64"), nb::arg("version"), nb::arg("gradients") = nb::list(),
        nb::rv_policy::take_ownership,
        "A user op with a Python reference (api::DefineOps); `user_ops` of run and conform take "
        "it.");
  m.def("conform", &ConformUserOps, nb::arg("user_ops"), nb::arg("ops"), nb::arg("tier"),
        nb::arg("backend"), nb::arg("allow_software_adapter"), nb::arg("seed").none(),
        nb::arg("store_root"), "Conformance of user ops (api::Conform); the report as JSON.");
}

}  // namespace scellis::python

// The CPU reference of a user op: the op's reference — a graph of built-in ops, written in the
// document — planned for the kernel's input types and run kernel by kernel on the built-ins' own
// references. Interpreting it here, rather than inlining it into the graph for the CPU backend,
// keeps one plan for every backend: the same kernel, whose WGSL is the user's on a GPU and whose
// reference is this. Each reference kernel rounds to T as the built-in kernels do, unfused.
// An op defined through the API (api/user_ops.h) brings a callable instead, which runs here.
#include <algorithm>
#include <exception>
#include <map>
#include <mutex>
#include <optional>
#include <type_traits>

#include "kernel/passes/passes.h"
#include "kernel/ref/ref.h"
#include "ops/user_op.h"
#include "webir/user_ops.h"

namespace scellis::kernel::ref {
namespace {

// The reference planned for one definition at one set of input types, kept: a loop body runs the
// same kernel every iteration. A few dozen entries cover any plan; past that the cache starts over.
Result<std::shared_ptr<const Module>> PlannedReference(const ops::OpSpec& spec,
                                                       const std::vector<TensorType>& types) {
  static std::mutex mu;
  static std::map<std::string, std::shared_ptr<const Module>> planned;
  constexpr size_t kMaxPlanned = 64;
  std::string key = spec.user->definition_hash;
  for (const TensorType& t : types) {
    // Appended piecewise: `"|" + std::string&&` draws a false -Wrestrict (GCC 12).
    key += '|';
    key += t.ShapeStringWithSizes();
    key += DTypeName(t.dtype);
  }
  {
    std::lock_guard<std::mutex> lock(mu);
    if (auto it = planned.find(key); it != planned.end()) return it->second;
  }
  SCELLIS_ASSIGN_OR_RETURN(webir::Graph g, webir::ReferenceGraph(spec, types));
  SCELLIS_ASSIGN_OR_RETURN(Module m, FromWebir(std::make_shared<const webir::Graph>(std::move(g))));
  SCELLIS_TRY(Partition(m));
  auto shared = std::make_shared<const Module>(std::move(m));
  std::lock_guard<std::mutex> lock(mu);
  if (planned.size() >= kMaxPlanned) planned.clear();
  planned.emplace(std::move(key), shared);
  return shared;
}

// Calls `call` (a user's callable), turning an exception into `user-reference-failed`.
template <typename R, typename F>
Result<R> Guarded(const ops::OpSpec& spec, const std::string& at, F&& call) {
  std::optional<Result<R>> got;
  try {
    got.emplace(call());
  } catch (const std::exception& e) {
    return UserError("user-reference-failed", at,
                     "the reference of \"" + spec.name + "\" threw: " + e.what(),
                     "fix the reference function; it is called with the op's inputs in port order");
  } catch (...) {
    return UserError("user-reference-failed", at,
                     "the reference of \"" + spec.name +
                         "\" threw an exception that is no "
                         "std::exception");
  }
  if (!got->ok()) {
    Diagnostic d = got->errors().front();
    return UserError("user-reference-failed", at,
                     "the reference of \"" + spec.name + "\" failed: " + d.message, d.help);
  }
  return std::move(*got);
}

// The float64 form of a callable reference (ops::UserReference64), for a reference computing in
// float64 (the gradient check): the inputs unrounded, the result checked as the f32 form's is.
Status RunCallableReference64(const ops::OpSpec& spec, const std::vector<TensorType>& types,
                              const std::vector<const double*>& inputs, const TensorType& want,
                              double* out) {
  const ops::UserKernel& user = *spec.user;
  const std::string at = user.pointer + "/reference";
  std::vector<ops::Float64Tensor> args;
  for (size_t i = 0; i < types.size() && i < inputs.size(); ++i)
    args.push_back(
        {types[i].sizes(), std::vector<double>(inputs[i], inputs[i] + types[i].elements())});
  SCELLIS_ASSIGN_OR_RETURN(ops::Float64Tensor result, Guarded<ops::Float64Tensor>(spec, at, [&] {
                             return user.callable_f64(std::span<const ops::Float64Tensor>(args));
                           }));
  if (result.sizes != want.sizes() || result.values.size() != static_cast<size_t>(want.elements()))
    return UserError("user-reference-shape", at,
                     "the float64 reference of \"" + spec.name + "\" returned " +
                         std::to_string(result.values.size()) + " values of sizes " +
                         MakeType(result.sizes).ShapeStringWithSizes() + ", but the op declares " +
                         want.ShapeStringWithSizes() + " (the shape of \"" + user.shape_of + "\")",
                     "return one value per element of the output, in its shape");
  std::copy(result.values.begin(), result.values.end(), out);
  return Status::Ok();
}

// A reference given as a callable (api/user_ops.h): the inputs as f32 host tensors in port order,
// the result checked against the output the plan expects. Whatever the callable does wrong — an
// error, an exception, another shape or dtype — is a diagnostic at the op, never a crash.
template <typename T>
Status RunCallableReference(const ops::OpSpec& spec, const std::vector<TensorType>& types,
                            const std::vector<const T*>& inputs, const TensorType& want, T* out) {
  const ops::UserKernel& user = *spec.user;
  const std::string at = user.pointer + "/reference";
  if constexpr (std::is_same_v<T, double>) {
    if (user.callable_f64) return RunCallableReference64(spec, types, inputs, want, out);
  }
  std::vector<HostTensor> args;
  for (size_t i = 0; i < types.size() && i < inputs.size(); ++i) {
    std::vector<float> values(inputs[i], inputs[i] + types[i].elements());
    args.push_back(HostTensor::FromFloats(MakeType(types[i].sizes(), DType::kF32), values));
  }
  SCELLIS_ASSIGN_OR_RETURN(HostTensor result, Guarded<HostTensor>(spec, at, [&] {
                             return user.callable(std::span<const HostTensor>(args));
                           }));
  if (result.type.sizes() != want.sizes() || result.type.dtype != DType::kF32 ||
      result.bytes.size() != static_cast<size_t>(want.elements()) * sizeof(float)) {
    return UserError("user-reference-shape", at,
                     "the reference of \"" + spec.name + "\" returned " +
                         result.type.ShapeStringWithSizes() + " " + DTypeName(result.type.dtype) +
                         ", but the op declares " + want.ShapeStringWithSizes() +
                         " f32 (the shape "
                         "of \"" +
                         user.shape_of + "\")",
                     "return one f32 value per element of the output, in its shape");
  }
  auto values = result.view<float>();
  std::copy(values.begin(), values.end(), out);
  return Status::Ok();
}

}  // namespace

template <typename T>
Status RunUserReference(const Module& m, const Kernel& k, const std::vector<const T*>& inputs,
                        T* out, const Parallel& parallel) {
  const ops::OpSpec* spec = m.graph().ops->Find(k.op);
  if (!spec || !spec->user) return InternalError("ref.RunUserReference", k.op + " is no user op");
  std::vector<TensorType> types;
  for (int in : k.inputs) types.push_back(m.graph().at(in).type);
  if (spec->user->callable)
    return RunCallableReference<T>(*spec, types, inputs, m.graph().at(k.output).type, out);
  SCELLIS_ASSIGN_OR_RETURN(std::shared_ptr<const Module> planned, PlannedReference(*spec, types));
  const Module& reference = *planned;
  const webir::Graph& rg = reference.graph();

  // Each reference node's values: a port's are the kernel's input, the others computed here.
  std::map<int, const T*> values;
  std::map<int, std::vector<T>> computed;
  for (const webir::Node& n : rg.nodes) {
    if (n.role != webir::Role::kInput) continue;
    for (size_t p = 0; p < spec->ports.size() && p < inputs.size(); ++p)
      if (spec->ports[p].name == n.label) values[n.id] = inputs[p];
  }
  for (const Kernel& rk : reference.kernels) {
    std::vector<const T*> args;
    for (int in : rk.inputs) {
      auto it = values.find(in);
      if (it == values.end())
        return InternalError("ref.RunUserReference", "the reference of " + k.op + " reads node " +
                                                         std::to_string(in) +
                                                         " before it is computed");
      args.push_back(it->second);
    }
    std::vector<T>& result = computed[rk.output];
    result.resize(static_cast<size_t>(rg.at(rk.output).type.elements()));
    SCELLIS_TRY(RunKernel<T>(reference, rk, args, result.data(), parallel));
    values[rk.output] = result.data();
  }
  const int output = rg.outputs.at(0).node;
  auto it = values.find(output);
  if (it == values.end())
    return InternalError("ref.RunUserReference", "the reference of " + k.op + " has no output");
  std::copy(it->second, it->second + rg.at(output).type.elements(), out);
  return Status::Ok();
}

template Status RunUserReference<float>(const Module&, const Kernel&,
                                        const std::vector<const float*>&, float*, const Parallel&);
template Status RunUserReference<double>(const Module&, const Kernel&,
                                         const std::vector<const double*>&, double*,
                                         const Parallel&);

}  // namespace scellis::kernel::ref

// Fuzz target: any bytes become the train section of a small valid training workflow (spliced in
// as text, so malformed JSON is tried too), or, when they parse as a workflow of their own, the
// whole document. Either way the document goes through what `scellis validate` runs — the whole
// descent to an ExecPlan with a declared tier, the train-section checks included — and must be
// refused with user diagnostics or compile; it must never crash or report an internal error.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "pipeline/compile.h"

namespace {

// One dense layer trained with cross-entropy: what the train section refers to.
constexpr std::string_view kWorkflowHead = R"({
  "format": "scellis.workflow/1", "name": "fuzz", "determinism": "prod", "dims": {"B": 8},
  "nodes": [
    {"id": "data", "type": "dataset", "params": {"source": "fashion-mnist"}},
    {"id": "x", "type": "input", "params": {"name": "images", "shape": ["B", 4]}},
    {"id": "y", "type": "input", "params": {"name": "labels", "shape": ["B"]}},
    {"id": "w", "type": "param", "params": {"shape": [4, 3], "init": {"kind": "kaiming_uniform", "seed": 1}}},
    {"id": "b", "type": "param", "params": {"shape": [3], "init": {"kind": "zeros"}}},
    {"id": "h", "type": "matmul"},
    {"id": "logits", "type": "add"},
    {"id": "loss", "type": "cross_entropy"}
  ],
  "wires": [
    {"from": "x", "to": "h.a"}, {"from": "w", "to": "h.b"},
    {"from": "h", "to": "logits.a"}, {"from": "b", "to": "logits.b"},
    {"from": "logits", "to": "loss.a"}, {"from": "y", "to": "loss.target"}
  ],
  "outputs": [{"name": "loss", "from": "loss"}, {"name": "logits", "from": "logits"}],
  "train": )";

[[noreturn]] void Fail(const scellis::Diagnostic& d) {
  std::fprintf(stderr, "%s\n", d.Format("fuzz input").c_str());
  std::abort();
}

void Validate(std::string_view text) {
  using namespace scellis;
  pipeline::CompileOptions options;
  options.lower.tier = policy::Tier::kProd;
  options.plan.budget_bytes = int64_t{1} << 30;  // not the host's free memory: runs must repeat
  auto c = pipeline::Compile(text, options);
  if (c.ok()) return;
  for (const Diagnostic& d : c.errors())
    if (d.kind == ErrorKind::kInternal) Fail(d);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  if (bytes.find("scellis.workflow/1") != std::string_view::npos) Validate(bytes);
  std::string spliced(kWorkflowHead);
  spliced.append(bytes);
  spliced += "\n}";
  Validate(spliced);
  return 0;
}

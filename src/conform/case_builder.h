// The conformance cases' shared builder and the case families (cases.cpp, cases_elementwise.cpp,
// cases_layout.cpp): each family adds an op's cases to `out`. Internal to conform/.
#pragma once

#include <string>
#include <vector>

#include "conform/cases.h"
#include "ops/op_table.h"

namespace scellis::conform {

using ops::OpKind;
using ops::OpSpec;
using Shape = std::vector<int64_t>;

// More elements than 65535 workgroups of 64 invocations cover, so the grid folds into y.
constexpr int64_t kBigLinear = int64_t{65535} * 64 + 67;  // 4194307, prime to 64
// 2049^2 = 4198401 > 65535 * 64.
constexpr int64_t kBigSide = 2049;

// Builds one graph-protocol document, node by node.
class DocBuilder {
 public:
  int Input(const std::string& name, Shape shape, Domain domain = Domain::kSigned,
            int classes = 0) {
    const DType dtype = domain == Domain::kMask     ? DType::kBool
                        : domain == Domain::kUInt32 ? DType::kU32
                        : domain == Domain::kInt32 || domain == Domain::kIndex ||
                                domain == Domain::kSmallInt32 || domain == Domain::kFixed
                            ? DType::kI32
                            : DType::kF32;
    inputs_.push_back({name, shape, domain, classes, dtype});
    Json node = {{"op", "input"}, {"name", name}, {"shape", shape}};
    if (dtype != DType::kF32) node["dtype"] = DTypeName(dtype);
    return Add(std::move(node));
  }

  // An input of k-quant blocks: `shape` is the shape of its values.
  int Blocks(const std::string& name, Shape shape, DType dtype) {
    inputs_.push_back({name, shape, Domain::kBlocks, 0, dtype});
    return Add({{"op", "input"}, {"name", name}, {"shape", shape}, {"dtype", DTypeName(dtype)}});
  }

  // Arguments bind to the op's input ports in table order; a list port (the last) takes the rest.
  int Op(const std::string& op, std::vector<int> args, Json attrs = Json::object()) {
    const OpSpec* def = ops::BuiltinOps()->Find(op);
    Json node = attrs;
    node["op"] = op;
    for (size_t i = 0; def && i < args.size() && i < def->ports.size(); ++i) {
      if (def->ports[i].list) {
        node[def->ports[i].name] = std::vector<int>(args.begin() + i, args.end());
        break;
      }
      node[def->ports[i].name] = args[i];
    }
    ops_.push_back(op);
    return Add(std::move(node));
  }

  // The case whose output is node `out`, in protocol version `version` (raised to the newest
  // min_version of the ops used, so every op is legal in it).
  Case Finish(const std::string& group, const std::string& name, int out, int version) {
    Case c;
    c.group = group;
    c.name = name;
    c.inputs = inputs_;
    for (const std::string& op : ops_) {
      if (std::find(c.ops.begin(), c.ops.end(), op) == c.ops.end()) c.ops.push_back(op);
      const OpSpec* def = ops::BuiltinOps()->Find(op);
      if (!def) continue;
      version = std::max(version, def->min_version);
      c.tolerance = std::max(c.tolerance, def->tolerance);  // the loosest class governs
    }
    // A GPU compiler may contract a fused multiply and add into one FMA (WGSL does not forbid it,
    // and NVIDIA's driver does it), which rounds once where the reference rounds twice. A chain of
    // exact ops is therefore held to `tight`, not `exact`, against the reference.
    if (c.ops.size() > 1) c.tolerance = std::max(c.tolerance, policy::ToleranceClass::kTight);
    c.doc = {{"version", version},
             {"nodes", nodes_},
             {"outputs", Json::array({{{"name", "out"}, {"id", out}}})}};
    return c;
  }

 private:
  int Add(Json node) {
    int id = static_cast<int>(nodes_.size());
    node["id"] = id;
    nodes_.push_back(std::move(node));
    return id;
  }

  Json nodes_ = Json::array();
  std::vector<CaseInput> inputs_;
  std::vector<std::string> ops_;
};

inline bool Accepts(const ops::Port& port, DType t) {
  return std::find(port.dtypes.begin(), port.dtypes.end(), t) != port.dtypes.end();
}

inline bool HasAttr(const OpSpec& def, const char* name) {
  return def.FindAttr(name) != nullptr;
}

// The domain of each input of an elementwise op: inside the op's mathematical domain and away
// from the points where a comparison would measure nothing but rounding (a pole of 1/x).
inline Domain DomainOf(const OpSpec& def, size_t input) {
  const std::string& op = def.name;
  if ((op == "log" || op == "sqrt") && input == 0) return Domain::kPositive;
  if (op == "div" && input == 1) return Domain::kAwayFromZero;
  const ops::Port& port = def.ports.at(input);
  if (port.dtypes == std::vector<DType>{DType::kBool}) return Domain::kMask;
  // Comparisons and selections see ties, zeros of both signs and equal operands.
  if (def.kind == OpKind::kElementwise && def.tolerance == policy::ToleranceClass::kExact &&
      std::find(port.dtypes.begin(), port.dtypes.end(), DType::kBool) != port.dtypes.end())
    return Domain::kCoarse;
  return Domain::kSigned;
}

// Ops cheap enough to also run on a grid of more than 65535 workgroups on every CI run.
inline bool TakesBigCase(const std::string& op) {
  return op == "relu" || op == "add" || op == "transpose" || op == "reshape" || op == "uniform";
}

// The families, by the files that hold them.
void UnaryCases(const OpSpec& def, std::vector<Case>& out);
void IntegerBinaryCases(const OpSpec& def, std::vector<Case>& out);
void BinaryCases(const OpSpec& def, std::vector<Case>& out);
void BoolOperandCases(const OpSpec& def, std::vector<Case>& out);
void WhereCases(const OpSpec& def, std::vector<Case>& out);
void OperandAttrCases(const OpSpec& def, std::vector<Case>& out);
void CastCases(const OpSpec& def, std::vector<Case>& out);
void RandomCases(const OpSpec& def, std::vector<Case>& out);
void CumsumCases(const OpSpec& def, std::vector<Case>& out);
void ReduceCases(const OpSpec& def, std::vector<Case>& out);
void QuantMatmulCases(const OpSpec& def, std::vector<Case>& out);
void FixedMatmulCases(const OpSpec& def, std::vector<Case>& out);
void MatmulCases(const OpSpec& def, std::vector<Case>& out);
void SliceCases(const OpSpec& def, std::vector<Case>& out);
void FlipCases(const OpSpec& def, std::vector<Case>& out);
void PadCases(const OpSpec& def, std::vector<Case>& out);
void ListCases(const OpSpec& def, std::vector<Case>& out);
void LayoutCases(const OpSpec& def, std::vector<Case>& out);
void IndexCases(const OpSpec& def, std::vector<Case>& out);
void StencilCases(const OpSpec& def, std::vector<Case>& out);
void ShiftCases(const OpSpec& def, std::vector<Case>& out);
void ButterflyCases(const OpSpec& def, std::vector<Case>& out);
void ArangeCases(const OpSpec& def, std::vector<Case>& out);
void BitCases(const OpSpec& def, std::vector<Case>& out);
void NormalizeCases(const OpSpec& def, std::vector<Case>& out);
void LossCases(const OpSpec& def, std::vector<Case>& out);
void OptimizerCases(const OpSpec& def, std::vector<Case>& out);

}  // namespace scellis::conform

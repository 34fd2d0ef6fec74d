#include "conform/cases.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <optional>

#include "base/random.h"
#include "ops/op_table.h"

namespace scellis::conform {
namespace {

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
    const DType dtype =
        domain == Domain::kMask     ? DType::kBool
        : domain == Domain::kUInt32 ? DType::kU32
        : domain == Domain::kInt32 || domain == Domain::kIndex || domain == Domain::kSmallInt32 ||
                domain == Domain::kFixed
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

bool Accepts(const ops::Port& port, DType t) {
  return std::find(port.dtypes.begin(), port.dtypes.end(), t) != port.dtypes.end();
}

bool HasAttr(const OpSpec& def, const char* name) {
  return def.FindAttr(name) != nullptr;
}

// The domain of each input of an elementwise op: inside the op's mathematical domain and away
// from the points where a comparison would measure nothing but rounding (a pole of 1/x).
Domain DomainOf(const OpSpec& def, size_t input) {
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
bool TakesBigCase(const std::string& op) {
  return op == "relu" || op == "add" || op == "transpose" || op == "reshape" || op == "uniform";
}

void UnaryCases(const OpSpec& def, std::vector<Case>& out) {
  const std::pair<const char*, Shape> shapes[] = {
      {"size1", {1}},        {"rank0", {}},           {"prime7", {7}},
      {"prime97", {97}},     {"prime1009", {1009}},   {"wg64", {64}},
      {"rank3", {3, 5, 67}}, {"rank4", {2, 3, 5, 7}}, {"empty", {0, 5}},
  };
  for (const auto& [name, shape] : shapes) {
    DocBuilder b;
    int x = b.Input("x", shape, DomainOf(def, 0));
    out.push_back(b.Finish(def.name, name, b.Op(def.name, {x}), 1));
  }
  if (TakesBigCase(def.name)) {
    DocBuilder b;
    int x = b.Input("x", {kBigLinear}, DomainOf(def, 0));
    out.push_back(b.Finish(def.name, "grid_over_65535", b.Op(def.name, {x}), 1));
  }
  if (Accepts(def.ports[0], DType::kI32)) {  // neg: -(-2^31) wraps to -2^31
    const std::pair<const char*, Shape> int_shapes[] = {
        {"i32_prime1009", {1009}}, {"i32_rank0", {}}, {"i32_empty", {0, 5}}};
    for (const auto& [name, shape] : int_shapes) {
      DocBuilder b;
      int x = b.Input("x", shape, Domain::kInt32);
      out.push_back(b.Finish(def.name, name, b.Op(def.name, {x}), 3));
    }
  }
}

// Integer operands of ops that take them: the i32 and u32 extremes first (so sums, products and
// negations wrap), random bits after; small values where ties matter; broadcasting; the scalar
// form with a scalar of the operand's dtype.
void IntegerBinaryCases(const OpSpec& def, std::vector<Case>& out) {
  if (!Accepts(def.ports[0], DType::kI32)) return;
  struct Variant {
    const char* name;
    Shape a, b;
    Domain domain;
  };
  const Variant variants[] = {
      {"i32_same", {7, 97}, {7, 97}, Domain::kInt32},
      {"i32_bcast", {7, 97}, {97}, Domain::kInt32},
      {"i32_ties", {1009}, {1009}, Domain::kSmallInt32},
      {"i32_empty", {0, 5}, {5}, Domain::kInt32},
      {"u32_same", {7, 97}, {7, 97}, Domain::kUInt32},
      {"u32_bcast", {7, 97}, {7, 1}, Domain::kUInt32},
  };
  for (const Variant& v : variants) {
    DocBuilder b;
    int a = b.Input("a", v.a, v.domain), c = b.Input("b", v.b, v.domain);
    out.push_back(b.Finish(def.name, v.name, b.Op(def.name, {a, c}), 3));
  }
  const std::tuple<const char*, Domain, double> scalars[] = {
      {"i32_scalar", Domain::kInt32, -7.0},
      {"i32_scalar_min", Domain::kSmallInt32, -2147483648.0},
      {"u32_scalar", Domain::kUInt32, 4000000000.0}};
  for (const auto& [name, domain, scalar] : scalars) {
    DocBuilder b;
    int a = b.Input("a", {1009}, domain);
    out.push_back(b.Finish(def.name, name, b.Op(def.name, {a}, {{"scalar", scalar}}), 3));
  }
}

void BinaryCases(const OpSpec& def, std::vector<Case>& out) {
  struct Variant {
    const char* name;
    Shape a, b;
    int version;  // 2 where the shapes broadcast
  };
  const Variant variants[] = {
      {"size1", {1}, {1}, 1},
      {"prime97", {97}, {97}, 1},
      {"prime1009", {1009}, {1009}, 1},
      {"rank3", {3, 5, 67}, {3, 5, 67}, 1},
      {"rank0_b", {7, 97}, {}, 1},
      {"bcast_row", {7, 97}, {1, 97}, 2},
      {"bcast_row_rank1", {7, 97}, {97}, 2},
      {"bcast_col", {7, 97}, {7, 1}, 2},
      {"bcast_outer", {7, 1}, {1, 97}, 2},
      {"bcast_a", {1, 97}, {7, 97}, 2},
      {"rank3_rank1", {3, 5, 67}, {67}, 2},
      {"rank1_rank3", {5}, {2, 3, 5}, 2},
      {"rank4", {2, 1, 5, 7}, {3, 1, 7}, 2},
      {"empty_bcast", {0, 97}, {97}, 2},
  };
  for (const Variant& v : variants) {
    DocBuilder b;
    int a = b.Input("a", v.a, DomainOf(def, 0));
    int c = b.Input("b", v.b, DomainOf(def, 1));
    out.push_back(b.Finish(def.name, v.name, b.Op(def.name, {a, c}), v.version));
  }
  if (HasAttr(def, "scalar")) {
    // A literal operand: folded into the kernel as a WGSL constant.
    double scalar = DomainOf(def, 1) == Domain::kAwayFromZero ? -1.75 : 1.5;
    DocBuilder b;
    int a = b.Input("a", {7, 97}, DomainOf(def, 0));
    out.push_back(b.Finish(def.name, "scalar", b.Op(def.name, {a}, {{"scalar", scalar}}), 1));
  }
  if (TakesBigCase(def.name)) {
    DocBuilder b;
    int a = b.Input("a", {kBigLinear}, DomainOf(def, 0));
    int c = b.Input("b", {kBigLinear}, DomainOf(def, 1));
    out.push_back(b.Finish(def.name, "grid_over_65535", b.Op(def.name, {a, c}), 1));
  }
  IntegerBinaryCases(def, out);
}

// Comparisons of two masks (bool compares as 0 < 1), beside the f32 variants above.
void BoolOperandCases(const OpSpec& def, std::vector<Case>& out) {
  if (def.ports.size() != 2 || !Accepts(def.ports[0], DType::kBool)) return;
  const std::tuple<const char*, Shape, Shape> variants[] = {{"bool_same", {7, 97}, {7, 97}},
                                                            {"bool_bcast", {7, 97}, {7, 1}}};
  for (const auto& [name, a_shape, b_shape] : variants) {
    DocBuilder b;
    int a = b.Input("a", a_shape, Domain::kMask), c = b.Input("b", b_shape, Domain::kMask);
    out.push_back(b.Finish(def.name, name, b.Op(def.name, {a, c}), 3));
  }
}

// where: cond, a and b broadcast together (a and b f32, or both masks).
void WhereCases(const OpSpec& def, std::vector<Case>& out) {
  struct Variant {
    const char* name;
    Shape cond, a, b;
  };
  const Variant variants[] = {
      {"size1", {1}, {1}, {1}},
      {"prime1009", {1009}, {1009}, {1009}},
      {"rank3", {3, 5, 67}, {3, 5, 67}, {3, 5, 67}},
      {"bcast_cond_row", {1, 97}, {7, 97}, {7, 97}},
      {"bcast_values", {7, 97}, {97}, {7, 1}},
      {"bcast_all", {7, 1, 1}, {1, 5, 1}, {1, 1, 9}},
      {"rank0_values", {7, 97}, {}, {}},
      {"empty", {0, 97}, {97}, {0, 97}},
  };
  for (const Variant& v : variants) {
    DocBuilder b;
    int cond = b.Input("cond", v.cond, Domain::kMask);
    int a = b.Input("a", v.a, Domain::kCoarse), c = b.Input("b", v.b, Domain::kSigned);
    out.push_back(b.Finish(def.name, v.name, b.Op(def.name, {cond, a, c}), 3));
  }
  DocBuilder b;
  int cond = b.Input("cond", {7, 97}, Domain::kMask);
  int a = b.Input("a", {7, 97}, Domain::kMask), c = b.Input("b", {97}, Domain::kMask);
  out.push_back(b.Finish(def.name, "masks", b.Op(def.name, {cond, a, c}), 3));
  for (const auto& [name, domain] :
       {std::pair{"i32", Domain::kInt32}, std::pair{"u32", Domain::kUInt32}}) {
    DocBuilder ib;
    int icond = ib.Input("cond", {7, 97}, Domain::kMask);
    int ia = ib.Input("a", {7, 97}, domain), ic = ib.Input("b", {97}, domain);
    out.push_back(ib.Finish(def.name, name, ib.Op(def.name, {icond, ia, ic}), 3));
  }
}

// Ops with a mask port and operand attributes (masked_fill), or operand attributes alone
// (clamp): every subset of the attributes, and values on the data's grid (ties).
void OperandAttrCases(const OpSpec& def, std::vector<Case>& out) {
  std::vector<std::pair<std::string, Json>> settings;
  if (def.name == "clamp") {
    settings = {{"both", {{"min", -0.5}, {"max", 1.0}}},
                {"min_only", {{"min", 0.0}}},
                {"max_only", {{"max", -0.5}}},
                {"min_above_max", {{"min", 1.0}, {"max", -1.0}}},
                {"neither", Json::object()}};
  } else {
    settings = {{"value", {{"value", -3.25}}}, {"value_zero", {{"value", 0.0}}}};
  }
  const std::pair<const char*, Shape> shapes[] = {{"size1", {1}},
                                                  {"rank0", {}},
                                                  {"prime1009", {1009}},
                                                  {"rank3", {3, 5, 67}},
                                                  {"empty", {0, 5}}};
  for (const auto& [shape_name, shape] : shapes) {
    for (const auto& [setting, attrs] : settings) {
      DocBuilder b;
      std::vector<int> args = {b.Input("a", shape, Domain::kCoarse)};
      if (def.ports.size() == 2) args.push_back(b.Input("mask", shape, Domain::kMask));
      out.push_back(b.Finish(def.name, std::string(shape_name) + "_" + setting,
                             b.Op(def.name, args, attrs), 3));
    }
  }
  if (def.ports.size() == 2) {  // a mask that broadcasts to a
    DocBuilder b;
    int a = b.Input("a", {7, 97}, Domain::kCoarse), mask = b.Input("mask", {97}, Domain::kMask);
    out.push_back(
        b.Finish(def.name, "bcast_mask", b.Op(def.name, {a, mask}, settings[0].second), 3));
  }
  // Integer operands: bounds and fill values of the operand's dtype, compared and stored as
  // integers, the extremes among them.
  std::vector<std::tuple<std::string, Domain, Json>> integer_settings;
  if (def.name == "clamp") {
    integer_settings = {{"i32_both", Domain::kInt32, {{"min", -1000000}, {"max", 2147483000}}},
                        {"i32_min_only", Domain::kInt32, {{"min", 0}}},
                        {"i32_max_only", Domain::kSmallInt32, {{"max", -1}}},
                        {"i32_min_above_max", Domain::kSmallInt32, {{"min", 2}, {"max", -2}}},
                        {"i32_neither", Domain::kInt32, Json::object()},
                        {"u32_both", Domain::kUInt32, {{"min", 5}, {"max", 4000000000u}}},
                        {"u32_max_only", Domain::kUInt32, {{"max", 16777217}}}};
  } else {
    integer_settings = {{"i32_value_min", Domain::kInt32, {{"value", -2147483648LL}}},
                        {"u32_value_max", Domain::kUInt32, {{"value", 4294967295u}}}};
  }
  for (const auto& [setting, domain, attrs] : integer_settings) {
    for (const auto& [shape_name, shape] :
         {std::pair<const char*, Shape>{"prime1009", {1009}}, {"empty", {0, 5}}}) {
      DocBuilder b;
      std::vector<int> args = {b.Input("a", shape, domain)};
      if (def.ports.size() == 2) args.push_back(b.Input("mask", shape, Domain::kMask));
      out.push_back(b.Finish(def.name, setting + "_" + shape_name, b.Op(def.name, args, attrs), 3));
    }
  }
}

void CastCases(const OpSpec& def, std::vector<Case>& out) {
  const std::tuple<const char*, Domain, const char*> conversions[] = {
      {"f32_to_bool", Domain::kCoarse, "bool"}, {"bool_to_f32", Domain::kMask, "f32"},
      {"f32_to_f32", Domain::kSigned, "f32"},   {"bool_to_bool", Domain::kMask, "bool"},
      {"f32_to_i32", Domain::kWide, "i32"},     {"i32_to_f32", Domain::kInt32, "f32"},
      {"i32_to_bool", Domain::kInt32, "bool"},  {"bool_to_i32", Domain::kMask, "i32"},
      {"i32_to_i32", Domain::kInt32, "i32"},    {"f32_to_u32", Domain::kWide, "u32"},
      {"u32_to_f32", Domain::kUInt32, "f32"},   {"u32_to_bool", Domain::kUInt32, "bool"},
      {"bool_to_u32", Domain::kMask, "u32"},    {"i32_to_u32", Domain::kInt32, "u32"},
      {"u32_to_i32", Domain::kUInt32, "i32"},   {"u32_to_u32", Domain::kUInt32, "u32"}};
  const std::pair<const char*, Shape> shapes[] = {
      {"size1", {1}}, {"prime1009", {1009}}, {"rank3", {3, 5, 67}}, {"empty", {0, 5}}};
  for (const auto& [conversion, domain, to] : conversions) {
    for (const auto& [shape_name, shape] : shapes) {
      DocBuilder b;
      int a = b.Input("a", shape, domain);
      out.push_back(b.Finish(def.name, std::string(conversion) + "_" + shape_name,
                             b.Op(def.name, {a}, {{"dtype", to}}), 3));
    }
  }
}

// Counter-hash streams at several sizes, seeds and keep rates; the step is fed (a session's step
// number), so two runs of a case with different data seeds also draw different steps.
void RandomCases(const OpSpec& def, std::vector<Case>& out) {
  const std::pair<const char*, Shape> shapes[] = {{"size1", {1}},
                                                  {"rank0", {}},
                                                  {"prime1009", {1009}},
                                                  {"rank3", {3, 5, 67}},
                                                  {"empty", {0, 5}}};
  std::vector<std::pair<std::string, Json>> settings;
  if (def.name == "uniform") {
    settings = {{"seed0", {{"seed", 0}}}, {"seed_max", {{"seed", 4294967295u}}}};
  } else {
    settings = {{"p0", {{"p", 0.0}, {"seed", 7}}},
                {"p01", {{"p", 0.1}, {"seed", 7}}},
                {"p05", {{"p", 0.5}, {"seed", 123456789}}},
                {"p09", {{"p", 0.9}, {"seed", 42}}}};
  }
  for (const auto& [shape_name, shape] : shapes) {
    for (const auto& [setting, attrs] : settings) {
      DocBuilder b;
      std::vector<int> args;
      Json a = attrs;
      if (def.name == "uniform") {
        a["shape"] = shape;
      } else {
        args.push_back(b.Input("a", shape));
      }
      args.push_back(b.Input("step", {}, Domain::kStep));
      out.push_back(
          b.Finish(def.name, std::string(shape_name) + "_" + setting, b.Op(def.name, args, a), 3));
    }
  }
  if (TakesBigCase(def.name)) {
    DocBuilder b;
    int step = b.Input("step", {}, Domain::kStep);
    out.push_back(b.Finish(def.name, "grid_over_65535",
                           b.Op(def.name, {step}, {{"shape", {kBigLinear}}, {"seed", 3}}), 3));
  }
}

// Running sums along each axis of a rank-3 tensor, long lines, size-1 and empty axes.
void CumsumCases(const OpSpec& def, std::vector<Case>& out) {
  struct Variant {
    const char* name;
    Shape shape;
    int axis;
  };
  const Variant variants[] = {
      {"size1", {1}, 0},          {"rank1_1009", {1009}, 0},       {"axis0", {7, 13, 67}, 0},
      {"axis1", {7, 13, 67}, 1},  {"axis_neg1", {7, 13, 67}, -1},  {"long_line", {3, 4099}, 1},
      {"empty_axis", {0, 5}, 0},  {"empty_rest", {5, 0}, 0},
  };
  for (const Variant& v : variants) {
    DocBuilder b;
    int x = b.Input("x", v.shape);
    out.push_back(b.Finish(def.name, v.name, b.Op(def.name, {x}, {{"axis", v.axis}}), 5));
  }
}

void ReduceCases(const OpSpec& def, std::vector<Case>& out) {
  if (def.name == "cumsum") return CumsumCases(def, out);
  const std::pair<const char*, Shape> whole[] = {
      {"whole_size1", {1}},         {"whole_prime97", {97}},  {"whole_prime1009", {1009}},
      {"whole_rank3", {7, 13, 67}}, {"whole_65537", {65537}},  // more than 256 lanes x 256 elements
      {"whole_empty", {0}},  // the sum of nothing is 0 (the mean NaN)
  };
  for (const auto& [name, shape] : whole) {
    DocBuilder b;
    int x = b.Input("x", shape);
    out.push_back(b.Finish(def.name, name, b.Op(def.name, {x}), 1));
  }
  if (HasAttr(def, "keepdim")) {
    DocBuilder b;
    int x = b.Input("x", {7, 13});
    out.push_back(b.Finish(def.name, "whole_keepdim", b.Op(def.name, {x}, {{"keepdim", true}}), 2));
  }
  if (def.name == "sum") {  // exact i32 sums, wrapping modulo 2^32 (the extremes come first)
    const std::tuple<const char*, Shape, std::optional<int>> int_sums[] = {
        {"whole_i32_prime1009", {1009}, std::nullopt},
        {"whole_i32_65537", {65537}, std::nullopt},
        {"whole_i32_empty", {0}, std::nullopt},
        {"axis0_i32", {7, 13, 67}, 0},
        {"axis2_i32", {7, 13, 67}, 2},
        {"axis0_i32_empty_axis", {0, 5}, 0}};
    for (const auto& [name, shape, axis] : int_sums) {
      DocBuilder b;
      int x = b.Input("x", shape, Domain::kInt32);
      Json attrs = Json::object();
      if (axis) attrs["axis"] = *axis;
      out.push_back(b.Finish(def.name, name, b.Op(def.name, {x}, attrs), 2));
    }
  }
  if (!HasAttr(def, "axis")) return;
  struct AxisCase {
    const char* name;
    Shape shape;
    int axis;
    bool keepdim;
  };
  const AxisCase axes[] = {
      {"axis0", {7, 13, 67}, 0, false},        {"axis1", {7, 13, 67}, 1, false},
      {"axis2", {7, 13, 67}, 2, false},        {"axis_neg1", {7, 13, 67}, -1, false},
      {"axis1_keepdim", {7, 13, 67}, 1, true}, {"axis0_size1", {1, 97}, 0, false},
      {"axis0_rank1", {1009}, 0, false},       {"axis2_rank4", {2, 3, 5, 7}, 2, false},
      {"axis0_empty_axis", {0, 5}, 0, false},  // every output reduces nothing
      {"axis0_empty_rest", {5, 0}, 0, false},  // no outputs at all
  };
  for (const AxisCase& a : axes) {
    if (a.keepdim && !HasAttr(def, "keepdim")) continue;
    Json attrs = {{"axis", a.axis}};
    if (a.keepdim) attrs["keepdim"] = true;
    DocBuilder b;
    int x = b.Input("x", a.shape);
    out.push_back(b.Finish(def.name, a.name, b.Op(def.name, {x}, attrs), 2));
  }
}

// matmul_q: a[M, K] by b[N, K] of blocks, K in whole blocks: one block, several, zero (the sum of
// nothing), an odd number of q6_k blocks (210 bytes each, so rows of b start off a word
// boundary), empty M or N, and more outputs than a workgroup holds.
void QuantMatmulCases(const OpSpec& def, std::vector<Case>& out) {
  struct Variant {
    const char* name;
    int64_t m, k, n;
  };
  const Variant variants[] = {
      {"1x256x1", 1, 256, 1},     {"7x512x13", 7, 512, 13},  {"3x768x5", 3, 768, 5},
      {"65x256x3", 65, 256, 3},   {"2x1280x67", 2, 1280, 67}, {"empty_k", 3, 0, 4},
      {"empty_m", 0, 256, 4},     {"empty_n", 2, 256, 0},
  };
  for (DType dtype : {DType::kQ4K, DType::kQ6K}) {
    for (const Variant& v : variants) {
      DocBuilder b;
      int a = b.Input("a", {v.m, v.k});
      int w = b.Blocks("b", {v.n, v.k}, dtype);
      out.push_back(b.Finish(def.name, std::string(DTypeName(dtype)) + "_" + v.name,
                             b.Op(def.name, {a, w}), def.min_version));
    }
  }
}

// matmul_fixed: shapes as matmul's, each with the fraction bits its sums fit (values up to 2^13,
// so a sum of K products is at most K * 2^26): 0 for short sums, 1 for halves to round (an odd
// sum is a tie), 16 and 31 for long ones.
void FixedMatmulCases(const OpSpec& def, std::vector<Case>& out) {
  struct Variant {
    const char* name;
    Shape a, b;
    int frac_bits;
  };
  const Variant variants[] = {
      {"1x1x1_f0", {1, 1}, {1, 1}, 0},          {"rect_65x3x67_f0", {65, 3}, {3, 67}, 0},
      {"rect_9x31x11_f1", {9, 31}, {31, 11}, 1}, {"rect_7x97x13_f16", {7, 97}, {97, 13}, 16},
      {"row_1x1009x7_f8", {1, 1009}, {1009, 7}, 8}, {"col_33x5x1_f31", {33, 5}, {5, 1}, 31},
      {"empty_k_f4", {3, 0}, {0, 4}, 4},        {"empty_n_f4", {2, 3}, {3, 0}, 4},
  };
  for (const Variant& v : variants) {
    DocBuilder b;
    int a = b.Input("a", v.a, Domain::kFixed);
    int c = b.Input("b", v.b, Domain::kFixed);
    out.push_back(b.Finish(def.name, v.name,
                           b.Op(def.name, {a, c}, {{"frac_bits", v.frac_bits}}), def.min_version));
  }
}

void MatmulCases(const OpSpec& def, std::vector<Case>& out) {
  if (def.name == "matmul_q") return QuantMatmulCases(def, out);
  if (def.name == "matmul_fixed") return FixedMatmulCases(def, out);
  struct Variant {
    const char* name;
    Shape a, b;
    int version;
  };
  const Variant variants[] = {
      {"1x1x1", {1, 1}, {1, 1}, 1},
      {"rect_7x97x13", {7, 97}, {97, 13}, 1},
      {"rect_65x3x67", {65, 3}, {3, 67}, 1},
      {"row_1x1009x7", {1, 1009}, {1009, 7}, 1},
      {"col_1009x5x1", {1009, 5}, {5, 1}, 1},
      {"batched_3", {3, 7, 5}, {3, 5, 9}, 2},
      {"batch_bcast_b_rank2", {4, 7, 5}, {5, 9}, 2},
      {"batch_bcast_a_rank2", {7, 5}, {2, 5, 9}, 2},
      {"batch_bcast_both_rank4", {3, 1, 7, 5}, {1, 4, 5, 9}, 2},
      {"empty_k", {3, 0}, {0, 4}, 1},  // zeros: a sum of nothing, still written
      {"empty_n", {2, 3}, {3, 0}, 1},
      {"empty_batch", {0, 2, 3}, {3, 4}, 2},
  };
  for (const Variant& v : variants) {
    DocBuilder b;
    int a = b.Input("a", v.a);
    int c = b.Input("b", v.b);
    out.push_back(b.Finish(def.name, v.name, b.Op(def.name, {a, c}), v.version));
  }
  // Transposed operands, which the kernel reads with swapped strides (the transposes fold into
  // the matmul): the shapes of a backward pass, x^T @ g and g @ w^T.
  struct Transposed {
    const char* name;
    Shape a, b;
    bool ta, tb;
  };
  const Transposed folded[] = {
      {"at_b_97x7x13", {97, 7}, {97, 13}, true, false},
      {"a_bt_7x97x13", {7, 97}, {13, 97}, false, true},
      {"at_bt_65x33x17", {33, 65}, {17, 33}, true, true},
  };
  for (const Transposed& v : folded) {
    DocBuilder b;
    int a = b.Input("a", v.a), c = b.Input("b", v.b);
    if (v.ta) a = b.Op("transpose", {a});
    if (v.tb) c = b.Op("transpose", {c});
    out.push_back(b.Finish(def.name, v.name, b.Op(def.name, {a, c}), 1));
  }
}

// Python-slicing bounds: a null entry is JSON null (the end the step runs to).
Json Bounds(std::initializer_list<std::optional<int64_t>> v) {
  Json out = Json::array();
  for (const auto& b : v) out.push_back(b ? Json(*b) : Json(nullptr));
  return out;
}

struct SliceVariant {
  const char* name;
  Shape shape;
  Json starts, stops, steps;
  Shape sliced;  // the slice's shape, worked by hand with Python's slice.indices
  Domain domain = Domain::kSigned;
};

// Strided slices: steps above 1, negative steps, bounds past both ends, empty ranges (a stop before
// its start, an empty input), a rank-0 tensor, and bool and i32 tensors (moved as their stored
// bits).
std::vector<SliceVariant> SliceVariants() {
  const std::nullopt_t end = std::nullopt;
  return {
      {"step2", {97}, Bounds({1}), Bounds({end}), Bounds({2}), {48}},
      {"reverse", {97}, Bounds({end}), Bounds({end}), Bounds({-1}), {97}},
      {"negative_steps", {7, 97}, Bounds({-1, 90}), Bounds({0, 3}), Bounds({-2, -7}), {3, 13}},
      {"empty_stop_before_start",
       {7, 97},
       Bounds({5, 0}),
       Bounds({2, end}),
       Bounds({1, 1}),
       {0, 97}},
      {"empty_negative_step", {7, 97}, Bounds({1, 0}), Bounds({3, end}), Bounds({-1, 1}), {0, 97}},
      {"empty_input", {0, 5}, Bounds({0, 1}), Bounds({end, end}), Bounds({1, 2}), {0, 2}},
      {"bounds_past_ends",
       {3, 5, 67},
       Bounds({-100, 2, 1000}),
       Bounds({100, -1, -1000}),
       Bounds({1, 2, -3}),
       {3, 1, 23}},
      {"rank4",
       {2, 3, 5, 7},
       Bounds({1, 0, 4, -2}),
       Bounds({end, 3, 0, end}),
       Bounds({1, 2, -1, -1}),
       {1, 2, 4, 6}},
      {"wide_step", {1009}, Bounds({3}), Bounds({end}), Bounds({1000}), {2}},
      {"rank0", {}, Json::array(), Json::array(), Json::array(), {}},
      {"size1", {1}, Bounds({0}), Bounds({1}), Bounds({1}), {1}},
      {"bool",
       {5, 67},
       Bounds({end, -1}),
       Bounds({end, end}),
       Bounds({-2, -5}),
       {3, 14},
       Domain::kMask},
      {"i32",
       {5, 67},
       Bounds({1, 66}),
       Bounds({end, end}),
       Bounds({2, -3}),
       {2, 23},
       Domain::kInt32},
  };
}

void SliceCases(const OpSpec& def, std::vector<Case>& out) {
  for (const SliceVariant& v : SliceVariants()) {
    DocBuilder b;
    int x = b.Input("x", v.shape, v.domain);
    Json attrs = {{"starts", v.starts}, {"stops", v.stops}, {"steps", v.steps}};
    if (def.name == "slice") {
      out.push_back(b.Finish(def.name, v.name, b.Op(def.name, {x}, attrs), 4));
    } else {  // slice_scatter: the slice of x replaced by src
      int src = b.Input("src", v.sliced, v.domain);
      out.push_back(b.Finish(def.name, v.name, b.Op(def.name, {x, src}, attrs), 4));
    }
  }
}

void FlipCases(const OpSpec& def, std::vector<Case>& out) {
  const std::tuple<const char*, Shape, std::vector<int>, Domain> flips[] = {
      {"rank1", {97}, {0}, Domain::kSigned},
      {"rank2_last", {7, 97}, {1}, Domain::kSigned},
      {"rank3_outer_inner", {3, 5, 67}, {0, 2}, Domain::kSigned},
      {"rank4_all_negative", {2, 3, 5, 7}, {-1, 0, 1, 2}, Domain::kSigned},
      {"no_axes", {4, 5}, {}, Domain::kSigned},
      {"size1", {1}, {0}, Domain::kSigned},
      {"empty", {0, 5}, {0, 1}, Domain::kSigned},
      {"bool", {5, 67}, {1}, Domain::kMask},
      {"i32", {5, 67}, {0, 1}, Domain::kInt32},
  };
  for (const auto& [name, shape, axes, domain] : flips) {
    DocBuilder b;
    int x = b.Input("x", shape, domain);
    out.push_back(b.Finish(def.name, name, b.Op(def.name, {x}, {{"axes", axes}}), 4));
  }
}

// Constant padding: one side, both sides, none, around empty axes (an empty input grows into a
// tensor of only the value), rank 0, bool tensors padded with 1 and i32 ones with -2^31.
void PadCases(const OpSpec& def, std::vector<Case>& out) {
  struct Variant {
    const char* name;
    Shape shape;
    std::vector<std::vector<int64_t>> pads;
    double value;
    Domain domain = Domain::kSigned;
  };
  const Variant variants[] = {
      {"rank1_both", {97}, {{3, 5}}, 0.0},
      {"rank2_value", {7, 97}, {{1, 0}, {0, 2}}, -1.5},
      {"rank3_one_axis", {3, 5, 67}, {{0, 0}, {2, 2}, {0, 0}}, 2.25},
      {"rank4", {2, 3, 5, 7}, {{1, 1}, {0, 1}, {2, 0}, {1, 3}}, 0.5},
      {"no_padding", {4, 5}, {{0, 0}, {0, 0}}, 9.0},
      {"wide", {1}, {{64, 65}}, 3.0},
      {"empty_input", {0, 5}, {{2, 1}, {1, 1}}, 7.0},
      {"empty_stays_empty", {0, 5}, {{0, 0}, {1, 1}}, 7.0},
      {"rank0", {}, {}, 1.0},
      {"bool", {5, 67}, {{1, 2}, {3, 0}}, 1.0, Domain::kMask},
      {"i32", {5, 67}, {{1, 2}, {3, 0}}, -2147483648.0, Domain::kInt32},
  };
  for (const Variant& v : variants) {
    DocBuilder b;
    int x = b.Input("x", v.shape, v.domain);
    Json attrs = {{"pads", v.pads}, {"value", v.value}};
    if (v.pads.empty()) attrs["pads"] = Json::array();
    out.push_back(b.Finish(def.name, v.name, b.Op(def.name, {x}, attrs), 4));
  }
}

// concat and stack: one entry, a list longer than one kernel binds (lowered as a tree of
// kernels), entries empty along the axis, negative axes, a repeated entry, bool and i32.
void ListCases(const OpSpec& def, std::vector<Case>& out) {
  const bool stack = def.name == "stack";
  struct Variant {
    const char* name;
    std::vector<Shape> shapes;
    int axis;
    Domain domain = Domain::kSigned;
    bool repeat_first = false;  // the first entry listed once more at the end
  };
  std::vector<Variant> variants;
  std::vector<Shape> many;  // 20 entries: three kernels of 7, 7 and 6, then one joining them
  for (int k = 0; k < 20; ++k) many.push_back(stack ? Shape{3, 5} : Shape{3, 1 + k % 4});
  if (!stack) {
    variants = {
        {"one_entry", {{5, 7}}, 0},
        {"rank1", {{97}, {1}, {64}}, 0},
        {"rank2_axis1", {{7, 3}, {7, 97}}, 1},
        {"rank3_negative_axis", {{2, 3, 5}, {2, 4, 5}, {2, 1, 5}}, -2},
        {"rank4_last", {{2, 3, 5, 7}, {2, 3, 5, 1}}, 3},
        {"empty_entries", {{0, 5}, {3, 5}, {0, 5}, {2, 5}}, 0},
        {"all_empty", {{2, 0}, {2, 0}}, 1},
        {"empty_other_axis", {{0, 3}, {0, 4}}, 1},
        {"many_entries", many, -1},
        {"repeated_entry", {{4, 5}, {2, 5}}, 0, Domain::kSigned, true},
        {"bool", {{5, 67}, {5, 3}}, 1, Domain::kMask},
        {"i32", {{5, 67}, {2, 67}, {1, 67}}, 0, Domain::kInt32},
    };
  } else {
    variants = {
        {"one_entry", {{5, 7}}, 0},
        {"rank0_entries", {{}, {}, {}}, 0},
        {"rank1_axis_end", {{97}, {97}}, 1},
        {"rank2_middle", {{7, 3}, {7, 3}, {7, 3}}, 1},
        {"rank3_negative_axis", {{2, 3, 5}, {2, 3, 5}}, -1},
        {"rank3_most_negative", {{2, 3, 5}, {2, 3, 5}}, -4},
        {"empty_entries", {{0, 5}, {0, 5}}, 1},
        {"many_entries", many, 1},
        {"repeated_entry", {{4, 5}, {4, 5}}, -3, Domain::kSigned, true},
        {"bool", {{5, 67}, {5, 67}}, 2, Domain::kMask},
        {"i32", {{5, 67}, {5, 67}, {5, 67}}, 0, Domain::kInt32},
    };
  }
  for (const Variant& v : variants) {
    DocBuilder b;
    std::vector<int> entries;
    for (size_t k = 0; k < v.shapes.size(); ++k)
      entries.push_back(b.Input("x" + std::to_string(k), v.shapes[k], v.domain));
    if (v.repeat_first) entries.push_back(entries.front());
    out.push_back(b.Finish(def.name, v.name, b.Op(def.name, entries, {{"axis", v.axis}}), 4));
  }
}

void LayoutCases(const OpSpec& def, std::vector<Case>& out) {
  if (def.name == "pad") return PadCases(def, out);
  if (def.ListPort()) return ListCases(def, out);
  if (def.name == "slice" || def.name == "slice_scatter") return SliceCases(def, out);
  if (def.name == "flip") return FlipCases(def, out);
  if (HasAttr(def, "dims")) {  // a permutation of the axes
    const std::tuple<const char*, Shape, std::vector<int>> perms[] = {
        {"rank2", {7, 97}, {1, 0}},
        {"rank3", {3, 5, 7}, {2, 0, 1}},
        {"rank4", {2, 3, 5, 7}, {3, 1, 0, 2}},
        {"unit_axes", {1, 97, 1}, {2, 1, 0}},
        {"negative_axis", {5, 7}, {-1, 0}},
        {"identity", {3, 5, 7}, {0, 1, 2}},
        {"size1", {1, 1}, {1, 0}},
        {"empty", {2, 0, 3}, {2, 0, 1}},
    };
    for (const auto& [name, shape, dims] : perms) {
      DocBuilder b;
      int x = b.Input("x", shape);
      out.push_back(b.Finish(def.name, name, b.Op(def.name, {x}, {{"dims", dims}}), 2));
    }
    return;
  }
  if (HasAttr(def, "shape")) {  // same elements, new shape
    std::vector<std::tuple<const char*, Shape, std::vector<int64_t>>> shapes = {
        {"rank2", {7, 97}, {97, 7}},       {"add_unit_axes", {1009}, {1, 1009, 1}},
        {"infer", {2, 3, 5, 7}, {-1, 35}}, {"rank3", {3, 5, 67}, {67, 15}},
        {"size1", {1}, {1, 1, 1, 1}},      {"empty", {0, 5}, {5, 0}},
    };
    if (TakesBigCase(def.name)) shapes.push_back({"grid_over_65535", {kBigSide, kBigSide}, {-1}});
    for (const auto& [name, shape, to] : shapes) {
      DocBuilder b;
      int x = b.Input("x", shape);
      out.push_back(b.Finish(def.name, name, b.Op(def.name, {x}, {{"shape", to}}), 2));
    }
    return;
  }
  if (def.attrs.empty() && def.ports.size() == 1) {  // a rank-2 transpose
    std::vector<std::pair<const char*, Shape>> shapes = {
        {"1x1", {1, 1}},         {"7x97", {7, 97}},   {"1x1009", {1, 1009}},
        {"97x1009", {97, 1009}}, {"64x65", {64, 65}}, {"empty", {0, 5}},
    };
    if (TakesBigCase(def.name)) shapes.push_back({"grid_over_65535", {kBigSide, kBigSide}});
    for (const auto& [name, shape] : shapes) {
      DocBuilder b;
      int x = b.Input("x", shape);
      out.push_back(b.Finish(def.name, name, b.Op(def.name, {x}), 1));
    }
  }
}

// Index ops: the index is fed, drawn from the indexed axis (longer than it, so positions repeat,
// which fixes the order of index_add and scatter_add sums), on the first, middle and last axis (a
// negative one too); empty indices and empty operands; bool and i32 operands for the gathers (the
// i32 extremes move as bits); and many repeats into few slices for the sums.
void IndexCases(const OpSpec& def, std::vector<Case>& out) {
  struct Variant {
    const char* name;
    Shape a;
    Shape index;
    int axis;
    Domain domain = Domain::kSigned;
  };
  const bool sums = def.name == "index_add" || def.name == "scatter_add";
  const bool list = def.name == "index_select" || def.name == "index_add";  // a rank-1 index
  std::vector<Variant> variants;
  if (list) {
    variants = {{"rank2_axis0", {5, 7}, {9}, 0},
                {"rank3_axis_negative", {3, 67, 5}, {130}, -2},
                {"rank1", {97}, {1009}, 0},
                {"rank4_last", {2, 3, 5, 7}, {11}, 3},
                {"size1", {1}, {1}, 0},
                {"empty_index", {5, 7}, {0}, 0},
                {"empty_other_axis", {0, 7}, {4}, 1},
                {"many_repeats", {3, 4}, {200}, 0}};
  } else {
    variants = {{"rank2_axis0_longer", {5, 7}, {9, 7}, 0},
                {"rank2_axis1_narrower", {5, 7}, {4, 20}, 1},
                {"rank3_axis_negative", {3, 67, 5}, {2, 130, 5}, -2},
                {"rank1", {97}, {1009}, 0},
                {"size1", {1}, {1}, 0},
                {"empty_index", {5, 7}, {0, 7}, 0},
                {"empty_operand", {0, 7}, {0, 3}, 1},
                {"many_repeats", {3, 4}, {200, 4}, 0}};
  }
  if (!sums)
    variants.push_back({"bool", {5, 67}, list ? Shape{11} : Shape{11, 67}, 0, Domain::kMask});
  // i32 data: moved as bits by the gathers, added exactly (modulo 2^32) by the sums.
  variants.push_back({"i32", {12, 5}, list ? Shape{8} : Shape{8, 5}, 0, Domain::kInt32});
  if (sums)
    variants.push_back(
        {"i32_many_repeats", {3, 4}, list ? Shape{200} : Shape{200, 4}, 0, Domain::kInt32});
  for (const Variant& v : variants) {
    DocBuilder b;
    const int axis = v.axis < 0 ? v.axis + static_cast<int>(v.a.size()) : v.axis;
    int a = b.Input("a", v.a, v.domain);
    int index = b.Input("index", v.index, Domain::kIndex, static_cast<int>(v.a[axis]));
    std::vector<int> args = {a, index};
    if (sums) {
      Shape src = v.index;
      if (list) {
        src = v.a;
        src[axis] = v.index[0];
      }
      args.push_back(b.Input("src", src, v.domain));
    }
    out.push_back(b.Finish(def.name, v.name, b.Op(def.name, args, {{"axis", v.axis}}), 4));
  }
}

void StencilCases(const OpSpec& def, std::vector<Case>& out) {
  // Random 0/1 grids on a torus, including degenerate ones where a cell is its own neighbour.
  const std::pair<const char*, Shape> grids[] = {
      {"1x1", {1, 1}},       {"1x5", {1, 5}},     {"7x97", {7, 97}}, {"64x64", {64, 64}},
      {"3x1009", {3, 1009}}, {"31x29", {31, 29}}, {"empty", {0, 5}},
  };
  for (const auto& [name, shape] : grids) {
    DocBuilder b;
    int x = b.Input("x", shape, Domain::kBinary);
    out.push_back(b.Finish(def.name, name, b.Op(def.name, {x}), 1));
  }
}

// Shifts under each boundary: shifts past the axis (wrap goes round more than once), negative
// shifts, size-1 and empty axes, bool tensors; then the five-point stencil written as a sum of
// shifts, which fuses into one kernel of shifted loads.
void ShiftCases(const OpSpec& def, std::vector<Case>& out) {
  struct Variant {
    const char* name;
    Shape shape;
    std::vector<int64_t> shifts;
    Domain domain = Domain::kSigned;
  };
  const Variant variants[] = {
      {"size1", {1}, {2}},
      {"rank1", {97}, {3}},
      {"rank1_past_end", {7}, {-23}},
      {"rank2", {31, 29}, {1, -2}},
      {"rank2_still", {5, 67}, {0, 0}},
      {"rank3", {3, 5, 67}, {-1, 2, 7}},
      {"size1_axis", {1, 9}, {1, -1}},
      {"empty", {0, 5}, {1, 1}},
      {"bool", {9, 13}, {2, -3}, Domain::kMask},
  };
  for (const char* boundary : {"zero", "wrap", "clamp"}) {
    for (const Variant& v : variants) {
      DocBuilder b;
      int x = b.Input("x", v.shape, v.domain);
      out.push_back(b.Finish(def.name, std::string(boundary) + "_" + v.name,
                             b.Op(def.name, {x}, {{"shifts", v.shifts}, {"boundary", boundary}}),
                             5));
    }
    DocBuilder b;
    int u = b.Input("u", {37, 41});
    int sum = b.Op(def.name, {u}, {{"shifts", {1, 0}}, {"boundary", boundary}});
    for (std::vector<int64_t> s : {std::vector<int64_t>{-1, 0}, {0, 1}, {0, -1}})
      sum = b.Op("add", {sum, b.Op(def.name, {u}, {{"shifts", s}, {"boundary", boundary}})});
    out.push_back(b.Finish(def.name, std::string(boundary) + "_five_point", sum, 5));
  }
}

// Butterflies along each axis: masks of one and of several bits, the highest bit of the axis,
// mask 0, a size-1 and an empty axis, axes that are multiples of the mask's block but not powers
// of 2, integer and bool tensors; then one bitonic compare-exchange stage (k = 16, j = 4 along
// rows of 64), which fuses into one kernel of a permuted load and index tests.
void ButterflyCases(const OpSpec& def, std::vector<Case>& out) {
  struct Variant {
    const char* name;
    Shape shape;
    int64_t mask, axis;
    Domain domain = Domain::kSigned;
  };
  const Variant variants[] = {
      {"rank1_bit0", {64}, 1, 0},
      {"rank1_top_bit", {64}, 32, 0},
      {"rank1_all_bits", {64}, 63, 0},
      {"rank1_not_power_of_2", {12}, 3, 0},
      {"mask0", {7}, 0, 0},
      {"size1", {1}, 0, 0},
      {"rank2_rows", {6, 8}, 1, 0},
      {"rank2_cols", {6, 8}, 5, 1},
      {"rank3_last", {3, 4, 16}, 9, -1},
      {"empty", {0, 4}, 3, 1},
      {"i32", {64}, 17, 0, Domain::kInt32},
      {"u32", {5, 32}, 6, 1, Domain::kUInt32},
      {"bool", {8, 4}, 2, 1, Domain::kMask},
  };
  for (const Variant& v : variants) {
    DocBuilder b;
    int x = b.Input("x", v.shape, v.domain);
    out.push_back(b.Finish(def.name, v.name,
                           b.Op(def.name, {x}, {{"mask", v.mask}, {"axis", v.axis}}), 6));
  }
  DocBuilder b;
  int x = b.Input("x", {8, 64});
  int partner = b.Op(def.name, {x}, {{"mask", 4}, {"axis", 1}});
  int index = b.Op("arange", {}, {{"shape", {64}}});
  auto bit_clear = [&](int bit) {
    return b.Op("eq", {b.Op("bitwise_and", {index}, {{"scalar", bit}})}, {{"scalar", 0}});
  };
  int ascending = b.Op("eq", {bit_clear(4), bit_clear(16)});
  int stage = b.Op("where", {ascending, b.Op("minimum", {x, partner}),
                             b.Op("maximum", {x, partner})});
  out.push_back(b.Finish(def.name, "bitonic_stage", stage, 6));
}

// Index ramps along each axis in each dtype, alone (a kernel that writes the ramp) and read by
// an elementwise op over a larger tensor (the ramp broadcast, computed in that op's kernel).
void ArangeCases(const OpSpec& def, std::vector<Case>& out) {
  struct Variant {
    const char* name;
    Shape shape;
    int64_t axis;
    const char* dtype;
  };
  const Variant variants[] = {
      {"size1", {1}, 0, "i32"},         {"rank1", {1009}, 0, "i32"},
      {"rank1_u32", {97}, 0, "u32"},    {"rank1_f32", {1009}, 0, "f32"},
      {"rank2_rows", {7, 97}, 0, "i32"}, {"rank2_cols", {7, 97}, -1, "f32"},
      {"rank3", {3, 5, 67}, 1, "u32"},  {"empty", {0, 5}, 1, "i32"},
  };
  for (const Variant& v : variants) {
    DocBuilder b;
    out.push_back(b.Finish(def.name, v.name,
                           b.Op(def.name, {}, {{"shape", v.shape}, {"axis", v.axis},
                                               {"dtype", v.dtype}}),
                           6));
  }
  // The ramp broadcast into a larger operand, and an operand of one element broadcast into it.
  const std::tuple<const char*, Shape, Shape, int64_t> broadcast[] = {
      {"bcast_cols", {7, 97}, {97}, 0},
      {"bcast_rows", {7, 97}, {7, 1}, 0},
      {"bcast_size1", {7, 97}, {1, 97}, 0},
      {"size1_operand", {1}, {5, 3}, 1}};
  for (const auto& [name, operand, shape, axis] : broadcast) {
    DocBuilder b;
    int x = b.Input("x", operand);
    int ramp = b.Op(def.name, {}, {{"shape", shape}, {"axis", axis}, {"dtype", "f32"}});
    out.push_back(b.Finish(def.name, name, b.Op("add", {x, ramp}), 6));
  }
}

// Bit operations take i32 and u32 only: the integer cases of the arithmetic ops (extremes,
// random bits, broadcasting, scalars), then for the shifts counts inside and outside [0, 32):
// negative and small i32 counts, a u32 count made of small values and their wraps past 2^32 - 4,
// and constant counts at the edges.
void BitCases(const OpSpec& def, std::vector<Case>& out) {
  IntegerBinaryCases(def, out);
  {
    DocBuilder b;
    int a = b.Input("a", {1}, Domain::kInt32), c = b.Input("b", {1}, Domain::kSmallInt32);
    out.push_back(b.Finish(def.name, "i32_size1", b.Op(def.name, {a, c}), 6));
  }
  if (def.name != "shift_left" && def.name != "shift_right") return;
  {
    DocBuilder b;
    int a = b.Input("a", {1009}, Domain::kInt32), n = b.Input("b", {1009}, Domain::kSmallInt32);
    out.push_back(b.Finish(def.name, "i32_small_counts", b.Op(def.name, {a, n}), 6));
  }
  {
    DocBuilder b;
    int a = b.Input("a", {1009}, Domain::kUInt32), n = b.Input("b", {1009}, Domain::kSmallInt32);
    int counts = b.Op("cast", {n}, {{"dtype", "u32"}});
    out.push_back(b.Finish(def.name, "u32_small_counts", b.Op(def.name, {a, counts}), 6));
  }
  for (double count : {0.0, 1.0, 31.0, 32.0, 33.0}) {
    for (Domain domain : {Domain::kInt32, Domain::kUInt32}) {
      DocBuilder b;
      int a = b.Input("a", {97}, domain);
      const std::string name = std::string(domain == Domain::kInt32 ? "i32" : "u32") +
                               "_count_" + std::to_string(static_cast<int>(count));
      out.push_back(b.Finish(def.name, name, b.Op(def.name, {a}, {{"scalar", count}}), 6));
    }
  }
  DocBuilder b;
  int a = b.Input("a", {97}, Domain::kInt32);
  out.push_back(b.Finish(def.name, "i32_count_minus_1", b.Op(def.name, {a}, {{"scalar", -1.0}}), 6));
}

// Softmax and log-softmax over the last axis: single rows, long rows, many short rows, rank 3.
void NormalizeCases(const OpSpec& def, std::vector<Case>& out) {
  const std::pair<const char*, Shape> shapes[] = {
      {"size1", {1}},      {"row97", {97}},       {"7x97", {7, 97}},       {"1009x10", {1009, 10}},
      {"64x10", {64, 10}}, {"rank3", {3, 5, 67}}, {"long_row", {2, 4099}}, {"empty", {0, 5}},
  };
  for (const auto& [name, shape] : shapes) {
    DocBuilder b;
    int x = b.Input("x", shape);
    out.push_back(b.Finish(def.name, name, b.Op(def.name, {x}), 2));
  }
}

// Cross-entropy over [N, C] logits with labels in range, and its gradient with an upstream scalar.
void LossCases(const OpSpec& def, std::vector<Case>& out) {
  const std::pair<const char*, Shape> shapes[] = {
      {"1x1", {1, 1}},   {"1x10", {1, 10}},       {"64x10", {64, 10}},
      {"97x7", {97, 7}}, {"1009x10", {1009, 10}}, {"5x1000", {5, 1000}},
  };
  for (const auto& [name, shape] : shapes) {
    DocBuilder b;
    int x = b.Input("logits", shape);
    int t = b.Input("target", {shape[0]}, Domain::kLabels, static_cast<int>(shape[1]));
    std::vector<int> args = {x, t};
    if (def.ports.size() == 3) args.push_back(b.Input("upstream", {}));
    out.push_back(b.Finish(def.name, name, b.Op(def.name, args), 2));
  }
}

// Optimizer updates at several sizes, steps and settings (first step, bias corrections, weight
// decay, Nesterov, AdamW's decoupled decay).
void OptimizerCases(const OpSpec& def, std::vector<Case>& out) {
  struct Setting {
    const char* name;
    Json attrs;
  };
  std::vector<Setting> settings;
  if (def.name == "sgd_update") {
    settings = {{"plain", {{"lr", 0.1}}}, {"decay", {{"lr", 0.05}, {"weight_decay", 0.01}}}};
  } else if (def.name.rfind("momentum", 0) == 0) {
    settings = {
        {"plain", {{"lr", 0.1}, {"momentum", 0.9}}},
        {"nesterov", {{"lr", 0.05}, {"momentum", 0.8}, {"nesterov", true}, {"weight_decay", 0.01}}},
        {"dampening", {{"lr", 0.05}, {"momentum", 0.9}, {"dampening", 0.1}}}};
  } else {
    settings = {{"adam", {{"lr", 1e-3}}},
                {"adam_decay", {{"lr", 1e-2}, {"weight_decay", 0.01}}},
                {"adamw", {{"lr", 1e-3}, {"weight_decay", 0.01}, {"decoupled", true}}}};
  }
  const std::pair<const char*, Shape> shapes[] = {
      {"size1", {1}}, {"prime1009", {1009}}, {"784x256", {784, 256}}};
  for (const auto& [shape_name, shape] : shapes) {
    for (const Setting& s : settings) {
      DocBuilder b;
      std::vector<int> args;
      for (const ops::Port& p : def.ports) {
        const std::string& port = p.name;
        Domain d = port == "t" ? Domain::kStep : port == "v" ? Domain::kPositive : Domain::kSigned;
        args.push_back(b.Input(port, port == "t" ? Shape{} : shape, d));
      }
      out.push_back(b.Finish(def.name, std::string(shape_name) + "_" + s.name,
                             b.Op(def.name, args, s.attrs), 2));
    }
  }
}

// Chains of 3-5 elementwise ops that the compiler fuses into one kernel, with broadcast operands,
// literals and a reused input. Each stays inside every op's domain by construction.
std::vector<Case> FusedCases() {
  std::vector<Case> out;
  {  // (x * y + z_row) -> relu
    DocBuilder b;
    int x = b.Input("x", {7, 97}), y = b.Input("y", {7, 97}), z = b.Input("z", {97});
    int t = b.Op("relu", {b.Op("add", {b.Op("mul", {x, y}), z})});
    out.push_back(b.Finish(kFusedGroup, "mul_add_relu", t, 2));
  }
  {  // exp -> log -> tanh -> neg
    DocBuilder b;
    int x = b.Input("x", {1009});
    int t = b.Op("neg", {b.Op("tanh", {b.Op("log", {b.Op("exp", {x})})})});
    out.push_back(b.Finish(kFusedGroup, "exp_log_tanh_neg", t, 2));
  }
  {  // sigmoid((x - y_row) * 0.5) -> gelu, times x again
    DocBuilder b;
    int x = b.Input("x", {5, 7, 9}), y = b.Input("y", {9});
    int s = b.Op("mul", {b.Op("sub", {x, y})}, {{"scalar", 0.5}});
    int t = b.Op("mul", {b.Op("gelu", {b.Op("sigmoid", {s})}), x});
    out.push_back(b.Finish(kFusedGroup, "sub_mul_sigmoid_gelu_mul", t, 2));
  }
  {  // log(sqrt(x * x + 1) / y_col), y > 0
    DocBuilder b;
    int x = b.Input("x", {97, 13}), y = b.Input("y", {97, 1}, Domain::kPositive);
    int r = b.Op("sqrt", {b.Op("add", {b.Op("mul", {x, x})}, {{"scalar", 1.0}})});
    int t = b.Op("log", {b.Op("div", {r, y})});
    out.push_back(b.Finish(kFusedGroup, "mul_add_sqrt_div_log", t, 2));
  }
  {  // positive(x - y_outer) * gelu_grad(x, z)
    DocBuilder b;
    int x = b.Input("x", {7, 97}), y = b.Input("y", {1, 97}), z = b.Input("z", {7, 1});
    int t = b.Op("mul", {b.Op("positive", {b.Op("sub", {x, y})}), b.Op("gelu_grad", {x, z})});
    out.push_back(b.Finish(kFusedGroup, "sub_positive_gelu_grad_mul", t, 2));
  }
  {  // masks inside one kernel: where(gt(x, y_row), x * 2, masked_fill(x, lt(x, 0), -1))
    DocBuilder b;
    int x = b.Input("x", {7, 97}, Domain::kCoarse), y = b.Input("y", {97}, Domain::kCoarse);
    int twice = b.Op("mul", {x}, {{"scalar", 2.0}});
    int filled = b.Op("masked_fill", {x, b.Op("lt", {x}, {{"scalar", 0.0}})}, {{"value", -1.0}});
    int t = b.Op("where", {b.Op("gt", {x, y}), twice, filled});
    out.push_back(b.Finish(kFusedGroup, "gt_mul_lt_masked_fill_where", t, 3));
  }
  {  // casts in a chain: the bool made 0/1 inside the kernel, cast(cast(x, bool), f32) * clamp(x)
    DocBuilder b;
    int x = b.Input("x", {1009}, Domain::kCoarse);
    int nonzero = b.Op("cast", {b.Op("cast", {x}, {{"dtype", "bool"}})}, {{"dtype", "f32"}});
    int t = b.Op("mul", {nonzero, b.Op("clamp", {x}, {{"min", -1.0}, {"max", 1.0}})});
    out.push_back(b.Finish(kFusedGroup, "cast_cast_clamp_mul", t, 3));
  }
  {  // integers in one kernel: where(gt(x, y_row), x * y_row + 3, -x), i32 wrapping throughout
    DocBuilder b;
    int x = b.Input("x", {7, 97}, Domain::kInt32), y = b.Input("y", {97}, Domain::kInt32);
    int prod = b.Op("add", {b.Op("mul", {x, y})}, {{"scalar", 3}});
    int t = b.Op("where", {b.Op("gt", {x, y}), prod, b.Op("neg", {x})});
    out.push_back(b.Finish(kFusedGroup, "i32_gt_mul_add_neg_where", t, 3));
  }
  {  // conversions inside one kernel: cast(clamp(cast(f, u32) - u, 5, 4e9), f32) + f
    DocBuilder b;
    int f = b.Input("f", {1009}, Domain::kWide), u = b.Input("u", {1009}, Domain::kUInt32);
    int diff = b.Op("sub", {b.Op("cast", {f}, {{"dtype", "u32"}}), u});
    int clamped = b.Op("clamp", {diff}, {{"min", 5}, {"max", 4000000000u}});
    int t = b.Op("add", {b.Op("cast", {clamped}, {{"dtype", "f32"}}), f});
    out.push_back(b.Finish(kFusedGroup, "u32_cast_sub_clamp_cast_add", t, 3));
  }
  {  // f16 inside one kernel (f32 at both ends, so no f16 storage): each f16 step rounds once,
     // cast(cast(x, f16) * cast(y, f16) + 1000.3 (an f16 scalar), f32)
    DocBuilder b;
    int x = b.Input("x", {1009}), y = b.Input("y", {1009}, Domain::kWide);
    int hx = b.Op("cast", {x}, {{"dtype", "f16"}}), hy = b.Op("cast", {y}, {{"dtype", "f16"}});
    int sum = b.Op("add", {b.Op("mul", {hx, hy})}, {{"scalar", 1000.3}});
    out.push_back(
        b.Finish(kFusedGroup, "f16_cast_mul_add_cast", b.Op("cast", {sum}, {{"dtype", "f32"}}), 3));
  }
  {  // f32 -> f16 rounding into the subnormals and back: cast(cast(x * 3e-5, f16), f32)
    DocBuilder b;
    int x = b.Input("x", {1009}, Domain::kWide);
    int h = b.Op("cast", {b.Op("mul", {x}, {{"scalar", 3e-5}})}, {{"dtype", "f16"}});
    out.push_back(
        b.Finish(kFusedGroup, "f16_mul_cast_cast", b.Op("cast", {h}, {{"dtype", "f32"}}), 3));
  }
  {  // the grid of more than 65535 workgroups, fused: relu(x + y) * 0.25
    DocBuilder b;
    int x = b.Input("x", {kBigLinear}), y = b.Input("y", {kBigLinear});
    int t = b.Op("mul", {b.Op("relu", {b.Op("add", {x, y})})}, {{"scalar", 0.25}});
    out.push_back(b.Finish(kFusedGroup, "grid_over_65535", t, 1));
  }
  return out;
}

}  // namespace

std::vector<std::string> Groups() {
  std::vector<std::string> groups;
  for (const OpSpec& def : ops::BuiltinOps()->ops())
    if (def.kind != OpKind::kSource) groups.push_back(def.name);
  groups.push_back(kFusedGroup);
  return groups;
}

std::vector<Case> CasesFor(const std::string& group, const ops::OpTable& table) {
  if (group == kFusedGroup) return FusedCases();
  std::vector<Case> out;
  const OpSpec* def = table.Find(group);
  if (!def) return out;
  switch (def->kind) {
    case OpKind::kSource:
      break;
    case OpKind::kUser:
      return UserOpGroupCases(*def, table);
    case OpKind::kElementwise:
      if (def->ports.at(0).dtypes == std::vector<DType>{DType::kI32, DType::kU32}) {
        BitCases(*def, out);
      } else if (def->name == "where") {
        WhereCases(*def, out);
      } else if (def->name == "cast") {
        CastCases(*def, out);
      } else if (def->Arity() != def->ports.size()) {
        OperandAttrCases(*def, out);
      } else if (def->ports.size() == 1) {
        UnaryCases(*def, out);
      } else if (def->ports.size() == 2) {
        BinaryCases(*def, out);
        BoolOperandCases(*def, out);
      }
      break;
    case OpKind::kReduce:
      ReduceCases(*def, out);
      break;
    case OpKind::kMatmul:
      MatmulCases(*def, out);
      break;
    case OpKind::kLayout:
      LayoutCases(*def, out);
      break;
    case OpKind::kStencil:
      StencilCases(*def, out);
      break;
    case OpKind::kNeighbour:
      if (def->name == "butterfly")
        ButterflyCases(*def, out);
      else
        ShiftCases(*def, out);
      break;
    case OpKind::kPosition:
      ArangeCases(*def, out);
      break;
    // Kinds with no generator yet: an op of one of them has no cases, which the registry test
    // reports.
    case OpKind::kNormalize:
      NormalizeCases(*def, out);
      break;
    case OpKind::kLoss:
      LossCases(*def, out);
      break;
    case OpKind::kOptimizer:
      OptimizerCases(*def, out);
      break;
    case OpKind::kRandom:
      RandomCases(*def, out);
      break;
    case OpKind::kIndex:
      IndexCases(*def, out);
      break;
  }
  return out;
}

std::vector<SpecialValueCase> SpecialValueCases() {
  constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
  constexpr float kInf = std::numeric_limits<float>::infinity();
  struct Input {
    const char* name;
    Shape shape;
    std::vector<float> values;
  };
  struct Row {
    const char* op;
    const char* name;
    std::vector<Input> inputs;
    const char* attrs;
    int version;
    std::vector<float> want;
  };
  const Row rows[] = {
#include "conform/special_values.inc"
  };
  std::vector<SpecialValueCase> out;
  for (const Row& r : rows) {
    DocBuilder b;
    SpecialValueCase s;
    std::vector<int> args;
    const OpSpec* def = ops::BuiltinOps()->Find(r.op);
    for (const Input& in : r.inputs) {
      // An input named after a mask port (where's cond, masked_fill's mask) is a bool, one named
      // after an index port i32.
      const ops::Port* port = def ? def->FindPort(in.name) : nullptr;
      // An input of a port of block dtypes holds a block dtype's bytes (q4_k: the values of
      // matmul_q's rows are 144 bytes per 256, q6_k 210): its dtype is the one whose block count
      // the bytes fill.
      if (port && IsBlockDType(port->dtypes.front())) {
        DType dtype = DType::kQ4K;
        for (DType d : port->dtypes)
          if (StorageBytes(MakeType(in.shape).elements(), d) ==
              static_cast<int64_t>(in.values.size()))
            dtype = d;
        args.push_back(b.Blocks(in.name, in.shape, dtype));
        const std::vector<double> bytes(in.values.begin(), in.values.end());
        s.feeds[in.name] = HostTensor::FromValues(MakeType(in.shape, dtype), bytes);
        continue;
      }
      const bool mask = port && port->dtypes == std::vector<DType>{DType::kBool};
      const bool index = port && port->role == ops::PortRole::kIndex;
      // An i32 operand (matmul_fixed's, a bit operation's): the values as they are, within the
      // i32 range.
      const bool integer =
          port && !index &&
          (port->dtypes == std::vector<DType>{DType::kI32} ||
           port->dtypes == std::vector<DType>{DType::kI32, DType::kU32});
      args.push_back(b.Input(in.name, in.shape,
                             mask      ? Domain::kMask
                             : index   ? Domain::kIndex
                             : integer ? Domain::kFixed
                                       : Domain::kSigned));
      const DType dtype = mask ? DType::kBool : index || integer ? DType::kI32 : DType::kF32;
      s.feeds[in.name] = HostTensor::FromFloats(MakeType(in.shape, dtype), in.values);
    }
    s.c = b.Finish(r.op, r.name, b.Op(r.op, args, Json::parse(r.attrs)), r.version);
    s.want = r.want;
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace scellis::conform

#include "conform/cases.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <optional>

#include "base/random.h"
#include "conform/case_builder.h"
#include "ops/op_table.h"

namespace scellis::conform {

void CumsumCases(const OpSpec& def, std::vector<Case>& out) {
  struct Variant {
    const char* name;
    Shape shape;
    int axis;
  };
  const Variant variants[] = {
      {"size1", {1}, 0},         {"rank1_1009", {1009}, 0},      {"axis0", {7, 13, 67}, 0},
      {"axis1", {7, 13, 67}, 1}, {"axis_neg1", {7, 13, 67}, -1}, {"long_line", {3, 4099}, 1},
      {"empty_axis", {0, 5}, 0}, {"empty_rest", {5, 0}, 0},
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
      {"1x256x1", 1, 256, 1},   {"7x512x13", 7, 512, 13},   {"3x768x5", 3, 768, 5},
      {"65x256x3", 65, 256, 3}, {"2x1280x67", 2, 1280, 67}, {"empty_k", 3, 0, 4},
      {"empty_m", 0, 256, 4},   {"empty_n", 2, 256, 0},
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
      {"1x1x1_f0", {1, 1}, {1, 1}, 0},
      {"rect_65x3x67_f0", {65, 3}, {3, 67}, 0},
      {"rect_9x31x11_f1", {9, 31}, {31, 11}, 1},
      {"rect_7x97x13_f16", {7, 97}, {97, 13}, 16},
      {"row_1x1009x7_f8", {1, 1009}, {1009, 7}, 8},
      {"col_33x5x1_f31", {33, 5}, {5, 1}, 31},
      {"empty_k_f4", {3, 0}, {0, 4}, 4},
      {"empty_n_f4", {2, 3}, {3, 0}, 4},
  };
  for (const Variant& v : variants) {
    DocBuilder b;
    int a = b.Input("a", v.a, Domain::kFixed);
    int c = b.Input("b", v.b, Domain::kFixed);
    out.push_back(b.Finish(def.name, v.name, b.Op(def.name, {a, c}, {{"frac_bits", v.frac_bits}}),
                           def.min_version));
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
namespace {

// Chains of ops in one fused kernel.
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
      const bool integer = port && !index &&
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

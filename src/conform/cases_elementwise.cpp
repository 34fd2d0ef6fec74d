// Conformance cases of the elementwise families: unary, binary, integer, boolean, where, casts,
// random generators, bit ops and index ramps.
#include <algorithm>
#include <cmath>
#include <limits>

#include "base/random.h"
#include "conform/case_builder.h"

namespace scellis::conform {

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

void ArangeCases(const OpSpec& def, std::vector<Case>& out) {
  struct Variant {
    const char* name;
    Shape shape;
    int64_t axis;
    const char* dtype;
  };
  const Variant variants[] = {
      {"size1", {1}, 0, "i32"},          {"rank1", {1009}, 0, "i32"},
      {"rank1_u32", {97}, 0, "u32"},     {"rank1_f32", {1009}, 0, "f32"},
      {"rank2_rows", {7, 97}, 0, "i32"}, {"rank2_cols", {7, 97}, -1, "f32"},
      {"rank3", {3, 5, 67}, 1, "u32"},   {"empty", {0, 5}, 1, "i32"},
  };
  for (const Variant& v : variants) {
    DocBuilder b;
    out.push_back(b.Finish(
        def.name, v.name,
        b.Op(def.name, {}, {{"shape", v.shape}, {"axis", v.axis}, {"dtype", v.dtype}}), 6));
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
      const std::string name = std::string(domain == Domain::kInt32 ? "i32" : "u32") + "_count_" +
                               std::to_string(static_cast<int>(count));
      out.push_back(b.Finish(def.name, name, b.Op(def.name, {a}, {{"scalar", count}}), 6));
    }
  }
  DocBuilder b;
  int a = b.Input("a", {97}, Domain::kInt32);
  out.push_back(
      b.Finish(def.name, "i32_count_minus_1", b.Op(def.name, {a}, {{"scalar", -1.0}}), 6));
}

// Softmax and log-softmax over the last axis: single rows, long rows, many short rows, rank 3.

}  // namespace scellis::conform

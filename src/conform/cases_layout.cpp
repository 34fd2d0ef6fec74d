// Conformance cases of the layout families: slices, flips, pads, lists (concat, stack), layout
// copies, index ops, stencils, shifts and butterflies.
#include <algorithm>
#include <optional>

#include "base/random.h"
#include "conform/case_builder.h"

namespace scellis::conform {

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
    out.push_back(
        b.Finish(def.name, v.name, b.Op(def.name, {x}, {{"mask", v.mask}, {"axis", v.axis}}), 6));
  }
  DocBuilder b;
  int x = b.Input("x", {8, 64});
  int partner = b.Op(def.name, {x}, {{"mask", 4}, {"axis", 1}});
  int index = b.Op("arange", {}, {{"shape", {64}}});
  auto bit_clear = [&](int bit) {
    return b.Op("eq", {b.Op("bitwise_and", {index}, {{"scalar", bit}})}, {{"scalar", 0}});
  };
  int ascending = b.Op("eq", {bit_clear(4), bit_clear(16)});
  int stage =
      b.Op("where", {ascending, b.Op("minimum", {x, partner}), b.Op("maximum", {x, partner})});
  out.push_back(b.Finish(def.name, "bitonic_stage", stage, 6));
}

// Index ramps along each axis in each dtype, alone (a kernel that writes the ramp) and read by
// an elementwise op over a larger tensor (the ramp broadcast, computed in that op's kernel).

}  // namespace scellis::conform

#include "store/safetensors.h"

#include <gtest/gtest.h>
#include <sys/resource.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "base/atomic_file.h"

namespace scellis::store {
namespace {

namespace fs = std::filesystem;
using Metadata = std::map<std::string, std::string>;

// Little-endian bytes of an integer, written out by shifts (independent of the host's order).
std::string Le(uint64_t v, int width) {
  std::string s;
  for (int i = 0; i < width; ++i) s.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  return s;
}

std::string F32Bytes(std::initializer_list<float> values) {
  std::string s;
  for (float f : values) {
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    s += Le(bits, 4);
  }
  return s;
}

std::vector<NamedTensor> SampleTensors() {
  return {
      {"layer.weight", "F32", {2, 3}, F32Bytes({1, -2, 3.5f, 0, 1e-30f, -0.0f})},
      {"layer.bias", "F64", {3}, Le(0x3ff0000000000000, 8) + Le(0, 8) + Le(0xbff8000000000000, 8)},
      {"step", "I64", {}, Le(static_cast<uint64_t>(-7), 8)},
      {"counts", "I32", {1, 2}, Le(5, 4) + Le(0xffffffff, 4)},
      {"mask", "U8", {5}, std::string("\x00\x01\xff\x7f\x80", 5)},
      {"empty", "F32", {0, 3}, ""},
  };
}

void ExpectSame(const std::vector<NamedTensor>& got, std::vector<NamedTensor> want) {
  std::sort(want.begin(), want.end(),
            [](const NamedTensor& a, const NamedTensor& b) { return a.name < b.name; });
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].name, want[i].name);
    EXPECT_EQ(got[i].dtype, want[i].dtype) << want[i].name;
    EXPECT_EQ(got[i].shape, want[i].shape) << want[i].name;
    EXPECT_EQ(got[i].bytes, want[i].bytes) << want[i].name;
  }
}

TEST(Safetensors, RoundTrip) {
  Metadata meta = {{"format", "pt"}, {"step", "12"}, {"note", "ünïcode / ~"}};
  std::string file = EncodeSafetensors(SampleTensors(), meta);
  Metadata back_meta = {{"stale", "x"}};
  Result<std::vector<NamedTensor>> back = DecodeSafetensors(file, &back_meta);
  ASSERT_TRUE(back.ok()) << back.errors()[0].Format();
  ExpectSame(*back, SampleTensors());
  EXPECT_EQ(back_meta, meta);
}

TEST(Safetensors, EmptyFileRoundTrips) {
  std::string file = EncodeSafetensors({}, {});
  EXPECT_EQ(file, Le(8, 8) + "{}      ");
  Metadata meta = {{"stale", "x"}};
  Result<std::vector<NamedTensor>> back = DecodeSafetensors(file, &meta);
  ASSERT_TRUE(back.ok());
  EXPECT_TRUE(back->empty());
  EXPECT_TRUE(meta.empty());
}

TEST(Safetensors, EncodingIsCanonical) {
  std::vector<NamedTensor> tensors = SampleTensors();
  std::string file = EncodeSafetensors(tensors, {{"a", "b"}});
  std::reverse(tensors.begin(), tensors.end());
  EXPECT_EQ(EncodeSafetensors(tensors, {{"a", "b"}}), file);

  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(file[i]);
  EXPECT_EQ(n % 8, 0u);
  EXPECT_EQ(file[8], '{');
  std::string header = file.substr(8, n);
  EXPECT_EQ(header.find('\n'), std::string::npos);             // compact
  EXPECT_EQ(header.find_last_not_of(' '), header.rfind('}'));  // padded with spaces only
  // Tensors are laid out by name: "counts" first.
  EXPECT_EQ(file.substr(8 + n, 8), Le(5, 4) + Le(0xffffffff, 4));
  EXPECT_EQ(header.find("\"__metadata__\":{\"a\":\"b\"}") != std::string::npos, true);
}

// A file written out byte by byte, without the encoder: header entries in a different order
// from the data, and a scalar.
TEST(Safetensors, DecodesAHandBuiltFile) {
  std::string header = R"({"b":{"dtype":"I64","shape":[],"data_offsets":[8,16]},)"
                       R"("a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                       R"("__metadata__":{"note":"hand made"}})";
  while (header.size() % 8 != 0) header += ' ';
  std::string file;
  for (int i = 0; i < 8; ++i) file.push_back(static_cast<char>((header.size() >> (8 * i)) & 0xff));
  file += header;
  file += std::string("\x00\x00\x80\x3f", 4);                  // 1.0f
  file += std::string("\x00\x00\x20\x40", 4);                  // 2.5f
  file += std::string("\xfe\xff\xff\xff\xff\xff\xff\xff", 8);  // -2 as int64

  Metadata meta;
  Result<std::vector<NamedTensor>> r = DecodeSafetensors(file, &meta);
  ASSERT_TRUE(r.ok()) << r.errors()[0].Format();
  ASSERT_EQ(r->size(), 2u);
  const NamedTensor& a = (*r)[0];
  const NamedTensor& b = (*r)[1];
  EXPECT_EQ(a.name, "a");
  EXPECT_EQ(a.dtype, "F32");
  EXPECT_EQ(a.shape, std::vector<int64_t>{2});
  ASSERT_EQ(a.bytes.size(), 8u);
  auto f32 = [](const std::string& s, size_t i) {
    uint32_t bits = 0;
    for (int k = 3; k >= 0; --k) bits = (bits << 8) | static_cast<unsigned char>(s[4 * i + k]);
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
  };
  EXPECT_EQ(f32(a.bytes, 0), 1.0f);
  EXPECT_EQ(f32(a.bytes, 1), 2.5f);
  EXPECT_EQ(b.name, "b");
  EXPECT_EQ(b.dtype, "I64");
  EXPECT_TRUE(b.shape.empty());
  uint64_t v = 0;
  for (int k = 7; k >= 0; --k) v = (v << 8) | static_cast<unsigned char>(b.bytes[k]);
  EXPECT_EQ(static_cast<int64_t>(v), -2);
  EXPECT_EQ(meta, (Metadata{{"note", "hand made"}}));
  // Re-encoded canonically (other byte layout), it decodes to the same tensors.
  ExpectSame(*DecodeSafetensors(EncodeSafetensors(*r, meta), nullptr), *r);
}

// --- hostile files ----------------------------------------------------------------------------

// A file with the given header text (padded) and data.
std::string File(std::string header, const std::string& data) {
  while (header.size() % 8 != 0) header += ' ';
  return Le(header.size(), 8) + header + data;
}

std::string Code(const Result<std::vector<NamedTensor>>& r) {
  return r.ok() ? "ok" : r.errors()[0].code;
}

std::string Decode(const std::string& file) {
  return Code(DecodeSafetensors(file, nullptr));
}

std::string One(const std::string& entry, const std::string& data) {
  return File(R"({"t":)" + entry + "}", data);
}

TEST(Safetensors, HostileFraming) {
  EXPECT_EQ(Decode(""), "safetensors-truncated");
  EXPECT_EQ(Decode("1234567"), "safetensors-truncated");
  EXPECT_EQ(Decode(Le(100'000'001, 8) + "{}"), "safetensors-header-too-large");
  EXPECT_EQ(Decode(Le(~uint64_t{0}, 8) + "{}"), "safetensors-header-too-large");
  EXPECT_EQ(Decode(Le(100, 8) + "{}"), "safetensors-truncated");
  EXPECT_EQ(Decode(Le(0, 8)), "safetensors-bad-header");
  EXPECT_EQ(Decode(File("[]", "")), "safetensors-bad-header");
  EXPECT_EQ(Decode(File(" {}", "")), "safetensors-bad-header");
  EXPECT_EQ(Decode(File("{", "")), "safetensors-bad-header");
  EXPECT_EQ(Decode(File("{} x", "")), "safetensors-bad-header");
  EXPECT_EQ(Decode(File("{\"a\xff\":1}", "")), "safetensors-bad-header");  // not UTF-8
  // NUL bytes are not JSON (some parsers stop at them, which would hide what follows).
  EXPECT_EQ(Decode(Le(4, 8) + std::string("{}\0\0", 4)), "safetensors-bad-header");
  EXPECT_EQ(Decode(File(std::string("{}\0{\"x\":1}", 9), "")), "safetensors-bad-header");
}

TEST(Safetensors, RejectsDeepNestingWithoutRecursing) {
  std::string deep = R"({"t":)" + std::string(200000, '[') + std::string(200000, ']') + "}";
  Result<std::vector<NamedTensor>> r = DecodeSafetensors(File(deep, ""), nullptr);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.errors()[0].code, "safetensors-bad-header");
}

TEST(Safetensors, RejectsDuplicateKeys) {
  const std::string entry = R"({"dtype":"U8","shape":[1],"data_offsets":[0,1]})";
  Result<std::vector<NamedTensor>> r =
      DecodeSafetensors(File("{\"a\":" + entry + ",\"a\":" + entry + "}", "x"), nullptr);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.errors()[0].code, "safetensors-duplicate-key");
  EXPECT_EQ(r.errors()[0].pointer, "/a");
  r = DecodeSafetensors(One(R"({"dtype":"U8","shape":[1],"shape":[1],"data_offsets":[0,1]})", "x"),
                        nullptr);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.errors()[0].code, "safetensors-duplicate-key");
  EXPECT_EQ(r.errors()[0].pointer, "/t/shape");
}

TEST(Safetensors, HostileEntries) {
  EXPECT_EQ(Decode(One(R"({"dtype":"U8","shape":[1],"data_offsets":[0,1]})", "x")), "ok");
  EXPECT_EQ(Decode(One("[]", "")), "safetensors-bad-entry");
  EXPECT_EQ(Decode(One(R"({"dtype":"U8","shape":[1]})", "x")), "safetensors-bad-entry");
  EXPECT_EQ(Decode(One(R"({"dtype":"U8","shape":[1],"data_offsets":[0,1],"x":1})", "x")),
            "safetensors-bad-entry");
  EXPECT_EQ(Decode(One(R"({"dtype":"BF16","shape":[1],"data_offsets":[0,2]})", "xx")),
            "safetensors-bad-dtype");
  EXPECT_EQ(Decode(One(R"({"dtype":7,"shape":[1],"data_offsets":[0,1]})", "x")),
            "safetensors-bad-dtype");
  for (const char* shape :
       {"[-1]", "[1.0]", "[\"1\"]", "1", "[18446744073709551616]", "[9223372036854775808, 0]"}) {
    EXPECT_EQ(
        Decode(One(std::string(R"({"dtype":"U8","shape":)") + shape + R"(,"data_offsets":[0,0]})",
                   "")),
        "safetensors-bad-shape")
        << shape;
  }
  // A nested list is deeper than any valid header goes.
  EXPECT_EQ(Decode(One(R"({"dtype":"U8","shape":[[1]],"data_offsets":[0,1]})", "x")),
            "safetensors-bad-header");
  // 2^40 * 2^40 * 8 bytes overflows 64 bits.
  EXPECT_EQ(Decode(One(R"({"dtype":"F64","shape":[1099511627776,1099511627776],)"
                       R"("data_offsets":[0,0]})",
                       "")),
            "safetensors-bad-shape");
  EXPECT_EQ(Decode(File(R"({"__metadata__":{"k":1}})", "")), "safetensors-bad-metadata");
  EXPECT_EQ(Decode(File(R"({"__metadata__":["k"]})", "")), "safetensors-bad-metadata");
}

TEST(Safetensors, HostileOffsets) {
  auto u8 = [](const std::string& name, const std::string& shape, const std::string& offsets) {
    return "\"" + name + R"(":{"dtype":"U8","shape":)" + shape + R"(,"data_offsets":)" + offsets +
           "}";
  };
  const std::string bad = "safetensors-bad-offsets";
  EXPECT_EQ(Decode(File("{" + u8("a", "[2]", "[2,0]") + "}", "xx")), bad);    // begin > end
  EXPECT_EQ(Decode(File("{" + u8("a", "[2]", "[0,3]") + "}", "xxx")), bad);   // wrong size
  EXPECT_EQ(Decode(File("{" + u8("a", "[2]", "[0,2]") + "}", "x")), bad);     // past the end
  EXPECT_EQ(Decode(File("{" + u8("a", "[2]", "[0,2]") + "}", "xxx")), bad);   // not covered
  EXPECT_EQ(Decode(File("{" + u8("a", "[2]", "[1,3]") + "}", "xxx")), bad);   // gap at start
  EXPECT_EQ(Decode(File("{" + u8("a", "[2]", "[0,-2]") + "}", "xx")), bad);   // negative
  EXPECT_EQ(Decode(File("{" + u8("a", "[2]", "[0,2,4]") + "}", "xx")), bad);  // three
  EXPECT_EQ(Decode(File("{" + u8("a", "[2]", "[0,2.0]") + "}", "xx")), bad);  // not integer
  EXPECT_EQ(
      Decode(File("{" + u8("a", "[2]", "[0,2]") + "," + u8("b", "[2]", "[1,3]") + "}", "xxx")),
      bad);  // overlap
  EXPECT_EQ(
      Decode(File("{" + u8("a", "[1]", "[0,1]") + "," + u8("b", "[1]", "[2,3]") + "}", "xxx")),
      bad);  // gap between
  EXPECT_EQ(Decode(File("{" + u8("a", "[1]", "[0,1]") + "," + u8("b", "[1]", "[0,1]") + "}", "x")),
            bad);  // aliasing
  // Empty tensors may sit anywhere the layout reaches, not inside another tensor.
  EXPECT_EQ(Decode(File("{" + u8("a", "[2]", "[0,2]") + "," + u8("e", "[0]", "[2,2]") + "}", "xx")),
            "ok");
  EXPECT_EQ(Decode(File("{" + u8("a", "[2]", "[0,2]") + "," + u8("e", "[0]", "[1,1]") + "}", "xx")),
            bad);
}

TEST(Safetensors, ReportsEveryBadEntry) {
  Result<std::vector<NamedTensor>> r =
      DecodeSafetensors(File(R"({"a":{"dtype":"X","shape":[1],"data_offsets":[0,1]},)"
                             R"("b/c":{"dtype":"U8","shape":[-1],"data_offsets":[1,2]}})",
                             "xx"),
                        nullptr);
  ASSERT_FALSE(r.ok());
  ASSERT_EQ(r.errors().size(), 2u);
  EXPECT_EQ(r.errors()[0].code, "safetensors-bad-dtype");
  EXPECT_EQ(r.errors()[0].pointer, "/a/dtype");
  EXPECT_EQ(r.errors()[1].code, "safetensors-bad-shape");
  EXPECT_EQ(r.errors()[1].pointer, "/b~1c/shape");  // '/' escaped in the JSON pointer
}

TEST(Safetensors, CheckTensorsCatchesWhatCannotBeEncoded) {
  auto codes = [](const std::vector<NamedTensor>& t, const Metadata& m = {}) {
    std::vector<std::string> out;
    Status st = CheckTensors(t, m);
    for (const Diagnostic& d : st.errors()) out.push_back(d.code);
    return out;
  };
  EXPECT_TRUE(codes(SampleTensors()).empty());
  EXPECT_EQ(codes({{"a", "F32", {2}, "1234"}}), std::vector<std::string>{"safetensors-bad-shape"});
  EXPECT_EQ(codes({{"a", "F32", {-1}, ""}}), std::vector<std::string>{"safetensors-bad-shape"});
  EXPECT_EQ(codes({{"a", "BF16", {1}, "12"}}), std::vector<std::string>{"safetensors-bad-dtype"});
  EXPECT_EQ(codes({{"a", "U8", {1}, "1"}, {"a", "U8", {1}, "1"}}),
            std::vector<std::string>{"safetensors-duplicate-key"});
  EXPECT_EQ(codes({{"", "U8", {1}, "1"}}), std::vector<std::string>{"safetensors-bad-entry"});
  EXPECT_EQ(codes({{"__metadata__", "U8", {1}, "1"}}),
            std::vector<std::string>{"safetensors-bad-entry"});
  EXPECT_EQ(codes({{"bad\xff", "U8", {1}, "1"}}),
            std::vector<std::string>{"safetensors-bad-entry"});
  EXPECT_EQ(codes({}, {{"k", "\xc3"}}), std::vector<std::string>{"safetensors-bad-metadata"});
}

// --- files on disk ----------------------------------------------------------------------------

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "scellis-test-XXXXXX").string();
    const char* made = ::mkdtemp(tmpl.data());
    if (made == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = made;
  }
  ~TempDir() { fs::remove_all(path_); }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

TEST(Safetensors, SaveAndLoad) {
  TempDir dir;
  Metadata meta = {{"epoch", "3"}};
  ASSERT_TRUE(SaveSafetensors(dir / "ckpt.safetensors", SampleTensors(), meta).ok());
  Metadata back_meta;
  Result<std::vector<NamedTensor>> back = LoadSafetensors(dir / "ckpt.safetensors", &back_meta);
  ASSERT_TRUE(back.ok()) << back.errors()[0].Format();
  ExpectSame(*back, SampleTensors());
  EXPECT_EQ(back_meta, meta);

  // An invalid checkpoint is refused before anything is written.
  Status st = SaveSafetensors(dir / "bad.safetensors", {{"a", "F32", {2}, "x"}}, {});
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.first().code, "safetensors-bad-shape");
  EXPECT_FALSE(fs::exists(dir / "bad.safetensors"));

  EXPECT_EQ(Code(LoadSafetensors(dir / "missing.safetensors", nullptr)), "file-not-found");
  EXPECT_EQ(Code(LoadSafetensors(dir / "ckpt.safetensors", nullptr, 16)), "file-too-large");
  ASSERT_TRUE(WriteFileAtomic(dir / "junk.safetensors", "not a checkpoint").ok());
  Result<std::vector<NamedTensor>> junk = LoadSafetensors(dir / "junk.safetensors", nullptr);
  ASSERT_FALSE(junk.ok());
  EXPECT_EQ(junk.errors()[0].code, "safetensors-header-too-large");
  EXPECT_NE(junk.errors()[0].message.find("junk.safetensors"), std::string::npos);
}

TEST(Safetensors, LoadJudgesTheHeaderBeforeReadingTheData) {
  TempDir dir;
  // 3 GiB (sparse) whose header "{}" describes no data: refused before the data is read.
  constexpr uint64_t kSize = uint64_t{3} << 30;
  const std::string path = dir / "big.safetensors";
  std::string head(8, '\0');
  head[0] = 2;
  ASSERT_TRUE(WriteFileAtomic(path, head + "{}").ok());
  fs::resize_file(path, kSize);
  struct rusage u;
  ::getrusage(RUSAGE_SELF, &u);
  const int64_t before_kb = u.ru_maxrss;
  Result<std::vector<NamedTensor>> r = LoadSafetensors(path, nullptr);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.errors()[0].code, "safetensors-bad-offsets");
  ::getrusage(RUSAGE_SELF, &u);
  EXPECT_LT(u.ru_maxrss - before_kb, 1 << 20);  // KiB: far below the file's 3 GiB
  // Not a regular file: refused without reading (/dev/zero would otherwise never end).
  Result<std::vector<NamedTensor>> dev = LoadSafetensors("/dev/zero", nullptr);
  ASSERT_FALSE(dev.ok());
  EXPECT_EQ(dev.errors()[0].code, "not-a-regular-file");
}

}  // namespace
}  // namespace scellis::store

namespace scellis::store {
namespace {

// A file written by tools/make_safetensors_dtypes_fixture.py from the format's rules with Python's
// struct and json (not by this encoder): every engine dtype reads back with the values the script
// lists.
TEST(Safetensors, ReadsEveryEngineDtypeFromAnIndependentWriter) {
  Metadata meta;
  auto tensors = LoadSafetensors(
      std::string(SCELLIS_SOURCE_DIR) + "/tests/store/engine_dtypes.safetensors", &meta);
  ASSERT_TRUE(tensors.ok()) << tensors.errors().front().message;
  EXPECT_EQ(meta.at("format"), "pt");
  std::map<std::string, HostTensor> by_name;
  for (const NamedTensor& nt : *tensors) {
    auto t = ToHostTensor(nt);
    ASSERT_TRUE(t.ok()) << nt.name << ": " << t.errors().front().message;
    by_name.emplace(nt.name, std::move(*t));
  }
  ASSERT_EQ(by_name.size(), 6u);

  const HostTensor& f32 = by_name.at("f32");
  EXPECT_EQ(f32.type.dtype, DType::kF32);
  EXPECT_EQ(f32.type.sizes(), (std::vector<int64_t>{2, 2}));
  const float want_f32[] = {1.5f, -0.0f, 3.25e-3f, -65504.0f};
  for (int i = 0; i < 4; ++i)
    EXPECT_EQ(std::bit_cast<uint32_t>(f32.view<float>()[i]), std::bit_cast<uint32_t>(want_f32[i]));

  const HostTensor& f16 = by_name.at("f16");
  EXPECT_EQ(f16.type.dtype, DType::kF16);
  EXPECT_EQ(f16.ValueAt(0), 1.0);
  EXPECT_EQ(f16.ValueAt(1), -2.0);
  EXPECT_EQ(f16.ValueAt(2), 65504.0);
  EXPECT_EQ(f16.ValueAt(3), std::ldexp(1.0, -24));
  EXPECT_EQ(f16.ValueAt(4), std::numeric_limits<double>::infinity());
  EXPECT_TRUE(std::isnan(f16.ValueAt(5)));

  const HostTensor& i32 = by_name.at("i32");
  EXPECT_EQ(i32.type.dtype, DType::kI32);
  const std::vector<int32_t> want_i32 = {-2147483647 - 1, 2147483647, 0, -1, 16777217};
  EXPECT_EQ(std::vector<int32_t>(i32.view<int32_t>().begin(), i32.view<int32_t>().end()), want_i32);

  const HostTensor& u32 = by_name.at("u32");
  EXPECT_EQ(u32.type.dtype, DType::kU32);
  const std::vector<uint32_t> want_u32 = {0u, 4294967295u, 2147483648u, 16777217u};
  EXPECT_EQ(std::vector<uint32_t>(u32.view<uint32_t>().begin(), u32.view<uint32_t>().end()),
            want_u32);

  const HostTensor& mask = by_name.at("mask");  // one byte each in the file, 4 in the engine
  EXPECT_EQ(mask.type.dtype, DType::kBool);
  EXPECT_EQ(std::vector<uint32_t>(mask.view<uint32_t>().begin(), mask.view<uint32_t>().end()),
            (std::vector<uint32_t>{1, 0, 1}));

  const HostTensor& scalar = by_name.at("scalar");
  EXPECT_EQ(scalar.type.rank(), 0);
  EXPECT_EQ(scalar.view<int32_t>()[0], -7);
}

// Engine tensors of every dtype through the encoder and decoder: the bytes come back, bool as
// one byte per element in the file.
TEST(Safetensors, EngineDtypesRoundTrip) {
  std::vector<HostTensor> originals = {
      HostTensor::FromValues(MakeType({3}, DType::kF32), std::vector<double>{1.5, -2, 0.25}),
      HostTensor::FromValues(MakeType({2}, DType::kF16), std::vector<double>{0.1, -65504}),
      HostTensor::FromValues(MakeType({2}, DType::kI32), std::vector<double>{-2147483648.0, 7}),
      HostTensor::FromValues(MakeType({2}, DType::kU32), std::vector<double>{4294967295.0, 1}),
      HostTensor::FromValues(MakeType({2, 2}, DType::kBool), std::vector<double>{1, 0, 0, 1})};
  std::vector<NamedTensor> named;
  for (size_t i = 0; i < originals.size(); ++i)
    named.push_back(ToNamedTensor("t" + std::to_string(i), originals[i]));
  EXPECT_EQ(named[4].dtype, "BOOL");
  EXPECT_EQ(named[4].bytes, std::string("\x01\x00\x00\x01", 4));
  EXPECT_EQ(named[1].dtype, "F16");
  ASSERT_TRUE(CheckTensors(named, {}).ok());
  auto decoded = DecodeSafetensors(EncodeSafetensors(named, {}), nullptr);
  ASSERT_TRUE(decoded.ok());
  for (size_t i = 0; i < originals.size(); ++i) {
    auto back = ToHostTensor((*decoded)[i]);
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(back->type.dtype, originals[i].type.dtype) << i;
    EXPECT_EQ(back->type.sizes(), originals[i].type.sizes()) << i;
    EXPECT_EQ(back->bytes, originals[i].bytes) << i;
  }
}

TEST(Safetensors, RefusesWhatNoEngineTensorHolds) {
  auto code = [](const NamedTensor& nt) {
    auto t = ToHostTensor(nt);
    return t.ok() ? std::string("ok") : t.errors().front().code + " " + t.errors().front().pointer;
  };
  EXPECT_EQ(code({"x", "F64", {1}, std::string(8, '\0')}), "safetensors-bad-dtype /x");
  EXPECT_EQ(code({"m", "BOOL", {2}, std::string("\x01\x02", 2)}), "safetensors-bad-value /m");
  EXPECT_EQ(code({"r", "U32", {1, 1, 1, 1, 1}, std::string(4, '\0')}), "safetensors-bad-shape /r");
}

}  // namespace
}  // namespace scellis::store

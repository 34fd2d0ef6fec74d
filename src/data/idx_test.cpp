#include "data/idx.h"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <zlib.h>

#include <bit>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "base/atomic_file.h"

namespace scellis::data {
namespace {

namespace fs = std::filesystem;

// --- building IDX files by hand ---------------------------------------------------------------

void PutBe32(std::string* s, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) s->push_back(static_cast<char>(v >> shift));
}

std::string Header(uint8_t type, const std::vector<uint32_t>& dims) {
  std::string s{'\0', '\0', static_cast<char>(type), static_cast<char>(dims.size())};
  for (uint32_t d : dims) PutBe32(&s, d);
  return s;
}

// gzip-compresses with zlib's deflate (the reader uses inflate).
std::string Gzip(const std::string& raw) {
  z_stream zs{};
  if (deflateInit2(&zs, 9, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    throw std::runtime_error("deflateInit2");
  }
  std::string out(deflateBound(&zs, raw.size()), '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(raw.data()));
  zs.avail_in = static_cast<uInt>(raw.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  if (deflate(&zs, Z_FINISH) != Z_STREAM_END) throw std::runtime_error("deflate");
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

std::string U8Images() {  // 2 images of 2x3
  std::string s = Header(0x08, {2, 2, 3});
  for (int i = 0; i < 12; ++i) s.push_back(static_cast<char>(i == 11 ? 255 : i * 20));
  return s;
}

std::string Code(const Result<IdxArray>& r) {
  return r.ok() ? "ok" : r.errors()[0].code;
}

TEST(Idx, ReadsU8PlainAndGzipped) {
  for (const std::string& file : {U8Images(), Gzip(U8Images())}) {
    Result<IdxArray> r = DecodeIdx(file);
    ASSERT_TRUE(r.ok()) << r.errors()[0].Format();
    EXPECT_EQ(r->type, IdxType::kU8);
    EXPECT_EQ(r->dims, (std::vector<int64_t>{2, 2, 3}));
    ASSERT_EQ(r->values.size(), 12u);
    EXPECT_EQ(r->values[0], 0.0f);
    EXPECT_EQ(r->values[5], 100.0f);
    EXPECT_EQ(r->values[11], 255.0f);
  }
}

TEST(Idx, ConvertsEveryType) {
  std::string i8 = Header(0x09, {3}) + std::string{'\x80', '\xff', '\x7f'};
  EXPECT_EQ(DecodeIdx(i8)->values, (std::vector<float>{-128, -1, 127}));

  std::string i16 = Header(0x0B, {2}) + std::string{'\x80', '\x00', '\x01', '\x02'};
  EXPECT_EQ(DecodeIdx(i16)->values, (std::vector<float>{-32768, 258}));

  std::string i32 = Header(0x0C, {2});
  PutBe32(&i32, static_cast<uint32_t>(-5));
  PutBe32(&i32, 16777217);  // 2^24 + 1 rounds to 2^24
  EXPECT_EQ(DecodeIdx(i32)->values, (std::vector<float>{-5, 16777216}));

  std::string f32 = Header(0x0D, {2});
  PutBe32(&f32, std::bit_cast<uint32_t>(-1.5f));
  PutBe32(&f32, std::bit_cast<uint32_t>(0.1f));
  EXPECT_EQ(DecodeIdx(f32)->values, (std::vector<float>{-1.5f, 0.1f}));

  std::string f64 = Header(0x0E, {5});
  for (double d : {0.1, -0.0, 1e300, -1e300, 3.4028235e38}) {
    uint64_t bits = std::bit_cast<uint64_t>(d);
    PutBe32(&f64, static_cast<uint32_t>(bits >> 32));
    PutBe32(&f64, static_cast<uint32_t>(bits));
  }
  Result<IdxArray> r = DecodeIdx(f64);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->values[0], 0.1f);
  EXPECT_TRUE(std::signbit(r->values[1]));
  EXPECT_EQ(r->values[2], std::numeric_limits<float>::infinity());
  EXPECT_EQ(r->values[3], -std::numeric_limits<float>::infinity());
  EXPECT_EQ(r->values[4], std::numeric_limits<float>::max());
}

TEST(Idx, EmptyAndScalarArrays) {
  Result<IdxArray> empty = DecodeIdx(Header(0x08, {0, 0xffffffff, 0xffffffff}));
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->values.empty());
  Result<IdxArray> scalar = DecodeIdx(Header(0x08, {}) + "\x07");
  ASSERT_TRUE(scalar.ok());
  EXPECT_TRUE(scalar->dims.empty());
  EXPECT_EQ(scalar->values, std::vector<float>{7});
}

TEST(Idx, ConcatenatedGzipMembersAreOneStream) {
  std::string raw = U8Images();
  std::string file = Gzip(raw.substr(0, 7)) + Gzip(raw.substr(7));
  Result<IdxArray> r = DecodeIdx(file);
  ASSERT_TRUE(r.ok()) << r.errors()[0].Format();
  EXPECT_EQ(r->values.size(), 12u);
}

TEST(Idx, HostileFiles) {
  std::string good = U8Images();
  EXPECT_EQ(Code(DecodeIdx("")), "idx-truncated");
  EXPECT_EQ(Code(DecodeIdx(std::string("\0\0\x08", 3))), "idx-truncated");
  EXPECT_EQ(Code(DecodeIdx("\x01\x00\x08\x01" + good.substr(4))), "idx-bad-magic");
  EXPECT_EQ(Code(DecodeIdx("P5\n28 28\n255\n")), "idx-bad-magic");
  EXPECT_EQ(Code(DecodeIdx(Header(0x0A, {1}) + "x")), "idx-bad-type");
  EXPECT_EQ(Code(DecodeIdx(good.substr(0, 9))), "idx-truncated");   // inside the dimensions
  EXPECT_EQ(Code(DecodeIdx(good.substr(0, 20))), "idx-truncated");  // inside the data
  EXPECT_EQ(Code(DecodeIdx(good + "x")), "idx-trailing-bytes");
  // Four dimensions of 2^32 - 1: the product overflows 64 bits.
  EXPECT_EQ(Code(DecodeIdx(Header(0x0E, {0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}))),
            "idx-too-large");
  // Declares 4 GiB of data in a 16-byte file: rejected by the cap, before any allocation.
  EXPECT_EQ(Code(DecodeIdx(Header(0x0C, {0x40000000}))), "idx-too-large");
  // The file is 16 header bytes and 12 data bytes: the cap holds at 28 exactly.
  EXPECT_EQ(Code(DecodeIdx(good, 27)), "idx-too-large");
  EXPECT_EQ(Code(DecodeIdx(good, 28)), "ok");
}

TEST(Idx, HostileGzip) {
  std::string gz = Gzip(U8Images());
  EXPECT_EQ(Code(DecodeIdx(gz.substr(0, gz.size() - 6))), "idx-truncated");
  EXPECT_EQ(Code(DecodeIdx(gz.substr(0, 12))), "idx-truncated");
  std::string corrupt = gz;
  corrupt[12] = static_cast<char>(corrupt[12] ^ 0x55);
  corrupt[13] = static_cast<char>(corrupt[13] ^ 0x55);
  std::string code = Code(DecodeIdx(corrupt));
  EXPECT_TRUE(code == "idx-bad-gzip" || code == "idx-truncated") << code;
  std::string bad_crc = gz;
  bad_crc[bad_crc.size() - 8] = static_cast<char>(bad_crc[bad_crc.size() - 8] ^ 1);
  EXPECT_EQ(Code(DecodeIdx(bad_crc)), "idx-bad-gzip");
  EXPECT_EQ(Code(DecodeIdx(gz + "garbage")), "idx-bad-gzip");
  // A gzip bomb: 64 MiB of zeros in about 64 KiB, against a 1 MiB cap.
  std::string bomb = Gzip(Header(0x08, {64 << 20}) + std::string(64 << 20, '\0'));
  EXPECT_LT(bomb.size(), 100000u);
  EXPECT_EQ(Code(DecodeIdx(bomb, 1 << 20)), "idx-too-large");
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

TEST(Idx, ReadIdxNamesTheFile) {
  TempDir dir;
  ASSERT_TRUE(WriteFileAtomic(dir / "a.idx.gz", Gzip(U8Images())).ok());
  EXPECT_TRUE(ReadIdx(dir / "a.idx.gz").ok());
  ASSERT_TRUE(WriteFileAtomic(dir / "b.idx", U8Images() + "zz").ok());
  Result<IdxArray> bad = ReadIdx(dir / "b.idx");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.errors()[0].code, "idx-trailing-bytes");
  EXPECT_NE(bad.errors()[0].message.find("b.idx"), std::string::npos);
  EXPECT_EQ(Code(ReadIdx(dir / "missing.idx")), "file-not-found");
}

// Peak resident memory of this process so far, in bytes.
uint64_t PeakRss() {
  struct rusage u;
  ::getrusage(RUSAGE_SELF, &u);
  return static_cast<uint64_t>(u.ru_maxrss) * 1024;
}

// `head`, then zeros up to `size` bytes: a sparse file, taking no disk.
void WriteSparse(const std::string& path, const std::string& head, uint64_t size) {
  ASSERT_TRUE(WriteFileAtomic(path, head).ok());
  fs::resize_file(path, size);
}

TEST(Idx, ReadIdxChecksTheHeaderAgainstTheFileSizeBeforeReadingTheBody) {
  TempDir dir;
  // 3 GiB whose header declares 10 bytes: refused from the header, the body never read.
  constexpr uint64_t kSize = uint64_t{3} << 30;
  WriteSparse(dir / "big.idx", Header(0x08, {10}), kSize);
  const uint64_t before = PeakRss();
  Result<IdxArray> r = ReadIdx(dir / "big.idx", uint64_t{4} << 30);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.errors()[0].code, "idx-trailing-bytes");
  EXPECT_LT(PeakRss(), before + (uint64_t{1} << 30));
  // A type code of zero, as /dev/zero or a zeroed file starts.
  WriteSparse(dir / "zeros.idx", "", kSize);
  EXPECT_EQ(Code(ReadIdx(dir / "zeros.idx", uint64_t{4} << 30)), "idx-bad-type");
  EXPECT_LT(PeakRss(), before + (uint64_t{1} << 30));
  // Devices and FIFOs are not read at all.
  Result<IdxArray> dev = ReadIdx("/dev/zero");
  ASSERT_FALSE(dev.ok());
  EXPECT_EQ(dev.errors()[0].code, "not-a-regular-file");
  EXPECT_NE(dev.errors()[0].message.find("not a regular file"), std::string::npos);
  ASSERT_EQ(::mkfifo((dir / "fifo").c_str(), 0600), 0);
  EXPECT_EQ(Code(ReadIdx(dir / "fifo")), "not-a-regular-file");  // and does not hang in open()
}

TEST(Idx, AGzipStreamStopsAtTheLengthItsHeaderDeclares) {
  // 9 bytes of header and data, then 64 MiB more: inflating stops past the declared length.
  std::string raw = Header(0x08, {1}) + "x" + std::string(64 << 20, '\0');
  Result<IdxArray> r = DecodeIdx(Gzip(raw));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.errors()[0].code, "idx-trailing-bytes");
  EXPECT_NE(r.errors()[0].message.find("more than the 9 bytes"), std::string::npos)
      << r.errors()[0].message;
  // A stream whose header is bad is refused after its first block.
  EXPECT_EQ(Code(DecodeIdx(Gzip(std::string(64 << 20, '\1')))), "idx-bad-magic");
}

// Sets an environment variable for one scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    ::setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (old_) {
      ::setenv(name_, old_->c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST(Idx, FindFashionMnistDirHonoursTheEnvironment) {
  TempDir dir;
  for (const char* name :
       {kFashionMnistTrainImages, kFashionMnistTrainLabels, kFashionMnistTestImages}) {
    ASSERT_TRUE(WriteFileAtomic(dir / name, Gzip(U8Images())).ok());
  }
  {
    ScopedEnv env("SCELLIS_FASHION_MNIST_DIR", dir.path());
    EXPECT_EQ(FindFashionMnistDir(), std::nullopt);  // a file is missing: no fallback
  }
  ASSERT_TRUE(WriteFileAtomic(dir / kFashionMnistTestLabels, Gzip(U8Images())).ok());
  ScopedEnv env("SCELLIS_FASHION_MNIST_DIR", dir.path());
  EXPECT_EQ(FindFashionMnistDir(), dir.path());
}

// An independent look at a gzipped file: zlib's gz* reader, then one byte at an offset.
int ByteAt(const std::string& gz_path, size_t offset) {
  gzFile f = gzopen(gz_path.c_str(), "rb");
  if (f == nullptr) return -1;
  std::vector<unsigned char> buf(offset + 1);
  int n = gzread(f, buf.data(), static_cast<unsigned>(buf.size()));
  gzclose(f);
  return n == static_cast<int>(buf.size()) ? buf[offset] : -1;
}

TEST(Idx, RealFashionMnistTrainSet) {
  std::optional<std::string> dir = FindFashionMnistDir();
  if (!dir) GTEST_SKIP() << "Fashion-MNIST is not installed (dataset-fashion-mnist)";
  std::string labels_path = *dir + "/" + kFashionMnistTrainLabels;
  std::string images_path = *dir + "/" + kFashionMnistTrainImages;

  Result<IdxArray> labels = ReadIdx(labels_path);
  ASSERT_TRUE(labels.ok()) << labels.errors()[0].Format();
  EXPECT_EQ(labels->type, IdxType::kU8);
  EXPECT_EQ(labels->dims, std::vector<int64_t>{60000});
  std::vector<int> per_class(10, 0);
  for (float v : labels->values) {
    ASSERT_TRUE(v >= 0 && v <= 9 && v == std::floor(v)) << v;
    ++per_class[static_cast<int>(v)];
  }
  for (int c = 0; c < 10; ++c) EXPECT_EQ(per_class[c], 6000) << "class " << c;  // balanced
  EXPECT_EQ(labels->values[0], ByteAt(labels_path, 8));  // after magic and one dimension
  EXPECT_EQ(labels->values[59999], ByteAt(labels_path, 8 + 59999));

  Result<IdxArray> images = ReadIdx(images_path);
  ASSERT_TRUE(images.ok()) << images.errors()[0].Format();
  EXPECT_EQ(images->dims, (std::vector<int64_t>{60000, 28, 28}));
  ASSERT_EQ(images->values.size(), 60000u * 28 * 28);
  for (size_t i : {size_t{0}, size_t{400}, size_t{783}, size_t{12345678}}) {
    EXPECT_EQ(images->values[i], ByteAt(images_path, 16 + i)) << i;
  }
}

}  // namespace
}  // namespace scellis::data

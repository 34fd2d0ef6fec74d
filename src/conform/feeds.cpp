// The inputs of a conformance case: random feeds drawn per domain from the counter hash, the
// same values for a seed on every machine.
#include <cmath>
#include <limits>
#include <span>

#include "base/random.h"
#include "conform/cases.h"

namespace scellis::conform {
namespace {

uint64_t Fnv1a(const std::string& s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

}  // namespace

runtime::Feeds MakeFeeds(const Case& c, uint64_t seed) {
  runtime::Feeds feeds;
  for (const CaseInput& in : c.inputs) {
    HostTensor t = HostTensor::Zeros(MakeType(in.shape));
    int64_t n = t.elements();
    std::span<float> data = t.view<float>();
    if (in.dtype == DType::kU32) {
      HostTensor stored = HostTensor::Zeros(MakeType(in.shape, in.dtype));
      std::span<uint32_t> ints = stored.view<uint32_t>();
      uint64_t stream = CounterHash(seed, Fnv1a(c.id() + "/" + in.name));
      // The first elements are the boundary values, the rest random bits.
      const uint32_t boundary[] = {0u,          4294967295u, 1u,          2147483648u,
                                   2147483647u, 16777217u,   4294967040u, 4294967168u};
      for (int64_t i = 0; i < n; ++i)
        ints[i] = i < static_cast<int64_t>(std::size(boundary))
                      ? boundary[i]
                      : static_cast<uint32_t>(CounterHash(stream, static_cast<uint64_t>(i)));
      feeds[in.name] = std::move(stored);
      continue;
    }
    if (in.dtype == DType::kI32) {
      HostTensor stored = HostTensor::Zeros(MakeType(in.shape, in.dtype));
      std::span<int32_t> ints = stored.view<int32_t>();
      uint64_t stream = CounterHash(seed, Fnv1a(c.id() + "/" + in.name));
      // The first elements of a kInt32 tensor are the boundary values, the rest random bits.
      const int32_t boundary[] = {std::numeric_limits<int32_t>::min(),
                                  std::numeric_limits<int32_t>::max(),
                                  0,
                                  -1,
                                  1,
                                  16777217,
                                  -16777217,
                                  2147483520,
                                  2147483584};
      for (int64_t i = 0; i < n; ++i) {
        const uint64_t h = CounterHash(stream, static_cast<uint64_t>(i));
        if (in.domain == Domain::kIndex)
          ints[i] = static_cast<int32_t>(h % static_cast<uint64_t>(std::max(in.classes, 1)));
        else if (in.domain == Domain::kFixed)
          ints[i] = static_cast<int32_t>(h % 16385) - 8192;
        else if (in.domain == Domain::kSmallInt32)
          ints[i] = static_cast<int32_t>(h % 7) - 3;
        else
          ints[i] =
              i < static_cast<int64_t>(std::size(boundary)) ? boundary[i] : static_cast<int32_t>(h);
      }
      feeds[in.name] = std::move(stored);
      continue;
    }
    if (in.domain == Domain::kBlocks) {
      HostTensor stored = HostTensor::Zeros(MakeType(in.shape, in.dtype));
      uint64_t stream = CounterHash(seed, Fnv1a(c.id() + "/" + in.name));
      std::span<uint8_t> bytes = stored.view<uint8_t>();
      for (size_t i = 0; i < bytes.size(); ++i)
        bytes[i] = static_cast<uint8_t>(CounterHash(stream, i));
      // The f16 fields: d and dmin at bytes 0 and 2 of a q4_k block, d at byte 208 of a q6_k one.
      const int64_t block = BlockBytes(in.dtype);
      const std::vector<int64_t> halves =
          in.dtype == DType::kQ4K ? std::vector<int64_t>{0, 2} : std::vector<int64_t>{208};
      for (int64_t at = 0; at < static_cast<int64_t>(bytes.size()); at += block) {
        for (int64_t h : halves) {
          const uint64_t r = CounterHash(stream ^ 0xb10c, static_cast<uint64_t>(at + h));
          const float d = (CounterUniform(stream ^ 0xd, static_cast<uint64_t>(at + h)) - 0.5f) /
                          16.0f;
          const uint16_t bits = FloatToHalf((r & 1) ? -d : d);
          bytes[static_cast<size_t>(at + h)] = static_cast<uint8_t>(bits & 0xff);
          bytes[static_cast<size_t>(at + h + 1)] = static_cast<uint8_t>(bits >> 8);
        }
      }
      feeds[in.name] = std::move(stored);
      continue;
    }
    if (in.dtype != DType::kF32) {  // a mask: drawn as 0/1 floats, stored in its own dtype
      HostTensor stored = HostTensor::Zeros(MakeType(in.shape, in.dtype));
      uint64_t stream = CounterHash(seed, Fnv1a(c.id() + "/" + in.name));
      for (int64_t i = 0; i < n; ++i)
        stored.SetValue(i, CounterUniform(stream, static_cast<uint64_t>(i)) < 0.5f ? 1.0 : 0.0);
      feeds[in.name] = std::move(stored);
      continue;
    }
    uint64_t stream = CounterHash(seed, Fnv1a(c.id() + "/" + in.name));
    bool any_one = false;
    for (int64_t i = 0; i < n; ++i) {
      float u = CounterUniform(stream, static_cast<uint64_t>(i));
      float v = 0;
      switch (in.domain) {
        case Domain::kSigned:
          v = -2.0f + 4.0f * u;
          if (v == 0.0f) v = 0.5f;  // never zero
          break;
        case Domain::kPositive:
          v = 0.125f + 3.875f * u;
          break;
        case Domain::kAwayFromZero: {
          float magnitude = 0.5f + 1.5f * u;
          v = (CounterHash(stream ^ 0x5eed, static_cast<uint64_t>(i)) & 1) ? -magnitude : magnitude;
          break;
        }
        case Domain::kLabels:
          v = static_cast<float>(CounterHash(stream, static_cast<uint64_t>(i)) %
                                 static_cast<uint64_t>(std::max(in.classes, 1)));
          break;
        case Domain::kStep:
          v = static_cast<float>(1 + CounterHash(stream, 0) % 1000);
          break;
        case Domain::kCoarse:
          // -2, -1.5, ..., 2, with -0 beside +0.
          v = static_cast<float>(static_cast<int>(u * 9.0f)) * 0.5f - 2.0f;
          if (v == 0.0f && (CounterHash(stream ^ 0x5eed, static_cast<uint64_t>(i)) & 1)) v = -0.0f;
          break;
        case Domain::kMask:  // drawn above, in the mask's dtype
        case Domain::kInt32:
        case Domain::kUInt32:
        case Domain::kSmallInt32:
        case Domain::kIndex:
        case Domain::kFixed:
        case Domain::kBlocks:
          break;
        case Domain::kWide: {
          const float magnitude = std::exp2(-2.0f + 35.0f * u);
          v = (CounterHash(stream ^ 0x5eed, static_cast<uint64_t>(i)) & 1) ? -magnitude : magnitude;
          break;
        }
        case Domain::kBinary:
          v = u < 0.4f ? 1.0f : 0.0f;
          any_one = any_one || v != 0.0f;
          break;
      }
      data[static_cast<size_t>(i)] = v;
    }
    if (in.domain == Domain::kBinary && !any_one && n > 0) data[0] = 1.0f;  // never all zeros
    feeds[in.name] = std::move(t);
  }
  return feeds;
}

}  // namespace scellis::conform

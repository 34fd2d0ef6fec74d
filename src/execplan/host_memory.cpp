#include <unistd.h>

#include <fstream>
#include <limits>

#include "execplan/plan.h"

#ifdef __EMSCRIPTEN__
#include <emscripten/heap.h>
#endif

namespace scellis::execplan {

#ifdef __EMSCRIPTEN__
// A WebAssembly module has no /proc: its memory is its own linear memory, grown up to a maximum.
int64_t AvailableHostMemory() {
  const uintptr_t used = *emscripten_get_sbrk_ptr();
  const size_t max = emscripten_get_heap_max();
  return max > used ? static_cast<int64_t>(max - used) : 0;
}

const char* AvailableHostMemorySource() {
  return "WebAssembly memory left";
}
#else
int64_t AvailableHostMemory() {
  std::ifstream in("/proc/meminfo");
  std::string key, unit;
  int64_t kb = 0;
  while (in >> key >> kb >> unit) {
    if (key == "MemAvailable:") return SaturatingMul(kb, 1024);
  }
  long pages = sysconf(_SC_AVPHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? SaturatingMul(pages, page) : 0;
}

const char* AvailableHostMemorySource() {
  return "available host memory";
}
#endif

DeviceLimits HostMemoryLimits(std::string backend, std::string device) {
  DeviceLimits l;
  l.backend = std::move(backend);
  l.device = std::move(device);
  l.host_memory_bytes = AvailableHostMemory();
  l.host_memory_source = AvailableHostMemorySource();
  return l;
}

int64_t SaturatingAdd(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) return std::numeric_limits<int64_t>::max();
  return r;
}

int64_t SaturatingMul(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) return std::numeric_limits<int64_t>::max();
  return r;
}

}  // namespace scellis::execplan

// Included before every file of the WebAssembly build (CMakeLists.txt, SCELLIS_WASM): fills in
// the C++20 library pieces the engine uses that Emscripten's libc++ (Debian 12's Emscripten 3.1.6
// ships LLVM 13's) lacks. Each piece is defined only where the library does not say it has it, so
// a newer Emscripten makes this header empty.
#pragma once

#include <version>

#if !defined(__cpp_lib_bit_cast)
#include <type_traits>

namespace std {
// As C++20 specifies it (and as libc++ 14 implements it), on the compiler's builtin. Not
// formatted: clang-format 14 misplaces a requires-clause.
// clang-format off
template <class To, class From>
  requires(sizeof(To) == sizeof(From) && is_trivially_copyable_v<To> &&
           is_trivially_copyable_v<From>)
constexpr To bit_cast(const From& from) noexcept {
  return __builtin_bit_cast(To, from);
}
// clang-format on
}  // namespace std
#endif

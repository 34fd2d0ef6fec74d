#pragma once
#include <string>
#include <string_view>
namespace scellis {
// Lowercase hex SHA-256 of `bytes`.
std::string Sha256Hex(std::string_view bytes);
}  // namespace scellis

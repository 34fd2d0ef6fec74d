#pragma once
// TEMPORARY (not committed)
#include <fstream>
#include <sstream>
#include "core/result.h"
namespace scellis {
inline Status WriteFileAtomic(const std::string& path, std::string_view bytes) { std::ofstream o(path); o << bytes; return Status::Ok(); }
inline Result<std::string> ReadFile(const std::string& path, uint64_t) { std::ifstream i(path); if (!i) return UserError("file-not-found", "", "no file " + path); std::stringstream s; s << i.rdbuf(); return s.str(); }
}

// The CPU reference as a registry entry: always usable, runs every kernel.
#pragma once

#include <memory>

#include "runtime/backend.h"

namespace scellis::runtime::cpu {

std::unique_ptr<Backend> MakeBackend();

}  // namespace scellis::runtime::cpu

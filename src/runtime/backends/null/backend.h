// The null backend as a registry entry: usable everywhere, never automatic.
#pragma once

#include <memory>

#include "runtime/backend.h"

namespace scellis::runtime::null {

std::unique_ptr<Backend> MakeBackend();

}  // namespace scellis::runtime::null

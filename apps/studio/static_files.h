// The built Studio's files (web/dist), served beside the API: the canvas's page and assets, read
// only from inside the web directory, and a page that says how to build them when they are missing.
#pragma once

#include <string>

#include "handler.h"

namespace scellis::studio {

// The file at `path` ("/" is index.html): 404 for anything outside the web directory.
Response StaticFile(const Engine& engine, const std::string& path);

}  // namespace scellis::studio

#include "static_files.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "replies.h"

namespace scellis::studio {
namespace {

namespace fs = std::filesystem;

const char* ContentTypeOf(const fs::path& p) {
  static const std::pair<const char*, const char*> kTypes[] = {
      {".html", "text/html; charset=utf-8"},
      {".js", "text/javascript; charset=utf-8"},
      {".mjs", "text/javascript; charset=utf-8"},
      {".css", "text/css; charset=utf-8"},
      {".json", "application/json"},
      {".map", "application/json"},
      {".svg", "image/svg+xml"},
      {".png", "image/png"},
      {".jpg", "image/jpeg"},
      {".ico", "image/x-icon"},
      {".wasm", "application/wasm"},
      {".txt", "text/plain; charset=utf-8"},
      {".woff2", "font/woff2"},
      {".woff", "font/woff"}};
  const std::string ext = p.extension().string();
  for (const auto& [e, type] : kTypes)
    if (ext == e) return type;
  return "application/octet-stream";
}

// The page `/` gives when the Studio's assets were not built: the API still works.
Response NotBuiltPage(const std::string& web_dir) {
  Response r;
  r.content_type = "text/html; charset=utf-8";
  r.body =
      "<!doctype html><html><head><meta charset=\"utf-8\"><title>Scellis Studio</title></head>"
      "<body style=\"font-family: sans-serif; max-width: 44em; margin: 3em auto\">"
      "<h1>Scellis Studio</h1>"
      "<p>The Studio's web assets were not built, so there is no canvas to show. The JSON API "
      "under <code>/api/</code> works (try <a href=\"/api/version\">/api/version</a>).</p>"
      "<p>Build the assets, then reload this page:</p>"
      "<pre>npm --prefix web ci\nnpm --prefix web run build</pre>"
      "<p>or point the server at a built copy with <code>scellis studio --web-dir DIR</code>.</p>"
      "</body></html>\n";
  return r;
}

}  // namespace

// Reads a file of the built Studio. The request path never leaves the web directory: every
// segment must be a plain name (no "", ".", "..", no leading dot, no backslash), and the file
// found — symlinks resolved — must still lie inside the directory.
Response StaticFile(const Engine& engine, const std::string& path) {
  const std::string& dir = engine.options().web_dir;
  std::error_code ec;
  fs::path root = dir.empty() ? fs::path() : fs::canonical(dir, ec);
  if (dir.empty() || ec || !fs::is_regular_file(root / "index.html", ec)) {
    if (path == "/") return NotBuiltPage(dir);
    return NotFound("Studio asset (the Studio's web assets were not built)");
  }
  if (path.size() > 1024 || path.empty() || path[0] != '/') return NotFound("such file");
  fs::path rel;
  if (path == "/") {
    rel = "index.html";
  } else {
    std::stringstream segments(path.substr(1));
    std::string seg;
    while (std::getline(segments, seg, '/')) {
      if (seg.empty() || seg[0] == '.' || seg.find('\\') != std::string::npos ||
          seg.find('\0') != std::string::npos)
        return NotFound("such file");
      rel /= seg;
    }
    if (path.back() == '/') return NotFound("such file");
  }
  fs::path file = fs::canonical(root / rel, ec);
  if (ec) return NotFound("such file");
  const std::string root_text = root.string() + "/";
  if (file.string().rfind(root_text, 0) != 0 || !fs::is_regular_file(file, ec))
    return NotFound("such file");
  std::ifstream in(file, std::ios::binary);
  if (!in) return NotFound("such file");
  std::stringstream s;
  s << in.rdbuf();
  Response r;
  r.content_type = ContentTypeOf(file);
  r.body = s.str();
  return r;
}

}  // namespace scellis::studio

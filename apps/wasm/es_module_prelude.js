// Placed before the Emscripten module (--extern-pre-js). This Emscripten's Node support reads
// CommonJS's __dirname as it starts, which an ES module does not have; it is only the folder the
// module would read its .wasm from, and @scellis/wasm-reference hands the module its .wasm bytes
// (wasmBinary) under Node, so nothing is read from it.
var __dirname = "";

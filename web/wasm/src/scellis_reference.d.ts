// The Emscripten module factory that tools/build_wasm.sh writes beside this package's build
// (dist/scellis_reference.js, from apps/wasm/main.cpp): only the parts index.ts uses.
export interface ScellisReferenceModule {
  _scellis_run(documentText: number, optionsJson: number): number;
  _scellis_device_program(documentText: number, optionsJson: number): number;
  _scellis_traced_document(traceText: number, optionsJson: number): number;
  _scellis_version(): number;
  _malloc(bytes: number): number;
  _free(pointer: number): void;
  UTF8ToString(pointer: number): string;
  stringToUTF8(text: string, pointer: number, maxBytes: number): void;
  lengthBytesUTF8(text: string): number;
}

export interface ScellisReferenceModuleOptions {
  wasmBinary?: ArrayBuffer | Uint8Array;
  locateFile?: (path: string, scriptDirectory: string) => string;
}

declare function createScellisReference(options?: ScellisReferenceModuleOptions): Promise<ScellisReferenceModule>;
export default createScellisReference;

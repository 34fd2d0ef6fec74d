// Host tensors: the element types of the engine (f32, f16, i32, u32, bool) as typed arrays, and
// their little-endian storage bytes (bool as a 4-byte 0/1, f16 as IEEE binary16).

import { ScellisRuntimeError } from "./errors.js";

export type DType = "f32" | "f16" | "i32" | "u32" | "bool";

// f16 values are widened to Float32Array on the way out and narrowed on the way in; bool is 0/1.
export type TensorData = Float32Array | Int32Array | Uint32Array;

export interface Tensor {
  shape: number[];
  dtype: DType;
  data: TensorData;
}

// What a feed may be: a typed array or plain numbers (converted to the input's dtype), or a
// tensor-like object whose shape is checked when given.
export type FeedValue = TensorData | ArrayLike<number> | { shape?: number[]; data: TensorData | ArrayLike<number> };
export type Feeds = Record<string, FeedValue>;

export function bytesPerElement(dtype: DType): number {
  return dtype === "f16" ? 2 : 4;
}

export function elementCount(shape: readonly number[]): number {
  return shape.reduce((a, b) => a * b, 1);
}

function checkDType(dtype: string): DType {
  if (dtype === "f32" || dtype === "f16" || dtype === "i32" || dtype === "u32" || dtype === "bool") return dtype;
  throw new ScellisRuntimeError("bad-program", `unknown dtype "${dtype}"`);
}
export { checkDType as parseDType };

// IEEE binary16 -> binary32.
export function halfToFloat(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const exp = (h >> 10) & 0x1f;
  const frac = h & 0x3ff;
  if (exp === 0) return sign * frac * 2 ** -24;
  if (exp === 31) return frac ? NaN : sign * Infinity;
  return sign * (1 + frac / 1024) * 2 ** (exp - 15);
}

// binary32 -> binary16, round to nearest even (through the bits of the f32 value).
export function floatToHalf(value: number): number {
  const f = new Float32Array([value]);
  const x = new Uint32Array(f.buffer)[0]!;
  const sign = (x >>> 16) & 0x8000;
  const exp = (x >>> 23) & 0xff;
  let mant = x & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (mant ? 0x200 : 0);
  let e = exp - 127 + 15;
  if (e >= 31) return sign | 0x7c00;
  if (e <= 0) {
    if (e < -10) return sign;
    mant |= 0x800000;
    const shift = 14 - e;
    const half = 1 << (shift - 1);
    let r = mant >>> shift;
    const rest = mant & ((1 << shift) - 1);
    if (rest > half || (rest === half && r & 1)) r++;
    return sign | r;
  }
  let r = mant >>> 13;
  const rest = mant & 0x1fff;
  if (rest > 0x1000 || (rest === 0x1000 && r & 1)) {
    r++;
    if (r === 0x400) {
      r = 0;
      e++;
      if (e >= 31) return sign | 0x7c00;
    }
  }
  return sign | (e << 10) | r;
}

// The storage bytes of `values` as `dtype` (a copy).
export function encode(dtype: DType, values: TensorData | ArrayLike<number>): Uint8Array {
  const n = values.length;
  if (dtype === "f16") {
    const out = new Uint16Array(n);
    for (let i = 0; i < n; i++) out[i] = floatToHalf(Number(values[i]));
    return new Uint8Array(out.buffer);
  }
  let out: TensorData;
  if (dtype === "f32") out = new Float32Array(n);
  else if (dtype === "i32") out = new Int32Array(n);
  else out = new Uint32Array(n);
  if (dtype === "bool") for (let i = 0; i < n; i++) out[i] = values[i] ? 1 : 0;
  else if (ArrayBuffer.isView(values) && values.constructor === out.constructor) out.set(values as never);
  else for (let i = 0; i < n; i++) out[i] = Number(values[i]);
  return new Uint8Array(out.buffer);
}

// A typed array of `dtype` over (a copy of) little-endian storage bytes.
export function decode(dtype: DType, bytes: Uint8Array, count: number): TensorData {
  const copy = bytes.slice(0, count * bytesPerElement(dtype));
  if (dtype === "f32") return new Float32Array(copy.buffer, 0, count);
  if (dtype === "i32") return new Int32Array(copy.buffer, 0, count);
  if (dtype === "u32" || dtype === "bool") return new Uint32Array(copy.buffer, 0, count);
  const half = new Uint16Array(copy.buffer, 0, count);
  const out = new Float32Array(count);
  for (let i = 0; i < count; i++) out[i] = halfToFloat(half[i]!);
  return out;
}

// Checks a feed against the input it is for and returns its storage bytes.
export function feedBytes(name: string, value: FeedValue, shape: readonly number[], dtype: DType): Uint8Array {
  let data: TensorData | ArrayLike<number>;
  if (typeof value === "object" && value !== null && "data" in value && !ArrayBuffer.isView(value)) {
    const v = value as { shape?: number[]; data: TensorData | ArrayLike<number> };
    if (v.shape && (v.shape.length !== shape.length || v.shape.some((s, i) => s !== shape[i]))) {
      throw new ScellisRuntimeError(
        "bad-feed",
        `the feed "${name}" has shape [${v.shape.join(", ")}], the input is [${shape.join(", ")}]`,
      );
    }
    data = v.data;
  } else {
    data = value as TensorData | ArrayLike<number>;
  }
  if (data === null || typeof data !== "object" || typeof (data as ArrayLike<number>).length !== "number") {
    throw new ScellisRuntimeError("bad-feed", `the feed "${name}" is not an array of numbers`);
  }
  const want = elementCount(shape);
  if (data.length !== want) {
    throw new ScellisRuntimeError(
      "bad-feed",
      `the feed "${name}" holds ${data.length} elements, the input [${shape.join(", ")}] ${dtype} holds ${want}`,
    );
  }
  // A typed array of another element type would be converted silently; refuse the ambiguous ones.
  if (dtype === "f32" && (data instanceof Int32Array || data instanceof Uint32Array)) {
    throw new ScellisRuntimeError("bad-feed", `the feed "${name}" is an integer array, the input is f32`, "pass a Float32Array");
  }
  if ((dtype === "i32" || dtype === "u32") && data instanceof Float32Array) {
    throw new ScellisRuntimeError("bad-feed", `the feed "${name}" is a Float32Array, the input is ${dtype}`);
  }
  return encode(dtype, data);
}

// The device program ("scellis.device-program/1"): what the engine's BuildDeviceProgram writes
// (src/runtime/device_program.h describes the model). parseProgram checks a program's structure
// once, so the executor can index it without further checks.

import { ScellisRuntimeError } from "./errors.js";
import { type DType, parseDType } from "./tensor.js";

export const PROGRAM_FORMAT = "scellis.device-program/1";

export interface ProgramBuffer {
  id: number;
  bytes: number;
  size: number;
  class: string;
}
export interface ProgramSource {
  name: string;
  role: "param" | "input" | "const";
  buffer: number;
  bytes: number;
  data: string; // base64 of the little-endian bytes
}
export interface ProgramInput {
  name: string;
  role: "input" | "param";
  buffer: number;
  shape: number[];
  dtype: DType;
  bytes: number;
  fed: boolean;
  carried: boolean;
  initial: boolean;
}
export interface ProgramPipeline {
  id: number;
  kernel: string;
  entry_point: string;
  wgsl: string;
  hash: string;
}
export interface ProgramBinding {
  buffer: number;
  offset: number;
  size: number; // 0: to the end of the buffer
}
export interface ProgramDispatch {
  step: number;
  kernel: string;
  pipeline: number;
  bindings: ProgramBinding[];  // the kernel's inputs, then its outputs
  writes?: number;             // how many of the last bindings the kernel writes; absent: 1
  workgroups: [number, number, number];
  // Output elements [base, base + count) of a tiled kernel; `continues`: the tile adds to the
  // partial sums an earlier tile of the step left in its output window.
  tile?: { base: number; count: number; continues?: boolean };
}
export interface ProgramOutput {
  name: string;
  buffer: number;
  shape: number[];
  dtype: DType;
  bytes: number;
  // The kernel that computes it can write it into a slot of a run's history of watched values,
  // bound in place of its own buffer (a computed value alone in its buffer, not carried, written
  // whole by an untiled dispatch); false when left out.
  writes_into_history_slot: boolean;
}
export interface ProgramCarry {
  from: string;
  from_buffer: number;
  to: string;
  to_buffer: number;
}
export interface ProgramLimits {
  max_storage_buffer_binding_size: number;
  min_storage_buffer_offset_alignment: number;
  max_compute_workgroups_per_dimension: number;
}
export interface DeviceProgram {
  format: typeof PROGRAM_FORMAT;
  name: string;
  content_id: string;
  tier: "debug" | "prod" | "fast";
  tolerance: { class: string; atol: number; rtol: number };
  limits: ProgramLimits;
  max_steps_per_submission: number;
  // Iterations of the dispatch list per step (a document's `repeat`; 1 when left out), the
  // carries swapped after every one; a step's watched values are its last iteration's.
  repeat: number;
  // Iterations one dispatch runs (> 1 for a temporally blocked loop body; 1 when left out): the
  // dispatch list is recorded repeat / iterations_per_dispatch times per step.
  iterations_per_dispatch: number;
  // The leading dispatches that run once per step, before the first iteration (the loop's
  // invariants, hoisted by the engine; 0 when left out): only the rest are the loop body.
  hoisted_dispatches: number;
  buffers: ProgramBuffer[];
  sources: ProgramSource[];
  inputs: ProgramInput[];
  pipelines: ProgramPipeline[];
  dispatches: ProgramDispatch[];
  outputs: ProgramOutput[];
  carries: ProgramCarry[];
}

function bad(message: string): never {
  throw new ScellisRuntimeError("bad-program", message);
}

function isCount(v: unknown): v is number {
  return typeof v === "number" && Number.isSafeInteger(v) && v >= 0;
}

// Checks the structure of `value` (a parsed JSON object, or its text) and returns it as a program.
export function parseProgram(value: unknown): DeviceProgram {
  if (typeof value === "string") {
    try {
      value = JSON.parse(value);
    } catch (e) {
      bad(`the program is not JSON: ${(e as Error).message}`);
    }
  }
  if (typeof value !== "object" || value === null) bad("the program is not an object");
  const p = value as DeviceProgram;
  if (p.format !== PROGRAM_FORMAT) bad(`the program's format is ${JSON.stringify(p.format)}, expected "${PROGRAM_FORMAT}"`);
  for (const key of ["buffers", "sources", "inputs", "pipelines", "dispatches", "outputs", "carries"] as const) {
    if (!Array.isArray(p[key])) bad(`the program has no "${key}" list`);
  }
  if (!isCount(p.max_steps_per_submission) || p.max_steps_per_submission < 1) bad("max_steps_per_submission must be a positive count");
  if (p.repeat === undefined) p.repeat = 1;
  if (!isCount(p.repeat) || p.repeat < 1) bad("repeat must be a positive count");
  if (p.iterations_per_dispatch === undefined) p.iterations_per_dispatch = 1;
  if (!isCount(p.iterations_per_dispatch) || p.iterations_per_dispatch < 1 || p.repeat % p.iterations_per_dispatch !== 0)
    bad("iterations_per_dispatch must be a positive count dividing repeat");
  if (p.hoisted_dispatches === undefined) p.hoisted_dispatches = 0;
  if (!isCount(p.hoisted_dispatches) || p.hoisted_dispatches > p.dispatches.length)
    bad("hoisted_dispatches must be a count of the program's dispatches");
  const nb = p.buffers.length;
  p.buffers.forEach((b, i) => {
    if (b.id !== i) bad(`buffers[${i}] has id ${b.id}`);
    if (!isCount(b.size) || b.size % 4 !== 0 || b.size < 4) bad(`buffers[${i}] has size ${b.size}`);
  });
  const buffer = (where: string, id: unknown) => {
    if (!isCount(id) || id >= nb) bad(`${where} names buffer ${String(id)}, the program has ${nb}`);
  };
  p.sources.forEach((s, i) => {
    buffer(`sources[${i}]`, s.buffer);
    if (typeof s.data !== "string") bad(`sources[${i}] has no data`);
  });
  p.inputs.forEach((s, i) => {
    buffer(`inputs[${i}]`, s.buffer);
    parseDType(s.dtype);
    if (!Array.isArray(s.shape) || !s.shape.every(isCount)) bad(`inputs[${i}] has a bad shape`);
  });
  p.outputs.forEach((s, i) => {
    buffer(`outputs[${i}]`, s.buffer);
    parseDType(s.dtype);
    if (!Array.isArray(s.shape) || !s.shape.every(isCount)) bad(`outputs[${i}] has a bad shape`);
    if (s.writes_into_history_slot === undefined) s.writes_into_history_slot = false;
    if (typeof s.writes_into_history_slot !== "boolean") bad(`outputs[${i}].writes_into_history_slot is not a boolean`);
  });
  p.pipelines.forEach((pl, i) => {
    if (pl.id !== i) bad(`pipelines[${i}] has id ${pl.id}`);
    if (typeof pl.wgsl !== "string" || typeof pl.entry_point !== "string") bad(`pipelines[${i}] has no WGSL or entry point`);
  });
  p.dispatches.forEach((d, i) => {
    if (!isCount(d.pipeline) || d.pipeline >= p.pipelines.length) bad(`dispatches[${i}] names pipeline ${d.pipeline}`);
    if (!Array.isArray(d.workgroups) || d.workgroups.length !== 3 || !d.workgroups.every(isCount)) bad(`dispatches[${i}] has bad workgroups`);
    if (!Array.isArray(d.bindings) || d.bindings.length === 0) bad(`dispatches[${i}] binds nothing`);
    if (d.writes !== undefined &&
        (!isCount(d.writes) || d.writes > d.bindings.length))
      bad(`dispatches[${i}] writes ${d.writes} of its ${d.bindings.length} bindings`);
    d.bindings.forEach((b, j) => {
      buffer(`dispatches[${i}].bindings[${j}]`, b.buffer);
      if (!isCount(b.offset) || !isCount(b.size) || b.offset % 4 || b.size % 4) bad(`dispatches[${i}].bindings[${j}] has a bad range`);
      const size = p.buffers[b.buffer]!.size;
      if (b.offset + b.size > size) bad(`dispatches[${i}].bindings[${j}] reaches past its buffer's ${size} bytes`);
    });
  });
  p.carries.forEach((c, i) => {
    buffer(`carries[${i}].from_buffer`, c.from_buffer);
    buffer(`carries[${i}].to_buffer`, c.to_buffer);
  });
  return p;
}

// Standard base64 (RFC 4648) to bytes, without relying on atob or Buffer.
export function base64ToBytes(text: string): Uint8Array {
  const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  const clean = text.replace(/=+$/, "");
  const out = new Uint8Array(Math.floor((clean.length * 3) / 4));
  let acc = 0;
  let bits = 0;
  let n = 0;
  for (let i = 0; i < clean.length; i++) {
    const v = alphabet.indexOf(clean[i]!);
    if (v < 0) bad(`a source's data is not base64 (character ${JSON.stringify(clean[i])})`);
    acc = ((acc << 6) | v) & 0xffffff;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out[n++] = (acc >> bits) & 0xff;
    }
  }
  return out.subarray(0, n);
}

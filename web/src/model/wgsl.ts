// A small WGSL highlighter: a tokenizer whose tokens the ladder renders as spans. Enough of the
// grammar to colour what the engine emits: comments, attributes, keywords, types, builtins,
// numbers; everything else passes through as text. No token is dropped, so the joined text is
// the source byte for byte.
import { isObject, type JsonObject } from './json';

export type TokenKind = 'comment' | 'attribute' | 'keyword' | 'type' | 'builtin' | 'number' | 'ident' | 'punct' | 'space';

export interface Token {
  kind: TokenKind;
  text: string;
}

const KEYWORDS = new Set([
  'alias', 'break', 'case', 'const', 'const_assert', 'continue', 'continuing', 'default', 'diagnostic',
  'discard', 'else', 'enable', 'false', 'fn', 'for', 'if', 'let', 'loop', 'override', 'requires',
  'return', 'struct', 'switch', 'true', 'var', 'while', 'storage', 'uniform', 'workgroup', 'private',
  'function', 'read', 'write', 'read_write',
]);

const TYPES = new Set([
  'array', 'atomic', 'bool', 'f16', 'f32', 'i32', 'u32', 'mat2x2', 'mat2x3', 'mat2x4', 'mat3x2',
  'mat3x3', 'mat3x4', 'mat4x2', 'mat4x3', 'mat4x4', 'ptr', 'sampler', 'vec2', 'vec3', 'vec4',
  'vec2f', 'vec3f', 'vec4f', 'vec2u', 'vec3u', 'vec4u', 'vec2i', 'vec3i', 'vec4i',
]);

const BUILTINS = new Set([
  'abs', 'all', 'any', 'arrayLength', 'atomicAdd', 'atomicLoad', 'atomicStore', 'bitcast', 'ceil',
  'clamp', 'cos', 'cosh', 'dot', 'exp', 'exp2', 'floor', 'fma', 'fract', 'inverseSqrt', 'log',
  'log2', 'max', 'min', 'mix', 'pow', 'round', 'select', 'sign', 'sin', 'sqrt', 'step', 'tan',
  'tanh', 'trunc', 'workgroupBarrier', 'storageBarrier',
]);

const RULES: [TokenKind, RegExp][] = [
  ['comment', /\/\/[^\n]*|\/\*[\s\S]*?\*\//y],
  ['space', /\s+/y],
  ['attribute', /@[A-Za-z_][A-Za-z0-9_]*/y],
  ['number', /(?:0[xX][0-9a-fA-F]+|(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?)[fhiu]?/y],
  ['ident', /[A-Za-z_][A-Za-z0-9_]*/y],
  ['punct', /->|[-+*/%=<>!&|^~?:;,.(){}[\]]+/y],
];

export function tokenize(src: string): Token[] {
  const out: Token[] = [];
  let i = 0;
  while (i < src.length) {
    let matched = false;
    for (const [kind, re] of RULES) {
      re.lastIndex = i;
      const m = re.exec(src);
      if (!m || m[0].length === 0) continue;
      let k = kind;
      if (kind === 'ident') {
        if (KEYWORDS.has(m[0])) k = 'keyword';
        else if (TYPES.has(m[0])) k = 'type';
        else if (BUILTINS.has(m[0])) k = 'builtin';
      }
      const last = out[out.length - 1];
      if (last && last.kind === k && (k === 'punct' || k === 'space')) last.text += m[0];
      else out.push({ kind: k, text: m[0] });
      i += m[0].length;
      matched = true;
      break;
    }
    if (!matched) {
      out.push({ kind: 'punct', text: src[i] });
      i += 1;
    }
  }
  return out;
}

// Each kernel's WGSL, by kernel name: from the kernel rung's kernels when they carry the source,
// else from the rung's "wgsl" (the server's [{"kernel", "entry_point", "source"}], or the CLI's
// dump as one text), else from the device program's pipelines (the text the runtime compiles).
export function wgslSources(kernelRung: JsonObject | null, program: JsonObject | null): Map<string, string> {
  const out = new Map<string, string>();
  const json = isObject(kernelRung?.json) ? kernelRung.json : null;
  for (const kern of Array.isArray(json?.kernels) ? json.kernels : []) {
    if (!isObject(kern)) continue;
    const src = kern.wgsl ?? kern.source ?? kern.wgsl_source;
    if (typeof src === 'string') out.set(String(kern.name), src);
  }
  const listed = kernelRung?.wgsl;
  if (typeof listed === 'string') {
    for (const [name, src] of splitWgslDump(listed)) if (!out.has(name)) out.set(name, src);
  } else if (Array.isArray(listed)) {
    for (const w of listed) {
      if (!isObject(w) || typeof w.source !== 'string') continue;
      const name = String(w.kernel ?? w.name);
      if (!out.has(name)) out.set(name, w.source);
    }
  }
  if (program && Array.isArray(program.pipelines)) {
    for (const p of program.pipelines) {
      if (!isObject(p)) continue;
      const name = String(p.kernel ?? p.name ?? p.id);
      const src = p.wgsl ?? p.source ?? p.code;
      if (typeof src === 'string' && !out.has(name)) out.set(name, src);
    }
  }
  return out;
}

// The engine's WGSL dump: "// ---- k0_mean ----" before each kernel's source.
export function splitWgslDump(text: string): Map<string, string> {
  const out = new Map<string, string>();
  const re = /^\/\/ ---- (\S+) ----\n/gm;
  const marks: { name: string; start: number; body: number }[] = [];
  let m: RegExpExecArray | null;
  while ((m = re.exec(text)) !== null) marks.push({ name: m[1], start: m.index, body: m.index + m[0].length });
  marks.forEach((mk, i) => {
    const end = i + 1 < marks.length ? marks[i + 1].start : text.length;
    out.set(mk.name, text.slice(mk.body, end).replace(/\n+$/, '\n'));
  });
  return out;
}

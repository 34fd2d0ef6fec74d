// Tracing: a plain function over symbolic tensor handles, called once, recorded as graph protocol
// nodes and made into one version-5 document whose graph is one loop body run `repeat` times, its
// loop state carried between iterations — the document the Python package's `scellis.pipeline`
// makes of the same program (python/scellis/pipeline.py; the engine makes both documents from
// their traces, so they are equal after canonical ordering, and a test holds them to it).
//
// How a loop becomes one body. A `for` loop over a static count runs during the trace and records
// one copy of its body per pass. The engine then rolls the trace up (doc::TracedDocument, through
// the compiler's tracedDocument): the longest stretch of nodes that is the same body repeated,
// each copy reading the previous copy's values where the first read the loop's starting values,
// becomes the document's graph with `repeat` the number of copies; what the first copy read from
// before the loop, and the copies after it from their predecessor, is the carried state. Every
// copy is checked node by node and port by port against the first, so the document computes what
// the unrolled trace computes; a trace with no such stretch runs once.
// `loop(n, body, ...state)` says the same explicitly: the body is traced once, whatever n is.
//
// Handle rules, named build-time errors (TraceError): reading a value inside the function
// (element reads, arithmetic or comparison operators, spreading, enumerating: value-read-in-trace),
// control flow waiting on a value (awaiting a handle, an async or generator function:
// data-dependent-control-flow), a handle kept from an earlier trace (stale-handle), a loop count
// that is not a static integer (loop-count-not-static).

export type TraceErrorCode =
  | "value-read-in-trace"
  | "data-dependent-control-flow"
  | "stale-handle"
  | "foreign-tensor"
  | "loop-count-not-static"
  | "one-loop-per-pipeline"
  | "bad-loop-state"
  | "bad-loop-body"
  | "bad-loop-count"
  | "bad-pipeline-output"
  | "bad-pipeline-argument"
  | "unknown-shape"
  | "bad-attribute"
  | "unknown-op"
  | "outside-trace";

export class TraceError extends Error {
  readonly code: TraceErrorCode;
  readonly help: string | null;

  constructor(code: TraceErrorCode, message: string, help: string | null = null) {
    super(message);
    this.name = "TraceError";
    this.code = code;
    this.help = help;
  }
}

export type TraceDType = "f32" | "f16" | "i32" | "u32" | "bool";
type Shape = number[] | null;
export type DocNode = Record<string, unknown> & { id: number; op: string };

// The engine's op table, for the ops a handle offers: each op's input ports (in the table's
// order), its family and the protocol version it needs, as `scellis ops --json` gives them
// (test/ops.test.ts holds each entry to the engine's).
export const OPS: Record<string, { ports: string[]; family: string; version: number }> = {
  input: { ports: [], family: "source", version: 1 },
  full: { ports: [], family: "source", version: 1 },
  add: { ports: ["a", "b"], family: "elementwise", version: 1 },
  sub: { ports: ["a", "b"], family: "elementwise", version: 1 },
  mul: { ports: ["a", "b"], family: "elementwise", version: 1 },
  div: { ports: ["a", "b"], family: "elementwise", version: 2 },
  maximum: { ports: ["a", "b"], family: "elementwise", version: 3 },
  minimum: { ports: ["a", "b"], family: "elementwise", version: 3 },
  neg: { ports: ["a"], family: "elementwise", version: 2 },
  relu: { ports: ["a"], family: "elementwise", version: 1 },
  exp: { ports: ["a"], family: "elementwise", version: 2 },
  log: { ports: ["a"], family: "elementwise", version: 2 },
  sqrt: { ports: ["a"], family: "elementwise", version: 2 },
  tanh: { ports: ["a"], family: "elementwise", version: 2 },
  sigmoid: { ports: ["a"], family: "elementwise", version: 2 },
  clamp: { ports: ["a"], family: "elementwise", version: 3 },
  cast: { ports: ["a"], family: "elementwise", version: 3 },
  eq: { ports: ["a", "b"], family: "elementwise", version: 3 },
  ne: { ports: ["a", "b"], family: "elementwise", version: 3 },
  lt: { ports: ["a", "b"], family: "elementwise", version: 3 },
  le: { ports: ["a", "b"], family: "elementwise", version: 3 },
  gt: { ports: ["a", "b"], family: "elementwise", version: 3 },
  ge: { ports: ["a", "b"], family: "elementwise", version: 3 },
  where: { ports: ["cond", "a", "b"], family: "elementwise", version: 3 },
  shift: { ports: ["a"], family: "neighbour", version: 5 },
  life: { ports: ["a"], family: "stencil", version: 1 },
  matmul: { ports: ["a", "b"], family: "matmul", version: 1 },
  sum: { ports: ["a"], family: "reduce", version: 1 },
  mean: { ports: ["a"], family: "reduce", version: 2 },
  cumsum: { ports: ["a"], family: "reduce", version: 5 },
  reshape: { ports: ["a"], family: "layout", version: 2 },
  transpose: { ports: ["a"], family: "layout", version: 1 },
  // Protocol version 6: bit operations on i32 and u32, the index ramp and the permuted load of a
  // bitonic (or FFT) stage.
  bitwise_and: { ports: ["a", "b"], family: "elementwise", version: 6 },
  bitwise_or: { ports: ["a", "b"], family: "elementwise", version: 6 },
  bitwise_xor: { ports: ["a", "b"], family: "elementwise", version: 6 },
  shift_left: { ports: ["a", "b"], family: "elementwise", version: 6 },
  shift_right: { ports: ["a", "b"], family: "elementwise", version: 6 },
  arange: { ports: [], family: "position", version: 6 },
  butterfly: { ports: ["a"], family: "neighbour", version: 6 },
};


function broadcast(a: Shape, b: Shape): Shape {
  if (a === null || b === null) return null;
  const n = Math.max(a.length, b.length);
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const x = a[a.length - n + i] ?? 1;
    const y = b[b.length - n + i] ?? 1;
    if (x !== y && x !== 1 && y !== 1) return null; // the engine names the mismatch
    out.push(x === 1 ? y : x);
  }
  return out;
}

function sameShape(a: Shape, b: Shape): boolean {
  return a !== null && b !== null && a.length === b.length && a.every((s, i) => s === b[i]);
}

// The protocol version the forms of a node need beyond its op's own (the protocol's rules, as
// the Python package applies them): broadcasting two non-scalar shapes, a reduction over one axis
// or with keepdim, a batched matmul. An unknown shape counts as the newer form.
function versionOfFeatures(op: string, ports: Record<string, Handle>, attrs: Record<string, unknown>): number {
  if ((op === "sum" || op === "mean") && (attrs.axis !== undefined || attrs.keepdim)) return 2;
  const shapes = (["a", "b"] as const).filter((p) => p in ports).map((p) => ports[p]!.shape);
  if (op === "matmul" && shapes.some((s) => s === null || s.length > 2)) return 2;
  const isScalar = (s: Shape) => s !== null && s.length === 0;
  const equal = (a: Shape, b: Shape) => (a === null && b === null) || sameShape(a, b);
  if (OPS[op]!.family === "elementwise" && shapes.length === 2 && !equal(shapes[0]!, shapes[1]!) && !shapes.some(isScalar)) return 2;
  return 1;
}

function isStaticCount(n: unknown): n is number {
  return typeof n === "number" && Number.isInteger(n);
}

// ---- the trace ----

// A loop written with loop(), its body traced once, as the engine reads it (doc::TracedDocument
// finds the body's reads of the carried nodes itself).
interface DeclaredLoop {
  start: number;
  length: number;
  count: number;
  carry: Array<[number, number]>; // node before the loop read as state -> the body node that replaces it
}

export class Trace {
  readonly nodes: DocNode[] = [];
  readonly needs: number[] = [];
  readonly types: Array<[Shape, TraceDType]> = [];
  done = false;
  loop: DeclaredLoop | null = null;

  add(op: string, ports: Record<string, Handle>, attrs: Record<string, unknown> = {}, shape: Shape = null, dtype: TraceDType = "f32"): Handle {
    if (this.done) throw stale();
    for (const h of Object.values(ports)) this.own(h);
    const node: DocNode = { id: this.nodes.length, op };
    for (const [port, h] of Object.entries(ports)) node[port] = h.id;
    for (const [key, value] of Object.entries(attrs)) node[key] = value;
    this.nodes.push(node);
    this.needs.push(Math.max(OPS[op]!.version, versionOfFeatures(op, ports, attrs)));
    this.types.push([shape === null ? null : [...shape], dtype]);
    return makeHandle(this, node.id, shape === null ? null : [...shape], dtype);
  }

  own(h: unknown): Handle {
    const state = handleState.get(h as object);
    if (!state) throw new TraceError("foreign-tensor", `expected a traced tensor, got ${describe(h)}`, "compute with the pipeline's arguments and the ops of their handles");
    if (state.trace.done || this.done) throw stale();
    if (state.trace !== this) throw new TraceError("foreign-tensor", "the tensor belongs to another pipeline's trace");
    return h as Handle;
  }
}

function describe(v: unknown): string {
  if (v === null) return "null";
  if (typeof v === "object") return (v as object).constructor?.name ?? "an object";
  return `${typeof v} ${String(v)}`;
}

function stale(): TraceError {
  return new TraceError(
    "stale-handle",
    "the tensor belongs to an earlier, finished trace of a pipeline: tensors of a trace are symbolic and die with it",
    "keep no tensors between calls; return them from the pipeline and use the results",
  );
}

// ---- handles ----

// What a handle's function sees: a symbolic tensor. Every method adds a node of the trace.
export interface Handle {
  readonly id: number;
  readonly shape: number[] | null;
  readonly dtype: TraceDType;
  readonly ndim: number | null;
  add(other: Handle | number): Handle;
  sub(other: Handle | number): Handle;
  mul(other: Handle | number): Handle;
  div(other: Handle | number): Handle;
  maximum(other: Handle | number): Handle;
  minimum(other: Handle | number): Handle;
  neg(): Handle;
  relu(): Handle;
  exp(): Handle;
  log(): Handle;
  sqrt(): Handle;
  tanh(): Handle;
  sigmoid(): Handle;
  life(): Handle;
  clamp(bounds: { min?: number; max?: number }): Handle;
  cast(dtype: TraceDType): Handle;
  eq(other: Handle | number): Handle;
  ne(other: Handle | number): Handle;
  lt(other: Handle | number): Handle;
  le(other: Handle | number): Handle;
  gt(other: Handle | number): Handle;
  ge(other: Handle | number): Handle;
  // Bit operations on i32 and u32 tensors (protocol version 6), as torch's: a number is an integer
  // of the tensor's dtype. shiftRight is arithmetic for i32, logical for u32.
  bitwiseAnd(other: Handle | number): Handle;
  bitwiseOr(other: Handle | number): Handle;
  bitwiseXor(other: Handle | number): Handle;
  shiftLeft(other: Handle | number): Handle;
  shiftRight(other: Handle | number): Handle;
  // out[.., i, ..] = this[.., i ^ mask, ..] along `axis` (protocol version 6): each element's
  // partner in a bitonic stage, fused into its readers' kernel as a permuted load.
  butterfly(mask: number, axis?: number): Handle;
  // this where `condition` is true, else `other`.
  where(condition: Handle, other: Handle | number): Handle;
  // out[i] = this[i - shifts] along every axis (torch.roll's direction); `boundary` says what is
  // read where i - shifts leaves the axis: "zero", "wrap" (toroidal) or "clamp".
  shift(shifts: number | number[], boundary?: "zero" | "wrap" | "clamp"): Handle;
  // torch.roll over `dims` (every axis when left out): a wrapping shift.
  roll(shifts: number | number[], dims?: number | number[]): Handle;
  matmul(other: Handle): Handle;
  sum(axis?: number | null, keepdim?: boolean): Handle;
  mean(axis?: number | null, keepdim?: boolean): Handle;
  // Running sums along `axis`, in a fixed order.
  cumsum(axis: number): Handle;
  reshape(...shape: number[]): Handle;
  transpose(): Handle;
}

interface HandleState {
  trace: Trace;
  id: number;
  shape: Shape;
  dtype: TraceDType;
}
const handleState = new WeakMap<object, HandleState>();

export function isHandle(v: unknown): v is Handle {
  return typeof v === "object" && v !== null && handleState.has(v);
}

function valueRead(what: string): TraceError {
  return new TraceError(
    "value-read-in-trace",
    `${what} reads the value of a traced tensor inside a pipeline, where tensors are symbolic: the function is traced once and its values exist only when it runs`,
    "compute with the handle's ops (t.add(u), t.lt(0), where(...)) and read the pipeline's result",
  );
}

// Properties a tensor-like value would read its values through.
const VALUE_READS = new Set(["data", "value", "values", "length", "item", "buffer", "byteLength", "toArray", "toJSON", "at", "forEach", "map"]);

function makeHandle(trace: Trace, id: number, shape: Shape, dtype: TraceDType): Handle {
  const self = (): Handle => proxy;
  const binary = (op: string, other: Handle | number): Handle => {
    if (isHandle(other)) {
      trace.own(other);
      return trace.add(op, { a: self(), b: other }, {}, broadcast(shape, other.shape), dtype);
    }
    if (typeof other === "number") return trace.add(op, { a: self() }, { scalar: other }, shape, dtype);
    throw new TraceError("foreign-tensor", `${op} takes a traced tensor or a number, got ${describe(other)}`);
  };
  const compare = (op: string, other: Handle | number): Handle => {
    if (isHandle(other)) {
      trace.own(other);
      return trace.add(op, { a: self(), b: other }, {}, broadcast(shape, other.shape), "bool");
    }
    if (typeof other === "number") return trace.add(op, { a: self() }, { scalar: other }, shape, "bool");
    throw new TraceError("foreign-tensor", `${op} takes a traced tensor or a number, got ${describe(other)}`);
  };
  const unary = (op: string) => (): Handle => trace.add(op, { a: self() }, {}, shape, dtype);
  const reduce = (op: string) => (axis: number | null = null, keepdim = false): Handle => {
    const rank = shape?.length ?? null;
    if (axis !== null && rank !== null && axis < 0) axis += rank;
    const attrs: Record<string, unknown> = {};
    if (axis !== null) attrs.axis = axis;
    if (keepdim) attrs.keepdim = true;
    let out: Shape = null;
    if (rank !== null) {
      if (axis === null) out = keepdim ? new Array<number>(rank).fill(1) : [];
      else if (axis >= 0 && axis < rank) out = shape!.flatMap((s, i) => (i === axis ? (keepdim ? [1] : []) : [s]));
    }
    return trace.add(op, { a: self() }, attrs, out, dtype);
  };
  const shiftOp = (shifts: number | number[], boundary: "zero" | "wrap" | "clamp" = "zero"): Handle => {
    const list = typeof shifts === "number" ? [shifts] : [...shifts];
    if (!list.every(Number.isInteger)) throw new TraceError("bad-attribute", `shift takes integer shifts, got [${list.join(", ")}]`);
    return trace.add("shift", { a: self() }, { shifts: list, boundary }, shape, dtype);
  };
  const methods: Record<string, unknown> = {
    add: (o: Handle | number) => binary("add", o),
    sub: (o: Handle | number) => binary("sub", o),
    mul: (o: Handle | number) => binary("mul", o),
    div: (o: Handle | number) => binary("div", o),
    maximum: (o: Handle | number) => binary("maximum", o),
    minimum: (o: Handle | number) => binary("minimum", o),
    neg: unary("neg"),
    relu: unary("relu"),
    exp: unary("exp"),
    log: unary("log"),
    sqrt: unary("sqrt"),
    tanh: unary("tanh"),
    sigmoid: unary("sigmoid"),
    life: unary("life"),
    clamp: (bounds: { min?: number; max?: number }) => {
      const attrs: Record<string, unknown> = {};
      if (bounds.min !== undefined) attrs.min = bounds.min;
      if (bounds.max !== undefined) attrs.max = bounds.max;
      if (!Object.keys(attrs).length) throw new TraceError("bad-attribute", "clamp needs min, max or both");
      return trace.add("clamp", { a: self() }, attrs, shape, dtype);
    },
    cast: (to: TraceDType) => trace.add("cast", { a: self() }, { dtype: to }, shape, to),
    bitwiseAnd: (o: Handle | number) => binary("bitwise_and", o),
    bitwiseOr: (o: Handle | number) => binary("bitwise_or", o),
    bitwiseXor: (o: Handle | number) => binary("bitwise_xor", o),
    shiftLeft: (o: Handle | number) => binary("shift_left", o),
    shiftRight: (o: Handle | number) => binary("shift_right", o),
    butterfly: (mask: number, axis = -1) => {
      if (!Number.isInteger(mask) || mask < 0) throw new TraceError("bad-attribute", `butterfly takes a mask that is an integer >= 0, got ${String(mask)}`);
      if (!Number.isInteger(axis)) throw new TraceError("bad-attribute", `butterfly takes an integer axis, got ${String(axis)}`);
      return trace.add("butterfly", { a: self() }, { mask, axis }, shape, dtype);
    },
    eq: (o: Handle | number) => compare("eq", o),
    ne: (o: Handle | number) => compare("ne", o),
    lt: (o: Handle | number) => compare("lt", o),
    le: (o: Handle | number) => compare("le", o),
    gt: (o: Handle | number) => compare("gt", o),
    ge: (o: Handle | number) => compare("ge", o),
    where: (condition: Handle, other: Handle | number) => where(condition, self(), other),
    shift: shiftOp,
    roll: (shifts: number | number[], dims?: number | number[]) => {
      if (shape === null) throw new TraceError("unknown-shape", "roll needs the tensor's rank, which is not known here", "use shift() with one entry per axis");
      const rank = shape.length;
      const list = typeof shifts === "number" ? [shifts] : [...shifts];
      let axes: number[];
      if (dims === undefined) {
        if (list.length !== rank) throw new TraceError("bad-attribute", `roll without dims takes one shift per axis (${rank}), got ${list.length}`);
        axes = list.map((_, i) => i);
      } else {
        axes = typeof dims === "number" ? [dims] : [...dims];
      }
      if (axes.length !== list.length) throw new TraceError("bad-attribute", "roll takes one shift per named axis");
      const perAxis = new Array<number>(rank).fill(0);
      axes.forEach((d, i) => (perAxis[d < 0 ? d + rank : d]! += list[i]!));
      return shiftOp(perAxis, "wrap");
    },
    matmul: (o: Handle) => {
      trace.own(o);
      const a = shape;
      const b = o.shape;
      let out: Shape = null;
      if (a !== null && b !== null && a.length >= 2 && b.length >= 2) {
        const batch = broadcast(a.slice(0, -2), b.slice(0, -2));
        out = batch === null ? null : [...batch, a[a.length - 2]!, b[b.length - 1]!];
      }
      return trace.add("matmul", { a: self(), b: o }, {}, out, dtype);
    },
    sum: reduce("sum"),
    mean: reduce("mean"),
    cumsum: (axis: number) => {
      if (!Number.isInteger(axis)) throw new TraceError("bad-attribute", `cumsum takes an integer axis, got ${String(axis)}`);
      return trace.add("cumsum", { a: self() }, { axis }, shape, dtype);
    },
    reshape: (...dims: number[]) => {
      let out: Shape = [...dims];
      if (dims.includes(-1)) {
        const known = dims.filter((s) => s !== -1).reduce((x, y) => x * y, 1);
        out = shape !== null && dims.filter((s) => s === -1).length === 1 && known ? dims.map((s) => (s === -1 ? shape.reduce((x, y) => x * y, 1) / known : s)) : null;
      }
      return trace.add("reshape", { a: self() }, { shape: [...dims] }, out, dtype);
    },
    transpose: () => trace.add("transpose", { a: self() }, {}, shape === null ? null : [...shape].reverse(), dtype),
  };
  const target = Object.freeze(Object.create(null) as object);
  const proxy = new Proxy(target, {
    get(_t, key) {
      if (trace.done) throw stale();
      if (key === Symbol.toPrimitive || key === "valueOf" || key === "toString") {
        return () => {
          throw valueRead("an arithmetic or comparison operator (+ - * / < > ==, a template string)");
        };
      }
      if (key === "then") {
        throw new TraceError(
          "data-dependent-control-flow",
          "a traced tensor is awaited inside a pipeline: the trace is synchronous and records one path, so control flow cannot wait on a value",
          "write the pipeline as a plain (not async) function; select with where()",
        );
      }
      if (key === Symbol.iterator) throw valueRead("spreading or iterating");
      if (key === "id") return id;
      if (key === "shape") return shape === null ? null : [...shape];
      if (key === "dtype") return dtype;
      if (key === "ndim") return shape === null ? null : shape.length;
      if (typeof key === "string" && Object.prototype.hasOwnProperty.call(methods, key)) return methods[key];
      if (typeof key === "string" && (/^\d+$/.test(key) || VALUE_READS.has(key))) throw valueRead(/^\d+$/.test(key) ? `reading element [${key}]` : `reading "${key}"`);
      if (typeof key === "string") {
        throw new TraceError("unknown-op", `a traced tensor has no op "${key}"`, `its ops: ${Object.keys(methods).join(", ")}`);
      }
      return undefined;
    },
    set() {
      throw new TraceError("value-read-in-trace", "a traced tensor is immutable: its ops return new tensors");
    },
    has() {
      throw valueRead("the `in` operator");
    },
    ownKeys() {
      throw valueRead("enumerating its keys");
    },
    getOwnPropertyDescriptor() {
      throw valueRead("describing its properties");
    },
  }) as unknown as Handle;
  handleState.set(proxy as object, { trace, id, shape, dtype });
  return proxy;
}

function traceOf(...values: unknown[]): Trace | null {
  for (const v of values) {
    const s = handleState.get(v as object);
    if (s) return s.trace;
  }
  return null;
}

// `a` where `condition` (a bool mask) is true, else `b`; a number is a rank-0 constant. The three
// broadcast together.
export function where(condition: Handle, a: Handle | number, b: Handle | number): Handle {
  const trace = traceOf(condition, a, b);
  if (!trace) throw new TraceError("foreign-tensor", "where() takes traced tensors");
  const operand = (x: Handle | number): Handle => (isHandle(x) ? trace.own(x) : full(trace, [], x));
  const ha = operand(a);
  const hb = operand(b);
  trace.own(condition);
  const shape = broadcast(condition.shape, broadcast(ha.shape, hb.shape));
  return trace.add("where", { cond: condition, a: ha, b: hb }, {}, shape, ha.dtype);
}

// The trace a pipeline's function is being called in, for the ops that take no tensor (arange).
let activeTrace: Trace | null = null;

// A tensor of `shape` whose every element is its own index along `axis` (i32, u32 or f32;
// protocol version 6): torch.arange broadcast along the other axes, computed in the kernel that
// reads it. Only inside a pipeline's function.
export function arange(shape: number[], options: { axis?: number; dtype?: "i32" | "u32" | "f32" } = {}): Handle {
  const trace = activeTrace;
  if (trace === null || trace.done) throw new TraceError("outside-trace", "arange() is called outside a pipeline's function: it makes a traced tensor, which exists only while the function is traced", "call it inside the function given to createPipeline");
  if (!Array.isArray(shape) || !shape.every((s) => Number.isInteger(s) && s >= 0)) throw new TraceError("bad-attribute", `arange takes a shape of integers >= 0, got ${describe(shape)}`);
  const axis = options.axis ?? 0;
  const dtype = options.dtype ?? "i32";
  if (!Number.isInteger(axis)) throw new TraceError("bad-attribute", `arange takes an integer axis, got ${String(axis)}`);
  return trace.add("arange", {}, { shape: [...shape], axis, dtype }, shape, dtype);
}

function full(trace: Trace, shape: number[], value: number): Handle {
  if (typeof value !== "number") throw new TraceError("foreign-tensor", `where() takes traced tensors or numbers, got ${describe(value)}`);
  return trace.add("full", {}, { shape: [...shape], value }, shape, "f32");
}

// `state = body(...state)`, `count` times; returns the final state (one handle, or an array for
// several). Inside a pipeline the body is traced once and becomes the document's repeated graph;
// `count` must be a static integer.
export function loop(count: number, body: (...state: Handle[]) => Handle | Handle[], ...state: Handle[]): Handle | Handle[] {
  if (!isStaticCount(count)) {
    throw new TraceError(
      "loop-count-not-static",
      `the loop count is ${isHandle(count) ? "a traced tensor" : String(count)}, not a static integer: the document's repeat is fixed when the pipeline is traced`,
      "pass the count as a number (a constant of the pipeline re-traces it when it changes)",
    );
  }
  if (count < 0) throw new TraceError("bad-loop-count", `a loop runs at least zero times, got ${count}`);
  if (!state.length) throw new TraceError("bad-loop-state", "loop needs the loop state: loop(n, body, ...state)");
  const trace = traceOf(...state);
  const asState = (v: Handle | Handle[]): Handle[] => {
    const out = Array.isArray(v) ? v : [v];
    if (out.length !== state.length || !out.every(isHandle)) {
      throw new TraceError("bad-loop-body", `the loop body returns ${out.length} values for ${state.length} pieces of state`, "return the next state as a tensor or an array, in the order given");
    }
    return out;
  };
  if (trace === null || count < 2) {
    let s = state;
    for (let k = 0; k < count; k++) s = asState(body(...s));
    return s.length === 1 ? s[0]! : s;
  }
  for (const t of state) trace.own(t);
  if (trace.loop !== null) {
    throw new TraceError("one-loop-per-pipeline", "a pipeline holds one loop (its document has one repeat), and this trace already has one", "write the loops as separate pipelines, or one loop with a larger body");
  }
  if (new Set(state.map((t) => t.id)).size !== state.length) throw new TraceError("bad-loop-state", "the same tensor is passed twice as loop state", "pass each piece of state once");
  const start = trace.nodes.length;
  const out = asState(body(...state));
  for (const t of out) trace.own(t);
  const carry: Array<[number, number]> = [];
  state.forEach((before, i) => {
    const after = out[i]!;
    if (after.id === before.id) return; // handed back unchanged: invariant
    if (after.id < start) throw new TraceError("bad-loop-body", "the body returns a value from before the loop as the next state", "return each piece of state in the order it was passed");
    carry.push([before.id, after.id]);
  });
  trace.loop = { start, length: trace.nodes.length - start, count, carry };
  return out.length === 1 ? out[0]! : out;
}

// ---- the document: the engine's doc::TracedDocument ----

// What the engine answers for a finished trace (doc::TracedDocument, which the Python package calls
// too): the document, with the loop rolled up (or the one loop() declared) and its carried state
// as params; the arguments fed and uploaded as state; the prologue of computed starting values.
export interface EngineTracedDocument {
  doc: Record<string, unknown>;
  repeat: number;
  fed: Record<string, string>;
  state: Record<string, string>;
  prologue: { doc: Record<string, unknown>; inputs: string[]; outputs: string[] } | null;
}

// Makes a trace's document: the engine (the WebAssembly reference's tracedDocument, or a server's).
export type TraceDocumenter = (traceText: string) => EngineTracedDocument | Promise<EngineTracedDocument>;

// Canonical JSON (keys sorted): what the tests compare documents by.
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
  if (value !== null && typeof value === "object") {
    const keys = Object.keys(value).sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonical((value as Record<string, unknown>)[k])}`).join(",")}}`;
  }
  return JSON.stringify(value);
}
export { canonical as canonicalJson };

export interface TracedDocument {
  doc: Record<string, unknown>; // the graph protocol document, as data
  text: string; // its JSON text
  repeat: number;
  fed: Record<string, string>; // document input name -> argument name (fed every call)
  state: Record<string, string>; // carried param name -> argument name (its value at each call's start)
  outputs: string[]; // the returned values' output names, in order
  structure: { kind: "single" } | { kind: "array" } | { kind: "object"; keys: string[] };
  // The loop's starting values computed before it (an accumulator started at zero, a scaled
  // copy): a document of their own, run before the loop on each call (one more submission), its
  // outputs (the carried params' names) uploaded as the state.
  prologue: { doc: Record<string, unknown>; text: string; inputs: string[]; outputs: string[] } | null;
}

export interface TraceArgument {
  name: string;
  // A tensor argument (symbolic in the trace), or a constant passed to the function as it is.
  tensor?: { shape: number[]; dtype: TraceDType };
  constant?: unknown;
}

// A function's trace as recorded, before the engine rolls its loop up (documentOf).
export interface RecordedTrace {
  trace: Trace;
  inputs: Set<string>;
  handles: Array<[string, number]>; // the returned values' output names and nodes
  structure: TracedDocument["structure"];
  name: string | null;
}

// Traces `fn` once over the arguments (tensors become symbolic handles, constants pass as they
// are; `self` is the function's `this`); a trace error is thrown here, as the function runs.
export function traceFunction(fn: (...args: unknown[]) => unknown, self: unknown, args: TraceArgument[], name: string | null): RecordedTrace {
  const trace = new Trace();
  const inputs = new Set<string>();
  const values = args.map((a) => {
    if (!a.tensor) return a.constant;
    inputs.add(a.name);
    return trace.add("input", {}, { name: a.name, shape: [...a.tensor.shape], dtype: a.tensor.dtype }, a.tensor.shape, a.tensor.dtype);
  });
  const isAsync = ["AsyncFunction", "GeneratorFunction", "AsyncGeneratorFunction"].includes(fn.constructor?.name ?? "");
  if (isAsync) {
    trace.done = true;
    throw new TraceError(
      "data-dependent-control-flow",
      `the pipeline's function is ${fn.constructor.name === "GeneratorFunction" ? "a generator" : "async"}: a trace is one synchronous call, so its control flow cannot wait on values`,
      "write it as a plain function over the handles",
    );
  }
  let result: unknown;
  const random = Math.random;
  Math.random = () => {
    throw new TraceError("value-read-in-trace", "Math.random() inside a pipeline would be drawn once, at trace time, and baked into the document", "pass random values as an argument");
  };
  const outer = activeTrace;
  activeTrace = trace;
  try {
    result = fn.apply(self, values);
  } finally {
    activeTrace = outer;
    Math.random = random;
    trace.done = true; // whatever the function kept of the trace is stale from now on
  }
  if (result instanceof Promise) {
    result.catch(() => undefined);
    throw new TraceError("data-dependent-control-flow", "the pipeline's function returned a promise: a trace is one synchronous call", "write it as a plain function over the handles");
  }
  let structure: TracedDocument["structure"];
  let returned: Array<[string, unknown]>;
  if (Array.isArray(result)) {
    structure = { kind: "array" };
    returned = result.map((v, k) => [`out${k}`, v]);
  } else if (result !== null && typeof result === "object" && !isHandle(result)) {
    structure = { kind: "object", keys: Object.keys(result) };
    returned = Object.entries(result);
  } else {
    structure = { kind: "single" };
    returned = [["out", result]];
  }
  if (!returned.length) throw new TraceError("bad-pipeline-output", "the pipeline returns nothing");
  for (const [n, t] of returned) {
    if (!isHandle(t) || handleState.get(t)!.trace !== trace) {
      throw new TraceError("bad-pipeline-output", `the pipeline returns ${describe(t)} as "${n}", not a tensor of its trace`, "return tensors computed from the pipeline's arguments");
    }
  }
  // The trace is finished, so its handles answer nothing: their ids come from the side table.
  const handles = returned.map(([n, t]) => [n, handleState.get(t as object)!.id] as [string, number]);
  return { trace, inputs, handles, structure, name };
}

// The document of a recorded trace, made by the engine (`document`): its loop, written with loop()
// or found in an unrolled `for`, becomes the document's repeated graph.
export async function documentOf(recorded: RecordedTrace, document: TraceDocumenter): Promise<TracedDocument> {
  const { trace, inputs, handles, structure, name } = recorded;
  const made = await document(
    JSON.stringify({
      nodes: trace.nodes,
      returns: handles,
      types: trace.types,
      needs: trace.needs,
      inputs: [...inputs],
      ...(name ? { name } : {}),
      ...(trace.loop ? { loop: trace.loop } : {}),
    }),
  );
  const prologue = made.prologue ? { ...made.prologue, text: JSON.stringify(made.prologue.doc) } : null;
  return { doc: made.doc, text: JSON.stringify(made.doc), repeat: made.repeat, fed: made.fed, state: made.state, outputs: handles.map(([n]) => n), structure, prologue };
}

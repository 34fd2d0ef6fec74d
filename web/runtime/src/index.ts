// @scellis/runtime: runs the engine's device programs through WebGPU (navigator.gpu in a browser,
// the `webgpu` package under Node). See README.md.
export { createRuntime, POISON_BITS, Runtime, Session } from "./runtime.js";
export type { AdapterInfoReport, PrepareOptions, RunResult, RunStats, RunStepsOptions, RuntimeOptions, StepsResult } from "./runtime.js";
export { ScellisRuntimeError } from "./errors.js";
export type { ScellisRuntimeErrorCode } from "./errors.js";
export { base64ToBytes, parseProgram, PROGRAM_FORMAT } from "./program.js";
export type {
  DeviceProgram,
  ProgramBinding,
  ProgramBuffer,
  ProgramCarry,
  ProgramDispatch,
  ProgramInput,
  ProgramLimits,
  ProgramOutput,
  ProgramPipeline,
  ProgramSource,
} from "./program.js";
export { decode, encode, floatToHalf, halfToFloat } from "./tensor.js";
export type { DType, FeedValue, Feeds, Tensor, TensorData } from "./tensor.js";
export { createPipeline } from "./pipeline.js";
export type { Pipeline, PipelineCompiler, PipelineOptions, PipelineResult, PipelineTensor, PipelineValue, ReferenceReport } from "./pipeline.js";
export { arange, canonicalJson, loop, TraceError, where } from "./trace.js";
export type { EngineTracedDocument, Handle, TraceDocumenter, TracedDocument, TraceErrorCode } from "./trace.js";

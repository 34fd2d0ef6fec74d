// Every failure the runtime reports is a ScellisRuntimeError with a stable code, so callers can
// branch on `code` rather than on message text.

export type ScellisRuntimeErrorCode =
  | "no-webgpu" // the runtime has no usable adapter (see Runtime.fallbackReason)
  | "bad-program" // the program is not a scellis.device-program/1 document the runtime can run
  | "program-over-device-limits" // the program was laid out for limits this device does not have
  | "shader-f16-unavailable"
  | "wgsl-compile-error"
  | "pipeline-creation-failed"
  | "bad-feed" // a feed names no input, or has the wrong length or element type
  | "missing-input-data" // an input without inline data was not fed
  | "bad-step-count" // runSteps takes 1 to max_steps_per_submission steps
  | "bad-carry"
  | "unknown-output" // download or watch of a name that is no output or input
  | "gpu-validation-error"
  | "gpu-out-of-memory"
  | "gpu-internal-error"
  | "device-lost"
  | "map-failed"
  | "session-disposed"
  | "session-poisoned";

export class ScellisRuntimeError extends Error {
  readonly code: ScellisRuntimeErrorCode;
  readonly help: string | null;

  constructor(code: ScellisRuntimeErrorCode, message: string, help: string | null = null, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "ScellisRuntimeError";
    this.code = code;
    this.help = help;
  }
}

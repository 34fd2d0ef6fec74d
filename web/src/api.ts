// The Studio server's HTTP API (docs/studio_api.md): JSON in, JSON or ndjson out, every error in
// one shape {"error": {...}, "diagnostics": [...]}.
import { isObject, type JsonObject } from './model/json';
import { NdjsonSplitter } from './model/ndjson';
import { toDiag, type Diag } from './model/pointer';

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly pointer: string | null,
    readonly help: string | null,
    readonly diagnostics: Diag[],
  ) {
    super(message);
  }
}

async function readError(res: Response): Promise<ApiError> {
  let body: unknown = null;
  try {
    body = await res.json();
  } catch {
    // not JSON: a proxy or a missing server answered
  }
  const e = isObject(body) && isObject(body.error) ? body.error : {};
  const diags = isObject(body) && Array.isArray(body.diagnostics) ? body.diagnostics.map(toDiag).filter((d): d is Diag => d !== null) : [];
  return new ApiError(
    res.status,
    typeof e.code === 'string' ? e.code : `http-${res.status}`,
    typeof e.message === 'string' ? e.message : `${res.status} ${res.statusText}`,
    typeof e.pointer === 'string' ? e.pointer : null,
    typeof e.help === 'string' ? e.help : null,
    diags,
  );
}

function unreachable(path: string, err: unknown): ApiError {
  return new ApiError(0, 'server-unreachable', `the Studio server did not answer ${path}: ${String(err)}`, null, 'start it with `scellis studio`', []);
}

export async function getJson<T = unknown>(path: string): Promise<T> {
  let res: Response;
  try {
    res = await fetch(path, { headers: { Accept: 'application/json' } });
  } catch (err) {
    throw unreachable(path, err);
  }
  if (!res.ok) throw await readError(res);
  return (await res.json()) as T;
}

export async function postJson<T = unknown>(path: string, body: unknown, signal?: AbortSignal): Promise<T> {
  let res: Response;
  try {
    res = await fetch(path, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Accept: 'application/json' },
      body: JSON.stringify(body),
      signal,
    });
  } catch (err) {
    if (signal?.aborted) throw err;
    throw unreachable(path, err);
  }
  if (!res.ok) throw await readError(res);
  return (await res.json()) as T;
}

export type StreamEvent = JsonObject & { event?: string };

// POSTs and calls onEvent for each ndjson line as it arrives.
export async function postStream(path: string, body: unknown, onEvent: (e: StreamEvent) => void, signal?: AbortSignal): Promise<void> {
  let res: Response;
  try {
    res = await fetch(path, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Accept: 'application/x-ndjson' },
      body: JSON.stringify(body),
      signal,
    });
  } catch (err) {
    if (signal?.aborted) throw err;
    throw unreachable(path, err);
  }
  if (!res.ok) throw await readError(res);
  const splitter = new NdjsonSplitter();
  const emit = (events: unknown[]) => {
    for (const e of events) if (isObject(e)) onEvent(e as StreamEvent);
  };
  if (!res.body) {
    emit(splitter.push(await res.text()));
  } else {
    const reader = res.body.getReader();
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      if (value) emit(splitter.push(value));
    }
  }
  emit(splitter.end());
}

export interface RequestOptions {
  tier?: string;
  bind?: Record<string, number>;
  budget?: number;
}

export const api = {
  version: () => getJson<JsonObject>('/api/version'),
  ops: () => getJson<unknown>('/api/ops'),
  examples: () => getJson<{ examples: { name: string; title?: string; document: unknown }[] }>('/api/examples'),
  probe: () => getJson<JsonObject>('/api/probe'),
  validate: (document: unknown, opts: RequestOptions, signal?: AbortSignal) =>
    postJson<{ ok: boolean; content_id: string; diagnostics?: unknown[] }>('/api/validate', { document, ...opts }, signal),
  rungs: (document: unknown, opts: RequestOptions, signal?: AbortSignal) => postJson<JsonObject>('/api/rungs', { document, ...opts }, signal),
  plan: (document: unknown, opts: RequestOptions, signal?: AbortSignal) => postJson<JsonObject>('/api/plan', { document, ...opts }, signal),
  program: (document: unknown, opts: RequestOptions) => postJson<JsonObject>('/api/program', { document, ...opts }),
  run: (body: JsonObject, onEvent: (e: StreamEvent) => void, signal?: AbortSignal) => postStream('/api/run', body, onEvent, signal),
  train: (body: JsonObject, onEvent: (e: StreamEvent) => void, signal?: AbortSignal) => postStream('/api/train', body, onEvent, signal),
  receipts: (document: unknown, opts: RequestOptions, adapter: unknown) =>
    postJson<{ profile: string; kernels: number; conformed: number; missing: string[]; warnings: string[] }>('/api/receipts', { document, ...opts, adapter }),
  saveDocument: (document: unknown) => postJson<{ content_id: string }>('/api/documents', { document }),
  getDocument: (id: string) => getJson<{ content_id: string; document: unknown }>(`/api/documents/${encodeURIComponent(id)}`),
  getRun: (id: string) => getJson<JsonObject>(`/api/runs/${encodeURIComponent(id)}`),
  replayRun: (id: string) => postJson<JsonObject>(`/api/runs/${encodeURIComponent(id)}/replay`, {}),
};

export function errorText(err: unknown): string {
  if (err instanceof ApiError) return `${err.code}: ${err.message}${err.help ? ` (help: ${err.help})` : ''}`;
  if (err instanceof Error) return err.message;
  return String(err);
}

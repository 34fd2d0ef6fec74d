import type React from 'react';
import { isObject, type JsonObject } from '../model/json';

export interface BrowserProbe {
  gpu: boolean;
  adapter: Record<string, string | boolean> | null;
  software: boolean;
  usable: boolean;
  reason: string | null;
}

const SOFTWARE = /swiftshader|llvmpipe|lavapipe|software|\bcpu\b/i;

// What the browser offers, asked the way the runtime asks: navigator.gpu, then an adapter and its
// info. A software adapter (SwiftShader, llvmpipe) is not a GPU unless the user opts in.
export async function probeBrowser(allowSoftware: boolean): Promise<BrowserProbe> {
  const gpu = (navigator as unknown as { gpu?: { requestAdapter: () => Promise<unknown> } }).gpu;
  if (!gpu) {
    return {
      gpu: false,
      adapter: null,
      software: false,
      usable: false,
      reason: window.isSecureContext
        ? 'this browser has no navigator.gpu (WebGPU is off or unsupported)'
        : 'navigator.gpu needs a secure context (https or localhost)',
    };
  }
  let adapter: unknown = null;
  try {
    adapter = await gpu.requestAdapter();
  } catch (err) {
    return { gpu: true, adapter: null, software: false, usable: false, reason: `requestAdapter failed: ${String(err)}` };
  }
  if (!adapter) return { gpu: true, adapter: null, software: false, usable: false, reason: 'navigator.gpu offers no adapter' };
  const a = adapter as { info?: Record<string, unknown>; isFallbackAdapter?: boolean };
  const info: Record<string, string | boolean> = {};
  for (const k of ['vendor', 'architecture', 'device', 'description']) {
    const v = a.info?.[k];
    if (typeof v === 'string' && v) info[k] = v;
  }
  const fallback = Boolean(a.info?.isFallbackAdapter ?? a.isFallbackAdapter);
  if (fallback) info.isFallbackAdapter = true;
  const software = fallback || Object.values(info).some((v) => typeof v === 'string' && SOFTWARE.test(v));
  const usable = !software || allowSoftware;
  return {
    gpu: true,
    adapter: info,
    software,
    usable,
    reason: usable ? null : `the adapter is a software rasterizer (${Object.values(info).filter((v) => typeof v === 'string').join(', ')}), not a GPU; opt in to use it`,
  };
}

function KeyValues({ obj, testid }: { obj: JsonObject; testid: string }) {
  return (
    <table className="kv" data-testid={testid}>
      <tbody>
        {Object.entries(obj).map(([k, v]) => (
          <tr key={k}>
            <th>{k}</th>
            <td>{typeof v === 'string' ? v : JSON.stringify(v)}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

export function ProbePanel({ browser, server, serverError, runtimeReason, allowSoftware, onAllowSoftware, children }: {
  browser: BrowserProbe | null;
  server: JsonObject | null;
  serverError: string | null;
  runtimeReason: string | null;
  allowSoftware: boolean;
  onAllowSoftware: (v: boolean) => void;
  children?: React.ReactNode;
}) {
  return (
    <div className="probe" data-testid="probe-panel">
      <section>
        <h4>This browser</h4>
        {!browser ? (
          <div className="muted">probing…</div>
        ) : (
          <>
            <div data-testid="probe-browser-gpu">navigator.gpu: {browser.gpu ? 'present' : 'absent'}</div>
            {browser.adapter && <KeyValues obj={browser.adapter} testid="probe-browser-adapter" />}
            <div>software adapter: {browser.software ? 'yes' : 'no'}</div>
            <div data-testid="probe-browser-verdict" className={browser.usable ? 'ok' : 'diag-warning'}>
              {browser.usable ? 'runs in the tab on WebGPU' : `no in-tab run: ${browser.reason}`}
            </div>
            {runtimeReason && <div className="diag-warning">runtime: {runtimeReason}</div>}
          </>
        )}
        <label className="optin">
          <input type="checkbox" checked={allowSoftware} onChange={(e) => onAllowSoftware(e.target.checked)} data-testid="allow-software" /> use a software adapter (SwiftShader) in the tab
        </label>
      </section>
      <section>
        <h4>The server</h4>
        {serverError ? (
          <div className="diag-error" data-testid="probe-server-error">{serverError}</div>
        ) : !server ? (
          <div className="muted">asking…</div>
        ) : (
          <KeyValues obj={flatten(server)} testid="probe-server" />
        )}
      </section>
      {children}
    </div>
  );
}

function flatten(o: JsonObject, prefix = ''): JsonObject {
  const out: JsonObject = {};
  for (const [k, v] of Object.entries(o)) {
    if (isObject(v) && Object.keys(v).length <= 12) Object.assign(out, flatten(v, `${prefix}${k}.`));
    else out[`${prefix}${k}`] = v;
  }
  return out;
}

// One sentence on what can execute, for the top bar.
export function runnability(browser: BrowserProbe | null, server: JsonObject | null, serverError: string | null, wasm = false): { tab: boolean; server: boolean; text: string } {
  const tab = !!browser?.usable;
  const serverBackend = server ? String(server.backend ?? server.auto ?? server.selected ?? 'cpu') : null;
  const srv = !serverError && !!server && serverBackend !== 'null' && serverBackend !== 'none';
  const why = browser?.reason ?? 'probing';
  let text: string;
  if (tab && srv) text = `runs in this tab (WebGPU) and on the server (${serverBackend})`;
  else if (tab) text = `runs in this tab (WebGPU); the server: ${serverError ?? 'no backend'}`;
  else if (wasm && srv) text = `no WebGPU in this tab (${why}): runs here on the CPU reference in WebAssembly, and on the server (${serverBackend})`;
  else if (wasm) text = `no WebGPU in this tab (${why}): runs here on the CPU reference in WebAssembly; the server: ${serverError ?? 'no backend'}`;
  else if (srv) text = `no WebGPU in this tab (${why}); runs on the server (${serverBackend})`;
  else text = `nothing can run: the tab has no WebGPU (${why}) and the server ${serverError ? `is unreachable (${serverError})` : 'has no backend'}; compose and inspect only`;
  return { tab, server: srv, text };
}

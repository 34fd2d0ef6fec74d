import {
  Background,
  ConnectionMode,
  Controls,
  ReactFlow,
  ReactFlowProvider,
  useReactFlow,
  type Connection,
  type Edge,
  type EdgeChange,
  type Node,
  type NodeChange,
} from '@xyflow/react';
import { useCallback, useEffect, useMemo, useRef, useState } from 'react';
import type { Runtime } from '@scellis/runtime';
import embeddedDefault from '../../examples/center_columns.json';
import { api, ApiError, errorText } from './api';
import {
  addEdge,
  addNode,
  docToFlow,
  emptyWorkflow,
  dimsOf,
  flowToDoc,
  listEntryLabels,
  moveListEntry,
  moveNodes,
  outputNameOf,
  removeEdges,
  removeNodes,
  setDim,
  setLabel,
  setOutput,
  setParam,
  symbolsOf,
  type Canvas,
  type FlowEdge,
  type FlowNode,
} from './model/document';
import { isObject, type Json, type JsonObject } from './model/json';
import { loadLayout, positionsOf, saveLayout, withPositions } from './model/layout';
import { normalizeOpTable, type OpTable } from './model/optable';
import { placeDiagnostics, pointerTarget, toDiag, type Diag } from './model/pointer';
import { kernelsOfNode, nodesOfKernel, provenance } from './model/provenance';
import { parseRoute, type Route } from './model/route';
import { thresholdsOf } from './model/tensors';
import { canRedo, canUndo, push, redo, replace, start, undo, type History } from './model/undo';
import { checkWire } from './model/wires';
import { CanvasContext, type CanvasView } from './ui/context';
import { Dims } from './ui/Dims';
import { Inspector } from './ui/Inspector';
import { Ladder, type RungName } from './ui/Ladder';
import { OpNode } from './ui/OpNode';
import { DRAG_TYPE, Palette } from './ui/Palette';
import { probeBrowser, ProbePanel, runnability, type BrowserProbe } from './ui/Probe';
import { TabConformPanel } from './ui/TabConform';
import { getWasmReference } from './wasm_reference';
import { RunPanel } from './ui/RunPanel';
import { RunRecord } from './ui/RunRecord';

interface Example {
  name: string;
  title?: string;
  document: unknown;
}

const nodeTypes = { op: OpNode };
const storage = typeof window !== 'undefined' ? window.localStorage : undefined;
const DEBOUNCE_MS = 300;

function openCanvas(doc: unknown, table: OpTable, contentId: string | null): Canvas {
  return withPositions(docToFlow(doc, table), contentId ? loadLayout(storage, contentId) : null);
}

interface Validation {
  pending: boolean;
  contentId: string | null;
  diags: Diag[];
  canvas: Canvas | null;
  error: string | null;
}

export function App() {
  const [route] = useState<Route>(() => parseRoute(window.location.pathname));
  if (route.kind === 'run') {
    return (
      <div className="app">
        <header className="topbar">
          <a className="brand" href="/">Scellis Studio</a>
        </header>
        <RunRecord id={route.id} />
      </div>
    );
  }
  return (
    <ReactFlowProvider>
      <Studio route={route} />
    </ReactFlowProvider>
  );
}

function Studio({ route }: { route: Route }) {
  const emptyTable = useMemo(() => normalizeOpTable(null), []);
  const [table, setTable] = useState<OpTable | null>(null);
  const [opsError, setOpsError] = useState<string | null>(null);
  const [examples, setExamples] = useState<Example[]>([]);
  const [source, setSource] = useState<string>('center_columns');
  const [notice, setNotice] = useState<string | null>(route.kind === 'bad' ? route.reason : null);
  // Never a blank canvas: the seed example is in the bundle, shown until the server answers.
  const [history, setHistory] = useState<History<Canvas>>(() => start(openCanvas(embeddedDefault, emptyTable, null)));
  const present = history.present;
  const layoutPending = useRef(true);
  const fitRef = useRef<(() => void) | null>(null);
  const dragBase = useRef<Canvas | null>(null);

  const [selection, setSelection] = useState<string[]>([]);
  const [selectedEdge, setSelectedEdge] = useState<string | null>(null);
  const [measured, setMeasured] = useState<Record<string, { width: number; height: number }>>({});
  const [refusal, setRefusal] = useState<string | null>(null);
  const refusalTimer = useRef<number | undefined>(undefined);

  const [validation, setValidation] = useState<Validation>({ pending: true, contentId: null, diags: [], canvas: null, error: null });
  const [rungs, setRungs] = useState<{ data: JsonObject | null; canvas: Canvas | null; loading: boolean; error: string | null }>({ data: null, canvas: null, loading: false, error: null });
  const [program, setProgram] = useState<JsonObject | null>(null);
  const [ladderTab, setLadderTab] = useState<RungName>('doc');
  const [bottomTab, setBottomTab] = useState<'ladder' | 'run' | 'probe'>('ladder');
  const [selectedKernel, setSelectedKernel] = useState<string | null>(null);
  const [selectedStep, setSelectedStep] = useState<number | null>(null);
  const [runDiags, setRunDiags] = useState<Diag[]>([]);

  const [browserProbe, setBrowserProbe] = useState<BrowserProbe | null>(null);
  const [serverProbe, setServerProbe] = useState<JsonObject | null>(null);
  const [serverProbeError, setServerProbeError] = useState<string | null>(null);
  const [allowSoftware, setAllowSoftware] = useState<boolean>(() => storage?.getItem('scellis.allowSoftwareAdapter') === 'true');
  const [runtimeBanner, setRuntimeBanner] = useState<string | null>(null);
  // Without WebGPU the tab falls back to the WebAssembly reference, when this build has it.
  const [wasmReady, setWasmReady] = useState(false);
  const [wasmProblem, setWasmProblem] = useState<string | null>(null);
  useEffect(() => {
    if (!runtimeBanner) return;
    getWasmReference().then(
      () => {
        setWasmReady(true);
        setWasmProblem(null);
      },
      (e) => {
        setWasmReady(false);
        setWasmProblem(`the WebAssembly reference did not load: ${errorText(e)}`);
      },
    );
  }, [runtimeBanner]);
  const runtimeRef = useRef<{ allow: boolean; rt: Promise<Runtime> } | null>(null);
  const [savedUrl, setSavedUrl] = useState<string | null>(route.kind === 'document' ? `/w/${route.id}` : null);
  const [pasteOpen, setPasteOpen] = useState(false);
  // Each opened document starts with an empty run panel: results belong to the document they ran.
  const [openSeq, setOpenSeq] = useState(0);
  const [pasteText, setPasteText] = useState('');
  const fileInput = useRef<HTMLInputElement>(null);
  const flow = useReactFlow();
  fitRef.current = () => void flow.fitView({ padding: 0.15, maxZoom: 1.2 });
  const wrapper = useRef<HTMLDivElement>(null);

  const t = table ?? emptyTable;
  const doc = useMemo(() => flowToDoc(present, t), [present, t]);
  const docKey = useMemo(() => JSON.stringify(doc), [doc]);

  const open = useCallback((d: unknown, label: string, contentId: string | null, tbl: OpTable) => {
    try {
      const c = openCanvas(d, tbl, contentId);
      layoutPending.current = true;
      setHistory(start(c));
      setOpenSeq((n) => n + 1);
      setTimeout(() => fitRef.current?.(), 50);
      setSource(label);
      setSelection([]);
      setSelectedEdge(null);
      setSelectedKernel(null);
      setSelectedStep(null);
      setRunDiags([]);
      setNotice(null);
    } catch (err) {
      setNotice(`cannot open ${label}: ${errorText(err)}`);
    }
  }, []);

  // Start: the op table, the gallery, then the document the address names (or the first example).
  useEffect(() => {
    let cancelled = false;
    (async () => {
      let tbl = emptyTable;
      try {
        tbl = normalizeOpTable(await api.ops());
        if (!cancelled) setTable(tbl);
      } catch (err) {
        if (!cancelled) setOpsError(errorText(err));
      }
      let ex: Example[] = [];
      try {
        ex = (await api.examples()).examples ?? [];
        if (!cancelled) setExamples(ex);
      } catch {
        // the bundled seed example stays on the canvas
      }
      if (cancelled) return;
      if (route.kind === 'document') {
        try {
          const d = await api.getDocument(route.id);
          if (!cancelled) open(d.document, `/w/${route.id}`, route.id, tbl);
          return;
        } catch (err) {
          setNotice(`could not load ${route.id}: ${errorText(err)}; showing center_columns`);
        }
      }
      const first = ex.find((e) => e.name === 'center_columns') ?? ex[0];
      if (first) open(first.document, first.name, null, tbl);
      else if (tbl !== emptyTable) open(embeddedDefault, 'center_columns', null, tbl);
    })();
    return () => {
      cancelled = true;
    };
  }, []);

  // Probes: the browser's WebGPU, the runtime's verdict, the server's backend.
  const getRuntime = useCallback((): Promise<Runtime> => {
    if (!runtimeRef.current || runtimeRef.current.allow !== allowSoftware) {
      const rt = import('@scellis/runtime').then((m) => Promise.resolve(m.createRuntime({ allowSoftwareAdapter: allowSoftware })));
      runtimeRef.current = { allow: allowSoftware, rt };
    }
    return runtimeRef.current.rt;
  }, [allowSoftware]);

  useEffect(() => {
    storage?.setItem('scellis.allowSoftwareAdapter', String(allowSoftware));
    probeBrowser(allowSoftware).then(setBrowserProbe, (e) => setBrowserProbe({ gpu: false, adapter: null, software: false, usable: false, reason: errorText(e) }));
    getRuntime().then(
      (rt) => setRuntimeBanner(rt.backend === 'webgpu' ? null : (rt.fallbackReason ?? 'no usable WebGPU adapter')),
      (e) => setRuntimeBanner(`the runtime did not start: ${errorText(e)}`),
    );
  }, [allowSoftware, getRuntime]);

  useEffect(() => {
    api.probe().then(setServerProbe, (e) => setServerProbeError(errorText(e)));
  }, []);

  // Live validation, debounced; then the ladder.
  useEffect(() => {
    const ctl = new AbortController();
    setValidation((v) => ({ ...v, pending: true }));
    const snapshot = present;
    const timer = window.setTimeout(async () => {
      try {
        const r = await api.validate(doc, {}, ctl.signal);
        const diags = (r.diagnostics ?? []).map(toDiag).filter((d): d is Diag => d !== null);
        setValidation({ pending: false, contentId: r.content_id, diags, canvas: snapshot, error: null });
        if (layoutPending.current) {
          layoutPending.current = false;
          const stored = loadLayout(storage, r.content_id);
          if (stored) setHistory((h) => (h.past.length === 0 ? replace(h, moveNodes(h.present, stored)) : h));
        }
        setRungs((old) => ({ ...old, loading: true, error: null }));
        setProgram(null);
        try {
          const data = await api.rungs(doc, {}, ctl.signal);
          setRungs({ data, canvas: snapshot, loading: false, error: null });
        } catch (err) {
          if (!ctl.signal.aborted) setRungs({ data: null, canvas: snapshot, loading: false, error: errorText(err) });
        }
      } catch (err) {
        if (ctl.signal.aborted) return;
        const diags = err instanceof ApiError ? (err.diagnostics.length ? err.diagnostics : [{ code: err.code, severity: 'error' as const, pointer: err.pointer, message: err.message, help: err.help }]) : [];
        setValidation({ pending: false, contentId: null, diags, canvas: snapshot, error: err instanceof ApiError && err.status === 422 ? null : errorText(err) });
        setRungs({ data: null, canvas: snapshot, loading: false, error: null });
        // A red plan fails validation, yet its plan is what explains why (memory by class against
        // the budget, the findings): /api/plan gives it with a 200, and the ExecPlan rung shows it.
        // A document problem has no plan (422 again) and leaves the ladder empty.
        if (err instanceof ApiError && err.status === 422) {
          try {
            const r = await api.plan(doc, {}, ctl.signal);
            if (r.verdict === 'red' && isObject(r.plan))
              setRungs({ data: { rungs: { execplan: { text: typeof r.text === 'string' ? r.text : '', json: r.plan } }, verdict: 'red' }, canvas: snapshot, loading: false, error: null });
          } catch {
            // no plan to show
          }
        }
      }
    }, DEBOUNCE_MS);
    return () => {
      window.clearTimeout(timer);
      ctl.abort();
    };
  }, [docKey]);

  // Positions follow the document's content id.
  useEffect(() => {
    if (validation.contentId && !validation.pending) saveLayout(storage, validation.contentId, positionsOf(present));
  }, [present.nodes, validation.contentId, validation.pending]);

  const commit = useCallback((f: (c: Canvas) => Canvas) => setHistory((h) => push(h, f(h.present))), []);
  const doUndo = useCallback(() => setHistory(undo), []);
  const doRedo = useCallback(() => setHistory(redo), []);

  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      const el = e.target as HTMLElement | null;
      if (el && (el.tagName === 'INPUT' || el.tagName === 'TEXTAREA' || el.tagName === 'SELECT' || el.isContentEditable)) return;
      if (!(e.ctrlKey || e.metaKey)) return;
      const k = e.key.toLowerCase();
      if (k === 'z' && !e.shiftKey) {
        e.preventDefault();
        doUndo();
      } else if ((k === 'z' && e.shiftKey) || k === 'y') {
        e.preventDefault();
        doRedo();
      }
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, [doUndo, doRedo]);

  // Diagnostics: validation's and a failed run's, placed by pointer on the canvas they were for.
  const allDiags = useMemo(() => [...validation.diags, ...runDiags], [validation.diags, runDiags]);
  const placed = useMemo(() => placeDiagnostics(allDiags, validation.canvas ?? present), [allDiags, validation.canvas, present]);
  const prov = useMemo(() => (rungs.data && rungs.canvas ? provenance(rungs.data, rungs.canvas) : null), [rungs.data, rungs.canvas]);
  const highlighted = useMemo(() => {
    if (!prov) return new Set<string>();
    const kernel = selectedStep !== null ? prov.steps[selectedStep]?.kernel : selectedKernel;
    return new Set(kernel ? nodesOfKernel(prov, kernel) : []);
  }, [prov, selectedKernel, selectedStep]);
  const selectedNode = selection.length === 1 ? (present.nodes.find((n) => n.id === selection[0]) ?? null) : null;
  const linkedKernels = useMemo(() => (prov && selectedNode ? kernelsOfNode(prov, selectedNode.id) : []), [prov, selectedNode]);
  const dims = dimsOf(present);
  const usedSymbols = [...new Set(present.nodes.flatMap(symbolsOf))];

  const view: CanvasView = { table, canvas: present, diags: placed, highlighted, dims };

  const rfNodes = useMemo(
    () => present.nodes.map((n) => ({ ...n, selected: selection.includes(n.id), ...(measured[n.id] ? { measured: measured[n.id] } : {}) })) as Node[],
    [present.nodes, selection, measured],
  );
  const rfEdges = useMemo(() => {
    // A list port's wires are labelled with their entry's place, so the order shows.
    const entries = listEntryLabels(present, table);
    return present.edges.map((e) => {
      const d = placed.byEdge.get(e.id);
      const lit = highlighted.has(e.source) && highlighted.has(e.target);
      const entry = entries.get(e.id);
      return {
        ...e,
        selected: e.id === selectedEdge,
        className: d ? 'edge-error' : lit ? 'edge-lit' : undefined,
        label: d ? d[0].code : entry,
        data: { diagnostics: d?.length ?? 0, ...(entry ? { entry } : {}) },
      };
    }) as Edge[];
  }, [present, table, selectedEdge, placed, highlighted]);

  const onNodesChange = useCallback((changes: NodeChange[]) => {
    const moved: Record<string, { x: number; y: number }> = {};
    let sel: Record<string, boolean> | null = null;
    const sizes: Record<string, { width: number; height: number }> = {};
    for (const c of changes) {
      if (c.type === 'position' && c.position) moved[c.id] = c.position;
      else if (c.type === 'select') (sel ??= {})[c.id] = c.selected;
      else if (c.type === 'dimensions' && c.dimensions) sizes[c.id] = c.dimensions;
    }
    if (Object.keys(moved).length) setHistory((h) => replace(h, moveNodes(h.present, moved)));
    if (sel) {
      const s = sel;
      setSelection((cur) => {
        const next = new Set(cur);
        for (const [id, on] of Object.entries(s)) on ? next.add(id) : next.delete(id);
        return [...next];
      });
    }
    if (Object.keys(sizes).length) setMeasured((m) => ({ ...m, ...sizes }));
  }, []);

  const onEdgesChange = useCallback((changes: EdgeChange[]) => {
    for (const c of changes) if (c.type === 'select') setSelectedEdge((cur) => (c.selected ? c.id : cur === c.id ? null : cur));
  }, []);

  const showRefusal = (reason: string) => {
    setRefusal(reason);
    window.clearTimeout(refusalTimer.current);
    refusalTimer.current = window.setTimeout(() => setRefusal(null), 5000);
  };

  const isValidConnection = useCallback(
    (c: Connection | Edge) => {
      const r = checkWire(present, t, { source: c.source, sourceHandle: c.sourceHandle ?? null, target: c.target, targetHandle: c.targetHandle ?? null });
      if (!r.ok) showRefusal(r.reason);
      else setRefusal(null);
      return r.ok;
    },
    [present, t],
  );

  const onConnect = useCallback(
    (c: Connection) => {
      const r = checkWire(present, t, { source: c.source, sourceHandle: c.sourceHandle ?? null, target: c.target, targetHandle: c.targetHandle ?? null });
      if (!r.ok) return showRefusal(r.reason);
      commit((cv) => addEdge(cv, r.source, r.target, r.port));
    },
    [present, t, commit],
  );

  const addAt = (op: string, position: { x: number; y: number }) => {
    let id = '';
    commit((c) => {
      const r = addNode(c, t, op, position);
      id = r.id;
      return r.canvas;
    });
    setTimeout(() => setSelection([id]), 0);
  };

  const addAtCenter = (op: string) => {
    const box = wrapper.current?.getBoundingClientRect();
    const p = box ? flow.screenToFlowPosition({ x: box.left + box.width / 2, y: box.top + box.height / 2 }) : { x: 100, y: 100 };
    const jitter = (present.nodes.length % 5) * 24;
    addAt(op, { x: p.x + jitter, y: p.y + jitter });
  };

  const onDrop = (e: React.DragEvent) => {
    e.preventDefault();
    const op = e.dataTransfer.getData(DRAG_TYPE) || e.dataTransfer.getData('text/plain');
    if (!op || !t.byName.has(op)) return;
    addAt(op, flow.screenToFlowPosition({ x: e.clientX, y: e.clientY }));
  };

  const focusDiag = (d: Diag) => {
    const target = pointerTarget(d.pointer, validation.canvas ?? present);
    if (target.kind === 'node') {
      setSelection([target.id]);
      const n = present.nodes.find((x) => x.id === target.id);
      if (n) flow.setCenter(n.position.x + 80, n.position.y + 40, { duration: 300, zoom: flow.getZoom() });
    } else if (target.kind === 'edge') setSelectedEdge(target.id);
  };

  const save = async () => {
    try {
      const r = await api.saveDocument(doc);
      saveLayout(storage, r.content_id, positionsOf(present));
      const url = `/w/${r.content_id}`;
      window.history.pushState(null, '', url);
      setSavedUrl(url);
      setSource(url);
      setNotice(null);
    } catch (err) {
      if (err instanceof ApiError && err.diagnostics.length) setRunDiags(err.diagnostics);
      setNotice(`not saved: ${errorText(err)}`);
    }
  };

  const loadText = (text: string, label: string) => {
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch (err) {
      setNotice(`${label} is not JSON: ${errorText(err)}`);
      return false;
    }
    open(parsed, label, null, t);
    window.history.pushState(null, '', '/');
    setSavedUrl(null);
    return true;
  };

  const setHead = (key: string, value: Json | undefined) =>
    commit((c) => {
      const head = { ...c.head };
      if (value === undefined) delete head[key];
      else head[key] = value;
      return { ...c, head };
    });

  const tier = typeof present.head.determinism === 'string' ? present.head.determinism : isObject(present.head.determinism) ? String(present.head.determinism.tier) : '';
  const hasTrain = isObject(present.head.train);
  // The document output that reads the training loss: a run of several steps in the tab trains,
  // and its curve is drawn from this output step by step.
  const trainLossOutput = isObject(present.head.train) && typeof present.head.train.loss === 'string' ? outputNameOf(present, present.head.train.loss) : null;
  const hasCarry = present.nodes.some((n) => typeof n.data.params.carry === 'string');
  const run = runnability(browserProbe, serverProbe, serverProbeError, wasmReady);
  const errors = allDiags.filter((d) => d.severity === 'error').length;
  const planJson = rungs.data && isObject(rungs.data.rungs) && isObject(rungs.data.rungs.execplan) ? rungs.data.rungs.execplan.json : null;

  const fetchProgram = () => api.program(doc, {}).then(setProgram, (e) => setNotice(`no device program: ${errorText(e)}`));

  return (
    <CanvasContext.Provider value={view}>
      <div className="app">
        <header className="topbar">
          <span className="brand">Scellis Studio</span>
          <span className="doc-name" data-testid="doc-source">
            {String(present.head.name ?? source)}
          </span>
          <div className="gallery" data-testid="gallery">
            {examples.map((e) => (
              <button key={e.name} className={source === e.name ? 'small active' : 'small'} data-testid={`gallery-${e.name}`} title={e.title ?? e.name} onClick={() => { open(e.document, e.name, null, t); window.history.pushState(null, '', '/'); setSavedUrl(null); }}>
                {e.name}
              </button>
            ))}
          </div>
          <span className="spacer" />
          <button data-testid="undo" onClick={doUndo} disabled={!canUndo(history)} title="Ctrl+Z">
            Undo
          </button>
          <button data-testid="redo" onClick={doRedo} disabled={!canRedo(history)} title="Ctrl+Shift+Z">
            Redo
          </button>
          <button
            data-testid="new-doc"
            title="an empty workflow"
            onClick={() => {
              open(emptyWorkflow(), 'untitled', null, t);
              window.history.pushState(null, '', '/');
              setSavedUrl(null);
            }}
          >
            New
          </button>
          <button data-testid="load-file" onClick={() => fileInput.current?.click()}>
            Load…
          </button>
          <input
            ref={fileInput}
            type="file"
            accept=".json,application/json"
            style={{ display: 'none' }}
            data-testid="load-file-input"
            onChange={async (e) => {
              const f = e.target.files?.[0];
              if (f) loadText(await f.text(), f.name);
              e.target.value = '';
            }}
          />
          <button data-testid="paste-open" onClick={() => setPasteOpen((v) => !v)}>
            Paste JSON
          </button>
          <button data-testid="save" onClick={save}>
            Save
          </button>
          {savedUrl && (
            <a href={savedUrl} data-testid="save-url" className="small">
              {savedUrl.slice(0, 22)}…
            </a>
          )}
        </header>
        {runtimeBanner && (
          <div className="banner" role="alert" data-testid="banner">
            {wasmReady ? (
              <>
                <b>NO WEBGPU IN THIS TAB</b> — “Run in tab” runs the engine's CPU reference compiled to WebAssembly (slower than a GPU; the native reference's bits): {runtimeBanner}.{' '}
              </>
            ) : (
              <>
                <b>NO WEBGPU IN THIS TAB</b> — nothing runs here: {runtimeBanner}{wasmProblem ? `; ${wasmProblem}` : ''}.{' '}
              </>
            )}
            {run.server ? (
              <button data-testid="banner-run-server" onClick={() => setBottomTab('run')}>
                Run on the server instead
              </button>
            ) : (
              <span>The server cannot run it either: {serverProbeError ?? 'it has no backend'}. You can still compose, inspect and save.</span>
            )}
          </div>
        )}
        {notice && (
          <div className="notice" data-testid="notice">
            {notice} <button className="small" onClick={() => setNotice(null)}>×</button>
          </div>
        )}
        {pasteOpen && (
          <div className="paste">
            <textarea data-testid="paste-text" rows={8} value={pasteText} onChange={(e) => setPasteText(e.target.value)} placeholder='{"format": "scellis.workflow/1", ...}' spellCheck={false} />
            <button data-testid="paste-load" onClick={() => loadText(pasteText, 'pasted document') && setPasteOpen(false)}>
              Load
            </button>
          </div>
        )}
        <div className="status-line" data-testid="runnability">
          {run.text}
          {' · '}
          <span data-testid="validation-status" data-state={validation.pending ? 'pending' : errors ? 'error' : 'ok'}>
            {validation.pending ? 'validating…' : validation.error ? `validation unavailable: ${validation.error}` : errors ? `${errors} error${errors > 1 ? 's' : ''}` : `valid${validation.contentId ? ` (${validation.contentId.slice(0, 15)}…)` : ''}`}
          </span>
        </div>
        <div className="main">
          <Palette table={table} error={opsError} onAdd={addAtCenter} />
          <div className="center">
            <div className="docbar">
              <Dims dims={dims} used={usedSymbols} diags={placed.byDim} onSet={(n, v) => commit((c) => setDim(c, n, v))} />
              <label>
                tier{' '}
                <select data-testid="doc-tier" value={tier} onChange={(e) => setHead('determinism', e.target.value || undefined)}>
                  <option value="">(none)</option>
                  <option value="debug">debug</option>
                  <option value="prod">prod</option>
                  <option value="fast">fast</option>
                </select>
              </label>
            </div>
            <div className="canvas" ref={wrapper} data-testid="canvas" onDragOver={(e) => { e.preventDefault(); e.dataTransfer.dropEffect = 'copy'; }} onDrop={onDrop}>
              <ReactFlow
                nodes={rfNodes}
                edges={rfEdges}
                nodeTypes={nodeTypes}
                onNodesChange={onNodesChange}
                onEdgesChange={onEdgesChange}
                onConnect={onConnect}
                onConnectStart={() => setRefusal(null)}
                isValidConnection={isValidConnection}
                connectionMode={ConnectionMode.Loose}
                onNodeDragStart={() => (dragBase.current = history.present)}
                onNodeDragStop={() =>
                  setHistory((h) => {
                    const base = dragBase.current;
                    dragBase.current = null;
                    return base && base !== h.present ? { past: [...h.past, base], present: h.present, future: [] } : h;
                  })
                }
                onDelete={({ nodes, edges }) => commit((c) => removeEdges(removeNodes(c, nodes.map((n) => n.id)), edges.map((e) => e.id)))}
                onPaneClick={() => {
                  setSelectedKernel(null);
                  setSelectedStep(null);
                }}
                fitView
                minZoom={0.2}
                deleteKeyCode={['Delete', 'Backspace']}
                proOptions={{ hideAttribution: true }}
              >
                <Background />
                <Controls />
              </ReactFlow>
              {placed.document.some((d) => d.severity !== 'note') && (
                // Diagnostics of the whole document (a red plan, a missing tier) belong to no node;
                // they are drawn over the canvas so that they are seen where the graph is.
                <div className="canvas-diags" data-testid="canvas-diags">
                  {placed.document.filter((d) => d.severity !== 'note').map((d, i) => (
                    <div key={i} className={`diag diag-${d.severity}`} data-code={d.code} title={d.help ?? ''}>
                      <b>{d.code}</b> {d.message}
                    </div>
                  ))}
                </div>
              )}
              {refusal && (
                <div className="wire-refusal" data-testid="wire-refusal" role="status">
                  wire refused: {refusal}
                </div>
              )}
            </div>
          </div>
          <aside className="side">
            <Inspector
              canvas={present}
              node={selectedNode}
              table={table}
              kernels={linkedKernels}
              onParam={(id, name, v) => commit((c) => setParam(c, id, name, v))}
              onMoveEntry={(id, port, from, to) => commit((c) => moveListEntry(c, id, port, from, to))}
              onLabel={(id, label) => commit((c) => setLabel(c, id, label))}
              onOutput={(id, name) => commit((c) => setOutput(c, id, name))}
              onDelete={(id) => commit((c) => removeNodes(c, [id]))}
              onSelectKernel={(k) => {
                setSelectedKernel(k);
                setSelectedStep(null);
                setBottomTab('ladder');
                setLadderTab('kernel');
              }}
            />
            <div className="diagnostics" data-testid="diagnostics">
              <h4>Diagnostics ({allDiags.length})</h4>
              {allDiags.length === 0 && <div className="muted">{validation.pending ? 'validating…' : 'none'}</div>}
              {allDiags.map((d, i) => (
                <div key={i} className={`diag diag-${d.severity}`} data-testid={`diag-${i}`} data-code={d.code} onClick={() => focusDiag(d)}>
                  <b>{d.severity}[{d.code}]</b> <code>{d.pointer ?? ''}</code> {d.message}
                  {d.help && <div className="help">help: {d.help}</div>}
                </div>
              ))}
            </div>
          </aside>
        </div>
        <div className="bottom">
          <div className="tabs">
            {(['ladder', 'run', 'probe'] as const).map((b) => (
              <button key={b} className={bottomTab === b ? 'tab active' : 'tab'} data-testid={`panel-tab-${b}`} onClick={() => setBottomTab(b)}>
                {b === 'ladder' ? 'Ladder' : b === 'run' ? 'Run' : 'Probe'}
              </button>
            ))}
          </div>
          <div style={{ display: bottomTab === 'ladder' ? 'block' : 'none' }}>
            <Ladder
              rungs={rungs.data}
              program={program}
              loading={rungs.loading || validation.pending}
              error={rungs.error}
              tab={ladderTab}
              onTab={setLadderTab}
              selectedKernel={selectedKernel}
              selectedStep={selectedStep}
              linkedKernels={linkedKernels}
              onSelectKernel={(k) => {
                setSelectedKernel(k);
                setSelectedStep(null);
              }}
              onSelectStep={(i) => {
                setSelectedStep(i);
                setSelectedKernel(null);
              }}
              onNeedProgram={fetchProgram}
            />
          </div>
          <div style={{ display: bottomTab === 'run' ? 'block' : 'none' }}>
            <RunPanel
              key={openSeq}
              document={() => doc}
              options={{}}
              hasTrain={hasTrain}
              trainLossOutput={trainLossOutput}
              hasCarry={hasCarry}
              canRunServer={!serverProbeError}
              getRuntime={getRuntime}
              planThresholds={thresholdsOf(planJson)}
              onRuntimeUnavailable={setRuntimeBanner}
              onDiagnostics={setRunDiags}
            />
          </div>
          <div style={{ display: bottomTab === 'probe' ? 'block' : 'none' }}>
            <ProbePanel browser={browserProbe} server={serverProbe} serverError={serverProbeError} runtimeReason={runtimeBanner} allowSoftware={allowSoftware} onAllowSoftware={setAllowSoftware}>
              {table && <TabConformPanel table={table} getRuntime={getRuntime} usable={!runtimeBanner && !!browserProbe?.usable} />}
            </ProbePanel>
          </div>
        </div>
      </div>
    </CanvasContext.Provider>
  );
}

export type { FlowEdge, FlowNode };

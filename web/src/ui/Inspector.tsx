import { useEffect, useState } from 'react';
import { listEntries, outputNameOf, type Canvas, type FlowNode } from '../model/document';
import type { Json } from '../model/json';
import { attrDisplay, checkAttrInput, rangeText, type AttrSpec, type OpTable } from '../model/optable';

// One attribute's field. What the user types stays in the field; only a value the op table
// accepts reaches the document, and a refused one shows why (a number outside its range, a
// malformed shape) while it is being typed.
function AttrField({ nodeId, attr, value, onCommit }: { nodeId: string; attr: AttrSpec; value: Json | undefined; onCommit: (v: Json | undefined) => void }) {
  const [text, setText] = useState(attrDisplay(value));
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    setText(attrDisplay(value));
    setError(null);
  }, [nodeId, value]);
  const change = (t: string) => {
    setText(t);
    const r = checkAttrInput(attr, t);
    if (!r.ok) {
      setError(r.reason);
      return;
    }
    setError(null);
    if (JSON.stringify(r.value) !== JSON.stringify(value)) onCommit(r.value);
  };
  const id = `attr-${nodeId}-${attr.name}`;
  const big = attr.type === 'number array' || attr.type === 'object';
  return (
    <div className={`attr ${error ? 'attr-refused' : ''}`}>
      <label htmlFor={id}>
        {attr.name}
        {attr.required && <span className="req">*</span>}
        <span className="attr-type">
          {attr.type}
          {attr.range ? ` in ${rangeText(attr.range)}` : ''}
          {attr.default !== null && attr.default !== undefined ? `, default ${JSON.stringify(attr.default)}` : ''}
        </span>
      </label>
      {attr.type === 'boolean' ? (
        <select id={id} data-testid={id} value={text} onChange={(e) => change(e.target.value)}>
          <option value="">(default)</option>
          <option value="true">true</option>
          <option value="false">false</option>
        </select>
      ) : big ? (
        <textarea id={id} data-testid={id} value={text} rows={3} onChange={(e) => change(e.target.value)} spellCheck={false} />
      ) : (
        <input id={id} data-testid={id} value={text} onChange={(e) => change(e.target.value)} spellCheck={false} aria-invalid={!!error} />
      )}
      {error && (
        <div className="attr-error" data-testid={`attr-error-${attr.name}`}>
          refused: {error}
        </div>
      )}
    </div>
  );
}

export interface InspectorProps {
  canvas: Canvas;
  node: FlowNode | null;
  table: OpTable | null;
  kernels: string[];
  onParam: (nodeId: string, name: string, value: Json | undefined) => void;
  onMoveEntry: (nodeId: string, port: string, from: number, to: number) => void;
  onLabel: (nodeId: string, label: string) => void;
  onOutput: (nodeId: string, name: string | null) => void;
  onDelete: (nodeId: string) => void;
  onSelectKernel: (name: string) => void;
}

// A list port's entries in order, each with its source; moving one reorders the wires (and so the
// list the document holds).
function ListEntries({ canvas, nodeId, port, onMove }: { canvas: Canvas; nodeId: string; port: string; onMove: (from: number, to: number) => void }) {
  const entries = listEntries(canvas, nodeId, port);
  return (
    <div className="attr list-port" data-testid={`list-${nodeId}-${port}`}>
      <label>
        {port}
        <span className="attr-type">list of wires, in order{entries.length === 0 ? ': wire one or more into the port' : ''}</span>
      </label>
      <ol start={0}>
        {entries.map((e, k) => (
          <li key={e.id} data-testid={`list-entry-${nodeId}-${port}-${k}`}>
            <code>{e.source}</code>
            <button className="small" aria-label={`move ${port}[${k}] up`} data-testid={`list-up-${nodeId}-${port}-${k}`} disabled={k === 0} onClick={() => onMove(k, k - 1)}>
              ↑
            </button>
            <button
              className="small"
              aria-label={`move ${port}[${k}] down`}
              data-testid={`list-down-${nodeId}-${port}-${k}`}
              disabled={k === entries.length - 1}
              onClick={() => onMove(k, k + 1)}
            >
              ↓
            </button>
          </li>
        ))}
      </ol>
    </div>
  );
}

export function Inspector({ canvas, node, table, kernels, onParam, onMoveEntry, onLabel, onOutput, onDelete, onSelectKernel }: InspectorProps) {
  const [outName, setOutName] = useState('');
  const current = node ? outputNameOf(canvas, node.id) : null;
  useEffect(() => setOutName(current ?? ''), [node?.id, current]);
  if (!node) return <div className="inspector muted">Select a node to edit its parameters.</div>;
  const spec = table?.byName.get(node.data.op);
  const known = new Set(spec?.attrs.map((a) => a.name));
  const extra = Object.keys(node.data.params).filter((k) => !known.has(k));
  return (
    <div className="inspector" data-testid="inspector">
      <div className="inspector-head">
        <b>{node.data.op}</b> <code>{node.id}</code>
        <button className="small danger" data-testid="delete-node" onClick={() => onDelete(node.id)}>
          delete
        </button>
      </div>
      {spec?.summary && <div className="muted">{spec.summary}</div>}
      <div className="attr">
        <label htmlFor="node-label">{canvas.form === 'graph' ? 'name' : 'label'}</label>
        <input id="node-label" data-testid="node-label" value={node.data.label ?? ''} onChange={(e) => onLabel(node.id, e.target.value)} />
      </div>
      {spec?.inputs
        .filter((p) => p.list)
        .map((p) => (
          <ListEntries key={p.name} canvas={canvas} nodeId={node.id} port={p.name} onMove={(from, to) => onMoveEntry(node.id, p.name, from, to)} />
        ))}
      {spec?.attrs.map((a) => (
        <AttrField key={a.name} nodeId={node.id} attr={a} value={node.data.params[a.name]} onCommit={(v) => onParam(node.id, a.name, v)} />
      ))}
      {extra.map((k) => (
        <AttrField
          key={k}
          nodeId={node.id}
          attr={{ name: k, type: typeof node.data.params[k] === 'number' ? 'number' : typeof node.data.params[k] === 'string' ? 'string' : 'object', default: null, required: false, range: null }}
          value={node.data.params[k]}
          onCommit={(v) => onParam(node.id, k, v)}
        />
      ))}
      {(spec?.outputs.length ?? 1) > 0 && (
        <div className="attr">
          <label htmlFor="output-name">document output (empty: none)</label>
          <input
            id="output-name"
            data-testid="output-name"
            value={outName}
            onChange={(e) => setOutName(e.target.value)}
            onBlur={() => outName !== (current ?? '') && onOutput(node.id, outName.trim() || null)}
            onKeyDown={(e) => e.key === 'Enter' && (e.target as HTMLInputElement).blur()}
          />
        </div>
      )}
      {kernels.length > 0 && (
        <div className="node-kernels" data-testid="node-kernels">
          kernels:{' '}
          {kernels.map((k) => (
            <button key={k} className="link" onClick={() => onSelectKernel(k)}>
              {k}
            </button>
          ))}
        </div>
      )}
    </div>
  );
}

import { Handle, Position, type NodeProps } from '@xyflow/react';
import { memo } from 'react';
import { inHandle, OUT_HANDLE, outputNameOf, portOfHandle, type NodeData } from '../model/document';
import { useCanvasView } from './context';

function shapeText(shape: unknown, dims: Record<string, number>): string | null {
  if (!Array.isArray(shape)) return null;
  return `[${shape.map((s) => (typeof s === 'string' ? (s in dims ? `${s}=${dims[s]}` : `${s}=?`) : String(s))).join(', ')}]`;
}

export const OpNode = memo(function OpNode({ id, data, selected }: NodeProps & { data: NodeData }) {
  const view = useCanvasView();
  const spec = view.table?.byName.get(data.op);
  // Without the op table (server not reached) the ports are those the wires use.
  const ports = spec
    ? spec.inputs.map((p) => ({ name: p.name, dtypes: p.dtypes, list: p.list === true }))
    : [...new Set(view.canvas.edges.filter((e) => e.target === id).map((e) => portOfHandle(e.targetHandle) ?? '?'))].map(
        (name) => ({ name, dtypes: [] as string[], list: false }),
      );
  // A list port takes several wires; its entry count shows on the node, each wire's place on the
  // wire, and the inspector reorders them.
  const entries = (port: string) => view.canvas.edges.filter((e) => e.target === id && portOfHandle(e.targetHandle) === port).length;
  const hasOutput = spec ? spec.outputs.length > 0 : true;
  const diags = view.diags?.byNode.get(id) ?? [];
  const errors = diags.filter((d) => d.severity === 'error');
  const output = outputNameOf(view.canvas, id);
  const shape = shapeText(data.params.shape, view.dims);
  const classes = ['op-node'];
  if (selected) classes.push('selected');
  if (errors.length > 0) classes.push('has-error');
  else if (diags.length > 0) classes.push('has-warning');
  if (view.highlighted.has(id)) classes.push('highlighted');
  if (!spec && view.table) classes.push('unknown-op');
  return (
    <div className={classes.join(' ')} data-testid={`node-${id}`} data-op={data.op} data-diagnostics={diags.length}>
      <div className="op-node-head">
        <span className="op-name">{data.op}</span>
        <span className="op-id">{id}</span>
      </div>
      {(data.label ?? data.params.name) !== undefined && <div className="op-label">“{String(data.label ?? data.params.name)}”</div>}
      {shape && (
        <div className="op-shape" data-testid={`node-shape-${id}`}>
          {shape}
        </div>
      )}
      {output && <div className="op-output">→ output “{output}”</div>}
      <div className="op-ports">
        {ports.map((p) => (
          <div className="op-port" key={p.name}>
            <Handle
              type="target"
              position={Position.Left}
              id={inHandle(p.name)}
              data-testid={`port-${id}-${p.name}`}
              className={p.list ? 'port port-in port-list' : 'port port-in'}
              title={`${p.name}${p.list ? ' (a list: one entry per wire, in order)' : ''}${p.dtypes.length ? `: ${p.dtypes.join('|')}` : ''}`}
            />
            <span className="port-name">{p.name}</span>
            {p.list && (
              <span className="port-entries" data-testid={`port-entries-${id}-${p.name}`}>
                [{entries(p.name)}]
              </span>
            )}
            {p.dtypes.length > 0 && <span className="port-dtypes">{p.dtypes.join('|')}</span>}
          </div>
        ))}
      </div>
      {hasOutput && (
        <Handle type="source" position={Position.Right} id={OUT_HANDLE} data-testid={`port-${id}-out`} className="port port-out" title="out" />
      )}
      {diags.length > 0 && (
        <div className="op-diags" data-testid={`node-diags-${id}`}>
          {diags.slice(0, 3).map((d, i) => (
            <div key={i} className={`diag diag-${d.severity}`} title={d.help ?? ''}>
              <b>{d.code}</b> {d.message}
            </div>
          ))}
          {diags.length > 3 && <div className="diag">… {diags.length - 3} more</div>}
        </div>
      )}
    </div>
  );
});

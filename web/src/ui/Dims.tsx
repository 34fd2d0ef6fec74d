import { useState } from 'react';
import type { Diag } from '../model/pointer';

// The document's symbolic dims: each shown with its size, editable; a symbol a shape names but
// "dims" lacks is shown too, so it can be given a size.
export function Dims({ dims, used, diags, onSet }: { dims: Record<string, number>; used: string[]; diags: Map<string, Diag[]>; onSet: (name: string, v: number | undefined) => void }) {
  const [newName, setNewName] = useState('');
  const names = [...new Set([...Object.keys(dims), ...used])];
  return (
    <div className="dims" data-testid="dims">
      <span className="dims-title">dims</span>
      {names.map((n) => (
        <DimField key={n} name={n} value={dims[n]} diags={diags.get(n) ?? []} onSet={(v) => onSet(n, v)} />
      ))}
      <input
        className="dim-new"
        placeholder="+ dim"
        value={newName}
        data-testid="dim-new"
        onChange={(e) => setNewName(e.target.value)}
        onKeyDown={(e) => {
          if (e.key === 'Enter' && /^[A-Za-z_][A-Za-z0-9_]*$/.test(newName) && !(newName in dims)) {
            onSet(newName, 1);
            setNewName('');
          }
        }}
      />
    </div>
  );
}

function DimField({ name, value, diags, onSet }: { name: string; value: number | undefined; diags: Diag[]; onSet: (v: number | undefined) => void }) {
  const [text, setText] = useState<string | null>(null);
  const shown = text ?? (value === undefined ? '' : String(value));
  const bad = text !== null && text !== '' && !/^\d+$/.test(text);
  return (
    <span className={`dim ${value === undefined ? 'dim-unset' : ''} ${diags.length || bad ? 'dim-error' : ''}`} title={diags.map((d) => d.message).join('\n')}>
      <label>{name}</label>=
      <input
        data-testid={`dim-${name}`}
        value={shown}
        size={Math.max(2, shown.length)}
        onChange={(e) => {
          const t = e.target.value;
          setText(t);
          if (/^\d+$/.test(t)) onSet(Number(t));
        }}
        onBlur={() => setText(null)}
      />
      {value !== undefined && (
        <button className="small" title="remove" onClick={() => onSet(undefined)}>
          ×
        </button>
      )}
    </span>
  );
}

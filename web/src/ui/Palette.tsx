import { useState } from 'react';
import { paletteGroups, type OpTable } from '../model/optable';

export const DRAG_TYPE = 'application/x-scellis-op';

export function Palette({ table, error, onAdd }: { table: OpTable | null; error: string | null; onAdd: (op: string) => void }) {
  const [filter, setFilter] = useState('');
  if (!table) {
    return (
      <aside className="palette" data-testid="palette">
        <h3>Ops</h3>
        <p className="muted">{error ? `No op table: ${error}` : 'Loading the op table…'}</p>
      </aside>
    );
  }
  const f = filter.trim().toLowerCase();
  return (
    <aside className="palette" data-testid="palette">
      <h3>Ops</h3>
      <input
        className="palette-filter"
        placeholder="filter"
        value={filter}
        onChange={(e) => setFilter(e.target.value)}
        data-testid="palette-filter"
      />
      {paletteGroups(table).map((g) => {
        const ops = g.ops.filter((o) => !f || o.name.includes(f) || o.summary.toLowerCase().includes(f));
        if (ops.length === 0) return null;
        return (
          <div key={g.family} className="palette-group">
            <div className="palette-family">{g.family}</div>
            {ops.map((o) => (
              <div
                key={o.name}
                className="palette-item"
                data-testid={`palette-${o.name}`}
                draggable
                title={`${o.summary}\n(click to add, or drag onto the canvas)`}
                onDragStart={(e) => {
                  e.dataTransfer.setData(DRAG_TYPE, o.name);
                  e.dataTransfer.setData('text/plain', o.name);
                  e.dataTransfer.effectAllowed = 'copy';
                }}
                onClick={() => onAdd(o.name)}
              >
                <span className="palette-name">{o.name}</span>
                <span className="palette-ports">{o.inputs.map((p) => p.name).join(', ')}</span>
              </div>
            ))}
          </div>
        );
      })}
    </aside>
  );
}

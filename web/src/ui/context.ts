import { createContext, useContext } from 'react';
import type { OpTable } from '../model/optable';
import type { PlacedDiags } from '../model/pointer';
import type { Canvas } from '../model/document';

export interface CanvasView {
  table: OpTable | null;
  canvas: Canvas;
  diags: PlacedDiags | null;
  // Nodes lit by a selected kernel or plan step.
  highlighted: Set<string>;
  dims: Record<string, number>;
}

export const CanvasContext = createContext<CanvasView | null>(null);

export function useCanvasView(): CanvasView {
  const v = useContext(CanvasContext);
  if (!v) throw new Error('CanvasContext missing');
  return v;
}

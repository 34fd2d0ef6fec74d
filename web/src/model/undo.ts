// Undo/redo as a value: the past, the present and the undone future. Each edit pushes the new
// present; undo and redo move between them. A bounded past keeps memory flat on long sessions.
export interface History<T> {
  past: T[];
  present: T;
  future: T[];
}

export const LIMIT = 200;

export function start<T>(present: T): History<T> {
  return { past: [], present, future: [] };
}

export function push<T>(h: History<T>, next: T): History<T> {
  if (next === h.present) return h;
  const past = [...h.past, h.present];
  if (past.length > LIMIT) past.splice(0, past.length - LIMIT);
  return { past, present: next, future: [] };
}

// Replaces the present without an undo step (e.g. positions settling after a drag started).
export function replace<T>(h: History<T>, next: T): History<T> {
  return { ...h, present: next };
}

export function undo<T>(h: History<T>): History<T> {
  if (h.past.length === 0) return h;
  const present = h.past[h.past.length - 1];
  return { past: h.past.slice(0, -1), present, future: [h.present, ...h.future] };
}

export function redo<T>(h: History<T>): History<T> {
  if (h.future.length === 0) return h;
  const [present, ...future] = h.future;
  return { past: [...h.past, h.present], present, future };
}

export const canUndo = <T>(h: History<T>) => h.past.length > 0;
export const canRedo = <T>(h: History<T>) => h.future.length > 0;

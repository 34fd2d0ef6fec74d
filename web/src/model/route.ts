// The Studio's three kinds of address: / (the gallery's first example), /w/<content-id> (a stored
// document), /r/<run-id> (a run record). An id is checked here as the server checks it, so a
// mistyped URL says so instead of asking the server for nothing.
export type Route =
  | { kind: 'home' }
  | { kind: 'document'; id: string }
  | { kind: 'run'; id: string }
  | { kind: 'bad'; reason: string };

export const ID_PATTERN = /^sha256:[0-9a-f]{64}$/;

export function parseRoute(pathname: string): Route {
  const path = pathname.replace(/\/+$/, '') || '/';
  if (path === '/' || path === '/index.html') return { kind: 'home' };
  const m = /^\/([wr])\/(.+)$/.exec(path);
  if (!m) return { kind: 'bad', reason: `no page at ${path}` };
  let id: string;
  try {
    id = decodeURIComponent(m[2]);
  } catch {
    return { kind: 'bad', reason: 'the id is not valid URL text' };
  }
  if (!ID_PATTERN.test(id)) return { kind: 'bad', reason: `"${id}" is not an id (sha256: and 64 hex digits)` };
  return m[1] === 'w' ? { kind: 'document', id } : { kind: 'run', id };
}

export const documentPath = (id: string) => `/w/${id}`;
export const runPath = (id: string) => `/r/${id}`;

import { useMemo } from 'react';
import { tokenize } from '../model/wgsl';

export function Wgsl({ source, testid }: { source: string; testid?: string }) {
  const tokens = useMemo(() => tokenize(source), [source]);
  return (
    <pre className="code wgsl" data-testid={testid}>
      {tokens.map((t, i) => (t.kind === 'space' || t.kind === 'ident' || t.kind === 'punct' ? t.text : <span key={i} className={`tok-${t.kind}`}>{t.text}</span>))}
    </pre>
  );
}

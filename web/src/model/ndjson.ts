// Splits a streamed application/x-ndjson body into events: bytes arrive in arbitrary chunks, a
// line may be cut anywhere (even inside a multi-byte character), and only whole lines are parsed.
export class NdjsonSplitter {
  private buffer = '';
  private decoder = new TextDecoder();

  push(chunk: Uint8Array | string): unknown[] {
    this.buffer += typeof chunk === 'string' ? chunk : this.decoder.decode(chunk, { stream: true });
    const out: unknown[] = [];
    let nl: number;
    while ((nl = this.buffer.indexOf('\n')) >= 0) {
      const line = this.buffer.slice(0, nl).trim();
      this.buffer = this.buffer.slice(nl + 1);
      if (line) out.push(parseLine(line));
    }
    return out;
  }

  end(): unknown[] {
    const rest = (this.buffer + this.decoder.decode()).trim();
    this.buffer = '';
    return rest ? [parseLine(rest)] : [];
  }
}

function parseLine(line: string): unknown {
  try {
    return JSON.parse(line);
  } catch {
    return { event: 'error', error: { code: 'bad-stream', message: `the server sent a line that is not JSON: ${line.slice(0, 200)}` } };
  }
}

#!/usr/bin/env python3
"""Writes a large graph document for the parser and planner measurements: two inline inputs of
ROWS x 1024 f32 values each (seeded, six decimals, like exported weights), their sum reduced over
the rows. At the default ROWS=10240 the document is about 200 MB (21 million numbers), under the
256 MiB document cap.

usage: bench/big_doc.py [ROWS] [SEED] > big.json
"""
import random
import sys

COLS = 1024


def write_data(out, rng, count):
    out.write('[')
    chunk = 1 << 16
    for start in range(0, count, chunk):
        n = min(chunk, count - start)
        text = ','.join('%.6f' % rng.uniform(-1, 1) for _ in range(n))
        if start:
            out.write(',')
        out.write(text)
    out.write(']')


def main():
    rows = int(sys.argv[1]) if len(sys.argv) > 1 else 10240
    seed = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    rng = random.Random(seed)
    out = sys.stdout
    out.write('{"version":2,"name":"big_doc","nodes":[')
    for i, name in enumerate(('a', 'b')):
        out.write('{"id":%d,"op":"input","name":"%s","shape":[%d,%d],"data":' % (i, name, rows, COLS))
        write_data(out, rng, rows * COLS)
        out.write('},')
    out.write('{"id":2,"op":"add","a":0,"b":1},')
    out.write('{"id":3,"op":"sum","a":2,"axis":0}]')
    out.write(',"outputs":[{"name":"colsum","id":3}]}\n')


if __name__ == '__main__':
    main()

"""A document of N trivial kernels over 256 floats, each reading the one before it (neg, relu,
neg, ...), so every dispatch waits for the previous one; the input carries the last kernel's
output into the next step. bench/dispatch/run.sh runs it for several N: the slope of the wall time
over the dispatches is what one more dependent dispatch costs, the host's recording beside it."""
import json
import sys


def chain(n):
    nodes = [{"id": 0, "op": "input", "name": "x", "shape": [256], "data": [0.5] * 256,
              "carry": "y"}]
    for i in range(1, n + 1):
        nodes.append({"id": i, "op": "neg" if i % 2 else "relu", "a": i - 1})
    return {"version": 2, "nodes": nodes, "outputs": [{"name": "y", "id": n}]}


if __name__ == "__main__":
    print(json.dumps(chain(int(sys.argv[1]))))

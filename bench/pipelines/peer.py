"""Checks Scellis's answer to each of seed 002's workloads against the float64 NumPy oracle, then
times the same workload in PyTorch as a good PyTorch user would write it: eager, the whole loop
captured in one CUDA graph, and torch.compile of the step (looped in Python). Every PyTorch
answer is checked against the same oracle before its time is reported.

    python3 bench/pipelines/peer.py OUT_DIR jacobi heat life gray_scott sobel ising tree_sum \
        wavefront spectral canny bitonic_sort top_k compaction path_tracer

OUT_DIR/<workload>/ holds what scellis_bench_pipeline wrote: the starting state (its
initializers' values) and the state after one run, with index.json and scellis.json (its timing);
OUT_DIR/<workload>/unblocked/ and unhoisted/ the same for the runs without temporal blocking and
without loop-invariant hoisting, when they were made (checked against the same oracle). Prints
one JSON object per workload.
"""
import json
import pathlib
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import path_tracer as tracer  # noqa: E402
import workloads  # noqa: E402

# The workloads are f32 throughout: no TF32 in convolutions (Sobel's) or matmuls (the spectral
# filter's), whose 10-bit mantissa would miss the oracle's 1e-4.
torch.backends.cudnn.allow_tf32 = False
torch.backends.cuda.matmul.allow_tf32 = False


def load(folder, name):
    shape = json.loads((folder / "index.json").read_text())[name]
    return np.fromfile(folder / f"{name}.f32", np.float32).reshape(shape)


def max_error(got, want):
    got = np.asarray(got, np.float64)
    return float(np.max(np.abs(got - want)) / max(1.0, float(np.max(np.abs(want)))))


# ---- the PyTorch steps ----

def zero_neighbours(u):
    p = F.pad(u[None, None], (1, 1, 1, 1))[0, 0]
    return p[:-2, 1:-1] + p[2:, 1:-1] + p[1:-1, :-2] + p[1:-1, 2:]


def wrap_neighbours(u):
    return (torch.roll(u, 1, 0) + torch.roll(u, -1, 0)) + torch.roll(u, 1, 1) + torch.roll(u, -1, 1)


def counter_hash(x):
    """The u32 PCG hash of docs/ops.md's uniform on int64 tensors holding u32 values (torch has
    no u32 arithmetic): every product fits in 63 bits, and is reduced mod 2^32 at once."""
    s = (x * 747796405 + 2891336453) & 0xFFFFFFFF
    w = (((s >> ((s >> 28) + 4)) ^ s) * 277803737) & 0xFFFFFFFF
    return (w >> 22) ^ w


def path_tracer_step(shape, dev):
    """One sample per pixel of the path tracer (bench/pipelines/path_tracer.py), as a PyTorch user
    would write it: the rays as [3, n, n] tensors, the nearest hit by where over the objects, the
    azimuth by torch.cos and torch.sin, the draws the counter-hash RNG's."""
    n = shape[0]
    hashed_index = counter_hash(torch.arange(n * n, device=dev)).view(n, n)
    pixel = torch.arange(n, device=dev, dtype=torch.float32)
    rows, cols = pixel[:, None], pixel[None, :]
    eye = torch.tensor(tracer.EYE, device=dev)[:, None, None]
    centres = [torch.tensor(c, device=dev)[:, None, None] for c, *_ in tracer.SPHERES]
    sky = [torch.tensor([tracer.sky(ch)[i] for ch in range(3)], device=dev)[:, None, None]
           for i in (0, 1)]
    ground_albedo = torch.tensor(tracer.GROUND_ALBEDO, device=dev)[:, None, None]
    albedos = [torch.tensor(a, device=dev)[:, None, None] for _, _, a, _ in tracer.SPHERES]
    emissions = [torch.tensor(e, device=dev)[:, None, None] for *_, e in tracer.SPHERES]

    def draw(seed, step):
        key = counter_hash(seed ^ counter_hash(step))
        return (counter_hash(hashed_index ^ key) >> 8).to(torch.float32) / 2**24

    def unit(v):
        return v / torch.sqrt(torch.clamp((v * v).sum(0), min=1e-24))

    def step(red, green, blue, sample):
        s = sample.to(torch.int64)
        x = (cols + draw(tracer.SEED, s)) * (2 / n) - 1
        y = 1 - (rows + draw(tracer.SEED + 1, s)) * (2 / n)
        direction = unit(torch.stack([x * tracer.HALF_VIEW, y * tracer.HALF_VIEW,
                                      -torch.ones_like(x)]))
        origin = eye.expand(3, n, n)
        throughput = torch.ones(3, n, n, device=dev)
        radiance = torch.zeros(3, n, n, device=dev)
        for bounce in range(tracer.BOUNCES):
            dy = direction[1]
            t = torch.where(dy < 0, origin[1] / -dy, tracer.FAR)
            t = torch.where(t > tracer.MIN_T, t, tracer.FAR)
            distance = torch.minimum(t, torch.full_like(t, tracer.FAR))
            hit = torch.where(t < tracer.FAR, float(tracer.GROUND), float(tracer.SKY))
            for k, (_, radius, _, _) in enumerate(tracer.SPHERES):
                oc = origin - centres[k]
                b = (oc * direction).sum(0)
                disc = b * b - ((oc * oc).sum(0) - radius * radius)
                t = torch.where(disc > 0, -b - torch.sqrt(torch.clamp(disc, min=0)), tracer.FAR)
                t = torch.where(t > tracer.MIN_T, t, tracer.FAR)
                closer = t < distance
                distance = torch.where(closer, t, distance)
                hit = torch.where(closer, float(k + 1), hit)
            emitted = torch.where(hit == tracer.SKY, sky[0] + sky[1] * dy, 0.0)
            albedo = torch.where(hit == tracer.GROUND, ground_albedo, 0.0)
            for k in range(len(tracer.SPHERES)):
                emitted = torch.where(hit == k + 1, emissions[k], emitted)
                albedo = torch.where(hit == k + 1, albedos[k], albedo)
            radiance = radiance + throughput * emitted
            throughput = throughput * albedo
            if bounce == tracer.BOUNCES - 1:
                break
            point = origin + distance * direction
            normal = torch.zeros_like(point)
            normal[1] = 1.0
            for k, (_, radius, _, _) in enumerate(tracer.SPHERES):
                normal = torch.where(hit == k + 1, (point - centres[k]) * (1 / radius), normal)
            z = 2 * draw(tracer.SEED + 2 + 2 * bounce, s) - 1
            phi = torch.pi * (2 * draw(tracer.SEED + 3 + 2 * bounce, s) - 1)
            ring = torch.sqrt(torch.clamp(1 - z * z, min=0))
            sphere_point = torch.stack([ring * torch.cos(phi), ring * torch.sin(phi), z])
            direction = unit(normal + sphere_point)
            origin = point + tracer.LIFT * normal
        return red + radiance[0], green + radiance[1], blue + radiance[2], sample + 1
    return step


def torch_step(name, shape, dev):
    """One iteration of the workload, a function of its carried state then its constants."""
    if name == "path_tracer":
        return path_tracer_step(shape, dev)
    if name == "bitonic_sort":
        return lambda keys: (torch.sort(keys).values,)
    if name == "top_k":
        # torch.topk gives the largest first; the oracle (and the engine) ascending.
        k = workloads.top_k_of(shape[0])
        return lambda keys: (torch.topk(keys, k).values.flip(0),)
    if name == "compaction":
        # Boolean indexing sizes its result from the data: a host sync, which a CUDA graph cannot
        # capture (that row reports the error).
        def compaction(x):
            kept = x > workloads.COMPACTION_THRESHOLD
            return x[kept], kept.sum()
        return compaction
    if name == "jacobi":
        return lambda u, q: ((zero_neighbours(u) + q) * 0.25,)
    if name == "heat":
        return lambda u: (u + workloads.HEAT_ALPHA * (zero_neighbours(u) - 4 * u),)
    if name == "life":
        def life(c):
            alive = c > 0.5
            a = alive.to(torch.float32)
            around = sum(torch.roll(torch.roll(a, dy, 0), dx, 1)
                         for dy in (-1, 0, 1) for dx in (-1, 0, 1) if dy or dx)
            return (((around == 3) | (alive & (around == 2))).to(torch.float32),)
        return life
    if name == "sobel":
        # gx, gy and the binomial blur as one 3-channel convolution of the replicate-padded image.
        column = torch.tensor([1.0, 2.0, 1.0], dtype=torch.float64)
        derivative = torch.tensor([-1.0, 0.0, 1.0], dtype=torch.float64)
        weights = torch.stack([torch.outer(column, derivative), torch.outer(derivative, column),
                               torch.outer(column, column) / 16])
        weights = weights[:, None].to(torch.float32).to(dev)
        edge_scale = workloads.SOBEL_RATE / (4 * 2**0.5)

        def sobel(u):
            p = F.pad(u[None, None], (1, 1, 1, 1), mode="replicate")
            gx, gy, blur = F.conv2d(p, weights)[0]
            rate = workloads.SOBEL_RATE - torch.sqrt(gx * gx + gy * gy) * edge_scale
            return (u + rate * (blur - u),)
        return sobel
    if name == "ising":
        rows = torch.arange(shape[0], device=dev)
        black = (rows[:, None] + rows[None, :]) % 2 == 0
        hashed_index = counter_hash(torch.arange(shape[0] * shape[1], device=dev)).view(shape)
        flip_probability = workloads.ising_boltzmann()

        def draw(seed, sweep):
            key = counter_hash(seed ^ counter_hash(sweep.to(torch.int64)))
            return (counter_hash(hashed_index ^ key) >> 8).to(torch.float32) / 2**24

        def ising(spins, sweep):
            for colour, seed in ((black, workloads.ISING_SEEDS[0]),
                                 (~black, workloads.ISING_SEEDS[1])):
                energy = spins * wrap_neighbours(spins)
                p = torch.where(energy == 4, flip_probability[4],
                                torch.where(energy == 2, flip_probability[2], 1.0))
                flip = colour & (draw(seed, sweep) < p)
                spins = torch.where(flip, -spins, spins)
            return spins, sweep + 1
        return ising
    if name == "tree_sum":
        # The whole tree (the document has no loop): each level the pair sums, the vector halving.
        def tree(x):
            while x.numel() > 1:
                x = x.view(-1, 2).sum(1)
            return (x,)
        return tree
    if name == "spectral":
        n = shape[0]
        walsh = torch.ones(1, 1, dtype=torch.float64)
        while len(walsh) < n:
            walsh = torch.cat([torch.cat([walsh, walsh], 1), torch.cat([walsh, -walsh], 1)], 0)
        walsh = walsh.to(torch.float32).to(dev)
        g = torch.tensor(workloads.spectral_gains(n), device=dev)
        scaled_gains = g[:, None] * g[None, :] * (1.0 / (n * n))
        return lambda u: (walsh @ (scaled_gains * (walsh @ u @ walsh)) @ walsh,)
    if name == "canny":
        # Hysteresis: the 3x3 dilation as a max pool (its -inf padding is the zero boundary for
        # maps of 0 and 1).
        def hysteresis(edges, strong, weak):
            grown = F.max_pool2d(edges[None, None], 3, stride=1, padding=1)[0, 0]
            return (torch.maximum(strong, torch.minimum(weak, grown)),)
        return hysteresis
    if name == "wavefront":
        # The whole grid under the frontier mask each iteration, as the document does: elementwise,
        # so torch.compile fuses an iteration into one kernel.
        def wavefront(u, cost):
            p = F.pad(u, (1, 0, 1, 0))
            up, left = p[:-1, 1:], p[1:, :-1]
            ready = (u < 0) & (torch.minimum(up, left) >= 0)
            return (torch.where(ready, torch.maximum(up, left) + cost, u),)
        return wavefront

    def gray_scott(u, v):
        uvv = u * v * v
        return (u + workloads.GS_DU * (wrap_neighbours(u) - 4 * u) - uvv + workloads.GS_F * (1 - u),
                v + workloads.GS_DV * (wrap_neighbours(v) - 4 * v) + uvv
                - (workloads.GS_F + workloads.GS_K) * v)
    return gray_scott


def canny_invariants(dev):
    """Canny's loop invariants as a PyTorch user would write them (computed once per run, before
    the hysteresis loop): the image, the separable binomial blur and the Sobel filters as
    convolutions with zero padding, suppression along the gradient's sector by comparisons, the
    double threshold. Returns noise -> (strong, weak) as 0/1 floats."""
    binomial = torch.tensor([1.0, 4.0, 6.0, 4.0, 1.0], device=dev) / 16
    sobel = torch.tensor([[[-1.0, 0.0, 1.0], [-2.0, 0.0, 2.0], [-1.0, 0.0, 1.0]]], device=dev)
    sobel = torch.stack([sobel, sobel.transpose(1, 2)])  # gx, gy

    def invariants(noise):
        n = noise.shape[0]
        (dr, dc, radius), (rr, rc, half_h, half_w) = workloads.canny_shapes(n)
        rows = torch.arange(n, device=dev, dtype=torch.float32)[:, None]
        cols = torch.arange(n, device=dev, dtype=torch.float32)[None, :]
        disc = ((rows - dr) ** 2 + (cols - dc) ** 2 <= radius * radius) * workloads.CANNY_DISC
        rect = (((rows - rr) ** 2 <= half_h**2) & ((cols - rc) ** 2 <= half_w**2)) * workloads.CANNY_RECT
        image = (noise * workloads.CANNY_NOISE + disc + rect)[None, None]
        blur = F.conv2d(F.conv2d(image, binomial.view(1, 1, 1, 5), padding=(0, 2)),
                        binomial.view(1, 1, 5, 1), padding=(2, 0))
        gx, gy = F.conv2d(blur, sobel, padding=1)[0]
        m = torch.sqrt(gx * gx + gy * gy)
        p = F.pad(m, (1, 1, 1, 1))

        def at(dy, dx):
            return p[1 + dy:1 + dy + n, 1 + dx:1 + dx + n]
        t = workloads.CANNY_TAN
        horizontal, vertical = gy.abs() <= t * gx.abs(), gx.abs() <= t * gy.abs()
        positive = gx * gy > 0

        def along(s):
            return torch.where(horizontal, at(0, s),
                               torch.where(vertical, at(s, 0),
                                           torch.where(positive, at(s, s), at(s, -s))))
        peak = torch.where((m >= along(-1)) & (m >= along(1)), m, 0.0)
        return ((peak >= workloads.CANNY_HIGH).float(), (peak >= workloads.CANNY_LOW).float())
    return invariants


def torch_invariants(name, dev):
    """What a workload computes once per run before its loop, from its constants (in
    workloads.CONSTANTS order): the loop's constants. Most pass theirs through."""
    if name == "canny":
        return canny_invariants(dev)
    return lambda *consts: consts


def check(name, got, state, constants, iterations, want):
    """(error, details) of an answer: the largest error against the oracle, where a state PyTorch
    shrinks is compared with the start of the oracle's; for Canny's edge map 0 when it lies
    within the bounds its ambiguous cells allow (workloads.canny_check), else 1."""
    if name == "canny":
        details = workloads.canny_check(got[0], constants["noise"], iterations)
        return (0.0 if details["within_bounds"] else 1.0), details
    if name == "path_tracer":
        details = workloads.path_tracer_check(got, state, iterations)
        return (0.0 if details["within_bounds"] else 1.0), details
    return max(max_error(np.asarray(g).ravel(), w.ravel()[:np.size(g)])
               for g, w in zip(got, want)), {}


def answer_error(name, outputs, state, constants, iterations, want):
    return check(name, [o.cpu().numpy() for o in outputs], state, constants, iterations, want)[0]


def timed(fn, reps):
    fn()
    torch.cuda.synchronize()
    ms = []
    for _ in range(reps):
        start = time.perf_counter()
        out = fn()
        torch.cuda.synchronize()
        ms.append((time.perf_counter() - start) * 1e3)
    return out, float(np.median(ms))


def peers(name, state, constants, iterations, want, reps):
    dev = torch.device("cuda")
    step = torch_step(name, state[0].shape, dev)
    invariants = torch_invariants(name, dev)
    start = [torch.tensor(s, device=dev) for s in state]
    consts = [torch.tensor(constants[k], device=dev) for k in workloads.CONSTANTS.get(name, [])]

    def loop(fn, before=invariants):
        def run():
            s = tuple(start)
            looped = before(*consts)
            for _ in range(iterations):
                s = fn(*s, *looped)
            return s
        return run

    def error(out):
        return answer_error(name, out, state, constants, iterations, want)

    rows = {}
    out, ms = timed(loop(step), reps)
    rows["torch_eager"] = (ms, error(out))
    if name == "tree_sum":
        # The one-call reduction, as most users would sum (its own order, not the tree's).
        out, ms = timed(lambda: (start[0].sum(),), reps)
        rows["torch_x_sum"] = (ms, error([o.reshape(1) for o in out]))
    try:
        ms, out = cuda_graph_run(step, invariants, start, consts, iterations, reps)
        rows["torch_cuda_graph"] = (ms, error(out))
    except Exception as e:  # noqa: BLE001  a step that syncs with the host cannot be captured
        rows["torch_cuda_graph"] = (None, None, str(e).splitlines()[0])

    compiled = torch.compile(step)
    compiled_invariants = torch.compile(invariants) if name == "canny" else invariants
    loop(compiled, compiled_invariants)()  # compiles outside the timing
    out, ms = timed(loop(compiled, compiled_invariants), reps)
    rows["torch_compile"] = (ms, error(out))
    return rows


def cuda_graph_run(step, invariants, start, consts, iterations, reps):
    """The whole loop captured in one CUDA graph, replayed: (median ms, the answer)."""
    static_in = [t.clone() for t in start]
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        s = tuple(static_in)
        looped = invariants(*consts)
        for _ in range(min(3, iterations)):  # a sort is one iteration: its outputs are no state
            s = step(*s, *looped)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        s = tuple(static_in)
        looped = invariants(*consts)
        for _ in range(iterations):
            s = step(*s, *looped)
        static_out = s

    def replay():
        graph.replay()
        return static_out
    out, ms = timed(replay, reps)
    return ms, out


def main():
    out_dir = pathlib.Path(sys.argv[1])
    for name in sys.argv[2:]:
        folder = out_dir / name
        report = folder / "scellis.json"
        if not report.exists() or not report.read_text().strip():
            # scellis_bench_pipeline failed (its error is in the harness's log): say so, and
            # go on with the other workloads.
            print(json.dumps({"workload": name, "agrees": False,
                              "error": "scellis_bench_pipeline wrote no result"}), flush=True)
            continue
        mine = json.loads(report.read_text())
        state = [load(folder, f"{s}.initial") for s in workloads.STATE[name]]
        constants = {c: load(folder, f"{c}.initial") for c in workloads.CONSTANTS.get(name, [])}
        iterations = mine["iterations"]
        start = time.perf_counter()
        want = workloads.oracle(name, state, constants, iterations)
        oracle_s = time.perf_counter() - start
        got = [load(folder, f"{o}.after1") for o in workloads.outputs(name)]
        error, details = check(name, got, state, constants, iterations, want)
        row = {"workload": name, "size": list(state[0].shape), "iterations": iterations,
               "scellis_ms": mine["median_ms"], "scellis_executor": mine["executor"],
               "scellis_kernels": mine["kernels"],
               "scellis_dispatches": mine["dispatches_per_run"],
               "scellis_submissions": mine["submissions_per_run"],
               "scellis_max_error": error, "oracle_seconds": oracle_s,
               "agrees": error <= 1e-4, **details}
        row["scellis_iterations_per_dispatch"] = mine.get("iterations_per_dispatch", 1)
        # The same workload without temporal blocking, and without loop-invariant hoisting,
        # where run_h200.sh made them.
        for variant in ("unblocked", "unhoisted"):
            other = folder / variant
            if not (other / "scellis.json").exists():
                continue
            plain = json.loads((other / "scellis.json").read_text())
            got = [load(other, f"{o}.after1") for o in workloads.outputs(name)]
            row[f"scellis_{variant}_ms"] = plain["median_ms"]
            row[f"scellis_{variant}_dispatches"] = plain["dispatches_per_run"]
            row[f"scellis_{variant}_max_error"] = check(name, got, state, constants, iterations,
                                                        want)[0]
            row["agrees"] = row["agrees"] and row[f"scellis_{variant}_max_error"] <= 1e-4
        if row["agrees"] and torch.cuda.is_available():
            for peer, (ms, err, *why) in peers(name, state, constants, iterations, want,
                                               5).items():
                row[f"{peer}_ms"] = ms
                row[f"{peer}_max_error"] = err
                if why:
                    row[f"{peer}_error"] = why[0]
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()

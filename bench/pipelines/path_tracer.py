"""A small Monte Carlo path tracer as one of seed 002's workloads: the document's builder and its
float64 NumPy oracle, written from the same description, not from each other.

The scene, y up: the ground plane y = 0, three spheres resting on it (two diffuse, one emitting)
and a sky whose radiance changes linearly with the height of the direction. The camera sits at
EYE and looks down -z through an n x n image (HALF_VIEW the tangent of half its field of view). Each
iteration of the loop is one sample per pixel: a camera ray through a point jittered uniformly in
the pixel, followed for BOUNCES surfaces. At each surface the path gathers its throughput times
the surface's emission, and its throughput is multiplied by the surface's albedo (Lambertian; the
sky and the light have albedo 0, so a path ends there by carrying nothing further). A diffuse
bounce leaves from the hit point lifted by LIFT along the normal, in the direction of
normal + a uniform point on the unit sphere, normalized: a cosine-weighted direction about the
normal, whose weight cancels the Lambertian BRDF's cosine and 1/pi, so the throughput is just the
albedo. The carried state is the sum of the samples' radiance per channel, and the sample counter
that steps the counter-hash RNG: every draw is uniform(seed, sample, pixel) with a seed per use
(the jitter's two, and two per bounce), so every sample of every run draws fresh numbers.

The nearest hit: the ground where the ray descends (d_y < 0) at t = o_y / -d_y; a sphere at the
near root t = -b - sqrt(b^2 - c) of |o + t d - centre|^2 = r^2 (b = (o - centre) . d,
c = |o - centre|^2 - r^2) where b^2 - c > 0; a hit counts beyond MIN_T and the nearest wins, the
ground before the spheres in their order on a tie. A miss is at FAR, the sky.

The graph has no trigonometric op: the azimuth phi = pi (2 u - 1) of the uniform sphere point is
turned into (cos phi, sin phi) from alpha = phi / 2 in [-pi/2, pi/2) by the Taylor polynomials of
sin and cos (error below 6e-8 there) and the double-angle formulas. The oracle uses np.cos and
np.sin.

Where the engine (f32) and the oracle (f64) may disagree: a decision near a tie (a ray grazing a
sphere, a hit near MIN_T, two surfaces at nearly the same distance) can go either way under a
rounding, and then the whole sample differs. And a path can be ill-conditioned without any
decision near a tie: after a nearly grazing hit, whose distance is sqrt(b^2 - c) of a small
difference, or a bounce direction normal + u with u near -normal, the next ray carries the
rounding errors magnified, enough to reach a later surface's edge. The oracle marks a sample
ambiguous when its live path (throughput > 0) met a decision within a relative TIE_TOLERANCE of
its threshold, or when the same path traced in float32 (`trace`, NumPy: the engine's precision,
its own roundings) takes another surface or strays from the float64 rays by more than
DRIFT_TOLERANCE (`strays`): a probe of the path's conditioning. A sample's radiance lies in
[0, MAX_RADIANCE], so the engine's sum for a pixel may differ from the oracle's by that many
MAX_RADIANCE on top of the suite's 1e-4 (`check`). At 256^2 x 64 about 0.6% of the samples are
ambiguous (almost all by drift, at the spheres' rims); typical f32 rays stray by 1e-7.
"""
import numpy as np

BOUNCES = 3
EYE = (0.0, 1.0, 4.5)
HALF_VIEW = 0.6
# Each sphere: centre, radius, albedo, emission (per channel: red, green, blue).
SPHERES = [((0.0, 1.0, 0.0), 1.0, (0.75, 0.3, 0.25), (0.0, 0.0, 0.0)),
           ((-1.7, 0.7, 0.2), 0.7, (0.25, 0.5, 0.8), (0.0, 0.0, 0.0)),
           ((1.5, 0.5, 1.0), 0.5, (0.0, 0.0, 0.0), (6.0, 5.0, 3.5))]
GROUND_ALBEDO = (0.55, 0.55, 0.5)
SKY_NADIR, SKY_ZENITH = (0.9, 0.9, 0.9), (0.35, 0.55, 0.9)
FAR = 1e4  # a miss's distance: far, finite, so that a finished path's arithmetic stays finite
MIN_T = 1e-4  # a nearer hit is the surface the ray leaves
LIFT = 1e-3  # a bounce's origin is this far off its surface, along the normal
SEED = 20  # the jitter's seeds: SEED, SEED + 1; bounce b's: SEED + 2 + 2b, SEED + 3 + 2b
CHANNELS = ("red", "green", "blue")
SKY, GROUND = -1, 0  # hit ids; sphere k is k + 1
TIE_TOLERANCE = 1e-5
DRIFT_TOLERANCE = 1e-5
# The most one sample can carry: a throughput is at most 1 (albedos are), times an emission.
MAX_RADIANCE = max(max(max(e) for *_, e in SPHERES), max(SKY_NADIR), max(SKY_ZENITH))
# Taylor coefficients of sin(a) / a and cos(a) in powers of a^2, to a^10 and a^12.
SIN_TAYLOR = (1.0, -1 / 6, 1 / 120, -1 / 5040, 1 / 362880, -1 / 39916800)
COS_TAYLOR = (1.0, -1 / 2, 1 / 24, -1 / 720, 1 / 40320, -1 / 3628800, 1 / 479001600)


def sky(channel):
    """(mid, half): the sky's radiance in a direction of height dy is mid + half dy, linear from
    SKY_NADIR straight down (dy = -1) to SKY_ZENITH straight up (dy = 1)."""
    mid = (SKY_NADIR[channel] + SKY_ZENITH[channel]) / 2
    half = (SKY_ZENITH[channel] - SKY_NADIR[channel]) / 2
    return mid, half


def horner(coefficients, x):
    """c0 + x (c1 + x (c2 + ...)), the evaluation order the graph uses."""
    total = coefficients[-1]
    for c in reversed(coefficients[:-1]):
        total = c + x * total
    return total


# ---- the document ----

def build(d, n):
    """Adds the path tracer's nodes and outputs to `d` (a workloads.Doc of `samples` iterations)."""
    sums = [d.state(c, n, f"{c}_next", {"kind": "zeros"}) for c in CHANNELS]
    sample = d.add("param", name="sample", shape=[], init={"kind": "zeros"}, carry="sample_next")
    row = d.add("input", name="row_index", shape=[n, 1], data=list(range(n)))
    col = d.add("input", name="col_index", shape=[1, n], data=list(range(n)))

    def c(value):
        return d.const(float(value))

    def op(name, a, b):
        return d.add(name, a=a, b=b)

    def add(a, b):
        return op("add", a, b)

    def sub(a, b):
        return op("sub", a, b)

    def mul(a, b):
        return op("mul", a, b)

    def dot(u, v):
        return add(add(mul(u[0], v[0]), mul(u[1], v[1])), mul(u[2], v[2]))

    def draw(seed):
        return d.add("uniform", step=sample, shape=[n, n], seed=seed)

    def unit(v):
        """v / |v|, one division: |v|^2 kept above 1e-24 so a zero vector stays finite."""
        inverse = op("div", c(1.0), d.add("sqrt", a=op("maximum", dot(v, v), c(1e-24))))
        return [mul(x, inverse) for x in v]

    # The camera ray through (row + jitter, column + jitter).
    scale = 2 * HALF_VIEW / n
    x = sub(mul(add(col, draw(SEED)), c(scale)), c(HALF_VIEW))
    y = sub(c(HALF_VIEW), mul(add(row, draw(SEED + 1)), c(scale)))
    direction = unit([x, y, c(-1.0)])
    origin = [c(e) for e in EYE]
    throughput = None  # 1 before the first surface
    radiance = [None] * 3
    for bounce in range(BOUNCES):
        # Each candidate's distance, FAR where the ray misses the surface.
        ground = d.add("where", cond=op("lt", direction[1], c(0.0)),
                       a=op("div", origin[1], d.add("neg", a=direction[1])), b=c(FAR))
        candidates = [(GROUND, ground)]
        for k, (centre, radius, _, _) in enumerate(SPHERES):
            oc = [sub(origin[i], c(centre[i])) for i in range(3)]
            b = dot(oc, direction)
            discriminant = sub(mul(b, b), sub(dot(oc, oc), c(radius * radius)))
            root = sub(d.add("neg", a=b), d.add("sqrt", a=op("maximum", discriminant, c(0.0))))
            candidates.append(
                (k + 1, d.add("where", cond=op("gt", discriminant, c(0.0)), a=root, b=c(FAR))))
        # The nearest beyond MIN_T, the earlier candidate on a tie. The comparison is made once
        # per reader: a value read once fuses into its reader's kernel.
        distance, hit = c(FAR), c(SKY)
        for ident, t in candidates:
            t = d.add("where", cond=op("gt", t, c(MIN_T)), a=t, b=c(FAR))
            hit = d.add("where", cond=op("lt", t, distance), a=c(ident), b=hit)
            distance = d.add("where", cond=op("lt", t, distance), a=t, b=distance)

        def chosen(values, otherwise):
            """values[id] where the hit is that id (only the non-zero ones), else `otherwise`."""
            total = otherwise
            for ident, value in values:
                if value != 0:
                    total = d.add("where", cond=op("eq", hit, c(ident)), a=c(value), b=total)
            return total
        for ch in range(3):
            mid, half = sky(ch)
            sky_radiance = add(c(mid), mul(direction[1], c(half)))
            emitted = chosen([(k + 1, s[3][ch]) for k, s in enumerate(SPHERES)], c(0.0))
            emitted = d.add("where", cond=op("eq", hit, c(SKY)), a=sky_radiance, b=emitted)
            gathered = emitted if throughput is None else mul(throughput[ch], emitted)
            radiance[ch] = gathered if radiance[ch] is None else add(radiance[ch], gathered)
        albedo = [chosen([(GROUND, GROUND_ALBEDO[ch])]
                         + [(k + 1, s[2][ch]) for k, s in enumerate(SPHERES)], c(0.0))
                  for ch in range(3)]
        throughput = albedo if throughput is None else [mul(throughput[ch], albedo[ch])
                                                         for ch in range(3)]
        if bounce == BOUNCES - 1:
            break
        # The next ray: from the hit point, lifted, along normal + a uniform sphere point.
        point = [add(origin[i], mul(distance, direction[i])) for i in range(3)]
        normal = []
        for i in range(3):
            v = c(1.0 if i == 1 else 0.0)  # the ground's (and a finished path's) normal
            for k, (centre, radius, _, _) in enumerate(SPHERES):
                v = d.add("where", cond=op("eq", hit, c(k + 1)),
                          a=mul(sub(point[i], c(centre[i])), c(1.0 / radius)), b=v)
            normal.append(v)
        z = sub(mul(draw(SEED + 2 + 2 * bounce), c(2.0)), c(1.0))
        ring = d.add("sqrt", a=op("maximum", sub(c(1.0), mul(z, z)), c(0.0)))
        alpha = mul(sub(draw(SEED + 3 + 2 * bounce), c(0.5)), c(np.pi))
        square = mul(alpha, alpha)

        def polynomial(coefficients):
            total = c(coefficients[-1])
            for k in reversed(coefficients[:-1]):
                total = add(c(k), mul(square, total))
            return total
        sin_half = mul(alpha, polynomial(SIN_TAYLOR))
        cos_half = polynomial(COS_TAYLOR)
        cos_phi = sub(c(1.0), mul(mul(sin_half, sin_half), c(2.0)))
        sin_phi = mul(mul(sin_half, cos_half), c(2.0))
        direction = unit([add(normal[0], mul(ring, cos_phi)), add(normal[1], mul(ring, sin_phi)),
                          add(normal[2], z)])
        origin = [add(point[i], mul(normal[i], c(LIFT))) for i in range(3)]
    for ch, name in enumerate(CHANNELS):
        d.out(f"{name}_next", add(sums[ch], radiance[ch]))
    d.out("sample_next", add(sample, c(1.0)))


# ---- the oracle: float64 NumPy ----

def nearest(origin, direction):
    """(distance, hit id, near a tie) of rays (each a list of 3 arrays) in the scene, computed in
    the rays' floating type."""
    ox, oy, oz = origin
    dx, dy, dz = direction
    shape = np.broadcast(ox, oy, oz, dx, dy, dz).shape
    distance, hit = np.full(shape, FAR, np.result_type(dx)), np.full(shape, SKY)
    tie = np.zeros(shape, bool)

    def near(a, b, scale):
        return np.abs(a - b) <= TIE_TOLERANCE * scale

    def consider(ident, t, valid):
        nonlocal distance, hit, tie
        tie |= near(t, MIN_T, np.abs(t) + MIN_T) & valid
        valid &= t > MIN_T
        tie |= valid & near(t, distance, t + distance)
        closer = valid & (t < distance)
        distance, hit = np.where(closer, t, distance), np.where(closer, ident, hit)

    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        descends = dy < 0
        tie |= near(dy, 0, 1.0)
        consider(GROUND, np.where(descends, oy / -dy, FAR), descends)
    for k, (centre, radius, _, _) in enumerate(SPHERES):
        oc = [ox - centre[0], oy - centre[1], oz - centre[2]]
        b = oc[0] * dx + oc[1] * dy + oc[2] * dz
        c = oc[0] ** 2 + oc[1] ** 2 + oc[2] ** 2 - radius**2
        disc = b * b - c
        tie |= near(disc, 0, b * b + np.abs(c))
        root = -b - np.sqrt(np.maximum(disc, 0))
        # The root's own rounding is relative to |b| + sqrt(disc), not to the root.
        crossing = disc > 0
        tie |= crossing & near(root, MIN_T, np.abs(b) + np.sqrt(np.maximum(disc, 0)))
        consider(k + 1, np.where(crossing, root, FAR), crossing)
    return distance, hit, tie


def _unit(v):
    length = np.sqrt(np.maximum(v[0] ** 2 + v[1] ** 2 + v[2] ** 2, 1e-24))
    return [a / length for a in v]


def trace(dtype, n, draw):
    """One sample per pixel, every value in `dtype`: (its radiance [3, n, n], and for each bounce
    (live: the path's throughput > 0, origin, direction, hit id, near a tie)). `draw(seed)`: the
    uniform numbers of the sample (float64, exact in float32)."""
    rows = np.arange(n, dtype=dtype)[:, None]
    cols = np.arange(n, dtype=dtype)[None, :]
    x = (cols + draw(SEED).astype(dtype)) * (2 / n) - 1
    y = 1 - (rows + draw(SEED + 1).astype(dtype)) * (2 / n)
    direction = _unit([x * HALF_VIEW, y * HALF_VIEW, -np.ones((n, n), dtype)])
    origin = [np.full((n, n), e, dtype) for e in EYE]
    throughput = np.ones((3, n, n), dtype)
    radiance = np.zeros((3, n, n), dtype)
    bounces = []
    for bounce in range(BOUNCES):
        distance, hit, tie = nearest(origin, direction)
        bounces.append((throughput[0] > 0, origin, direction, hit, tie))
        for ch in range(3):
            mid, half = sky(ch)
            emitted = np.where(hit == SKY, mid + half * direction[1], 0.0)
            albedo = np.where(hit == GROUND, GROUND_ALBEDO[ch], 0.0)
            for k, (_, _, rho, emission) in enumerate(SPHERES):
                emitted = np.where(hit == k + 1, emission[ch], emitted)
                albedo = np.where(hit == k + 1, rho[ch], albedo)
            radiance[ch] += throughput[ch] * emitted
            throughput[ch] *= albedo
        if bounce == BOUNCES - 1:
            break
        with np.errstate(over="ignore", invalid="ignore"):  # a finished path's far point
            point = [origin[i] + distance * direction[i] for i in range(3)]
        normal = [np.full((n, n), 1.0 if i == 1 else 0.0, dtype) for i in range(3)]
        for k, (centre, radius, _, _) in enumerate(SPHERES):
            for i in range(3):
                normal[i] = np.where(hit == k + 1, (point[i] - centre[i]) / radius, normal[i])
        z = 2 * draw(SEED + 2 + 2 * bounce).astype(dtype) - 1
        phi = np.pi * (2 * draw(SEED + 3 + 2 * bounce).astype(dtype) - 1)
        ring = np.sqrt(np.maximum(1 - z * z, 0))
        direction = _unit([normal[0] + ring * np.cos(phi), normal[1] + ring * np.sin(phi),
                           normal[2] + z])
        origin = [point[i] + LIFT * normal[i] for i in range(3)]
    return radiance, bounces


def strays(exact, rounded):
    """Where a live path's float32 twin has taken another surface, or its rays have strayed from
    the float64 ones by more than DRIFT_TOLERANCE (origins relative to 1 + their distance from
    the scene's origin)."""
    out = np.zeros(exact[0][0].shape, bool)
    for (live, o, d, hit, _), (_, o32, d32, hit32, _) in zip(exact, rounded):
        scale = 1 + np.sqrt(o[0] ** 2 + o[1] ** 2 + o[2] ** 2)
        drift = np.max([np.abs(o32[i] - o[i]) / scale for i in range(3)]
                       + [np.abs(d32[i] - d[i]) for i in range(3)], axis=0)
        out |= live & ((hit32 != hit) | (drift > DRIFT_TOLERANCE))
        if not live.any():
            break
    return out


def render(sums, sample, iterations, uniform):
    """The radiance sums and the counter after `iterations` samples per pixel (float64), and each
    pixel's count of ambiguous samples: a path that meets a near tie, or whose float32 twin
    strays (`strays`). `uniform(seed, step, shape)`: the counter-hash RNG."""
    sums = [np.array(s, np.float64) for s in sums]
    n = sums[0].shape[0]
    ambiguous = np.zeros((n, n), np.int64)
    for _ in range(iterations):
        step = int(sample)

        def draw(seed):
            return uniform(seed, step, (n, n))
        radiance, exact = trace(np.float64, n, draw)
        _, rounded = trace(np.float32, n, draw)
        unsure = strays(exact, rounded)
        for live, _, _, _, tie in exact:
            unsure |= live & tie
        for ch in range(3):
            sums[ch] += radiance[ch]
        ambiguous += unsure
        sample = sample + 1
    return sums + [np.float64(sample)], ambiguous


def check(got, want, ambiguous, tolerance=1e-4):
    """Whether the engine's sums (red, green, blue, counter) are the oracle's within `tolerance`
    of the largest, plus MAX_RADIANCE per ambiguous sample of the pixel; the counter exactly."""
    excess, differing = -np.inf, np.zeros(ambiguous.shape, bool)
    for g, w in zip(got[:3], want[:3]):
        error = np.abs(np.asarray(g, np.float64) - w)
        base = tolerance * np.abs(w).max()
        excess = max(excess, float(np.max(error - base - MAX_RADIANCE * ambiguous)))
        differing |= error > base
    return {"within_bounds": bool(excess <= 0 and float(got[3]) == float(want[3])),
            "ambiguous_samples": int(ambiguous.sum()),
            "differing_pixels": int(differing.sum()),
            "largest_excess": excess}

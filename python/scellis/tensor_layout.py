"""The data movement of a Tensor: strided views (indexing, flip, shift, butterfly, roll, pad) and
layout (permute, reshape, transpose): ops that move elements without computing on them.
"""

import numbers

from .errors import GraphError


def _axis(axis, rank):
    """A Python axis (negative from the end) as an index."""
    return axis + rank if axis < 0 else axis


class _Layout:
    """The strided views and layout methods of a Tensor (scellis.tensor)."""

    __slots__ = ()  # Tensor keeps its own slots and no instance dict

    # ---- strided views (protocol version 4) ----

    def __getitem__(self, key):
        """Python/NumPy basic indexing: slices (negative steps too), integers (the axis is
        dropped) and one Ellipsis — a `slice` node, and a reshape when integers drop axes."""
        rank = len(self.shape)
        key = key if isinstance(key, tuple) else (key,)
        if sum(k is Ellipsis for k in key) > 1:
            raise GraphError("bad-index", "an index holds at most one Ellipsis")
        if Ellipsis in key:
            at = key.index(Ellipsis)
            key = key[:at] + (slice(None),) * (rank - len(key) + 1) + key[at + 1:]
        if len(key) > rank:
            raise GraphError("bad-index", f"{len(key)} indices for a tensor of rank {rank}")
        key = key + (slice(None),) * (rank - len(key))
        starts, stops, steps, kept = [], [], [], []
        for axis, (k, size) in enumerate(zip(key, self.shape)):
            if isinstance(k, numbers.Integral) and not isinstance(k, bool):
                i = int(k) + size if int(k) < 0 else int(k)
                if not 0 <= i < size:
                    raise GraphError("index-out-of-range",
                                     f"index {int(k)} is out of range for axis {axis} of size {size}")
                starts.append(i), stops.append(i + 1), steps.append(1)
            elif isinstance(k, slice):
                step = 1 if k.step is None else int(k.step)
                if step == 0:
                    raise GraphError("bad-index", "a slice step cannot be zero")
                starts.append(None if k.start is None else int(k.start))
                stops.append(None if k.stop is None else int(k.stop))
                steps.append(step)
                kept.append(axis)
            else:
                raise GraphError("bad-index", f"{k!r} is not a slice, an integer or Ellipsis",
                                 help="index with tensors through the engine's gather ops")
        out = self.graph._add("slice", {"a": self},
                              {"starts": starts, "stops": stops, "steps": steps})
        if len(kept) < rank:
            out = out.reshape(*[out.shape[a] for a in kept])
        return out

    def flip(self, *axes):
        """Reverses the order of elements along ``axes``."""
        if len(axes) == 1 and isinstance(axes[0], (tuple, list)):
            axes = tuple(axes[0])
        return self.graph._add("flip", {"a": self}, {"axes": [int(a) for a in axes]})

    def shift(self, shifts, boundary="zero"):
        """``out[i] = self[i - shifts]`` along every axis (torch.roll's direction; protocol
        version 5). ``shifts``: one integer per axis, or one integer for a rank-1 tensor.
        ``boundary`` says what is read where ``i - shifts`` leaves the axis: "zero" (0), "wrap"
        (the toroidal neighbour, as torch.roll / np.roll) or "clamp" (the nearest edge element).
        The engine fuses a shift into its consumers' kernel as a shifted load, so a stencil
        written as a sum of shifts is one kernel."""
        if isinstance(shifts, numbers.Integral):
            shifts = [shifts]
        shifts = [int(s) for s in shifts]
        return self.graph._add("shift", {"a": self}, {"shifts": shifts, "boundary": boundary})

    def butterfly(self, mask, axis=-1):
        """``out[.., i, ..] = self[.., i ^ mask, ..]`` along ``axis`` (protocol version 6): each
        element's partner in a bitonic stage. Fused into its readers' kernel as a permuted load;
        the engine refuses (butterfly-out-of-range) a mask whose partners leave the axis."""
        return self.graph._add("butterfly", {"a": self}, {"mask": int(mask), "axis": int(axis)})

    def roll(self, shifts, dims=None):
        """torch.roll over the given ``dims`` (every axis when None, as a flattened roll is
        not a shift): a ``shift`` with the "wrap" boundary."""
        rank = len(self.shape)
        if isinstance(shifts, numbers.Integral):
            shifts = [shifts]
        if dims is None:
            if len(shifts) != rank:
                raise GraphError("bad-shift", f"roll without dims takes one shift per axis "
                                 f"({rank}), got {len(shifts)}",
                                 help="name the axes with dims=")
            dims = range(rank)
        elif isinstance(dims, numbers.Integral):
            dims = [dims]
        dims = list(dims)
        if len(dims) != len(shifts):
            raise GraphError("bad-shift", "roll takes one shift per named axis")
        per_axis = [0] * rank
        for s, d in zip(shifts, dims):
            per_axis[_axis(int(d), rank)] += int(s)
        return self.shift(per_axis, boundary="wrap")

    def pad(self, pads, value=0.0):
        """Constant padding: ``pads`` holds one (before, after) pair per axis."""
        pads = [[int(b), int(a)] for b, a in pads]
        return self.graph._add("pad", {"a": self}, {"pads": pads, "value": float(value)})

    # ---- layout ----

    def permute(self, *dims):
        if len(dims) == 1 and isinstance(dims[0], (tuple, list)):
            dims = tuple(dims[0])
        return self.graph._add("permute", {"a": self}, {"dims": [int(d) for d in dims]})

    def reshape(self, *shape):
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        return self.graph._add("reshape", {"a": self}, {"shape": [int(s) for s in shape]})

    def transpose(self, dim0=None, dim1=None):
        """Swaps two axes: a rank-2 tensor's with no arguments (the `transpose` op), any two
        otherwise (a `permute`)."""
        if dim0 is None and dim1 is None:
            return self.graph._add("transpose", {"a": self})
        if dim0 is None or dim1 is None:
            raise GraphError("bad-axis", "transpose takes no axes (rank 2) or two axes")
        dims = list(range(self.ndim))
        dims[dim0], dims[dim1] = dims[dim1], dims[dim0]
        return self.permute(*dims)

    @property
    def T(self):
        return self.transpose()

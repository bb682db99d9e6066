"""Rows as 8-bit integers times a scale each, and a dense layer multiplied that way.

`rounded` is the one rounding of recall: the vector index stores its rows so
(vectors.py), and the query's forward pass through MiniLM multiplies its
activations and weights so (minilm.py). A row's largest magnitude maps to 127;
its direction is all a cosine reads, and each value is off by at most half a
step of its row's scale.

Why: numkong's int8 kernels (VNNI, AVX2, NEON dot products) multiply a few
token rows by a layer's weights many times faster than float32 BLAS does, since
the weights, read once per product, take a quarter of the bytes.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

Array = NDArray[np.float32]


def rounded(rows: Array) -> tuple[NDArray[np.int8], Array]:
    """Each row as 8-bit integers in [-127, 127] times a scale of its own (0
    for a row of zeros), so that row ~= codes * scale."""
    top = np.abs(rows).max(axis=1)
    scales = np.where(top > 0, top / np.float32(127.0), np.float32(0.0)).astype(np.float32)
    safe = np.where(scales > 0, scales, np.float32(1.0))[:, None]
    return np.rint(rows / safe).astype(np.int8), scales


class EightBitDense:
    """x @ weight.T + bias for a stored (out, in) float32 `weight`, in 8 bits:
    the weight rounded once per output row, x per input row at each call, the
    integer products exact (int32), then both scales applied. Thread-safe: a
    call only reads what the constructor built."""

    def __init__(self, weight: Array, bias: Array) -> None:
        import numkong  # here, not at the top: its import takes tens of ms of startup

        self._products = numkong.dots_packed
        codes, self.scales = rounded(weight)
        self.packed = numkong.dots_pack(codes)
        self.bias = bias

    def __call__(self, x: Array) -> Array:
        codes, scales = rounded(x)
        y = np.asarray(self._products(codes, self.packed)).astype(np.float32)
        y *= scales[:, None]
        y *= self.scales
        y += self.bias
        return y

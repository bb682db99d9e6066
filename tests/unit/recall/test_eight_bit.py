"""8-bit rows and products (newt/recall/eight_bit.py): what the vector index
stores and what a query's pass through MiniLM multiplies."""

from __future__ import annotations

import numpy as np

from newt.recall.eight_bit import EightBitDense, rounded


def test_rounding_keeps_each_row_within_half_a_step() -> None:
    rng = np.random.default_rng(1)
    rows = rng.standard_normal((50, 384)).astype(np.float32)
    rows[3] = 0.0  # a row of zeros keeps scale 0
    codes, scales = rounded(rows)
    assert codes.dtype == np.int8 and scales.dtype == np.float32
    assert np.abs(codes).max() == 127 and scales[3] == 0.0
    back = codes * scales[:, None]
    assert np.all(np.abs(back - rows) <= scales[:, None] / 2 + 1e-6)


def test_the_product_is_the_rounded_operands_product_exactly() -> None:
    rng = np.random.default_rng(2)
    weight = (rng.standard_normal((1152, 384)) * 0.05).astype(np.float32)
    bias = rng.standard_normal(1152).astype(np.float32)
    x = rng.standard_normal((11, 384)).astype(np.float32)  # a query's tokens
    y = EightBitDense(weight, bias)(x)
    assert y.shape == (11, 1152) and y.dtype == np.float32
    xc, xs = rounded(x)
    wc, ws = rounded(weight)
    exact = (xc.astype(np.int64) @ wc.T.astype(np.int64)) * xs[:, None] * ws + bias
    assert np.allclose(y, exact, rtol=1e-5, atol=1e-5)
    # and close to the float32 layer it stands for
    full = x @ weight.T + bias
    assert np.abs(y - full).max() < 0.02 * np.abs(full).max()

"""Transformer building blocks written once against the array namespace of their input.

The same source runs eagerly under NumPy, under ``jax.jit`` with ``jax.numpy``, and traced by
``compiler.jit``: each function asks its first argument for ``__array_namespace__()`` and uses
only array-API names, so the harness can evaluate one definition three ways.
"""

from __future__ import annotations

from typing import Any

import numpy as np

# A NumPy float64 scalar is *strong* under NEP 50: GELU of a float32 input is float64 in NumPy,
# in JAX-x64 and in the compiler alike, and the promotion shows up in the IR as an explicit cast.
GELU_SCALE = np.sqrt(np.float64(2.0) / np.float64(np.pi))
# -inf, not GPT-2's -1e10: scores of magnitude 1e10 and beyond (float32 inputs near 1e36 give
# 1e73 in float64) would outweigh a finite mask and let the future leak in (found by the spec
# oracle against an independent attention on the clean compiler). The diagonal is never masked,
# so no softmax row is all -inf.
MASK_VALUE = -np.inf
LAYER_NORM_EPS = 1e-5


def namespace(*arrays: Any) -> Any:
    """The array namespace of ``arrays`` (NumPy, jax.numpy or the compiler's traced namespace):
    the first that is not NumPy's, so that a NumPy array beside a traced one (a weight captured
    from the enclosing scope) is traced with it."""
    for x in arrays:
        if hasattr(x, "__array_namespace__") and x.__array_namespace__() is not np:
            return x.__array_namespace__()
    return np


def gelu(x: Any) -> Any:
    """GPT-2's tanh approximation of GELU."""
    xp = namespace(x)
    return 0.5 * x * (1.0 + xp.tanh(GELU_SCALE * (x + 0.044715 * x**3)))


def softmax(x: Any, axis: int = -1) -> Any:
    """Max-subtracted softmax: finite for inputs near +-1e4, and rows with -inf entries sum to 1."""
    xp = namespace(x)
    shifted = xp.exp(x - xp.max(x, axis=axis, keepdims=True))
    return shifted / xp.sum(shifted, axis=axis, keepdims=True)


def layer_norm(x: Any, gain: Any, bias: Any, eps: float = LAYER_NORM_EPS) -> Any:
    """Normalize the last axis (population variance, eps inside the square root).

    The variance is the mean of the squared deviations, not ``var``: NumPy's ``var`` of float16
    sums the squares in float16, so a row of 139 values within +-84 (variance 489) gave inf and
    the output was the bias alone; ``mean`` sums float16 in float32 in NumPy, JAX and here.
    """
    xp = namespace(x)
    centered = x - xp.mean(x, axis=-1, keepdims=True)
    variance = xp.mean(centered * centered, axis=-1, keepdims=True)
    return centered / xp.sqrt(variance + eps) * gain + bias


def linear(x: Any, weight: Any, bias: Any) -> Any:
    """``x @ weight + bias`` with GPT-2's (input_width, output_width) weight layout."""
    return x @ weight + bias


def causal_mask(size: int, dtype: Any, xp: Any = np) -> Any:
    """(size, size) additive mask: 0 where column <= row, MASK_VALUE above the diagonal.

    The compiler's namespace builds it as an index-based ``linalg.generic``; other namespaces
    build the same values from ``arange``.
    """
    if hasattr(xp, "causal_mask"):
        return xp.causal_mask(size, dtype)
    rows = xp.arange(size)[:, None]
    cols = xp.arange(size)[None, :]
    zero = xp.zeros((size, size), dtype=dtype)
    return xp.where(cols <= rows, zero, xp.full((size, size), MASK_VALUE, dtype=dtype))


def gather(table: Any, ids: Any) -> Any:
    """Rows of ``table`` selected by integer ``ids`` (an embedding lookup); out-of-range ids
    raise ValueError."""
    xp = namespace(table, ids)  # NumPy's table (an embedding captured) with traced ids too
    if hasattr(xp, "gather"):
        return xp.gather(table, ids)
    if isinstance(table, np.ndarray):
        ids = np.asarray(ids)
        if ids.size and (ids.min() < 0 or ids.max() >= table.shape[0]):
            raise ValueError(
                f"gather: ids must lie in [0, {table.shape[0]}), got {ids.min()}..{ids.max()}"
            )
    return xp.take(table, ids, axis=0)


def attention(
    x: Any, qkv_weight: Any, qkv_bias: Any, out_weight: Any, out_bias: Any, heads: int
) -> Any:
    """Causal multi-head self-attention over one (T, C) sequence, as the seed design builds it."""
    xp = namespace(x)
    packed = linear(x, qkv_weight, qkv_bias)
    length, width = x.shape
    if width % heads:
        raise ValueError(f"attention: width {width} is not divisible by heads={heads}")
    depth = width // heads
    q, k, v = [
        xp.permute_dims(
            xp.reshape(packed[:, i * width : (i + 1) * width], (length, heads, depth)), (1, 0, 2)
        )
        for i in range(3)
    ]
    scores = (q @ xp.permute_dims(k, (0, 2, 1))) / np.sqrt(depth)
    # Masked by selection, not by adding the mask: a later position's score of +inf (q @ k
    # overflowing) plus -inf is nan, which reached every earlier position through the row's
    # maximum (float32 values near 1e13: the whole output nan, where jax.nn's where-masked
    # attention is finite).
    mask = causal_mask(length, packed.dtype, xp)
    probabilities = softmax(xp.where(mask == 0, scores, mask))
    context = xp.reshape(xp.permute_dims(probabilities @ v, (1, 0, 2)), (length, width))
    return linear(context, out_weight, out_bias)


def attend(
    x: Any,
    gain: Any,
    bias: Any,
    qkv_weight: Any,
    qkv_bias: Any,
    out_weight: Any,
    out_bias: Any,
    *,
    heads: int,
) -> Any:
    """Pre-norm residual attention half of a GPT-2 block."""
    normalized = layer_norm(x, gain, bias)
    return x + attention(normalized, qkv_weight, qkv_bias, out_weight, out_bias, heads)


def feedforward(
    x: Any,
    gain: Any,
    bias: Any,
    up_weight: Any,
    up_bias: Any,
    down_weight: Any,
    down_bias: Any,
) -> Any:
    """Pre-norm residual MLP half of a GPT-2 block."""
    normalized = layer_norm(x, gain, bias)
    hidden = gelu(linear(normalized, up_weight, up_bias))
    return x + linear(hidden, down_weight, down_bias)
